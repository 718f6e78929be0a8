//! Applying a pass's effects while the lease is held: the writes (`applier`), Events (`events`),
//! the lease (`leader`) and the UUIDs (`ids`).

pub mod applier;
pub mod events;
pub(crate) mod ids;
pub mod leader;
