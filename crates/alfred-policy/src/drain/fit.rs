//! Which pending pods wait for a plan, and which nodes each could take once they are free:
//! the pod's node selector, required node affinity and tolerations against the node.

use std::collections::BTreeSet;

use alfred_model::plan::DRAIN_TAINT_KEY;
use alfred_model::snapshot::{Node, PendingPod, PodScheduling};

use crate::context::Ctx;

/// Whether `p` waits for a node of `pool` that a plan could free: it asks GPUs, counts in the
/// pool, waited longer than `emergencyPendingAgeMinutes`, is not nominated anywhere, and no
/// node of the pool it may use has its GPUs free now.
/// `roomy` is the pool's usable nodes with free GPUs, most free first.
pub(super) fn waits_for_a_node(ctx: &Ctx<'_>, pool: &str, roomy: &[&Node], p: &PendingPod) -> bool {
    let age = f64::from(ctx.inputs.cfg.emergency_pending_age_minutes);
    p.gpus_needed > 0
        && p.counts_in(pool)
        && p.nominated_node.is_empty()
        && ctx.inputs.now.minutes_since(p.pending_since) > age
        && !roomy
            .iter()
            .take_while(|n| n.free_gpus >= p.gpus_needed)
            .any(|n| usable_for(n, &p.scheduling))
}

/// Whether `p` is the only pod of its size in `pool` waiting past `emergencyPendingAgeMinutes`
/// (nominated or not). Such a pod heads the scheduler's queue for its size: the first node of
/// its size that churn frees is its, and a plan made for it loses that race more often than
/// not (`lonePodWaitMinutes`).
pub(super) fn waits_alone(ctx: &Ctx<'_>, pool: &str, p: &PendingPod) -> bool {
    let age = f64::from(ctx.inputs.cfg.emergency_pending_age_minutes);
    !ctx.inputs.snap.pending_pods.iter().any(|q| {
        q.gpus_needed == p.gpus_needed
            && (q.namespace != p.namespace || q.name != p.name)
            && q.counts_in(pool)
            && ctx.inputs.now.minutes_since(q.pending_since) > age
    })
}

/// Whether the pod could run on `n` once its GPUs are free: GPUs, available, ready, big
/// enough, and the pod's selector, required node affinity and tolerations allow it.
pub(super) fn usable_for(n: &Node, s: &PodScheduling) -> bool {
    usable_for_but(n, s, |_| false)
}

/// [`usable_for`], with the taints `ignored` says were not there.
fn usable_for_but(
    n: &Node,
    s: &PodScheduling,
    ignored: impl Fn(&alfred_model::snapshot::Taint) -> bool,
) -> bool {
    n.has_gpus()
        && !n.unavailable()
        && n.ready
        && s.node_selector
            .iter()
            .all(|(k, v)| n.labels.get(k) == Some(v))
        && required_affinity_allows(&s.affinity, n)
        && n.taints.iter().all(|t| {
            ignored(t)
                || !(t.effect == "NoSchedule" || t.effect == "NoExecute")
                || tolerated(&s.tolerations, t)
        })
}

/// Whether `p` could take the node of plan `plan_id` once it is free, as a new plan's pod
/// must: asks at most the node's GPUs, counts in `pool`, and its selector, required node
/// affinity and tolerations allow the node, the plan's own taint aside (it goes at
/// hand-off). The dispatcher hands a plan whose pod no longer needs the node to such a pod.
pub fn could_take(n: &Node, p: &PendingPod, pool: &str, plan_id: &str) -> bool {
    p.gpus_needed > 0
        && p.gpus_needed <= n.total_gpus
        && p.counts_in(pool)
        && n.pool.as_deref() == Some(pool)
        && usable_for_but(n, &p.scheduling, |t| {
            t.key == DRAIN_TAINT_KEY && t.value == plan_id
        })
}

fn tolerated(tolerations: &[serde_json::Value], t: &alfred_model::snapshot::Taint) -> bool {
    tolerations.iter().any(|tol| {
        let field = |k: &str| tol.get(k).and_then(|v| v.as_str()).unwrap_or("");
        let op = field("operator");
        let key_ok = field("key").is_empty() && op == "Exists" || field("key") == t.key;
        let value_ok = op == "Exists" || field("value") == t.value;
        let effect_ok = field("effect").is_empty() || field("effect") == t.effect;
        key_ok && value_ok && effect_ok
    })
}

/// `requiredDuringSchedulingIgnoredDuringExecution` of the pod's node affinity: terms OR'ed,
/// expressions AND'ed (`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`; `matchFields` on
/// `metadata.name`). An operator it does not know matches nothing (fail closed).
fn required_affinity_allows(affinity: &serde_json::Value, n: &Node) -> bool {
    // `get` by member, not `pointer`: this runs for every node a pod could use, and a JSON
    // pointer splits and unescapes its path on every call (a third of a large pass's search).
    let Some(terms) = affinity
        .get("nodeAffinity")
        .and_then(|a| a.get("requiredDuringSchedulingIgnoredDuringExecution"))
        .and_then(|r| r.get("nodeSelectorTerms"))
        .and_then(|t| t.as_array())
    else {
        return true;
    };
    let expr_ok = |e: &serde_json::Value, value_of: &dyn Fn(&str) -> Option<String>| {
        let key = e.get("key").and_then(|k| k.as_str()).unwrap_or("");
        let values: Vec<&str> = e
            .get("values")
            .and_then(|v| v.as_array())
            .map(|v| v.iter().filter_map(|x| x.as_str()).collect())
            .unwrap_or_default();
        let have = value_of(key);
        let number = |s: &str| s.parse::<i64>().ok();
        match e.get("operator").and_then(|o| o.as_str()).unwrap_or("") {
            "In" => have.is_some_and(|h| values.contains(&h.as_str())),
            "NotIn" => have.is_none_or(|h| !values.contains(&h.as_str())),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            "Gt" => {
                matches!((have.as_deref().and_then(number), values.first().and_then(|v| number(v))), (Some(h), Some(v)) if h > v)
            }
            "Lt" => {
                matches!((have.as_deref().and_then(number), values.first().and_then(|v| number(v))), (Some(h), Some(v)) if h < v)
            }
            _ => false,
        }
    };
    let label = |k: &str| n.labels.get(k).cloned();
    let field = |k: &str| (k == "metadata.name").then(|| n.name.clone());
    terms.iter().any(|term| {
        let exprs = term.get("matchExpressions").and_then(|e| e.as_array());
        let fields = term.get("matchFields").and_then(|e| e.as_array());
        if exprs.is_none_or(|e| e.is_empty()) && fields.is_none_or(|f| f.is_empty()) {
            return false;
        }
        exprs.into_iter().flatten().all(|e| expr_ok(e, &label))
            && fields.into_iter().flatten().all(|e| expr_ok(e, &field))
    })
}

/// Pending pods nominated to each node (by anyone), by node name.
pub(super) fn nominations(ctx: &Ctx<'_>) -> BTreeSet<String> {
    ctx.inputs
        .snap
        .pending_pods
        .iter()
        .filter(|p| !p.nominated_node.is_empty())
        .map(|p| p.nominated_node.clone())
        .collect()
}
