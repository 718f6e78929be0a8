//! alfred's data model: the cluster snapshot the policies read, the configuration,
//! the decision record, the reason codes and the effects an adapter applies.
//!
//! Deterministic and free of IO: no clock, no randomness, no hash-map iteration order
//! in any output. Time arrives as a [`time::Timestamp`] parameter.

pub mod config;
pub mod count;
pub mod effect;
pub mod event;
pub mod index;
pub mod metric;
pub mod plan;
pub mod reason;
pub mod record;
pub mod shared;
pub mod snapshot;
pub mod time;

pub use snapshot::ClusterSnapshot;
pub use time::Timestamp;
