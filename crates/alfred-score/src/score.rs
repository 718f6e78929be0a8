//! The per-pool score (docs/design-scoring.md) in one pass over the snapshot.

use std::cmp::Ordering;

use alfred_model::config::Config;
use alfred_model::index::{
    COMPONENT_OMENATIVE, InstanceFacts, NONE, POD_READY, POD_TERMINATING, PodFacts, SnapshotIndex,
};
use alfred_model::snapshot::PoolAttribution;
use alfred_model::{ClusterSnapshot, Timestamp};
use serde::{Deserialize, Serialize};

use crate::ScoreSettings;
use crate::bins::{Bins, Weights, frag, slots, weighted_fragmentation, weighted_fragmentation_raw};
use crate::movable::{
    component_block_of, in_cooldown, instance_block_of, model_info_block, model_key_into,
    workload_state_block,
};
use crate::repack::{Item, repack};

/// `slots(s)` and `frag(s)` of one ladder size on the observed bins (docs/design-scoring.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SizeScore {
    /// Ladder size `s`.
    pub size: u32,
    /// `slots(s)`: how many size-`s` Instances the pool's free GPUs can seat.
    pub slots: u64,
    /// `frag(s) = max(0, 1 − slots(s)·s / totalFree)`, 0 when nothing is free.
    pub frag: f64,
}

/// Which of the three cases of docs/design-scoring.md#threshold-cases applies to a pool (θ =
/// `fragmentationThreshold`, both comparisons strict).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ThresholdCase {
    /// `"executionOpen"` — case 1: `score > θ`; the policy plans moves.
    #[serde(rename = "executionOpen")]
    ExecutionOpen,
    /// `"advisoryOnly"` — case 2: not case 1, but the fragmentation no move can fix,
    /// `max(0, observed − reclaimable)`, is above θ: eligible OMENative Instances become
    /// advice with `NonExecutableObservedFragmentation`.
    #[serde(rename = "advisoryOnly")]
    AdvisoryOnly,
    /// `"quiet"` — case 3: neither; the pool produces no rows.
    #[serde(rename = "quiet")]
    Quiet,
}

impl ThresholdCase {
    /// The documented string (`executionOpen`, `advisoryOnly`, `quiet`).
    pub fn as_str(self) -> &'static str {
        match self {
            ThresholdCase::ExecutionOpen => "executionOpen",
            ThresholdCase::AdvisoryOnly => "advisoryOnly",
            ThresholdCase::Quiet => "quiet",
        }
    }

    /// The case number of docs/design-scoring.md#threshold-cases (1, 2 or 3).
    pub fn number(self) -> u8 {
        match self {
            ThresholdCase::ExecutionOpen => 1,
            ThresholdCase::AdvisoryOnly => 2,
            ThresholdCase::Quiet => 3,
        }
    }

    /// Classifies a pool: case 1 when `score > θ`, else case 2 when
    /// `max(0, observed − reclaimable) > θ`, else case 3.
    pub fn classify(score: f64, observed: f64, reclaimable: f64, threshold: f64) -> Self {
        if score > threshold {
            ThresholdCase::ExecutionOpen
        } else if (observed - reclaimable).max(0.0) > threshold {
            ThresholdCase::AdvisoryOnly
        } else {
            ThresholdCase::Quiet
        }
    }
}

/// The score of one pool, with the names `alfred replay --format json` prints under
/// `pools`. Every fraction is in [0, 1].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PoolScore {
    /// Pool key (docs/design-snapshot.md#pools).
    pub pool: String,
    /// `TotalFree`: free GPUs over the schedulable bins (docs/design-scoring.md#schedulable-bins).
    pub total_free: u64,
    /// `slots(s)` and `frag(s)` per ladder size, ascending.
    pub per_size: Vec<SizeScore>,
    /// `F_observed = Σ w(s)·frag(s)` (clamped to [0, 1]; only a prior summing above 1
    /// could exceed it).
    pub observed: f64,
    /// `F_best`: the same sum after the FFD repack (same weights, same denominator), as a
    /// best case never above `observed` — i.e. `min(observed, F(repacked))`; the raw value
    /// is [`PoolAnalysis::repacked_fragmentation`].
    pub best: f64,
    /// `F_reclaimable = max(0, observed − F(repacked)) = observed − best`.
    pub reclaimable: f64,
    /// `P = 1 − Π (1 − urgency)` over the pending pods that fit nowhere now but would after
    /// the repack.
    pub pending_pressure: f64,
    /// `1 − (1 − reclaimable)·(1 − pendingPressure)`, clamped to [0, 1].
    pub score: f64,
    /// The case of docs/design-scoring.md#threshold-cases.
    pub threshold_case: ThresholdCase,
}

