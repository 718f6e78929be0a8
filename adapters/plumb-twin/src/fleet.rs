//! The simulated fleet one caretaker runs: per cluster its infrastructure, its queue and its
//! Prometheus series; the gateways splitting each cluster's users by the route weights; the
//! floors written to the members (`status.intent`) and the members' latest reports.

use std::collections::BTreeMap;

use plumb_core::member::{self, MemberReport};
use plumb_model::{AdaptivePolicy, Intent, Report, Timestamp};

use crate::arrivals::Arrival;
use crate::cluster::Cluster;
use crate::observe;
use crate::prom::Series;
use crate::queue::{Queue, SecondStats, Service};
use crate::rng::Rng;
use crate::scenario::Scenario;

/// A gateway's smooth weighted round robin (deterministic: no draw decides a request's
/// cluster).
#[derive(Debug, Clone, Default)]
pub struct Gateway {
    current: Vec<i64>,
}

impl Gateway {
    /// The cluster index for the next request under `weights` (percent, by cluster index);
    /// `None` when every weight is 0.
    pub fn pick(&mut self, weights: &[u32]) -> Option<usize> {
        if self.current.len() != weights.len() {
            self.current = vec![0; weights.len()];
        }
        let total: i64 = weights.iter().map(|&w| i64::from(w)).sum();
        if total == 0 {
            return None;
        }
        let mut best = 0;
        for (i, &w) in weights.iter().enumerate() {
            self.current[i] += i64::from(w);
            if self.current[i] > self.current[best] {
                best = i;
            }
        }
        self.current[best] -= total;
        Some(best)
    }
}

/// One caretaker's fleet.
#[derive(Debug, Clone)]
pub struct Fleet {
    /// Clusters, in the scenario's order.
    pub clusters: Vec<Cluster>,
    /// Their queues.
    pub queues: Vec<Queue>,
    /// Their Prometheus series.
    pub series: Vec<Series>,
    /// Route weights (percent) by cluster index.
    pub weights: Vec<u32>,
    /// `status.intent` per cluster.
    pub intents: Vec<Option<Intent>>,
    /// The latest report per cluster.
    pub reports: Vec<Option<Report>>,
    /// Each cluster's users' gateway.
    pub gateways: Vec<Gateway>,
    /// The last second's stats per cluster.
    pub last: Vec<SecondStats>,
}

impl Fleet {
    /// The fleet at the run's start (`at`, scenario seconds): each cluster running what its
    /// HPA wants for the load at that moment (under the Steady split when `routed`), all of
    /// it ready.
    pub fn new(scenario: &Scenario, seed: u64, routed: bool, at: f64) -> Fleet {
        let model = &scenario.model;
        let total: f64 = scenario
            .clusters
            .iter()
            .map(|c| crate::arrivals::rate(scenario, c, at))
            .sum();
        let clusters = scenario
            .clusters
            .iter()
            .map(|c| {
                let load = if routed {
                    total * f64::from(c.weight) / 100.0
                } else {
                    crate::arrivals::rate(scenario, c, at)
                };
                let want = (load / model.target_per_replica).ceil() as u32;
                let initial = want.clamp(c.min_replicas, c.max_replicas);
                Cluster::new(
                    c.clone(),
                    model,
                    initial,
                    Rng::stream(seed, &format!("cluster/{}", c.name)),
                )
            })
            .collect::<Vec<_>>();
        let n = clusters.len();
        Fleet {
            clusters,
            queues: vec![Queue::new(); n],
            series: vec![Series::new(model.scrape_secs, model.window_secs); n],
            weights: scenario.clusters.iter().map(|c| c.weight).collect(),
            intents: vec![None; n],
            reports: vec![None; n],
            gateways: vec![Gateway::default(); n],
            last: vec![SecondStats::default(); n],
        }
    }

    /// Route weights by cluster name.
    pub fn weight_map(&self, scenario: &Scenario) -> BTreeMap<String, u32> {
        scenario
            .clusters
            .iter()
            .zip(&self.weights)
            .map(|(c, w)| (c.name.clone(), *w))
            .collect()
    }

