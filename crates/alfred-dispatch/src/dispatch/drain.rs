//! Drain plans across passes (docs/design-policies.md#drain-plans): the durable plan records beside
//! the journal's entries, their phases, their protection and their end.
//!
//! Each pass:
//! 1. [`PlanBook::review`] (before the policies): an active plan ends when its pod bound (to
//!    its node: `completed`; elsewhere: abandoned) or went away, its node went away, turned
//!    unhealthy, is due for maintenance or was cordoned by someone else, a step's migration
//!    failed or stalled, the deadline passed, someone else nominated the pod, or plans or
//!    execution are off. A plan whose node now has room for the pod is at hand-off.
//! 2. The policies re-plan the active plans ([`PlanBook::block`] ends the ones they cannot go
//!    on with) and may propose new ones.
//! 3. [`PlanBook::after_dispatch`]: a plan step the dispatcher submitted starts its plan (or
//!    adds a step to it), in execute mode only, and only a request this pass submitted: an
//!    earlier pass's request still in the journal comes back on its Instance's row with
//!    `RequestSubmitted` while OMENative has not acknowledged it.
//! 4. [`PlanBook::finish`]: the protection writes (nominate or taint, re-set where it was
//!    lost; removed when the plan ends), Node Events, metrics, and one journal write when a
//!    plan changed, placed **before** the protection writes so that no nomination or taint
//!    of alfred's exists without a plan record that names it.
//!
//! Ended plans stay a day (for the pools' backoff and to remove a protection whose removal
//! failed), and longer while their protection is still in place; any node still carrying
//! alfred's taint without an active plan is untainted. Only execute mode writes a
//! protection or lifts one: in recommend-only mode what execute mode left is reported (a
//! Node Event when the plan ends, a gauge and a row of the record every pass until it is
//! gone). An unreadable journal stops every write: the book is then empty and silent.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use alfred_model::config::Config;
use alfred_model::effect::{Effect, Event, MetricChange, MetricUpdate, ObjectRef};
use alfred_model::event::EventReason;
use alfred_model::plan::{
    DRAIN_TAINT_KEY, DrainPlan, DrainProtectionWire, PlanMove, PlanPhase, PlanRecord,
    PlanStepRecord, PlanView, milli_gpus,
};
use alfred_model::reason::{AdvisoryReason, DispatchReason, PlanEndReason};
use alfred_model::record::Candidate;
use alfred_model::snapshot::{HealthState, Node};
use alfred_model::{ClusterSnapshot, Timestamp};

use crate::dispatch::Decision;
use crate::dispatch::journal::{Journal, MAX_PLANS, Phase};

/// How long an ended plan is kept.
const ENDED_RETENTION: Duration = Duration::from_secs(24 * 3600);

/// The most `planDeadlineMinutes` a plan handed from pod to pod keeps its node, counted from
/// its start (docs/design-policies.md#drain-plans).
const HANDOVER_DEADLINES: u32 = 2;

/// The plans of one pass, as they change through it.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct PlanBook {
    /// Every plan: the active ones and those ended within the retention.
    pub plans: Vec<PlanRecord>,
    /// Whether anything changed (the journal must be written).
    pub changed: bool,
    /// Plans that ended in this pass (for the record and the decision log).
    pub ended_now: Vec<PlanRecord>,
    /// Ids of plans started in this pass.
    pub started_now: Vec<String>,
    /// Protection writes, Events and metric changes, in order.
    effects: Vec<Effect>,
    /// The pass's time (ended plans past the retention are dropped against it).
    now: Option<Timestamp>,
    /// Execute mode with a readable journal: the book may write protections and lift them.
    may_write: bool,
    /// The journal was unreadable: the book knows no plan and writes nothing at all.
    frozen: bool,
    /// Ended plans whose protection is still in place (and not lifted by this pass's
    /// ending): plan id → `nomination` or `taint`.
    left: BTreeMap<String, &'static str>,
    /// Taints of alfred's that no plan record names (a record lost with a reset journal).
    orphan_taints: usize,
}

/// What [`PlanBook::review`] reads besides the plans.
pub(crate) struct ReviewInput<'a> {
    /// The pass's snapshot.
    pub snapshot: &'a ClusterSnapshot,
    /// The configuration.
    pub config: &'a Config,
    /// The journal (the steps' entries and the plans); `None` when it is unreadable, which
    /// stops every write (docs/design-pass.md#invariants).
    pub journal: Option<&'a Journal>,
    /// Execute mode with an executor: plans may go on.
    pub executing: bool,
    /// Execute mode (with or without an executor): the installation holds the rights to
    /// write a plan's protection and to lift it. Recommend-only writes nothing.
    pub execute_mode: bool,
    /// Now.
    pub now: Timestamp,
}

