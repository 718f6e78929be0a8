//! Surge plans (docs/design-policies.md#surge-plans): where an Instance's GPU pods would go,
//! fullest eligible target first.

use std::collections::BTreeMap;
use std::rc::Rc;

use alfred_model::index::{INSTANCE_PODS_CONSISTENT, InstanceFacts, SnapshotIndex};
use alfred_model::snapshot::{ClusterSnapshot, Instance, Workload};

use crate::context::{Ctx, InstanceRef, TargetList};
#[cfg(test)]
use alfred_model::snapshot::Node;

/// A surge plan (docs/design-policies.md#surge-plans). Nodes are positions in `ctx.inputs.snap.nodes`
/// ([`Ctx::node_position`]), not names: pricing reads the bins by position, and nothing is copied
/// per move.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SurgePlan {
    /// (source node, target node, gpus) per GPU pod.
    pub moves: Vec<(usize, usize, u32)>,
    /// Every source node of the Instance (ascending, hence in name order).
    pub sources: Vec<usize>,
    /// GPUs per GPU pod, largest first.
    pub pod_gpus: Vec<u32>,
    /// The ordered list the targets come from.
    targets: Rc<TargetList>,
    /// The first position in `targets` with room for the smallest print.
    start: usize,
}

impl SurgePlan {
    /// `placementTargets` of docs/design-policies.md#surge-plans: every eligible target in order,
    /// fullest first (built on demand: only executable rows carry it).
    pub(crate) fn placement_targets(&self, ctx: &Ctx<'_>) -> Vec<String> {
        self.target_names(ctx).map(str::to_owned).collect()
    }

    fn target_names<'c>(&'c self, ctx: &'c Ctx<'_>) -> impl Iterator<Item = &'c str> + 'c {
        self.targets.nodes[self.start..]
            .iter()
            .filter(|i| self.sources.binary_search(i).is_err())
            .map(|i| ctx.inputs.snap.nodes[*i].name.as_str())
    }

    /// `hintTargetNodes` of docs/design-policies.md#surge-plans: the first three eligible
    /// targets (built on demand, as [`SurgePlan::placement_targets`]).
    pub(crate) fn hints(&self, ctx: &Ctx<'_>) -> Vec<String> {
        self.target_names(ctx).take(3).map(str::to_owned).collect()
    }

    /// [`SurgePlan::moves`] with node names, as docs/design-policies.md#surge-plans writes them.
    #[cfg(test)]
    pub(crate) fn named_moves(&self, ctx: &Ctx<'_>) -> Vec<(String, String, u32)> {
        let name = |i: usize| ctx.inputs.snap.nodes[i].name.clone();
        self.moves
            .iter()
            .map(|(from, to, gpus)| (name(*from), name(*to), *gpus))
            .collect()
    }

    /// [`SurgePlan::sources`] by name.
    #[cfg(test)]
    pub(crate) fn source_names(&self, ctx: &Ctx<'_>) -> Vec<String> {
        self.sources
            .iter()
            .map(|i| ctx.inputs.snap.nodes[*i].name.clone())
            .collect()
    }
}

/// Whether `n` may receive a replacement of workload `w` (the target filter of
/// docs/design-policies.md#surge-plans, less the room and source tests).
#[cfg(test)]
pub(crate) fn eligible_target(ctx: &Ctx<'_>, w: &Workload, n: &Node) -> bool {
    n.has_gpus()
        && !n.unavailable()
        && !(ctx.avoid_spot(w) && n.preemptible)
        && ctx
            .allowed_targets(w)
            .is_none_or(|allowed| allowed.contains(&n.name))
}

/// A surge plan's prints `(node position, gpus)` (GPU pods only, largest first, ties in pod
/// key order), its sources (node positions, ascending) and its pool.
type Prints<'c> = (Vec<(usize, u32)>, Vec<usize>, &'c str);

/// `prints` `(sort key, node position, gpus)` in the surge plan's order: largest first, ties
/// by `sort key` (the pod key, or anything ordered as the keys are); the key is dropped.
fn in_print_order<K: Ord>(mut prints: Vec<(K, usize, u32)>) -> Vec<(usize, u32)> {
    prints.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    prints
        .into_iter()
        .map(|(_, node, gpus)| (node, gpus))
        .collect()
}

