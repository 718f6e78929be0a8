//! alfred-dispatch: the decision pass (docs/design-pass.md#pass-pipeline) — scoring, the policies,
//! the recommend-only scheduling gate and predictions, the arbiter, the dispatcher (journal,
//! follow-up, pre-submit re-check, budget, guard, the migration request) and the
//! reporter (rows, `last-cycle.json`, node records, Events, metrics).
//!
//! Pure: no IO, no clock, no randomness, no hash collections. Time, UUIDs, the guard
//! objects, the journal text and both snapshots are inputs; writes are [`Effect`]s.
//!
//! **Kubernetes types.** This crate uses none, but building a snapshot from Kubernetes objects
//! does: `alfred-observe` takes k8s-openapi **0.29** types, and k8s-openapi compiles only with
//! exactly one Kubernetes version feature chosen by the final binary. An embedder that reads
//! its cluster with kube-rs depends on `k8s-openapi = { version = "0.29", features = ["v1_33"] }`
//! (or another `v1_*` feature it supports: alfred reads fields present since 1.33), and on a
//! kube release built on k8s-openapi 0.29 (kube 5); a second k8s-openapi version in the tree
//! gives types that do not match. An embedder that builds snapshots in code
//! (`ClusterSnapshot::builder`) needs no k8s-openapi at all.
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
//! // No executor: rows are advisory (`OMENativeUnavailable`); see `with_executor`.
//! let runtime = RuntimeOptions::recommend_only();
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
//! ([`Reading::state`], [`Reading::guard`]); when a dispatch write fails
//! ([`Effect::is_dispatch_write`](alfred_model::effect::Effect::is_dispatch_write): the journal
//! or the migration request) it stops there — except
//! when the failed write is the journal save after the request ([`Contingency::save_index`]):
//! then it applies [`Contingency::then`] instead of the rest. This crate's
//! `examples/embed.rs` drives two passes over a recorded cluster with a request followed
//! to completion (`cargo run -p alfred-dispatch --example embed`).
//!
//! # A pass that never waits
//!
//! [`Caretaker::pass`] answers the pass's questions at once, through the [`Simulator`] and
//! (for a [`Reading::fresh_looks`] reading) [`FreshObserver`] ports. The pass itself never
//! waits for them: [`Caretaker::begin`] gives a [`PassRun`] that stops where it needs an
//! answer ([`Step::Look`]: a fresh look at a live cluster, [`Step::Simulate`]: a
//! scheduling simulation) and goes on with [`PassRun::handle_look`] /
//! [`PassRun::handle_simulation`] until [`Step::Done`]; [`Caretaker::finish`] takes the
//! output. An async driver answers with `.await`, and a run over shared inputs
//! (`Arc`s in the [`Reading`]) is `'static + Send`, so each step can run on a blocking pool:
//!
//! ```
//! use std::sync::Arc;
//! use alfred_dispatch::{Caretaker, DerivedUuids, ModelSimulator, Reading, Simulator, Step};
//! use alfred_model::config::{Config, RuntimeOptions};
//! use alfred_model::{ClusterSnapshot, Timestamp};
//!
//! let now = Timestamp::from_unix_secs(1_790_000_000);
//! let snapshot = Arc::new(ClusterSnapshot::builder(now).gpu_node("gpu-a", "H100", 8).build());
//! let config = Arc::new(Config::builtin());
//! let mut caretaker = Caretaker::new(RuntimeOptions::with_executor("ome-alfred"), DerivedUuids::new([1; 32]));
//! let mut simulator = ModelSimulator::new(&*config);
//! let mut run = caretaker.begin(Reading::new(snapshot.clone(), config, now).live());
//! loop {
//!     match run.poll() {
//!         Step::Look => run.handle_look(Some(snapshot.clone())), // uncached reads, awaited
//!         Step::Simulate(request) => {
//!             let answer = simulator.simulate(&request); // a worker process, awaited
//!             run.handle_simulation(answer);
//!         }
//!         Step::Done => break,
//!     }
//! }
//! let out = caretaker.finish(run).expect("done");
//! assert_eq!(out.record.timestamp, now);
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
//!   step 12): after a feasible simulation the re-check of a live pass asks for a second look
//!   ([`Step::Look`]; `alfred run` answers with a new observation from uncached reads). The
//!   capture of
//!   scheduling inputs is the snapshot's nodes, pods, PodGroups and workloads
//!   (`same_scheduling_inputs` in `src/dispatch/recheck.rs`); what lies outside it (the models' storage
//!   constraints, the executor's state) can still change the arbiter's verdict, which
//!   is `SafetyStateChanged`. `replay` and the twin read a frozen cluster (a reading that is
//!   not live): it cannot change during a pass.
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

#![warn(missing_docs, unreachable_pub)]

mod caretaker;
pub mod decision_log;
mod dispatch;
mod pass;
pub mod report;
mod simulation;
mod strict_json;

pub use dispatch::{guard, journal, request};
pub use simulation::sim;

pub use caretaker::{
    Caretaker, DerivedUuids, Reading, UUIDS_PER_PASS, UuidSupply, format_v4, node_records_of_keys,
};
pub use dispatch::recheck::{CAPTURE_PROBLEM_KIND, FreshLooks, FreshObserver};
pub use dispatch::{Breaker, JournalSlot};
pub use guard::GuardObservation;
pub use journal::{Entry, Journal, JournalError, Phase};
#[cfg(any(test, feature = "testkit"))]
pub use pass::stages::ScriptedStages;
pub use pass::stages::{CoreStages, PoolGauge, Stages};
pub use pass::steps::{Held, PassRun, Step, drive};
pub use pass::{Contingency, DurableState, Explained, PassInput, PassOutput, Session, run_pass};
pub use request::RequestPayload;
#[cfg(any(test, feature = "testkit"))]
pub use sim::ScriptedSimulator;
pub use sim::{MoveSimulation, SimulationOutcome, Simulator};
pub use simulation::model_sim::{ModelProfiles, ModelSimulator};
pub use simulation::wire_sim::{outcome_of, outcome_of_stdout, unavailable, wire_request};
