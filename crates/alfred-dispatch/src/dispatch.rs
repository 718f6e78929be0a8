//! The per-pass dispatch algorithm (docs/design-pass.md#dispatch-pass) and the merge of journal
//! entries into the pass's rows (docs/design-pass.md#journal-rows).

use alfred_model::ClusterSnapshot;
use alfred_model::Timestamp;
use alfred_model::config::{Config, Mode, RuntimeOptions};
use alfred_model::effect::Effect;
use alfred_model::reason::{DispatchReason, RowReason};
use alfred_model::record::{Candidate, DispatchStatus, Policy, Verdict};
use alfred_model::snapshot::DeploymentMode;

use crate::guard::{GuardObservation, check_guard, guard_username};
use crate::journal::{Entry, Journal, Phase, WorkloadRef, retention};
use crate::preflight::{Looks, Proposal, Recheck, recheck};
use crate::request::{RequestPayload, annotation_key};
use crate::schedule::fresh;
use crate::sim::Simulator;
use crate::stages::Stages;

/// A row in the making: a candidate and, when it reached the arbiter or the journal, its
/// verdict.
pub type Decision = (Candidate, Option<Verdict>);

/// The circuit breaker is `alfred-arbiter`'s (docs/design.md#circuit-breaker): not durable, kept in
/// the [`crate::Session`]; a new leader starts with [`Breaker::default`].
pub use alfred_arbiter::Breaker;

/// The journal as the adapter found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JournalSlot {
    /// No journal (no dispatcher, or the key/ConfigMap is missing).
    Missing,
    /// Read and valid.
    Readable(Journal),
    /// Present but unreadable: kept byte for byte, never rewritten.
    Unreadable {
        /// The exact text.
        text: String,
        /// Why, naming the field.
        error: String,
    },
}

impl JournalSlot {
    /// From the ConfigMap's `state.json` value.
    pub fn from_state_json(text: Option<&str>) -> JournalSlot {
        match text {
            None => JournalSlot::Missing,
            Some(t) => match Journal::parse(t) {
                Ok(j) => JournalSlot::Readable(j),
                Err(e) => JournalSlot::Unreadable {
                    text: t.to_owned(),
                    error: e.to_string(),
                },
            },
        }
    }
}

/// What the dispatch step reads.
pub struct DispatchCtx<'a> {
    /// Stages (for the re-check).
    pub stages: &'a dyn Stages,
    /// The pass's snapshot.
    pub snapshot: &'a ClusterSnapshot,
    /// The policies' proposal on [`DispatchCtx::snapshot`], when the pass's candidates are
    /// exactly it (see [`Proposal`]).
    pub proposed: Option<&'a Proposal<'a>>,
    /// The re-check's fresh looks.
    pub looks: &'a Looks<'a>,
    /// Configuration.
    pub config: &'a Config,
    /// Flags.
    pub runtime: &'a RuntimeOptions,
    /// alfred's namespace (guard username).
    pub namespace: &'a str,
    /// The guard objects as read.
    pub guard: &'a GuardObservation,
    /// A newer configuration arrived while the pass ran.
    pub config_changed: bool,
    /// The dispatch deadline (30 s after the pass began), if the adapter tracks one; it is
    /// compared with the pass's time as its ports report it ([`Looks::time`]).
    pub deadline: Option<Timestamp>,
    /// UUIDs whose request write the adapter reported failed in the previous pass
    /// ([`crate::Session::failed_requests`]).
    pub failed_requests: &'a [String],
    /// Now.
    pub now: Timestamp,
}

/// The dispatch step's result.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchOutcome {
    /// Rows in the making.
    pub decisions: Vec<Decision>,
    /// The journal to keep (unchanged unless written).
    pub journal: JournalSlot,
    /// Journal writes and the request, in order.
    pub effects: Vec<Effect>,
    /// UUIDs consumed.
    pub uuids_used: usize,
    /// Internal error of an unreadable journal, for the adapter's log.
    pub journal_error: Option<String>,
}

