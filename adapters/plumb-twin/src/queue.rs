//! One cluster's model servers as a queue: `slots` requests in service at once (ready
//! replicas × concurrent requests per replica, continuous batching), the rest waiting first
//! come first served. A request's service time is its prefill (context tokens) plus its
//! decode (generated tokens), both from the trace; its time to first token (TTFT) is its wait
//! plus its prefill. Arrivals beyond the queue limit, and requests waiting past the client
//! timeout, are dropped. Exact event order within each second.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::arrivals::Arrival;

/// Buckets of the TTFT histogram: upper bounds `0.05 × 1.25^k` seconds, then `+Inf`.
pub const BUCKETS: usize = 41;

/// The upper bound of bucket `k` (the last is `+Inf`).
pub fn bucket_bound(k: usize) -> f64 {
    if k + 1 >= BUCKETS {
        f64::INFINITY
    } else {
        0.05 * 1.25f64.powi(i32::try_from(k).unwrap_or(i32::MAX))
    }
}

/// The bucket a value falls into.
pub fn bucket_of(v: f64) -> usize {
    if v <= 0.05 {
        return 0;
    }
    // ceil(log_1.25(v / 0.05)), clamped; the bound check corrects float rounding.
    let k = ((v / 0.05).ln() / 1.25f64.ln()).ceil();
    let mut k = if k.is_finite() && k >= 0.0 {
        (k as usize).min(BUCKETS - 1)
    } else {
        BUCKETS - 1
    };
    while k > 0 && v <= bucket_bound(k - 1) {
        k -= 1;
    }
    while k + 1 < BUCKETS && v > bucket_bound(k) {
        k += 1;
    }
    k
}

/// A TTFT histogram (counts per bucket).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Histogram(pub [u32; BUCKETS]);

impl Default for Histogram {
    fn default() -> Self {
        Histogram([0; BUCKETS])
    }
}

impl Histogram {
    /// Counts one value.
    pub fn record(&mut self, v: f64) {
        self.0[bucket_of(v)] += 1;
    }

    /// Adds another histogram.
    pub fn add(&mut self, other: &Histogram) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }

    /// How many values.
    pub fn count(&self) -> u64 {
        self.0.iter().map(|&c| u64::from(c)).sum()
    }

    /// The `q` quantile as Prometheus' `histogram_quantile` estimates it (linear within the
    /// bucket; the highest finite bound when it falls in `+Inf`); `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = q * total as f64;
        let mut below = 0u64;
        for (k, &c) in self.0.iter().enumerate() {
            let upto = below + u64::from(c);
            if upto as f64 >= rank && c > 0 {
                if k + 1 == BUCKETS {
                    return Some(bucket_bound(BUCKETS - 2));
                }
                let lo = if k == 0 { 0.0 } else { bucket_bound(k - 1) };
                let hi = bucket_bound(k);
                let within = (rank - below as f64) / f64::from(c);
                return Some(lo + (hi - lo) * within.clamp(0.0, 1.0));
            }
            below = upto;
        }
        Some(bucket_bound(BUCKETS - 2))
    }
}

/// What one second did in one cluster.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SecondStats {
    /// Requests that arrived.
    pub arrivals: u32,
    /// Requests dropped (queue full on arrival, or timed out waiting).
    pub dropped: u32,
    /// TTFT of requests that started service.
    pub ttft: Histogram,
    /// Waiting requests at the second's end.
    pub waiting: u32,
    /// Ready replicas during the second.
    pub ready: u32,
}

/// A waiting request.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    arrival: f64,
    prefill: f64,
    service: f64,
}

/// Finish times in microseconds (exact ordering without float keys).
type Micros = i64;

fn micros(t: f64) -> Micros {
    (t * 1e6).round() as Micros
}

/// Service parameters for one second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Service {
    /// Requests in service at once.
    pub slots: u32,
    /// Waiting requests beyond which arrivals are dropped.
    pub queue_limit: u32,
    /// Client timeout while waiting, seconds.
    pub timeout: f64,
    /// Prompt tokens per second of prefill.
    pub prefill_tokens_per_s: f64,
    /// Seconds per generated token.
    pub seconds_per_token: f64,
    /// Service-time multiplier (1: normal; a slowdown is above 1).
    pub slowdown: f64,
}

