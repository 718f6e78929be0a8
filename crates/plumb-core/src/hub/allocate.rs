//! Where the missing replicas go: the candidates, their ranking per tier, and the
//! allocation (docs/plumb/design.md#allocation).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use plumb_model::Tier;

use super::members::{Member, RECURRING_LAUNCH_FAILURES, StepIn};
use super::plan::{Plan, tier_of};
use super::view::View;

/// Replicas still missing for the members past their escalation time: their own needs less
/// every replica the hub already added for a shortage, ready or not.
pub fn missing(view: &View<'_>, plan: &Plan) -> u32 {
    let needed: u32 = view
        .need
        .iter()
        .filter(|(name, _)| {
            view.step_in
                .get(*name)
                .is_some_and(|s| *s >= StepIn::StaticOnly)
        })
        .map(|(_, n)| *n)
        .sum();
    needed.saturating_sub(plan.added_for_shortage())
}

/// A member that may take part of the shortage this step.
#[derive(Debug)]
struct Candidate<'m, 'a> {
    member: &'m Member<'a>,
    /// `max(floor, desired)`: what an added replica is added to.
    base: u32,
}

/// Other members with a usable report, not short, not skipped, reported since the last floor
/// written there, with headroom under `maxReplicas`.
fn candidates<'m, 'a>(view: &'m View<'a>, plan: &Plan) -> Vec<Candidate<'m, 'a>> {
    view.members
        .iter()
        .filter_map(|m| {
            let name = m.config.name.as_str();
            let report = m.report?;
            let cluster = plan.clusters.get(name)?;
            let base = cluster.floor.max(report.desired_replicas);
            let eligible = view.need.get(name).copied().unwrap_or(0) == 0
                && cluster.skipped_until.is_none_or(|until| until <= view.now)
                && view.reported_since_floor(name)
                && base < m.config.max_replicas;
            eligible.then_some(Candidate { member: m, base })
        })
        .collect()
}

/// Regions where some member keeps failing to launch nodes.
fn failing_regions(view: &View<'_>) -> BTreeSet<String> {
    view.members
        .iter()
        .filter(|m| {
            m.report
                .is_some_and(|r| r.recent_launch_failures >= RECURRING_LAUNCH_FAILURES)
        })
        .filter_map(|m| m.region().map(str::to_string))
        .collect()
}

/// The room a candidate offers in a tier.
fn room(member: &Member<'_>, tier: Tier) -> u32 {
    match tier {
        Tier::ExistingNodes => member.report.map_or(0, |r| r.static_room),
        Tier::NewNodes => member.dynamic_room(),
        Tier::Return => 0,
    }
}

/// Ranks candidates for a tier: static room first, fewer launch failures, `costRank`, more
/// room in the tier, name; in tier 1 members of a failing region go last.
fn rank(cands: &mut [Candidate<'_, '_>], tier: Tier, failing: &BTreeSet<String>) {
    cands.sort_by_cached_key(|c| {
        let m = c.member;
        let (static_room, failures) = m
            .report
            .map_or((0, u32::MAX), |r| (r.static_room, r.recent_launch_failures));
        let last_for_region =
            tier == Tier::NewNodes && m.region().is_some_and(|r| failing.contains(r));
        (
            last_for_region,
            static_room == 0,
            failures,
            m.config.cost_rank,
            Reverse(room(m, tier)),
            m.config.name.as_str(),
        )
    });
}

/// Allocates up to `missing` replicas over the allowed tiers; each cluster gains at most
/// `step` per step, within its room and `maxReplicas`. Returns what each cluster gained.
pub fn allocate(view: &View<'_>, plan: &mut Plan, missing: u32) -> BTreeMap<String, u32> {
    let tiers: &[Tier] = match view.widest_step_in() {
        StepIn::Full => &[Tier::ExistingNodes, Tier::NewNodes],
        StepIn::StaticOnly => &[Tier::ExistingNodes],
        StepIn::NotShort | StepIn::Waiting => &[],
    };
    let mut cands = candidates(view, plan);
    let failing = failing_regions(view);
    let step = view.config.step;
    let mut given: BTreeMap<String, (u32, Tier)> = BTreeMap::new();
    let mut left = missing;
    for &tier in tiers {
        rank(&mut cands, tier, &failing);
        for c in &cands {
            let name = &c.member.config.name;
            let (so_far, _) = given.get(name).copied().unwrap_or((0, tier));
            let headroom = c.member.config.max_replicas.saturating_sub(c.base + so_far);
            let give = left
                .min(step.saturating_sub(so_far))
                .min(room(c.member, tier))
                .min(headroom);
            if give > 0 {
                given.insert(name.clone(), (so_far + give, tier));
                left -= give;
            }
        }
    }
    for c in &cands {
        let name = &c.member.config.name;
        let Some((n, tier)) = given.get(name).copied() else {
            continue;
        };
        let Some(cluster) = plan.clusters.get_mut(name) else {
            continue;
        };
        let tier = if cluster.floor > 0 {
            tier.max(tier_of(cluster))
        } else {
            tier
        };
        cluster.floor = c.base + n;
        cluster.added += n;
        cluster.tier = Some(tier);
        cluster.static_ = tier == Tier::ExistingNodes;
        cluster.waiting_since.get_or_insert(view.now);
        plan.action.add_capacity = true;
        plan.messages
            .push(format!("+{n} on {name} ({})", tier_name(tier)));
    }
    given.into_iter().map(|(name, (n, _))| (name, n)).collect()
}

/// How a tier reads in a message.
pub fn tier_name(tier: Tier) -> &'static str {
    match tier {
        Tier::Return => "home, to take traffic back",
        Tier::ExistingNodes => "existing nodes",
        Tier::NewNodes => "new nodes",
    }
}
