//! The OMEGangPack model (docs/design-simulation.md#gangs): gang validation, domains and room,
//! best-fit domain choice, holding the domain until every member has a node.

use std::collections::{BTreeMap, BTreeSet};

use crate::config::Profile;
use crate::engine::{Outcome, PreparedCluster};
use crate::model::PodInfo;
use crate::outcome::{Cause, Failure};

fn fail(cause: Cause, detail: impl Into<String>) -> Outcome {
    Outcome {
        decision: cause.decision(),
        placements: Vec::new(),
        failure: Some(Failure::new(cause, detail)),
        ties: Vec::new(),
    }
}

/// Whether a resource name counts as GPUs (docs/design-snapshot.md#gpu-resources: Intel
/// memory/millicores are not devices).
pub fn is_gpu_resource(r: &str) -> bool {
    r == "nvidia.com/gpu"
        || r.starts_with("nvidia.com/mig-")
        || r == "amd.com/gpu"
        || (r.starts_with("gpu.intel.com/") && !r.contains("memory") && !r.contains("millicores"))
}

fn size_key(p: &PodInfo) -> (i64, i64, i64) {
    let gpu = p
        .requests
        .iter()
        .filter(|(r, _)| is_gpu_resource(r))
        .map(|(_, v)| *v)
        .sum();
    let get = |r: &str| p.requests.get(r).copied().unwrap_or(0);
    (gpu, get("cpu"), get("memory"))
}

/// Room of one node for the remaining members (docs/design-simulation.md#domains-and-room);
/// `fits[m]` says whether member m fits the node on its own.
fn node_room(
    w: &PreparedCluster,
    members: &[&PodInfo],
    fits: &[bool],
    n: usize,
    per_node: i64,
) -> i64 {
    let Some(largest) = members
        .iter()
        .zip(fits)
        .filter(|(_, f)| **f)
        .map(|(m, _)| m)
        .max_by_key(|m| size_key(m))
    else {
        return 0;
    };
    w.copies_fitting(largest, n).min(per_node).max(1)
}

/// Does every member get a slot (bipartite matching with node capacities)?
fn all_members_match(members: usize, fits: &[Vec<bool>], rooms: &[i64]) -> bool {
    let nodes = rooms.len();
    let edges: Vec<Vec<usize>> = (0..members)
        .map(|m| (0..nodes).filter(|&j| rooms[j] > 0 && fits[j][m]).collect())
        .collect();
    let mut assigned: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    fn augment(
        m: usize,
        edges: &[Vec<usize>],
        rooms: &[i64],
        assigned: &mut Vec<Vec<usize>>,
        seen: &mut Vec<bool>,
    ) -> bool {
        for &j in &edges[m] {
            if seen[j] {
                continue;
            }
            seen[j] = true;
            if (assigned[j].len() as i64) < rooms[j] {
                assigned[j].push(m);
                return true;
            }
            for k in 0..assigned[j].len() {
                let other = assigned[j][k];
                if augment(other, edges, rooms, assigned, seen) {
                    assigned[j][k] = m;
                    return true;
                }
            }
        }
        false
    }
    for m in 0..members {
        let mut seen = vec![false; nodes];
        if !augment(m, &edges, rooms, &mut assigned, &mut seen) {
            return false;
        }
    }
    true
}

/// Room of a domain: Σ node rooms when all remaining members match, else 0.
fn domain_room(w: &PreparedCluster, members: &[&PodInfo], nodes: &[usize], per_node: i64) -> i64 {
    if members.is_empty() {
        return 0;
    }
    let fits: Vec<Vec<bool>> = nodes
        .iter()
        .map(|&n| members.iter().map(|m| w.fits_member(m, n)).collect())
        .collect();
    let rooms: Vec<i64> = nodes
        .iter()
        .zip(&fits)
        .map(|(&n, f)| node_room(w, members, f, n, per_node))
        .collect();
    // Quick reject: not enough slots in total.
    if rooms.iter().sum::<i64>() < members.len() as i64 {
        return rooms.iter().sum();
    }
    if all_members_match(members.len(), &fits, &rooms) {
        rooms.iter().sum()
    } else {
        0
    }
}