/// The queue of one cluster.
#[derive(Debug, Clone, Default)]
pub struct Queue {
    waiting: VecDeque<Waiting>,
    busy: BinaryHeap<Reverse<Micros>>,
}

impl Queue {
    /// An empty queue.
    pub fn new() -> Queue {
        Queue::default()
    }

    /// Requests in service.
    pub fn in_service(&self) -> usize {
        self.busy.len()
    }

    /// Requests waiting.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Runs second `[t, t + 1)` with these arrivals (in time order).
    pub fn second(&mut self, t: u64, arrivals: &[Arrival], svc: &Service) -> SecondStats {
        let mut stats = SecondStats {
            arrivals: u32::try_from(arrivals.len()).unwrap_or(u32::MAX),
            ..SecondStats::default()
        };
        let start = t as f64;
        self.admit(start, svc, &mut stats);
        for a in arrivals {
            self.complete_until(a.time, svc, &mut stats);
            let prefill = f64::from(a.context_tokens) / svc.prefill_tokens_per_s * svc.slowdown;
            let decode = f64::from(a.generated_tokens) * svc.seconds_per_token * svc.slowdown;
            let req = Waiting {
                arrival: a.time,
                prefill,
                service: prefill + decode,
            };
            if self.waiting.is_empty() && self.busy.len() < svc.slots as usize {
                self.start(req, a.time, &mut stats);
            } else if self.waiting.len() >= svc.queue_limit as usize {
                stats.dropped += 1;
            } else {
                self.waiting.push_back(req);
            }
        }
        self.complete_until(start + 1.0, svc, &mut stats);
        self.expire(start + 1.0, svc, &mut stats);
        stats.waiting = u32::try_from(self.waiting.len()).unwrap_or(u32::MAX);
        stats
    }

    fn start(&mut self, req: Waiting, at: f64, stats: &mut SecondStats) {
        stats.ttft.record(at - req.arrival + req.prefill);
        self.busy.push(Reverse(micros(at + req.service)));
    }

    /// Starts waiting requests while slots are free at `at`.
    fn admit(&mut self, at: f64, svc: &Service, stats: &mut SecondStats) {
        while self.busy.len() < svc.slots as usize {
            let Some(req) = self.waiting.pop_front() else {
                break;
            };
            if at - req.arrival > svc.timeout {
                stats.dropped += 1;
                continue;
            }
            self.start(req, at, stats);
        }
    }

    /// Completes requests finishing by `until`, starting waiting ones in the freed slots at
    /// the moment each frees.
    fn complete_until(&mut self, until: f64, svc: &Service, stats: &mut SecondStats) {
        let limit = micros(until);
        while let Some(&Reverse(done)) = self.busy.peek() {
            if done > limit {
                break;
            }
            self.busy.pop();
            self.admit(done as f64 / 1e6, svc, stats);
        }
        // Slots may have grown (new ready replicas) or requests be waiting with slots free.
        self.admit(until, svc, stats);
    }

