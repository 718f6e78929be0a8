//! The decision pass: one entry point composing score → policies → (recommend-only:
//! scheduling gate and ≤ 8 predictions) → arbiter → dispatch → report
//! (docs/design-pass.md#pass-pipeline).

use std::collections::BTreeMap;

use alfred_model::config::{Config, Mode, RuntimeOptions};
use alfred_model::effect::{Effect, ObjectRef};
use alfred_model::event::EventReason;
use alfred_model::reason::DispatchReason;
use alfred_model::record::{Candidate, LastCycle, NodeRecord, Verdict};
use alfred_model::{ClusterSnapshot, Timestamp};
use serde::{Deserialize, Serialize};

use crate::dispatch::{Breaker, Decision, DispatchCtx, JournalSlot, execute};
use crate::drain::{PlanBook, ReviewInput};
use crate::guard::GuardObservation;
use crate::journal::Journal;
use crate::preflight::{FreshLooks, Looks, Proposal};
use crate::report;
use crate::sim::Simulator;
use crate::stages::{ArbiterInput, PoolGauge, Stages};

/// Version of the [`DurableState`] document.
pub const DURABLE_STATE_VERSION: &str = "alfred-state/v1";

/// What survives a pass and a change of leader (the file `alfred replay --state FILE`
/// reads and writes; see `STATE.md`).
///
/// ```json
/// {"version":"alfred-state/v1",
///  "journal":{"version":"v1","entries":[…],"backoffUntil":"…"},   // state.json, as is
///  "nodeRecords":{"gpu-a":{…node record…}}}
/// ```
///
/// * `journal` is exactly the `state.json` document of the `alfred-dispatch-state`
///   ConfigMap; `null` or absent = no journal (a fresh install without migration).
///   It is also the dispatch ledger of docs/design.md#ledger: every request alfred made, with
///   its source and simulated targets, its creation and end — claims, node cooling and
///   alfred's own hourly count are derived from it, so they survive a leader change.
/// * `nodeRecords` are the `node.<name>` records of the recommendations ConfigMap (the
///   seed for node-event lifecycles).
/// * The circuit breaker is **not** here: a new leader starts the count afresh (15.3).
///
/// A file that is not this document (or a bare `state.json`) is kept verbatim: the
/// journal is then unreadable, execution withholds with `JournalUnavailable`, and
/// [`DurableState::to_text`] writes the original bytes back.
#[derive(Debug, Clone, PartialEq)]
pub struct DurableState {
    /// The journal.
    pub journal: JournalSlot,
    /// The stored node records, by node name.
    pub node_records: BTreeMap<String, NodeRecord>,
    /// The original text when the document could not be read at all.
    pub verbatim: Option<String>,
}

