//! Drain plans (docs/design-policies.md#drain-plans): free one node for one pending pod that fits
//! nowhere.
//!
//! Per pool, in pool-key order:
//! 1. every active plan of the dispatch state is re-planned on this snapshot (same node, same
//!    pod): the moves still needed, or why it can no longer go on;
//! 2. while the pool has fewer than `maxActivePlans` active plans and is not backing off
//!    after abandoned plans, the waiting pods (older than `emergencyPendingAgeMinutes`, fitting
//!    on no node now at their real size, not nominated elsewhere) are taken largest first, then
//!    **youngest**, and each gets the best plan over the pool's nodes it could land on, if one
//!    pays: the best one the hourly budget left covers, else the best of all (which the
//!    arbiter then holds back with `PlanBudgetInsufficient`).
//!
//!    A pod that waits alone for its size (no other pod of its size waited past the
//!    emergency age in the pool) gets a plan only after `lonePodWaitMinutes`: see below.
//!
//! Why the youngest: the scheduler's queue gives a node that churn frees to the oldest pod
//! that fits it. A plan made for that pod races the queue for the whole of its drain, and
//! when a node frees elsewhere first the pod binds there, the nomination goes, and the
//! half-emptied node refills with small pods before the next pass: the plan's moves are
//! lost. A plan for the youngest waiting pod of the size leaves the free nodes churn brings
//! to the older pods ahead of it in the queue, so both are served. A pod alone in the queue
//! has nobody ahead of it to take those nodes, so it is given `lonePodWaitMinutes` to get one
//! before a plan starts: on the trace twin, five in six plans for such pods were lost. Both
//! rules are measured in `adapters/alfred-twin/EVALUATION.md`, tenth evaluation.
//!
//! A plan for (node, pod) moves the fewest movable single-node OMENative Instances off the
//! node (the eligibility ladder of any move; other occupants stay) whose GPUs raise the node's
//! free GPUs to the pod's request, at most `maxStepsPerPlan`, ties to fewer GPUs moved, then
//! Instance order. Each move gets targets off the node by the surge plan's rule (fullest
//! first) with the plan's earlier moves' claims counted, never the plan's node, another
//! plan's node or an excluded node.
//!
//! **Pricing, in GPUs.** With the pool's bins, weights `w(s)` and free GPUs `F`, the unusable
//! free GPUs are `U = Σ_s w(s)·max(0, F − slots(s)·s)` (the pool's observed fragmentation
//! times `F`). A plan recovers `ΔU = U(before) − U(after)` over the whole plan, and it seats the
//! waiting pod, whose `g` GPUs were unusable for its size: its benefit is
//! `ΔU + g·w(snap(g))`: the seat counts the pod's GPUs at the demand weight of its size,
//! where doubling `ΔU` would count nothing for a pod whose size no slot count sees (a 7-GPU pod
//! freed a 7-GPU hole: no 8-GPU slot appears) and would reward a plan for slots of other sizes
//! it frees on the way. Its cost is `steps × moveCost × the node's GPUs` (1.2 GPUs a
//! step for an 8-GPU node with `balanced`). A plan goes ahead when benefit > cost. Moves stay
//! inside the pool, so `F` is unchanged and the price depends only on the bins the plan
//! touches and the pool's weights: adding idle pools or full nodes changes nothing, and a
//! one-step plan's `ΔU` is the seeds' single-move benefit times `F`.
//!
//! Here: the search's driving loop, the branch and bound over a pool's nodes, re-planning
//! active plans and their rows. Beside it: which pods wait and which nodes they could take
//! (`fit`), what stands on each node (`occupants`), the price and order of plans (`pricing`)
//! and a plan for one node and pod (`construction`).

use std::collections::BTreeSet;

use alfred_model::index::SnapshotIndex;
use alfred_model::plan::{DRAIN_TAINT_KEY, DrainPlan, PlanRecord, PlanStepRef};
use alfred_model::reason::{AdvisoryReason, PlanEndReason, RowReason};
use alfred_model::record::{Candidate, Policy};
use alfred_model::snapshot::{Node, PendingPod};
use alfred_score::Analysis;

use crate::context::Ctx;
use crate::rows::row;

mod construction;
mod fit;
mod occupants;
mod pricing;