/// Every pool's score; `score` is the maximum over pools (0 without pools), the gauge
/// `alfred_cluster_fragmentation_score`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ClusterScore {
    /// Max over pools of `PoolScore::score`.
    pub score: f64,
    /// Pools in ascending key order.
    pub pools: Vec<PoolScore>,
}

/// A pool's score together with the pieces the defragmentation policy needs to price a move
/// (docs/design-policies.md#benefit-cost-and-score): the observed bins, the observed weights and
/// (in `score.total_free`) the fixed denominator.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolAnalysis<'s> {
    /// The published score.
    pub score: PoolScore,
    /// The schedulable bins as observed (docs/design-scoring.md#schedulable-bins), name order.
    pub bins: Bins<'s>,
    /// `w(s)` per ladder size.
    pub weights: Weights,
    /// Demand GPUs per ladder size (docs/design-scoring.md#demand-and-weights), same order as
    /// `weights.sizes`.
    pub demand: Vec<u64>,
    /// Free GPUs per bin after the FFD repack (docs/design-scoring.md#the-repack), same order as
    /// `bins`.
    pub repacked: Vec<u32>,
    /// `F(repacked)` as docs/design-scoring.md#the-repack computes `F_best`, before the
    /// `min(observed, ·)` of [`PoolScore::best`]; may exceed `observed`.
    pub repacked_fragmentation: f64,
}

impl PoolAnalysis<'_> {
    /// `F(bins)` with this pool's **observed** weights and **observed** `TotalFree` as the
    /// denominator: `F(after)` of docs/design-policies.md#benefit-cost-and-score once a move has
    /// been applied to a copy of [`PoolAnalysis::bins`]. The benefit of a move is
    /// `score.observed`-consistent:
    ///
    /// ```text
    /// let mut after = analysis.bins.clone();
    /// for m in moves { if !after.take(target, gpus) { drop the candidate } }
    /// for m in moves { after.release(source, gpus); }     // capped; excluded sources free nothing
    /// benefit = analysis.fragmentation(&analysis.bins) − analysis.fragmentation(&after)
    /// ```
    ///
    /// (`fragmentation(&bins)` equals `score.observed` up to the [0, 1] clamp.) For decision
    /// docs/design-policies.md#boosts (a preemptible source), add the source node(s) to both bin
    /// sets with [`Bins::insert`] and price both with [`weighted_fragmentation`] against the
    /// augmented before-set's `total_free()`.
    pub fn fragmentation(&self, bins: &Bins<'_>) -> f64 {
        weighted_fragmentation(bins, &self.weights, self.score.total_free)
    }
}

/// Scores of every pool plus the per-pool pieces for the policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis<'s> {
    /// Max over pools (0 without pools).
    pub score: f64,
    /// Pools in ascending key order.
    pub pools: Vec<PoolAnalysis<'s>>,
}

impl Analysis<'_> {
    /// The analysis of one pool.
    pub fn pool(&self, pool: &str) -> Option<&PoolAnalysis<'_>> {
        self.pools
            .binary_search_by(|p| p.score.pool.as_str().cmp(pool))
            .ok()
            .map(|i| &self.pools[i])
    }

    /// Drops the policy pieces.
    pub fn into_scores(self) -> ClusterScore {
        ClusterScore {
            score: self.score,
            pools: self.pools.into_iter().map(|p| p.score).collect(),
        }
    }
}

/// Scores every pool (docs/design-scoring.md) with the configuration's scoring settings: the
/// scorer's entry point. Equivalent to `score_with(snapshot, &ScoreSettings::from_config(config))`;
/// computed whether or not defragmentation is enabled (docs/design-scoring.md).
pub fn score(snapshot: &ClusterSnapshot, config: &Config) -> ClusterScore {
    score_with(snapshot, &ScoreSettings::from_config(config))
}

/// Scores every pool (docs/design-scoring.md) — see [`analyze`].
pub fn score_with(snapshot: &ClusterSnapshot, settings: &ScoreSettings) -> ClusterScore {
    analyze(snapshot, settings).into_scores()
}

/// `snap(g)`: the index of the smallest ladder size ≥ g, else the top size.
fn snap(ladder: &[u32], g: u32) -> usize {
    ladder
        .iter()
        .position(|s| *s >= g)
        .unwrap_or(ladder.len().saturating_sub(1))
}

/// Pod demand state while walking Instances (a pod listed by several Instances counts once).
const UNSEEN: u8 = 0;
const ITEM: u8 = 1;
const FIXED: u8 = 2;

