//! alfred-twin: a deterministic discrete-event simulated GPU cluster driven by the Alibaba
//! GPU trace, running alfred's pure core in the loop (and baseline caretakers beside it),
//! with the decision log.
//!
//! Modules: [`trace`] (CSV input), [`arrivals`] (churn / fill / timed), [`world`] (nodes
//! and the scheduler model), [`engine`] (the event loop, surge migrations, evictions,
//! metrics), [`snapshot`] (the twin as a `ClusterSnapshot`), [`alfred`] (the real decision
//! pass as a caretaker), [`caretakers`] (descheduler and crude baselines),
//! [`decision_log`] (re-exported from `alfred_dispatch`: the line builders and the outcome
//! tracker, shared with `alfred run --decision-log`),
//! [`report`] (summary, CSV, SVG), [`svg`] (polyline charts), [`rng`] (the PRNG).

pub mod alfred;
pub mod arrivals;
pub mod caretakers;
pub mod engine;
pub mod report;
pub mod rng;
pub mod snapshot;
pub mod svg;
pub mod trace;
pub mod world;

pub use alfred_dispatch::decision_log;
