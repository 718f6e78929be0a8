//! The end of a step: the new `status.fleet`, the decision line and the effects in order
//! (docs/plumb/design.md#effects).

use std::collections::BTreeMap;

use plumb_model::spec::Mode;
use plumb_model::{FleetStatus, Intent, Phase, Timestamp};

use super::decision::{ClusterState, DecisionLine, SOURCE_RULE};
use super::effects::{Effect, Event, EventType, Metric, reasons};
use super::members::ReportUse;
use super::outcomes;
use super::plan::Plan;
use super::view::View;
use super::{Hub, StepInput, StepOutput};

/// Assembles the step's output and moves the hub's memory on.
pub fn finish(
    hub: &mut Hub,
    input: &StepInput<'_>,
    view: &View<'_>,
    mut plan: Plan,
    before: BTreeMap<String, ClusterState>,
    no_room: Option<u32>,
) -> StepOutput {
    let now = input.now;
    let auto = view.config.mode == Mode::Auto;
    let after = plan.states();
    let changed = plan.action.any() || plan.phase_changed;
    if let Some(missing) = no_room {
        plan.messages.push(format!(
            "{missing} replicas short and no other cluster has room"
        ));
    }
    let out_of_sync: Vec<String> = view
        .members
        .iter()
        .filter(|m| m.report_use == ReportUse::OutOfSync)
        .map(|m| m.config.name.clone())
        .collect();
    let newly_held = plan.held != hub.held_said && !plan.held.is_empty();
    let decision = (changed || no_room.is_some() || newly_held)
        .then(|| decision_line(hub, input, view, &plan, &before, &after, &out_of_sync));
    let decision_id = decision.as_ref().map(|d| d.decision_id.clone());
    let mut effects = Vec::new();
    if auto {
        intent_writes(
            hub,
            input,
            &plan,
            &before,
            decision_id.as_deref(),
            &mut effects,
        );
        let weights_changed = before
            .iter()
            .any(|(name, b)| after.get(name).is_some_and(|a| a.weight != b.weight));
        if weights_changed {
            let weights = after
                .iter()
                .filter_map(|(name, a)| a.weight.map(|w| (name.clone(), w)))
                .collect();
            effects.push(Effect::WriteWeights { weights });
        }
    }
    for (name, b) in &before {
        if after.get(name).is_some_and(|a| a.floor != b.floor) {
            hub.floor_written_at.insert(name.clone(), now);
        }
    }
    if plan.action.any() {
        let action = plan.action.name(plan.phase_changed);
        effects.push(Effect::Event(Event {
            type_: EventType::Normal,
            reason: action.clone(),
            message: decision_message(&plan, auto),
        }));
        effects.push(Effect::Metric(Metric::Decision {
            action,
            source: SOURCE_RULE.to_string(),
            applied: auto,
        }));
    }
    list_events(hub, &plan, &out_of_sync, &mut effects);
    effects.push(Effect::Metric(Metric::FleetEscalated {
        value: u32::from(plan.phase == Phase::Escalated),
    }));
    effects.push(Effect::Metric(Metric::MembersOutOfSync {
        value: u32::try_from(out_of_sync.len()).unwrap_or(u32::MAX),
    }));
    let followed = outcomes::follow(
        view,
        &hub.policy,
        &hub.fleet.tracking,
        &hub.fleet.recent,
        decision.as_ref(),
        &after,
    );
    effects.extend(
        followed
            .ready_after
            .iter()
            .map(|&seconds| Effect::Metric(Metric::TimeToReady { seconds })),
    );
    let mut fleet = next_fleet(hub, view, plan, out_of_sync, changed, decision_id, now);
    fleet.tracking = followed.tracking;
    fleet.recent = followed.recent;
    hub.fleet = fleet;
    StepOutput {
        fleet: hub.fleet.clone(),
        effects,
        decision,
        outcomes: followed.lines,
    }
}

fn decision_message(plan: &Plan, auto: bool) -> String {
    let mut message = plan.messages.join("; ");
    if !auto {
        message.push_str(" (shadow: nothing applied)");
    }
    message
}

