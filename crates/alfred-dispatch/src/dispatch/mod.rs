//! The per-pass dispatch algorithm (docs/design-pass.md#dispatch-pass) and the merge of journal
//! entries into the pass's rows (docs/design-pass.md#journal-rows).

//!
//! Its parts, each a module here: the migration request and its payload (`request`), the
//! journal (`journal`), the follow-up of journal entries (`follow`), the ledger the arbiter
//! reads (`ledger`), the hourly budget (`budget`), the migration guard (`guard`), the
//! pre-submit re-check (`recheck`) and drain plans (`drain`).

pub(crate) mod budget;
pub(crate) mod drain;
pub(crate) mod follow;
pub mod guard;
pub mod journal;
pub(crate) mod ledger;
pub(crate) mod recheck;
pub mod request;

use std::sync::Arc;

use alfred_model::ClusterSnapshot;
use alfred_model::Timestamp;
use alfred_model::config::{Config, Mode, RuntimeOptions};
use alfred_model::effect::Effect;
use alfred_model::reason::{DispatchReason, RowReason};
use alfred_model::record::{Candidate, DispatchStatus, Policy, Verdict};
use alfred_model::snapshot::DeploymentMode;

use alfred_policy::CountedAdvice;

use crate::dispatch::guard::{GuardObservation, check_guard, guard_username};
use crate::dispatch::journal::{Entry, Journal, Phase, WorkloadRef, retention};
use crate::dispatch::recheck::{
    Cleared, Prepared, Proposal, Recheck, conclude, judge_simulation, prepare,
};
use crate::dispatch::request::{RequestPayload, annotation_key};
use crate::pass::stages::Stages;
use crate::simulation::schedule::fresh;
use crate::simulation::sim::SimulationOutcome;

/// A row in the making: a candidate and, when it reached the arbiter or the journal, its
/// verdict.
pub(crate) type Decision = (Candidate, Option<Verdict>);

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
pub(crate) struct DispatchCtx<'a> {
    /// Stages (for the re-check).
    pub stages: &'a dyn Stages,
    /// The pass's snapshot.
    pub snapshot: &'a ClusterSnapshot,
    /// The policies' proposal on [`DispatchCtx::snapshot`], when the pass's candidates are
    /// exactly it (see [`Proposal`]).
    pub proposed: Option<&'a Proposal>,
    /// The re-check's first look: `None` until the driver answered it, then `None` inside
    /// when it could not be made (`ObservationUnavailable`).
    pub first_look: Option<Option<&'a ClusterSnapshot>>,
    /// Whether the cluster can change during the pass: a feasible simulation is then
    /// followed by a second look (docs/design-pass.md#pre-submit-re-check step 12).
    pub live: bool,
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
    /// compared with [`DispatchCtx::time`].
    pub deadline: Option<Timestamp>,
    /// UUIDs whose request write the adapter reported failed in the previous pass
    /// ([`crate::Session::failed_requests`]).
    pub failed_requests: &'a [String],
    /// UUIDs for a new request; at most one is used.
    pub uuids: &'a [String],
    /// The pass's start.
    pub now: Timestamp,
    /// The pass's time by its ports: the latest time a look or a simulation answer reported,
    /// or `now`.
    pub time: Timestamp,
}

impl<'a> DispatchCtx<'a> {
    /// What the re-check of a move reads against `journal` and `breaker`; `observed`: the
    /// snapshot the move was proposed on (none for a journal entry).
    fn recheck(
        &self,
        journal: &'a Journal,
        breaker: &'a Breaker,
        observed: Option<&'a ClusterSnapshot>,
    ) -> Recheck<'a> {
        Recheck {
            stages: self.stages,
            own: self.snapshot,
            observed,
            proposed: self.proposed,
            config: self.config,
            runtime: self.runtime,
            journal,
            breaker,
            now: self.now,
            time: self.time,
        }
    }
}

