//! Phases and when the fleet steps in.

use super::*;

/// Home `a` short of `need` since t(0); its NodePools at their limits unless `pools_room`.
fn home_short(fleet: &mut Fleet, now: Timestamp, need: u32, pools_room: u32) {
    let mut r = short(now, 4, need, t(0));
    r.dynamic_room = pools_room;
    fleet.report("a", r);
}

fn helpers(fleet: &mut Fleet, now: Timestamp) {
    fleet.report(
        "b",
        Report {
            static_room: 3,
            ..report(now, 1)
        },
    );
    fleet.report(
        "c",
        Report {
            dynamic_room: 5,
            ..report(now, 1)
        },
    );
}

#[test]
fn a_young_shortage_stays_steady() {
    let mut fleet = Fleet::new(base_spec());
    home_short(&mut fleet, t(10), 4, 0);
    helpers(&mut fleet, t(10));
    let out = fleet.step(t(10));
    assert_eq!(fleet.phase(), Phase::Steady);
    assert!(out.decision.is_none());
    assert_eq!(writes(&out), 0);
}

#[test]
fn early_after_applies_once_own_nodepools_cannot_help() {
    let mut fleet = Fleet::new(base_spec());
    home_short(&mut fleet, t(30), 4, 0);
    helpers(&mut fleet, t(30));
    let out = fleet.step(t(30));
    assert_eq!(fleet.phase(), Phase::Escalated);
    let d = out.decision.expect("a decision");
    assert_eq!(d.phase, Phase::Escalated);
    assert_eq!(d.action, "AddCapacityShiftTraffic");
    assert_eq!(fleet.hub.fleet().phase_since, Some(t(30)));
}

#[test]
fn own_nodepools_that_can_help_keep_after() {
    let mut fleet = Fleet::new(base_spec());
    home_short(&mut fleet, t(60), 4, 6);
    helpers(&mut fleet, t(60));
    fleet.step(t(60));
    assert_eq!(
        fleet.phase(),
        Phase::Steady,
        "30s < 2m and its pools can add nodes"
    );
    home_short(&mut fleet, t(120), 4, 6);
    helpers(&mut fleet, t(120));
    fleet.step(t(120));
    assert_eq!(
        fleet.phase(),
        Phase::Escalated,
        "after 2m whatever its pools report"
    );
}

#[test]
fn replicas_becoming_ready_keep_after() {
    let mut fleet = Fleet::new(base_spec());
    let mut r = short(t(60), 6, 2, t(0));
    r.ready_replicas = 3; // 6 desired, 3 ready, 2 unschedulable: 1 is on its way
    fleet.report("a", r);
    helpers(&mut fleet, t(60));
    fleet.step(t(60));
    assert_eq!(fleet.phase(), Phase::Steady);
}

#[test]
fn static_first_lends_static_room_after_early_after_while_own_pools_could_help() {
    let mut spec = base_spec();
    spec["placement"] = json!("StaticFirst");
    let mut fleet = Fleet::new(spec);
    home_short(&mut fleet, t(40), 4, 6);
    helpers(&mut fleet, t(40));
    let out = fleet.step(t(40));
    assert_eq!(fleet.phase(), Phase::Escalated);
    assert_eq!(fleet.floor("b"), 3, "static room: max(0, 1) + 2");
    assert_eq!(fleet.floor("c"), 0, "no NodePools of others before after");
    assert!(
        message(&out).contains("+2 on b (existing nodes)"),
        "{}",
        message(&out)
    );
}

#[test]
fn local_first_waits_for_own_pools_on_the_same_shortage() {
    let mut fleet = Fleet::new(base_spec());
    home_short(&mut fleet, t(40), 4, 6);
    helpers(&mut fleet, t(40));
    fleet.step(t(40));
    assert_eq!(fleet.phase(), Phase::Steady);
    assert_eq!(fleet.floor("b"), 0);
}

#[test]
fn escalated_turns_recovering_when_no_member_is_short_and_back_on_any_shortage() {
    let mut fleet = Fleet::new(base_spec());
    home_short(&mut fleet, t(30), 4, 0);
    helpers(&mut fleet, t(30));
    fleet.step(t(30));
    assert_eq!(fleet.phase(), Phase::Escalated);
    fleet.report("a", report(t(100), 4));
    helpers(&mut fleet, t(100));
    fleet.step(t(100));
    assert_eq!(fleet.phase(), Phase::Recovering);
    assert_eq!(fleet.hub.fleet().phase_since, Some(t(100)));
    // a shortage too young to borrow for still ends Recovering
    fleet.report("a", short(t(200), 4, 1, t(195)));
    helpers(&mut fleet, t(200));
    fleet.step(t(200));
    assert_eq!(fleet.phase(), Phase::Escalated);
}
