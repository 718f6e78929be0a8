//! Giving capacity back after `calmFor` (docs/plumb/design.md#release): `step` at a time,
//! highest tier first, home's tier −1 floor last, one acknowledged step per report, and held
//! on a member without a usable report.

use plumb_model::{Phase, Tier};

use super::plan::{Plan, tier_of};
use super::view::View;

/// Whether release may run: Recovering for `calmFor`, no member short.
pub fn due(view: &View<'_>, plan: &Plan) -> bool {
    plan.phase == Phase::Recovering
        && view.now.since(plan.phase_since) >= view.config.calm_for
        && !view.any_short()
}

/// Whether the cluster's share is back at its Steady weight (always, without traffic).
fn share_back(view: &View<'_>, plan: &Plan, name: &str) -> bool {
    let steady = view.config.cluster(name).map_or(0, |c| c.weight);
    plan.clusters
        .get(name)
        .and_then(|c| c.weight)
        .is_none_or(|w| w == steady)
}

/// Lowers the floors of the highest tier still holding any by `step` each, on members whose
/// share is back and who reported since the last floor change; members without a usable
/// report are held. The tier −1 floor goes only once every borrowed floor is gone and every
/// share is back.
pub fn release(view: &View<'_>, plan: &mut Plan) {
    let borrowed = |t: Tier| t != Tier::Return;
    let highest = plan
        .clusters
        .values()
        .filter(|c| c.floor > 0)
        .map(tier_of)
        .filter(|t| borrowed(*t))
        .max();
    let all_back = plan
        .clusters
        .keys()
        .all(|name| share_back(view, plan, name));
    let tier = match highest {
        Some(t) => t,
        None if all_back => Tier::Return,
        None => return,
    };
    let due: Vec<String> = plan
        .clusters
        .iter()
        .filter(|(name, c)| c.floor > 0 && tier_of(c) == tier && share_back(view, plan, name))
        .map(|(name, _)| name.clone())
        .collect();
    let step = view.config.step;
    for name in due {
        if view.member(&name).and_then(|m| m.report).is_none() {
            plan.held.push(name);
            continue;
        }
        if !view.reported_since_floor(&name) {
            continue;
        }
        let Some(cluster) = plan.clusters.get_mut(&name) else {
            continue;
        };
        let drop = step.min(cluster.floor);
        cluster.floor -= drop;
        cluster.added = cluster.added.saturating_sub(drop);
        if cluster.floor == 0 {
            cluster.added = 0;
            cluster.tier = None;
            cluster.static_ = false;
            cluster.waiting_since = None;
        }
        plan.action.release_capacity = true;
        plan.messages.push(format!("-{drop} on {name} (release)"));
    }
}
