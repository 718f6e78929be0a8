//! The journal as the arbiter's durable dispatch ledger (decision 15.2).
//!
//! alfred keeps **one** durable record of its own requests: the journal (`state.json`,
//! §9.3). The arbiter's [`Ledger`] (claims, node cooling, alfred's part of the hourly and
//! in-flight counts, `WorkloadBusy`, the workload's last end) is derived from it on every
//! pass, so it survives a leader change exactly as the journal does and never disagrees
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
//! **Claims.** The journal schema (§9.3, portable with the reference) records the
//! simulated target nodes but not the GPUs per node, so the claims are derived from the
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

use crate::journal::{Entry, Journal};
use crate::request::RequestPayload;

/// The GPUs `entry` claims per target node, derived from `snapshot` (module docs).
pub fn derived_claims(entry: &Entry, snapshot: &ClusterSnapshot) -> Vec<NodeClaim> {
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
pub fn record_of(entry: &Entry, snapshot: &ClusterSnapshot) -> DispatchRecord {
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
pub fn ledger_of(journal: &Journal, snapshot: &ClusterSnapshot) -> Ledger {
    let mut ledger = Ledger::new();
    for e in &journal.entries {
        ledger.record(record_of(e, snapshot));
    }
    ledger
}
