//! The recorded member's objects as the member report's input.
use plumb_model::{AdaptivePolicy, Condition, Report, Timestamp};

use crate::replay::Recorded;

/// The report and conditions of `cluster` for `policy`.
pub fn report(
    _recorded: &Recorded,
    _policy: &AdaptivePolicy,
    _others: &[AdaptivePolicy],
    _cluster: &str,
    _now: Timestamp,
) -> Result<(Report, Vec<Condition>), String> {
    Err("PENDING".to_owned())
}
