//! Route weights: relief while a member is short or a cluster is over an SLO, and the
//! guarded return with home first (docs/plumb/design.md#traffic).

use std::collections::BTreeMap;

use plumb_model::{Phase, Report, Tier, Timestamp};

use super::allocate::tier_name;
use super::plan::{Plan, tier_of};
use super::view::View;

/// The traffic clocks this term keeps.
#[derive(Debug, Clone, Copy, Default)]
pub struct Clocks {
    /// When a share last moved for relief.
    pub last_shift: Option<Timestamp>,
    /// When a share last moved back.
    pub last_return: Option<Timestamp>,
}

/// Pressures within this fraction of the busier one are "within the band": nothing moves.
pub const PRESSURE_BAND: f64 = 0.2;

fn steady(view: &View<'_>, name: &str) -> u32 {
    view.config.cluster(name).map_or(0, |c| c.weight)
}

/// Whether every share is at its Steady weight (always, without traffic).
pub fn all_steady(view: &View<'_>, plan: &Plan) -> bool {
    plan.clusters
        .iter()
        .all(|(name, c)| c.weight.is_none_or(|w| w == steady(view, name)))
}

/// Whether a report is over `latencySLO` or `errorRateSLO`.
fn over_slo(view: &View<'_>, report: &Report) -> bool {
    over_error_slo(view, report)
        || matches!((report.latency, view.config.latency_slo), (Some(l), Some(slo)) if l.value > slo)
}

fn over_error_slo(view: &View<'_>, report: &Report) -> bool {
    matches!((report.error_rate, view.config.error_rate_slo), (Some(e), Some(slo)) if e.value > slo)
}

/// Relief or return, at most one of them per step.
pub fn step(view: &View<'_>, plan: &mut Plan, clocks: &mut Clocks) {
    if !view.config.traffic {
        return;
    }
    let any_over_slo = view
        .members
        .iter()
        .any(|m| m.report.is_some_and(|r| over_slo(view, r)));
    let before = weights(plan);
    if plan.phase == Phase::Escalated || any_over_slo {
        if view.config.pressure {
            relieve_by_pressure(view, plan, clocks.last_shift);
        } else {
            relieve_by_replicas(view, plan);
        }
        if moved(view, plan, &before) {
            clocks.last_shift = Some(view.now);
        }
    } else if plan.phase == Phase::Recovering && return_due(view, plan, clocks.last_return) {
        step_back(view, plan);
        if moved(view, plan, &before) {
            clocks.last_return = Some(view.now);
        }
    }
}

fn weights(plan: &Plan) -> BTreeMap<String, u32> {
    plan.clusters
        .iter()
        .filter_map(|(n, c)| c.weight.map(|w| (n.clone(), w)))
        .collect()
}

/// Notes a move: the action, the message, and `gainedAt` on every cluster that gained.
fn moved(view: &View<'_>, plan: &mut Plan, before: &BTreeMap<String, u32>) -> bool {
    let after = weights(plan);
    if after == *before {
        return false;
    }
    let mut parts = Vec::new();
    for (name, w) in &after {
        let was = before.get(name).copied().unwrap_or(0);
        if *w != was {
            parts.push(format!("{name} {was}→{w}"));
        }
        if *w > was
            && let Some(c) = plan.clusters.get_mut(name)
        {
            c.gained_at = Some(view.now);
        }
    }
    plan.action.shift_traffic = true;
    plan.messages.push(format!("traffic {}", parts.join(", ")));
    true
}

/// A cluster that may receive relief: usable report, within the SLOs, not skipped, below
/// its `maxWeight`, not below its Steady share (relief never moves traffic back).
fn may_gain(view: &View<'_>, plan: &Plan, name: &str) -> bool {
    let (Some(member), Some(cluster)) = (view.member(name), plan.clusters.get(name)) else {
        return false;
    };
    let (Some(report), Some(w)) = (member.report, cluster.weight) else {
        return false;
    };
    !over_slo(view, report)
        && cluster.skipped_until.is_none_or(|u| u <= view.now)
        && w < member.config.max_weight
        && w >= member.config.weight
}

/// A cluster that may give traffic away: usable report, above its `minWeight`, and not
/// holding traffic it gained less than `calmFor` ago unless it is over an SLO.
fn may_give(view: &View<'_>, plan: &Plan, name: &str) -> bool {
    let (Some(member), Some(cluster)) = (view.member(name), plan.clusters.get(name)) else {
        return false;
    };
    let (Some(report), Some(w)) = (member.report, cluster.weight) else {
        return false;
    };
    let protected = cluster
        .gained_at
        .is_some_and(|g| view.now.since(g) < view.config.calm_for);
    w > member.config.min_weight && (!protected || over_slo(view, report))
}

