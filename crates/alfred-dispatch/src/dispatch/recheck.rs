//! The pre-submit re-check of one move (docs/design-pass.md#pre-submit-re-check) and the source
//! fingerprint (docs/design-pass.md#source-fingerprint).
//!
//! The adapter supplies a fresh snapshot built from uncached reads (it may be the pass's
//! own snapshot when nothing newer exists). A capture failure (e.g. the PodGroup CRD is
//! missing) is signalled by an [`alfred_model::snapshot::ObjectProblem`] of kind
//! [`CAPTURE_PROBLEM_KIND`] in the fresh snapshot.
//!
//! The simulation takes time, and the cluster moves on meanwhile; so after a feasible
//! simulation the re-check of a live pass looks a *second* time (step 12) and refuses the
//! move if what the simulation answered no longer describes the cluster. In this model one
//! snapshot is both the observation and the capture of scheduling inputs;
//! [`same_scheduling_inputs`] says which part of it is the capture.
//!
//! The re-check is cut where it needs the driver: [`prepare`] (steps 2–9, on the first
//! look), [`judge_simulation`] (steps 10–11, on the simulator's answer) and [`conclude`]
//! (steps 12–13, on the second look when there is one). The looks and the simulation are
//! asked for by the resumable pass (`crate::pass::steps`); nothing here waits.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use alfred_model::config::{Config, RuntimeOptions};
use alfred_model::reason::{DispatchReason, SchedulingStatus};
use alfred_model::record::Candidate;
use alfred_model::snapshot::ComponentKind;
use alfred_model::{ClusterSnapshot, Timestamp};
use serde_json::json;
use sha2::{Digest, Sha256};

use alfred_arbiter::Breaker;

use crate::dispatch::budget::{check_budget, node_cooling_outside, own_plan_requests};
use crate::dispatch::journal::{Entry, Journal};
use crate::dispatch::request::RequestPayload;
use crate::pass::stages::{ArbiterInput, Stages};
use crate::simulation::schedule::{fresh, select_profile};
use crate::simulation::sim::{MoveSimulation, SimulationOutcome, SimulationPurpose};

/// Kind of the snapshot problem that marks a failed lossless capture.
pub const CAPTURE_PROBLEM_KIND: &str = "SchedulingCapture";

/// The tag that opens every fingerprint document: an entry written with another format
/// (an earlier alfred) never matches, so its retry is `SourceChanged`
/// (docs/design-pass.md#source-fingerprint: a fingerprint alfred cannot verify).
const FINGERPRINT_FORMAT: &str = "alfred-fingerprint-v2";

