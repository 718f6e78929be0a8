//! Random valid `AdaptivePolicy` specs built from plumb-model's own types: 2–7 clusters with
//! their ceilings, weights and bounds, NodePools, regions, signals with SLOs, and the hub's
//! timing drawn short enough that a run of an hour passes through every phase.

use std::collections::BTreeMap;

use plumb_model::AdaptivePolicySpec;
use plumb_model::duration::GoDuration;
use plumb_model::spec::{
    BackendRef, Capacity, ClusterSpec, Escalation, Mode, Placement, Route, Signals, Traffic,
    Workload,
};

use crate::rng::Rng;

/// The namespace of every policy in the campaign.
pub const NAMESPACE: &str = "ns";

/// Draws a policy over `clusters`; `auto` picks the mode.
pub fn random_spec(rng: &mut Rng, clusters: &[String], auto: bool) -> AdaptivePolicySpec {
    let traffic = rng.chance(0.6);
    let weights = split_100(rng, clusters.len());
    let cluster_specs = clusters
        .iter()
        .zip(&weights)
        .enumerate()
        .map(|(i, (name, &weight))| cluster_spec(rng, name, i, traffic.then_some(weight)))
        .collect();
    let pressure = rng.chance(0.5);
    let latency = rng.chance(0.3);
    let errors = rng.chance(0.2);
    let secs = |s: u64| Some(GoDuration::new(format!("{s}s")));
    let after = rng.range(30, 180);
    AdaptivePolicySpec {
        mode: Some(if auto { Mode::Auto } else { Mode::Shadow }),
        workload: Some(Workload {
            name: Some("llm".into()),
            namespace: None,
        }),
        clusters: Some(cluster_specs),
        signals: Some(Signals {
            pressure: pressure.then(|| "pressure".into()),
            latency: latency.then(|| "latency".into()),
            latency_slo: latency.then_some(0.5),
            error_rate: errors.then(|| "errors".into()),
            error_rate_slo: errors.then_some(0.05),
            ..Signals::default()
        }),
        capacity: Some(Capacity {
            replica_capacity: rng.chance(0.5).then_some(10.0),
            step: Some(rng.range_i64(1, 4)),
        }),
        escalation: Some(Escalation {
            after: secs(after),
            early_after: secs(rng.range(10, after)),
            ready_timeout: secs(rng.range(60, 600)),
            cooldown: secs(rng.range(0, 90)),
            calm_for: secs(rng.range(60, 600)),
        }),
        traffic: traffic.then(|| Traffic {
            routes: Some(
                (0..rng.range(1, 2))
                    .map(|r| Route {
                        cluster: Some(clusters[rng.index(clusters.len())].clone()),
                        namespace: None,
                        name: Some(format!("llm-{r}")),
                    })
                    .collect(),
            ),
            step_percent: Some(rng.range_i64(5, 50)),
        }),
        placement: Some(if rng.chance(0.5) {
            Placement::LocalFirst
        } else {
            Placement::StaticFirst
        }),
        confidence_threshold_percent: None,
        experimental: None,
    }
}

fn cluster_spec(rng: &mut Rng, name: &str, i: usize, weight: Option<i64>) -> ClusterSpec {
    let (min_weight, max_weight) = match weight {
        Some(w) => (
            Some(rng.range_i64(0, w)).filter(|_| rng.chance(0.5)),
            Some(rng.range_i64(w, 100)).filter(|_| rng.chance(0.5)),
        ),
        None => (None, None),
    };
    ClusterSpec {
        name: Some(name.to_string()),
        node_pools: rng.chance(0.5).then(|| vec!["gpu".to_string()]),
        node_selector: Some(BTreeMap::from([("gpu".to_string(), "true".to_string())])),
        max_replicas: Some(rng.range_i64(1, 12)),
        region: Some(format!("r{}", i % 3)),
        cost_rank: Some(rng.range_i64(0, 3)),
        replica_capacity: None,
        backend: weight.map(|_| BackendRef {
            name: Some(format!("llm-{name}")),
            ..BackendRef::default()
        }),
        weight,
        min_weight,
        max_weight,
    }
}

/// `n` whole percents summing to 100 (some may be 0).
fn split_100(rng: &mut Rng, n: usize) -> Vec<i64> {
    let mut cuts: Vec<i64> = (1..n).map(|_| rng.range_i64(0, 100)).collect();
    cuts.sort_unstable();
    let mut out = Vec::with_capacity(n);
    let mut last = 0;
    for c in cuts {
        out.push(c - last);
        last = c;
    }
    out.push(100 - last);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_drawn_policy_is_valid() {
        for seed in 0..2000 {
            let mut rng = Rng::new(seed, 0);
            let n = usize::try_from(rng.range(2, 7)).unwrap_or(2);
            let names: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
            let auto = rng.chance(0.5);
            let spec = random_spec(&mut rng, &names, auto);
            let checked = spec.check();
            assert!(checked.is_valid(), "seed {seed}: {:?}", checked.problems);
        }
    }
}