impl PlanBook {
    /// Step 1: ends what cannot go on, moves plans to hand-off, keeps the protection in place.
    pub(crate) fn review(input: &ReviewInput<'_>) -> PlanBook {
        let Some(journal) = input.journal else {
            return PlanBook {
                now: Some(input.now),
                frozen: true,
                ..PlanBook::default()
            };
        };
        let mut book = PlanBook {
            plans: journal.plans.clone(),
            now: Some(input.now),
            may_write: input.execute_mode,
            ..PlanBook::default()
        };
        let snap = input.snapshot;
        let cfg = &input.config.policies.defragmentation;
        let enabled = cfg.enabled && cfg.drain_plans.enabled;
        for i in 0..book.plans.len() {
            // The ended plans (most of the book: kept a day) are not copied.
            if !book.plans[i].active() {
                continue;
            }
            let r = book.plans[i].clone();
            let verdict = if !enabled {
                Some(PlanEndReason::PlansDisabled)
            } else if !input.executing {
                Some(PlanEndReason::ExecutionDisabled)
            } else {
                book.follow_the_queue(i, judge(&r, snap, journal, input.now), input, journal)
            };
            match verdict {
                Some(why) => book.end(i, why, snap, input.now),
                None => {
                    // Read again: a plan handed over has another pod.
                    let r = &book.plans[i];
                    let phase = phase_now(r, snap, journal);
                    if phase != r.phase {
                        book.plans[i].phase = phase;
                        book.changed = true;
                    }
                    book.keep_protection(i, snap);
                }
            }
        }
        book.clean_up(snap);
        book
    }

    /// Ids of the active plans.
    pub(crate) fn active(&self) -> impl Iterator<Item = &PlanRecord> {
        self.plans.iter().filter(|p| p.active())
    }

    /// Step 2: ends the active plans the policies can no longer go on with. The policies
    /// say `NodeRefilled` when what no plan can move holds too many of the node's GPUs; that
    /// is a refill only when a GPU pod landed on the node since the plan started. Otherwise
    /// what stays was there all along and was to move: a remaining step can no longer move
    /// (scaled, opted out, a new generation, rolling), and the plan ends `StepIneligible`.
    pub(crate) fn block(
        &mut self,
        blocked: &[(String, PlanEndReason)],
        snap: &ClusterSnapshot,
        now: Timestamp,
    ) {
        for (id, why) in blocked {
            if let Some(i) = self.plans.iter().position(|p| p.id == *id && p.active()) {
                let why = if *why == PlanEndReason::NodeRefilled
                    && !landed_since_start(&self.plans[i], snap)
                {
                    PlanEndReason::StepIneligible
                } else {
                    *why
                };
                self.end(i, why, snap, now);
            }
        }
    }

    /// After dispatch: the phase of each plan that goes on, read again against `journal`,
    /// the journal as this pass's follow-up left it (a step it saw complete hands the node
    /// over now, not a pass later), with its protection kept to match.
    pub(crate) fn settle(&mut self, snap: &ClusterSnapshot, journal: &Journal) {
        if self.frozen {
            return;
        }
        for i in 0..self.plans.len() {
            let r = &self.plans[i];
            if !r.active() || self.started_now.contains(&r.id) {
                continue;
            }
            let phase = phase_now(r, snap, journal);
            if phase == r.phase {
                continue;
            }
            let id = r.id.clone();
            self.plans[i].phase = phase;
            self.changed = true;
            self.effects.retain(|e| !protects(e, &id));
            self.keep_protection(i, snap);
        }
    }

    /// Holds back the steps of a plan whose earlier step is still in flight: such a row is
    /// advice, `DrainPlanStepWaiting`, as the plan's later steps are, rather than a move the
    /// dispatcher would withhold. Not with `drainPlans.overlapSteps`, which lets that step go
    /// beside the plan's own.
    ///
    /// In flight means unresolved after this pass's follow-up: each of the plan's entries in
    /// `journal` (as read) is reconciled against `snap` as the dispatcher's follow-up will
    /// reconcile it later in the pass ([`crate::dispatch::follow::reconcile_entry`] at `now` with the
    /// acknowledgement timeout `ack`). An entry the journal still holds as acknowledged but
    /// whose migration the snapshot shows ended does not hold the next step back a pass.
    pub(crate) fn hold_waiting_steps(
        &self,
        candidates: &mut [Candidate],
        journal: &Journal,
        config: &Config,
        follow_up: (&ClusterSnapshot, Timestamp, Duration),
    ) {
        if config.policies.defragmentation.drain_plans.overlap_steps {
            return;
        }
        let (snap, now, ack) = follow_up;
        let unresolved_after_follow_up = |e: &crate::dispatch::journal::Entry| {
            if e.phase.is_terminal() {
                return false;
            }
            let mut followed = e.clone();
            crate::dispatch::follow::reconcile_entry(&mut followed, snap, now, ack);
            followed.is_unresolved()
        };
        for c in candidates.iter_mut() {
            let Some(step) = &c.plan else {
                continue;
            };
            let in_flight = self
                .plans
                .iter()
                .filter(|p| p.id == step.plan_id && p.active())
                .flat_map(|p| &p.steps)
                .any(|s| {
                    journal
                        .entries
                        .iter()
                        .any(|e| e.uuid == s.request_uuid && unresolved_after_follow_up(e))
                });
            if in_flight && c.executable {
                c.executable = false;
                c.advisory_reason = Some(AdvisoryReason::DrainPlanStepWaiting);
            }
        }
    }

