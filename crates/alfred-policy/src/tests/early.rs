//! `earlyTickOn` (docs/design-policies.md#early-passes).

use alfred_model::config::Config;
use alfred_model::snapshot::{Node, NodeCondition};

use crate::early_tick::{
    EarlyTickReason as R, early_pass_changes, warrants_early_pass, warrants_early_pass_for,
};
use crate::testkit::{ClusterBuilder, t0};

fn cond(kind: &str, status: &str, minutes: i64) -> NodeCondition {
    NodeCondition {
        kind: kind.into(),
        status: status.into(),
        last_transition_time: Some(t0().plus_minutes(minutes)),
    }
}

fn node(conds: Vec<NodeCondition>, triggers: &[&str]) -> Node {
    let mut n = Node {
        name: "n".into(),
        conditions: conds,
        ..Node::default()
    };
    n.maintenance.requested = !triggers.is_empty();
    n.maintenance.triggers = triggers.iter().map(|s| s.to_string()).collect();
    n
}

#[test]
fn condition_changes_fire() {
    let c = Config::builtin();
    let base = node(
        vec![cond("Ready", "True", 0), cond("GpuUnhealthy", "False", 0)],
        &[],
    );
    assert_eq!(warrants_early_pass(&base, &base, &c), None);
    // Order alone does not matter.
    let reordered = node(
        vec![cond("GpuUnhealthy", "False", 0), cond("Ready", "True", 0)],
        &[],
    );
    assert_eq!(warrants_early_pass(&base, &reordered, &c), None);
    for (what, new) in [
        (
            "status",
            node(
                vec![cond("Ready", "True", 0), cond("GpuUnhealthy", "True", 0)],
                &[],
            ),
        ),
        (
            "transition",
            node(
                vec![cond("Ready", "True", 5), cond("GpuUnhealthy", "False", 0)],
                &[],
            ),
        ),
        ("removed", node(vec![cond("Ready", "True", 0)], &[])),
        (
            "added",
            node(
                vec![
                    cond("Ready", "True", 0),
                    cond("GpuUnhealthy", "False", 0),
                    cond("XidErrors", "False", 0),
                ],
                &[],
            ),
        ),
        (
            "type",
            node(
                vec![cond("Ready", "True", 0), cond("NvlinkDown", "False", 0)],
                &[],
            ),
        ),
    ] {
        assert_eq!(
            warrants_early_pass(&base, &new, &c),
            Some(R::NodeConditionChange),
            "{what}"
        );
    }
}

#[test]
fn maintenance_changes_fire_only_when_conditions_did_not() {
    let c = Config::builtin();
    let a = node(vec![cond("Ready", "True", 0)], &[]);
    let b = node(vec![cond("Ready", "True", 0)], &["os-patching"]);
    assert_eq!(
        warrants_early_pass(&a, &b, &c),
        Some(R::NodeMaintenanceChange)
    );
    let b2 = node(vec![cond("Ready", "False", 0)], &["os-patching"]);
    assert_eq!(
        warrants_early_pass(&a, &b2, &c),
        Some(R::NodeConditionChange)
    );
    // Only the maintenance trigger listed.
    assert_eq!(
        warrants_early_pass_for(&a, &b2, &[R::NodeMaintenanceChange]),
        Some(R::NodeMaintenanceChange)
    );
    // [] disables early passes.
    assert_eq!(warrants_early_pass_for(&a, &b2, &[]), None);
    let mut off = Config::builtin();
    off.early_tick_on = Vec::new();
    assert_eq!(warrants_early_pass(&a, &b2, &off), None);
}

#[test]
fn snapshot_comparison_reports_updated_nodes_only() {
    let old = ClusterBuilder::new()
        .node("a", "H100", 8)
        .node("b", "H100", 8)
        .node("gone", "H100", 8)
        .build();
    let new = ClusterBuilder::new()
        .node("a", "H100", 8)
        .node("b", "H100", 8)
        .node("added", "H100", 8)
        .unhealthy("added")
        .maintenance("b", "os-patching")
        .build();
    assert_eq!(
        early_pass_changes(&old, &new, &Config::builtin().early_tick_on),
        vec![("b".to_string(), R::NodeMaintenanceChange)]
    );
}