/// One cluster as pressure relief sees it, read once per step.
struct Side {
    name: String,
    pressure: f64,
    over_slo: bool,
    may_give: bool,
    may_gain: bool,
    reported_since_shift: bool,
}

/// With `pressure`: up to `stepPercent` from the busiest cluster (an over-SLO one first) to
/// the least busy one carrying a share, never within the 20 % band, never before both
/// reported after the last shift, never past equal pressure.
fn relieve_by_pressure(view: &View<'_>, plan: &mut Plan, last_shift: Option<Timestamp>) {
    let sides: Vec<Side> = plan
        .clusters
        .iter()
        .filter_map(|(name, cluster)| {
            let report = view.member(name)?.report?;
            let pressure = report.pressure?.value;
            Some(Side {
                name: name.clone(),
                pressure,
                over_slo: over_slo(view, report),
                may_give: may_give(view, plan, name),
                may_gain: may_gain(view, plan, name) && cluster.weight.unwrap_or(0) > 0,
                reported_since_shift: report
                    .time
                    .is_some_and(|t| last_shift.is_none_or(|s| t > s)),
            })
        })
        .collect();
    let busier = |a: &&Side, b: &&Side| a.pressure.total_cmp(&b.pressure).then(b.name.cmp(&a.name));
    let Some(donor) = sides
        .iter()
        .filter(|s| s.may_give)
        .max_by(|a, b| a.over_slo.cmp(&b.over_slo).then(busier(a, b)))
    else {
        return;
    };
    let Some(receiver) = sides
        .iter()
        .filter(|s| s.name != donor.name && s.may_gain)
        .min_by(busier)
    else {
        return;
    };
    if !donor.reported_since_shift || !receiver.reported_since_shift {
        return;
    }
    let (pd, pr) = (donor.pressure, receiver.pressure);
    if !donor.over_slo && pd - pr <= PRESSURE_BAND * pd {
        return;
    }
    let k = pressure_step(
        view,
        plan,
        (&donor.name, pd),
        (&receiver.name, pr),
        donor.over_slo,
    );
    shift(plan, &donor.name, &receiver.name, k);
}

/// The largest whole percent ≤ `stepPercent`, within both bounds, that keeps the donor's
/// predicted pressure at or above the receiver's (`p' = p × w'/w`); an over-SLO donor is
/// drained without the equal-pressure limit.
fn pressure_step(
    view: &View<'_>,
    plan: &Plan,
    (donor, pd): (&str, f64),
    (receiver, pr): (&str, f64),
    slo_donor: bool,
) -> u32 {
    let wd = plan.clusters.get(donor).and_then(|c| c.weight).unwrap_or(0);
    let wr = plan
        .clusters
        .get(receiver)
        .and_then(|c| c.weight)
        .unwrap_or(0);
    let min_d = view.config.cluster(donor).map_or(0, |c| c.min_weight);
    let max_r = view.config.cluster(receiver).map_or(100, |c| c.max_weight);
    let cap = view
        .config
        .step_percent
        .min(wd.saturating_sub(min_d))
        .min(max_r.saturating_sub(wr));
    if slo_donor || wd == 0 || wr == 0 {
        return if slo_donor { cap } else { 0 };
    }
    (0..=cap)
        .rev()
        .find(|&k| {
            let donor_after = pd * f64::from(wd - k) / f64::from(wd);
            let receiver_after = pr * f64::from(wr + k) / f64::from(wr);
            donor_after >= receiver_after
        })
        .unwrap_or(0)
}

fn shift(plan: &mut Plan, donor: &str, receiver: &str, k: u32) {
    if k == 0 {
        return;
    }
    if let Some(w) = plan.clusters.get_mut(donor).and_then(|c| c.weight.as_mut()) {
        *w -= k;
    }
    if let Some(w) = plan
        .clusters
        .get_mut(receiver)
        .and_then(|c| c.weight.as_mut())
    {
        *w += k;
    }
}