    /// Step 3: the plan steps the dispatcher submitted in this pass start their plan or
    /// extend it, when `executing` (execute mode with an executor: in recommend-only a plan
    /// is advice and starts nothing, docs/design-policies.md#drain-plans). A row whose request
    /// `read` (the journal as the pass read it) already held as submitted, or that a plan
    /// already lists (ended plans included), is an earlier pass's request, merged into this
    /// pass's rows from the journal while it waits for OMENative: it neither adds a step again
    /// nor starts a plan (anew, or for another request's move) without the budget check a new
    /// plan's step passes.
    #[allow(clippy::too_many_arguments)] // the pass's inputs, each read once
    pub(crate) fn after_dispatch(
        &mut self,
        decisions: &[Decision],
        proposed: &[DrainPlan],
        config: &Config,
        snap: &ClusterSnapshot,
        read: Option<&Journal>,
        now: Timestamp,
        executing: bool,
    ) {
        if !executing || self.frozen {
            return;
        }
        // Executing is execute mode: the new plans' protection goes out.
        self.may_write = true;
        let submitted_before = |uuid: &str| {
            read.is_some_and(|j| {
                j.entries
                    .iter()
                    .any(|e| e.uuid == uuid && e.phase != Phase::Prepared)
            })
        };
        let settings = &config.policies.defragmentation.drain_plans;
        for (c, v) in decisions {
            let (Some(step), Some(v)) = (&c.plan, v) else {
                continue;
            };
            if v.dispatch_reason != Some(DispatchReason::RequestSubmitted)
                || v.request_uuid.is_empty()
            {
                continue;
            }
            let listed = self
                .plans
                .iter()
                .any(|p| p.steps.iter().any(|s| s.request_uuid == v.request_uuid));
            if listed || submitted_before(&v.request_uuid) {
                continue;
            }
            let Some(plan) = proposed.iter().find(|p| p.id == step.plan_id) else {
                continue;
            };
            let gpus = plan
                .steps
                .iter()
                .find(|s| {
                    s.workload == c.workload
                        && s.component == c.component
                        && s.instance == c.instance
                })
                .map_or(c.footprint_gpus, |s| s.gpus);
            let record = PlanStepRecord {
                workload: c.workload.clone(),
                component: c.component,
                instance: c.instance,
                gpus,
                request_uuid: v.request_uuid.clone(),
            };
            self.changed = true;
            if let Some(p) = self
                .plans
                .iter_mut()
                .find(|p| p.id == plan.id && p.active())
            {
                p.steps.push(record);
                p.set_price(plan.benefit_gpus, plan.cost_gpus);
                continue;
            }
            // The state holds at most `MAX_PLANS` plans: one more active plan could not be
            // saved, and its protection would go out without a record naming it. The request
            // goes on as a single move.
            if self.active().count() >= MAX_PLANS {
                continue;
            }
            // A plan id is reused when the same node is planned for the same pod again: the
            // ended record stays under a new id, so the pool's abandon streak keeps it.
            self.set_aside(&plan.id);
            let deadline = now.plus(Duration::from_secs(
                u64::from(settings.plan_deadline_minutes) * 60,
            ));
            let record = PlanRecord {
                benefit_milli_gpus: milli_gpus(plan.benefit_gpus),
                cost_milli_gpus: milli_gpus(plan.cost_gpus),
                id: plan.id.clone(),
                pool: plan.pool.clone(),
                node: plan.node.clone(),
                node_uid: plan.node_uid.clone(),
                pod: plan.pod.clone(),
                pod_uid: plan.pod_uid.clone(),
                gpus: plan.pod_gpus,
                protection: settings.protection.into(),
                steps: vec![record],
                phase: PlanPhase::Protecting,
                reason: None,
                started_at: now,
                deadline,
                ended_at: None,
                pending_since: plan.pending_since,
            };
            self.started_now.push(record.id.clone());
            self.effects.push(node_event(
                snap,
                &record.node,
                EventReason::DrainPlanStarted,
                format!("drain plan {}: {}", record.id, plan.story(now)),
            ));
            self.effects.push(plan_counter(&record.pool, "started", ""));
            self.plans.push(record);
            let i = self.plans.len() - 1;
            self.keep_protection(i, snap);
        }
    }