/// Orders members: a member whose required pod affinity only a sibling can satisfy goes after
/// that sibling; DoNotSchedule-spread anchors first; ties by name. `None` on a cycle.
fn order_members(w: &PreparedCluster, members: &[PodInfo]) -> Option<Vec<usize>> {
    let n = members.len();
    let mut deps: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    for (i, m) in members.iter().enumerate() {
        for t in &m.aff_req {
            if t.matches(m) {
                continue; // self-match: may go first
            }
            let _ = w;
            for (j, s) in members.iter().enumerate() {
                if i != j && t.matches(s) {
                    deps[i].insert(j);
                }
            }
        }
    }
    let mut done = vec![false; n];
    let mut order = Vec::new();
    while order.len() < n {
        let ready: Vec<usize> = (0..n)
            .filter(|&i| !done[i] && deps[i].iter().all(|&d| done[d]))
            .collect();
        let next = ready.into_iter().min_by_key(|&i| {
            let anchor = members[i]
                .spread
                .iter()
                .any(|c| c.when_unsatisfiable == "DoNotSchedule");
            (!anchor, members[i].name.clone())
        })?;
        done[next] = true;
        order.push(next);
    }
    Some(order)
}

/// What a replacement gang needs, once its PodGroup and the profile's args allow it.
struct GangPlan {
    /// `namespace/podGroup`.
    key: String,
    /// Members that must be placed together (the PodGroup's minMember).
    need: usize,
    topology_key: String,
    /// Member indexes in placement order.
    order: Vec<usize>,
    /// Members one node may hold (1 when members repel each other).
    per_node: i64,
}

/// Places a replacement gang (docs/design-simulation.md#driver). The world is left with the members
/// assumed on success.
pub(crate) fn place_gang(
    w: &mut PreparedCluster,
    profile: &Profile,
    infos: Vec<PodInfo>,
    excluded: &BTreeSet<usize>,
    expired: &mut dyn FnMut() -> bool,
) -> Outcome {
    let plan = match gang_plan(w, profile, &infos) {
        Ok(plan) => plan,
        Err(failed) => return failed,
    };
    let key = &plan.key;
    // Domains over labelled, non-excluded nodes.
    let mut domains: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, n) in w.nodes().iter().enumerate() {
        if excluded.contains(&i) {
            continue;
        }
        if let Some(v) = n.labels.get(&plan.topology_key) {
            domains.entry(v.clone()).or_default().push(i);
        }
    }
    let mut failed: BTreeSet<String> = BTreeSet::new();
    let base = w.pods_len();
    loop {
        if expired() {
            return fail(Cause::DeadlineExceeded, "deadline");
        }
        let all: Vec<&PodInfo> = plan.order.iter().map(|&i| &infos[i]).collect();
        let mut open: Vec<(i64, &String)> = domains
            .iter()
            .filter(|(d, _)| !failed.contains(*d))
            .map(|(d, nodes)| (domain_room(w, &all, nodes, plan.per_node), d))
            .filter(|(room, _)| *room >= plan.need as i64)
            .collect();
        open.sort();
        let Some(&(_, d)) = open.first() else {
            if profile.preemption {
                return fail(
                    Cause::PreemptionMayApply,
                    format!("no domain has room for gang {key}; preemption is enabled"),
                );
            }
            return fail(
                Cause::NoDomainRoom,
                format!("no domain has room for gang {key}"),
            );
        };
        let d = d.clone();
        let nodes = domains[&d].clone();
        if let Some(outcome) = try_domain(w, profile, &infos, &plan, &nodes, excluded, expired) {
            return outcome;
        }
        // PostFilter: release the domain, remember it as failed, try the next.
        w.undo_to(base);
        failed.insert(d);
    }
}