/// `executionEnabled` (docs/design-pass.md#when-execution-is-enabled), first failure wins.
pub fn execution_enabled(ctx: &DispatchCtx<'_>) -> Result<(), DispatchReason> {
    if !ctx.runtime.executor_available()
        || ctx.config.mode != Mode::Execute
        || !ctx.config.omenative_migration_enabled
    {
        return Err(DispatchReason::ExecutionDisabled);
    }
    if ctx.config_changed {
        return Err(DispatchReason::ConfigurationChanged);
    }
    if ctx.deadline.is_some_and(|d| ctx.looks.time(ctx.now) > d) {
        return Err(DispatchReason::DispatchDeadline);
    }
    let user = guard_username(ctx.namespace, &ctx.runtime.migration_service_account);
    check_guard(ctx.guard, &user).map_err(|_| DispatchReason::GuardUnavailable)
}

fn withhold_all(decisions: &mut [Decision], r: DispatchReason) {
    for (_, v) in decisions.iter_mut() {
        if let Some(v) = v
            && v.admitted
            && matches!(v.dispatch_status, None | Some(DispatchStatus::Withheld))
        {
            v.dispatch_status = Some(DispatchStatus::Withheld);
            v.dispatch_reason = Some(r);
        }
    }
}

/// The candidate a journal entry stands for (docs/design-pass.md#journal-rows).
pub fn entry_candidate(e: &Entry) -> Candidate {
    let payload = RequestPayload::decode(&e.payload).ok();
    let (policy, reason, hints) = match &payload {
        Some(p) => (
            match p.reason {
                RowReason::Fragmentation => Policy::Defragmentation,
                _ => Policy::NodeHealth,
            },
            p.reason,
            p.hint_target_nodes.clone(),
        ),
        None => (
            Policy::MigrationDispatch,
            RowReason::Fragmentation,
            Vec::new(),
        ),
    };
    Candidate {
        policy,
        workload: e.workload.key(),
        component: e.component,
        instance: e.instance,
        mode: DeploymentMode::OMENative,
        reason,
        from_node: e.from_node.clone(),
        hint_target_nodes: hints,
        placement_target_nodes: Vec::new(),
        executable: true,
        advisory_reason: None,
        surge_shaped: true,
        footprint_gpus: 0,
        benefit: 0.0,
        cost: 0.0,
        score: 0.0,
        emergency: false,
        pod_gpus: Vec::new(),
        scheduling: None,
        plan: None,
    }
}

/// Merges one entry into the rows (docs/design-pass.md#journal-rows).
pub fn merge_entry(decisions: &mut Vec<Decision>, e: &Entry) {
    let c = entry_candidate(e);
    let verdict = Verdict {
        admitted: true,
        dispatch_status: Some(e.phase.status()),
        dispatch_reason: e.reason,
        request_uuid: e.uuid.clone(),
        ..Verdict::default()
    };
    let same = |x: &Candidate| x.row_key() == c.row_key();
    if let Some(d) = decisions.iter_mut().find(|(x, v)| v.is_some() && same(x)) {
        d.1 = Some(verdict);
    } else if let Some(d) = decisions.iter_mut().find(|(x, _)| same(x)) {
        d.1 = Some(verdict);
    } else {
        decisions.push((c, Some(verdict)));
    }
}

fn write(j: &Journal, effects: &mut Vec<Effect>) -> Result<(), String> {
    let text = j.to_state_json().map_err(|e| e.to_string())?;
    effects.push(Effect::WriteJournal { state_json: text });
    Ok(())
}