    /// Step 4: the journal write (when a plan changed and `journal` is the journal to write),
    /// then the protection writes, Events and metrics. `pools` are the pools to report the
    /// active-plan gauge for.
    pub(crate) fn finish(
        mut self,
        journal: Option<&Journal>,
        pools: &[String],
    ) -> (Vec<PlanRecord>, Vec<Effect>) {
        if self.frozen {
            // An unreadable journal: no plan is known, nothing is written or reported.
            return (Vec::new(), Vec::new());
        }
        // The gauge of what ended plans left: set while any plan record or leftover exists
        // (a leftover's record is kept until it is gone, so the gauge comes back to 0).
        let report_left = !self.plans.is_empty() || self.orphan_taints > 0;
        self.prune();
        let mut out = Vec::with_capacity(self.effects.len() + pools.len() + 3);
        if self.changed
            && let Some(j) = journal
        {
            let j = Journal {
                version: j.version.clone(),
                entries: j.entries.clone(),
                backoff_until: j.backoff_until,
                plans: self.plans.clone(),
            };
            match j.to_state_json() {
                Ok(text) => out.push(Effect::WriteJournal { state_json: text }),
                // A state that cannot be saved (more plans than it may hold, or too large)
                // records no protection: none is put in place without the record naming it.
                Err(_) => self.effects.retain(|e| !puts_protection(e)),
            }
        }
        out.append(&mut self.effects);
        for pool in pools {
            let n = self
                .plans
                .iter()
                .filter(|p| p.active() && p.pool == *pool)
                .count();
            out.push(Effect::Metric(MetricUpdate {
                name: alfred_model::metric::MetricId::DrainPlansActive
                    .name()
                    .into(),
                labels: vec![("pool".into(), pool.clone().into())],
                change: MetricChange::Set(n as f64),
            }));
        }
        if report_left {
            for kind in ["nomination", "taint"] {
                let mut n = self.left.values().filter(|k| **k == kind).count();
                if kind == "taint" {
                    n += self.orphan_taints;
                }
                out.push(Effect::Metric(MetricUpdate {
                    name: alfred_model::metric::MetricId::DrainPlanProtectionLeft
                        .name()
                        .into(),
                    labels: vec![("protection".into(), kind.into())],
                    change: MetricChange::Set(n as f64),
                }));
            }
        }
        (self.plans, out)
    }

    /// The record's view of the pass's plans: those proposed (new: `proposed`; active: their
    /// phase) and those that ended in it.
    pub(crate) fn views(&self, proposed: &[DrainPlan], now: Timestamp) -> Vec<PlanView> {
        let mut out: Vec<PlanView> = proposed
            .iter()
            .map(|p| {
                let phase = self
                    .plans
                    .iter()
                    .find(|r| r.id == p.id && r.active())
                    .map_or("proposed", |r| r.phase.as_str());
                PlanView {
                    id: p.id.clone(),
                    pool: p.pool.clone(),
                    node: p.node.clone(),
                    pod: p.pod.clone(),
                    pod_gpus: p.pod_gpus,
                    pending_minutes: minutes(now, p.pending_since),
                    phase: phase.to_owned(),
                    reason: None,
                    moves: p.steps.clone(),
                    benefit_gpus: p.benefit_gpus,
                    cost_gpus: p.cost_gpus,
                    summary: p.story(now),
                    protection_left: None,
                }
            })
            .collect();
        let left_before = self
            .plans
            .iter()
            .filter(|r| r.phase.ended() && self.left.contains_key(&r.id))
            .filter(|r| !self.ended_now.iter().any(|e| e.id == r.id));
        for r in self.ended_now.iter().chain(left_before) {
            if out.iter().any(|v| v.id == r.id) {
                continue;
            }
            out.push(PlanView {
                id: r.id.clone(),
                pool: r.pool.clone(),
                node: r.node.clone(),
                pod: r.pod.clone(),
                pod_gpus: r.gpus,
                pending_minutes: minutes(now, r.pending_since),
                phase: r.phase.as_str().to_owned(),
                reason: r.reason,
                // What the plan was: the moves it asked for.
                moves: r
                    .steps
                    .iter()
                    .map(|s| PlanMove {
                        workload: s.workload.clone(),
                        component: s.component,
                        instance: s.instance,
                        gpus: s.gpus,
                        targets: Vec::new(),
                    })
                    .collect(),
                // What the plan was worth when its latest step was requested.
                benefit_gpus: r.benefit_milli_gpus as f64 / 1000.0,
                cost_gpus: r.cost_milli_gpus as f64 / 1000.0,
                summary: format!(
                    "plan {} for {} on {} {} ({})",
                    r.id,
                    r.pod,
                    r.node,
                    r.phase.as_str(),
                    r.reason.map_or("", |x| x.as_str())
                ),
                protection_left: self.left.get(&r.id).map(|k| (*k).to_owned()),
            });
        }
        out
    }

