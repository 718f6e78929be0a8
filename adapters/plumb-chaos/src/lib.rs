//! plumb-chaos: the randomized fault campaign of `cargo xtask chaos-plumb`.
//!
//! Plumb's real quorum ([`plumb_core::quorum`]), hub step ([`plumb_core::hub`]) and fencing
//! ([`plumb_core::fencing`]) run over an emulated fleet ([`world`]): 2–7 members, each with an
//! API server ([`store`]: compare-and-swap writes, 409/422/500 and timeouts), a skewed clock, a
//! workload and an agent; faults are drawn from the seed ([`faults`]); the invariants
//! ([`invariants`]) are checked after every event, each with a test that plants a violation.
//! One run ([`campaign::run`]) is a pure function of its seed, so a failing seed replays.

pub mod campaign;
pub mod election;
pub mod faults;
pub mod hubstep;
pub mod invariants;
pub mod members;
pub mod policy;
pub mod rng;
pub mod store;
pub mod world;
