//! A plan for one node and one pod: the fewest movable occupants whose departure frees the
//! pod's GPUs, each with targets off the node.

use std::collections::{BTreeMap, BTreeSet};

use alfred_model::index::{InstanceFacts, SnapshotIndex};
use alfred_model::plan::{DrainPlan, PlanMove, plan_id};
use alfred_model::snapshot::{Node, PendingPod, Workload};

use super::occupants::{Occupant, Room, cpu_memory};
use super::pricing::Pricing;
use crate::context::Ctx;

/// The fewest movable occupants whose GPUs reach `need` (at most `max_steps`), ties to
/// fewer GPUs moved, then walk order; `Some(vec![])` when nothing needs to move.
pub(super) fn choose_moves<'o>(
    here: impl Iterator<Item = &'o Occupant>,
    movable: impl Fn(&Occupant) -> bool,
    need: u32,
    max_steps: u32,
) -> Option<Vec<&'o Occupant>> {
    if need == 0 {
        return Some(Vec::new());
    }
    let mut movable: Vec<&Occupant> = here.filter(|o| movable(o)).collect();
    movable.sort_by(|a, b| b.gpus.cmp(&a.gpus).then(a.at.cmp(&b.at)));
    // The fewest moves: the k largest reach `need` first.
    let mut sum = 0u32;
    let k = movable.iter().position(|o| {
        sum += o.gpus;
        sum >= need
    })? + 1;
    if k > max_steps as usize {
        return None;
    }
    // Among subsets of k, the one moving the fewest GPUs (small: a node holds a few).
    let mut best: Vec<&Occupant> = movable[..k].to_vec();
    let mut best_sum: u32 = best.iter().map(|o| o.gpus).sum();
    if movable.len() <= 16 {
        let mut chosen = Vec::with_capacity(k);
        subsets(&movable, k, 0, &mut chosen, &mut |set| {
            let s: u32 = set.iter().map(|o| o.gpus).sum();
            if s >= need && s < best_sum {
                best_sum = s;
                best = set.to_vec();
            }
        });
    }
    best.sort_by(|a, b| b.gpus.cmp(&a.gpus).then(a.at.cmp(&b.at)));
    Some(best)
}