    /// The plan serves its pool's queue, not only its pod (docs/design-policies.md#drain-plans):
    /// `verdict` is [`judge`]'s for active plan `i`, and what is returned is the plan's.
    ///
    /// * Under `taint`, a plan at hand-off whose node a pod of at least the plan's GPUs took
    ///   is completed for that pod: a taint keeps the node for no pod in particular, and once
    ///   it is lifted the scheduler gives the node to the head of its queue.
    /// * Under `taint`, a plan whose pod bound elsewhere or went away goes on for the next
    ///   waiting pod of the same size that could take the node ([`successor`]), with a new
    ///   deadline: the taint still keeps the node, so the moves made stay useful, where
    ///   ending the plan would lift it and let the half-emptied node fill again. Not under
    ///   `nominate`: the nomination goes with the pod that bound, the node fills before the
    ///   next pass can nominate another, and on the trace twin handed-over plans then held
    ///   their pool's plan slot until they ran out of steps or time (multigpu50's 8-GPU p95
    ///   went from 157 to 218 minutes; EVALUATION.md, fourteenth evaluation).
    fn follow_the_queue(
        &mut self,
        i: usize,
        verdict: Option<PlanEndReason>,
        input: &ReviewInput<'_>,
        journal: &Journal,
    ) -> Option<PlanEndReason> {
        let snap = input.snapshot;
        let r = &self.plans[i];
        let pod_lost = matches!(
            verdict,
            Some(PlanEndReason::PodBoundElsewhere | PlanEndReason::PodGone)
        );
        if (verdict.is_none() || pod_lost)
            && r.protection == DrainProtectionWire::Taint
            && let Some(seated) = seated_at_handoff(r, snap)
        {
            let r = &mut self.plans[i];
            r.pod = seated.key();
            r.pod_uid = seated.uid.clone();
            return Some(PlanEndReason::PodBound);
        }
        if !pod_lost || r.protection != DrainProtectionWire::Taint {
            return verdict;
        }
        let taken: Vec<&str> = self
            .plans
            .iter()
            .filter(|p| p.active() && p.id != r.id)
            .map(|p| p.pod.as_str())
            .collect();
        let Some(next) = successor(r, snap, &taken, input.config, input.now) else {
            return verdict;
        };
        let why = verdict.map_or("", |v| v.as_str());
        let message = format!(
            "drain plan {}: {} no longer waits ({why}); going on for {} ({} GPUs, pending {} min)",
            r.id,
            r.pod,
            next.key(),
            r.gpus,
            minutes(input.now, next.pending_since),
        );
        let minutes_allowed = input
            .config
            .policies
            .defragmentation
            .drain_plans
            .plan_deadline_minutes;
        let allowed = Duration::from_secs(u64::from(minutes_allowed) * 60);
        // Each pod gets the deadline afresh, but the node is kept at most
        // `HANDOVER_DEADLINES` deadlines from the plan's start, whatever the hand-overs: a
        // queue whose pods keep binding elsewhere cannot keep it tainted without end.
        let last = r.started_at.plus(allowed * HANDOVER_DEADLINES);
        if input.now >= last {
            return verdict;
        }
        let mut handed = r.clone();
        handed.pod = next.key();
        handed.pod_uid = next.uid.clone();
        handed.pending_since = next.pending_since;
        handed.deadline = input.now.plus(allowed).min(last);
        // The new pod's protection is put in place as a new plan's is.
        handed.phase = PlanPhase::Protecting;
        // A plan that could not go on for the new pod either (its node or a step went
        // wrong) ends as it was, for the pod it was made for.
        if judge(&handed, snap, journal, input.now).is_some() {
            return verdict;
        }
        self.effects.push(node_event(
            snap,
            &handed.node,
            EventReason::DrainPlanHandedOver,
            message,
        ));
        self.effects
            .push(plan_counter(&handed.pool, "handedOver", why));
        self.plans[i] = handed;
        self.changed = true;
        None
    }

    /// Ends plan `i` with `why`: phase, time, protection removed, Event, metric.
    fn end(&mut self, i: usize, why: PlanEndReason, snap: &ClusterSnapshot, now: Timestamp) {
        let phase = if why == PlanEndReason::PodBound {
            PlanPhase::Completed
        } else {
            PlanPhase::Abandoned
        };
        {
            let r = &mut self.plans[i];
            r.phase = phase;
            r.reason = Some(why);
            r.ended_at = Some(now);
        }
        self.changed = true;
        let r = self.plans[i].clone();
        // A protection `review` queued for the plan earlier in the pass must not go out
        // after the journal records the plan as ended: it would name no active plan.
        self.effects.retain(|e| {
            !matches!(e, Effect::NominatePod { plan_id, .. } | Effect::TaintNode { plan_id, .. }
                if *plan_id == r.id)
        });
        if self.may_write {
            self.remove_protection(&r, snap);
        } else if let Some(kind) = self.protection_in_place(&r, snap) {
            self.effects.push(node_event(
                snap,
                &r.node,
                EventReason::DrainPlanProtectionLeft,
                format!(
                    "drain plan {} ended ({}) outside execute mode; its {kind} stays until alfred runs in execute mode",
                    r.id,
                    why.as_str()
                ),
            ));
            self.left.insert(r.id.clone(), kind);
        }
        let (reason, outcome) = if phase == PlanPhase::Completed {
            (EventReason::DrainPlanCompleted, "completed")
        } else {
            (EventReason::DrainPlanAbandoned, "abandoned")
        };
        let waited = minutes(now, r.pending_since);
        self.effects.push(node_event(
            snap,
            &r.node,
            reason,
            format!(
                "{}: drain plan {} for {} ({} GPUs, pending {waited} min) after {} step(s)",
                why.as_str(),
                r.id,
                r.pod,
                r.gpus,
                r.steps.len()
            ),
        ));
        self.effects
            .push(plan_counter(&r.pool, outcome, why.as_str()));
        self.ended_now.push(r);
    }