impl Default for DurableState {
    fn default() -> Self {
        DurableState {
            journal: JournalSlot::Readable(Journal::empty()),
            node_records: BTreeMap::new(),
            verbatim: None,
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StateWire {
    version: String,
    #[serde(default)]
    journal: Option<serde_json::Value>,
    #[serde(default)]
    node_records: BTreeMap<String, NodeRecord>,
}

impl DurableState {
    /// Reads a state file (a `DurableState` document or a bare `state.json`).
    pub fn from_text(text: &str) -> DurableState {
        let unreadable = |error: String| DurableState {
            journal: JournalSlot::Unreadable {
                text: text.to_owned(),
                error: crate::journal::clip(&error, 280),
            },
            node_records: BTreeMap::new(),
            verbatim: Some(text.to_owned()),
        };
        let value = match crate::strict_json::parse_strict(text) {
            Ok(v) => v,
            Err(e) => return unreadable(format!("state file is not strict JSON: {e}")),
        };
        if value.get("entries").is_some() {
            let journal = JournalSlot::from_state_json(Some(text));
            let verbatim = match &journal {
                JournalSlot::Readable(_) => None,
                _ => Some(text.to_owned()),
            };
            return DurableState {
                journal,
                node_records: BTreeMap::new(),
                verbatim,
            };
        }
        let wire: StateWire = match serde_json::from_value(value) {
            Ok(w) => w,
            Err(e) => return unreadable(format!("state file: {e}")),
        };
        if wire.version != DURABLE_STATE_VERSION {
            return unreadable(format!("state file version {:?} is unknown", wire.version));
        }
        let journal = match wire.journal {
            None | Some(serde_json::Value::Null) => JournalSlot::Missing,
            Some(v) => {
                let raw = serde_json::to_string(&v).unwrap_or_default();
                match Journal::from_value(v) {
                    Ok(j) => JournalSlot::Readable(j),
                    Err(e) => JournalSlot::Unreadable {
                        text: raw,
                        error: e.to_string(),
                    },
                }
            }
        };
        DurableState {
            journal,
            node_records: wire.node_records,
            verbatim: None,
        }
    }

    /// Writes the state file (the original bytes when it could not be read).
    pub fn to_text(&self) -> String {
        if let Some(v) = &self.verbatim {
            return v.clone();
        }
        let journal = match &self.journal {
            JournalSlot::Missing => None,
            JournalSlot::Readable(j) => serde_json::to_value(j).ok(),
            JournalSlot::Unreadable { text, .. } => {
                Some(serde_json::from_str(text).unwrap_or(serde_json::Value::String(text.clone())))
            }
        };
        let wire = StateWire {
            version: DURABLE_STATE_VERSION.into(),
            journal,
            node_records: self.node_records.clone(),
        };
        serde_json::to_string_pretty(&wire).unwrap_or_default()
    }
}

/// In-memory state of one leadership term (lost on a leader change, by design).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Session {
    /// The circuit breaker.
    pub breaker: Breaker,
    /// `OMENativeUnavailable` was already reported in this degraded period.
    pub omenative_unavailable_reported: bool,
    /// UUIDs whose [`Effect::RequestMigration`] the adapter's applier reported **not**
    /// applied in the previous pass (an error, a conflict, a timeout: the write may or
    /// may not have landed). [`crate::Caretaker::write_done`] fills it from the
    /// applier's results before the next pass; empty (the default) changes nothing.
    ///
    /// It completes docs/design-pass.md#dispatch-pass `attempt()` step 5–6 across the pass boundary
    /// (the pure pass cannot observe its own write): if the next pass's follow-up
    /// (docs/design-pass.md#follow-up) still finds that entry `prepared` (no annotation, no status
    /// row, not yet stalled), the entry is saved as `prepared/SubmissionUncertain` and its row
    /// shows `withheld/SubmissionUncertain`; that pass does not retry it (the reference
    /// records the failure in the pass that wrote; the retry belongs to the pass after).
    /// If the annotation did land, the follow-up reports `RequestAnnotationObserved`
    /// and this list is ignored. [`run_pass`] consumes it: the output session's list
    /// is empty. Lost on a leader change, like the rest of the session (the new leader
    /// learns the truth from the cluster).
    pub failed_requests: Vec<String>,
}

/// Everything one pass reads.
pub struct PassInput<'a> {
    /// The pass's snapshot.
    pub snapshot: &'a ClusterSnapshot,
    /// Where the execute-mode re-check's fresh observations come from
    /// (docs/design-pass.md#pre-submit-re-check steps 1 and 12): [`FreshLooks::Frozen`] with a
    /// snapshot when the cluster cannot change during the pass, [`FreshLooks::Observe`] to observe
    /// on demand.
    pub fresh: FreshLooks<'a>,
    /// Configuration (one object for the whole pass).
    pub config: &'a Config,
    /// Validated flags.
    pub runtime: &'a RuntimeOptions,
    /// alfred's namespace (guard username, config ConfigMap events).
    pub namespace: &'a str,
    /// Name of the config ConfigMap (`--config-name`).
    pub config_map_name: &'a str,
    /// Durable state: the journal as read (and the stored node records).
    pub state: &'a DurableState,
    /// The previous node records (seed; usually `state.node_records`).
    pub previous_node_records: &'a BTreeMap<String, NodeRecord>,
    /// The guard objects as read this pass.
    pub guard: &'a GuardObservation,
    /// Pre-generated lower-case v4 UUIDs; at most one is used per pass.
    pub uuids: &'a [String],
    /// A newer configuration arrived while the pass ran.
    pub config_changed: bool,
    /// The dispatch deadline, if tracked.
    pub deadline: Option<Timestamp>,
    /// Now.
    pub now: Timestamp,
}

/// Candidates with their verdicts (`replay --format json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explained {
    /// The candidate.
    pub candidate: Candidate,
    /// Its verdict, when it reached the arbiter or the journal.
    pub verdict: Option<Verdict>,
}

