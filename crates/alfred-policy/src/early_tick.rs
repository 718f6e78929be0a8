//! Whether a node update warrants an early decision pass (`earlyTickOn`,
//! docs/design-policies.md#early-passes).
//!
//! Pure functions over two observations of a node (or two snapshots); the engine owns the
//! one-slot signal channel and the pass scheduling.

use alfred_model::snapshot::{ClusterSnapshot, Node, NodeCondition};

pub use crate::settings::EarlyTickReason;
use alfred_model::config::Config;

fn sorted_conditions(n: &Node) -> Vec<&NodeCondition> {
    let mut v: Vec<&NodeCondition> = n.conditions.iter().collect();
    v.sort();
    v
}

fn sorted_triggers(n: &Node) -> Vec<&str> {
    let mut v: Vec<&str> = n.maintenance.triggers.iter().map(String::as_str).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Whether the update `old → new` of one node warrants an early pass, and why.
///
/// `NodeConditionChange`: the condition list changed in length, a condition type appeared
/// or disappeared, or a status or `lastTransitionTime` changed (any condition, not only
/// trigger conditions; the snapshot carries no heartbeat, reason or message, so those
/// cannot fire). `NodeMaintenanceChange`, checked only when the first did not fire: the
/// sorted list of matching maintenance-trigger names differs. Each only when listed in
/// `earlyTickOn`; `[]` disables both.
pub fn warrants_early_pass(old: &Node, new: &Node, config: &Config) -> Option<EarlyTickReason> {
    warrants_early_pass_for(old, new, &config.early_tick_on)
}

/// [`warrants_early_pass`] with the `earlyTickOn` list given directly.
pub fn warrants_early_pass_for(
    old: &Node,
    new: &Node,
    early_tick_on: &[EarlyTickReason],
) -> Option<EarlyTickReason> {
    let on = |r: EarlyTickReason| early_tick_on.contains(&r);
    if on(EarlyTickReason::NodeConditionChange) && sorted_conditions(old) != sorted_conditions(new)
    {
        return Some(EarlyTickReason::NodeConditionChange);
    }
    if on(EarlyTickReason::NodeMaintenanceChange) && sorted_triggers(old) != sorted_triggers(new) {
        return Some(EarlyTickReason::NodeMaintenanceChange);
    }
    None
}

/// Every node present in both snapshots whose update warrants an early pass, by node
/// name. Added and deleted nodes are not updates and never fire.
pub fn early_pass_changes(
    old: &ClusterSnapshot,
    new: &ClusterSnapshot,
    early_tick_on: &[EarlyTickReason],
) -> Vec<(String, EarlyTickReason)> {
    let mut out: Vec<(String, EarlyTickReason)> = Vec::new();
    let mut names: Vec<&str> = new.nodes.iter().map(|n| n.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let (Some(o), Some(n)) = (
            old.nodes.iter().find(|x| x.name == name),
            new.nodes.iter().find(|x| x.name == name),
        ) else {
            continue;
        };
        if let Some(r) = warrants_early_pass_for(o, n, early_tick_on) {
            out.push((name.to_owned(), r));
        }
    }
    out
}
