//! Time as data: the [`Timestamp`] every pass takes as an argument.
//!
//! The type lives in the shared `utc-time` crate (Plumb's core uses it too); this module
//! keeps alfred's paths (`alfred_model::time::Timestamp`).

pub use utc_time::{Timestamp, TimestampError};
