//! Per-pool fragmentation as the defragmentation policy needs it (alfred-policies.md §B,
//! with decisions G.2, G.7, E16).
//!
//! This is the policy's own copy of the scorer: it needs the observed weights, the bins
//! and the observed `TotalFree` to price single moves (§C.5), and the G.12 variant that
//! counts a preemptible source as a bin. `alfred-score` (written in parallel) did not
//! expose those pieces when this crate was written; the arithmetic here follows §B
//! line by line so the two agree on the published score.

use alfred_model::snapshot::{DeploymentMode, Node};

use crate::common::{Ctx, omenative_eligibility};

/// One schedulable bin (§B.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bin {
    /// Node name.
    pub name: String,
    /// Free GPUs.
    pub free: i64,
    /// Capacity.
    pub cap: i64,
}

/// The scoring of one pool.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolEval {
    /// Pool key.
    pub pool: String,
    /// Schedulable bins, by name.
    pub bins: Vec<Bin>,
    /// `(size, w(c, s))` over the ladder.
    pub weights: Vec<(u32, f64)>,
    /// `TotalFree(c)`.
    pub total_free: i64,
    /// `F_observed`.
    pub observed: f64,
    /// `F_best`.
    pub best: f64,
    /// `F_reclaimable`.
    pub reclaimable: f64,
    /// Pending pressure `P(c)`.
    pub pressure: f64,
    /// `Score(c)`.
    pub score: f64,
}

impl PoolEval {
    /// Case 1: `Score > θ`.
    pub fn execution_open(&self, threshold: f64) -> bool {
        self.score > threshold
    }

    /// `max(0, F_observed − F_reclaimable) > θ`.
    pub fn advisory_open(&self, threshold: f64) -> bool {
        (self.observed - self.reclaimable).max(0.0) > threshold
    }
}

/// Whether a node is a schedulable bin of `pool` (§B.1).
pub(crate) fn is_bin(ctx: &Ctx<'_>, n: &Node, pool: &str) -> bool {
    n.has_gpus()
        && n.pool.as_deref() == Some(pool)
        && !n.unavailable()
        && !(ctx.cfg.avoid_spot_as_target && n.preemptible)
}

fn bin_of(n: &Node) -> Bin {
    Bin {
        name: n.name.clone(),
        free: i64::from(n.free_gpus),
        cap: i64::from(n.total_gpus),
    }
}

/// The pool's bins, sorted by name.
pub(crate) fn bins(ctx: &Ctx<'_>, pool: &str) -> Vec<Bin> {
    ctx.snap
        .nodes
        .iter()
        .filter(|n| is_bin(ctx, n, pool))
        .map(bin_of)
        .collect()
}

/// The pool's bins plus the given extra nodes (G.12: preemptible sources), by name.
pub(crate) fn bins_with(ctx: &Ctx<'_>, pool: &str, extra: &[String]) -> Vec<Bin> {
    ctx.snap
        .nodes
        .iter()
        .filter(|n| {
            is_bin(ctx, n, pool)
                || (extra.contains(&n.name)
                    && n.has_gpus()
                    && n.pool.as_deref() == Some(pool)
                    && !n.unavailable())
        })
        .map(bin_of)
        .collect()
}

fn max_cap(bins: &[Bin]) -> i64 {
    bins.iter().map(|b| b.cap).max().unwrap_or(0)
}

/// `slots(bins, s)` (§B.2); also `seats(bins, g)` of §B.6.
pub(crate) fn slots(bins: &[Bin], s: i64) -> i64 {
    if s <= 0 {
        return 0;
    }
    let mc = max_cap(bins);
    if mc <= 0 {
        return 0;
    }
    if s <= mc {
        bins.iter().map(|b| b.free.max(0) / s).sum()
    } else {
        let whole = bins
            .iter()
            .filter(|b| b.cap == mc && b.free == b.cap)
            .count() as i64;
        let per = (s + mc - 1) / mc;
        whole / per
    }
}

/// `Σ_s w(s) · frag(s)` on `bins`, with the given denominator.
pub(crate) fn fragmentation(bins: &[Bin], weights: &[(u32, f64)], denom: i64) -> f64 {
    if denom <= 0 {
        return 0.0;
    }
    weights
        .iter()
        .map(|(s, w)| {
            let s = i64::from(*s);
            let f = (1.0 - (slots(bins, s) * s) as f64 / denom as f64).max(0.0);
            w * f
        })
        .sum()
}

fn snap_size(ladder: &[u32], g: u32) -> u32 {
    ladder
        .iter()
        .copied()
        .find(|s| *s >= g)
        .or_else(|| ladder.last().copied())
        .unwrap_or(g)
}