/// alfred's source fingerprint (docs/design-pass.md#source-fingerprint): hex SHA-256 over a
/// canonical JSON of the InferenceService UID and generation, the InferenceReplica UID, name,
/// generation and revisions, the Instance's status row, and its pods as the snapshot holds them
/// less what comes from their status (phase, readiness, start time): identity, node, owner,
/// deletion, every label, the digest of the annotations and the scheduling part of the spec. `None`
/// when the Instance is not in the snapshot.
pub(crate) fn fingerprint(
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
            json!([
                p.namespace,
                p.name,
                p.uid,
                p.node,
                p.gpus,
                p.terminating,
                p.created_at,
                p.labels,
                p.controller,
                p.annotations_digest,
                *p.scheduling
            ])
        })
        .collect();
    let status = inst
        .status
        .as_ref()
        .map(|s| serde_json::to_value(s).unwrap_or_default());
    let doc = json!([
        FINGERPRINT_FORMAT,
        w.uid,
        w.generation,
        ir.uid,
        ir.name,
        ir.generation,
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
pub(crate) struct Cleared {
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

/// Where the execute-mode re-check's fresh observations come from
/// (docs/design-pass.md#pre-submit-re-check step 1, the first look, and step 12, the second look
/// after the simulation).
#[derive(Clone, Copy)]
pub enum FreshLooks<'a> {
    /// The cluster cannot change while the pass runs (a recorded cluster in `replay`, the
    /// twin's stopped clock): both looks see this snapshot (`None`: it could not be built,
    /// `ObservationUnavailable`), so step 12 passes by construction.
    Frozen(Option<&'a ClusterSnapshot>),
    /// The adapter observes on demand: the first look when the first move reaches the
    /// re-check (then shared by the pass's later re-checks), the second after each feasible
    /// simulation. A pass with nothing to dispatch reads nothing.
    Observe(&'a dyn FreshObserver),
}

impl std::fmt::Debug for FreshLooks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FreshLooks::Frozen(s) => {
                write!(f, "Frozen({})", if s.is_some() { ".." } else { "None" })
            }
            FreshLooks::Observe(_) => f.write_str("Observe(..)"),
        }
    }
}

/// The port through which the pure pass observes the cluster again, mid-pass. Like
/// [`crate::Simulator`], it is the one place where the adapter's IO enters the pass: the
/// adapter builds a snapshot from uncached reads with the pass's configuration.
pub trait FreshObserver {
    /// A snapshot of the cluster as it is now; `now` is the pass's start. Its
    /// `observed_at` says when the look was made, by the adapter's clock (an observer
    /// without one dates it `now`): the re-check's staleness test and the pass's deadline
    /// read it. `None` when it cannot be built (`ObservationUnavailable`).
    fn observe_again(&self, now: Timestamp) -> Option<Arc<ClusterSnapshot>>;
}

/// Whether two snapshots hold the same scheduling inputs: the objects the lossless
/// capture of step 4 takes (nodes, non-terminal pods — running and pending —, PodGroups,
/// InferenceServices with their InferenceReplicas), compared by content. What is left
/// out is observation-only: the time of the observation, the executor's state, the
/// models' storage constraints (from PVCs and PVs, which the scheduler simulation does
/// not read) and the problems found while observing.
pub(crate) fn same_scheduling_inputs(a: &ClusterSnapshot, b: &ClusterSnapshot) -> bool {
    a.nodes == b.nodes
        && a.pods == b.pods
        && a.pending_pods == b.pending_pods
        && a.pod_groups == b.pod_groups
        && a.workloads == b.workloads
}

/// The part of the policies' proposal on the pass's own snapshot that step 2 reads: the
/// nodes the candidates evacuate and the executable OMENative candidates, in proposal
/// order. The policies are a pure function of the snapshot, the configuration and `now`,
/// so a look that is that very snapshot (the same object: [`FreshLooks::Frozen`] with the
/// pass's snapshot, as in `replay`, the twin and the benches) would propose exactly these
/// again; step 2 reads them instead of running the policies once more per re-checked move
/// (a pass with several admitted moves that fail the re-check ran them once per move).
/// Any other look, and every fresh look a live driver hands over, runs the policies.
#[derive(Debug, Clone)]
pub(crate) struct Proposal {
    evacuating: BTreeSet<String>,
    executable: Vec<Candidate>,
}

impl Proposal {
    /// The proposal `candidates` the policies made on the pass's own snapshot.
    pub(crate) fn new(candidates: &[Candidate]) -> Proposal {
        Proposal {
            evacuating: alfred_arbiter::evacuating_nodes(candidates),
            executable: candidates
                .iter()
                .filter(|c| {
                    c.executable && c.mode == alfred_model::snapshot::DeploymentMode::OMENative
                })
                .cloned()
                .collect(),
        }
    }
}

/// Everything a re-check reads.
pub(crate) struct Recheck<'a> {
    /// The stages (policies and arbiter run again).
    pub stages: &'a dyn Stages,
    /// The pass's own snapshot: a look that is this object reads [`Recheck::proposed`].
    pub own: &'a ClusterSnapshot,
    /// The snapshot the move was proposed on (for the identity comparison), when it came
    /// from the pass's candidates rather than the journal.
    pub observed: Option<&'a ClusterSnapshot>,
    /// What the policies proposed on the pass's own snapshot, when the pass's candidates
    /// are that bare proposal (see [`Proposal`]).
    pub proposed: Option<&'a Proposal>,
    /// Configuration.
    pub config: &'a Config,
    /// Flags.
    pub runtime: &'a RuntimeOptions,
    /// The journal as it stands.
    pub journal: &'a Journal,
    /// The session's circuit breaker.
    pub breaker: &'a Breaker,
    /// The pass's start.
    pub now: Timestamp,
    /// The pass's time by its ports: the latest time a look or a simulation answer
    /// reported, or `now` (see `crate::pass::steps::PassClock`).
    pub time: Timestamp,
}

