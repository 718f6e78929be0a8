//! The pre-submit re-check of one move (alfred-engine.md §9.6) and the source fingerprint
//! (§9.5, decision 15.1).
//!
//! The adapter supplies a fresh snapshot built from uncached reads (it may be the pass's
//! own snapshot when nothing newer exists). A capture failure (e.g. the PodGroup CRD is
//! missing) is signalled by an [`alfred_model::snapshot::ObjectProblem`] of kind
//! [`CAPTURE_PROBLEM_KIND`] in the fresh snapshot.

use std::collections::BTreeSet;
use std::time::Duration;

use alfred_model::config::{Config, RuntimeOptions};
use alfred_model::reason::{DispatchReason, SchedulingStatus};
use alfred_model::record::Candidate;
use alfred_model::snapshot::ComponentKind;
use alfred_model::{ClusterSnapshot, Timestamp};
use serde_json::json;
use sha2::{Digest, Sha256};

use alfred_arbiter::Breaker;

use crate::budget::{check_budget, node_cooling};
use crate::journal::{Entry, Journal};
use crate::request::RequestPayload;
use crate::schedule::{fresh, select_profile};
use crate::sim::{MoveSimulation, SimulationPurpose, Simulator};
use crate::stages::{ArbiterInput, Stages};

/// Kind of the snapshot problem that marks a failed lossless capture.
pub const CAPTURE_PROBLEM_KIND: &str = "SchedulingCapture";

/// alfred's source fingerprint: hex SHA-256 over a canonical JSON of the InferenceService
/// UID and generation, the InferenceReplica UID, name and revisions, the Instance's status
/// row and its pods (name, UID, node, GPUs, the OMENative identity labels). `None` when
/// the Instance is not in the snapshot.
pub fn fingerprint(
    snap: &ClusterSnapshot,
    workload: &str,
    component: ComponentKind,
    instance: i64,
) -> Option<String> {
    let (ns, name) = workload.split_once('/')?;
    let w = snap.workload(ns, name)?;
    let comp = w.component(component)?;
    let ir = comp.replica.as_ref()?;
    let ix = u32::try_from(instance).ok()?;
    let inst = comp.instances.iter().find(|i| i.index == ix)?;
    let pods: Vec<serde_json::Value> = inst
        .pods
        .iter()
        .filter_map(|k| snap.pod_by_key(k))
        .map(|p| {
            let label = |k: &str| p.labels.get(k).cloned().unwrap_or_default();
            json!([
                p.namespace,
                p.name,
                p.uid,
                p.node,
                p.gpus,
                label("ome.io/runner"),
                label("ome.io/pod-ordinal"),
                label("ome.io/instance-incarnation")
            ])
        })
        .collect();
    let status = inst
        .status
        .as_ref()
        .map(|s| serde_json::to_value(s).unwrap_or_default());
    let doc = json!([
        "alfred-fingerprint-v1",
        w.uid,
        w.generation,
        ir.uid,
        ir.name,
        ir.current_revision,
        ir.update_revision,
        status,
        pods
    ]);
    let bytes = serde_json::to_vec(&doc).ok()?;
    let digest = Sha256::digest(&bytes);
    Some(digest.iter().map(|b| format!("{b:02x}")).collect())
}

/// What a passing re-check yields.
#[derive(Debug, Clone, PartialEq)]
pub struct Cleared {
    /// The fresh candidate, with the hints to write.
    pub candidate: Candidate,
    /// The InferenceService's UID and resourceVersion (the JSON Patch tests them).
    pub workload_uid: String,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// InferenceReplica name.
    pub ir_name: String,
    /// InferenceReplica UID.
    pub ir_uid: String,
    /// Fingerprint.
    pub fingerprint: String,
    /// Sorted unique simulated placement nodes.
    pub targets: Vec<String>,
}