/// Everything one pass produces.
#[derive(Debug, Clone, PartialEq)]
pub struct PassOutput {
    /// `last-cycle.json`.
    pub record: LastCycle,
    /// The node records now.
    pub node_records: BTreeMap<String, NodeRecord>,
    /// Effects, in the order to apply them.
    pub effects: Vec<Effect>,
    /// The durable state after the pass (assuming every write effect succeeded).
    pub new_state: DurableState,
    /// The session to carry into the next pass.
    pub session: Session,
    /// Pool scores.
    pub pools: Vec<PoolGauge>,
    /// Candidates and verdicts.
    pub explain: Vec<Explained>,
    /// Why the journal could not be used, for the log.
    pub journal_error: Option<String>,
    /// The UUIDs the pass was offered (the first `uuids_used` of them used).
    pub uuids_offered: Vec<String>,
    /// UUIDs consumed from `uuids`.
    pub uuids_used: usize,
    /// Every simulation the pass asked for, as answered, in order (the decision log's).
    pub simulations: Vec<crate::decision_log::SimulationRecord>,
    /// What to write instead when the journal save after the request fails.
    pub if_final_save_fails: Option<Contingency>,
}

/// The other ending of a pass that wrote a request (docs/design-pass.md#dispatch-pass `attempt()`
/// step 6). The journal save after the annotation is the one write whose failure leaves
/// the cluster ahead of the journal: the request stands, the journal still says
/// `prepared`. The pass cannot see its own writes fail, so it returns both endings and
/// the applier picks: when `effects[save_index]` fails, it applies `then` instead of
/// `effects[save_index + 1..]` — the same report with the request's row saying
/// `submitted/SubmissionJournalUncertain` — rather than stopping. The next pass re-reads
/// the journal and the InferenceService and learns the truth (`RequestAnnotationObserved`).
#[derive(Debug, Clone, PartialEq)]
pub struct Contingency {
    /// Index in [`PassOutput::effects`] of the journal save that follows the request.
    pub save_index: usize,
    /// The effects to apply after that save failed.
    pub then: Vec<Effect>,
}