fn identities(snap: &ClusterSnapshot, c: &Candidate) -> Option<(String, String, String)> {
    let (ns, name) = c.workload.split_once('/')?;
    let w = snap.workload(ns, name)?;
    let ir = w.component(c.component)?.replica.as_ref()?;
    Some((w.uid.clone(), ir.uid.clone(), ir.name.clone()))
}

fn capture_failed(snap: &ClusterSnapshot) -> bool {
    snap.problems.iter().any(|p| p.kind == CAPTURE_PROBLEM_KIND)
}

/// Step 2: the executable OMENative candidate the policies propose on `snap` for the same
/// move (workload, component, instance, source node, policy and reason), with the nodes
/// other candidates evacuate (the arbiter's input).
fn eligible_again(
    ctx: &Recheck<'_>,
    snap: &ClusterSnapshot,
    candidate: &Candidate,
) -> Result<(Candidate, BTreeSet<String>), DispatchReason> {
    let again;
    let (proposed, evacuating): (&[Candidate], _) = match ctx.proposed {
        Some(p) if std::ptr::eq(ctx.own, snap) => (&p.executable, p.evacuating.clone()),
        _ => {
            again = ctx
                .stages
                .propose(snap, ctx.config, ctx.runtime, &ctx.journal.plans, ctx.now)
                .candidates;
            (&again, alfred_arbiter::evacuating_nodes(&again))
        }
    };
    proposed
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
        .map(|c| (c.clone(), evacuating))
        .ok_or(DispatchReason::PolicyNoLongerEligible)
}

/// Steps 2 and 3: the move is still proposed on `snap` and the arbiter admits it alone
/// there (against the journal without the entry being retried). A refusal carries the
/// arbiter's reason.
fn admitted_again(
    ctx: &Recheck<'_>,
    snap: &ClusterSnapshot,
    candidate: &Candidate,
    existing: Option<&Entry>,
) -> Result<Candidate, DispatchReason> {
    let (fresh_c, evacuating) = eligible_again(ctx, snap, candidate)?;
    arbiter_admits(ctx, snap, fresh_c, &evacuating, existing)
}

/// Step 3: the arbiter alone on `candidate` against `snap`.
fn arbiter_admits(
    ctx: &Recheck<'_>,
    snap: &ClusterSnapshot,
    fresh_c: Candidate,
    evacuating: &BTreeSet<String>,
    existing: Option<&Entry>,
) -> Result<Candidate, DispatchReason> {
    let journal_for_arbiter = match existing {
        Some(e) => {
            let mut j = ctx.journal.clone();
            j.entries.retain(|x| x.uuid != e.uuid);
            j
        }
        None => ctx.journal.clone(),
    };
    let one = [fresh_c];
    let verdict = ctx
        .stages
        .arbitrate_one(
            &ArbiterInput {
                candidates: &one,
                snapshot: snap,
                config: ctx.config,
                journal: &journal_for_arbiter,
                breaker: ctx.breaker,
                now: ctx.now,
            },
            evacuating,
        )
        .ok_or(DispatchReason::PolicyNoLongerEligible)?;
    if !verdict.admitted {
        return Err(verdict
            .reject_reason
            .map(DispatchReason::same_as_reject)
            .unwrap_or(DispatchReason::SafetyStateChanged));
    }
    let [fresh_c] = one;
    Ok(fresh_c)
}

/// Step 12 on the `second` snapshot: the move is still proposed, captured, built the same
/// way (profile, identities, fingerprint), the scheduling inputs are unchanged, the budget
/// still holds and the arbiter still admits it. Returns the final candidate.
fn second_look(
    ctx: &Recheck<'_>,
    first: &ClusterSnapshot,
    second: &ClusterSnapshot,
    candidate: &Candidate,
    existing: Option<&Entry>,
    prepared: &Prepared,
) -> Result<Candidate, DispatchReason> {
    let (c, evacuating) = eligible_again(ctx, second, candidate)?;
    if capture_failed(second) {
        return Err(DispatchReason::SnapshotUnavailable);
    }
    let rebuilt = select_profile(second, &c, ctx.config)
        .1
        .ok_or(DispatchReason::SourceChanged)?;
    if rebuilt.profile != prepared.selection.profile
        || rebuilt.require_gang != prepared.selection.require_gang
        || identities(second, &c).as_ref() != Some(&prepared.ids)
        || fingerprint(second, &c.workload, c.component, c.instance).as_deref()
            != Some(prepared.fingerprint.as_str())
    {
        return Err(DispatchReason::SourceChanged);
    }
    if !same_scheduling_inputs(first, second) {
        return Err(DispatchReason::SchedulingStateChanged);
    }
    check_budget(
        &c,
        second,
        ctx.journal,
        ctx.config,
        existing.map(|e| e.uuid.as_str()),
        ctx.now.max(second.observed_at),
    )?;
    arbiter_admits(ctx, second, c, &evacuating, existing)
        .map_err(|_| DispatchReason::SafetyStateChanged)
}