use construction::{build_plan, choose_moves};
pub use fit::could_take;
use fit::{nominations, usable_for, waits_alone, waits_for_a_node};
use occupants::{Occupant, Occupants, Room, cpu_memory, occupants_by_node, requests_on};
pub use pricing::unusable_gpus;
use pricing::{Pricing, better};

/// Most waiting pods tried per pool and pass: pods of one size and spec find the same nodes,
/// so past a few the search only repeats itself.
const MAX_PODS_TRIED: usize = 8;

/// What the drain-plan search found in one pass.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DrainProposal {
    /// The plans to go on with or start, active ones first, each pool in key order.
    pub plans: Vec<DrainPlan>,
    /// Active plans that can no longer go on: `(plan id, why)`.
    pub blocked: Vec<(String, PlanEndReason)>,
}

/// Runs the search (see the module documentation). `records` is every plan of the dispatch
/// state (active and ended: the ended ones set the pools' backoff).
pub(crate) fn run(ctx: &Ctx<'_>, analysis: &Analysis<'_>, records: &[PlanRecord]) -> DrainProposal {
    run_with(ctx, analysis, records, Search::BranchAndBound)
}

fn run_with(
    ctx: &Ctx<'_>,
    analysis: &Analysis<'_>,
    records: &[PlanRecord],
    search: Search,
) -> DrainProposal {
    let cfg = ctx.inputs.cfg;
    let mut out = DrainProposal::default();
    let active: Vec<&PlanRecord> = records.iter().filter(|r| r.active()).collect();
    if !cfg.defragmentation_enabled
        || !cfg.drain_plans_enabled
        || !cfg.omenative_migration_enabled
        || !ctx.inputs.snap.executor.available
    {
        // The dispatcher ends active plans for these reasons; nothing to re-plan.
        return out;
    }
    let idx = ctx.inputs.snap.index();
    // Built on first use: most passes of a large cluster have no active plan and no pod
    // waiting long enough, and these walk every Instance and every bound pod.
    let occupants_cell = std::cell::OnceCell::new();
    let occupants = || occupants_cell.get_or_init(|| occupants_by_node(ctx, &idx));
    let room_cell = std::cell::OnceCell::new();
    let room = || room_cell.get_or_init(|| Room::of(&ctx.inputs.snap, &idx));
    // Nodes no plan may use as a target or a new plan's node.
    let mut protected: BTreeSet<String> = active.iter().map(|r| r.node.clone()).collect();
    let nominated = nominations(ctx);
    // The steps a new plan may have under the hourly cap (everyone's migrations the
    // snapshot shows started in the last hour, each step met at the pass it is due): a plan
    // that fits goes before a better one that would wait.
    let window = std::time::Duration::from_secs(3600);
    let starts =
        alfred_model::count::migration_starts_within(&ctx.inputs.snap, &[], ctx.inputs.now, window);
    let budget_left = alfred_model::count::plan_steps_within_cap(
        &starts,
        ctx.inputs.now,
        window,
        cfg.decision_loop_interval,
        cfg.max_migrations_per_hour,
        0,
        cfg.drain_max_steps_per_plan,
    );
    // Pods with a plan (active, or proposed in an earlier pool this pass: a pod any pool
    // may take gets one plan, not one per pool).
    let mut busy_pods: BTreeSet<String> = active.iter().map(|r| r.pod.clone()).collect();
    for pool in ctx.inputs.snap.pools() {
        let Some(eval) = analysis.pool(pool.as_str()) else {
            continue;
        };
        let pricing = Pricing::new(eval);
        let mut in_pool = 0usize;
        for r in active.iter().filter(|r| r.pool == *pool) {
            in_pool += 1;
            match replan(ctx, &idx, occupants(), room(), &protected, &pricing, r) {
                Ok(plan) => out.plans.push(plan),
                Err(why) => out.blocked.push((r.id.clone(), why)),
            }
        }
        if in_pool >= cfg.drain_max_active_plans as usize
            || backing_off(ctx, records, pool.as_str())
        {
            continue;
        }
        // The pool's usable nodes with free GPUs, most free first: a pod fits now only on a
        // prefix of them (none at all for most waiting pods of a fragmented pool), so the
        // check below reads a few nodes, not the pool, for each waiting pod.
        let mut roomy: Vec<&Node> = ctx
            .inputs
            .snap
            .nodes
            .iter()
            .filter(|n| n.pool.as_deref() == Some(pool.as_str()) && n.has_gpus())
            .filter(|n| !n.unavailable() && n.ready && n.free_gpus > 0)
            .collect();
        roomy.sort_by_key(|n| std::cmp::Reverse(n.free_gpus));
        let mut waiting: Vec<&PendingPod> = ctx
            .inputs
            .snap
            .pending_pods
            .iter()
            .filter(|p| {
                waits_for_a_node(ctx, pool.as_str(), &roomy, p) && !busy_pods.contains(&p.key())
            })
            .collect();
        // Largest first, then youngest (the module's doc says why).
        waiting.sort_by(|a, b| {
            b.gpus_needed
                .cmp(&a.gpus_needed)
                .then(b.pending_since.cmp(&a.pending_since))
                .then_with(|| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)))
        });
        // Pods asking the same GPUs with the same scheduling spec find the same plans: one
        // that found none spares the search for the others.
        let mut planless: Vec<&PendingPod> = Vec::new();
        for pod in waiting.into_iter().take(MAX_PODS_TRIED) {
            if in_pool >= cfg.drain_max_active_plans as usize {
                break;
            }
            if planless
                .iter()
                .any(|q| q.gpus_needed == pod.gpus_needed && q.scheduling == pod.scheduling)
            {
                continue;
            }
            if waits_alone(ctx, pool.as_str(), pod)
                && ctx.inputs.now.minutes_since(pod.pending_since)
                    < f64::from(cfg.drain_lone_pod_wait_minutes)
            {
                continue;
            }
            let best = best_new_plan(
                ctx,
                &idx,
                occupants(),
                room(),
                &protected,
                &nominated,
                &pricing,
                pool.as_str(),
                pod,
                budget_left,
                search,
            );
            match best {
                Some(plan) => {
                    protected.insert(plan.node.clone());
                    busy_pods.insert(plan.pod.clone());
                    out.plans.push(plan);
                    in_pool += 1;
                }
                None => planless.push(pod),
            }
        }
    }
    out
}

