//! Early ticks (docs/design-policies.md#early-passes): whether a Node update warrants an early
//! decision pass.
//!
//! Pure: the Kubernetes Node pair is reduced to the snapshot facts the comparison reads
//! (conditions with status and transition time, matching maintenance triggers) and handed to
//! `alfred_policy::early_tick`, which owns the rule.

use alfred_model::Timestamp;
use alfred_model::config::{Config, EarlyTickTrigger};
use alfred_model::snapshot::{Node, NodeCondition, Taint};
use alfred_observe::ObserveSettings;
use k8s_openapi::api::core::v1 as k8s;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Go's zero time in Unix seconds: at or before it a time is "unset".
const GO_ZERO_UNIX_SECS: i64 = -62_135_596_800;

fn time(t: &Time) -> Option<Timestamp> {
    let nanos = i64::try_from(t.0.as_nanosecond()).ok()?;
    let ts = Timestamp::from_unix_nanos(nanos);
    (ts.unix_secs() > GO_ZERO_UNIX_SECS).then_some(ts)
}

/// The early-tick facts of one Kubernetes node.
pub fn facts(n: &k8s::Node, settings: &ObserveSettings) -> Node {
    let conditions: Vec<NodeCondition> = n
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .map(|c| NodeCondition {
            kind: c.type_.clone(),
            status: c.status.clone(),
            last_transition_time: c.last_transition_time.as_ref().and_then(time),
        })
        .collect();
    let taints: Vec<Taint> = n
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .map(|t| Taint {
            key: t.key.clone(),
            value: t.value.clone().unwrap_or_default(),
            effect: t.effect.clone(),
        })
        .collect();
    let labels = n.metadata.labels.clone().unwrap_or_default();
    let maintenance = alfred_observe::maintenance(&labels, &taints, &conditions, settings);
    Node {
        name: n.metadata.name.clone().unwrap_or_default(),
        conditions,
        maintenance,
        ..Node::default()
    }
}

/// Whether the update `old → new` warrants an early pass under the live configuration.
pub fn warrants(old: &k8s::Node, new: &k8s::Node, config: &Config) -> Option<EarlyTickTrigger> {
    if config.early_tick_on.is_empty() {
        return None;
    }
    let settings = ObserveSettings::from_config(config, false);
    alfred_policy::early_tick::warrants_early_pass(
        &facts(old, &settings),
        &facts(new, &settings),
        config,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(json: serde_json::Value) -> k8s::Node {
        serde_json::from_value(json).unwrap()
    }

    fn base() -> serde_json::Value {
        serde_json::json!({
            "metadata": {"name": "n1", "labels": {"a": "b"}},
            "status": {"conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z",
                 "lastHeartbeatTime": "2026-01-01T00:00:00Z", "reason": "r", "message": "m"}
            ]}
        })
    }

    #[test]
    fn condition_status_and_transition_changes_fire_heartbeats_do_not() {
        let cfg = Config::builtin();
        let old = node(base());
        let mut heartbeat = base();
        heartbeat["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-01-01T00:05:00Z".into();
        heartbeat["status"]["conditions"][0]["message"] = "other".into();
        assert_eq!(warrants(&old, &node(heartbeat), &cfg), None);
        let mut status = base();
        status["status"]["conditions"][0]["status"] = "False".into();
        assert_eq!(
            warrants(&old, &node(status), &cfg),
            Some(EarlyTickTrigger::NodeConditionChange)
        );
        let mut added = base();
        added["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"type": "GpuUnhealthy", "status": "True"}));
        assert_eq!(
            warrants(&old, &node(added), &cfg),
            Some(EarlyTickTrigger::NodeConditionChange)
        );
    }

    #[test]
    fn maintenance_trigger_changes_fire_when_configured() {
        let cfg = Config::from_yaml(
            "schemaVersion: 1\npolicies:\n  nodeHealth:\n    maintenance:\n      triggers:\n        - name: patching\n          label:\n            key: maint\n",
        )
        .unwrap();
        let old = node(base());
        let mut labelled = base();
        labelled["metadata"]["labels"]["maint"] = "yes".into();
        assert_eq!(
            warrants(&old, &node(labelled.clone()), &cfg),
            Some(EarlyTickTrigger::NodeMaintenanceChange)
        );
        let off = Config::from_yaml("schemaVersion: 1\nearlyTickOn: []\n").unwrap();
        assert_eq!(warrants(&old, &node(labelled), &off), None);
    }
}