/// Without `pressure`: shares approach ready replicas × `replicaCapacity` (ready replicas
/// alone without it), each moving at most `stepPercent`. Clusters without a usable report
/// keep their share; over-error-SLO clusters are targeted at their `minWeight`.
fn relieve_by_replicas(view: &View<'_>, plan: &mut Plan) {
    let targets = replica_targets(view, plan);
    let mut moved: BTreeMap<String, u32> = BTreeMap::new();
    let limit = view.config.step_percent;
    loop {
        let share = |p: &Plan, n: &str| p.clusters.get(n).and_then(|c| c.weight).unwrap_or(0);
        let room = |m: &BTreeMap<String, u32>, n: &str| limit > m.get(n).copied().unwrap_or(0);
        let donor = targets
            .iter()
            .filter(|(n, t)| share(plan, n) > **t && room(&moved, n) && may_give(view, plan, n))
            .max_by_key(|(n, t)| (share(plan, n) - **t, std::cmp::Reverse((*n).clone())))
            .map(|(n, _)| n.clone());
        let receiver = targets
            .iter()
            .filter(|(n, t)| share(plan, n) < **t && room(&moved, n) && may_gain(view, plan, n))
            .max_by_key(|(n, t)| (**t - share(plan, n), std::cmp::Reverse((*n).clone())))
            .map(|(n, _)| n.clone());
        let (Some(d), Some(r)) = (donor, receiver) else {
            break;
        };
        shift(plan, &d, &r, 1);
        *moved.entry(d).or_default() += 1;
        *moved.entry(r).or_default() += 1;
    }
}

/// Each reporting cluster's target share of what the reporting clusters carry together,
/// whole percents by largest remainder (ties by name).
fn replica_targets(view: &View<'_>, plan: &Plan) -> BTreeMap<String, u32> {
    let mut capacity: BTreeMap<String, f64> = BTreeMap::new();
    let mut pool = 0u32;
    for (name, cluster) in &plan.clusters {
        let (Some(w), Some(member)) = (cluster.weight, view.member(name)) else {
            continue;
        };
        let Some(report) = member.report else {
            continue;
        };
        pool += w;
        let serving = if over_error_slo(view, report) {
            0.0
        } else {
            f64::from(report.ready_replicas) * member.config.replica_capacity.unwrap_or(1.0)
        };
        capacity.insert(name.clone(), serving);
    }
    largest_remainder(&capacity, pool)
}

/// Splits `total` whole units in proportion to `parts`; remainders go largest first, ties
/// by name. All-zero parts keep nothing (every target 0) unless `total` is 0.
pub fn largest_remainder(parts: &BTreeMap<String, f64>, total: u32) -> BTreeMap<String, u32> {
    let sum: f64 = parts.values().sum();
    if sum <= 0.0 {
        return parts.keys().map(|n| (n.clone(), 0)).collect();
    }
    let exact: Vec<(&String, f64)> = parts
        .iter()
        .map(|(n, v)| (n, v / sum * f64::from(total)))
        .collect();
    let mut out: BTreeMap<String, u32> = exact
        .iter()
        .map(|(n, x)| ((*n).clone(), x.floor() as u32))
        .collect();
    let given: u32 = out.values().sum();
    let mut order: Vec<&(&String, f64)> = exact.iter().collect();
    order.sort_by(|a, b| {
        (b.1 - b.1.floor())
            .total_cmp(&(a.1 - a.1.floor()))
            .then(a.0.cmp(b.0))
    });
    for (name, _) in order.into_iter().take(total.saturating_sub(given) as usize) {
        if let Some(v) = out.get_mut(*name) {
            *v += 1;
        }
    }
    out
}

/// The return's pace: Recovering for `calmFor`, no shortage, `calmFor` since the last step
/// back.
fn return_due(view: &View<'_>, plan: &Plan, last_return: Option<Timestamp>) -> bool {
    let calm = view.config.calm_for;
    !view.any_short()
        && view.now.since(plan.phase_since) >= calm
        && last_return.is_none_or(|t| view.now.since(t) >= calm)
}

/// One `stepPercent` back toward the Steady shares, from the cluster furthest above its
/// Steady share (the tier taken last first) to the one furthest below; under `pressure`
/// only if the receiver's predicted pressure stays within its safe limit, else home first.
fn step_back(view: &View<'_>, plan: &mut Plan) {
    let excess = |n: &str, p: &Plan| {
        let w = p.clusters.get(n).and_then(|c| c.weight).unwrap_or(0);
        i64::from(w) - i64::from(steady(view, n))
    };
    let names: Vec<String> = plan.clusters.keys().cloned().collect();
    let donor = names
        .iter()
        .filter(|n| excess(n, plan) > 0)
        .max_by_key(|n| {
            let tier = plan.clusters.get(*n).filter(|c| c.floor > 0).map(tier_of);
            (excess(n, plan), tier, std::cmp::Reverse((*n).clone()))
        });
    let receiver = names
        .iter()
        .filter(|n| excess(n, plan) < 0)
        .filter(|n| {
            plan.clusters
                .get(*n)
                .is_some_and(|c| c.skipped_until.is_none_or(|u| u <= view.now))
        })
        .max_by_key(|n| (-excess(n, plan), std::cmp::Reverse((*n).clone())));
    let (Some(donor), Some(receiver)) = (donor.cloned(), receiver.cloned()) else {
        return;
    };
    let k = view
        .config
        .step_percent
        .min(excess(&donor, plan).unsigned_abs() as u32)
        .min(excess(&receiver, plan).unsigned_abs() as u32);
    if view.config.pressure {
        match guard(view, plan, &donor, &receiver, k) {
            Guard::Safe => {}
            Guard::Unsafe { full_return } => {
                home_first(view, plan, &receiver, full_return);
                return;
            }
            Guard::Unknown => return,
        }
    }
    shift(plan, &donor, &receiver, k);
}

