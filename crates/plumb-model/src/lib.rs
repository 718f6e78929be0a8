//! Plumb's vocabulary: the `AdaptivePolicy` (its `spec` with defaults, its `status` with the
//! member report, the hub's intent and the fleet plan), validation naming the field path and
//! the rule, Go durations, Kubernetes quantities as exact decimals, and the canonical spec
//! hash members and the hub compare.
//!
//! Pure data and pure functions: no IO, no clock (times are [`Timestamp`] inputs), no
//! randomness. The member report is computed by `plumb-core`; this crate only holds its shape.

pub mod duration;
pub mod effective;
pub mod hash;
pub mod policy;
pub mod quantity;
pub mod spec;
pub mod status;
pub mod validate;

pub use duration::{DurationError, GoDuration, format_go_duration, parse_go_duration};
pub use hash::member_spec_hash;
pub use policy::{AdaptivePolicy, ObjectMeta, ParseError};
pub use quantity::{Decimal, Quantity, parse_quantity};
pub use spec::AdaptivePolicySpec;
pub use status::{
    Condition, FinishedDecision, FleetCluster, FleetStatus, Intent, Phase, PolicyStatus, Report,
    Sample, Tier, TrackedDecision,
};
pub use utc_time::Timestamp;
pub use validate::{Checked, Notice, Problem, check_document};
