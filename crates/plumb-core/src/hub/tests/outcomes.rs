//! Outcome lines: the checkpoints, time to ready (never in shadow), followedBy, the longer
//! horizon, and a new hub carrying on from `status.fleet.tracking`.

use super::*;

/// Home `a` short of 2 since t(0); `b` has static room and `ready_b` ready replicas.
fn observe(fleet: &mut Fleet, now: Timestamp, ready_b: u32) {
    fleet.report("a", short(now, 4, 2, t(0)));
    fleet.report(
        "b",
        Report {
            static_room: 4,
            ready_replicas: ready_b,
            ..report(now, 1)
        },
    );
}

fn two_members(mode: &str) -> Value {
    let mut spec = base_spec();
    spec["clusters"].as_array_mut().expect("list").truncate(2);
    spec["mode"] = json!(mode);
    spec["escalation"]["cooldown"] = json!("20m");
    spec
}

/// Steps every 30 s from t(120) to `until`, `b` ready at its floor of 3 from t(270).
fn run(fleet: &mut Fleet, until: i64) -> (Vec<OutcomeLine>, Vec<u64>) {
    let mut lines = Vec::new();
    let mut ready_after = Vec::new();
    let mut now = 120;
    while now <= until {
        observe(fleet, t(now), if now >= 270 { 3 } else { 1 });
        let out = fleet.step(t(now));
        lines.extend(out.outcomes);
        ready_after.extend(out.effects.iter().filter_map(|e| match e {
            Effect::Metric(Metric::TimeToReady { seconds }) => Some(*seconds),
            _ => None,
        }));
        now += 30;
    }
    (lines, ready_after)
}

#[test]
fn a_decision_is_followed_at_one_five_and_fifteen_minutes_with_its_time_to_ready() {
    let mut fleet = Fleet::new(two_members("auto"));
    let (lines, ready_after) = run(&mut fleet, 1200);
    let at: Vec<(u64, bool, i64)> = lines
        .iter()
        .map(|l| {
            (
                l.after_seconds,
                l.final_,
                l.time.since(t(120)).as_secs() as i64,
            )
        })
        .collect();
    assert_eq!(at, [(60, false, 60), (300, false, 300), (900, true, 900)]);
    assert!(
        lines[0].ready_after_seconds.is_empty(),
        "not ready at 1 min"
    );
    assert_eq!(lines[1].ready_after_seconds["b"], 150, "ready from t(270)");
    assert_eq!(lines[1].clusters["b"].floor, 3);
    assert_eq!(lines[1].clusters["b"].ready, Some(3));
    assert_eq!(lines[1].clusters["a"].needed, Some(2));
    assert!(
        lines
            .iter()
            .all(|l| l.applied && l.decision_id == "1-00000001")
    );
    assert_eq!(ready_after, [150], "one observation, when reached");
    let fleet_status = fleet.hub.fleet();
    assert!(fleet_status.tracking.is_empty());
    assert_eq!(fleet_status.recent.len(), 1);
    assert_eq!(fleet_status.recent[0].ready_after_seconds["b"], 150);
}

#[test]
fn shadow_decisions_are_followed_without_time_to_ready() {
    let mut fleet = Fleet::new(two_members("shadow"));
    let (lines, ready_after) = run(&mut fleet, 1200);
    assert_eq!(lines.len(), 3);
    assert!(
        lines
            .iter()
            .all(|l| !l.applied && l.ready_after_seconds.is_empty())
    );
    assert!(ready_after.is_empty());
}

#[test]
fn a_ready_timeout_over_fifteen_minutes_moves_the_final_line_to_it() {
    let mut spec = two_members("auto");
    spec["escalation"]["readyTimeout"] = json!("20m");
    let mut fleet = Fleet::new(spec);
    let (lines, _) = run(&mut fleet, 1500);
    let at: Vec<(u64, bool)> = lines
        .iter()
        .filter(|l| l.decision_id == "1-00000001")
        .map(|l| (l.after_seconds, l.final_))
        .collect();
    assert_eq!(at, [(60, false), (300, false), (900, false), (1200, true)]);
}

#[test]
fn later_decisions_are_named_in_followed_by() {
    let mut spec = two_members("auto");
    spec["escalation"]["cooldown"] = json!("1m");
    spec["capacity"]["step"] = json!(1);
    let mut fleet = Fleet::new(spec);
    let (lines, _) = run(&mut fleet, 1200);
    let first: Vec<&OutcomeLine> = lines
        .iter()
        .filter(|l| l.decision_id == "1-00000001")
        .collect();
    assert_eq!(first.len(), 3);
    // the next decision came a cooldown later, on the 1-minute checkpoint itself
    assert_eq!(first[0].followed_by, ["2-00000003 AddCapacityShiftTraffic"]);
    assert!(first[2].followed_by.starts_with(&first[0].followed_by));
    let second: Vec<&OutcomeLine> = lines
        .iter()
        .filter(|l| l.decision_id == "2-00000003")
        .collect();
    assert!(
        second[0]
            .followed_by
            .iter()
            .all(|f| !f.starts_with("1-") && !f.starts_with("2-")),
        "only later decisions"
    );
}

#[test]
fn a_new_hub_carries_the_outcomes_on_from_the_adopted_status() {
    let mut fleet = Fleet::new(two_members("auto"));
    let (before, _) = run(&mut fleet, 420);
    assert_eq!(before.len(), 2);
    let adopted = fleet.hub.fleet().clone();
    assert_eq!(adopted.tracking[0].checkpoints_done, 2);
    fleet.hub = Hub::new("ns/llm", "b/plumb-1", adopted);
    observe(&mut fleet, t(1020), 3);
    let out = fleet.step(t(1020));
    assert_eq!(out.outcomes.len(), 1);
    assert_eq!(out.outcomes[0].after_seconds, 900);
    assert!(out.outcomes[0].final_);
    assert_eq!(out.outcomes[0].ready_after_seconds["b"], 150);
}

#[test]
fn a_failed_write_is_followed_as_not_applied() {
    let mut fleet = Fleet::new(two_members("auto"));
    observe(&mut fleet, t(120), 1);
    let input_members = fleet.members.clone();
    let mut out = fleet.hub.step(&StepInput {
        spec: &fleet.spec,
        members: &input_members,
        weights: fleet.weights.as_ref(),
        now: t(120),
        id_suffix: "00000001",
    });
    fleet.hub.write_failed(&mut out, "conflict");
    assert!(!fleet.hub.fleet().tracking[0].applied);
    observe(&mut fleet, t(180), 3);
    let out = fleet.step(t(180));
    assert_eq!(out.outcomes.len(), 1);
    assert!(!out.outcomes[0].applied && out.outcomes[0].ready_after_seconds.is_empty());
}

#[test]
fn recent_keeps_the_last_five_finished_decisions() {
    let finished: Vec<FinishedDecision> = (0..5)
        .map(|i| FinishedDecision {
            decision_id: format!("{i}-x"),
            ..FinishedDecision::default()
        })
        .collect();
    let adopted = FleetStatus {
        recent: finished,
        ..FleetStatus::default()
    };
    let mut fleet = Fleet::new(two_members("auto"));
    fleet.hub = Hub::new("ns/llm", "a/plumb-0", adopted);
    run(&mut fleet, 1200);
    let ids: Vec<&str> = fleet
        .hub
        .fleet()
        .recent
        .iter()
        .map(|r| r.decision_id.as_str())
        .collect();
    assert_eq!(ids, ["1-x", "2-x", "3-x", "4-x", "1-00000001"]);
}