    /// Puts the protection of active plan `i` in place when it is missing: the nomination
    /// for as long as the plan runs (an older scheduler clears it after a failed cycle);
    /// the taint until hand-off, removed at hand-off. Only in execute mode.
    fn keep_protection(&mut self, i: usize, snap: &ClusterSnapshot) {
        if !self.may_write {
            return;
        }
        let r = &self.plans[i].clone();
        match r.protection {
            DrainProtectionWire::None => {}
            DrainProtectionWire::Nominate => {
                let Some(p) = pending(snap, &r.pod) else {
                    return;
                };
                if p.nominated_node.is_empty() {
                    let (namespace, name) = split(&r.pod);
                    self.effects.push(Effect::NominatePod {
                        namespace,
                        name,
                        uid: p.uid.clone(),
                        node: r.node.clone(),
                        plan_id: r.id.clone(),
                    });
                }
            }
            DrainProtectionWire::Taint => {
                let Some(n) = snap.node(&r.node) else {
                    return;
                };
                let tainted = has_taint(n, &r.id);
                if r.phase == PlanPhase::Handoff {
                    if tainted {
                        self.push_untaint(n, &r.id);
                    }
                } else if !tainted {
                    self.effects.push(Effect::TaintNode {
                        node: n.name.clone(),
                        uid: n.uid.clone(),
                        plan_id: r.id.clone(),
                    });
                }
            }
        }
    }

    /// Removes what a plan put in place: its nomination (still set to its node on a pod
    /// that is still pending) and its taint.
    fn remove_protection(&mut self, r: &PlanRecord, snap: &ClusterSnapshot) {
        if let Some(p) = pending(snap, &r.pod)
            && p.nominated_node == r.node
            && r.protection == DrainProtectionWire::Nominate
            && (r.pod_uid.is_empty() || p.uid == r.pod_uid)
        {
            let (namespace, name) = split(&r.pod);
            self.effects.push(Effect::ClearNomination {
                namespace,
                name,
                uid: p.uid.clone(),
                node: r.node.clone(),
                plan_id: r.id.clone(),
            });
        }
        if let Some(n) = snap.node(&r.node)
            && has_taint(n, &r.id)
        {
            self.push_untaint(n, &r.id);
        }
    }

    /// Removes the plan's taint from `n`, once a pass: a plan at hand-off (taint lifted) that
    /// the policies then block in the same pass would otherwise remove it twice.
    fn push_untaint(&mut self, n: &Node, plan_id: &str) {
        let already = self.effects.iter().any(|e| {
            matches!(e, Effect::UntaintNode { node, plan_id: id, .. } if *node == n.name && id == plan_id)
        });
        if !already {
            self.effects.push(untaint(n, plan_id));
        }
    }

    /// The protection plans that ended before this pass left in place: reported
    /// ([`PlanBook::left`]) and, in execute mode, removed again (a removal that did not land,
    /// or one recommend-only mode could not make). A taint of alfred's that no plan names (a
    /// plan record lost with a reset journal) is counted, and removed in execute mode.
    fn clean_up(&mut self, snap: &ClusterSnapshot) {
        let ended: Vec<PlanRecord> = self
            .plans
            .iter()
            .filter(|p| p.phase.ended() && !self.ended_now.iter().any(|e| e.id == p.id))
            .cloned()
            .collect();
        for r in &ended {
            let Some(kind) = self.protection_in_place(r, snap) else {
                continue;
            };
            self.left.insert(r.id.clone(), kind);
            if self.may_write {
                self.remove_protection(r, snap);
            }
        }
        let named: BTreeSet<&str> = self.plans.iter().map(|p| p.id.as_str()).collect();
        let mut orphans = Vec::new();
        for n in &snap.nodes {
            for t in n.taints.iter().filter(|t| t.key == DRAIN_TAINT_KEY) {
                if !named.contains(t.value.as_str()) {
                    orphans.push((n, t.value.clone()));
                }
            }
        }
        self.orphan_taints = orphans.len();
        if self.may_write {
            for (n, id) in orphans {
                self.push_untaint(n, &id);
            }
        }
    }

    /// The protection ended plan `r` still has in place, if any: its nomination (still set
    /// to its node on its pod, which still waits) or its taint; what an active plan for the
    /// same node and pod now holds is that plan's, not a leftover.
    fn protection_in_place(&self, r: &PlanRecord, snap: &ClusterSnapshot) -> Option<&'static str> {
        let taken = self
            .active()
            .any(|a| a.id == r.id || (a.node == r.node && a.pod == r.pod));
        if taken {
            return None;
        }
        let nominated = r.protection == DrainProtectionWire::Nominate
            && pending(snap, &r.pod).is_some_and(|p| {
                p.nominated_node == r.node && (r.pod_uid.is_empty() || p.uid == r.pod_uid)
            });
        if nominated {
            return Some("nomination");
        }
        snap.node(&r.node)
            .is_some_and(|n| has_taint(n, &r.id))
            .then_some("taint")
    }

    /// Keeps the ended plans of id `id` under new ids (`<id>.<n>`, the smallest `n` free),
    /// for a new plan of the same node and pod to take the id: the pool's backoff counts
    /// every abandon, and the record's id names the active plan.
    fn set_aside(&mut self, id: &str) {
        for i in 0..self.plans.len() {
            if self.plans[i].id != id || self.plans[i].active() {
                continue;
            }
            let fresh = (1..)
                .map(|n| format!("{id}.{n}"))
                .find(|c| !self.plans.iter().any(|p| p.id == *c))
                .unwrap_or_default();
            self.plans[i].id = fresh;
            self.changed = true;
        }
    }

    /// Drops ended plans past the retention, then the oldest ended ones beyond
    /// [`MAX_PLANS`].
    fn prune(&mut self) {
        let Some(now) = self.now else {
            return self.cap();
        };
        let before = self.plans.len();
        let left = &self.left;
        self.plans.retain(|p| {
            p.active()
                || left.contains_key(&p.id)
                || p.ended_at.is_some_and(|t| now.since(t) < ENDED_RETENTION)
        });
        if self.plans.len() != before {
            self.changed = true;
        }
        self.cap();
    }

    fn cap(&mut self) {
        while self.plans.len() > MAX_PLANS {
            let Some(oldest) = self
                .plans
                .iter()
                .enumerate()
                .filter(|(_, p)| !p.active())
                .min_by(|a, b| a.1.ended_at.cmp(&b.1.ended_at).then(a.1.id.cmp(&b.1.id)))
                .map(|(i, _)| i)
            else {
                return;
            };
            self.plans.remove(oldest);
            self.changed = true;
        }
    }
}

