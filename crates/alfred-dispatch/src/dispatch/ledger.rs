//! The journal as the arbiter's durable dispatch ledger (docs/design.md#ledger).
//!
//! alfred keeps **one** durable record of its own requests: the journal (`state.json`,
//! docs/design-pass.md#journal). The arbiter's [`Ledger`] (claims, node cooling, alfred's part of
//! the hourly and in-flight counts, `WorkloadBusy`, the workload's last end) is derived from it on
//! every pass, so it survives a leader change exactly as the journal does and never disagrees
//! with it. Nothing else is persisted for the ledger.
//!
//! Each entry becomes one [`DispatchRecord`]:
//!
//! | record | from the entry |
//! |---|---|
//! | `uuid`, `workload`, `workloadUID`, `component`, `instance`, `fromNode`, `targets`, `createdAt` | the same members |
//! | `reason` | the payload's `reason` (an undecodable payload: `Fragmentation`, so the node-health exemptions never apply to it) |
//! | `absorbedAt` | `completedAt` of a terminal entry (`createdAt` if a terminal entry lacks it); none otherwise — stalled and prepared entries stay live |
//! | `claims` | derived from the snapshot, see below |
//!
//! **Claims.** The journal schema (docs/design-pass.md#journal, portable with the reference)
//! records the simulated target nodes but not the GPUs per node, so the claims are derived from the
//! snapshot the arbiter judges: the GPUs still to land are those of the Instance's pods
//! that are **not yet on a target** (pods already running on a target are in the node's
//! allocation and must not be counted twice). With `n` such pods (largest request `g`,
//! sum `G`) and `t` targets, each target claims `min(G, g · ⌈n / t⌉)`: exact for one
//! target and for one pod per target, conservative (never less than a real placement
//! could need per node) otherwise. An Instance no longer in the snapshot claims nothing
//! (its record is absorbed anyway when the InferenceService is gone).

use alfred_arbiter::{DispatchRecord, Ledger, NodeClaim};
use alfred_model::ClusterSnapshot;
use alfred_model::reason::RowReason;

use crate::dispatch::journal::{Entry, Journal};
use crate::dispatch::request::RequestPayload;

/// The GPUs `entry` claims per target node, derived from `snapshot` (module docs).
pub(crate) fn derived_claims(entry: &Entry, snapshot: &ClusterSnapshot) -> Vec<NodeClaim> {
    if entry.targets.is_empty() {
        return Vec::new();
    }
    let Some(inst) = snapshot
        .workload(&entry.workload.namespace, &entry.workload.name)
        .and_then(|w| w.component(entry.component))
        .and_then(|c| {
            u32::try_from(entry.instance)
                .ok()
                .and_then(|ix| c.instances.iter().find(|i| i.index == ix))
        })
    else {
        return Vec::new();
    };
    let pending: Vec<u32> = inst
        .pods
        .iter()
        .filter_map(|k| snapshot.pod_by_key(k))
        .filter(|p| !entry.targets.contains(&p.node))
        .map(|p| p.gpus)
        .filter(|g| *g > 0)
        .collect();
    if pending.is_empty() {
        return Vec::new();
    }
    let sum: u32 = pending.iter().fold(0u32, |a, g| a.saturating_add(*g));
    let largest = pending.iter().copied().max().unwrap_or(0);
    let per_target_pods =
        u32::try_from(pending.len().div_ceil(entry.targets.len())).unwrap_or(u32::MAX);
    let gpus = sum.min(largest.saturating_mul(per_target_pods));
    entry
        .targets
        .iter()
        .map(|t| NodeClaim {
            node: t.clone(),
            gpus,
        })
        .collect()
}

/// The ledger record of one journal entry (module docs).
pub(crate) fn record_of(entry: &Entry, snapshot: &ClusterSnapshot) -> DispatchRecord {
    let reason = RequestPayload::decode(&entry.payload)
        .map(|p| p.reason)
        .unwrap_or(RowReason::Fragmentation);
    let absorbed_at = entry
        .phase
        .is_terminal()
        .then(|| entry.completed_at.unwrap_or(entry.created_at));
    let mut record = DispatchRecord {
        uuid: entry.uuid.clone(),
        workload: entry.workload.key(),
        workload_uid: entry.workload_uid.clone(),
        component: entry.component,
        instance: entry.instance,
        reason,
        from_node: entry.from_node.clone(),
        targets: entry.targets.clone(),
        claims: derived_claims(entry, snapshot),
        created_at: entry.created_at,
        absorbed_at,
    };
    record.normalize();
    record
}