/// Runs one decision pass.
#[allow(clippy::too_many_lines)] // split pending
pub fn run_pass(
    input: &PassInput<'_>,
    stages: &dyn Stages,
    session: &Session,
    sim: &mut dyn Simulator,
) -> PassOutput {
    let snap = input.snapshot;
    let cfg = input.config;
    let mut recording = crate::decision_log::RecordingSimulator::new(sim);
    let sim: &mut dyn Simulator = &mut recording;
    let mut session = session.clone();
    // Consumed by this pass (see [`Session::failed_requests`]).
    let failed_requests = std::mem::take(&mut session.failed_requests);
    let mut effects = Vec::new();
    let dispatcher = input.runtime.executor_available();
    // 2. OMENative state report.
    if !dispatcher {
        if !session.omenative_unavailable_reported {
            session.omenative_unavailable_reported = true;
            effects.push(Effect::RecordEvent(alfred_model::effect::Event {
                regarding: ObjectRef {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    namespace: input.namespace.into(),
                    name: input.config_map_name.into(),
                    uid: String::new(),
                },
                event_type: EventReason::OMENativeUnavailable.event_type(),
                reason: EventReason::OMENativeUnavailable.as_str().into(),
                message: report::OMENATIVE_UNAVAILABLE_MESSAGE.into(),
            }));
        }
    } else {
        session.omenative_unavailable_reported = false;
    }
    // Drain plans of the dispatch state (docs/design-policies.md#drain-plans): end what cannot go
    // on, before the policies re-plan the rest.
    let journal_read = match &input.state.journal {
        JournalSlot::Readable(j) => Some(j),
        _ => None,
    };
    let empty_journal = Journal::empty();
    let mut book = PlanBook::review(&ReviewInput {
        snapshot: snap,
        config: cfg,
        journal: journal_read.unwrap_or(&empty_journal),
        executing: dispatcher && cfg.mode == Mode::Execute,
        now: input.now,
    });
    // Pool scores; 3. Propose.
    let (pools, proposed) =
        stages.score_and_propose(snap, cfg, input.runtime, &book.plans, input.now);
    let alfred_policy::Proposal {
        mut candidates,
        node_markers,
        drain,
    } = proposed;
    book.block(&drain.blocked, snap, input.now);
    // 4. Scheduling annotation: recommend-only or no dispatcher.
    let annotated = !dispatcher || cfg.mode != Mode::Execute;
    if annotated {
        let simulator = if input.runtime.simulation_configured {
            Some(&mut *sim as &mut dyn Simulator)
        } else {
            None
        };
        crate::schedule::annotate(&mut candidates, snap, cfg, simulator, input.now);
    }
    // 5. Admit / Request / Follow.
    let mut journal_for_arbiter = journal_read.cloned().unwrap_or_else(Journal::empty);
    journal_for_arbiter.plans = book.plans.clone();
    let verdicts = stages.arbitrate(&ArbiterInput {
        candidates: &candidates,
        snapshot: snap,
        config: cfg,
        journal: &journal_for_arbiter,
        breaker: &session.breaker,
        now: input.now,
    });
    let order: Vec<usize> = verdicts.iter().map(|(i, _)| *i).collect();
    let mut by_index: BTreeMap<usize, Verdict> = verdicts.into_iter().collect();
    // The bare proposal, for the re-check (not needed when nothing can be dispatched).
    let proposal = (dispatcher && !annotated).then(|| Proposal::new(snap, &candidates));
    let decisions: Vec<Decision> = candidates
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let v = by_index.remove(&i);
            (c, v)
        })
        .collect();
    let mut new_state = input.state.clone();
    let mut journal_error = None;
    let mut uuids_used = 0;
    let looks = Looks::new(input.fresh);
    let decisions = if dispatcher {
        let ctx = DispatchCtx {
            stages,
            snapshot: snap,
            proposed: proposal.as_ref(),
            looks: &looks,
            config: cfg,
            runtime: input.runtime,
            namespace: input.namespace,
            guard: input.guard,
            config_changed: input.config_changed,
            deadline: input.deadline,
            failed_requests: &failed_requests,
            now: input.now,
        };
        let out = execute(
            &ctx,
            sim,
            decisions,
            &order,
            &input.state.journal,
            &mut session.breaker,
            input.uuids,
        );
        effects.extend(out.effects);
        new_state.journal = out.journal;
        journal_error = out.journal_error;
        uuids_used = out.uuids_used;
        out.decisions
    } else {
        decisions
    };
    // Plan steps submitted start or extend their plans; then the plans' journal write,
    // protection writes, Events and gauges (after the request and its journal save).
    book.after_dispatch(&decisions, &drain.plans, cfg, snap, input.now);
    let plan_views = book.views(&drain.plans, input.now);
    let plans_on =
        cfg.policies.defragmentation.enabled && cfg.policies.defragmentation.drain_plans.enabled;
    let gauge_pools = if plans_on { snap.pools() } else { Vec::new() };
    let writable = match &new_state.journal {
        JournalSlot::Readable(j) if dispatcher => Some(j.clone()),
        _ => None,
    };
    let (plans_now, plan_effects) = book.finish(writable.as_ref(), &gauge_pools);
    if writable.is_some()
        && let JournalSlot::Readable(j) = &mut new_state.journal
    {
        j.plans = plans_now;
    }
    effects.extend(plan_effects);
    // The journal save right after the request annotation (docs/design-pass.md#dispatch-pass
    // attempt() step 6): if it fails, the request stands but the journal does not know it.
    let final_save = effects
        .iter()
        .position(|e| matches!(e, Effect::RequestMigration { .. }))
        .map(|i| i + 1)
        .filter(|&i| matches!(effects.get(i), Some(Effect::WriteJournal { .. })));
    // 6.–7. Breaker gauge and the report.
    let (node_records, node_fx, deleted) = if cfg.policies.node_health.enabled {
        report::node_records(&node_markers, snap.observed_at, input.previous_node_records)
    } else {
        // docs/design-pass.md#node-records: no records and no Node events; the stored keys go.
        let deleted = report::node_keys_without_node_health(
            &input.state.node_records,
            input.previous_node_records,
        );
        (BTreeMap::new(), Vec::new(), deleted)
    };
    // Appends the report's effects to `fx` (in place: a pass has thousands of them, one
    // per advice row and per GPU node, so they are not collected and moved again).
    let tail = |decisions: &[Decision], fx: &mut Vec<Effect>| {
        fx.reserve(decisions.len() * 3 + snap.nodes.len() * 4 + node_fx.len() + 64);
        fx.push(Effect::Metric(alfred_model::effect::MetricUpdate {
            name: alfred_model::metric::MetricId::CircuitBreakerState
                .name()
                .into(),
            labels: vec![],
            change: alfred_model::effect::MetricChange::Set(
                if session.breaker.is_open(input.now) {
                    1.0
                } else {
                    0.0
                },
            ),
        }));
        fx.push(Effect::Metric(alfred_model::effect::MetricUpdate {
            name: alfred_model::metric::MetricId::OmenativeUnavailable
                .name()
                .into(),
            labels: vec![],
            change: alfred_model::effect::MetricChange::Set(if dispatcher { 0.0 } else { 1.0 }),
        }));
        let at = fx.len();
        let split_min = if input.runtime.helper_threads {
            report::SPLIT_MIN_DECISIONS
        } else {
            usize::MAX
        };
        let rows = report::rows_into_halves(decisions, cfg.mode, fx, split_min);
        let mut record = LastCycle::new(input.now, report::record_mode(cfg.mode), rows);
        record.plans = plan_views.clone();
        if cfg.recommendations_config_map_enabled {
            // Before the rows' effects.
            fx.insert(
                at,
                report::recommendations_effect(
                    &cfg.recommendations_config_map_name,
                    &record,
                    &node_records,
                    deleted.clone(),
                ),
            );
        }
        fx.extend(node_fx.iter().cloned());
        fx.extend(report::cluster_gauges(snap, &pools));
        record
    };
    let if_final_save_fails = final_save.map(|save_index| {
        let mut uncertain = decisions.clone();
        for (_, v) in &mut uncertain {
            if let Some(v) = v
                && v.dispatch_reason == Some(DispatchReason::RequestSubmitted)
            {
                v.dispatch_reason = Some(DispatchReason::SubmissionJournalUncertain);
            }
        }
        let mut then = Vec::new();
        tail(&uncertain, &mut then);
        Contingency { save_index, then }
    });
    let record = tail(&decisions, &mut effects);
    new_state.node_records = node_records.clone();
    new_state.verbatim = input.state.verbatim.clone();
    let explain = decisions
        .into_iter()
        .map(|(candidate, verdict)| Explained { candidate, verdict })
        .collect();
    PassOutput {
        record,
        node_records,
        effects,
        new_state,
        session,
        pools,
        explain,
        journal_error,
        uuids_offered: input.uuids.to_vec(),
        uuids_used,
        simulations: recording.records,
        if_final_save_fails,
    }
}

/// Whether a reason withholds every admitted move of the pass (docs/design-pass.md#dispatch-reasons
/// "pass-wide").
pub fn is_pass_wide(r: DispatchReason) -> bool {
    use DispatchReason::*;
    matches!(
        r,
        JournalUnavailable
            | MultipleUnresolvedRequests
            | UnresolvedRequest
            | ExecutionDisabled
            | InvalidCooldown
            | ConfigurationChanged
            | DispatchDeadline
            | GuardUnavailable
            | ObservationStale
            | FailureBackoff
    )
}
