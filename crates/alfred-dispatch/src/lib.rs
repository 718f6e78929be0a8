//! alfred-dispatch: the decision pass (alfred-engine.md §5.3) — scoring, the policies, the
//! recommend-only scheduling gate and predictions, the arbiter, the dispatcher (journal,
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
//!     fresh     = a snapshot from uncached reads (execute mode; may equal `snapshot`)
//!     uuids     = a few freshly generated lower-case v4 UUIDs
//!     out = run_pass(&PassInput { snapshot, fresh_snapshot, config, runtime, namespace,
//!                                 config_map_name, state, previous_node_records, guard,
//!                                 uuids, config_changed, deadline, now }, &stages,
//!                    &session, &mut simulator)
//!     apply out.effects IN ORDER while holding the lease:
//!         WriteJournal        → PUT state.json conditioned on the resourceVersion read
//!         RequestMigration    → JSON Patch: test uid, test resourceVersion, (add
//!                               annotations {} if absent), add the annotation
//!         UpdateRecommendations, RecordEvent, Metric
//!       stop at the first failed write (WriteJournal / RequestMigration): the next pass
//!       re-reads the journal and the cluster and learns what landed.
//!     session = out.session          // breaker and report flags; NOT durable
//!     if the RequestMigration write was not applied (error, conflict, timeout):
//!         session.failed_requests = [its uuid]     // → SubmissionUncertain next pass
//!     (replay: write out.new_state.to_text() to the state file, atomically)
//! ```
//!
//! # Reasons the pure pass cannot produce (issue 5)
//!
//! Every rejection and dispatch reason has a scenario in `tests/` (`scenarios.rs`:
//! pass-wide and re-check reasons; `follow_reasons.rs`: every stall reason of §9.4 and
//! `SubmissionUncertain`), except these, and why:
//!
//! * `SubmissionUncertain` (§9.9 `attempt()` step 5) **is** produced, one pass late: a
//!   pass cannot see its own write fail, so the adapter reports it through
//!   [`Session::failed_requests`]; the next pass records `prepared/SubmissionUncertain`
//!   when the follow-up finds no trace of the request (tested in `follow_reasons.rs`).
//! * `SubmissionJournalUncertain` (step 6, the save *after* the annotation write fails):
//!   the core yields it only when that journal document cannot be serialised (within a
//!   few bytes of the 512 KiB limit; not scenario-tested). A failed `WriteJournal` in the
//!   cluster is adapter-only: the applier stops there (adapter test
//!   `a_failed_patch_test_is_a_conflict_and_stops_later_writes` in
//!   `adapters/alfred-kube/src/run/transcript_tests.rs`), and the reference never
//!   persists this reason either — the next pass re-reads the InferenceService and the
//!   follow-up reports `RequestAnnotationObserved` (or `AcknowledgementTimeout`), which
//!   is the truth the reason defers to. Feeding it back as an input would only hide that.
//! * `SchedulingStateChanged` and `SafetyStateChanged` (§9.6 step 12, the *second* fresh
//!   look after the simulation): the pass takes one fresh snapshot, and its whole point
//!   is to be read *after* the simulation ran. A second snapshot the adapter read before
//!   the pass would be taken at the same instant as the first, so it could not detect
//!   what step 12 exists to catch; doing it right needs a re-observation callback
//!   (IO inside the pass, like [`Simulator`]), a larger change than an input. Step 12 is
//!   therefore a no-op here (`preflight.rs`); the adapter does not perform it either,
//!   so neither reason is produced anywhere (the re-check's age bound,
//!   `SimulationStale`, and the JSON Patch's `resourceVersion` test remain).
//!   `SafetyStateChanged` is also the fallback of step 3 for an arbiter refusal without
//!   a reason, which `alfred-arbiter` never returns.
//!
//! [`Effect`]: alfred_model::effect::Effect

pub mod budget;
pub mod decision_log;
pub mod dispatch;
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
pub use pass::{DurableState, Explained, PassInput, PassOutput, Session, run_pass};
pub use request::RequestPayload;
#[cfg(any(test, feature = "testkit"))]
pub use sim::ScriptedSimulator;
pub use sim::{MoveSimulation, SimulationOutcome, Simulator};
#[cfg(any(test, feature = "testkit"))]
pub use stages::ScriptedStages;
pub use stages::{CoreStages, PoolGauge, Stages};
pub use wire_sim::{outcome_of, outcome_of_stdout, wire_request};
