//! The decision pass as a resumable machine, in the style of a sans-IO protocol state:
//! the pass never waits for the driver's IO. Where it needs the cluster again (the
//! execute-mode re-check's fresh looks, docs/design-pass.md#pre-submit-re-check steps 1 and 12)
//! or a scheduling simulation (docs/design-pass.md#prediction-stage, re-check step 10), it
//! stops and says so ([`PassRun::poll`] → [`Step`]); the driver makes the look or runs the
//! simulation however it likes (a recorded cluster, the in-process model, uncached reads
//! and worker processes awaited on an async runtime) and hands the answer back
//! ([`PassRun::handle_look`], [`PassRun::handle_simulation`]). Everything the pass computed
//! so far stays in the run between steps.
//!
//! [`drive`] is the synchronous driver over the [`FreshObserver`] and [`Simulator`]
//! ports, for drivers whose answers come without waiting (replay, the twin, tests).

use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::Arc;

use alfred_model::config::{Config, Mode, RuntimeOptions};
use alfred_model::effect::{Effect, ObjectRef};
use alfred_model::event::EventReason;
use alfred_model::record::{AdviceCount, Candidate, NodeRecord, Verdict};
use alfred_model::{ClusterSnapshot, Timestamp};
use alfred_policy::CountedAdvice;
use alfred_policy::NodeMarker;
use alfred_policy::drain::DrainProposal;

use crate::decision_log::SimulationRecord;
use crate::dispatch::drain::{PlanBook, ReviewInput};
use crate::dispatch::guard::GuardObservation;
use crate::dispatch::journal::Journal;
use crate::dispatch::recheck::{FreshObserver, Prepared, Proposal};
use crate::dispatch::{Decision, Dispatch, DispatchCtx, DispatchOutcome, JournalSlot, Need};
use crate::pass::stages::{ArbiterInput, PoolGauge, Stages};
use crate::pass::{DurableState, PassOutput, Session};
use crate::report;
use crate::report::pass_report::{PassReport, report_pass};
use crate::simulation::schedule::{Prediction, gate_and_plan_predictions, record_prediction};
use crate::simulation::sim::{MoveSimulation, SimulationOutcome, Simulator};

/// A value the pass reads, lent by the driver for the run's lifetime or shared with it.
/// A run over lent values lives as long as the loan (the synchronous drivers); a run
/// over shared ones is `'static` and can move between threads (an async driver that
/// runs each step on a blocking pool).
pub enum Held<'a, T: ?Sized> {
    /// Borrowed from the driver.
    Lent(&'a T),
    /// Shared with the driver.
    Shared(Arc<T>),
}

impl<T: ?Sized> Clone for Held<'_, T> {
    fn clone(&self) -> Self {
        match self {
            Held::Lent(r) => Held::Lent(r),
            Held::Shared(a) => Held::Shared(a.clone()),
        }
    }
}

impl<T: ?Sized> Deref for Held<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            Held::Lent(r) => r,
            Held::Shared(a) => a,
        }
    }
}

impl<'a, T> From<&'a T> for Held<'a, T> {
    fn from(r: &'a T) -> Self {
        Held::Lent(r)
    }
}

impl<'a, T> From<&'a Arc<T>> for Held<'a, T> {
    fn from(r: &'a Arc<T>) -> Self {
        Held::Lent(&**r)
    }
}

impl<T> From<Arc<T>> for Held<'_, T> {
    fn from(a: Arc<T>) -> Self {
        Held::Shared(a)
    }
}

/// What the pass needs next.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // returned by value once per step and matched at once
pub enum Step<'p> {
    /// A fresh look at the cluster: a snapshot from uncached reads with the pass's
    /// configuration, dated by the driver's clock (`observed_at`). Answer with
    /// [`PassRun::handle_look`] (`None`: it could not be made, `ObservationUnavailable`).
    Look,
    /// Where would this move's replacement pods land? Answer with
    /// [`PassRun::handle_simulation`] (`answered_at`: when, by the driver's clock).
    Simulate(MoveSimulation<'p>),
    /// The pass is over: take its output ([`crate::Caretaker::finish`],
    /// [`PassRun::into_output`]).
    Done,
}

