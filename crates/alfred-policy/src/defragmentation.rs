//! The defragmentation policy (alfred-policies.md §C).
//!
//! Per pool, in pool-key order: score the pool (§B, alfred-score's [`analyze`]); skip it
//! unless its score or its unfixable fragmentation is above the threshold (§B.8); classify
//! every component of every workload (§C.2), pricing moves on the pool's observed bins and
//! weights (§C.5); then drop executable rows outside the maintenance windows unless they
//! are emergencies (§C.7) and sort (§C.1).
//!
//! [`analyze`]: alfred_score::analyze

use std::cmp::Ordering;

use alfred_model::Timestamp;
use alfred_model::config::Config;
use alfred_model::reason::{AdvisoryReason, RowReason};
use alfred_model::record::{Candidate, Policy};
use alfred_model::snapshot::{ClusterSnapshot, Component, DeploymentMode, Instance, Workload};
use alfred_score::{Bins, PoolAnalysis, PoolScore, ThresholdCase, weighted_fragmentation};

use crate::common::{Ctx, SurgePlan, omenative_eligibility, plan_surge, row};
use crate::settings::PolicySettings;

/// Runs the defragmentation policy on `snapshot` at `now` (the snapshot time `T`).
pub fn evaluate(snapshot: &ClusterSnapshot, config: &Config, now: Timestamp) -> Vec<Candidate> {
    evaluate_with(snapshot, &PolicySettings::from_config(config), now)
}

/// [`evaluate`] with the policies' settings given directly.
pub fn evaluate_with(
    snapshot: &ClusterSnapshot,
    settings: &PolicySettings,
    now: Timestamp,
) -> Vec<Candidate> {
    let cfg = settings.sanitized();
    let ctx = Ctx::new(snapshot, &cfg, now);
    run(&ctx)
}

/// The pool scores the policy decides on (alfred-score's, on the policy's normalized
/// snapshot at `now`): one per pool, in pool-key order.
pub fn pool_scores(
    snapshot: &ClusterSnapshot,
    settings: &PolicySettings,
    now: Timestamp,
) -> Vec<PoolScore> {
    let cfg = settings.sanitized();
    let ctx = Ctx::new(snapshot, &cfg, now);
    let analysis = ctx.analyze();
    ctx.snap
        .pools()
        .iter()
        .filter_map(|p| analysis.pool(p))
        .map(|p| p.score.clone())
        .collect()
}

pub(crate) fn run(ctx: &Ctx<'_>) -> Vec<Candidate> {
    if !ctx.cfg.defragmentation_enabled {
        return Vec::new();
    }
    let analysis = ctx.analyze();
    let mut out = Vec::new();
    for pool in ctx.snap.pools() {
        let Some(eval) = analysis.pool(&pool) else {
            continue;
        };
        let exec = match eval.score.threshold_case {
            ThresholdCase::ExecutionOpen => true,
            ThresholdCase::AdvisoryOnly => false,
            ThresholdCase::Quiet => continue,
        };
        for w in &ctx.snap.workloads {
            for c in &w.components {
                component(ctx, eval, exec, w, c, &mut out);
            }
        }
    }
    if !ctx.cfg.window_open(ctx.now) {
        out.retain(|r| !r.executable || r.emergency);
    }
    sort_rows(&mut out);
    out
}

/// The final sort of §C.1, completed with the remaining row fields so it is total.
pub(crate) fn sort_rows(rows: &mut [Candidate]) {
    rows.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.footprint_gpus.cmp(&b.footprint_gpus))
            .then_with(|| a.workload.cmp(&b.workload))
            .then_with(|| a.component.cmp(&b.component))
            .then_with(|| a.instance.cmp(&b.instance))
            .then_with(|| a.from_node.cmp(&b.from_node))
            .then_with(|| reason_key(a).cmp(&reason_key(b)))
    });
}

fn reason_key(c: &Candidate) -> (&'static str, bool) {
    (
        c.advisory_reason.map(|r| r.as_str()).unwrap_or(""),
        c.executable,
    )
}