/// Computes docs/design-scoring.md for every pool of the snapshot, at `T = snapshot.observed_at`.
///
/// Pure and deterministic: the result does not depend on the order of the snapshot's
/// lists (nodes, pods, pending pods, workloads); an unnormalized snapshot only costs an
/// extra sort when its index is built. The first call on a snapshot without an index
/// ([`ClusterSnapshot::index`]) builds and caches it. Node names and pod keys are assumed unique, as Kubernetes makes them; a pod
/// listed by several Instances is counted once, and moves in the repack only when every
/// Instance listing it is movable.
pub fn analyze<'s>(snapshot: &'s ClusterSnapshot, settings: &ScoreSettings) -> Analysis<'s> {
    analyze_at(snapshot, settings, snapshot.observed_at)
}

/// [`analyze`] at `T = now` instead of the snapshot's `observed_at`: a caller deciding at
/// its own time (the policies) reads the snapshot as it is, with no copy to re-date it.
pub fn analyze_at<'s>(
    snapshot: &'s ClusterSnapshot,
    settings: &ScoreSettings,
    now: Timestamp,
) -> Analysis<'s> {
    let st = settings.sanitized();
    let ladder: &[u32] = &st.size_ladder;
    let nodes = &snapshot.nodes;
    let pods = &snapshot.pods;

    // The snapshot's flat index: pools, node and pod indices, status facts (built once per
    // snapshot, see `alfred_model::index`).
    let idx = snapshot.index();
    let pool_names: Vec<&str> = idx.pools.iter().map(String::as_str).collect();
    let np = pool_names.len();
    let (bins, node_bin) = schedulable_bins(snapshot, &idx, &st, np);
    let RunningDemand {
        mut demand,
        mut items,
        state,
    } = running_demand(snapshot, &idx, &st, now, np);
    let pending_by_pool = add_pending_demand(snapshot, &idx, &st, now, &pool_names, &mut demand);
    let tau = f64::from(st.pending_urgency_tau_minutes);

    let mut out = Vec::with_capacity(np);
    for (q, pool_bins) in bins.into_iter().enumerate() {
        let free = pool_bins.free();
        let cap = pool_bins.caps();
        let total_free = pool_bins.total_free();
        let max_cap = pool_bins.max_cap();

        let weights = demand_weights(ladder, &demand[q], &st);
        let mut per_size = Vec::with_capacity(ladder.len());
        let mut observed = 0.0;
        for (s, w) in ladder.iter().zip(&weights.weights) {
            let sl = slots(free, cap, max_cap, *s);
            let f = frag(sl, *s, total_free);
            observed += w * f;
            per_size.push(SizeScore {
                size: *s,
                slots: sl,
                frag: f,
            });
        }
        let observed = clamp01(observed);

        // The FFD repack of the movable Instances' pods (docs/design-scoring.md#the-repack).
        let pool_items = &mut items[q];
        pool_items.retain(|it| state[it.pod as usize] == ITEM);
        let repacked = if pool_items.is_empty() {
            free.to_vec()
        } else {
            repack(free, cap, &node_bin, pool_items, pods, nodes)
        };
        let repacked_fragmentation = clamp01(weighted_fragmentation_raw(
            &repacked, cap, &weights, total_free,
        ));
        // The published best case is never worse than leaving things where they are: FFD is a
        // heuristic (it can stack onto one of two equally empty nodes and lose a size-2
        // slot), and a pod lifted off an excluded node consumes free capacity, so the raw
        // repack can score above `observed`. Only `max(0, observed − F_best)` enters the
        // score and the threshold case, so they are unchanged.
        let best = repacked_fragmentation.min(observed);
        let reclaimable = (observed - repacked_fragmentation).max(0.0);

        // Pending pressure (docs/design-scoring.md#pending-pressure: the pod's real size).
        let pending_pressure =
            pending_pressure(free, &repacked, cap, max_cap, &pending_by_pool[q], tau);
        let score = clamp01(1.0 - (1.0 - reclaimable) * (1.0 - pending_pressure));
        let threshold_case =
            ThresholdCase::classify(score, observed, reclaimable, st.fragmentation_threshold);
        out.push(PoolAnalysis {
            score: PoolScore {
                pool: pool_names[q].to_owned(),
                total_free,
                per_size,
                observed,
                best,
                reclaimable,
                pending_pressure,
                score,
                threshold_case,
            },
            bins: pool_bins,
            weights,
            demand: std::mem::take(&mut demand[q]),
            repacked,
            repacked_fragmentation,
        });
    }
    let score = out
        .iter()
        .map(|p| p.score.score)
        .fold(0.0, |a: f64, b| match a.partial_cmp(&b) {
            Some(Ordering::Less) => b,
            _ => a,
        });
    Analysis { score, pools: out }
}