/// Everything one run reads, lent or shared.
pub(crate) struct RunInput<'a> {
    pub snapshot: Held<'a, ClusterSnapshot>,
    pub config: Held<'a, Config>,
    pub runtime: RuntimeOptions,
    pub namespace: String,
    pub config_map_name: String,
    pub state: Held<'a, DurableState>,
    pub previous_node_records: Held<'a, BTreeMap<String, NodeRecord>>,
    pub guard: Held<'a, GuardObservation>,
    pub uuids: Vec<String>,
    pub config_changed: bool,
    pub deadline: Option<Timestamp>,
    pub now: Timestamp,
    /// The re-check's first look when the cluster cannot change during the pass
    /// (`Some(None)`: it could not be built); `None`: the cluster is live, the driver is
    /// asked for both looks.
    pub frozen_look: Option<Option<Held<'a, ClusterSnapshot>>>,
}

/// What the driver must answer before the run goes on.
enum Pending<'a> {
    /// A look (the first or the second: [`Dispatch::wants_second_look`] tells).
    Look,
    /// A simulation of the move `ask` against the look `on` (a re-check's answer moves
    /// the pass's clock, a prediction's does not).
    Simulate {
        ask: Ask,
        on: Held<'a, ClusterSnapshot>,
    },
}

/// The move a pending simulation is about.
enum Ask {
    Prediction(Box<Prediction>),
    Recheck(Box<Prepared>),
}

impl Ask {
    fn simulation<'s>(&self, on: &'s ClusterSnapshot) -> MoveSimulation<'s> {
        match self {
            Ask::Prediction(p) => p.simulation(on),
            Ask::Recheck(p) => p.simulation(on),
        }
    }
}

/// What the policies proposed, carried to the report.
struct Proposed {
    pools: Vec<PoolGauge>,
    node_markers: Vec<NodeMarker>,
    drain: DrainProposal,
    book: PlanBook,
    /// The recommend-only scheduling annotation ran (nothing can be dispatched).
    annotated: bool,
    /// The walk's advice rows, counted (`Telemetry::DecisionsCountingAdvice`).
    advice_counts: Vec<AdviceCount>,
    /// Those rows, for the dispatcher (taken when it starts).
    counted_advice: CountedAdvice,
}

/// Where the run stands.
enum Stage {
    Start,
    Predicting {
        proposed: Proposed,
        candidates: Vec<Candidate>,
        predictions: Vec<Prediction>,
        next: usize,
    },
    Dispatching {
        proposed: Proposed,
        dispatch: Box<Dispatch>,
        proposal: Option<Proposal>,
    },
    Reporting {
        proposed: Proposed,
        decisions: Vec<Decision>,
        dispatched: Option<DispatchOutcome>,
    },
    Done(Box<PassOutput>),
    Taken,
}

/// One decision pass in progress (see the module docs). Made by
/// [`crate::Caretaker::begin`] (or [`crate::run_pass`]); driven with [`PassRun::poll`] and
/// the `handle_*` answers until [`Step::Done`].
pub struct PassRun<'a> {
    input: RunInput<'a>,
    stages: Held<'a, dyn Stages + Send + Sync + 'a>,
    session: Session,
    failed_requests: Vec<String>,
    effects: Vec<Effect>,
    simulations: Vec<SimulationRecord>,
    /// The latest time a re-check's look or simulation answer reported.
    latest: Option<Timestamp>,
    /// The re-check's first look once known (`Some(None)`: unavailable).
    first_look: Option<Option<Held<'a, ClusterSnapshot>>>,
    pending: Option<Pending<'a>>,
    stage: Stage,
}

impl std::fmt::Debug for PassRun<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PassRun")
            .field("now", &self.input.now)
            .field("simulations", &self.simulations.len())
            .finish_non_exhaustive()
    }
}