/// Whether the pool is backing off: its latest plans were abandoned, the last one less than
/// `abandonBackoffMinutes × 2^(k−1)` ago (k abandons in a row since the last completed plan,
/// at most ×8). Only abandons that say the plan went wrong count
/// ([`PlanEndReason::counts_toward_backoff`]): a plan overtaken because its pod bound
/// elsewhere neither extends the streak nor ends it.
fn backing_off(ctx: &Ctx<'_>, records: &[PlanRecord], pool: &str) -> bool {
    let mut ended: Vec<&PlanRecord> = records
        .iter()
        .filter(|r| r.pool == pool && r.phase.ended() && r.ended_at.is_some())
        .filter(|r| {
            r.phase != alfred_model::plan::PlanPhase::Abandoned
                || r.reason.is_none_or(PlanEndReason::counts_toward_backoff)
        })
        .collect();
    ended.sort_by(|a, b| b.ended_at.cmp(&a.ended_at).then(a.id.cmp(&b.id)));
    let streak = ended
        .iter()
        .take_while(|r| r.phase == alfred_model::plan::PlanPhase::Abandoned)
        .count();
    let Some(last) = ended.first().and_then(|r| r.ended_at) else {
        return false;
    };
    if streak == 0 {
        return false;
    }
    let factor = 1u32 << (streak.min(4) - 1);
    let window = f64::from(ctx.inputs.cfg.drain_abandon_backoff_minutes) * f64::from(factor);
    ctx.inputs.now.minutes_since(last) < window
}

/// How [`best_new_plan`] walks the candidate nodes: the exhaustive walk is the reference
/// the branch and bound is tested against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Search {
    BranchAndBound,
    #[cfg(test)]
    Exhaustive,
}

