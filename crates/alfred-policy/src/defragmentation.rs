//! The defragmentation policy (alfred-policies.md §C).
//!
//! Per pool, in pool-key order: score the pool (§B); skip it unless its score or its
//! unfixable fragmentation is above the threshold; classify every component of every
//! workload (§C.2); then drop executable rows outside the maintenance windows unless
//! they are emergencies (§C.7) and sort (§C.1).

use std::cmp::Ordering;

use alfred_model::Timestamp;
use alfred_model::config::Config;
use alfred_model::reason::{AdvisoryReason, RowReason};
use alfred_model::record::{Candidate, Policy};
use alfred_model::snapshot::{ClusterSnapshot, Component, DeploymentMode, Instance, Workload};

use crate::common::{Ctx, SurgePlan, omenative_eligibility, plan_surge, row};
use crate::pool::{Bin, PoolEval, bins_with, evaluate_pool, fragmentation};
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

/// The pool scores the policy computed (for tests, `replay` and metrics): one per pool.
pub fn pool_scores(
    snapshot: &ClusterSnapshot,
    settings: &PolicySettings,
    now: Timestamp,
) -> Vec<PoolEval> {
    let cfg = settings.sanitized();
    let ctx = Ctx::new(snapshot, &cfg, now);
    ctx.snap
        .pools()
        .iter()
        .map(|p| evaluate_pool(&ctx, p))
        .collect()
}

pub(crate) fn run(ctx: &Ctx<'_>) -> Vec<Candidate> {
    if !ctx.cfg.defragmentation_enabled {
        return Vec::new();
    }
    let theta = ctx.cfg.fragmentation_threshold;
    let mut out = Vec::new();
    for pool in ctx.snap.pools() {
        let eval = evaluate_pool(ctx, &pool);
        let exec = eval.execution_open(theta);
        if !exec && !eval.advisory_open(theta) {
            continue;
        }
        for w in &ctx.snap.workloads {
            for c in &w.components {
                component(ctx, &eval, exec, w, c, &mut out);
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
    eval: &PoolEval,
    exec: bool,
    w: &Workload,
    c: &Component,
    out: &mut Vec<Candidate>,
) {
    let pool = eval.pool.as_str();
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
    eval: &PoolEval,
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

/// Benefit (§C.5) and the emergency test (§C.6.1) of a plan.
///
/// Decision G.12: when sources are preemptible (and so not scoring bins under
/// `avoidAsTarget`), they are counted as bins before and after the move, so the GPUs the
/// move frees there count; they remain out of the pool score and out of the targets.
fn price(ctx: &Ctx<'_>, eval: &PoolEval, w: &Workload, plan: &SurgePlan) -> Option<Priced> {
    let spot_sources: Vec<String> = plan
        .sources
        .iter()
        .filter(|s| {
            ctx.node(s)
                .is_some_and(|n| n.preemptible && !eval.bins.iter().any(|b| &b.name == *s))
        })
        .cloned()
        .collect();
    let (before_bins, denom, before) = if spot_sources.is_empty() {
        (eval.bins.clone(), eval.total_free, eval.observed)
    } else {
        let b = bins_with(ctx, &eval.pool, &spot_sources);
        let d: i64 = b.iter().map(|x| x.free.max(0)).sum();
        let f = fragmentation(&b, &eval.weights, d);
        (b, d, f)
    };
    let mut after: Vec<Bin> = before_bins.clone();
    for (_, target, gpus) in &plan.moves {
        let g = i64::from(*gpus);
        let b = after.iter_mut().find(|b| &b.name == target)?;
        if b.free < g {
            return None;
        }
        b.free -= g;
    }
    for (source, _, gpus) in &plan.moves {
        if let Some(b) = after.iter_mut().find(|b| &b.name == source) {
            b.free = (b.free + i64::from(*gpus)).min(b.cap);
        }
    }
    let benefit = before - fragmentation(&after, &eval.weights, denom);
    let emergency = emergency(ctx, &eval.pool, w, &before_bins, &after);
    Some(Priced { benefit, emergency })
}

fn emergency(ctx: &Ctx<'_>, pool: &str, w: &Workload, before: &[Bin], after: &[Bin]) -> bool {
    let max_before = before.iter().map(|b| b.free).max().unwrap_or(0);
    let max_after = after.iter().map(|b| b.free).max().unwrap_or(0);
    let age = f64::from(ctx.cfg.emergency_pending_age_minutes);
    ctx.snap.pending_pods.iter().any(|p| {
        let g = i64::from(p.gpus_needed);
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
