//! Request arrivals: each cluster's own users replay a trace (the conversation trace; its
//! token counts and its burstiness are real) at a synthetic rate. The trace is walked at a
//! speed that follows the target rate — a diurnal curve peaking at 14:00 in the cluster's
//! region, times any scripted regional burst — from a per-cluster offset drawn from the seed,
//! looping when it ends. Every caretaker sees the same arrivals.

use crate::rng::Rng;
use crate::scenario::{Burst, ClusterSetup, Scenario};
use crate::trace::Trace;

/// One request as it arrives at a gateway.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrival {
    /// Seconds since the run's start.
    pub time: f64,
    /// Prompt tokens.
    pub context_tokens: u32,
    /// Output tokens.
    pub generated_tokens: u32,
}

/// The diurnal multiplier for a cluster at `t` seconds: from `low` at 02:00 local to 1 at
/// 14:00 local (a cosine), synthetic.
pub fn diurnal(scenario: &Scenario, cluster: &ClusterSetup, t: f64) -> f64 {
    let low = scenario.diurnal_low;
    let hour = scenario.start_hour_utc + t / 3600.0 - cluster.utc_offset_hours;
    let phase = std::f64::consts::TAU * (hour - 14.0) / 24.0;
    low + (1.0 - low) * (0.5 + 0.5 * phase.cos())
}

/// A burst's multiplier at `t` seconds: 1 outside, `factor` inside, ramping linearly over
/// five minutes at each end.
pub fn burst_factor(burst: &Burst, t: f64) -> f64 {
    let m = t / 60.0;
    if m <= burst.start_min || m >= burst.end_min {
        return 1.0;
    }
    let ramp = ((m - burst.start_min) / 5.0)
        .min((burst.end_min - m) / 5.0)
        .min(1.0);
    1.0 + (burst.factor - 1.0) * ramp
}

/// The target arrival rate of a cluster's users at `t`, requests/s.
pub fn rate(scenario: &Scenario, cluster: &ClusterSetup, t: f64) -> f64 {
    let bursts: f64 = scenario
        .bursts
        .iter()
        .filter(|b| b.region == cluster.region)
        .map(|b| burst_factor(b, t))
        .product();
    cluster.peak_rate * diurnal(scenario, cluster, t) * bursts
}

/// One cluster's stream: where in the (looped) trace its clock stands.
#[derive(Debug, Clone)]
struct Stream {
    /// Trace seconds walked so far (from the offset).
    position: f64,
    /// Index of the next request in the current loop.
    next: usize,
    /// Trace seconds at which the current loop started, relative to `position`'s origin.
    loop_base: f64,
}

/// Every cluster's arrivals, second by second.
#[derive(Debug, Clone)]
pub struct Arrivals<'a> {
    scenario: &'a Scenario,
    trace: &'a Trace,
    streams: Vec<Stream>,
    shift: f64,
}

impl<'a> Arrivals<'a> {
    /// Streams for the scenario's clusters, each starting at a trace offset drawn from
    /// `seed`; the run's second `t` is the scenario's second `t - shift` (a warm-up before
    /// the scenario starts).
    pub fn new(scenario: &'a Scenario, trace: &'a Trace, seed: u64, shift: f64) -> Arrivals<'a> {
        let mut rng = Rng::stream(seed, "arrivals");
        let streams = scenario
            .clusters
            .iter()
            .map(|_| {
                let start = rng.uniform() * trace.duration;
                let next = trace.requests.partition_point(|r| r.offset < start);
                Stream {
                    position: 0.0,
                    next,
                    loop_base: -start,
                }
            })
            .collect();
        Arrivals {
            scenario,
            trace,
            streams,
            shift,
        }
    }

    /// The arrivals of second `[t, t + 1)` of cluster `index`'s users, appended to `out`.
    pub fn second(&mut self, index: usize, t: u64, out: &mut Vec<Arrival>) {
        let cluster = &self.scenario.clusters[index];
        let speed =
            rate(self.scenario, cluster, t as f64 + 0.5 - self.shift) / self.trace.mean_rate();
        let stream = &mut self.streams[index];
        let from = stream.position;
        let to = from + speed;
        stream.position = to;
        if speed <= 0.0 {
            return;
        }
        let requests = &self.trace.requests;
        loop {
            if stream.next >= requests.len() {
                stream.next = 0;
                stream.loop_base += self.trace.duration;
            }
            let r = requests[stream.next];
            let at = stream.loop_base + r.offset;
            if at >= to {
                break;
            }
            stream.next += 1;
            if at < from {
                continue;
            }
            out.push(Arrival {
                time: t as f64 + (at - from) / speed,
                context_tokens: r.context_tokens,
                generated_tokens: r.generated_tokens,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceRequest;

    fn trace() -> Trace {
        let requests = (0..100)
            .map(|i| TraceRequest {
                offset: f64::from(i),
                context_tokens: i,
                generated_tokens: 1,
            })
            .collect();
        Trace {
            name: "t".into(),
            requests,
            duration: 100.0,
        }
    }

    #[test]
    fn the_diurnal_curve_peaks_at_14_local_and_bottoms_at_the_trough() {
        let s = Scenario::preset("calm-diurnal").unwrap();
        let c = &s.clusters[0]; // UTC-5: 14:00 local is 19:00 UTC, the run starts at 00:00 UTC
        assert!((diurnal(&s, c, 19.0 * 3600.0) - 1.0).abs() < 1e-9);
        assert!((diurnal(&s, c, 7.0 * 3600.0) - s.diurnal_low).abs() < 1e-9);
    }

    #[test]
    fn a_burst_ramps_in_and_out_over_five_minutes() {
        let b = Burst {
            region: "r".into(),
            start_min: 10.0,
            end_min: 30.0,
            factor: 3.0,
        };
        assert_eq!(burst_factor(&b, 600.0), 1.0);
        assert!((burst_factor(&b, 750.0) - 2.0).abs() < 1e-9);
        assert_eq!(burst_factor(&b, 1200.0), 3.0);
        assert_eq!(burst_factor(&b, 1800.0), 1.0);
    }

    #[test]
    fn the_stream_delivers_the_target_rate_and_loops() {
        let mut s = Scenario::preset("calm-diurnal").unwrap();
        s.diurnal_low = 1.0; // flat: 12 requests/s on east-a
        let t = trace();
        let mut a = Arrivals::new(&s, &t, 3, 0.0);
        let mut out = Vec::new();
        for sec in 0..50 {
            a.second(0, sec, &mut out);
        }
        // 12/s over 50 s from a 1/s trace: 600 requests, looping the 100-request trace
        assert!((599..=601).contains(&out.len()), "{}", out.len());
        assert!(out.windows(2).all(|w| w[0].time <= w[1].time));
        assert!(out.iter().all(|r| (0.0..50.0).contains(&r.time)));
    }

    #[test]
    fn the_same_seed_gives_the_same_arrivals() {
        let s = Scenario::preset("regional-shortage").unwrap();
        let t = trace();
        let run = |seed| {
            let mut a = Arrivals::new(&s, &t, seed, 0.0);
            let mut out = Vec::new();
            for sec in 0..20 {
                a.second(2, sec, &mut out);
            }
            out
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
    }
}