/// The best new plan for `pod` in `pool`, if one pays.
///
/// Branch and bound: a plan recovers at most what its node's freed GPUs alone recover
/// (targets only lose slots, and `U` falls as slots rise), so each candidate node gets a
/// bound on its rank from its moves alone, nodes are tried best bound first, and the search
/// stops once no bound can beat the plans found. The answer is the one trying every node
/// gives (the plan order is total), found by building a few plans instead of one per node.
#[allow(clippy::too_many_arguments)]
fn best_new_plan(
    ctx: &Ctx<'_>,
    idx: &SnapshotIndex,
    occupants: &Occupants,
    room: &Room<'_>,
    protected: &BTreeSet<String>,
    nominated: &BTreeSet<String>,
    pricing: &Pricing<'_, '_>,
    pool: &str,
    pod: &PendingPod,
    budget_left: u32,
    search: Search,
) -> Option<DrainPlan> {
    let prune = search == Search::BranchAndBound;
    let seat = f64::from(pod.gpus_needed) * pricing.weight_of(pod.gpus_needed);
    let mut candidates: Vec<(f64, usize, Vec<&Occupant>)> = Vec::new();
    for (pos, n) in ctx.inputs.snap.nodes.iter().enumerate() {
        if n.total_gpus < pod.gpus_needed
            || n.pool.as_deref() != Some(pool)
            || protected.contains(&n.name)
            || nominated.contains(&n.name)
            || n.taints.iter().any(|t| t.key == DRAIN_TAINT_KEY)
            || !usable_for(n, &pod.scheduling)
        {
            continue;
        }
        let need = pod.gpus_needed.saturating_sub(n.free_gpus);
        let Some(moves) = choose_moves(
            occupants.at(pos),
            |o| o.movable(ctx, idx),
            need,
            ctx.inputs.cfg.drain_max_steps_per_plan,
        ) else {
            continue;
        };
        let freed: u32 = moves.iter().map(|o| o.gpus).sum();
        let Some(recovered) = pricing.benefit_of_freeing(&n.name, freed) else {
            continue;
        };
        let steps = u32::try_from(moves.len()).unwrap_or(u32::MAX).max(1);
        let cost = f64::from(steps) * ctx.inputs.cfg.move_cost() * f64::from(n.total_gpus);
        let bound = recovered + seat - cost;
        if prune && bound <= -BOUND_SLACK {
            continue; // cannot pay
        }
        candidates.push((bound / f64::from(steps), pos, moves));
    }
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut pick = Pick::new(budget_left);
    for (bound, pos, moves) in candidates {
        let covered = u32::try_from(moves.len()).unwrap_or(u32::MAX) <= budget_left;
        if prune && !pick.could_take(bound, covered) {
            if !pick.could_take(bound, true) {
                break; // later bounds are lower still
            }
            continue;
        }
        let n = &ctx.inputs.snap.nodes[pos];
        // The pod must find the CPU and memory it asks on the node once the moves left.
        let freed = moves.iter().fold([0i64; 2], |acc, o| {
            let own = requests_on(ctx, idx, &o.facts, pos);
            [acc[0].saturating_add(own[0]), acc[1].saturating_add(own[1])]
        });
        let want = cpu_memory(&pod.scheduling.requests);
        if !room.fits(pos, [-freed[0], -freed[1]], want) {
            continue;
        }
        let Some(plan) = build_plan(
            ctx, idx, pricing, room, protected, pool, n, pod, &moves, 0, false,
        ) else {
            continue;
        };
        if plan.benefit_gpus.partial_cmp(&plan.cost_gpus) != Some(std::cmp::Ordering::Greater) {
            continue;
        }
        pick.offer(plan);
    }
    pick.best()
}

/// How far a plan's price may stray from its bound by `f64` rounding alone (the bound and
/// the price sum the same terms in different orders): bounds are compared with this slack,
/// so rounding never prunes a plan the full search would pick.
const BOUND_SLACK: f64 = 1e-6;

/// The choice among the plans one pod could have: the best ([`better`]) the hourly budget
/// left covers, else the best of all (the arbiter holds that one back with
/// `PlanBudgetInsufficient`, and the record says why nothing started).
struct Pick {
    budget_left: u32,
    best: Option<DrainPlan>,
    best_covered: Option<DrainPlan>,
}

impl Pick {
    fn new(budget_left: u32) -> Pick {
        Pick {
            budget_left,
            best: None,
            best_covered: None,
        }
    }

    fn offer(&mut self, plan: DrainPlan) {
        let covered = u32::try_from(plan.steps.len()).unwrap_or(u32::MAX) <= self.budget_left;
        if covered && self.best_covered.as_ref().is_none_or(|b| better(&plan, b)) {
            self.best_covered = Some(plan.clone());
        }
        if self.best.as_ref().is_none_or(|b| better(&plan, b)) {
            self.best = Some(plan);
        }
    }