impl<'a> PassRun<'a> {
    pub(crate) fn new(
        input: RunInput<'a>,
        stages: Held<'a, dyn Stages + Send + Sync + 'a>,
        session: &Session,
    ) -> PassRun<'a> {
        let mut session = session.clone();
        // Consumed by this pass (see [`Session::failed_requests`]).
        let failed_requests = std::mem::take(&mut session.failed_requests);
        PassRun {
            first_look: input.frozen_look.clone(),
            input,
            stages,
            session,
            failed_requests,
            effects: Vec::new(),
            simulations: Vec::new(),
            latest: None,
            pending: None,
            stage: Stage::Start,
        }
    }

    /// The pass's start (what [`FreshObserver::observe_again`] is given).
    pub fn now(&self) -> Timestamp {
        self.input.now
    }

    /// Runs the pass until it needs an answer from the driver or ends. Calling it again
    /// before answering returns the same step.
    pub fn poll(&mut self) -> Step<'_> {
        while self.pending.is_none() && !matches!(self.stage, Stage::Done(_) | Stage::Taken) {
            self.advance();
        }
        match &self.pending {
            None => Step::Done,
            Some(Pending::Look) => Step::Look,
            Some(Pending::Simulate { ask, on }) => Step::Simulate(ask.simulation(on)),
        }
    }

    /// The answer to [`Step::Look`]. A look the pass did not ask for is ignored.
    pub fn handle_look(&mut self, look: Option<Arc<ClusterSnapshot>>) {
        if !matches!(self.pending, Some(Pending::Look)) {
            return;
        }
        self.pending = None;
        self.saw(look.as_ref().map(|s| s.observed_at));
        match &mut self.stage {
            Stage::Dispatching { dispatch, .. } if dispatch.wants_second_look() => {
                dispatch.looked_again(look);
            }
            _ => self.first_look = Some(look.map(Held::Shared)),
        }
    }

    /// The answer to [`Step::Simulate`]. An answer the pass did not ask for is ignored.
    pub fn handle_simulation(&mut self, outcome: SimulationOutcome) {
        let Some(Pending::Simulate { ask, on }) = self.pending.take() else {
            return;
        };
        self.simulations
            .push(SimulationRecord::of(&ask.simulation(&on), &outcome));
        match (ask, &mut self.stage) {
            (
                Ask::Prediction(p),
                Stage::Predicting {
                    candidates, next, ..
                },
            ) => {
                record_prediction(candidates, &p, outcome);
                *next += 1;
            }
            (Ask::Recheck(_), Stage::Dispatching { dispatch, .. }) => {
                self.latest = max_time(self.latest, outcome.answered_at);
                dispatch.simulated(outcome);
            }
            _ => {}
        }
    }

    /// The output once [`Step::Done`]; the run back before.
    pub fn into_output(mut self) -> Result<PassOutput, Box<PassRun<'a>>> {
        match std::mem::replace(&mut self.stage, Stage::Taken) {
            Stage::Done(out) => Ok(*out),
            other => {
                self.stage = other;
                Err(Box::new(self))
            }
        }
    }

    fn saw(&mut self, at: Option<Timestamp>) {
        self.latest = max_time(self.latest, at);
    }

    /// The pass's time: its start, or the latest time a port reported since.
    fn time(&self) -> Timestamp {
        self.latest
            .map_or(self.input.now, |l| l.max(self.input.now))
    }

    /// One stage forward, or up to the next question.
    fn advance(&mut self) {
        match std::mem::replace(&mut self.stage, Stage::Taken) {
            Stage::Start => self.stage = self.propose(),
            Stage::Predicting {
                proposed,
                candidates,
                predictions,
                next,
            } => match predictions.get(next) {
                Some(p) => {
                    self.pending = Some(Pending::Simulate {
                        ask: Ask::Prediction(Box::new(p.clone())),
                        on: self.input.snapshot.clone(),
                    });
                    self.stage = Stage::Predicting {
                        proposed,
                        candidates,
                        predictions,
                        next,
                    };
                }
                None => self.stage = self.arbitrate(proposed, candidates),
            },
            Stage::Dispatching {
                proposed,
                mut dispatch,
                proposal,
            } => {
                let need = {
                    let ctx = self.dispatch_ctx(proposal.as_ref());
                    dispatch.advance(&ctx, &self.session.breaker)
                };
                match need {
                    Need::FirstLook | Need::SecondLook => self.pending = Some(Pending::Look),
                    Need::Simulation => {
                        let on = self.first_look.clone().flatten();
                        if let (Some(on), Some(p)) = (on, dispatch.prepared()) {
                            self.pending = Some(Pending::Simulate {
                                ask: Ask::Recheck(Box::new(p.clone())),
                                on,
                            });
                        }
                    }
                    Need::Nothing => {
                        let outcome = dispatch.finish();
                        self.stage = Stage::Reporting {
                            proposed,
                            decisions: Vec::new(),
                            dispatched: Some(outcome),
                        };
                        return;
                    }
                }
                self.stage = Stage::Dispatching {
                    proposed,
                    dispatch,
                    proposal,
                };
            }
            Stage::Reporting {
                proposed,
                decisions,
                dispatched,
            } => {
                let out = self.report(proposed, decisions, dispatched);
                self.stage = Stage::Done(Box::new(out));
            }
            done @ (Stage::Done(_) | Stage::Taken) => self.stage = done,
        }
    }

    /// The dispatcher's view of the run.
    fn dispatch_ctx<'s>(&'s self, proposal: Option<&'s Proposal>) -> DispatchCtx<'s> {
        let input = &self.input;
        DispatchCtx {
            stages: &*self.stages,
            snapshot: &input.snapshot,
            proposed: proposal,
            first_look: self
                .first_look
                .as_ref()
                .map(|look| look.as_ref().map(|s| &**s)),
            live: input.frozen_look.is_none(),
            config: &input.config,
            runtime: &input.runtime,
            namespace: &input.namespace,
            guard: &input.guard,
            config_changed: input.config_changed,
            deadline: input.deadline,
            failed_requests: &self.failed_requests,
            uuids: &input.uuids,
            now: input.now,
            time: self.time(),
        }
    }

    /// The pass up to the policies' proposal (docs/design-pass.md#pass-pipeline steps 2–4):
    /// the OMENative state report, the drain plans' review, scores and proposal, and the
    /// recommend-only scheduling gate with the predictions to ask.
    fn propose(&mut self) -> Stage {
        let input = &self.input;
        let snap = &*input.snapshot;
        let cfg = &*input.config;
        let dispatcher = input.runtime.executor_available();
        // 2. OMENative state report.
        if !dispatcher {
            if !self.session.omenative_unavailable_reported {
                self.session.omenative_unavailable_reported = true;
                self.effects.push(omenative_unavailable_event(input));
            }
        } else {
            self.session.omenative_unavailable_reported = false;
        }
        // Drain plans of the dispatch state (docs/design-policies.md#drain-plans): end what
        // cannot go on, before the policies re-plan the rest.
        let empty_journal = Journal::empty();
        // An unreadable journal stops every write, the plans' too (docs/design-pass.md#invariants).
        let plans_journal = match &input.state.journal {
            JournalSlot::Readable(j) => Some(j),
            JournalSlot::Missing => Some(&empty_journal),
            JournalSlot::Unreadable { .. } => None,
        };
        let mut book = PlanBook::review(&ReviewInput {
            snapshot: snap,
            config: cfg,
            journal: plans_journal,
            executing: dispatcher && cfg.mode == Mode::Execute,
            execute_mode: cfg.mode == Mode::Execute,
            now: input.now,
        });
        // Pool scores; 3. Propose.
        let (pools, proposed) =
            self.stages
                .score_and_propose(snap, cfg, &input.runtime, &book.plans, input.now);
        let alfred_policy::Proposal {
            mut candidates,
            node_markers,
            drain,
            counted_advice,
        } = proposed;
        book.block(&drain.blocked, snap, input.now);
        // A plan's step waits while the plan's earlier step is in flight.
        book.hold_waiting_steps(
            &mut candidates,
            journal_read(&input.state).unwrap_or(&empty_journal),
            cfg,
            (snap, input.now, input.runtime.migration_ack_timeout),
        );
        // 4. Scheduling annotation: recommend-only or no dispatcher.
        let annotated = !dispatcher || cfg.mode != Mode::Execute;
        let predictions = if annotated {
            let simulate = input.runtime.simulation_configured;
            gate_and_plan_predictions(&mut candidates, snap, cfg, simulate, input.now)
        } else {
            Vec::new()
        };
        Stage::Predicting {
            proposed: Proposed {
                pools,
                node_markers,
                drain,
                book,
                annotated,
                advice_counts: counted_advice.counts(),
                counted_advice,
            },
            candidates,
            predictions,
            next: 0,
        }
    }

    /// Step 5's admission, then (with an executor) the dispatcher's start: the follow-up
    /// and the choice of work.
    fn arbitrate(&mut self, mut proposed: Proposed, candidates: Vec<Candidate>) -> Stage {
        let input = &self.input;
        let dispatcher = input.runtime.executor_available();
        // The journal as read, with the plans as the policies left them (the read ones are
        // not copied only to be replaced).
        let journal_for_arbiter = match journal_read(&input.state) {
            Some(j) => Journal {
                version: j.version.clone(),
                entries: j.entries.clone(),
                backoff_until: j.backoff_until,
                plans: proposed.book.plans.clone(),
            },
            None => Journal {
                plans: proposed.book.plans.clone(),
                ..Journal::empty()
            },
        };
        let verdicts = self.stages.arbitrate(&ArbiterInput {
            candidates: &candidates,
            snapshot: &input.snapshot,
            config: &input.config,
            journal: &journal_for_arbiter,
            breaker: &self.session.breaker,
            now: input.now,
        });
        let order: Vec<usize> = verdicts.iter().map(|(i, _)| *i).collect();
        let mut by_index: BTreeMap<usize, Verdict> = verdicts.into_iter().collect();
        // The bare proposal, for the re-check (not needed when nothing can be dispatched).
        let proposal = (dispatcher && !proposed.annotated).then(|| Proposal::new(&candidates));
        // Room for the journal's rows the dispatcher merges in after the candidates' (at most
        // one per entry and the pass's new one): a push past the capacity would move every
        // decision (thousands of a few hundred bytes) into a new allocation.
        let mut decisions: Vec<Decision> =
            Vec::with_capacity(candidates.len() + journal_for_arbiter.entries.len() + 1);
        decisions.extend(candidates.into_iter().enumerate().map(|(i, c)| {
            let v = by_index.remove(&i);
            (c, v)
        }));
        if !dispatcher {
            return Stage::Reporting {
                proposed,
                decisions,
                dispatched: None,
            };
        }
        let mut breaker = std::mem::take(&mut self.session.breaker);
        let dispatch = {
            let ctx = self.dispatch_ctx(proposal.as_ref());
            Dispatch::start(
                &ctx,
                decisions,
                order,
                &self.input.state.journal,
                &mut breaker,
                std::mem::take(&mut proposed.counted_advice),
            )
        };
        self.session.breaker = breaker;
        Stage::Dispatching {
            proposed,
            dispatch: Box::new(dispatch),
            proposal,
        }
    }

    /// After dispatch: the drain plans' bookkeeping and protection writes, then the
    /// report (docs/design-pass.md#pass-pipeline steps 6–7).
    fn report(
        &mut self,
        proposed: Proposed,
        decisions: Vec<Decision>,
        dispatched: Option<DispatchOutcome>,
    ) -> PassOutput {
        let input = &self.input;
        let (snap, cfg) = (&*input.snapshot, &*input.config);
        let mut effects = std::mem::take(&mut self.effects);
        // The dispatcher's journal, else the one read.
        let (mut journal, decisions, journal_error, uuids_used) = match dispatched {
            Some(out) => {
                effects.extend(out.effects);
                (
                    out.journal,
                    out.decisions,
                    out.journal_error,
                    out.uuids_used,
                )
            }
            None => (input.state.journal.clone(), decisions, None, 0),
        };
        let Proposed {
            pools,
            node_markers,
            drain,
            mut book,
            advice_counts,
            ..
        } = proposed;
        // Plan steps submitted start or extend their plans; then the plans' journal write,
        // protection writes, Events and gauges (after the request and its journal save).
        let executing = input.runtime.executor_available() && cfg.mode == Mode::Execute;
        book.after_dispatch(
            &decisions,
            &drain.plans,
            cfg,
            snap,
            journal_read(&input.state),
            input.now,
            executing,
        );
        // The phases as this pass's follow-up left the steps.
        if let JournalSlot::Readable(j) = &journal {
            book.settle(snap, j);
        }
        let plan_views = book.views(&drain.plans, input.now);
        let plans_on = cfg.policies.defragmentation.enabled
            && cfg.policies.defragmentation.drain_plans.enabled;
        let gauge_pools = if plans_on { snap.pools() } else { Vec::new() };
        // Saved with or without an executor: a plan that ended because the executor went
        // away ends once, and does not resume when it returns.
        let writable = match &journal {
            JournalSlot::Readable(j) => Some(j),
            _ => None,
        };
        let (plans_now, plan_effects) = book.finish(writable, &gauge_pools);
        if let JournalSlot::Readable(j) = &mut journal {
            j.plans = plans_now;
        }
        effects.extend(plan_effects);
        if !input.runtime.telemetry.is_full() {
            // The few metric updates of the dispatch and the plans (the report builds none).
            effects.retain(|e| !e.is_telemetry());
        }
        let reported = report_pass(
            &PassReport {
                snapshot: snap,
                config: cfg,
                runtime: &input.runtime,
                stored_node_records: &input.state.node_records,
                previous_node_records: &input.previous_node_records,
                node_markers: &node_markers,
                pools: &pools,
                plan_views,
                breaker_open: self.session.breaker.is_open(input.now),
                now: input.now,
            },
            &decisions,
            &mut effects,
        );
        let new_state = DurableState {
            journal,
            node_records: reported.node_records.clone(),
            verbatim: input.state.verbatim.clone(),
        };
        let explain = decisions
            .into_iter()
            .map(|(candidate, verdict)| crate::pass::Explained { candidate, verdict })
            .collect();
        PassOutput {
            record: reported.record,
            node_records: reported.node_records,
            effects,
            new_state,
            session: self.session.clone(),
            pools,
            explain,
            journal_error,
            uuids_offered: input.uuids.clone(),
            uuids_used,
            simulations: std::mem::take(&mut self.simulations),
            if_final_save_fails: reported.if_final_save_fails,
            advice_counts,
        }
    }
}