/// Whether `e` puts a plan's protection in place (a nomination or a taint of alfred's).
fn puts_protection(e: &Effect) -> bool {
    matches!(e, Effect::NominatePod { .. } | Effect::TaintNode { .. })
}

/// Under `taint`, the pod the scheduler gave the freed node of a plan at hand-off (its taint
/// lifted) to: the node's room for the plan is gone, and a pod of at least the plan's GPUs
/// that was not running there when the plan started is bound to it (a pod that stays on a
/// larger node through the plan is not the one seated).
fn seated_at_handoff<'s>(
    r: &PlanRecord,
    snap: &'s ClusterSnapshot,
) -> Option<&'s alfred_model::snapshot::Pod> {
    if r.phase != PlanPhase::Handoff || snap.node(&r.node).is_none_or(|n| n.free_gpus >= r.gpus) {
        return None;
    }
    snap.pods.iter().find(|p| {
        p.node == r.node
            && p.gpus >= r.gpus
            && !p.terminating
            && p.started_at.is_none_or(|t| t >= r.started_at)
    })
}

/// The waiting pod plan `r` goes on for when its own no longer waits: asking the plan's
/// GPUs, waiting past `emergencyPendingAgeMinutes`, nominated nowhere, no other active
/// plan's (`taken`), able to take the node ([`alfred_policy::drain::could_take`]); the
/// youngest, as a new plan's pod is chosen (docs/design-policies.md#drain-plans), ties
/// by name.
fn successor<'s>(
    r: &PlanRecord,
    snap: &'s ClusterSnapshot,
    taken: &[&str],
    config: &Config,
    now: Timestamp,
) -> Option<&'s alfred_model::snapshot::PendingPod> {
    let node = snap.node(&r.node)?;
    let age = f64::from(config.emergency_pending_age_minutes);
    snap.pending_pods
        .iter()
        .filter(|p| {
            p.gpus_needed == r.gpus
                && p.nominated_node.is_empty()
                && now.minutes_since(p.pending_since) > age
                && !taken.iter().any(|k| p.has_key(k))
                && alfred_policy::drain::could_take(node, p, &r.pool, &r.id)
        })
        .max_by(|a, b| {
            a.pending_since
                .cmp(&b.pending_since)
                .then_with(|| (&b.namespace, &b.name).cmp(&(&a.namespace, &a.name)))
        })
}

/// Why an active plan ends now, if it does (plans and execution on).
fn judge(
    r: &PlanRecord,
    snap: &ClusterSnapshot,
    journal: &Journal,
    now: Timestamp,
) -> Option<PlanEndReason> {
    let same_pod = |uid: &str| r.pod_uid.is_empty() || uid.is_empty() || uid == r.pod_uid;
    if let Some(p) = bound(snap, &r.pod) {
        if !same_pod(&p.uid) {
            return Some(PlanEndReason::PodGone);
        }
        return Some(if p.node == r.node {
            PlanEndReason::PodBound
        } else {
            PlanEndReason::PodBoundElsewhere
        });
    }
    let Some(p) = pending(snap, &r.pod) else {
        return Some(PlanEndReason::PodGone);
    };
    if !same_pod(&p.uid) {
        return Some(PlanEndReason::PodGone);
    }
    let Some(n) = snap.node(&r.node) else {
        return Some(PlanEndReason::NodeGone);
    };
    if !r.node_uid.is_empty() && !n.uid.is_empty() && n.uid != r.node_uid {
        return Some(PlanEndReason::NodeGone);
    }
    if n.health.state != HealthState::Clear {
        return Some(PlanEndReason::NodeUnhealthy);
    }
    if n.maintenance.requested {
        return Some(PlanEndReason::NodeMaintenance);
    }
    if n.cordoned || n.scale_down_marked {
        return Some(PlanEndReason::NodeCordoned);
    }
    // The test a new plan's node passes: ready, and the pod's selector, required affinity
    // and tolerations allow it (the plan's own taint aside).
    if !alfred_policy::drain::could_take(n, p, &r.pool, &r.id) {
        return Some(PlanEndReason::NodeUnusable);
    }
    for s in r.steps.iter().filter(|s| !s.request_uuid.is_empty()) {
        match journal
            .entries
            .iter()
            .find(|e| e.uuid == s.request_uuid)
            .map(|e| e.phase)
        {
            Some(Phase::Failed) => return Some(PlanEndReason::StepFailed),
            Some(Phase::Stalled) => return Some(PlanEndReason::StepStalled),
            _ => {}
        }
    }
    if r.protection == DrainProtectionWire::Nominate
        && !p.nominated_node.is_empty()
        && p.nominated_node != r.node
    {
        return Some(PlanEndReason::NominationTaken);
    }
    if now >= r.deadline {
        return Some(PlanEndReason::DeadlineExceeded);
    }
    None
}

