//! What stands on each node: its GPU-holding Instances (which a plan may move) and the CPU
//! and memory it has left (which a target and the freed node must have).

use std::collections::BTreeMap;

use alfred_model::index::{COMPONENT_OMENATIVE, InstanceFacts, NONE, SnapshotIndex};

use crate::context::Ctx;
use crate::eligibility::omenative_eligibility_at;

/// One GPU occupant of a node, as a plan may see it.
#[derive(Debug, Clone)]
pub(super) struct Occupant {
    /// Workload, component and Instance positions.
    pub(super) at: (usize, usize, usize),
    /// Its facts in the index.
    pub(super) facts: InstanceFacts,
    /// GPUs it holds on the node.
    pub(super) gpus: u32,
    /// Whether it passes the cheap half of [`Occupant::movable`] (workload, single node,
    /// OMENative).
    may_move: bool,
    /// Its component's index flags.
    component_flags: u8,
    /// The eligibility ladder's answer, worked out the first time a search asks: the
    /// search reads the occupants of one pool's nodes, not the cluster's.
    eligible: std::cell::OnceCell<bool>,
}

impl Occupant {
    /// Whether a plan may move it.
    pub(super) fn movable(&self, ctx: &Ctx<'_>, idx: &SnapshotIndex) -> bool {
        self.may_move
            && *self.eligible.get_or_init(|| {
                let w = &ctx.inputs.snap.workloads[self.at.0];
                omenative_eligibility_at(ctx, idx, w, self.component_flags, &self.facts).is_none()
            })
    }
}

/// CPU (millicores) and memory (bytes) each node has left for new pods: `status.allocatable`
/// less the requests of the pods bound to it that have not ended (`i64::MAX` where the node
/// reports no allocatable of that kind: no check). The drain-plan search checks them with
/// the GPUs, as the scheduler will: a target or a freed node short of CPU or memory is a
/// plan the pre-submit simulation refuses, or a node the waiting pod cannot take.
///
/// A node's figures are worked out the first time the search asks for them: the search
/// reaches a few nodes per pass, and reading every bound pod's requests (string-keyed maps
/// spread over the whole snapshot) cost a large cluster's pass more time than the search.
/// What is built up front is only each node's bound pods, from the index's dense pod table.
pub(super) struct Room<'s> {
    snap: &'s alfred_model::ClusterSnapshot,
    /// Per node position `n`: its bound pods are `pods[starts[n]..starts[n + 1]]`, in
    /// snapshot order.
    starts: Vec<u32>,
    pods: Vec<u32>,
    /// The figures worked out so far, by node position.
    spare: std::cell::RefCell<Vec<Option<[i64; 2]>>>,
}

/// `[cpu, memory]` of a requests map.
pub(super) fn cpu_memory(requests: &BTreeMap<String, i64>) -> [i64; 2] {
    [
        requests.get("cpu").copied().unwrap_or(0).max(0),
        requests.get("memory").copied().unwrap_or(0).max(0),
    ]
}