/// Schedulable bins per pool, in name order (docs/design-scoring.md#schedulable-bins), and
/// each node's bin within its pool (`NONE` when it is no bin).
fn schedulable_bins<'s>(
    snapshot: &'s ClusterSnapshot,
    idx: &SnapshotIndex,
    st: &ScoreSettings,
    np: usize,
) -> (Vec<Bins<'s>>, Vec<u32>) {
    let nodes = &snapshot.nodes;
    let node_pool: &[u32] = &idx.node_pool;
    let mut bins: Vec<Bins<'s>> = (0..np).map(|_| Bins::new()).collect();
    let mut node_bin = vec![NONE; nodes.len()];
    for &i in &idx.nodes_by_name {
        let i = i as usize;
        let n = &nodes[i];
        let p = node_pool[i];
        if p == NONE || n.unavailable() || (st.avoid_spot_as_target && n.preemptible) {
            continue;
        }
        let b = &mut bins[p as usize];
        node_bin[i] = b.len() as u32;
        b.push_sorted(&n.name, i, n.free_gpus, n.total_gpus);
    }
    (bins, node_bin)
}

/// The running pods' demand per pool and ladder size, and which of them the repack may move.
struct RunningDemand {
    /// Per pool, GPUs per ladder size.
    demand: Vec<Vec<u64>>,
    /// Per pool, the pods of movable Instances.
    items: Vec<Vec<Item>>,
    /// Per pod: `UNSEEN`, `ITEM` (movable) or `FIXED`.
    state: Vec<u8>,
}

/// Walks the workloads' Instances: every GPU pod on a pool node is demand, and a pod of an
/// Instance that may move within its pool is a repack item.
fn running_demand(
    snapshot: &ClusterSnapshot,
    idx: &SnapshotIndex,
    st: &ScoreSettings,
    now: Timestamp,
    np: usize,
) -> RunningDemand {
    let ladder: &[u32] = &st.size_ladder;
    let pods = &snapshot.pods;
    let node_pool: &[u32] = &idx.node_pool;
    let pod_facts: &[PodFacts] = &idx.pods;
    let mut demand = vec![vec![0u64; ladder.len()]; np];
    let mut items: Vec<Vec<Item>> = vec![Vec::new(); np];
    let mut state = vec![UNSEEN; pods.len()];
    let repack_possible = st.omenative_migration_enabled && snapshot.executor.available;
    let mut key_buf = String::new();
    // The pool of an Instance for condition 3 of docs/design-scoring.md#the-repack: all of its
    // nodes in one pool.
    let instance_pool = |inst_nodes: &[u32]| -> u32 {
        let mut pool = NONE;
        for &i in inst_nodes {
            let p = node_pool.get(i as usize).copied().unwrap_or(NONE);
            if p == NONE || (pool != NONE && p != pool) {
                return NONE;
            }
            pool = p;
        }
        pool
    };

    let no_facts = InstanceFacts::default();
    // Components and Instances are read from the index alone (their facts in walk order):
    // of the objects themselves, only the workloads are read, in list order.
    let (mut next_component, mut next_instance) = (0usize, 0usize);
    for w in &snapshot.workloads {
        let w_ok = repack_possible
            && workload_state_block(w).is_none()
            && !in_cooldown(w, st.per_workload_cooldown_minutes, now)
            && (!model_key_into(w, &mut key_buf)
                || model_info_block(snapshot.models.get(key_buf.as_str())).is_none());
        for _ in 0..w.components.len() {
            let component = idx.component(next_component);
            let (c_flags, c_instances) = (component.flags, component.instances);
            next_component += 1;
            let c_ok =
                w_ok && c_flags & COMPONENT_OMENATIVE != 0 && component_block_of(c_flags).is_none();
            for _ in 0..c_instances {
                let facts = idx.instances.get(next_instance).unwrap_or(&no_facts);
                next_instance += 1;
                let inst_pods = idx.pods_of(facts);
                let movable_pool = if c_ok
                    && instance_block_of(
                        facts.flags,
                        inst_pods.iter().map(|p| {
                            pod_facts
                                .get(*p as usize)
                                .map(|f| f.flags & POD_READY != 0 && f.flags & POD_TERMINATING == 0)
                        }),
                    )
                    .is_none()
                {
                    instance_pool(idx.nodes_of(facts))
                } else {
                    NONE
                };
                for &pi in inst_pods {
                    let Some(pod) = pod_facts.get(pi as usize) else {
                        continue;
                    };
                    if pod.gpus == 0 || pod.node == NONE {
                        continue;
                    }
                    let q = node_pool[pod.node as usize];
                    if q == NONE {
                        continue;
                    }
                    let pi = pi as usize;
                    let is_item = movable_pool != NONE && q == movable_pool;
                    match state[pi] {
                        UNSEEN => {
                            demand[q as usize][snap(ladder, pod.gpus)] += u64::from(pod.gpus);
                            if is_item {
                                state[pi] = ITEM;
                                items[q as usize].push(Item {
                                    pod: pi as u32,
                                    node: pod.node,
                                    gpus: pod.gpus,
                                });
                            } else {
                                state[pi] = FIXED;
                            }
                        }
                        ITEM if !is_item => state[pi] = FIXED,
                        _ => {}
                    }
                }
            }
        }
    }

    RunningDemand {
        demand,
        items,
        state,
    }
}