/// Every pod of a component: the routed ones and the Instances' (sorted, unique).
pub(crate) fn component_pods(c: &Component) -> Vec<String> {
    let mut pods: Vec<String> = c.pods.clone();
    for i in &c.instances {
        pods.extend(i.pods.iter().cloned());
    }
    pods.sort();
    pods.dedup();
    pods
}

fn component(
    ctx: &Ctx<'_>,
    eval: &PoolAnalysis<'_>,
    exec: bool,
    w: &Workload,
    c: &Component,
    out: &mut Vec<Candidate>,
) {
    let pool = eval.score.pool.as_str();
    let busy = !w.settings.movable || !w.migration.active.is_empty() || ctx.in_cooldown(w);
    let mk = |instance: i64, from: String, why: AdvisoryReason| {
        row(
            Policy::Defragmentation,
            w,
            c.kind,
            instance,
            &c.mode,
            RowReason::Fragmentation,
            from,
            Some(why),
        )
    };
    match &c.mode {
        DeploymentMode::MultiNode => {
            let pods = component_pods(c);
            if busy
                || !ctx.cfg.lws_recommendations_enabled
                || ctx.primary_pool(&pods).as_deref() != Some(pool)
            {
                return;
            }
            let from = ctx.primary_node(&pods, c.instances.first());
            out.push(mk(-1, from, AdvisoryReason::LWSMigrationUnsupported));
        }
        DeploymentMode::RawDeployment => {
            if busy {
                return;
            }
            for inst in &c.instances {
                if inst.total_gpus == 0 || inst.any_terminating || !ctx.instance_in_pool(inst, pool)
                {
                    continue;
                }
                let from = ctx.primary_node(&inst.pods, Some(inst));
                out.push(mk(
                    i64::from(inst.index),
                    from,
                    AdvisoryReason::RawDeploymentMigrationUnsupported,
                ));
            }
        }
        DeploymentMode::OMENative => {
            if let Some(why) = ctx.model_reason(w) {
                let pods = component_pods(c);
                if ctx.primary_pool(&pods).as_deref() == Some(pool) {
                    let from = ctx.primary_node(&pods, c.instances.first());
                    out.push(mk(-1, from, why));
                }
                return;
            }
            for inst in &c.instances {
                if inst.total_gpus == 0 || !ctx.instance_in_pool(inst, pool) {
                    continue;
                }
                out.extend(omenative_instance(ctx, eval, exec, w, c, inst));
            }
        }
        DeploymentMode::Other(_) => {}
    }
}

/// The OMENative ladder of §C.2 for one Instance (steps 2–8). `None` only when the
/// fail-closed guard of §C.5 drops the candidate.
fn omenative_instance(
    ctx: &Ctx<'_>,
    eval: &PoolAnalysis<'_>,
    exec: bool,
    w: &Workload,
    c: &Component,
    inst: &Instance,
) -> Option<Candidate> {
    let from = ctx.primary_node(&inst.pods, Some(inst));
    let mut r = row(
        Policy::Defragmentation,
        w,
        c.kind,
        i64::from(inst.index),
        &c.mode,
        RowReason::Fragmentation,
        from,
        None,
    );
    let advice = |mut r: Candidate, why: AdvisoryReason| {
        r.executable = false;
        r.advisory_reason = Some(why);
        r
    };
    if !ctx.cfg.omenative_migration_enabled {
        return Some(advice(r, AdvisoryReason::MigrationSurfaceDisabled));
    }
    if ctx.in_cooldown(w) {
        return Some(advice(r, AdvisoryReason::OMENativeStateIneligible));
    }
    if let Some(why) = omenative_eligibility(ctx, w, c, inst) {
        return Some(advice(r, why));
    }
    if !exec {
        return Some(advice(
            r,
            AdvisoryReason::NonExecutableObservedFragmentation,
        ));
    }
    let Some(plan) = plan_surge(ctx, w, inst) else {
        r.footprint_gpus = inst.total_gpus;
        return Some(advice(r, AdvisoryReason::NoSurgeHeadroom));
    };
    let priced = price(ctx, eval, w, &plan)?;
    let cost = ctx.cfg.move_cost();
    let score = priced.benefit - cost;
    r.benefit = priced.benefit;
    r.cost = cost;
    if score.partial_cmp(&0.0) != Some(Ordering::Greater) {
        r.score = if score.is_nan() { 0.0 } else { score };
        return Some(advice(
            r,
            AdvisoryReason::NonExecutableObservedFragmentation,
        ));
    }
    let mut boosted = score;
    if priced.emergency {
        boosted *= 2.0;
    }
    let source_preemptible = ctx.node(&r.from_node).is_some_and(|n| n.preemptible);
    if source_preemptible && ctx.spot_prefers_source(w) {
        boosted *= 1.25;
    }
    r.score = boosted;
    r.emergency = priced.emergency;
    r.surge_shaped = true;
    r.footprint_gpus = inst.total_gpus;
    r.hint_target_nodes = plan.hints;
    r.placement_target_nodes = plan.placement_targets;
    r.pod_gpus = plan.pod_gpus;
    Some(r)
}