/// Runs docs/design-pass.md#dispatch-pass. `decisions` holds every candidate with its arbiter
/// verdict (admitted ones start as `withheld/ExecutionDisabled`); `order` is the arbitration order
/// (indices into `decisions`).
#[allow(clippy::too_many_arguments)]
#[allow(clippy::too_many_lines)] // split pending
pub fn execute(
    ctx: &DispatchCtx<'_>,
    sim: &mut dyn Simulator,
    mut decisions: Vec<Decision>,
    order: &[usize],
    slot: &JournalSlot,
    breaker: &mut Breaker,
    uuids: &[String],
) -> DispatchOutcome {
    for (_, v) in decisions.iter_mut() {
        if let Some(v) = v
            && v.admitted
        {
            v.dispatch_status = Some(DispatchStatus::Withheld);
            v.dispatch_reason = Some(DispatchReason::ExecutionDisabled);
        }
    }
    let mut out = DispatchOutcome {
        decisions: Vec::new(),
        journal: slot.clone(),
        effects: Vec::new(),
        uuids_used: 0,
        journal_error: None,
    };
    let journal = match slot {
        JournalSlot::Readable(j) => j.clone(),
        JournalSlot::Missing => {
            out.journal_error = Some("state.json is missing".into());
            withhold_all(&mut decisions, DispatchReason::JournalUnavailable);
            out.decisions = decisions;
            return out;
        }
        JournalSlot::Unreadable { error, .. } => {
            out.journal_error = Some(error.clone());
            withhold_all(&mut decisions, DispatchReason::JournalUnavailable);
            out.decisions = decisions;
            return out;
        }
    };
    let mut follow = crate::follow::reconcile(
        &journal,
        ctx.snapshot,
        ctx.now,
        ctx.runtime.migration_ack_timeout,
        ctx.runtime.migration_failure_backoff,
    );
    // docs/design-pass.md#dispatch-pass attempt() step 5, across the pass boundary: the previous
    // pass's request write failed and the follow-up found no trace of it (still `prepared`).
    let uncertain = mark_uncertain(&mut follow.journal, ctx.failed_requests);
    follow.changed |= uncertain.is_some();
    // docs/design-pass.md#journal: with the executor
    // available the journal is reconciled in both modes. Recommend-only follows and updates the
    // entries execute mode created (a `WriteJournal` effect) but never appends one and never writes
    // a request annotation.
    let mut journal = if follow.changed {
        if let Err(e) = write(&follow.journal, &mut out.effects) {
            out.journal_error = Some(e);
            withhold_all(&mut decisions, DispatchReason::JournalUnavailable);
            out.decisions = decisions;
            return out;
        }
        for ok in &follow.ended {
            breaker.record_outcome(*ok, ctx.now);
        }
        follow.journal.clone()
    } else {
        journal
    };
    for uuid in &follow.reported {
        if let Some(e) = follow.journal.entry(uuid) {
            merge_entry(&mut decisions, e);
        }
    }
    let unresolved: Vec<Entry> = follow.journal.unresolved().cloned().collect();
    out.journal = JournalSlot::Readable(journal.clone());
    if unresolved.len() > 1 {
        withhold_all(&mut decisions, DispatchReason::MultipleUnresolvedRequests);
        out.decisions = decisions;
        return out;
    }
    if let Some(e) = unresolved.first() {
        if e.phase != Phase::Prepared {
            withhold_all(&mut decisions, DispatchReason::UnresolvedRequest);
            out.decisions = decisions;
            return out;
        }
        // The failed write is recorded this pass; the retry belongs to the next one.
        if uncertain.as_deref() == Some(e.uuid.as_str()) {
            out.decisions = decisions;
            return out;
        }
        // The prepared row itself shows withheld/ExecutionDisabled until it is retried.
        if let Err(r) = execution_enabled(ctx) {
            withhold_all(&mut decisions, r);
            out.decisions = decisions;
            return out;
        }
        if RequestPayload::decode(&e.payload).is_err() {
            withhold_all(&mut decisions, DispatchReason::JournalPayloadInvalid);
            out.decisions = decisions;
            return out;
        }
        let rc = Recheck {
            stages: ctx.stages,
            looks: ctx.looks,
            observed: None,
            proposed: ctx.proposed,
            config: ctx.config,
            runtime: ctx.runtime,
            journal: &journal,
            breaker: &*breaker,
            now: ctx.now,
        };
        let cand = entry_candidate(e);
        match recheck(&rc, sim, &cand, Some(e)) {
            Err(r) => withhold_all(&mut decisions, r),
            Ok(cleared) => {
                let mut entry = e.clone();
                attempt(ctx, &mut journal, &mut entry, &cleared, &mut out.effects);
                merge_entry(&mut decisions, &entry);
                out.journal = JournalSlot::Readable(journal);
            }
        }
        out.decisions = decisions;
        return out;
    }
    if let Err(r) = execution_enabled(ctx) {
        withhold_all(&mut decisions, r);
        out.decisions = decisions;
        return out;
    }
    if !fresh(ctx.snapshot.observed_at, ctx.now) {
        withhold_all(&mut decisions, DispatchReason::ObservationStale);
        out.decisions = decisions;
        return out;
    }
    if journal.backoff_until.is_some_and(|b| b > ctx.now) {
        withhold_all(&mut decisions, DispatchReason::FailureBackoff);
        out.decisions = decisions;
        return out;
    }
    let rc = Recheck {
        stages: ctx.stages,
        looks: ctx.looks,
        observed: Some(ctx.snapshot),
        proposed: ctx.proposed,
        config: ctx.config,
        runtime: ctx.runtime,
        journal: &journal,
        breaker: &*breaker,
        now: ctx.now,
    };
    let mut submitted_at = None;
    for &i in order {
        let Some((c, Some(v))) = decisions.get(i) else {
            continue;
        };
        if !v.admitted
            || !c.executable
            || c.mode != DeploymentMode::OMENative
            || !v.request_uuid.is_empty()
            || v.dispatch_status != Some(DispatchStatus::Withheld)
        {
            continue;
        }
        let c = c.clone();
        let cleared = match recheck(&rc, sim, &c, None) {
            Ok(x) => x,
            Err(r) => {
                set_reason(&mut decisions, i, DispatchStatus::Withheld, r, "");
                continue;
            }
        };
        let Some(uuid) = uuids.get(out.uuids_used).cloned() else {
            set_reason(
                &mut decisions,
                i,
                DispatchStatus::Withheld,
                DispatchReason::InvalidRequest,
                "",
            );
            continue;
        };
        let Ok(mut entry) = new_entry(&uuid, &cleared, ctx.now) else {
            set_reason(
                &mut decisions,
                i,
                DispatchStatus::Withheld,
                DispatchReason::InvalidRequest,
                "",
            );
            continue;
        };
        out.uuids_used += 1;
        let mut next = journal.clone();
        let overrides = ctx
            .looks
            .taken()
            .unwrap_or(ctx.snapshot)
            .workloads
            .iter()
            .filter_map(|w| w.settings.cooldown_minutes);
        next.prune(
            ctx.now,
            retention(
                [
                    ctx.config.per_node_cooldown_minutes,
                    ctx.config.per_workload_cooldown_minutes,
                    ctx.config
                        .policies
                        .node_health
                        .health_cooldown_floor_minutes,
                ]
                .into_iter()
                .chain(overrides),
            ),
        );
        next.entries.push(entry.clone());
        if next.validate().is_err() || next.to_state_json().is_err() {
            set_reason(
                &mut decisions,
                i,
                DispatchStatus::Withheld,
                DispatchReason::JournalUnavailable,
                "",
            );
            out.decisions = decisions;
            return out;
        }
        if let Err(e) = write(&next, &mut out.effects) {
            out.journal_error = Some(e);
            set_reason(
                &mut decisions,
                i,
                DispatchStatus::Withheld,
                DispatchReason::JournalUnavailable,
                "",
            );
            out.decisions = decisions;
            return out;
        }
        journal = next;
        attempt(ctx, &mut journal, &mut entry, &cleared, &mut out.effects);
        let status = entry.phase.status();
        let reason = entry.reason.unwrap_or(DispatchReason::SubmissionPrepared);
        set_reason(&mut decisions, i, status, reason, &entry.uuid);
        out.journal = JournalSlot::Readable(journal.clone());
        submitted_at = Some(i);
        break;
    }
    if let Some(done) = submitted_at {
        for (k, (_, v)) in decisions.iter_mut().enumerate() {
            if k == done {
                continue;
            }
            if let Some(v) = v
                && v.admitted
                && v.request_uuid.is_empty()
                && v.dispatch_status == Some(DispatchStatus::Withheld)
                && v.dispatch_reason == Some(DispatchReason::ExecutionDisabled)
            {
                v.dispatch_reason = Some(DispatchReason::SerialDispatchLimit);
            }
        }
    }
    out.decisions = decisions;
    out
}