/// The validated prints of docs/design-policies.md#surge-plans ([`Prints`]); `None` =
/// `NoSurgeHeadroom`.
fn surge_prints<'c>(ctx: &'c Ctx<'_>, w: &Workload, inst: &Instance) -> Option<Prints<'c>> {
    if ctx.model_reason(w).is_some() {
        return None;
    }
    // Validate the prints: every pod resolves to a bound pod of this namespace on a known node,
    // the GPU total and per-node pod counts agree with the Instance.
    let mut prints: Vec<(&str, usize, u32)> = Vec::new();
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    let mut total: u64 = 0;
    for key in &inst.pods {
        let p = ctx.pod(key)?;
        if p.namespace != w.namespace || p.name.is_empty() || p.node.is_empty() {
            return None;
        }
        let node = ctx.node_position(&p.node)?;
        *counts.entry(p.node.as_str()).or_default() += 1;
        total += u64::from(p.gpus);
        if p.gpus > 0 {
            prints.push((key.as_str(), node, p.gpus));
        }
    }
    if prints.is_empty()
        || total != u64::from(inst.total_gpus)
        || !counts
            .iter()
            .map(|(n, c)| (*n, *c))
            .eq(inst.nodes.iter().map(|(n, c)| (n.as_str(), *c)))
    {
        return None;
    }
    // Every key is a counted node, found above.
    let sources: Vec<usize> = inst
        .nodes
        .keys()
        .map(|k| ctx.node_position(k))
        .collect::<Option<_>>()?;
    let mut pool: Option<&str> = None;
    for (_, node, _) in &prints {
        let n = &ctx.inputs.snap.nodes[*node];
        let p = n.pool.as_deref().filter(|_| n.has_gpus())?;
        if pool.is_some_and(|q| q != p) {
            return None;
        }
        pool = Some(p);
    }
    let pool = pool?;
    Some((in_print_order(prints), sources, pool))
}

/// [`surge_prints`] read from the snapshot's index (`idx` is `ctx.inputs.snap`'s, `facts` the
/// Instance's entry): the pods and their nodes come resolved, so nothing is looked up by
/// name, and node positions are name order (normalized snapshot, unique names), so the
/// per-node pod counts compare with the Instance's `nodes` by position. Same answer. The
/// Instance itself is read only when the index did not find its pods consistent.
fn surge_prints_at<'c>(
    ctx: &'c Ctx<'_>,
    idx: &SnapshotIndex,
    facts: &InstanceFacts,
    w: &Workload,
    inst: InstanceRef<'_>,
) -> Option<Prints<'c>> {
    if ctx.model_reason(w).is_some() {
        return None;
    }
    if facts.flags & INSTANCE_PODS_CONSISTENT != 0 {
        return consistent_prints(ctx, idx, facts);
    }
    let inst = inst.get()?;
    let pod_ix = idx.pods_of(facts);
    if pod_ix.len() != inst.pods.len() {
        return surge_prints(ctx, w, inst);
    }
    let snap: &'c ClusterSnapshot = &ctx.inputs.snap;
    let mut prints: Vec<(&str, usize, u32)> = Vec::with_capacity(pod_ix.len());
    // (node position, pods), ascending.
    let mut counts: Vec<(u32, u32)> = Vec::with_capacity(2);
    let mut total: u64 = 0;
    let mut pool: Option<&'c str> = None;
    for (key, &pi) in inst.pods.iter().zip(pod_ix) {
        let p = snap.pods.get(pi as usize)?;
        if p.namespace != w.namespace || p.name.is_empty() || p.node.is_empty() {
            return None;
        }
        let node = idx.pods.get(pi as usize)?.node;
        let n = snap.nodes.get(node as usize)?;
        match counts.binary_search_by(|(x, _)| x.cmp(&node)) {
            Ok(i) => counts[i].1 += 1,
            Err(i) => counts.insert(i, (node, 1)),
        }
        total += u64::from(p.gpus);
        if p.gpus > 0 {
            // [`Ctx::pool_of`]. Every `None` here is also `surge_prints`'s answer: it checks
            // the same things, only later.
            if !n.has_gpus() {
                return None;
            }
            let q = n.pool.as_deref()?;
            if pool.is_some_and(|x| x != q) {
                return None;
            }
            pool = Some(q);
            prints.push((key.as_str(), node as usize, p.gpus));
        }
    }
    if prints.is_empty()
        || total != u64::from(inst.total_gpus)
        || !counts.iter().copied().eq(idx
            .nodes_of(facts)
            .iter()
            .copied()
            .zip(inst.nodes.values().copied()))
    {
        return None;
    }
    // The Instance's `nodes` keys, resolved: equal to the counted nodes, checked above.
    let sources: Vec<usize> = idx.nodes_of(facts).iter().map(|n| *n as usize).collect();
    let pool = pool?;
    Some((in_print_order(prints), sources, pool))
}