/// Checks the gang against its PodGroup and the profile's args; the failed outcome when the
/// gang cannot be simulated.
fn gang_plan(
    w: &PreparedCluster,
    profile: &Profile,
    infos: &[PodInfo],
) -> Result<GangPlan, Outcome> {
    let Some(args) = profile.gang.clone() else {
        return Err(fail(
            Cause::MixedReplacementGroups,
            "profile does not run OMEGangPack",
        ));
    };
    let first = &infos[0];
    let group = first.pod_group.clone().unwrap_or_default();
    let key = format!("{}/{}", first.namespace, group);
    if infos
        .iter()
        .any(|i| i.pod_group.as_deref() != Some(group.as_str()) || i.namespace != first.namespace)
    {
        return Err(fail(
            Cause::MixedReplacementGroups,
            "replacement pods belong to several gangs",
        ));
    }
    let Some(pg) = w.pod_group(&key).cloned() else {
        return Err(fail(
            Cause::GangPodGroupMissing,
            format!("PodGroup {key} not resolvable yet"),
        ));
    };
    if w.pod_group_member_count(&key) > 0 {
        return Err(fail(
            Cause::ForeignGangState,
            format!("PodGroup {key} already has pods in the snapshot"),
        ));
    }
    if pg.spec.min_member <= 0 {
        return Err(fail(
            Cause::GangMinMemberInvalid,
            format!("PodGroup {key} must declare a positive minMember"),
        ));
    }
    let need = pg.spec.min_member as usize;
    if need != infos.len() {
        return Err(fail(
            Cause::IncompleteGang,
            format!(
                "waiting for all PodGroup member templates for {key}: {} of {need}",
                infos.len()
            ),
        ));
    }
    let label = &args.unsupported_placement_group_label;
    if !label.is_empty()
        && (pg.metadata.labels.contains_key(label)
            || infos.iter().any(|i| i.labels.contains_key(label)))
    {
        return Err(fail(
            Cause::PartnerPlacementGroup,
            "partner placement groups are not supported",
        ));
    }
    let topology_key = pg
        .metadata
        .annotations
        .get(&args.pod_group_topology_key_annotation)
        .filter(|v| !args.pod_group_topology_key_annotation.is_empty() && !v.is_empty())
        .cloned()
        .unwrap_or_else(|| args.topology_key.clone());
    if topology_key.is_empty() {
        return Err(fail(
            Cause::GangTopologyKeyMissing,
            format!(
                "PodGroup {key} must declare ome.io/topology-key or the scheduler must configure topologyKey"
            ),
        ));
    }
    let timeout = match pg.spec.schedule_timeout_seconds {
        Some(t) if t > 0 => i64::from(t),
        _ => args.default_permit_timeout_seconds,
    };
    if timeout <= 0 {
        return Err(fail(
            Cause::GangTimeoutMissing,
            format!(
                "PodGroup {key} must set scheduleTimeoutSeconds or the scheduler must configure defaultPermitTimeoutSeconds"
            ),
        ));
    }
    let Some(order) = order_members(w, infos) else {
        return Err(fail(
            Cause::GangSiblingCycle,
            format!("gang {key}: sibling affinity cycle"),
        ));
    };
    let per_node: i64 = if infos.iter().any(|m| {
        m.anti_req
            .iter()
            .any(|t| infos.iter().any(|s| !std::ptr::eq(s, m) && t.matches(s)))
    }) {
        1
    } else {
        need as i64
    };
    Ok(GangPlan {
        key,
        need,
        topology_key,
        order,
        per_node,
    })
}

/// Places the gang's members in one domain's `nodes`, each where the rest still fit; the
/// outcome when placed or out of time (members released), `None` when the domain cannot take
/// the gang (members left assumed for the caller to release).
fn try_domain(
    w: &mut PreparedCluster,
    profile: &Profile,
    infos: &[PodInfo],
    plan: &GangPlan,
    nodes: &[usize],
    excluded: &BTreeSet<usize>,
    expired: &mut dyn FnMut() -> bool,
) -> Option<Outcome> {
    let base = w.pods_len();
    let (order, per_node) = (&plan.order, plan.per_node);
    let mut placed: Vec<Option<usize>> = vec![None; infos.len()];
    let mut ties = Vec::new();
    for (pos, &mi) in order.iter().enumerate() {
        if expired() {
            w.undo_to(base);
            return Some(fail(Cause::DeadlineExceeded, "deadline"));
        }
        let m = &infos[mi];
        let rest: Vec<&PodInfo> = order[pos + 1..].iter().map(|&i| &infos[i]).collect();
        let mut candidates = Vec::new();
        for &n in nodes {
            if !w.fits_member(m, n) {
                continue;
            }
            if rest.is_empty() {
                candidates.push(n);
                continue;
            }
            let mark = w.pods_len();
            w.assume(m.clone(), n);
            let room = domain_room(w, &rest, nodes, per_node);
            w.undo_to(mark);
            if room >= rest.len() as i64 {
                candidates.push(n);
            }
        }
        match w.cycle(m, &candidates, excluded, profile) {
            Some((n, tied)) => {
                if tied.len() > 1 {
                    ties.push((
                        m.key(),
                        tied.iter().map(|&t| w.node_name(t).to_string()).collect(),
                    ));
                }
                placed[mi] = Some(n);
                w.assume(m.clone(), n);
            }
            None => return None,
        }
    }
    Some(w.feasible(infos, &placed, ties))
}