    /// One second of serving (run second `t`, scenario second `scenario_t`): `arrivals[i]`
    /// are cluster `i`'s users' requests, split by the weights when `routed` (else served at
    /// home); each cluster's queue runs with its ready replicas.
    pub fn serve(
        &mut self,
        scenario: &Scenario,
        t: u64,
        scenario_t: f64,
        arrivals: &[Vec<Arrival>],
        routed: bool,
    ) {
        let n = self.clusters.len();
        let mut inbound: Vec<Vec<Arrival>> = vec![Vec::new(); n];
        for (source, list) in arrivals.iter().enumerate() {
            for a in list {
                let to = if routed {
                    self.gateways[source].pick(&self.weights).unwrap_or(source)
                } else {
                    source
                };
                inbound[to].push(*a);
            }
        }
        let model = &scenario.model;
        for (i, mut list) in inbound.into_iter().enumerate() {
            list.sort_by(|a, b| a.time.total_cmp(&b.time));
            let ready = self.clusters[i].ready();
            let svc = Service {
                slots: ready * model.slots_per_replica,
                queue_limit: ready * model.queue_per_replica,
                timeout: model.timeout_secs,
                prefill_tokens_per_s: model.prefill_tokens_per_s,
                seconds_per_token: model.seconds_per_token,
                slowdown: slowdown(scenario, &scenario.clusters[i].name, scenario_t),
            };
            let mut stats = self.queues[i].second(t, &list, &svc);
            stats.ready = ready;
            self.series[i].push(t, stats);
            self.last[i] = stats;
        }
    }

    /// Member `i`'s report at second `t` (`start` is the run's start), through the real
    /// member report, kept as its latest.
    pub fn report(
        &mut self,
        policy: &AdaptivePolicy,
        scenario: &Scenario,
        i: usize,
        t: u64,
        start: Timestamp,
    ) -> MemberReport {
        let now = start.plus(std::time::Duration::from_secs(t));
        let cluster = &self.clusters[i];
        let obs = observe::observation(cluster, &scenario.model, start);
        let signals = self.series[i].read(t);
        let sampled = start.plus(std::time::Duration::from_secs(signals.sampled_at));
        let samples = observe::samples(&signals, sampled);
        let out = member::report(
            &obs,
            &policy.spec,
            &cluster.setup.name,
            &samples,
            self.reports[i].as_ref(),
            now,
        );
        self.reports[i].clone_from(&out.report);
        out
    }
}

/// The service-time multiplier of `cluster` at `t` seconds (scripted slowdowns).
pub fn slowdown(scenario: &Scenario, cluster: &str, t: f64) -> f64 {
    let m = t / 60.0;
    scenario
        .slowdowns
        .iter()
        .filter(|s| s.cluster == cluster && m >= s.start_min && m < s.end_min)
        .filter(|s| (m - s.start_min) % s.period_min < s.on_min)
        .map(|s| s.factor)
        .product()
}

/// Whether `region` is short of capacity at `t` seconds.
pub fn short_of_capacity(scenario: &Scenario, region: &str, t: f64) -> bool {
    let m = t / 60.0;
    scenario
        .shortages
        .iter()
        .any(|s| s.region == region && m >= s.start_min && m < s.end_min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateway_splits_by_weight_and_skips_zero() {
        let mut g = Gateway::default();
        let mut counts = [0; 3];
        for _ in 0..100 {
            counts[g.pick(&[70, 30, 0]).unwrap()] += 1;
        }
        assert_eq!(counts, [70, 30, 0]);
        assert_eq!(g.pick(&[0, 0, 0]), None);
    }

    #[test]
    fn slowdowns_repeat_within_their_window() {
        let s = Scenario::preset("flapping-signal").unwrap();
        assert_eq!(slowdown(&s, "east-a", 29.0 * 60.0), 1.0);
        assert_eq!(slowdown(&s, "east-a", 31.0 * 60.0), 1.8);
        assert_eq!(slowdown(&s, "east-a", 35.0 * 60.0), 1.0);
        assert_eq!(slowdown(&s, "east-a", 40.0 * 60.0), 1.8);
        assert_eq!(slowdown(&s, "east-b", 31.0 * 60.0), 1.0);
    }
}

#[cfg(test)]
mod proptests {
    use proptest::prelude::*;

    use super::*;
    use crate::caretakers::shares;

    proptest! {
        /// Over any 100 consecutive requests the gateway sends each cluster exactly its share.
        #[test]
        fn the_gateway_splits_exactly_by_weight(parts in prop::collection::vec(0u32..50, 1..8)) {
            let weights = shares(&parts);
            prop_assert_eq!(weights.iter().sum::<u32>(), 100);
            let mut g = Gateway::default();
            let mut counts = vec![0u32; weights.len()];
            for _ in 0..100 {
                counts[g.pick(&weights).unwrap()] += 1;
            }
            prop_assert_eq!(counts, weights);
        }
    }
}
