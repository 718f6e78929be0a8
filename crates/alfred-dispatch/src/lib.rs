//! alfred-dispatch: the decision pass (docs/design-pass.md#pass-pipeline) — scoring, the policies,
//! the recommend-only scheduling gate and predictions, the arbiter, the dispatcher (journal,
//! follow-up, pre-submit re-check, budget, guard, the migration request) and the
//! reporter (rows, `last-cycle.json`, node records, Events, metrics).
//!
//! Pure: no IO, no clock, no randomness, no hash collections. Time, UUIDs, the guard
//! objects, the journal text and both snapshots are inputs; writes are [`Effect`]s.
//!
//! # Driving loop
//!
//! One [`Caretaker`] per leadership term carries what lives between passes (the breaker,
//! the node records, failed requests, UUIDs, the deadline policy, the durable state). The
//! driver reads, hands over, applies the effects in order and reports each write:
//!
//! ```
//! use alfred_dispatch::{Caretaker, DerivedUuids, ModelSimulator, Reading};
//! use alfred_model::config::{Config, RuntimeOptions};
//! use alfred_model::{ClusterSnapshot, Timestamp};
//!
//! let config = Config::builtin();                  // or Config::from_yaml(text)
//! let runtime = RuntimeOptions::recommend_only();  // no executor, no flags to parse
//! let mut caretaker = Caretaker::new(runtime, DerivedUuids::new([7; 32]));
//! let mut simulator = ModelSimulator::new(&config);
//! let start = Timestamp::from_unix_secs(1_790_000_000);
//! for pass in 0..2 {
//!     let now = start.plus_minutes(5 * pass);
//!     let snapshot = ClusterSnapshot { observed_at: now, ..ClusterSnapshot::default() };
//!     let out = caretaker.pass(Reading::new(&snapshot, &config, now), &mut simulator);
//!     for effect in &out.effects {
//!         let applied = true; // the driver's write (ConfigMap, annotation, Event, metric)
//!         caretaker.write_done(effect, applied);
//!     }
//!     assert_eq!(out.record.timestamp, now);
//! }
//! ```
//!
//! In execute mode the driver also hands over the journal and guard it read
//! ([`Reading::state`], [`Reading::guard`]) and, on a live cluster, a [`FreshObserver`]
//! for the re-check's fresh looks ([`Reading::fresh_looks`]); when a write fails it stops
//! there — except when the failed write is the journal save after the request
//! ([`Contingency::save_index`]): then it applies [`Contingency::then`] instead of the
//! rest. `alfred-kube`'s `examples/embed.rs` drives two passes over a recorded cluster
//! with a request followed to completion.
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
//!   [`Reading::fresh_looks`] ([`FreshLooks::Observe`] with the adapter's
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
pub mod caretaker;
pub mod decision_log;
pub mod dispatch;
pub mod drain;
pub mod follow;
pub mod guard;
pub mod journal;
pub mod ledger;
pub mod model_sim;
pub mod pass;
pub mod pass_report;
pub mod preflight;
pub mod report;
pub mod request;
pub mod schedule;
pub mod sim;
pub mod stages;
pub mod steps;
mod strict_json;
pub mod wire_sim;

pub use caretaker::{Caretaker, DerivedUuids, Reading, UUIDS_PER_PASS, UuidSupply};
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
pub use steps::{Held, PassRun, Step, drive};
pub use wire_sim::{outcome_of, outcome_of_stdout, wire_request};