    /// Drops requests that have waited past the timeout.
    fn expire(&mut self, now: f64, svc: &Service, stats: &mut SecondStats) {
        let before = self.waiting.len();
        self.waiting.retain(|w| now - w.arrival <= svc.timeout);
        stats.dropped += u32::try_from(before - self.waiting.len()).unwrap_or(u32::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(slots: u32) -> Service {
        Service {
            slots,
            queue_limit: 3,
            timeout: 10.0,
            prefill_tokens_per_s: 1000.0,
            seconds_per_token: 0.1,
            slowdown: 1.0,
        }
    }

    fn req(time: f64) -> Arrival {
        Arrival {
            time,
            context_tokens: 100,
            generated_tokens: 19,
        }
    }

    #[test]
    fn buckets_are_monotone_and_values_land_in_their_bucket() {
        for v in [0.01, 0.05, 0.051, 0.3, 2.0, 59.9, 1e6] {
            let k = bucket_of(v);
            assert!(v <= bucket_bound(k));
            assert!(k == 0 || v > bucket_bound(k - 1));
        }
    }

    #[test]
    fn the_quantile_interpolates_within_its_bucket() {
        let mut h = Histogram::default();
        for _ in 0..100 {
            h.record(1.0);
        }
        let q = h.quantile(0.95).unwrap();
        let k = bucket_of(1.0);
        assert!(q > bucket_bound(k - 1) && q <= bucket_bound(k));
        assert_eq!(Histogram::default().quantile(0.95), None);
    }

    #[test]
    fn a_free_slot_serves_at_once_and_ttft_is_the_prefill() {
        let mut q = Queue::new();
        let s = q.second(0, &[req(0.2)], &svc(1));
        assert_eq!(s.arrivals, 1);
        assert_eq!(s.ttft.count(), 1);
        // prefill 0.1 s: bucket of 0.1
        assert_eq!(s.ttft.0[bucket_of(0.1)], 1);
        assert_eq!(q.in_service(), 1); // 2 s of service
    }

    #[test]
    fn a_busy_server_queues_then_drops_beyond_the_limit_and_after_the_timeout() {
        let mut q = Queue::new();
        let arrivals: Vec<Arrival> = (0..5).map(|i| req(0.1 * f64::from(i))).collect();
        let s = q.second(0, &arrivals, &svc(1));
        assert_eq!((s.waiting, s.dropped), (3, 1));
        // the first finishes at 2.0 s and the next starts then, after waiting 1.9 s
        let s = q.second(2, &[], &svc(1));
        assert_eq!(s.ttft.count(), 1);
        let mut total_dropped = 0;
        for t in 3..30 {
            total_dropped += q.second(t, &[], &svc(1)).dropped;
        }
        // each takes 2 s: the last waiting one starts at 6 s, within the 10 s timeout
        assert_eq!(total_dropped, 0);
        assert_eq!(q.waiting(), 0);
    }

    #[test]
    fn no_slots_means_every_arrival_waits_and_times_out() {
        let mut q = Queue::new();
        let mut dropped = 0;
        dropped += q.second(0, &[req(0.5)], &svc(0)).dropped;
        for t in 1..12 {
            dropped += q.second(t, &[], &svc(0)).dropped;
        }
        assert_eq!(dropped, 1);
    }
}

#[cfg(test)]
mod proptests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Every request is accounted for: once the queue has drained, each arrival either
        /// started service (a TTFT recorded) or was dropped; nothing waits past the timeout.
        #[test]
        fn every_arrival_is_served_or_dropped(
            offsets in prop::collection::vec((0u64..40, 0.0f64..1.0, 1u32..4000, 1u32..300), 0..200),
            slots in 0u32..20,
            limit in 0u32..50,
        ) {
            let svc = Service {
                slots,
                queue_limit: limit,
                timeout: 30.0,
                prefill_tokens_per_s: 8000.0,
                seconds_per_token: 0.03,
                slowdown: 1.0,
            };
            let mut by_second: Vec<Vec<Arrival>> = vec![Vec::new(); 40];
            for (sec, frac, ctx, generated) in &offsets {
                by_second[*sec as usize].push(Arrival {
                    time: *sec as f64 + frac,
                    context_tokens: *ctx,
                    generated_tokens: *generated,
                });
            }
            for list in &mut by_second {
                list.sort_by(|a, b| a.time.total_cmp(&b.time));
            }
            let mut q = Queue::new();
            let (mut arrived, mut started, mut dropped) = (0u64, 0u64, 0u64);
            for t in 0..200u64 {
                let list = by_second.get(t as usize).map_or(&[][..], Vec::as_slice);
                let s = q.second(t, list, &svc);
                arrived += u64::from(s.arrivals);
                started += s.ttft.count();
                dropped += u64::from(s.dropped);
                prop_assert!(q.in_service() <= slots as usize);
            }
            prop_assert_eq!(q.waiting(), 0);
            prop_assert_eq!(arrived, offsets.len() as u64);
            prop_assert_eq!(started + dropped, arrived);
        }
    }
}