impl<'s> Room<'s> {
    pub(super) fn of(snap: &'s alfred_model::ClusterSnapshot, idx: &SnapshotIndex) -> Room<'s> {
        let nodes = snap.nodes.len();
        let mut starts = vec![0u32; nodes + 1];
        let on_node = |f: &alfred_model::index::PodFacts| {
            (f.node != NONE && (f.node as usize) < nodes).then_some(f.node as usize)
        };
        for n in idx.pods.iter().filter_map(on_node) {
            starts[n + 1] += 1;
        }
        for n in 0..nodes {
            starts[n + 1] += starts[n];
        }
        let mut next = starts.clone();
        let mut pods = vec![0u32; starts[nodes] as usize];
        for (i, f) in idx.pods.iter().enumerate() {
            if let (Some(n), Ok(i)) = (on_node(f), u32::try_from(i)) {
                pods[next[n] as usize] = i;
                next[n] += 1;
            }
        }
        Room {
            snap,
            starts,
            pods,
            spare: std::cell::RefCell::new(vec![None; nodes]),
        }
    }

    /// Node `n`'s CPU and memory left (see the type's documentation).
    pub(super) fn spare(&self, n: usize) -> Option<[i64; 2]> {
        let node = self.snap.nodes.get(n)?;
        if let Some(known) = self.spare.borrow().get(n).copied().flatten() {
            return Some(known);
        }
        let get = |k: &str| node.allocatable.get(k).copied().unwrap_or(i64::MAX);
        let mut room = [get("cpu"), get("memory")];
        let (lo, hi) = (self.starts[n] as usize, self.starts[n + 1] as usize);
        for &pi in &self.pods[lo..hi] {
            let Some(p) = self.snap.pods.get(pi as usize) else {
                continue;
            };
            if matches!(
                p.phase,
                alfred_model::snapshot::PodPhase::Succeeded
                    | alfred_model::snapshot::PodPhase::Failed
            ) {
                continue;
            }
            let used = cpu_memory(&p.scheduling.requests);
            for k in 0..2 {
                room[k] = room[k].saturating_sub(used[k]);
            }
        }
        if let Some(slot) = self.spare.borrow_mut().get_mut(n) {
            *slot = Some(room);
        }
        Some(room)
    }

    /// Whether `want` fits node `n` with `claimed` already taken there.
    pub(super) fn fits(&self, n: usize, claimed: [i64; 2], want: [i64; 2]) -> bool {
        self.spare(n)
            .is_some_and(|room| (0..2).all(|k| room[k].saturating_sub(claimed[k]) >= want[k]))
    }
}

/// Every node's GPU-holding Instances, in walk order: one flat list and, per node, the
/// positions of its occupants in it (a list per node cost a large cluster's pass thousands
/// of small allocations).
pub(super) struct Occupants {
    /// Every occupant, in walk order (an Instance on two nodes is here twice).
    all: Vec<Occupant>,
    /// Per node position `n`: its occupants are `all[order[starts[n]..starts[n + 1]]]`.
    starts: Vec<u32>,
    order: Vec<u32>,
}

impl Occupants {
    /// Node position `n`'s occupants, in walk order.
    pub(super) fn at(&self, n: usize) -> impl Iterator<Item = &Occupant> + Clone {
        let range = match (self.starts.get(n), self.starts.get(n + 1)) {
            (Some(&lo), Some(&hi)) => lo as usize..hi as usize,
            _ => 0..0,
        };
        self.order[range]
            .iter()
            .filter_map(|&i| self.all.get(i as usize))
    }
}

/// Every node's GPU-holding Instances (by node position), in walk order.
pub(super) fn occupants_by_node(ctx: &Ctx<'_>, idx: &SnapshotIndex) -> Occupants {
    let node_count = ctx.inputs.snap.nodes.len();
    // Most Instances hold GPUs on one node: reserved at that size, the table is allocated
    // once instead of doubled through a chain of copies (a few hundred KiB a pass on a large
    // cluster, each doubling a fresh allocation the allocator takes from the system).
    let mut all: Vec<Occupant> = Vec::with_capacity(idx.instances.len());
    // The node position of each of `all`.
    let mut node_of: Vec<u32> = Vec::with_capacity(idx.instances.len());
    // An Instance's GPUs per node, ascending node (most Instances have one pod).
    let mut per_node: Vec<(u32, u32)> = Vec::new();
    let (mut next_component, mut next_instance) = (0usize, 0usize);
    for (wi, w) in ctx.inputs.snap.workloads.iter().enumerate() {
        let workload_ok = w.settings.movable
            && w.migration.active.is_empty()
            && !ctx.in_cooldown(w)
            && ctx.model_reason(w).is_none();
        // Components and Instances from the index alone.
        for ci in 0..w.components.len() {
            let component = idx.component(next_component);
            let (flags, count) = (component.flags, component.instances);
            next_component += 1;
            for ii in 0..count {
                let Some(facts) = idx.instances.get(next_instance).copied() else {
                    next_instance += 1;
                    continue;
                };
                next_instance += 1;
                let nodes = idx.nodes_of(&facts);
                per_node.clear();
                for &pi in idx.pods_of(&facts) {
                    if let Some(f) = idx.pods.get(pi as usize)
                        && f.node != NONE
                        && f.gpus > 0
                    {
                        match per_node.iter_mut().find(|(n, _)| *n == f.node) {
                            Some((_, gpus)) => *gpus += f.gpus,
                            None => per_node.push((f.node, f.gpus)),
                        }
                    }
                }
                if per_node.is_empty() {
                    continue;
                }
                per_node.sort_unstable_by_key(|(n, _)| *n);
                let single_node = nodes.len() == 1 && nodes[0] != NONE;
                let may_move = workload_ok && single_node && flags & COMPONENT_OMENATIVE != 0;
                for &(node, gpus) in &per_node {
                    if node as usize >= node_count {
                        continue;
                    }
                    all.push(Occupant {
                        at: (wi, ci, ii),
                        facts,
                        gpus,
                        may_move,
                        component_flags: flags,
                        eligible: std::cell::OnceCell::new(),
                    });
                    node_of.push(node);
                }
            }
        }
    }
    // A stable counting sort of `all`'s positions by node: each node's in walk order.
    let mut starts = vec![0u32; node_count + 1];
    for &n in &node_of {
        starts[n as usize + 1] += 1;
    }
    for n in 0..node_count {
        starts[n + 1] += starts[n];
    }
    let mut next = starts.clone();
    let mut order = vec![0u32; node_of.len()];
    for (i, &n) in node_of.iter().enumerate() {
        let slot = &mut next[n as usize];
        order[*slot as usize] = u32::try_from(i).unwrap_or(u32::MAX);
        *slot += 1;
    }
    Occupants { all, starts, order }
}

/// `[cpu, memory]` the Instance's pods request on node position `node`.
pub(super) fn requests_on(
    ctx: &Ctx<'_>,
    idx: &SnapshotIndex,
    facts: &InstanceFacts,
    node: usize,
) -> [i64; 2] {
    idx.pods_of(facts)
        .iter()
        .filter(|&&pi| {
            idx.pods
                .get(pi as usize)
                .is_some_and(|f| f.node as usize == node)
        })
        .filter_map(|&pi| ctx.inputs.snap.pods.get(pi as usize))
        .fold([0i64; 2], |acc, p| {
            let r = cpu_memory(&p.scheduling.requests);
            [acc[0].saturating_add(r[0]), acc[1].saturating_add(r[1])]
        })
}