/// A move that passed the re-check's steps 1 to 9 on the first look: what step 10
/// simulates and what steps 12 and 13 compare against.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// The candidate as the first look proposes it.
    candidate: Candidate,
    /// The hints to write (the entry's own on a retry).
    hints: Vec<String>,
    /// The profile the simulation runs with.
    selection: crate::simulation::schedule::Selection,
    /// The InferenceService UID, InferenceReplica UID and name on the first look.
    ids: (String, String, String),
    /// The source fingerprint on the first look.
    fingerprint: String,
    /// `preflight`, or the entry's UUID on a retry.
    request_id: String,
}

impl Prepared {
    /// Step 10's simulation request, against the first look `on`.
    pub(crate) fn simulation<'s>(&self, on: &'s ClusterSnapshot) -> MoveSimulation<'s> {
        let c = &self.candidate;
        MoveSimulation {
            request_id: self.request_id.clone(),
            purpose: SimulationPurpose::Execution,
            snapshot: on,
            workload: c.workload.clone(),
            component: c.component,
            instance: u32::try_from(c.instance).unwrap_or(0),
            from_node: c.from_node.clone(),
            excluded_nodes: vec![c.from_node.clone()],
            hint_nodes: self.hints.clone(),
            profile: self.selection.profile.clone(),
            require_gang: self.selection.require_gang,
        }
    }
}

/// Steps 2 to 9 of the re-check of `candidate` (`existing`: the prepared entry being
/// retried) on the first look `fresh_snap` (step 1, taken by the caller): the move to
/// simulate, or the reason it stops here.
pub(crate) fn prepare(
    ctx: &Recheck<'_>,
    fresh_snap: &ClusterSnapshot,
    candidate: &Candidate,
    existing: Option<&Entry>,
) -> Result<Prepared, DispatchReason> {
    // 2. The policies still propose it. 3. The arbiter admits it alone on the fresh snapshot.
    let fresh_c = admitted_again(ctx, fresh_snap, candidate, existing)?;
    // 4. Lossless capture.
    if capture_failed(fresh_snap) {
        return Err(DispatchReason::SnapshotUnavailable);
    }
    // 5. Budget, at the time of the look (a row it shows cannot be in its future).
    check_budget(
        &fresh_c,
        fresh_snap,
        ctx.journal,
        ctx.config,
        existing.map(|e| e.uuid.as_str()),
        ctx.now.max(fresh_snap.observed_at),
    )?;
    // 6. Hints.
    let hints = match existing {
        None => fresh_c.hint_target_nodes.clone(),
        Some(e) => retry_hints(e)?,
    };
    // 7. The execution request (profile selection; fail closed,
    //    docs/design-pass.md#pre-submit-re-check).
    let (_, selection) = select_profile(fresh_snap, &fresh_c, ctx.config);
    let selection = selection.ok_or(DispatchReason::SourceUnsupported)?;
    // 8. Identities between the observations.
    let ids = identities(fresh_snap, &fresh_c).ok_or(DispatchReason::SourceChanged)?;
    if let Some(obs) = ctx.observed
        && identities(obs, candidate).as_ref() != Some(&ids)
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
            || e.workload_uid != ids.0
            || e.ir_uid != ids.1
            || e.ir_name != ids.2)
    {
        return Err(DispatchReason::SourceChanged);
    }
    Ok(Prepared {
        candidate: fresh_c,
        hints,
        selection,
        ids,
        fingerprint: fp,
        request_id: existing
            .map(|e| e.uuid.clone())
            .unwrap_or_else(|| "preflight".to_owned()),
    })
}

