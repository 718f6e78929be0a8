//! Following the floors the hub raised until their replicas are ready
//! (docs/plumb/design.md#readiness): the `waitingSince` clock, taking back replicas that
//! never reached a node, and `ReplicasNotReady` for ones on nodes but not ready.

use plumb_model::format_go_duration;

use super::effects::{Event, EventType, reasons};
use super::plan::Plan;
use super::view::{TakenBack, View};

/// Starts or stops each floor's `waitingSince` clock: running while a floor the hub added to
/// is above the member's ready replicas. A member without a usable report keeps its clock.
pub fn update_clocks(view: &View<'_>, plan: &mut Plan) {
    for (name, cluster) in plan.clusters.iter_mut() {
        let Some(report) = view.member(name).and_then(|m| m.report) else {
            continue;
        };
        if cluster.floor == 0 || cluster.added == 0 || report.ready_replicas >= cluster.floor {
            cluster.waiting_since = None;
        } else if cluster.waiting_since.is_none() {
            cluster.waiting_since = Some(view.now);
        }
    }
}

/// Past `readyTimeout`: replicas not on a node are taken back (the member is skipped for
/// another `readyTimeout`); replicas on nodes but not ready raise `ReplicasNotReady` and the
/// check repeats after another `readyTimeout`. Not in shadow mode.
pub fn follow_up(view: &View<'_>, plan: &mut Plan, taken_back: &mut TakenBack) {
    let timeout = view.config.ready_timeout;
    let timeout_text = format_go_duration(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX));
    for (name, cluster) in plan.clusters.iter_mut() {
        let (Some(report), Some(since)) = (
            view.member(name).and_then(|m| m.report),
            cluster.waiting_since,
        ) else {
            continue;
        };
        if view.now.since(since) < timeout {
            continue;
        }
        let not_created = cluster.floor.saturating_sub(report.desired_replicas);
        let not_on_node = report.unschedulable_replicas.saturating_add(not_created);
        let back = cluster.added.min(not_on_node);
        if back > 0 {
            cluster.floor -= back;
            cluster.added -= back;
            if cluster.floor == 0 {
                cluster.tier = None;
                cluster.static_ = false;
            }
            cluster.skipped_until = Some(view.now.plus(timeout));
            cluster.waiting_since = None;
            taken_back.insert(name.clone(), (back, view.now));
            plan.action.release_capacity = true;
            plan.messages.push(format!(
                "-{back} on {name}: not on a node after {timeout_text}"
            ));
        } else {
            cluster.waiting_since = Some(view.now);
            plan.events.push(Event {
                type_: EventType::Warning,
                reason: reasons::REPLICAS_NOT_READY.to_string(),
                message: format!(
                    "{name}: {} of {} replicas ready after {timeout_text}; the floor stays",
                    report.ready_replicas, cluster.floor
                ),
            });
        }
    }
}