/// Marks the `prepared` entry whose request write failed in the previous pass as
/// `SubmissionUncertain` (once); returns its UUID when it changed.
fn mark_uncertain(journal: &mut Journal, failed: &[String]) -> Option<String> {
    let e = journal.entries.iter_mut().find(|e| {
        e.phase == Phase::Prepared
            && e.reason != Some(DispatchReason::SubmissionUncertain)
            && failed.contains(&e.uuid)
    })?;
    e.reason = Some(DispatchReason::SubmissionUncertain);
    Some(e.uuid.clone())
}

fn set_reason(
    decisions: &mut [Decision],
    i: usize,
    status: DispatchStatus,
    r: DispatchReason,
    uuid: &str,
) {
    if let Some((_, Some(v))) = decisions.get_mut(i) {
        v.dispatch_status = Some(status);
        v.dispatch_reason = Some(r);
        if !uuid.is_empty() {
            v.request_uuid = uuid.to_owned();
        }
    }
}

fn new_entry(
    uuid: &str,
    cleared: &crate::preflight::Cleared,
    now: Timestamp,
) -> Result<Entry, DispatchReason> {
    if !crate::request::is_canonical_uuid(uuid) {
        return Err(DispatchReason::InvalidRequest);
    }
    let c = &cleared.candidate;
    let payload = RequestPayload {
        component: c.component,
        instance: c.instance,
        from_node: c.from_node.clone(),
        hint_target_nodes: c.hint_target_nodes.iter().take(3).cloned().collect(),
        reason: c.reason,
        requested_at: now,
    }
    .encode()
    .map_err(|_| DispatchReason::InvalidRequest)?;
    let (ns, name) = c
        .workload
        .split_once('/')
        .ok_or(DispatchReason::InvalidRequest)?;
    Ok(Entry {
        uuid: uuid.to_owned(),
        workload: WorkloadRef {
            namespace: ns.to_owned(),
            name: name.to_owned(),
        },
        workload_uid: cleared.workload_uid.clone(),
        ir_name: cleared.ir_name.clone(),
        ir_uid: cleared.ir_uid.clone(),
        component: c.component,
        instance: c.instance,
        from_node: c.from_node.clone(),
        targets: cleared.targets.clone(),
        payload,
        source_fingerprint: cleared.fingerprint.clone(),
        created_at: now,
        last_attempt: None,
        acknowledged_at: None,
        completed_at: None,
        phase: Phase::Prepared,
        reason: None,
    })
}