/// Step 6 on a retry: the hints the entry's payload carries, which must describe the entry.
fn retry_hints(e: &Entry) -> Result<Vec<String>, DispatchReason> {
    let p =
        RequestPayload::decode(&e.payload).map_err(|_| DispatchReason::JournalPayloadInvalid)?;
    if p.component != e.component
        || p.instance != e.instance
        || p.from_node != e.from_node
        || p.requested_at != e.created_at
    {
        return Err(DispatchReason::JournalPayloadInvalid);
    }
    Ok(p.hint_target_nodes)
}

/// Steps 10 and 11 on the simulator's answer: it must be Feasible, and neither the first
/// look nor the capture may be stale at the time the answer came (`ctx.time`).
pub(crate) fn judge_simulation(
    ctx: &Recheck<'_>,
    fresh_snap: &ClusterSnapshot,
    out: &SimulationOutcome,
) -> Result<(), DispatchReason> {
    if out.status != SchedulingStatus::Feasible || out.placements.is_empty() {
        return Err(DispatchReason::SimulationNotFeasible);
    }
    if !fresh(fresh_snap.observed_at, ctx.time)
        || out.snapshot_time.is_some_and(|t| !fresh(t, ctx.time))
    {
        return Err(DispatchReason::SimulationStale);
    }
    Ok(())
}

/// Steps 12 and 13 after a feasible, timely simulation. `second`: the second look, when
/// the cluster can change during the pass (`None` for a frozen cluster, where the first
/// look stands for it: same inputs, same verdicts, nothing to repeat).
pub(crate) fn conclude(
    ctx: &Recheck<'_>,
    first: &ClusterSnapshot,
    second: Option<&ClusterSnapshot>,
    candidate: &Candidate,
    existing: Option<&Entry>,
    prepared: Prepared,
    out: &SimulationOutcome,
) -> Result<Cleared, DispatchReason> {
    // 12. The second look: the simulation answered for the cluster of the first look.
    let (look, fresh_c) = match second {
        None => (first, prepared.candidate.clone()),
        Some(second) => {
            let c = second_look(ctx, first, second, candidate, existing, &prepared)?;
            (second, c)
        }
    };
    // 13. Predicted targets: allowed, available, ready, not cooling.
    let targets = predicted_targets(ctx, look, &fresh_c, out, existing)?;
    let (ns, name) = fresh_c.workload.split_once('/').unwrap_or(("", ""));
    let resource_version = look
        .workload(ns, name)
        .map(|w| w.resource_version.clone())
        .unwrap_or_default();
    let mut cand = fresh_c;
    cand.hint_target_nodes = prepared.hints;
    let (workload_uid, ir_uid, ir_name) = prepared.ids;
    Ok(Cleared {
        candidate: cand,
        workload_uid,
        resource_version,
        ir_uid,
        ir_name,
        fingerprint: prepared.fingerprint,
        targets: targets.into_iter().collect(),
    })
}

/// Step 13: every simulated target is one the move may use, available and ready on `look`,
/// and not cooling.
fn predicted_targets(
    ctx: &Recheck<'_>,
    look: &ClusterSnapshot,
    fresh_c: &Candidate,
    out: &SimulationOutcome,
    existing: Option<&Entry>,
) -> Result<BTreeSet<String>, DispatchReason> {
    let allowed: &Vec<String> = if fresh_c.placement_target_nodes.is_empty() {
        &fresh_c.hint_target_nodes
    } else {
        &fresh_c.placement_target_nodes
    };
    let targets: BTreeSet<String> = out.placements.iter().map(|p| p.node_name.clone()).collect();
    for t in &targets {
        let ok = allowed.contains(t) && look.node(t).is_some_and(|n| n.ready && !n.unavailable());
        if !ok {
            return Err(DispatchReason::PredictedTargetUnsafe);
        }
    }
    let node_window = Duration::from_secs(u64::from(ctx.config.per_node_cooldown_minutes) * 60);
    let own = own_plan_requests(ctx.journal, fresh_c, ctx.config);
    for t in &targets {
        if node_cooling_outside(
            ctx.journal,
            t,
            ctx.now,
            node_window,
            existing.map(|e| e.uuid.as_str()),
            &own,
        ) {
            return Err(DispatchReason::TargetCooldown);
        }
    }
    Ok(targets)
}