/// [`surge_prints_at`] for an Instance the index found consistent
/// ([`INSTANCE_PODS_CONSISTENT`]: it checked what `surge_prints_at` checks of the pods
/// themselves), read from the index's tables alone: only the GPU pods' nodes are read, for
/// their pool, compared by its position in the index's pools. Same answer.
///
/// Ties are broken by the pods' positions: the pods are of the workload's namespace (the
/// flag says so) and the snapshot's pods are in `(namespace, name)` order, so positions are
/// in the order of the pods' keys (`namespace/name`).
fn consistent_prints<'c>(
    ctx: &'c Ctx<'_>,
    idx: &SnapshotIndex,
    facts: &InstanceFacts,
) -> Option<Prints<'c>> {
    let snap: &'c ClusterSnapshot = &ctx.inputs.snap;
    let pod_ix = idx.pods_of(facts);
    let mut prints: Vec<(u32, usize, u32)> = Vec::with_capacity(pod_ix.len());
    // The pool's position in `idx.pools` and its key.
    let mut pool: Option<(u32, &'c str)> = None;
    for &pi in pod_ix {
        let p = idx.pods.get(pi as usize)?;
        if p.gpus == 0 {
            continue;
        }
        let n = snap.nodes.get(p.node as usize)?;
        if !n.has_gpus() {
            return None;
        }
        let key_of_pool = n.pool.as_deref()?;
        // Nodes with GPUs have a position in `idx.pools`, equal exactly when their pool
        // keys are.
        let at = *idx.node_pool.get(p.node as usize)?;
        if pool.is_some_and(|(x, _)| x != at) {
            return None;
        }
        pool = Some((at, key_of_pool));
        prints.push((pi, p.node as usize, p.gpus));
    }
    let sources: Vec<usize> = idx.nodes_of(facts).iter().map(|n| *n as usize).collect();
    let (_, pool) = pool?;
    Some((in_print_order(prints), sources, pool))
}

/// [`plan_surge`] with the prints read from the snapshot's index ([`surge_prints_at`]):
/// the defragmentation walk's form.
pub(crate) fn plan_surge_at(
    ctx: &Ctx<'_>,
    idx: &SnapshotIndex,
    facts: &InstanceFacts,
    w: &Workload,
    inst: InstanceRef<'_>,
) -> Option<SurgePlan> {
    plan_from_prints(ctx, w, surge_prints_at(ctx, idx, facts, w, inst)?)
}

/// `planSurge(w, inst)`; `None` = `NoSurgeHeadroom`.
///
/// The targets come from the pool's ordered list ([`Ctx::target_list`], built once): the
/// first fit of a print is the earlier of the first already-used target with room left and
/// the first unused target at or after the first position with `freeGPUs ≥ gpus` (a binary
/// search; the list is in `freeGPUs` order), skipping sources. So a plan costs
/// O(log n + prints · (prints + sources)), and the exhaustive `placementTargets` are only
/// listed for the rows that carry them ([`SurgePlan::placement_targets`]).
pub(crate) fn plan_surge(ctx: &Ctx<'_>, w: &Workload, inst: &Instance) -> Option<SurgePlan> {
    plan_from_prints(ctx, w, surge_prints(ctx, w, inst)?)
}

