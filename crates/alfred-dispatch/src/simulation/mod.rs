//! Scheduling simulations: the port a pass asks through (`sim`), the in-process scheduler model
//! behind it (`model_sim`), the worker wire protocol (`wire_sim`), and the recommend-only
//! scheduling gate and predictions that decide what to ask (`schedule`).

pub(crate) mod model_sim;
pub(crate) mod schedule;
pub mod sim;
pub(crate) mod wire_sim;
