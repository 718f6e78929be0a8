//! Deciding: the leader's loop (`decide`), one pass through the core's caretaker (`pass`), the
//! decision log (`decision_log`) and the simulation workers (`workers`).

pub mod decide;
pub(crate) mod decision_log;
pub mod pass;
pub(crate) mod workers;