/// `ReleaseHeld`, `MembersOutOfSync` (each when its list changes to a non-empty one) and the
/// step's other Events.
fn list_events(hub: &mut Hub, plan: &Plan, out_of_sync: &[String], effects: &mut Vec<Effect>) {
    if plan.held != hub.held_said && !plan.held.is_empty() {
        effects.push(Effect::Event(Event {
            type_: EventType::Warning,
            reason: reasons::RELEASE_HELD.to_string(),
            message: format!("floor kept: no usable report from {}", plan.held.join(", ")),
        }));
    }
    hub.held_said.clone_from(&plan.held);
    if out_of_sync != hub.fleet.out_of_sync.as_slice() && !out_of_sync.is_empty() {
        effects.push(Effect::Event(Event {
            type_: EventType::Warning,
            reason: reasons::MEMBERS_OUT_OF_SYNC.to_string(),
            message: format!(
                "reports ignored, copy of the policy differs: {}",
                out_of_sync.join(", ")
            ),
        }));
    }
    effects.extend(plan.events.iter().cloned().map(Effect::Event));
}

/// Floors that changed, and renewals of held floors whose expiry is less than half left or
/// that another hub wrote. Changed floors first, in cluster order.
fn intent_writes(
    hub: &Hub,
    input: &StepInput<'_>,
    plan: &Plan,
    before: &BTreeMap<String, ClusterState>,
    decision_id: Option<&str>,
    effects: &mut Vec<Effect>,
) {
    let now = input.now;
    let mut renewals = Vec::new();
    for (name, cluster) in &plan.clusters {
        let held = input.members.get(name).and_then(|m| m.intent.as_ref());
        let changed = before.get(name).is_some_and(|b| b.floor != cluster.floor);
        let intent = (cluster.floor > 0).then(|| Intent {
            replicas: cluster.floor,
            expires: Some(now.plus(hub.intent_ttl)),
            hub: Some(hub.identity.clone()),
            tier: cluster.tier,
            added: cluster.added,
            decision_id: if changed {
                decision_id.map(str::to_string)
            } else {
                held.and_then(|h| h.decision_id.clone())
            },
        });
        if changed {
            effects.push(Effect::WriteIntent {
                cluster: name.clone(),
                intent,
                renewal: false,
            });
        } else if cluster.floor > 0 && needs_renewal(held, hub, now) {
            renewals.push(Effect::WriteIntent {
                cluster: name.clone(),
                intent,
                renewal: true,
            });
        }
    }
    effects.extend(renewals);
}

fn needs_renewal(held: Option<&Intent>, hub: &Hub, now: Timestamp) -> bool {
    let Some(held) = held else {
        return true;
    };
    held.hub.as_deref() != Some(hub.identity.as_str())
        || held
            .expires
            .is_none_or(|e| e.since(now) < hub.intent_ttl / 2)
}

fn decision_line(
    hub: &Hub,
    input: &StepInput<'_>,
    view: &View<'_>,
    plan: &Plan,
    before: &BTreeMap<String, ClusterState>,
    after: &BTreeMap<String, ClusterState>,
    out_of_sync: &[String],
) -> DecisionLine {
    let sequence = super::adopt::decision_sequence(&hub.fleet) + 1;
    DecisionLine {
        kind: "decision",
        decision_id: format!("{sequence}-{}", input.id_suffix),
        time: input.now,
        policy: hub.policy.clone(),
        hub: hub.identity.clone(),
        mode: view.config.mode,
        reports: view
            .members
            .iter()
            .map(|m| (m.config.name.clone(), m.report.cloned()))
            .collect(),
        before: before.clone(),
        after: after.clone(),
        phase: plan.phase,
        action: plan.action.name(plan.phase_changed),
        source: SOURCE_RULE,
        message: plan.messages.join("; "),
        held: plan.held.clone(),
        out_of_sync: out_of_sync.to_vec(),
        applied: view.config.mode == Mode::Auto && plan.action.any(),
        error: None,
    }
}

fn next_fleet(
    hub: &Hub,
    view: &View<'_>,
    plan: Plan,
    out_of_sync: Vec<String>,
    changed: bool,
    decision_id: Option<String>,
    now: Timestamp,
) -> FleetStatus {
    let mut clusters = plan.clusters;
    FleetStatus {
        phase: Some(plan.phase),
        phase_since: Some(plan.phase_since),
        last_step: if changed {
            Some(now)
        } else {
            hub.fleet.last_step
        },
        last_decision: decision_id.or_else(|| hub.fleet.last_decision.clone()),
        out_of_sync,
        clusters: view
            .config
            .clusters
            .iter()
            .filter_map(|c| clusters.remove(&c.name))
            .collect(),
        tracking: Vec::new(),
        recent: Vec::new(),
    }
}