/// Adds the pending pods' demand to each pool they may go to; per pool, the pending pods'
/// (GPUs, age in minutes), in a canonical order (the urgency product is order-sensitive in
/// f64).
fn add_pending_demand(
    snapshot: &ClusterSnapshot,
    idx: &SnapshotIndex,
    st: &ScoreSettings,
    now: Timestamp,
    pool_names: &[&str],
    demand: &mut [Vec<u64>],
) -> Vec<Vec<(u32, f64)>> {
    let ladder: &[u32] = &st.size_ladder;
    let np = pool_names.len();
    let pending = &snapshot.pending_pods;
    let mut pending_by_pool: Vec<Vec<(u32, f64)>> = vec![Vec::new(); np];
    let mut pools_of: Vec<u32> = Vec::new();
    for &k in &idx.pending_order {
        let p = &pending[k as usize];
        let g = p.gpus_needed;
        if g == 0 {
            continue;
        }
        pools_of.clear();
        match &p.pools {
            PoolAttribution::Any => pools_of.extend(0..np as u32),
            PoolAttribution::Pools(list) => {
                for name in list {
                    if let Ok(i) = pool_names.binary_search(&name.as_str()) {
                        pools_of.push(i as u32);
                    }
                }
                pools_of.sort_unstable();
                pools_of.dedup();
            }
        }
        let age = now.minutes_since(p.pending_since).max(0.0);
        for &q in &pools_of {
            demand[q as usize][snap(ladder, g)] += u64::from(g);
            pending_by_pool[q as usize].push((g, age));
        }
    }

    pending_by_pool
}

/// The blend of the pool's demand shares and the prior, per ladder size.
fn demand_weights(ladder: &[u32], demand: &[u64], st: &ScoreSettings) -> Weights {
    let lambda = st.demand_blend_lambda;
    let d_total: u64 = demand.iter().sum();
    Weights {
        sizes: ladder.to_vec(),
        weights: ladder
            .iter()
            .zip(demand)
            .map(|(s, d)| {
                let share = if d_total == 0 {
                    0.0
                } else {
                    *d as f64 / d_total as f64
                };
                (1.0 - lambda) * share + lambda * st.prior(*s)
            })
            .collect(),
    }
}

/// Pending pressure (docs/design-scoring.md#pending-pressure: the pod's real size): the chance
/// that some pending pod the pool cannot seat now, and could after the repack, has waited
/// long enough to matter.
fn pending_pressure(
    free: &[u32],
    repacked: &[u32],
    cap: &[u32],
    max_cap: u32,
    pending: &[(u32, f64)],
    tau: f64,
) -> f64 {
    let seat_summary = |f: &[u32]| -> (u32, u64) {
        let max_free = f.iter().copied().max().unwrap_or(0);
        let whole = f
            .iter()
            .zip(cap)
            .filter(|(x, c)| **c == max_cap && **x == **c)
            .count() as u64;
        (max_free, whole)
    };
    let seats_any = |(max_free, whole): (u32, u64), g: u32| -> bool {
        if max_cap == 0 {
            false
        } else if g <= max_cap {
            max_free >= g
        } else {
            whole >= u64::from(g.div_ceil(max_cap))
        }
    };
    let before = seat_summary(free);
    let after = seat_summary(repacked);
    let mut keep = 1.0;
    for &(g, age) in pending {
        if !seats_any(before, g) && seats_any(after, g) {
            let u = 1.0 - (-age / tau).exp();
            keep *= 1.0 - u;
        }
    }
    clamp01(1.0 - keep)
}

fn clamp01(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}