/// Everything a re-check reads.
pub struct Recheck<'a> {
    /// The stages (policies and arbiter run again).
    pub stages: &'a dyn Stages,
    /// The fresh snapshot, `None` when it could not be built.
    pub fresh: Option<&'a ClusterSnapshot>,
    /// The pass's own snapshot (for the identity comparison), when the move came from it.
    pub observed: Option<&'a ClusterSnapshot>,
    /// Configuration.
    pub config: &'a Config,
    /// Flags.
    pub runtime: &'a RuntimeOptions,
    /// The journal as it stands.
    pub journal: &'a Journal,
    /// The session's circuit breaker.
    pub breaker: &'a Breaker,
    /// Now.
    pub now: Timestamp,
}

fn identities(snap: &ClusterSnapshot, c: &Candidate) -> Option<(String, String, String)> {
    let (ns, name) = c.workload.split_once('/')?;
    let w = snap.workload(ns, name)?;
    let ir = w.component(c.component)?.replica.as_ref()?;
    Some((w.uid.clone(), ir.uid.clone(), ir.name.clone()))
}

/// Runs the re-check for `candidate` (`existing` = the prepared entry being retried).
pub fn recheck(
    ctx: &Recheck<'_>,
    sim: &mut dyn Simulator,
    candidate: &Candidate,
    existing: Option<&Entry>,
) -> Result<Cleared, DispatchReason> {
    // 1. Fresh observation.
    let fresh_snap = ctx.fresh.ok_or(DispatchReason::ObservationUnavailable)?;
    // 2. The policies still propose it.
    let proposed = ctx
        .stages
        .propose(fresh_snap, ctx.config, ctx.runtime, ctx.now);
    let evacuating = alfred_arbiter::evacuating_nodes(&proposed);
    let fresh_c = proposed
        .iter()
        .find(|c| {
            c.executable
                && c.mode == alfred_model::snapshot::DeploymentMode::OMENative
                && c.workload == candidate.workload
                && c.component == candidate.component
                && c.instance == candidate.instance
                && c.from_node == candidate.from_node
                && c.policy == candidate.policy
                && c.reason == candidate.reason
        })
        .cloned()
        .ok_or(DispatchReason::PolicyNoLongerEligible)?;
    // 3. The arbiter admits it alone on the fresh snapshot.
    let journal_for_arbiter = match existing {
        Some(e) => {
            let mut j = ctx.journal.clone();
            j.entries.retain(|x| x.uuid != e.uuid);
            j
        }
        None => ctx.journal.clone(),
    };
    let one = [fresh_c.clone()];
    let verdict = ctx
        .stages
        .arbitrate_one(
            &ArbiterInput {
                candidates: &one,
                snapshot: fresh_snap,
                config: ctx.config,
                journal: &journal_for_arbiter,
                breaker: ctx.breaker,
                now: ctx.now,
            },
            &evacuating,
        )
        .ok_or(DispatchReason::PolicyNoLongerEligible)?;
    if !verdict.admitted {
        return Err(verdict
            .reject_reason
            .map(DispatchReason::same_as_reject)
            .unwrap_or(DispatchReason::SafetyStateChanged));
    }
    // 4. Lossless capture.
    if fresh_snap
        .problems
        .iter()
        .any(|p| p.kind == CAPTURE_PROBLEM_KIND)
    {
        return Err(DispatchReason::SnapshotUnavailable);
    }
    // 5. Budget.
    check_budget(
        &fresh_c,
        fresh_snap,
        ctx.journal,
        ctx.config,
        existing.map(|e| e.uuid.as_str()),
        ctx.now,
    )?;
    // 6. Hints.
    let hints = match existing {
        None => fresh_c.hint_target_nodes.clone(),
        Some(e) => {
            let p = RequestPayload::decode(&e.payload)
                .map_err(|_| DispatchReason::JournalPayloadInvalid)?;
            if p.component != e.component
                || p.instance != e.instance
                || p.from_node != e.from_node
                || p.requested_at != e.created_at
            {
                return Err(DispatchReason::JournalPayloadInvalid);
            }
            p.hint_target_nodes
        }
    };
    // 7. The execution request (profile selection; fail closed, decision 15.5).
    let (_, selection) = select_profile(fresh_snap, &fresh_c, ctx.config);
    let selection = selection.ok_or(DispatchReason::SourceUnsupported)?;
    // 8. Identities between the observations.
    let fresh_ids = identities(fresh_snap, &fresh_c).ok_or(DispatchReason::SourceChanged)?;
    if let Some(obs) = ctx.observed
        && identities(obs, candidate).as_ref() != Some(&fresh_ids)
    {
        return Err(DispatchReason::SourceChanged);
    }
    // 9. Fingerprint (and the entry's identities on a retry).
    let fp = fingerprint(
        fresh_snap,
        &fresh_c.workload,
        fresh_c.component,
        fresh_c.instance,
    )
    .ok_or(DispatchReason::SourceChanged)?;
    if let Some(e) = existing
        && (e.source_fingerprint != fp
            || e.workload_uid != fresh_ids.0
            || e.ir_uid != fresh_ids.1
            || e.ir_name != fresh_ids.2)
    {
        return Err(DispatchReason::SourceChanged);
    }
    // 10. Simulate; must be Feasible.
    let req = MoveSimulation {
        request_id: existing
            .map(|e| e.uuid.clone())
            .unwrap_or_else(|| "preflight".to_owned()),
        purpose: SimulationPurpose::Execution,
        snapshot: fresh_snap,
        workload: fresh_c.workload.clone(),
        component: fresh_c.component,
        instance: u32::try_from(fresh_c.instance).unwrap_or(0),
        from_node: fresh_c.from_node.clone(),
        excluded_nodes: vec![fresh_c.from_node.clone()],
        hint_nodes: hints.clone(),
        profile: selection.profile,
        require_gang: selection.require_gang,
    };
    let out = sim.simulate(&req);
    if out.status != SchedulingStatus::Feasible || out.placements.is_empty() {
        return Err(DispatchReason::SimulationNotFeasible);
    }
    // 11. Staleness.
    if !fresh(fresh_snap.observed_at, ctx.now)
        || out.snapshot_time.is_some_and(|t| !fresh(t, ctx.now))
    {
        return Err(DispatchReason::SimulationStale);
    }
    // 12. A second look would re-read the same immutable inputs here: nothing to compare.
    // 13. Predicted targets: allowed, available, ready, not cooling.
    let allowed: &Vec<String> = if fresh_c.placement_target_nodes.is_empty() {
        &fresh_c.hint_target_nodes
    } else {
        &fresh_c.placement_target_nodes
    };
    let targets: BTreeSet<String> = out.placements.iter().map(|p| p.node_name.clone()).collect();
    for t in &targets {
        let ok = allowed.contains(t)
            && fresh_snap
                .node(t)
                .is_some_and(|n| n.ready && !n.unavailable());
        if !ok {
            return Err(DispatchReason::PredictedTargetUnsafe);
        }
    }
    let node_window = Duration::from_secs(u64::from(ctx.config.per_node_cooldown_minutes) * 60);
    for t in &targets {
        if node_cooling(
            ctx.journal,
            t,
            ctx.now,
            node_window,
            existing.map(|e| e.uuid.as_str()),
        ) {
            return Err(DispatchReason::TargetCooldown);
        }
    }
    let (ns, name) = fresh_c.workload.split_once('/').unwrap_or(("", ""));
    let resource_version = fresh_snap
        .workload(ns, name)
        .map(|w| w.resource_version.clone())
        .unwrap_or_default();
    let mut cand = fresh_c;
    cand.hint_target_nodes = hints;
    Ok(Cleared {
        candidate: cand,
        workload_uid: fresh_ids.0,
        resource_version,
        ir_uid: fresh_ids.1,
        ir_name: fresh_ids.2,
        fingerprint: fp,
        targets: targets.into_iter().collect(),
    })
}