enum Guard {
    Safe,
    /// The step would push home past its limit; `full_return` is home's predicted
    /// pressure with every borrowed share back, over the limit (the size of the raise).
    Unsafe {
        full_return: f64,
    },
    Unknown,
}

/// Home's predicted pressure after taking `k` back, over the ready replicas its
/// autoscaler keeps, against the larger of home's `safePressure` and the donor's scaled by
/// `replicaCapacity(home) / replicaCapacity(donor)`.
fn guard(view: &View<'_>, plan: &Plan, donor: &str, home: &str, k: u32) -> Guard {
    let report = |n: &str| view.member(n).and_then(|m| m.report);
    let (Some(hr), Some(dr)) = (report(home), report(donor)) else {
        return Guard::Unknown;
    };
    let rc = |n: &str| {
        view.config
            .cluster(n)
            .and_then(|c| c.replica_capacity)
            .unwrap_or(1.0)
    };
    let limit = [
        hr.safe_pressure,
        dr.safe_pressure.map(|p| p * rc(home) / rc(donor)),
    ]
    .into_iter()
    .flatten()
    .fold(None, |acc: Option<f64>, p| {
        Some(acc.map_or(p, |a| a.max(p)))
    });
    let Some(limit) = limit else {
        return Guard::Unknown;
    };
    let share = |n: &str| plan.clusters.get(n).and_then(|c| c.weight).unwrap_or(0);
    let kept = f64::from(hr.ready_replicas.min(hr.desired_replicas));
    // load per share point, in pressure × replicas of home
    let per_point = match (hr.pressure, dr.pressure) {
        (Some(p), _) if share(home) > 0 => p.value * kept / f64::from(share(home)),
        (_, Some(p)) if share(donor) > 0 => {
            p.value * f64::from(dr.ready_replicas) * rc(donor) / rc(home) / f64::from(share(donor))
        }
        _ => return Guard::Unknown,
    };
    if kept == 0.0 {
        return Guard::Unsafe {
            full_return: f64::INFINITY,
        };
    }
    let predicted = |points: u32| per_point * f64::from(share(home) + points) / kept;
    if predicted(k) <= limit {
        Guard::Safe
    } else {
        let full = steady(view, home).saturating_sub(share(home));
        Guard::Unsafe {
            full_return: predicted(full) / limit,
        }
    }
}

/// Home first: raise home's floor (tier −1) `step` at a time toward the replicas that carry
/// all the borrowed traffic within the limit, while it has room; the return resumes once
/// they are ready.
fn home_first(view: &View<'_>, plan: &mut Plan, home: &str, over_limit: f64) {
    let Some(report) = view.member(home).and_then(|m| m.report) else {
        return;
    };
    let Some(config) = view.config.cluster(home) else {
        return;
    };
    let Some(cluster) = plan.clusters.get_mut(home) else {
        return;
    };
    if cluster.floor > report.ready_replicas || !view.reported_since_floor(home) {
        return; // replicas already raised are not ready yet
    }
    let kept = report.ready_replicas.min(report.desired_replicas);
    let wanted = if over_limit.is_finite() {
        (f64::from(kept.max(1)) * over_limit).ceil() as u32
    } else {
        kept + view.config.step
    };
    let base = cluster.floor.max(report.desired_replicas);
    let room = report
        .static_room
        .saturating_add(view.member(home).map_or(0, |m| m.dynamic_room()));
    let raise = view
        .config
        .step
        .min(wanted.saturating_sub(base))
        .min(room)
        .min(config.max_replicas.saturating_sub(base));
    if raise == 0 {
        return;
    }
    cluster.floor = base + raise;
    cluster.added += raise;
    cluster.tier = Some(Tier::Return);
    cluster.static_ = false;
    cluster.waiting_since.get_or_insert(view.now);
    plan.action.add_capacity = true;
    plan.messages
        .push(format!("+{raise} on {home} ({})", tier_name(Tier::Return)));
}
