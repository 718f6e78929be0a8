//! alfred-chaos: the randomized fault campaign of `cargo xtask chaos`.
//!
//! Modules: [`apiserver`] (the in-memory API server the real applier talks to, with its
//! faults), [`campaign`] (one run: the twin's cluster and OMENative, two replicas, faults at
//! every read and write), [`invariants`] (the checks, each with a test that plants a
//! violation).

pub mod apiserver;
pub mod campaign;
pub mod invariants;
