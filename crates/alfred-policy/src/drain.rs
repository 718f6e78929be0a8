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

use std::collections::{BTreeMap, BTreeSet};

use alfred_model::index::{COMPONENT_OMENATIVE, InstanceFacts, NONE, SnapshotIndex};
use alfred_model::plan::{DRAIN_TAINT_KEY, DrainPlan, PlanMove, PlanRecord, plan_id};
use alfred_model::reason::PlanEndReason;
use alfred_model::snapshot::{Node, PendingPod, PodScheduling, Workload};
use alfred_score::{Analysis, LadderSlots, PoolAnalysis, Weights};

use alfred_model::plan::PlanStepRef;
use alfred_model::reason::{AdvisoryReason, RowReason};
use alfred_model::record::{Candidate, Policy};

use crate::context::Ctx;
use crate::eligibility::omenative_eligibility_at;
use crate::rows::row;

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

/// One GPU occupant of a node, as a plan may see it.
#[derive(Debug, Clone)]
struct Occupant {
    /// Workload, component and Instance positions.
    at: (usize, usize, usize),
    /// Its facts in the index.
    facts: InstanceFacts,
    /// GPUs it holds on the node.
    gpus: u32,
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
    fn movable(&self, ctx: &Ctx<'_>, idx: &SnapshotIndex) -> bool {
        self.may_move
            && *self.eligible.get_or_init(|| {
                let w = &ctx.snap.workloads[self.at.0];
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
struct Room<'s> {
    snap: &'s alfred_model::ClusterSnapshot,
    /// Per node position `n`: its bound pods are `pods[starts[n]..starts[n + 1]]`, in
    /// snapshot order.
    starts: Vec<u32>,
    pods: Vec<u32>,
    /// The figures worked out so far, by node position.
    spare: std::cell::RefCell<Vec<Option<[i64; 2]>>>,
}

/// `[cpu, memory]` of a requests map.
fn cpu_memory(requests: &BTreeMap<String, i64>) -> [i64; 2] {
    [
        requests.get("cpu").copied().unwrap_or(0).max(0),
        requests.get("memory").copied().unwrap_or(0).max(0),
    ]
}

impl<'s> Room<'s> {
    fn of(snap: &'s alfred_model::ClusterSnapshot, idx: &SnapshotIndex) -> Room<'s> {
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
    fn spare(&self, n: usize) -> Option<[i64; 2]> {
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
    fn fits(&self, n: usize, claimed: [i64; 2], want: [i64; 2]) -> bool {
        self.spare(n)
            .is_some_and(|room| (0..2).all(|k| room[k].saturating_sub(claimed[k]) >= want[k]))
    }
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
    let cfg = ctx.cfg;
    let mut out = DrainProposal::default();
    let active: Vec<&PlanRecord> = records.iter().filter(|r| r.active()).collect();
    if !cfg.defragmentation_enabled
        || !cfg.drain_plans_enabled
        || !cfg.omenative_migration_enabled
        || !ctx.snap.executor.available
    {
        // The dispatcher ends active plans for these reasons; nothing to re-plan.
        return out;
    }
    let idx = ctx.snap.index();
    // Built on first use: most passes of a large cluster have no active plan and no pod
    // waiting long enough, and these walk every Instance and every bound pod.
    let occupants_cell = std::cell::OnceCell::new();
    let occupants = || occupants_cell.get_or_init(|| occupants_by_node(ctx, &idx));
    let room_cell = std::cell::OnceCell::new();
    let room = || room_cell.get_or_init(|| Room::of(&ctx.snap, &idx));
    // Nodes no plan may use as a target or a new plan's node.
    let mut protected: BTreeSet<String> = active.iter().map(|r| r.node.clone()).collect();
    let nominated = nominations(ctx);
    // The steps a new plan may have under the hourly cap (everyone's migrations the
    // snapshot shows started in the last hour, each step met at the pass it is due): a plan
    // that fits goes before a better one that would wait.
    let window = std::time::Duration::from_secs(3600);
    let starts = alfred_model::count::migration_starts_within(&ctx.snap, &[], ctx.now, window);
    let budget_left = alfred_model::count::plan_steps_within_cap(
        &starts,
        ctx.now,
        window,
        cfg.decision_loop_interval,
        cfg.max_migrations_per_hour,
        0,
        cfg.drain_max_steps_per_plan,
    );
    // Pods with a plan (active, or proposed in an earlier pool this pass: a pod any pool
    // may take gets one plan, not one per pool).
    let mut busy_pods: BTreeSet<String> = active.iter().map(|r| r.pod.clone()).collect();
    for pool in ctx.snap.pools() {
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
            .snap
            .nodes
            .iter()
            .filter(|n| n.pool.as_deref() == Some(pool.as_str()) && n.has_gpus())
            .filter(|n| !n.unavailable() && n.ready && n.free_gpus > 0)
            .collect();
        roomy.sort_by_key(|n| std::cmp::Reverse(n.free_gpus));
        let mut waiting: Vec<&PendingPod> = ctx
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
                && ctx.now.minutes_since(pod.pending_since)
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
    let window = f64::from(ctx.cfg.drain_abandon_backoff_minutes) * f64::from(factor);
    ctx.now.minutes_since(last) < window
}

/// Whether `p` waits for a node of `pool` that a plan could free: it asks GPUs, counts in the
/// pool, waited longer than `emergencyPendingAgeMinutes`, is not nominated anywhere, and no
/// node of the pool it may use has its GPUs free now.
/// `roomy` is the pool's usable nodes with free GPUs, most free first.
fn waits_for_a_node(ctx: &Ctx<'_>, pool: &str, roomy: &[&Node], p: &PendingPod) -> bool {
    let age = f64::from(ctx.cfg.emergency_pending_age_minutes);
    p.gpus_needed > 0
        && p.counts_in(pool)
        && p.nominated_node.is_empty()
        && ctx.now.minutes_since(p.pending_since) > age
        && !roomy
            .iter()
            .take_while(|n| n.free_gpus >= p.gpus_needed)
            .any(|n| usable_for(n, &p.scheduling))
}

/// Whether `p` is the only pod of its size in `pool` waiting past `emergencyPendingAgeMinutes`
/// (nominated or not). Such a pod heads the scheduler's queue for its size: the first node of
/// its size that churn frees is its, and a plan made for it loses that race more often than
/// not (`lonePodWaitMinutes`).
fn waits_alone(ctx: &Ctx<'_>, pool: &str, p: &PendingPod) -> bool {
    let age = f64::from(ctx.cfg.emergency_pending_age_minutes);
    !ctx.snap.pending_pods.iter().any(|q| {
        q.gpus_needed == p.gpus_needed
            && (q.namespace != p.namespace || q.name != p.name)
            && q.counts_in(pool)
            && ctx.now.minutes_since(q.pending_since) > age
    })
}

/// Whether the pod could run on `n` once its GPUs are free: GPUs, available, ready, big
/// enough, and the pod's selector, required node affinity and tolerations allow it.
fn usable_for(n: &Node, s: &PodScheduling) -> bool {
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
fn nominations(ctx: &Ctx<'_>) -> BTreeSet<String> {
    ctx.snap
        .pending_pods
        .iter()
        .filter(|p| !p.nominated_node.is_empty())
        .map(|p| p.nominated_node.clone())
        .collect()
}

/// Every node's GPU-holding Instances, in walk order: one flat list and, per node, the
/// positions of its occupants in it (a list per node cost a large cluster's pass thousands
/// of small allocations).
struct Occupants {
    /// Every occupant, in walk order (an Instance on two nodes is here twice).
    all: Vec<Occupant>,
    /// Per node position `n`: its occupants are `all[order[starts[n]..starts[n + 1]]]`.
    starts: Vec<u32>,
    order: Vec<u32>,
}

impl Occupants {
    /// Node position `n`'s occupants, in walk order.
    fn at(&self, n: usize) -> impl Iterator<Item = &Occupant> + Clone {
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
fn occupants_by_node(ctx: &Ctx<'_>, idx: &SnapshotIndex) -> Occupants {
    let node_count = ctx.snap.nodes.len();
    // Most Instances hold GPUs on one node: reserved at that size, the table is allocated
    // once instead of doubled through a chain of copies (a few hundred KiB a pass on a large
    // cluster, each doubling a fresh allocation the allocator takes from the system).
    let mut all: Vec<Occupant> = Vec::with_capacity(idx.instances.len());
    // The node position of each of `all`.
    let mut node_of: Vec<u32> = Vec::with_capacity(idx.instances.len());
    // An Instance's GPUs per node, ascending node (most Instances have one pod).
    let mut per_node: Vec<(u32, u32)> = Vec::new();
    let (mut next_component, mut next_instance) = (0usize, 0usize);
    for (wi, w) in ctx.snap.workloads.iter().enumerate() {
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

/// The pool's bins priced as unusable free GPUs (see the module documentation).
struct Pricing<'a, 'e> {
    eval: &'a PoolAnalysis<'e>,
    slots: LadderSlots,
    total_free: u64,
}

impl<'a, 'e> Pricing<'a, 'e> {
    fn new(eval: &'a PoolAnalysis<'e>) -> Self {
        Pricing {
            eval,
            slots: LadderSlots::new(&eval.bins, &eval.weights),
            total_free: eval.bins.total_free(),
        }
    }

    /// `w(s)` of the ladder size a pod of `gpus` snaps to (the smallest size ≥ `gpus`, else
    /// the largest), as the demand weights count it.
    fn weight_of(&self, gpus: u32) -> f64 {
        let sizes = &self.eval.weights.sizes;
        let size = sizes
            .iter()
            .copied()
            .find(|s| *s >= gpus)
            .or_else(|| sizes.last().copied())
            .unwrap_or(0);
        self.eval.weights.get(size)
    }

    /// `U` of slot counts: `Σ_s w(s)·max(0, F − slots(s)·s)`.
    fn unusable(&self, slots: &LadderSlots) -> f64 {
        unusable_gpus(slots, &self.eval.weights, self.total_free)
    }

    /// `U(before) − U(after)` when node `name` alone gains `freed` GPUs: the most a plan
    /// freeing them there can recover, whatever its targets ([`best_new_plan`]).
    fn benefit_of_freeing(&self, name: &str, freed: u32) -> Option<f64> {
        self.benefit(&BTreeMap::from([(name, i64::from(freed))]))
    }

    /// `U(before) − U(after)` when the bins named change by `delta` GPUs each (a bin that
    /// is not in the pool, or that would go below 0 or above its capacity, makes `None`).
    fn benefit(&self, changes: &BTreeMap<&str, i64>) -> Option<f64> {
        let mut after = self.slots.clone();
        for (name, delta) in changes {
            let pos = self.eval.bins.position(name)?;
            let bin = self.eval.bins.get(pos)?;
            let new = i64::from(bin.free) + delta;
            if new < 0 || new > i64::from(bin.cap) {
                return None;
            }
            after.update(bin.free, u32::try_from(new).ok()?, bin.cap);
        }
        Some(self.unusable(&self.slots) - self.unusable(&after))
    }
}

/// `U = Σ_s w(s)·max(0, F − slots(s)·s)`: the pool's weighted fragmentation times its free
/// GPUs (the same sum [`LadderSlots::weighted_fragmentation`] makes, in GPUs).
pub fn unusable_gpus(slots: &LadderSlots, weights: &Weights, total_free: u64) -> f64 {
    slots.weighted_fragmentation(weights, total_free) * total_free as f64
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
    for (pos, n) in ctx.snap.nodes.iter().enumerate() {
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
            ctx.cfg.drain_max_steps_per_plan,
        ) else {
            continue;
        };
        let freed: u32 = moves.iter().map(|o| o.gpus).sum();
        let Some(recovered) = pricing.benefit_of_freeing(&n.name, freed) else {
            continue;
        };
        let steps = u32::try_from(moves.len()).unwrap_or(u32::MAX).max(1);
        let cost = f64::from(steps) * ctx.cfg.move_cost() * f64::from(n.total_gpus);
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
        let n = &ctx.snap.nodes[pos];
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

/// `[cpu, memory]` the Instance's pods request on node position `node`.
fn requests_on(ctx: &Ctx<'_>, idx: &SnapshotIndex, facts: &InstanceFacts, node: usize) -> [i64; 2] {
    idx.pods_of(facts)
        .iter()
        .filter(|&&pi| {
            idx.pods
                .get(pi as usize)
                .is_some_and(|f| f.node as usize == node)
        })
        .filter_map(|&pi| ctx.snap.pods.get(pi as usize))
        .fold([0i64; 2], |acc, p| {
            let r = cpu_memory(&p.scheduling.requests);
            [acc[0].saturating_add(r[0]), acc[1].saturating_add(r[1])]
        })
}

/// Plan order: net GPUs per step ([`DrainPlan::rank`]), then fewer steps, fewer GPUs moved,
/// node name.
fn better(a: &DrainPlan, b: &DrainPlan) -> bool {
    a.rank()
        .total_cmp(&b.rank())
        .reverse()
        .then(a.steps.len().cmp(&b.steps.len()))
        .then(a.moved_gpus().cmp(&b.moved_gpus()))
        .then(a.node.cmp(&b.node))
        .is_lt()
}

/// The fewest movable occupants whose GPUs reach `need` (at most `max_steps`), ties to
/// fewer GPUs moved, then walk order; `Some(vec![])` when nothing needs to move.
fn choose_moves<'o>(
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
fn build_plan(
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
        let w = &ctx.snap.workloads[wi];
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
            *changes.entry(ctx.snap.nodes[*t].name.as_str()).or_default() -= i64::from(*gpus);
        }
        *changes.entry(n.name.as_str()).or_default() += i64::from(o.gpus);
        let mut names: Vec<String> = Vec::new();
        for (t, _) in &targets {
            let name = &ctx.snap.nodes[*t].name;
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
    let total_steps = done_steps + u32::try_from(steps.len()).ok()?;
    let cost = f64::from(total_steps.max(1)) * ctx.cfg.move_cost() * f64::from(n.total_gpus);
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
            let p = ctx.snap.pods.get(pi as usize)?;
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
            let name = &ctx.snap.nodes[t].name;
            let claimed = claims.get(&t).copied().unwrap_or_default();
            name != node
                && !protected.contains(name)
                && ctx.snap.nodes[t].free_gpus.saturating_sub(claimed.gpus) >= gpus
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
    let n = &ctx.snap.nodes[pos];
    // The pod: pending (the dispatcher ends the plan when it bound or went away).
    let pod = ctx
        .snap
        .pending_pods
        .iter()
        .find(|p| p.has_key(&r.pod))
        .ok_or(PlanEndReason::PodGone)?;
    let here = occupants.at(pos);
    // Instances a step already asked to leave count as gone.
    let leaving = |o: &Occupant| {
        let w = &ctx.snap.workloads[o.at.0];
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
    let left = ctx.cfg.drain_max_steps_per_plan.saturating_sub(done);
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
/// executable candidate (an emergency: it seats a pod that waits, so maintenance windows do not
/// hold it back), ranked by the plan's score in GPUs; its later moves are advice
/// (`DrainPlanStepWaiting`). Every row carries its plan and step. Targets are never a plan's node.
pub(crate) fn candidates(ctx: &Ctx<'_>, proposal: &DrainProposal) -> Vec<Candidate> {
    let plan_nodes: BTreeSet<&str> = proposal.plans.iter().map(|p| p.node.as_str()).collect();
    let mut out = Vec::new();
    for plan in &proposal.plans {
        let total = u32::try_from(plan.steps.len()).unwrap_or(u32::MAX);
        let done = plan_done_steps(plan);
        for (k, step) in plan.steps.iter().enumerate() {
            let Some((ns, name)) = step.workload.split_once('/') else {
                continue;
            };
            let Some(w) = ctx.snap.workload(ns, name) else {
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
            let mut r = row(
                Policy::Defragmentation,
                w,
                c.kind,
                step.instance,
                &c.mode,
                RowReason::Fragmentation,
                plan.node.clone(),
                (!first).then_some(AdvisoryReason::DrainPlanStepWaiting),
            );
            r.benefit = plan.benefit_gpus;
            r.cost = plan.cost_gpus;
            r.score = plan.score();
            r.emergency = true;
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
                    .filter_map(|key| ctx.snap.pod_by_key(key))
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
                    .map(|(i, _)| ctx.snap.nodes[*i].name.clone())
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

/// Steps of a continued plan already made: the proposal holds the moves still to make, and
/// the step numbers count the plan's whole length.
fn plan_done_steps(plan: &DrainPlan) -> u32 {
    plan.done_steps
}

#[cfg(test)]
mod tests;
