//! Giving capacity back.

use super::*;

fn capacity_only() -> Value {
    let mut spec = base_spec();
    spec.as_object_mut().expect("object").remove("traffic");
    spec
}

/// Escalate at t(30) (b lends 2 on existing nodes, c 2 on new nodes), recover at t(100).
fn borrowed(fleet: &mut Fleet) {
    fleet.report("a", short(t(30), 4, 4, t(0)));
    fleet.report(
        "b",
        Report {
            static_room: 2,
            ..report(t(30), 1)
        },
    );
    fleet.report(
        "c",
        Report {
            dynamic_room: 4,
            ..report(t(30), 1)
        },
    );
    fleet.step(t(30));
    assert_eq!((fleet.floor("b"), fleet.floor("c")), (3, 3));
    fleet.report("a", report(t(100), 4));
    fleet.report("b", report(t(100), 3));
    fleet.report("c", report(t(100), 3));
    fleet.step(t(100));
    assert_eq!(fleet.phase(), Phase::Recovering);
}

fn all_report(fleet: &mut Fleet, now: i64) {
    fleet.report("a", report(t(now), 4));
    fleet.report("b", report(t(now), 3));
    fleet.report("c", report(t(now), 3));
}

#[test]
fn release_waits_for_calm_then_goes_step_by_step_highest_tier_first() {
    let mut fleet = Fleet::new(capacity_only());
    borrowed(&mut fleet);
    all_report(&mut fleet, 650);
    assert!(fleet.step(t(650)).decision.is_none(), "calmFor not over");
    all_report(&mut fleet, 700);
    let out = fleet.step(t(700));
    assert_eq!(message(&out), "-2 on c (release)");
    assert_eq!(
        out.decision.as_ref().map(|d| d.action.as_str()),
        Some("ReleaseCapacity")
    );
    assert_eq!((fleet.floor("b"), fleet.floor("c")), (3, 1));
    // one step per report: c has not reported since
    let out = fleet.step(t(760));
    assert!(out.decision.is_none());
    all_report(&mut fleet, 770);
    fleet.step(t(780));
    assert_eq!(fleet.floor("c"), 0);
    assert!(
        fleet.members["c"].intent.is_none(),
        "a floor at 0 is cleared"
    );
    all_report(&mut fleet, 840);
    fleet.step(t(840));
    assert_eq!(fleet.floor("b"), 1, "then the existing nodes");
    all_report(&mut fleet, 900);
    fleet.step(t(900));
    assert_eq!(fleet.floor("b"), 0);
    assert_eq!(
        fleet.phase(),
        Phase::Steady,
        "no floor left, no traffic managed"
    );
}

#[test]
fn a_shortage_stops_the_release() {
    let mut fleet = Fleet::new(capacity_only());
    borrowed(&mut fleet);
    all_report(&mut fleet, 700);
    fleet.report("b", short(t(700), 3, 1, t(695)));
    let out = fleet.step(t(700));
    assert_eq!(fleet.phase(), Phase::Escalated);
    assert!(!message(&out).contains("release"));
}

#[test]
fn a_member_without_a_usable_report_keeps_its_floor_and_is_held() {
    let mut fleet = Fleet::new(capacity_only());
    borrowed(&mut fleet);
    all_report(&mut fleet, 700);
    fleet.no_report("c");
    let out = fleet.step(t(700));
    assert_eq!(fleet.floor("c"), 3);
    let d = out.decision.clone().expect("held is logged");
    assert_eq!(d.held, vec!["c".to_string()]);
    assert_eq!(d.reports.get("c"), Some(&None));
    assert!(
        events(&out)
            .iter()
            .any(|(r, m)| r == "ReleaseHeld" && m == "floor kept: no usable report from c")
    );
    // the same list again: no second Event
    let out = fleet.step(t(780));
    assert!(events(&out).iter().all(|(r, _)| r != "ReleaseHeld"));
    all_report(&mut fleet, 800);
    fleet.step(t(840));
    assert_eq!(fleet.floor("c"), 1, "release resumes once it reports");
}