fn max_time(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn journal_read(state: &DurableState) -> Option<&Journal> {
    match &state.journal {
        JournalSlot::Readable(j) => Some(j),
        _ => None,
    }
}

/// The Event that says no migration executor is there (once per degraded period).
fn omenative_unavailable_event(input: &RunInput<'_>) -> Effect {
    Effect::RecordEvent(alfred_model::effect::Event {
        regarding: ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: input.namespace.clone(),
            name: input.config_map_name.clone(),
            uid: String::new(),
        },
        event_type: EventReason::OMENativeUnavailable.event_type(),
        reason: EventReason::OMENativeUnavailable.as_str().into(),
        message: report::OMENATIVE_UNAVAILABLE_MESSAGE.into(),
    })
}

/// Drives `run` to its end with synchronous answers: looks from `observer` (`None`: every
/// look is unavailable — a run over a frozen cluster never asks), simulations from
/// `simulator`.
pub fn drive(
    run: &mut PassRun<'_>,
    observer: Option<&dyn FreshObserver>,
    simulator: &mut dyn Simulator,
) {
    let now = run.now();
    loop {
        match run.poll() {
            Step::Done => return,
            Step::Look => {
                let look = observer.and_then(|o| o.observe_again(now));
                run.handle_look(look);
            }
            Step::Simulate(request) => {
                let outcome = simulator.simulate(&request);
                run.handle_simulation(outcome);
            }
        }
    }
}
