//! alfred-dispatch: the decision pass (docs/design-pass.md#pass-pipeline) — scoring, the policies,
//! the recommend-only scheduling gate and predictions, the arbiter, the dispatcher (journal,
//! follow-up, pre-submit re-check, budget, guard, the migration request) and the
//! reporter (rows, `last-cycle.json`, node records, Events, metrics).
//!
//! Pure: no IO, no clock, no randomness, no hash collections. Time, UUIDs, the guard
//! objects, the journal text and both snapshots are inputs; writes are [`Effect`]s.
//!
//! # Driving loop (what the adapter does)
//!
//! ```text
//! session = Session::default()                      // new leadership term: breaker closed
//! loop on each decision tick (leader only, never overlapping):
//!     snapshot  = observation loop's latest snapshot (or a fresh one on an early tick)
//!     config    = the config store's current object (one for the whole pass)
//!     state     = DurableState { journal: JournalSlot::from_state_json(
//!                      uncached GET alfred-dispatch-state .data["state.json"]),   // only with
//!                                                                                   // --migration-api-version=v1
//!                    node_records: parsed node.* keys of the recommendations ConfigMap }
//!     guard     = GuardObservation from uncached GETs of the two admission objects
//!     fresh     = FreshLooks::Observe(observer) in execute mode: the re-check asks it for
//!                 a snapshot from uncached reads when the first move reaches it, and again
//!                 after each feasible simulation (FreshLooks::Frozen(Some(&snapshot)) for a
//!                 recorded cluster)
//!     uuids     = a few freshly generated lower-case v4 UUIDs
//!     out = run_pass(&PassInput { snapshot, fresh, config, runtime,
//!                                 namespace, config_map_name, state, previous_node_records, guard,
//!                                 uuids, config_changed, deadline, now }, &stages,
//!                    &session, &mut simulator)
//!     apply out.effects IN ORDER while holding the lease:
//!         WriteJournal        → PUT state.json conditioned on the resourceVersion read
//!         RequestMigration    → JSON Patch: test uid, test resourceVersion, (add
//!                               annotations {} if absent), add the annotation
//!         UpdateRecommendations, RecordEvent, Metric
//!       stop at the first failed write (WriteJournal / RequestMigration): the next pass
//!       re-reads the journal and the cluster and learns what landed — except when the
//!       failed write is out.if_final_save_fails.save_index (the save after the request):
//!       then apply its `then` effects instead of the rest.
//!     session = out.session          // breaker and report flags; NOT durable
//!     if the RequestMigration write was not applied (error, conflict, timeout):
//!         session.failed_requests = [its uuid]     // → SubmissionUncertain next pass
//!     (replay: write out.new_state.to_text() to the state file, atomically)
//! ```
//!
//! # Reasons that cross the pass boundary
//!
//! Every rejection and dispatch reason has a scenario in `tests/` (`scenarios.rs`:
//! pass-wide, re-check and write reasons; `follow_reasons.rs`: every stall reason of
//! docs/design-pass.md#follow-up and `SubmissionUncertain`). Three of them depend on what happens
//! to the pass's own IO, which a pure pass cannot see, so they travel through a port or a second
//! ending:
//!
//! * `SchedulingStateChanged` and `SafetyStateChanged` (docs/design-pass.md#pre-submit-re-check
//!   step 12): after a feasible simulation the re-check looks at the cluster a second time through
//!   [`PassInput::fresh`] ([`FreshLooks::Observe`] with the adapter's
//!   [`FreshObserver`]; `alfred run` runs a new observation pass there). The capture of
//!   scheduling inputs is the snapshot's nodes, pods, PodGroups and workloads
//!   ([`preflight::same_scheduling_inputs`]); what lies outside it (the models' storage
//!   constraints, the executor's state) can still change the arbiter's verdict, which
//!   is `SafetyStateChanged`. `replay` and the twin pass [`FreshLooks::Frozen`]: their
//!   cluster cannot change during a pass.
//! * `SubmissionUncertain` (docs/design-pass.md#dispatch-pass `attempt()` step 5) is produced one
//!   pass late: the adapter reports the failed request write through [`Session::failed_requests`];
//!   the next pass records `prepared/SubmissionUncertain` when the follow-up finds no trace
//!   of the request (tested in `follow_reasons.rs`).
//! * `SubmissionJournalUncertain` (step 6, the journal save *after* the annotation
//!   write fails): the pass returns a second ending, [`PassOutput::if_final_save_fails`]
//!   — the same report with the request's row `submitted/SubmissionJournalUncertain` —
//!   which the applier applies instead of the normal tail when that save fails
//!   (`alfred-kube`'s `Applier::apply_pass`); the next pass re-reads the journal and
//!   the InferenceService and reports `RequestAnnotationObserved`.
//!
//! `SafetyStateChanged` is also the fallback of step 3 for an arbiter refusal without a
//! reason, which `alfred-arbiter` never returns.
//!
//! [`Effect`]: alfred_model::effect::Effect

pub mod budget;
pub mod decision_log;
pub mod dispatch;
pub mod drain;
pub mod follow;
pub mod guard;
pub mod journal;
pub mod ledger;
pub mod model_sim;
pub mod pass;
pub mod preflight;
pub mod report;
pub mod request;
pub mod schedule;
pub mod sim;
pub mod stages;
mod strict_json;
pub mod wire_sim;

pub use dispatch::{Breaker, JournalSlot};
pub use guard::GuardObservation;
pub use journal::{Entry, Journal, JournalError, Phase};
pub use model_sim::{ModelProfiles, ModelSimulator};
pub use pass::{Contingency, DurableState, Explained, PassInput, PassOutput, Session, run_pass};
pub use preflight::{FreshLooks, FreshObserver};
pub use request::RequestPayload;
#[cfg(any(test, feature = "testkit"))]
pub use sim::ScriptedSimulator;
pub use sim::{MoveSimulation, SimulationOutcome, Simulator};
#[cfg(any(test, feature = "testkit"))]
pub use stages::ScriptedStages;
pub use stages::{CoreStages, PoolGauge, Stages};
pub use wire_sim::{outcome_of, outcome_of_stdout, wire_request};