/// The dispatch step's result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DispatchOutcome {
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
pub(crate) fn execution_enabled(ctx: &DispatchCtx<'_>) -> Result<(), DispatchReason> {
    if !ctx.runtime.executor_available()
        || ctx.config.mode != Mode::Execute
        || !ctx.config.omenative_migration_enabled
    {
        return Err(DispatchReason::ExecutionDisabled);
    }
    if ctx.config_changed {
        return Err(DispatchReason::ConfigurationChanged);
    }
    if ctx.deadline.is_some_and(|d| ctx.time > d) {
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
pub(crate) fn entry_candidate(e: &Entry) -> Candidate {
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
pub(crate) fn merge_entry(decisions: &mut Vec<Decision>, e: &Entry, counted: &CountedAdvice) {
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
    } else if !counted.covers(&c) {
        // A counted row would have carried the verdict: the pass reports no row for it.
        decisions.push((c, Some(verdict)));
    }
}

fn write(j: &Journal, effects: &mut Vec<Effect>) -> Result<(), String> {
    let text = j.to_state_json().map_err(|e| e.to_string())?;
    effects.push(Effect::WriteJournal { state_json: text });
    Ok(())
}

/// What the dispatcher waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// The re-check's first look (docs/design-pass.md#pre-submit-re-check step 1), shared by
    /// the pass's later re-checks.
    FirstLook,
    /// The simulation of [`Dispatch::prepared`] (step 10).
    Simulation,
    /// A second look after a feasible simulation (step 12).
    SecondLook,
    /// Nothing: [`Dispatch::finish`].
    Nothing,
}

/// Where one move's re-check stands between the dispatcher's steps.
#[derive(Debug)]
enum Check {
    /// Not started: it needs the first look.
    Start,
    /// Steps 1 to 9 passed; the simulation is asked.
    Simulating(Prepared),
    /// The simulator answered.
    Simulated(Prepared, SimulationOutcome),
    /// The answer was feasible and timely; the second look is asked.
    Looking(Prepared, SimulationOutcome),
    /// The second look came (`None`: it could not be made).
    Looked(Prepared, SimulationOutcome, Option<Arc<ClusterSnapshot>>),
}

/// What the dispatcher is doing.
#[derive(Debug)]
enum Work {
    /// Retrying the one `prepared` entry of the journal.
    Retry(Box<Entry>, Check),
    /// Trying the admitted moves in arbitration order, from `order[next]`; the move
    /// being re-checked, when one is.
    Submit {
        next: usize,
        current: Option<(usize, Check)>,
    },
    /// Done.
    Finished,
}

/// docs/design-pass.md#dispatch-pass as a resumable machine: [`Dispatch::start`] follows the
/// journal up and picks the work; [`Dispatch::advance`] runs it until the re-check needs
/// something from the driver (a look, a simulation) or the work ends; the answers come in
/// through [`Dispatch::simulated`] and [`Dispatch::looked_again`]; [`Dispatch::finish`]
/// gives the rows, the journal and the effects. Nothing here waits.
#[derive(Debug)]
pub(crate) struct Dispatch {
    decisions: Vec<Decision>,
    order: Vec<usize>,
    journal: Journal,
    out: DispatchOutcome,
    work: Work,
    submitted: Option<usize>,
    /// With `overlapSteps`, the started drain plan every unresolved request is a step of:
    /// only its later steps may go this pass (docs/design-policies.md#overlapping-steps).
    own_plan: Option<String>,
    /// The advice rows the policies counted (a journal entry reported on gets no row of
    /// its own when one of them was its Instance's).
    counted: CountedAdvice,
}

impl Dispatch {
    /// Steps up to the first re-check. `decisions` holds every candidate with its arbiter
    /// verdict (admitted ones start as `withheld/ExecutionDisabled`); `order` is the
    /// arbitration order (indices into `decisions`); `counted`, the advice rows the
    /// policies counted instead of proposing.
    pub(crate) fn start(
        ctx: &DispatchCtx<'_>,
        mut decisions: Vec<Decision>,
        order: Vec<usize>,
        slot: &JournalSlot,
        breaker: &mut Breaker,
        counted: CountedAdvice,
    ) -> Dispatch {
        withhold_admitted(&mut decisions, DispatchReason::ExecutionDisabled);
        // The journal as read unless the follow-up goes on (it sets its own).
        let mut out = DispatchOutcome {
            decisions: Vec::new(),
            journal: JournalSlot::Missing,
            effects: Vec::new(),
            uuids_used: 0,
            journal_error: None,
        };
        let finished = |decisions, out| Dispatch {
            decisions,
            order: Vec::new(),
            journal: Journal::empty(),
            out,
            work: Work::Finished,
            submitted: None,
            own_plan: None,
            counted: CountedAdvice::default(),
        };
        let journal = match slot {
            JournalSlot::Readable(j) => j,
            JournalSlot::Missing | JournalSlot::Unreadable { .. } => {
                out.journal = slot.clone();
                out.journal_error = Some(match slot {
                    JournalSlot::Unreadable { error, .. } => error.clone(),
                    _ => "state.json is missing".into(),
                });
                withhold_all(&mut decisions, DispatchReason::JournalUnavailable);
                return finished(decisions, out);
            }
        };
        let Some((journal, unresolved, uncertain)) =
            follow_up(ctx, journal, &mut decisions, &counted, &mut out, breaker)
        else {
            out.journal = slot.clone();
            return finished(decisions, out);
        };
        let overlap = ctx
            .config
            .policies
            .defragmentation
            .drain_plans
            .overlap_steps;
        let own_plan = overlapping_plan(overlap, &journal, &unresolved);
        let unresolved = if own_plan.is_some() {
            Vec::new()
        } else {
            unresolved
        };
        let work = match pick_work(ctx, &journal, unresolved, uncertain.as_deref()) {
            Ok(work) => {
                if let Some(plan) = &own_plan {
                    withhold_outside_plan(&mut decisions, plan);
                }
                work
            }
            Err(reason) => {
                if let Some(r) = reason {
                    withhold_all(&mut decisions, r);
                }
                Work::Finished
            }
        };
        Dispatch {
            decisions,
            order,
            journal,
            out,
            work,
            submitted: None,
            own_plan,
            counted,
        }
    }

    /// Runs the work until it needs an answer from the driver or ends.
    pub(crate) fn advance(&mut self, ctx: &DispatchCtx<'_>, breaker: &Breaker) -> Need {
        loop {
            match std::mem::replace(&mut self.work, Work::Finished) {
                Work::Finished => return Need::Nothing,
                Work::Retry(entry, check) => {
                    let candidate = entry_candidate(&entry);
                    let rc = ctx.recheck(&self.journal, breaker, None);
                    match step_check(&rc, ctx, check, &candidate, Some(&entry)) {
                        Progress::Waiting(check, need) => {
                            self.work = Work::Retry(entry, check);
                            return need;
                        }
                        Progress::Concluded(result) => self.retried(ctx, &entry, result),
                    }
                }
                Work::Submit { next, current } => {
                    let (next, i, check) = match current {
                        Some((i, check)) => (next, i, check),
                        None => match self.next_admitted(next) {
                            Some((next, i)) => (next, i, Check::Start),
                            None => continue,
                        },
                    };
                    let Some((candidate, _)) = self.decisions.get(i) else {
                        continue;
                    };
                    let candidate = candidate.clone();
                    let rc = ctx.recheck(&self.journal, breaker, Some(ctx.snapshot));
                    match step_check(&rc, ctx, check, &candidate, None) {
                        Progress::Waiting(check, need) => {
                            self.work = Work::Submit {
                                next,
                                current: Some((i, check)),
                            };
                            return need;
                        }
                        Progress::Concluded(result) => {
                            if !self.try_submit(ctx, i, result) {
                                self.work = Work::Submit {
                                    next: next + 1,
                                    current: None,
                                };
                            }
                        }
                    }
                }
            }
        }
    }

    /// From position `next` of the arbitration order, the first admitted move still to
    /// try: its position and its index in the rows.
    fn next_admitted(&self, mut next: usize) -> Option<(usize, usize)> {
        while let Some(&i) = self.order.get(next) {
            if let Some((c, Some(v))) = self.decisions.get(i)
                && v.admitted
                && c.executable
                && c.mode == DeploymentMode::OMENative
                && v.request_uuid.is_empty()
                && v.dispatch_status == Some(DispatchStatus::Withheld)
                && self.own_plan.as_deref().is_none_or(|p| later_step_of(c, p))
            {
                return Some((next, i));
            }
            next += 1;
        }
        None
    }

    /// The move whose simulation (step 10, against the first look) the re-check waits for.
    pub(crate) fn prepared(&self) -> Option<&Prepared> {
        match &self.work {
            Work::Retry(_, Check::Simulating(p))
            | Work::Submit {
                current: Some((_, Check::Simulating(p))),
                ..
            } => Some(p),
            _ => None,
        }
    }

    /// The simulator's answer to the simulation of [`Dispatch::prepared`].
    pub(crate) fn simulated(&mut self, outcome: SimulationOutcome) {
        self.map_check(|check| match check {
            Check::Simulating(p) => Check::Simulated(p, outcome),
            other => other,
        });
    }

    /// The second look the re-check asked for (`None`: it could not be made).
    pub(crate) fn looked_again(&mut self, look: Option<Arc<ClusterSnapshot>>) {
        self.map_check(|check| match check {
            Check::Looking(p, out) => Check::Looked(p, out, look),
            other => other,
        });
    }

    /// Whether the re-check waits for a second look (so a look the driver hands over is
    /// that one, not the first).
    pub(crate) fn wants_second_look(&self) -> bool {
        matches!(
            &self.work,
            Work::Retry(_, Check::Looking(..))
                | Work::Submit {
                    current: Some((_, Check::Looking(..))),
                    ..
                }
        )
    }

    fn map_check(&mut self, f: impl FnOnce(Check) -> Check) {
        match &mut self.work {
            Work::Retry(_, check)
            | Work::Submit {
                current: Some((_, check)),
                ..
            } => {
                let old = std::mem::replace(check, Check::Start);
                *check = f(old);
            }
            _ => {}
        }
    }

    /// The end of the retry of the prepared `entry`.
    fn retried(
        &mut self,
        ctx: &DispatchCtx<'_>,
        entry: &Entry,
        result: Result<Cleared, DispatchReason>,
    ) {
        match result {
            Err(r) => withhold_all(&mut self.decisions, r),
            Ok(cleared) => {
                let mut entry = entry.clone();
                attempt(
                    ctx,
                    &mut self.journal,
                    &mut entry,
                    &cleared,
                    &mut self.out.effects,
                );
                merge_entry(&mut self.decisions, &entry, &self.counted);
                self.out.journal = JournalSlot::Readable(self.journal.clone());
            }
        }
    }

    /// The end of the re-check of `decisions[i]`: on success, the new entry is journaled
    /// and the request written, and the work ends (one request a pass). Returns whether
    /// the work ended.
    fn try_submit(
        &mut self,
        ctx: &DispatchCtx<'_>,
        i: usize,
        result: Result<Cleared, DispatchReason>,
    ) -> bool {
        let withhold = |decisions: &mut Vec<Decision>, r| {
            set_reason(decisions, i, DispatchStatus::Withheld, r, "");
        };
        let cleared = match result {
            Ok(x) => x,
            Err(r) => {
                withhold(&mut self.decisions, r);
                return false;
            }
        };
        let entry = ctx
            .uuids
            .get(self.out.uuids_used)
            .ok_or(DispatchReason::InvalidRequest)
            .and_then(|uuid| new_entry(uuid, &cleared, ctx.now));
        let mut entry = match entry {
            Ok(e) => e,
            Err(r) => {
                withhold(&mut self.decisions, r);
                return false;
            }
        };
        self.out.uuids_used += 1;
        let Some((next, state_json)) = journal_with_entry(ctx, &self.journal, &entry) else {
            withhold(&mut self.decisions, DispatchReason::JournalUnavailable);
            return true;
        };
        self.out.effects.push(Effect::WriteJournal { state_json });
        self.journal = next;
        attempt(
            ctx,
            &mut self.journal,
            &mut entry,
            &cleared,
            &mut self.out.effects,
        );
        let status = entry.phase.status();
        let reason = entry.reason.unwrap_or(DispatchReason::SubmissionPrepared);
        set_reason(&mut self.decisions, i, status, reason, &entry.uuid);
        self.out.journal = JournalSlot::Readable(self.journal.clone());
        self.submitted = Some(i);
        true
    }

    /// The rows, the journal to keep and the effects (docs/design-pass.md#dispatch-pass: the
    /// other admitted moves of a pass that submitted wait with `SerialDispatchLimit`).
    pub(crate) fn finish(mut self) -> DispatchOutcome {
        if let Some(done) = self.submitted {
            for (k, (_, v)) in self.decisions.iter_mut().enumerate() {
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
        self.out.decisions = self.decisions;
        self.out
    }
}

/// Whether `c` is a later step of the started drain plan `plan_id`.
fn later_step_of(c: &Candidate, plan_id: &str) -> bool {
    c.plan
        .as_ref()
        .is_some_and(|p| p.plan_id == plan_id && !p.starts_plan)
}

/// With `overlapSteps` (docs/design-policies.md#overlapping-steps): the active drain plan
/// whose steps are every unresolved request, each submitted or acknowledged (a prepared or
/// stalled one is handled as without the option). `None` when the option is off, nothing
/// is unresolved, or any unresolved request is not that one plan's.
fn overlapping_plan(overlap: bool, journal: &Journal, unresolved: &[Entry]) -> Option<String> {
    if !overlap || unresolved.is_empty() {
        return None;
    }
    if !unresolved
        .iter()
        .all(|e| matches!(e.phase, Phase::Submitted | Phase::Acknowledged))
    {
        return None;
    }
    let plan = journal
        .plans
        .iter()
        .filter(|p| p.active())
        .find(|p| p.steps.iter().any(|s| s.request_uuid == unresolved[0].uuid))?;
    unresolved
        .iter()
        .all(|e| plan.steps.iter().any(|s| s.request_uuid == e.uuid))
        .then(|| plan.id.clone())
}

/// Withholds every admitted row that is not a later step of `plan_id` with
/// `UnresolvedRequest`: with `overlapSteps` only that plan's next step may go beside its
/// own requests.
fn withhold_outside_plan(decisions: &mut [Decision], plan_id: &str) {
    for (c, v) in decisions.iter_mut() {
        if let Some(v) = v
            && v.admitted
            && v.dispatch_status == Some(DispatchStatus::Withheld)
            && !later_step_of(c, plan_id)
        {
            v.dispatch_reason = Some(DispatchReason::UnresolvedRequest);
        }
    }
}

/// Every admitted row starts as `withheld/reason`.
fn withhold_admitted(decisions: &mut [Decision], reason: DispatchReason) {
    for (_, v) in decisions.iter_mut() {
        if let Some(v) = v
            && v.admitted
        {
            v.dispatch_status = Some(DispatchStatus::Withheld);
            v.dispatch_reason = Some(reason);
        }
    }
}

/// The follow-up (docs/design-pass.md#follow-up) of the journal as read and its journal
/// write, with the breaker's outcomes and the rows of the entries it reports. Returns the
/// journal from then on (also put in `out`), its unresolved entries and the entry found
/// `SubmissionUncertain` this pass; `None` when the journal cannot be written (every
/// admitted move withheld).
fn follow_up(
    ctx: &DispatchCtx<'_>,
    journal: &Journal,
    decisions: &mut Vec<Decision>,
    counted: &CountedAdvice,
    out: &mut DispatchOutcome,
    breaker: &mut Breaker,
) -> Option<(Journal, Vec<Entry>, Option<String>)> {
    let mut follow = crate::dispatch::follow::reconcile(
        journal,
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
    // Unchanged, the followed journal is the one read.
    if follow.changed {
        if let Err(e) = write(&follow.journal, &mut out.effects) {
            out.journal_error = Some(e);
            withhold_all(decisions, DispatchReason::JournalUnavailable);
            return None;
        }
        for ok in &follow.ended {
            breaker.record_outcome(*ok, ctx.now);
        }
    }
    for uuid in &follow.reported {
        if let Some(e) = follow.journal.entry(uuid) {
            merge_entry(decisions, e, counted);
        }
    }
    let unresolved: Vec<Entry> = follow.journal.unresolved().cloned().collect();
    out.journal = JournalSlot::Readable(follow.journal.clone());
    Some((follow.journal, unresolved, uncertain))
}

/// What the dispatcher does after the follow-up: retry the one prepared entry, or try the
/// admitted moves; `Err`: nothing, with the pass-wide reason that withholds every
/// admitted move (`None`: the rows keep theirs).
fn pick_work(
    ctx: &DispatchCtx<'_>,
    journal: &Journal,
    unresolved: Vec<Entry>,
    uncertain: Option<&str>,
) -> Result<Work, Option<DispatchReason>> {
    if unresolved.len() > 1 {
        return Err(Some(DispatchReason::MultipleUnresolvedRequests));
    }
    if let Some(e) = unresolved.into_iter().next() {
        if e.phase != Phase::Prepared {
            return Err(Some(DispatchReason::UnresolvedRequest));
        }
        // The failed write is recorded this pass; the retry belongs to the next one.
        if uncertain == Some(e.uuid.as_str()) {
            return Err(None);
        }
        // The prepared row itself shows withheld/ExecutionDisabled until it is retried.
        execution_enabled(ctx).map_err(Some)?;
        if RequestPayload::decode(&e.payload).is_err() {
            return Err(Some(DispatchReason::JournalPayloadInvalid));
        }
        return Ok(Work::Retry(Box::new(e), Check::Start));
    }
    execution_enabled(ctx).map_err(Some)?;
    if !fresh(ctx.snapshot.observed_at, ctx.now) {
        return Err(Some(DispatchReason::ObservationStale));
    }
    if journal.backoff_until.is_some_and(|b| b > ctx.now) {
        return Err(Some(DispatchReason::FailureBackoff));
    }
    Ok(Work::Submit {
        next: 0,
        current: None,
    })
}

/// Where a re-check got to in one step.
#[allow(clippy::large_enum_variant)] // matched at once by the one caller
enum Progress {
    /// It waits for the driver.
    Waiting(Check, Need),
    /// It ended.
    Concluded(Result<Cleared, DispatchReason>),
}

/// Moves one re-check (docs/design-pass.md#pre-submit-re-check) as far as the answers it has
/// allow.
fn step_check(
    rc: &Recheck<'_>,
    ctx: &DispatchCtx<'_>,
    check: Check,
    candidate: &Candidate,
    existing: Option<&Entry>,
) -> Progress {
    let first = match ctx.first_look {
        None => return Progress::Waiting(check, Need::FirstLook),
        // 1. Fresh observation.
        Some(None) => {
            return Progress::Concluded(Err(DispatchReason::ObservationUnavailable));
        }
        Some(Some(first)) => first,
    };
    match check {
        Check::Start => match prepare(rc, first, candidate, existing) {
            Ok(p) => Progress::Waiting(Check::Simulating(p), Need::Simulation),
            Err(r) => Progress::Concluded(Err(r)),
        },
        Check::Simulating(p) => Progress::Waiting(Check::Simulating(p), Need::Simulation),
        Check::Simulated(p, out) => {
            if let Err(r) = judge_simulation(rc, first, &out) {
                return Progress::Concluded(Err(r));
            }
            if ctx.live {
                return Progress::Waiting(Check::Looking(p, out), Need::SecondLook);
            }
            Progress::Concluded(conclude(rc, first, None, candidate, existing, p, &out))
        }
        Check::Looking(p, out) => Progress::Waiting(Check::Looking(p, out), Need::SecondLook),
        Check::Looked(p, out, look) => Progress::Concluded(match look {
            None => Err(DispatchReason::ObservationUnavailable),
            Some(second) => conclude(rc, first, Some(&second), candidate, existing, p, &out),
        }),
    }
}

/// The journal with the new `entry` appended, pruned of what no cooldown reads any more
/// (docs/design-pass.md#journal), and its text; `None`: it would not be valid.
fn journal_with_entry(
    ctx: &DispatchCtx<'_>,
    journal: &Journal,
    entry: &Entry,
) -> Option<(Journal, String)> {
    let mut next = journal.clone();
    let overrides = ctx
        .first_look
        .flatten()
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
    next.validate().ok()?;
    let text = next.to_state_json().ok()?;
    Some((next, text))
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

fn new_entry(uuid: &str, cleared: &Cleared, now: Timestamp) -> Result<Entry, DispatchReason> {
    if !crate::dispatch::request::is_canonical_uuid(uuid) {
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
/// at the first failed dispatch write (`Effect::is_dispatch_write`); the next pass learns the
/// truth from the cluster.
fn attempt(
    ctx: &DispatchCtx<'_>,
    journal: &mut Journal,
    e: &mut Entry,
    cleared: &Cleared,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The journal example's entry (acknowledged, not completed).
    fn entry() -> Entry {
        Journal::parse(crate::dispatch::journal::tests::EXAMPLE)
            .expect("example journal")
            .entries
            .remove(0)
    }

    /// The entry's Instance as the walk's advice row (moving it would not pay).
    fn advice_row(e: &Entry) -> Candidate {
        let mut c = entry_candidate(e);
        c.executable = false;
        c.advisory_reason =
            Some(alfred_model::reason::AdvisoryReason::NonExecutableObservedFragmentation);
        c
    }

    /// The example journal, its entry (in `phase`) step 1 of the active plan `dp-1`, and a
    /// second entry `u2` of no plan (terminal unless `u2_running`).
    fn plan_journal(phase: Phase, u2_running: bool) -> (Journal, Entry) {
        use alfred_model::plan::{DrainProtectionWire, PlanPhase, PlanRecord, PlanStepRecord};
        let mut j =
            Journal::parse(crate::dispatch::journal::tests::EXAMPLE).expect("example journal");
        j.entries[0].phase = phase;
        let mut other = j.entries[0].clone();
        other.uuid = "u2".into();
        other.phase = if u2_running {
            Phase::Acknowledged
        } else {
            Phase::Completed
        };
        other.completed_at = (!u2_running).then_some(other.created_at);
        let e = j.entries[0].clone();
        j.entries.push(other);
        j.plans = vec![PlanRecord {
            benefit_milli_gpus: 0,
            cost_milli_gpus: 0,
            id: "dp-1".into(),
            pool: "H100".into(),
            node: e.from_node.clone(),
            node_uid: "uid".into(),
            pod: "prod/big".into(),
            pod_uid: "p1".into(),
            gpus: 8,
            protection: DrainProtectionWire::Nominate,
            steps: vec![PlanStepRecord {
                workload: "inference/qwen3-235b".into(),
                component: e.component,
                instance: e.instance,
                gpus: 4,
                request_uuid: e.uuid.clone(),
            }],
            phase: PlanPhase::Draining,
            reason: None,
            started_at: e.created_at,
            deadline: e.created_at.plus_minutes(60),
            ended_at: None,
            pending_since: e.created_at,
        }];
        (j, e)
    }

    #[test]
    fn overlap_names_the_plan_only_when_every_unresolved_request_is_its_running_step() {
        let unresolved = |j: &Journal| j.unresolved().cloned().collect::<Vec<_>>();
        for phase in [Phase::Submitted, Phase::Acknowledged] {
            let (j, _) = plan_journal(phase, false);
            assert_eq!(
                overlapping_plan(true, &j, &unresolved(&j)),
                Some("dp-1".into())
            );
            // Off: no exemption, whatever the journal holds.
            assert_eq!(overlapping_plan(false, &j, &unresolved(&j)), None);
        }
        // A prepared or stalled step is handled as without the option.
        for phase in [Phase::Prepared, Phase::Stalled] {
            let (j, _) = plan_journal(phase, false);
            assert_eq!(
                overlapping_plan(true, &j, &unresolved(&j)),
                None,
                "{phase:?}"
            );
        }
        // Another unresolved request beside the plan's step: none.
        let (j, _) = plan_journal(Phase::Acknowledged, true);
        assert_eq!(unresolved(&j).len(), 2);
        assert_eq!(overlapping_plan(true, &j, &unresolved(&j)), None);
        // An ended plan's step, or nothing unresolved: none.
        let (mut j, _) = plan_journal(Phase::Acknowledged, false);
        j.plans[0].phase = alfred_model::plan::PlanPhase::Abandoned;
        assert_eq!(overlapping_plan(true, &j, &unresolved(&j)), None);
        assert_eq!(overlapping_plan(true, &j, &[]), None);
    }

    #[test]
    fn overlap_withholds_every_row_but_the_plans_later_steps() {
        let (_, e) = plan_journal(Phase::Acknowledged, false);
        let admitted = || Verdict {
            admitted: true,
            dispatch_status: Some(DispatchStatus::Withheld),
            dispatch_reason: Some(DispatchReason::ExecutionDisabled),
            ..Verdict::default()
        };
        let with_plan = |id: &str, starts: bool| {
            let mut c = entry_candidate(&e);
            c.plan = Some(alfred_model::plan::PlanStepRef {
                plan_id: id.into(),
                step: 2,
                steps: 3,
                node: e.from_node.clone(),
                starts_plan: starts,
            });
            (c, Some(admitted()))
        };
        let mut rows = vec![
            with_plan("dp-1", false),
            with_plan("dp-1", true),
            with_plan("dp-2", false),
            (entry_candidate(&e), Some(admitted())),
        ];
        withhold_outside_plan(&mut rows, "dp-1");
        let reasons: Vec<_> = rows
            .iter()
            .map(|(_, v)| v.as_ref().and_then(|v| v.dispatch_reason))
            .collect();
        assert_eq!(
            reasons,
            vec![
                Some(DispatchReason::ExecutionDisabled),
                Some(DispatchReason::UnresolvedRequest),
                Some(DispatchReason::UnresolvedRequest),
                Some(DispatchReason::UnresolvedRequest),
            ]
        );
        assert!(later_step_of(&rows[0].0, "dp-1"));
        assert!(!later_step_of(&rows[1].0, "dp-1"));
    }

    #[test]
    fn a_reported_entry_takes_its_instances_row_kept_or_counted() {
        let e = entry();
        // The row kept: the entry's status goes on it.
        let mut kept = vec![(advice_row(&e), None)];
        merge_entry(&mut kept, &e, &CountedAdvice::default());
        assert_eq!(kept.len(), 1);
        assert_eq!(
            kept[0].1.as_ref().map(|v| v.request_uuid.as_str()),
            Some(e.uuid.as_str())
        );
        // The row counted: no row is made up for the entry.
        let mut rows = vec![advice_row(&e)];
        let counted = CountedAdvice::take_from(&mut rows);
        assert!(rows.is_empty());
        let mut decisions = Vec::new();
        merge_entry(&mut decisions, &e, &counted);
        assert!(decisions.is_empty());
        // No row at all: the entry gets its own.
        merge_entry(&mut decisions, &e, &CountedAdvice::default());
        assert_eq!(decisions.len(), 1);
        assert_eq!(decisions[0].0.row_key(), entry_candidate(&e).row_key());
    }
}