/// The phase of an active plan that goes on: hand-off once the node has room for the pod
/// and no step is still moving; draining once a step was asked; else protecting.
fn phase_now(r: &PlanRecord, snap: &ClusterSnapshot, journal: &Journal) -> PlanPhase {
    let moving = r.steps.iter().any(|s| {
        journal
            .entries
            .iter()
            .find(|e| e.uuid == s.request_uuid)
            .is_some_and(|e| !e.phase.is_terminal())
    });
    let room = snap.node(&r.node).is_some_and(|n| n.free_gpus >= r.gpus);
    if room && !moving {
        PlanPhase::Handoff
    } else if r.phase == PlanPhase::Handoff && !room {
        // Someone took the room back: drain again (the policies re-plan it).
        PlanPhase::Draining
    } else if r.phase == PlanPhase::Protecting && protected(r, snap) {
        PlanPhase::Draining
    } else {
        r.phase
    }
}

/// Whether the plan's protection is in place.
fn protected(r: &PlanRecord, snap: &ClusterSnapshot) -> bool {
    match r.protection {
        DrainProtectionWire::None => true,
        DrainProtectionWire::Nominate => {
            pending(snap, &r.pod).is_some_and(|p| p.nominated_node == r.node)
        }
        DrainProtectionWire::Taint => snap.node(&r.node).is_some_and(|n| has_taint(n, &r.id)),
    }
}

fn minutes(now: Timestamp, since: Timestamp) -> u64 {
    let m = now.minutes_since(since);
    if m.is_finite() && m > 0.0 {
        m as u64
    } else {
        0
    }
}

fn split(key: &str) -> (String, String) {
    let (ns, name) = key.split_once('/').unwrap_or(("", key));
    (ns.to_owned(), name.to_owned())
}

fn pending<'s>(
    snap: &'s ClusterSnapshot,
    key: &str,
) -> Option<&'s alfred_model::snapshot::PendingPod> {
    snap.pending_pod_by_key(key)
}

fn bound<'s>(snap: &'s ClusterSnapshot, key: &str) -> Option<&'s alfred_model::snapshot::Pod> {
    snap.bound_pod_by_key(key)
}

/// Whether a GPU pod landed on plan `r`'s node since the plan started (a pod with no start
/// time yet has just been bound).
fn landed_since_start(r: &PlanRecord, snap: &ClusterSnapshot) -> bool {
    snap.pods.iter().any(|p| {
        p.node == r.node
            && p.gpus > 0
            && !p.terminating
            && p.started_at.is_none_or(|t| t >= r.started_at)
    })
}

/// Whether `e` writes or lifts plan `id`'s protection.
fn protects(e: &Effect, id: &str) -> bool {
    matches!(e, Effect::NominatePod { plan_id, .. } | Effect::TaintNode { plan_id, .. }
        | Effect::UntaintNode { plan_id, .. } if plan_id == id)
}

fn has_taint(n: &Node, plan_id: &str) -> bool {
    n.taints
        .iter()
        .any(|t| t.key == DRAIN_TAINT_KEY && t.value == plan_id)
}

fn untaint(n: &Node, plan_id: &str) -> Effect {
    Effect::UntaintNode {
        node: n.name.clone(),
        uid: n.uid.clone(),
        plan_id: plan_id.to_owned(),
    }
}

/// An Event on a plan's node; its type is the reason's.
fn node_event(snap: &ClusterSnapshot, node: &str, reason: EventReason, message: String) -> Effect {
    Effect::RecordEvent(Event {
        regarding: ObjectRef {
            api_version: "v1".into(),
            kind: "Node".into(),
            namespace: String::new(),
            name: node.to_owned(),
            uid: snap.node(node).map(|n| n.uid.clone()).unwrap_or_default(),
        },
        event_type: reason.event_type(),
        reason: reason.as_str().into(),
        message,
    })
}

fn plan_counter(pool: &str, outcome: &'static str, reason: &'static str) -> Effect {
    Effect::Metric(MetricUpdate {
        name: alfred_model::metric::MetricId::DrainPlans.name().into(),
        labels: vec![
            ("pool".into(), pool.to_owned().into()),
            ("outcome".into(), outcome.into()),
            ("reason".into(), reason.into()),
        ],
        change: MetricChange::Inc(1),
    })
}

#[cfg(test)]
mod state_tests;
#[cfg(test)]
mod tests;
