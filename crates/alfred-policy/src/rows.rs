//! The candidate row every policy starts from.

use alfred_model::reason::{AdvisoryReason, RowReason};
use alfred_model::record::{Candidate, Policy};
use alfred_model::snapshot::{ComponentKind, DeploymentMode, Workload};

/// A candidate with every optional field empty: advice with `advisory` unless `None`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn row(
    policy: Policy,
    w: &Workload,
    kind: ComponentKind,
    instance: i64,
    mode: &DeploymentMode,
    reason: RowReason,
    from_node: String,
    advisory: Option<AdvisoryReason>,
) -> Candidate {
    Candidate {
        policy,
        workload: workload_key(w),
        component: kind,
        instance,
        mode: mode.clone(),
        reason,
        from_node,
        hint_target_nodes: Vec::new(),
        placement_target_nodes: Vec::new(),
        executable: advisory.is_none(),
        advisory_reason: advisory,
        surge_shaped: false,
        footprint_gpus: 0,
        benefit: 0.0,
        cost: 0.0,
        score: 0.0,
        emergency: false,
        pod_gpus: Vec::new(),
        scheduling: None,
        plan: None,
    }
}

/// `w.key()` (`namespace/name`) pushed into one exact allocation instead of through
/// `format!`: one per advice row, thousands a pass. Same text.
pub(crate) fn workload_key(w: &Workload) -> String {
    let mut key = String::with_capacity(w.namespace.len() + 1 + w.name.len());
    key.push_str(&w.namespace);
    key.push('/');
    key.push_str(&w.name);
    key
}