    /// Whether a plan whose rank is at most `bound` could still be picked: better than the
    /// best covered plan (a plan the budget covers) or the best of all (one it does not).
    fn could_take(&self, bound: f64, covered: bool) -> bool {
        let to_beat = if covered {
            &self.best_covered
        } else {
            &self.best
        };
        to_beat
            .as_ref()
            .is_none_or(|b| bound + BOUND_SLACK >= b.rank())
    }

    fn best(self) -> Option<DrainPlan> {
        self.best_covered.or(self.best)
    }
}

/// Re-plans an active plan on this snapshot: the moves still needed (none at hand-off), or
/// why it cannot go on.
fn replan(
    ctx: &Ctx<'_>,
    idx: &SnapshotIndex,
    occupants: &Occupants,
    room: &Room<'_>,
    protected: &BTreeSet<String>,
    pricing: &Pricing<'_, '_>,
    r: &PlanRecord,
) -> Result<DrainPlan, PlanEndReason> {
    let pos = ctx.node_position(&r.node).ok_or(PlanEndReason::NodeGone)?;
    let n = &ctx.inputs.snap.nodes[pos];
    // The pod: pending (the dispatcher ends the plan when it bound or went away).
    let pod = ctx
        .inputs
        .snap
        .pending_pods
        .iter()
        .find(|p| p.has_key(&r.pod))
        .ok_or(PlanEndReason::PodGone)?;
    let here = occupants.at(pos);
    // Instances a step already asked to leave count as gone.
    let leaving = |o: &Occupant| {
        let w = &ctx.inputs.snap.workloads[o.at.0];
        let c = &w.components[o.at.1];
        let inst = &c.instances[o.at.2];
        r.steps.iter().any(|s| {
            !s.request_uuid.is_empty()
                && w.has_key(&s.workload)
                && s.component == c.kind
                && s.instance == i64::from(inst.index)
        })
    };
    let leaving_gpus: u32 = here.clone().filter(|o| leaving(o)).map(|o| o.gpus).sum();
    let staying: Vec<&Occupant> = here.filter(|o| !leaving(o)).collect();
    let need = r
        .gpus
        .saturating_sub(n.free_gpus.saturating_add(leaving_gpus));
    let done = u32::try_from(
        r.steps
            .iter()
            .filter(|s| !s.request_uuid.is_empty())
            .count(),
    )
    .unwrap_or(u32::MAX);
    let left = ctx.inputs.cfg.drain_max_steps_per_plan.saturating_sub(done);
    let moves = choose_moves(staying.iter().copied(), |o| o.movable(ctx, idx), need, left)
        .ok_or_else(|| {
            // GPUs held by what no plan can move (other pods, immovable Instances).
            let movable: u32 = staying
                .iter()
                .filter(|o| o.movable(ctx, idx))
                .map(|o| o.gpus)
                .sum();
            let fixed = n
                .total_gpus
                .saturating_sub(n.free_gpus)
                .saturating_sub(leaving_gpus)
                .saturating_sub(movable);
            if n.total_gpus.saturating_sub(fixed) < r.gpus {
                PlanEndReason::NodeRefilled
            } else {
                PlanEndReason::StepIneligible
            }
        })?;
    // Its own node is not protected from itself.
    let others: BTreeSet<String> = protected
        .iter()
        .filter(|p| **p != r.node)
        .cloned()
        .collect();
    let mut plan = build_plan(
        ctx, idx, pricing, room, &others, &r.pool, n, pod, &moves, done, true,
    )
    .ok_or(PlanEndReason::StepIneligible)?;
    plan.id = r.id.clone();
    Ok(plan)
}