/// [`plan_surge`] from the validated prints, sources and pool.
fn plan_from_prints(
    ctx: &Ctx<'_>,
    w: &Workload,
    (prints, sources, pool): Prints<'_>,
) -> Option<SurgePlan> {
    let minimum = prints.iter().map(|p| p.1).min()?;
    let targets = ctx.target_list(pool, w);
    let is_source = |pos: usize| sources.binary_search(&targets.nodes[pos]).is_ok();
    let start = targets.free.partition_point(|f| *f < minimum);
    // Used targets `(position, free GPUs left)`, in position order.
    let mut used: Vec<(usize, u32)> = Vec::new();
    let mut moves = Vec::with_capacity(prints.len());
    for (from, gpus) in &prints {
        let reused = used.iter().position(|(_, f)| *f >= *gpus);
        let mut fresh = targets.free.partition_point(|f| *f < *gpus).max(start);
        while fresh < targets.nodes.len()
            && (is_source(fresh) || used.iter().any(|(p, _)| *p == fresh))
        {
            fresh += 1;
        }
        let fresh = (fresh < targets.nodes.len()).then_some(fresh);
        let pos = match (reused, fresh) {
            (Some(k), Some(f)) if used[k].0 > f => {
                let at = used.partition_point(|(p, _)| *p < f);
                used.insert(at, (f, targets.free[f] - gpus));
                f
            }
            (Some(k), _) => {
                used[k].1 -= gpus;
                used[k].0
            }
            (None, Some(f)) => {
                let at = used.partition_point(|(p, _)| *p < f);
                used.insert(at, (f, targets.free[f] - gpus));
                f
            }
            (None, None) => return None,
        };
        moves.push((*from, targets.nodes[pos], *gpus));
    }
    Some(SurgePlan {
        moves,
        sources,
        pod_gpus: prints.iter().map(|p| p.1).collect(),
        targets,
        start,
    })
}

/// The surge plan as docs/design-policies.md#surge-plans writes it (filter and sort every node per
/// Instance): the reference [`plan_surge`] is checked against, as
/// `(moves, placementTargets, hints, sources, podGPUs)`.
#[cfg(test)]
#[allow(clippy::type_complexity)]
pub(crate) fn plan_surge_reference(
    ctx: &Ctx<'_>,
    w: &Workload,
    inst: &Instance,
) -> Option<(
    Vec<(String, String, u32)>,
    Vec<String>,
    Vec<String>,
    Vec<String>,
    Vec<u32>,
)> {
    let (prints, sources, pool) = surge_prints(ctx, w, inst)?;
    let name = |i: usize| ctx.inputs.snap.nodes[i].name.clone();
    let prints: Vec<(String, u32)> = prints.into_iter().map(|(n, g)| (name(n), g)).collect();
    let sources: Vec<String> = sources.into_iter().map(name).collect();
    let minimum = prints.iter().map(|p| p.1).min()?;
    let mut targets: Vec<&Node> = ctx
        .inputs
        .snap
        .nodes
        .iter()
        .filter(|n| n.pool.as_deref() == Some(pool))
        .filter(|n| !sources.contains(&n.name))
        .filter(|n| eligible_target(ctx, w, n))
        .filter(|n| n.free_gpus >= minimum)
        .collect();
    targets.sort_by(|a, b| (a.free_gpus, &a.name).cmp(&(b.free_gpus, &b.name)));
    let mut free: Vec<u32> = targets.iter().map(|n| n.free_gpus).collect();
    let mut moves = Vec::new();
    for (from, gpus) in &prints {
        let slot = free.iter().position(|f| *f >= *gpus)?;
        free[slot] -= gpus;
        moves.push((from.clone(), targets[slot].name.clone(), *gpus));
    }
    let placement_targets: Vec<String> = targets.iter().map(|n| n.name.clone()).collect();
    let hints = placement_targets.iter().take(3).cloned().collect();
    Some((
        moves,
        placement_targets,
        hints,
        sources,
        prints.iter().map(|p| p.1).collect(),
    ))
}