/// `attempt(e)` of docs/design-pass.md#dispatch-pass as effects: save the entry with `lastAttempt`
/// and `SubmissionPrepared`, add the annotation (JSON Patch testing uid and
/// resourceVersion), save the entry as `submitted/RequestSubmitted`. The adapter stops
/// at the first failed write; the next pass learns the truth from the cluster.
fn attempt(
    ctx: &DispatchCtx<'_>,
    journal: &mut Journal,
    e: &mut Entry,
    cleared: &crate::preflight::Cleared,
    effects: &mut Vec<Effect>,
) {
    if let Err(r) = execution_enabled(ctx) {
        e.reason = Some(r);
        return;
    }
    if cleared.workload_uid.is_empty() || cleared.resource_version.is_empty() {
        e.reason = Some(DispatchReason::OwnerChanged);
        return;
    }
    e.last_attempt = Some(ctx.now);
    e.reason = Some(DispatchReason::SubmissionPrepared);
    if !store(journal, e, effects) {
        e.reason = Some(DispatchReason::JournalUnavailable);
        return;
    }
    effects.push(Effect::RequestMigration {
        namespace: e.workload.namespace.clone(),
        name: e.workload.name.clone(),
        uid: cleared.workload_uid.clone(),
        resource_version: cleared.resource_version.clone(),
        annotation: annotation_key(&e.uuid),
        payload: e.payload.clone(),
        uuid: e.uuid.clone(),
    });
    e.phase = Phase::Submitted;
    e.reason = Some(DispatchReason::RequestSubmitted);
    if !store(journal, e, effects) {
        e.reason = Some(DispatchReason::SubmissionJournalUncertain);
    }
}

fn store(journal: &mut Journal, e: &Entry, effects: &mut Vec<Effect>) -> bool {
    let mut next = journal.clone();
    match next.entries.iter_mut().find(|x| x.uuid == e.uuid) {
        Some(x) => *x = e.clone(),
        None => next.entries.push(e.clone()),
    }
    if write(&next, effects).is_err() {
        return false;
    }
    *journal = next;
    true
}