/// The arbiter's ledger: one record per journal entry, claims from `snapshot`.
pub(crate) fn ledger_of(journal: &Journal, snapshot: &ClusterSnapshot) -> Ledger {
    let mut ledger = Ledger::new();
    for e in &journal.entries {
        ledger.record(record_of(e, snapshot));
    }
    for p in journal.plans.iter().filter(|p| p.active()) {
        ledger.protect(&p.node);
        for s in p.steps.iter().filter(|s| !s.request_uuid.is_empty()) {
            ledger.mark_plan_step(&s.request_uuid, &p.id);
        }
    }
    ledger
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::journal::{Phase, WorkloadRef};
    use alfred_model::Timestamp;
    use alfred_model::snapshot::{
        Component, ComponentKind, DeploymentMode, Instance, Pod, Workload,
    };

    fn snapshot(pods: &[(&str, &str, u32)]) -> ClusterSnapshot {
        let keys: Vec<String> = pods.iter().map(|(n, _, _)| format!("ns/{n}")).collect();
        let mut s = ClusterSnapshot {
            pods: pods
                .iter()
                .map(|(n, node, g)| Pod {
                    namespace: "ns".into(),
                    name: (*n).into(),
                    node: (*node).into(),
                    gpus: *g,
                    ..Pod::default()
                })
                .collect(),
            workloads: vec![Workload {
                namespace: "ns".into(),
                name: "w".into(),
                uid: "isvc-w".into(),
                components: vec![Component {
                    kind: ComponentKind::Engine,
                    mode: DeploymentMode::OMENative,
                    replica: None,
                    observation_invalid: None,
                    instances: vec![Instance {
                        index: 0,
                        pods: keys.clone(),
                        ..Instance::default()
                    }],
                    pods: keys,
                    scheduler_name: String::new(),
                    topology_key: String::new(),
                }],
                ..Workload::default()
            }],
            ..ClusterSnapshot::default()
        };
        s.normalize();
        s
    }

    fn entry(targets: &[&str], phase: Phase) -> Entry {
        let at = Timestamp::from_unix_secs(1_790_000_000);
        Entry {
            uuid: "00000000-0000-4000-8000-000000000001".into(),
            workload: WorkloadRef {
                namespace: "ns".into(),
                name: "w".into(),
            },
            workload_uid: "isvc-w".into(),
            ir_name: "w-engine".into(),
            ir_uid: "ir-w".into(),
            component: ComponentKind::Engine,
            instance: 0,
            from_node: "a".into(),
            targets: targets.iter().map(|t| t.to_string()).collect(),
            payload: "not a payload".into(),
            source_fingerprint: String::new(),
            created_at: at,
            last_attempt: None,
            acknowledged_at: None,
            completed_at: phase.is_terminal().then(|| at.plus_minutes(3)),
            phase,
            reason: None,
        }
    }

    fn claims(v: &[NodeClaim]) -> Vec<(&str, u32)> {
        v.iter().map(|c| (c.node.as_str(), c.gpus)).collect()
    }

    #[test]
    fn claims_are_the_gpus_still_to_land_spread_over_the_targets() {
        let one = snapshot(&[("p0", "a", 4)]);
        assert_eq!(
            claims(&derived_claims(&entry(&["b"], Phase::Submitted), &one)),
            [("b", 4)]
        );
        let two = snapshot(&[("p0", "a", 4), ("p1", "a", 2)]);
        assert_eq!(
            claims(&derived_claims(&entry(&["b", "c"], Phase::Submitted), &two)),
            [("b", 4), ("c", 4)]
        );
        assert_eq!(
            claims(&derived_claims(&entry(&["b"], Phase::Submitted), &two)),
            [("b", 6)]
        );
        // A replacement already running on its target is in the node's allocation.
        let landed = snapshot(&[("p0", "a", 4), ("p0-new", "b", 4)]);
        assert_eq!(
            claims(&derived_claims(&entry(&["b"], Phase::Submitted), &landed)),
            [("b", 4)]
        );
        let done = snapshot(&[("p0-new", "b", 4)]);
        assert!(derived_claims(&entry(&["b"], Phase::Submitted), &done).is_empty());
        assert!(derived_claims(&entry(&[], Phase::Submitted), &one).is_empty());
        assert!(
            derived_claims(
                &entry(&["b"], Phase::Submitted),
                &ClusterSnapshot::default()
            )
            .is_empty()
        );
    }

    #[test]
    fn records_follow_the_entries() {
        let s = snapshot(&[("p0", "a", 4)]);
        let live = record_of(&entry(&["b"], Phase::Stalled), &s);
        assert_eq!(live.absorbed_at, None);
        assert_eq!(live.reason, RowReason::Fragmentation);
        assert_eq!(
            live.identity(),
            "isvc-w/00000000-0000-4000-8000-000000000001"
        );
        let e = entry(&["b"], Phase::Failed);
        let ended = record_of(&e, &s);
        assert_eq!(ended.absorbed_at, e.completed_at);
        let mut j = Journal::empty();
        j.entries.push(e);
        let ledger = ledger_of(&j, &s);
        assert_eq!(ledger.records().len(), 1);
        assert!(ledger.claims(&s).is_empty());
        assert_eq!(ledger.last_end("ns/w"), ended.absorbed_at);
    }
}