struct Priced {
    benefit: f64,
    emergency: bool,
}

/// Benefit (§C.5) and the emergency test (§C.6.1) of a plan, on a copy of the pool's
/// observed bins with the observed weights and `TotalFree`; `None` when a target is not a
/// bin with room (the fail-closed guard).
///
/// Decision G.12: preemptible sources that are not bins (under `avoidAsTarget`) but are
/// GPU nodes of the pool that can take work are counted as bins before and after the move,
/// with `TotalFree` taken over those bins, so the GPUs the move frees there count; they
/// remain out of the pool score and out of the targets.
fn price(ctx: &Ctx<'_>, eval: &PoolAnalysis<'_>, w: &Workload, plan: &SurgePlan) -> Option<Priced> {
    let pool = eval.score.pool.as_str();
    let mut before = eval.bins.clone();
    for source in &plan.sources {
        if eval.bins.position(source).is_some() {
            continue;
        }
        let nodes = &ctx.snap.nodes;
        if let Ok(i) = nodes.binary_search_by(|n| n.name.as_str().cmp(source))
            && let n = &nodes[i]
            && n.preemptible
            && n.has_gpus()
            && n.pool.as_deref() == Some(pool)
            && !n.unavailable()
        {
            before.insert(n, i);
        }
    }
    let denominator = before.total_free();
    let mut after = before.clone();
    for (_, target, gpus) in &plan.moves {
        if !after.take(target, *gpus) {
            return None;
        }
    }
    for (source, _, gpus) in &plan.moves {
        after.release(source, *gpus);
    }
    let benefit = weighted_fragmentation(&before, &eval.weights, denominator)
        - weighted_fragmentation(&after, &eval.weights, denominator);
    let emergency = emergency(ctx, pool, w, &before, &after);
    Some(Priced { benefit, emergency })
}

fn emergency(ctx: &Ctx<'_>, pool: &str, w: &Workload, before: &Bins<'_>, after: &Bins<'_>) -> bool {
    let max_before = before.free().iter().copied().max().unwrap_or(0);
    let max_after = after.free().iter().copied().max().unwrap_or(0);
    let age = f64::from(ctx.cfg.emergency_pending_age_minutes);
    ctx.snap.pending_pods.iter().any(|p| {
        let g = p.gpus_needed;
        g > 0
            && p.counts_in(pool)
            && ctx.now.minutes_since(p.pending_since) > age
            && tenant_compatible(ctx, w, p)
            && max_before < g
            && max_after >= g
    })
}

fn tenant_compatible(ctx: &Ctx<'_>, w: &Workload, p: &alfred_model::snapshot::PendingPod) -> bool {
    if p.namespace == w.namespace {
        return true;
    }
    if !ctx.cfg.allow_cross_tenant_optimization || w.settings.tenant_group.is_empty() {
        return false;
    }
    let Some(isvc) = p.isvc.as_deref().filter(|s| !s.is_empty()) else {
        return false;
    };
    let (ns, name) = isvc.split_once('/').unwrap_or((p.namespace.as_str(), isvc));
    ctx.snap
        .workload(ns, name)
        .is_some_and(|o| o.settings.tenant_group == w.settings.tenant_group)
}