/// The rows of the plans (docs/design-policies.md#drain-plans): each plan's next move is an
/// executable candidate, ranked by the plan's score in GPUs; its later moves are advice
/// (`DrainPlanStepWaiting`). Every row carries its plan and step. Targets are never a plan's node.
///
/// A step is an emergency ([`urgent`]) only when the plan's pod makes it one; outside the
/// maintenance windows the next move of a plan that is not is held: advice with
/// `NonExecutableObservedFragmentation`, the reason of any move a closed window holds.
pub(crate) fn candidates(ctx: &Ctx<'_>, proposal: &DrainProposal) -> Vec<Candidate> {
    let plan_nodes: BTreeSet<&str> = proposal.plans.iter().map(|p| p.node.as_str()).collect();
    let window_open = ctx.inputs.cfg.window_open(ctx.inputs.now);
    let mut out = Vec::new();
    for plan in &proposal.plans {
        let total = u32::try_from(plan.steps.len()).unwrap_or(u32::MAX);
        let done = plan_done_steps(plan);
        let pod = ctx.inputs.snap.pending_pod_by_key(&plan.pod);
        for (k, step) in plan.steps.iter().enumerate() {
            let Some((ns, name)) = step.workload.split_once('/') else {
                continue;
            };
            let Some(w) = ctx.inputs.snap.workload(ns, name) else {
                continue;
            };
            let Some(c) = w.components.iter().find(|c| c.kind == step.component) else {
                continue;
            };
            let Some(inst) = c
                .instances
                .iter()
                .find(|i| i64::from(i.index) == step.instance)
            else {
                continue;
            };
            let first = k == 0;
            let emergency = pod.is_some_and(|p| urgent(ctx, w, p));
            let advisory = if !first {
                Some(AdvisoryReason::DrainPlanStepWaiting)
            } else if !window_open && !emergency {
                Some(AdvisoryReason::NonExecutableObservedFragmentation)
            } else {
                None
            };
            let mut r = row(
                Policy::Defragmentation,
                w,
                c.kind,
                step.instance,
                &c.mode,
                RowReason::Fragmentation,
                plan.node.clone(),
                advisory,
            );
            r.benefit = plan.benefit_gpus;
            r.cost = plan.cost_gpus;
            r.score = plan.score();
            r.emergency = emergency;
            r.footprint_gpus = inst.total_gpus;
            r.plan = Some(PlanStepRef {
                plan_id: plan.id.clone(),
                step: done + u32::try_from(k).unwrap_or(0) + 1,
                steps: done + total,
                node: plan.node.clone(),
                starts_plan: !plan.continued,
            });
            if first {
                // A few lookups a pass: binary searches, not the context's pod lookup
                // (built on first use, over every pod).
                let mut prints: Vec<u32> = inst
                    .pods
                    .iter()
                    .filter_map(|key| ctx.inputs.snap.pod_by_key(key))
                    .map(|p| p.gpus)
                    .filter(|g| *g > 0)
                    .collect();
                prints.sort_by(|a, b| b.cmp(a));
                let list = ctx.target_list(&plan.pool, w);
                let smallest = prints.last().copied().unwrap_or(0);
                let targets: Vec<String> = list
                    .nodes
                    .iter()
                    .zip(&list.free)
                    .filter(|(_, f)| **f >= smallest)
                    .map(|(i, _)| ctx.inputs.snap.nodes[*i].name.clone())
                    .filter(|n| !plan_nodes.contains(n.as_str()))
                    .collect();
                r.surge_shaped = true;
                r.pod_gpus = prints;
                r.hint_target_nodes = step.targets.iter().chain(targets.iter()).fold(
                    Vec::new(),
                    |mut v: Vec<String>, t| {
                        if v.len() < 3 && !v.contains(t) {
                            v.push(t.clone());
                        }
                        v
                    },
                );
                r.placement_target_nodes = targets;
            }
            out.push(r);
        }
    }
    out
}

/// Whether a step moving an Instance of `w` is an emergency (docs/design-policies.md#drain-plans):
/// the plan's pod `p` waited longer than `emergencyPendingAgeMinutes` and is tenant-compatible
/// with `w` as an emergency's pod must be (docs/design-policies.md#boosts). The plan's pod, not
/// the step's own effect, makes a step urgent: a plan's first step of two seats nothing alone,
/// and a step whose Instance belongs to another tenant serves that tenant's pod no more than a
/// single move would.
fn urgent(ctx: &Ctx<'_>, w: &alfred_model::snapshot::Workload, p: &PendingPod) -> bool {
    let age = f64::from(ctx.inputs.cfg.emergency_pending_age_minutes);
    ctx.inputs.now.minutes_since(p.pending_since) > age
        && crate::defragmentation::tenant_compatible(ctx, w, p)
}

/// Steps of a continued plan already made: the proposal holds the moves still to make, and
/// the step numbers count the plan's whole length.
fn plan_done_steps(plan: &DrainPlan) -> u32 {
    plan.done_steps
}

#[cfg(test)]
mod emergency_tests;
#[cfg(test)]
mod tests;
