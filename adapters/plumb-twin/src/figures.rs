//! The figures a run is judged by, measured on what the servers did (not on the lagged
//! signals): minutes any member is over its latency SLO (a minute's TTFT p95, dropped
//! requests counting as infinitely late), requests dropped, recovery after each scripted
//! event, GPU-hours, decisions, oscillations (a cluster's share moving back within
//! `calmFor` of moving the other way) and release lag (floors and weights back after an
//! event ends). Also the per-minute series the plots draw.

use serde::Serialize;

use crate::fleet::Fleet;
use crate::queue::{BUCKETS, Histogram};
use crate::scenario::Scenario;

/// One caretaker's figures (`summary.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// `plumb`, `none`, `static` or `naive`.
    pub caretaker: String,
    /// Minutes in which any member's TTFT p95 was over the latency SLO.
    pub minutes_over_slo: u32,
    /// Per cluster, minutes over the SLO.
    pub minutes_over_slo_by_cluster: std::collections::BTreeMap<String, u32>,
    /// Requests dropped (queue full or timed out).
    pub requests_dropped: u64,
    /// Requests that arrived.
    pub requests: u64,
    /// GPU-hours: GPUs held by the workload's bound replicas plus idle NodePool GPUs.
    pub gpu_hours: f64,
    /// Decisions (Plumb's decision lines; the naive shift's changing steps).
    pub decisions: u32,
    /// Share movements reversed within `calmFor`.
    pub oscillations: u32,
    /// Per scripted event, minutes from its start to the end of the last minute over the SLO
    /// before the next event (0: never over).
    pub recover_minutes: Vec<f64>,
    /// Per scripted event, minutes from its end until no floor is set and every share is
    /// Steady (`null`: not by the run's end; 0 for caretakers without floors).
    pub release_lag_minutes: Vec<Option<f64>>,
}

/// Per-minute series for the plots.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Minute {
    /// Minutes since the start.
    pub minute: u32,
    /// Per cluster: ready replicas.
    pub ready: Vec<u32>,
    /// Per cluster: the floor (intent replicas), 0 without one.
    pub floor: Vec<u32>,
    /// Per cluster: route weight.
    pub weight: Vec<u32>,
    /// Per cluster: requests/s it received.
    pub load: Vec<f64>,
    /// Per cluster: TTFT p95 in the minute, seconds (dropped as late; `None`: no request).
    pub latency: Vec<Option<f64>>,
}

/// Collects figures second by second.
#[derive(Debug, Clone)]
pub struct Recorder {
    n: usize,
    slo: f64,
    calm_for_secs: f64,
    minute_ttft: Vec<Histogram>,
    minute_arrivals: Vec<u64>,
    over_by_cluster: Vec<u32>,
    over_minutes: Vec<u32>,
    last_move: Vec<Option<(f64, i64)>>,
    prev_weights: Vec<u32>,
    clear_since: Option<u32>,
    clear_minutes: Vec<bool>,
    /// The figures so far.
    pub summary: Summary,
    /// The minutes so far.
    pub minutes: Vec<Minute>,
    gpu_seconds: f64,
}

impl Recorder {
    /// A recorder for `caretaker` over the scenario; `calm_for_secs` from the policy.
    pub fn new(caretaker: &str, scenario: &Scenario, calm_for_secs: f64) -> Recorder {
        let n = scenario.clusters.len();
        Recorder {
            n,
            slo: scenario.model.latency_slo,
            calm_for_secs,
            minute_ttft: vec![Histogram::default(); n],
            minute_arrivals: vec![0; n],
            over_by_cluster: vec![0; n],
            over_minutes: Vec::new(),
            last_move: vec![None; n],
            prev_weights: scenario.clusters.iter().map(|c| c.weight).collect(),
            clear_since: None,
            clear_minutes: Vec::new(),
            summary: Summary {
                caretaker: caretaker.to_owned(),
                ..Summary::default()
            },
            minutes: Vec::new(),
            gpu_seconds: 0.0,
        }
    }

