//! The effective spec: the spec with every default filled in (`plumb policy check
//! --print-effective`), so a user sees what Plumb will act on, not only what was written.
//!
//! Only defaults that are values are filled: `clusters[].region` (the nodes' label) and
//! `clusters[].nodeSelector` (none) depend on the cluster or mean "not set", and the signals
//! are queries the user writes, so those stay as written. Experimental fields get their
//! defaults only where the user set their section (`confidenceThresholdPercent` stays unset):
//! this build ignores them, and filling them in would make every policy look experimental.

use crate::duration::GoDuration;
use crate::spec::{
    AdaptivePolicySpec, Capacity, ClusterSpec, Escalation, Experimental, Traffic, Workload,
    defaults,
};

fn filled(value: Option<GoDuration>, default: &str) -> Option<GoDuration> {
    Some(value.unwrap_or_else(|| GoDuration::new(default)))
}

impl AdaptivePolicySpec {
    /// This spec with its defaults filled in; `namespace` is the policy's namespace (the
    /// default of `workload.namespace` and `traffic.routes[].namespace`).
    pub fn effective(&self, namespace: Option<&str>) -> AdaptivePolicySpec {
        let mut spec = self.clone();
        spec.mode = Some(self.mode());
        spec.placement = Some(self.placement());
        let workload = spec.workload.get_or_insert_with(Workload::default);
        if workload.namespace.is_none() {
            workload.namespace = namespace.map(str::to_owned);
        }
        let shared_capacity = self.capacity.as_ref().and_then(|c| c.replica_capacity);
        for cluster in spec.clusters.iter_mut().flatten() {
            fill_cluster(cluster, shared_capacity);
        }
        let capacity = spec.capacity.get_or_insert_with(Capacity::default);
        capacity.step = Some(self.step());
        let e = spec.escalation.take().unwrap_or_default();
        spec.escalation = Some(Escalation {
            after: filled(e.after, defaults::AFTER),
            early_after: filled(e.early_after, defaults::EARLY_AFTER),
            ready_timeout: filled(e.ready_timeout, defaults::READY_TIMEOUT),
            cooldown: filled(e.cooldown, defaults::COOLDOWN),
            calm_for: filled(e.calm_for, defaults::CALM_FOR),
        });
        if let Some(traffic) = spec.traffic.as_mut() {
            fill_traffic(traffic, namespace);
        }
        for metric in spec
            .signals
            .iter_mut()
            .flat_map(|s| s.metrics.iter_mut().flatten())
        {
            metric.max_age = filled(metric.max_age.take(), defaults::METRIC_MAX_AGE);
        }
        if let Some(Experimental {
            adaptive: Some(adaptive),
        }) = spec.experimental.as_mut()
        {
            adaptive.mode.get_or_insert(defaults::ADAPTIVE_MODE);
            adaptive.chooser.get_or_insert(defaults::CHOOSER);
        }
        spec
    }
}

fn fill_cluster(cluster: &mut ClusterSpec, shared_capacity: Option<f64>) {
    cluster.node_pools.get_or_insert_with(Vec::new);
    cluster.cost_rank.get_or_insert(defaults::COST_RANK);
    if cluster.replica_capacity.is_none() {
        cluster.replica_capacity = shared_capacity;
    }
    cluster.weight.get_or_insert(defaults::WEIGHT);
    cluster.min_weight.get_or_insert(defaults::MIN_WEIGHT);
    cluster.max_weight.get_or_insert(defaults::MAX_WEIGHT);
    if let Some(backend) = cluster.backend.as_mut() {
        backend
            .kind
            .get_or_insert_with(|| defaults::BACKEND_KIND.to_owned());
    }
}

fn fill_traffic(traffic: &mut Traffic, namespace: Option<&str>) {
    traffic.step_percent.get_or_insert(defaults::STEP_PERCENT);
    for route in traffic.routes.iter_mut().flatten() {
        if route.namespace.is_none() {
            route.namespace = namespace.map(str::to_owned);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::policy::AdaptivePolicy;

    #[test]
    fn every_default_is_filled_and_what_was_written_is_kept() {
        let text = "metadata: {namespace: ml}\nspec:\n  workload: {name: llama}\n  clusters:\n  - {name: a, maxReplicas: 4}\n  - {name: b, maxReplicas: 2, replicaCapacity: 3}\n  capacity: {replicaCapacity: 5}\n  escalation: {after: 120s}\n  traffic:\n    routes: [{cluster: a, name: r}]\n  signals:\n    metrics: [{name: kv, query: q}]\n  experimental:\n    adaptive: {intent: fast}\n";
        let policy = AdaptivePolicy::from_yaml(text).unwrap();
        let effective = policy.spec.effective(policy.metadata.namespace.as_deref());
        insta::assert_json_snapshot!(effective);
        assert_eq!(
            effective.effective(Some("ml")),
            effective,
            "filling is idempotent"
        );
        assert_eq!(
            effective.check(),
            policy.spec.check(),
            "defaults change no verdict"
        );
    }
}