/// The weights `w(c, s)` of a pool (§B.4).
pub(crate) fn weights(ctx: &Ctx<'_>, pool: &str) -> Vec<(u32, f64)> {
    let ladder = &ctx.cfg.size_ladder;
    let mut demand: Vec<u64> = vec![0; ladder.len()];
    let mut add = |g: u32| {
        let s = snap_size(ladder, g);
        if let Some(i) = ladder.iter().position(|x| *x == s) {
            demand[i] += u64::from(g);
        }
    };
    for w in &ctx.snap.workloads {
        for c in &w.components {
            if matches!(c.mode, DeploymentMode::Other(_)) {
                continue;
            }
            for inst in &c.instances {
                for key in &inst.pods {
                    if let Some(p) = ctx.pod(key)
                        && p.gpus > 0
                        && ctx.pool_of(&p.node) == Some(pool)
                    {
                        add(p.gpus);
                    }
                }
            }
        }
    }
    for p in &ctx.snap.pending_pods {
        if p.gpus_needed > 0 && p.counts_in(pool) {
            add(p.gpus_needed);
        }
    }
    let total: u64 = demand.iter().sum();
    let lambda = ctx.cfg.demand_blend_lambda;
    ladder
        .iter()
        .zip(&demand)
        .map(|(s, d)| {
            let share = if total == 0 {
                0.0
            } else {
                *d as f64 / total as f64
            };
            (*s, (1.0 - lambda) * share + lambda * ctx.cfg.prior(*s))
        })
        .collect()
}

/// Whether an Instance is movable for the repack of `pool` (§B.5, with G.2).
fn repack_items(ctx: &Ctx<'_>, pool: &str) -> Vec<(i64, String, String)> {
    let mut items = Vec::new();
    if !ctx.cfg.omenative_migration_enabled {
        return items;
    }
    for w in &ctx.snap.workloads {
        if ctx.model_reason(w).is_some() || ctx.in_cooldown(w) {
            continue;
        }
        for c in &w.components {
            if c.mode != DeploymentMode::OMENative {
                continue;
            }
            for inst in &c.instances {
                if !ctx.instance_in_pool(inst, pool)
                    || omenative_eligibility(ctx, w, c, inst).is_some()
                {
                    continue;
                }
                for (key, node, gpus) in ctx.gpu_pods(inst) {
                    if ctx.pool_of(&node) == Some(pool) {
                        items.push((i64::from(gpus), node, key));
                    }
                }
            }
        }
    }
    items
}

/// The FFD repack (§B.5).
fn repack(bins: &[Bin], mut items: Vec<(i64, String, String)>) -> Vec<Bin> {
    let mut out = bins.to_vec();
    for (g, home, _) in &items {
        if let Some(b) = out.iter_mut().find(|b| &b.name == home) {
            b.free += g;
        }
    }
    items.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.2.cmp(&b.2)));
    out.sort_by(|a, b| (a.free, &a.name).cmp(&(b.free, &b.name)));
    for (g, home, _) in &items {
        if let Some(b) = out.iter_mut().find(|b| b.free >= *g && *g <= b.cap) {
            b.free -= g;
        } else if let Some(b) = out.iter_mut().find(|b| &b.name == home) {
            b.free = (b.free - g).max(0);
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Scores one pool (§B.1–§B.7).
pub(crate) fn evaluate_pool(ctx: &Ctx<'_>, pool: &str) -> PoolEval {
    let bins = bins(ctx, pool);
    let weights = weights(ctx, pool);
    let total_free: i64 = bins.iter().map(|b| b.free.max(0)).sum();
    let observed = fragmentation(&bins, &weights, total_free);
    let repacked = repack(&bins, repack_items(ctx, pool));
    let best = fragmentation(&repacked, &weights, total_free);
    let reclaimable = (observed - best).max(0.0);
    let tau = f64::from(ctx.cfg.pending_urgency_tau_minutes.max(1));
    let mut keep = 1.0;
    for p in &ctx.snap.pending_pods {
        if p.gpus_needed == 0 || !p.counts_in(pool) {
            continue;
        }
        let g = i64::from(p.gpus_needed);
        if slots(&bins, g) == 0 && slots(&repacked, g) >= 1 {
            let age = ctx.now.minutes_since(p.pending_since).max(0.0);
            let u = 1.0 - (-age / tau).exp();
            keep *= 1.0 - u;
        }
    }
    let pressure = (1.0 - keep).clamp(0.0, 1.0);
    let score = (1.0 - (1.0 - reclaimable) * (1.0 - pressure)).clamp(0.0, 1.0);
    PoolEval {
        pool: pool.to_owned(),
        bins,
        weights,
        total_free,
        observed,
        best,
        reclaimable,
        pressure,
        score,
    }
}