    /// Records second `t` of the fleet.
    pub fn second(&mut self, scenario: &Scenario, fleet: &Fleet, t: u64) {
        let model = &scenario.model;
        for i in 0..self.n {
            let s = &fleet.last[i];
            self.minute_ttft[i].add(&s.ttft);
            self.minute_ttft[i].0[BUCKETS - 1] += s.dropped;
            self.minute_arrivals[i] += u64::from(s.arrivals);
            self.summary.requests += u64::from(s.arrivals);
            self.summary.requests_dropped += u64::from(s.dropped);
            let c = &fleet.clusters[i];
            self.gpu_seconds +=
                f64::from(c.bound() * model.gpus_per_replica) + f64::from(c.idle_pool_gpus(model));
        }
        self.weights(fleet, t as f64);
        if (t + 1).is_multiple_of(60) {
            self.minute(scenario, fleet, u32::try_from(t / 60).unwrap_or(u32::MAX));
        }
    }

    /// Oscillations: a share that moves the other way within `calmFor` of its last move.
    fn weights(&mut self, fleet: &Fleet, t: f64) {
        for i in 0..self.n {
            let delta = i64::from(fleet.weights[i]) - i64::from(self.prev_weights[i]);
            if delta == 0 {
                continue;
            }
            let sign = delta.signum();
            if let Some((at, last)) = self.last_move[i]
                && last != sign
                && t - at < self.calm_for_secs
            {
                self.summary.oscillations += 1;
            }
            self.last_move[i] = Some((t, sign));
            self.prev_weights[i] = fleet.weights[i];
        }
    }

    fn minute(&mut self, scenario: &Scenario, fleet: &Fleet, minute: u32) {
        let mut any_over = false;
        let mut latency = Vec::with_capacity(self.n);
        let mut load = Vec::with_capacity(self.n);
        for i in 0..self.n {
            let p95 = self.minute_ttft[i].quantile(0.95);
            if p95.is_some_and(|p| p > self.slo) {
                any_over = true;
                self.over_by_cluster[i] += 1;
            }
            latency.push(p95);
            load.push(self.minute_arrivals[i] as f64 / 60.0);
            self.minute_ttft[i] = Histogram::default();
            self.minute_arrivals[i] = 0;
        }
        if any_over {
            self.summary.minutes_over_slo += 1;
            self.over_minutes.push(minute);
        }
        let steady = scenario
            .clusters
            .iter()
            .zip(&fleet.weights)
            .all(|(c, w)| c.weight == *w);
        let clear = steady && fleet.intents.iter().all(Option::is_none);
        self.clear_minutes.push(clear);
        if clear {
            self.clear_since.get_or_insert(minute);
        } else {
            self.clear_since = None;
        }
        self.minutes.push(Minute {
            minute,
            ready: fleet.clusters.iter().map(|c| c.ready()).collect(),
            floor: fleet
                .intents
                .iter()
                .map(|f| f.as_ref().map_or(0, |f| f.replicas))
                .collect(),
            weight: fleet.weights.clone(),
            load,
            latency,
        });
    }

    /// The figures at the run's end.
    pub fn finish(mut self, scenario: &Scenario, decisions: u32) -> (Summary, Vec<Minute>) {
        self.summary.gpu_hours = (self.gpu_seconds / 3600.0 * 10.0).round() / 10.0;
        self.summary.decisions = decisions;
        self.summary.minutes_over_slo_by_cluster = scenario
            .clusters
            .iter()
            .zip(&self.over_by_cluster)
            .map(|(c, m)| (c.name.clone(), *m))
            .collect();
        let windows = scenario.event_windows();
        for (k, &(start, end)) in windows.iter().enumerate() {
            let until = windows.get(k + 1).map_or(f64::MAX, |w| w.0);
            let last = self
                .over_minutes
                .iter()
                .filter(|&&m| f64::from(m) >= start && f64::from(m) < until)
                .max();
            self.summary
                .recover_minutes
                .push(last.map_or(0.0, |&m| f64::from(m) + 1.0 - start));
            let from = end.ceil() as usize;
            let lag = (from..self.clear_minutes.len())
                .find(|&m| self.clear_minutes[m..].iter().all(|c| *c))
                .map(|m| m as f64 - end);
            self.summary
                .release_lag_minutes
                .push(lag.map(|l| l.max(0.0)));
        }
        (self.summary, self.minutes)
    }
}