fn subsets<'o>(
    items: &[&'o Occupant],
    k: usize,
    from: usize,
    chosen: &mut Vec<&'o Occupant>,
    visit: &mut dyn FnMut(&[&'o Occupant]),
) {
    if chosen.len() == k {
        visit(chosen);
        return;
    }
    for i in from..items.len() {
        if items.len() - i < k - chosen.len() {
            break;
        }
        chosen.push(items[i]);
        subsets(items, k, i + 1, chosen, visit);
        chosen.pop();
    }
}

/// The plan moving `moves` off `n` for `pod`: targets for each move (claims of the earlier
/// moves counted), the price. `None` when a move finds no target.
#[allow(clippy::too_many_arguments)]
pub(super) fn build_plan(
    ctx: &Ctx<'_>,
    idx: &SnapshotIndex,
    pricing: &Pricing<'_, '_>,
    room: &Room<'_>,
    protected: &BTreeSet<String>,
    pool: &str,
    n: &Node,
    pod: &PendingPod,
    moves: &[&Occupant],
    done_steps: u32,
    continued: bool,
) -> Option<DrainPlan> {
    let mut claims: BTreeMap<usize, Claim> = BTreeMap::new();
    let mut steps = Vec::with_capacity(moves.len());
    let mut changes: BTreeMap<&str, i64> = BTreeMap::new();
    for o in moves {
        let (wi, ci, ii) = o.at;
        let w = &ctx.inputs.snap.workloads[wi];
        let c = &w.components[ci];
        let inst = &c.instances[ii];
        let targets = place(
            ctx,
            idx,
            room,
            w,
            &o.facts,
            (pool, &n.name),
            protected,
            &mut claims,
            !continued,
        )?;
        for (t, gpus) in &targets {
            *changes
                .entry(ctx.inputs.snap.nodes[*t].name.as_str())
                .or_default() -= i64::from(*gpus);
        }
        *changes.entry(n.name.as_str()).or_default() += i64::from(o.gpus);
        let mut names: Vec<String> = Vec::new();
        for (t, _) in &targets {
            let name = &ctx.inputs.snap.nodes[*t].name;
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        steps.push(PlanMove {
            workload: w.key(),
            component: c.kind,
            instance: i64::from(inst.index),
            gpus: o.gpus,
            targets: names,
        });
    }
    let recovered = pricing.benefit(&changes)?;
    let benefit = recovered + f64::from(pod.gpus_needed) * pricing.weight_of(pod.gpus_needed);
    // One basis for both: the benefit is what the moves still to make recover (and the
    // seat), so the cost counts those moves too, not the steps already made (a new plan has
    // at least one move; a continued plan at hand-off has none left and costs nothing more).
    let to_make = u32::try_from(steps.len()).ok()?;
    let cost = f64::from(to_make) * ctx.inputs.cfg.move_cost() * f64::from(n.total_gpus);
    Some(DrainPlan {
        id: plan_id(&n.name, &n.uid, &pod.key(), &pod.uid),
        pool: pool.to_owned(),
        node: n.name.clone(),
        node_uid: n.uid.clone(),
        pod: pod.key(),
        pod_uid: pod.uid.clone(),
        pod_gpus: pod.gpus_needed,
        pending_since: pod.pending_since,
        steps,
        recovered_gpus: recovered,
        benefit_gpus: benefit,
        cost_gpus: cost,
        continued,
        done_steps,
    })
}

/// What a plan's earlier moves claimed on a target.
#[derive(Debug, Clone, Copy, Default)]
struct Claim {
    gpus: u32,
    cpu_memory: [i64; 2],
}

/// First-fit targets for the Instance's GPU pods (largest first) on the pool's target list
/// (fullest first), off `node` and the protected nodes, within each target's free GPUs, CPU
/// and memory less `claims` (updated): `(node position, GPUs)` per pod. With `spare`, each pod
/// also needs a second node that would take it (a new plan; a started plan goes on with one).
#[allow(clippy::too_many_arguments)]
fn place(
    ctx: &Ctx<'_>,
    idx: &SnapshotIndex,
    room: &Room<'_>,
    w: &Workload,
    facts: &InstanceFacts,
    (pool, node): (&str, &str),
    protected: &BTreeSet<String>,
    claims: &mut BTreeMap<usize, Claim>,
    spare: bool,
) -> Option<Vec<(usize, u32)>> {
    let mut prints: Vec<(u32, [i64; 2])> = idx
        .pods_of(facts)
        .iter()
        .filter_map(|&pi| {
            let f = idx.pods.get(pi as usize)?;
            let p = ctx.inputs.snap.pods.get(pi as usize)?;
            Some((f.gpus, cpu_memory(&p.scheduling.requests)))
        })
        .filter(|(g, _)| *g > 0)
        .collect();
    prints.sort_by_key(|p| std::cmp::Reverse(p.0));
    let list = ctx.target_list(pool, w);
    let mut out = Vec::with_capacity(prints.len());
    for (gpus, want) in prints {
        let start = list.free.partition_point(|f| *f < gpus);
        let mut fitting = list.nodes[start..].iter().copied().filter(|&t| {
            let name = &ctx.inputs.snap.nodes[t].name;
            let claimed = claims.get(&t).copied().unwrap_or_default();
            name != node
                && !protected.contains(name)
                && ctx.inputs.snap.nodes[t]
                    .free_gpus
                    .saturating_sub(claimed.gpus)
                    >= gpus
                && room.fits(t, claimed.cpu_memory, want)
        });
        let chosen = fitting.next()?;
        // A second node that would take the pod: a pod arriving between the decision and
        // OMENative's surge can take the first, and a step whose pod then fits nowhere
        // fails (and backs the pool off). A started plan is not given up for want of one.
        if spare {
            fitting.next()?;
        }
        let claim = claims.entry(chosen).or_default();
        claim.gpus += gpus;
        for (held, more) in claim.cpu_memory.iter_mut().zip(want) {
            *held = held.saturating_add(more);
        }
        out.push((chosen, gpus));
    }
    Some(out)
}
