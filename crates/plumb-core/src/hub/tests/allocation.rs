//! Candidates, ranking and allocation.

use super::*;

fn escalate(fleet: &mut Fleet, now: Timestamp, need: u32) {
    fleet.report("a", short(now, 4, need, t(0)));
}

#[test]
fn static_room_first_then_nodepools_at_most_step_each() {
    let mut fleet = Fleet::new(base_spec());
    escalate(&mut fleet, t(30), 6);
    fleet.report(
        "b",
        Report {
            static_room: 5,
            dynamic_room: 0,
            ..report(t(30), 1)
        },
    );
    fleet.report(
        "c",
        Report {
            static_room: 0,
            dynamic_room: 5,
            ..report(t(30), 2)
        },
    );
    let out = fleet.step(t(30));
    assert_eq!(fleet.floor("b"), 3, "max(0, desired 1) + step 2");
    assert_eq!(fleet.floor("c"), 4, "max(0, desired 2) + step 2");
    let b = fleet.members["b"].intent.clone().expect("written");
    assert_eq!(
        (b.replicas, b.added, b.tier),
        (3, 2, Some(Tier::ExistingNodes))
    );
    assert_eq!(b.hub.as_deref(), Some("a/plumb-0"));
    assert_eq!(b.expires, Some(t(30).plus(INTENT_TTL)));
    let c = fleet.members["c"].intent.clone().expect("written");
    assert_eq!(c.tier, Some(Tier::NewNodes));
    assert_eq!(
        message(&out).split("; ").take(2).collect::<Vec<_>>(),
        ["+2 on b (existing nodes)", "+2 on c (new nodes)"]
    );
    let d = out.decision.clone().expect("decision");
    assert!(d.after["b"].static_ && !d.after["c"].static_);
}

#[test]
fn ranking_prefers_fewer_launch_failures_then_cost_rank_then_room_then_name() {
    let mut spec = base_spec();
    spec["clusters"][1]["costRank"] = json!(1);
    let mut fleet = Fleet::new(spec);
    escalate(&mut fleet, t(30), 2);
    fleet.report(
        "b",
        Report {
            static_room: 4,
            ..report(t(30), 0)
        },
    );
    fleet.report(
        "c",
        Report {
            static_room: 1,
            ..report(t(30), 0)
        },
    );
    fleet.step(t(30));
    assert_eq!(
        (fleet.floor("b"), fleet.floor("c")),
        (1, 1),
        "c (costRank 0) first, with room for 1"
    );

    let mut fleet = Fleet::new(base_spec());
    escalate(&mut fleet, t(30), 2);
    fleet.report(
        "b",
        Report {
            static_room: 4,
            ..report(t(30), 0)
        },
    );
    fleet.report(
        "c",
        Report {
            static_room: 4,
            recent_launch_failures: 1,
            ..report(t(30), 0)
        },
    );
    fleet.step(t(30));
    assert_eq!(
        (fleet.floor("b"), fleet.floor("c")),
        (2, 0),
        "fewer launch failures first"
    );

    let mut fleet = Fleet::new(base_spec());
    escalate(&mut fleet, t(30), 2);
    fleet.report(
        "b",
        Report {
            static_room: 2,
            ..report(t(30), 0)
        },
    );
    fleet.report(
        "c",
        Report {
            static_room: 4,
            ..report(t(30), 0)
        },
    );
    fleet.step(t(30));
    assert_eq!(
        (fleet.floor("b"), fleet.floor("c")),
        (0, 2),
        "more room first"
    );
}

#[test]
fn a_failing_region_goes_last_for_new_nodes() {
    let mut spec = base_spec();
    spec["clusters"].as_array_mut().expect("list").push(json!(
        {"name": "d", "nodePools": ["gpu"], "maxReplicas": 10, "region": "us", "weight": 0, "backend": {"name": "d"}}
    ));
    spec["clusters"][1]["region"] = json!("eu");
    spec["clusters"][1]["nodePools"] = json!(["gpu"]);
    let mut fleet = Fleet::new(spec);
    escalate(&mut fleet, t(30), 2);
    // b keeps failing to launch in eu: c (eu, more room) goes after d (us)
    fleet.report(
        "b",
        Report {
            recent_launch_failures: 3,
            dynamic_room: 5,
            ..report(t(30), 0)
        },
    );
    fleet.report(
        "c",
        Report {
            dynamic_room: 5,
            region: Some("eu".into()),
            ..report(t(30), 0)
        },
    );
    fleet.report(
        "d",
        Report {
            dynamic_room: 3,
            ..report(t(30), 0)
        },
    );
    fleet.step(t(30));
    assert_eq!(
        fleet.floor("b"),
        0,
        "recurring launch failures void its dynamic room"
    );
    assert_eq!((fleet.floor("c"), fleet.floor("d")), (0, 2));

    // without the failures, more room ranks first
    let mut fleet = Fleet::new(base_spec());
    escalate(&mut fleet, t(30), 2);
    fleet.report(
        "b",
        Report {
            dynamic_room: 3,
            ..report(t(30), 0)
        },
    );
    fleet.report(
        "c",
        Report {
            dynamic_room: 5,
            region: Some("eu".into()),
            ..report(t(30), 0)
        },
    );
    fleet.step(t(30));
    assert_eq!(fleet.floor("c"), 2);
}

#[test]
fn floors_are_absolute_and_capped_at_max_replicas() {
    let mut spec = base_spec();
    spec["clusters"][1]["maxReplicas"] = json!(6);
    let mut fleet = Fleet::new(spec);
    escalate(&mut fleet, t(30), 4);
    fleet.report(
        "b",
        Report {
            static_room: 9,
            ..report(t(30), 5)
        },
    );
    fleet.step(t(30));
    assert_eq!(
        fleet.floor("b"),
        6,
        "max(0, desired 5) + 1, capped at maxReplicas 6"
    );
    assert_eq!(fleet.members["b"].intent.as_ref().map(|i| i.added), Some(1));
}

#[test]
fn a_member_whose_report_predates_the_last_floor_takes_nothing() {
    let mut fleet = Fleet::new(base_spec());
    escalate(&mut fleet, t(30), 6);
    fleet.report(
        "b",
        Report {
            static_room: 9,
            ..report(t(30), 0)
        },
    );
    fleet.step(t(30));
    assert_eq!(fleet.floor("b"), 2);
    // a minute later b has not reported again (still the t(30) report): nothing more there
    escalate(&mut fleet, t(90), 6);
    fleet.step(t(90));
    assert_eq!(fleet.floor("b"), 2);
    fleet.report(
        "b",
        Report {
            static_room: 7,
            ..report(t(150), 2)
        },
    );
    escalate(&mut fleet, t(150), 6);
    fleet.step(t(150));
    assert_eq!(
        fleet.floor("b"),
        4,
        "reported after the floor: another step"
    );
}

#[test]
fn the_missing_replicas_count_what_was_added_already() {
    let mut fleet = Fleet::new(base_spec());
    escalate(&mut fleet, t(30), 2);
    fleet.report(
        "b",
        Report {
            static_room: 9,
            ..report(t(30), 0)
        },
    );
    fleet.step(t(30));
    assert_eq!(fleet.floor("b"), 2);
    fleet.report(
        "b",
        Report {
            static_room: 7,
            ..report(t(100), 2)
        },
    );
    escalate(&mut fleet, t(100), 2);
    let out = fleet.step(t(100));
    assert_eq!(fleet.floor("b"), 2, "2 needed, 2 added: nothing missing");
    assert!(!message(&out).contains("+"));
}

#[test]
fn nothing_fits_says_so_once_per_shortage_size() {
    let mut fleet = Fleet::new(base_spec());
    escalate(&mut fleet, t(30), 5);
    fleet.report("b", report(t(30), 0));
    fleet.report("c", report(t(30), 0));
    let out = fleet.step(t(30));
    assert_eq!(
        message(&out),
        "5 replicas short and no other cluster has room"
    );
    let d = out.decision.clone().expect("the phase change carries it");
    assert_eq!(d.action, "PhaseChange");
    assert!(!d.applied);
    escalate(&mut fleet, t(100), 5);
    let out = fleet.step(t(100));
    assert!(out.decision.is_none(), "same N: not repeated");
    escalate(&mut fleet, t(200), 6);
    let out = fleet.step(t(200));
    assert_eq!(
        message(&out),
        "6 replicas short and no other cluster has room"
    );
}

#[test]
fn at_most_one_changing_step_per_cooldown() {
    let mut fleet = Fleet::new(base_spec());
    escalate(&mut fleet, t(30), 6);
    fleet.report(
        "b",
        Report {
            static_room: 9,
            ..report(t(30), 0)
        },
    );
    fleet.step(t(30));
    fleet.report(
        "b",
        Report {
            static_room: 7,
            ..report(t(40), 2)
        },
    );
    escalate(&mut fleet, t(40), 6);
    let out = fleet.step(t(60));
    assert!(out.decision.is_none(), "30 s after a change, cooldown 1m");
    assert_eq!(fleet.floor("b"), 2);
    let out = fleet.step(t(90));
    assert!(out.decision.is_some());
    assert_eq!(fleet.floor("b"), 4);
    assert_eq!(fleet.hub.fleet().last_step, Some(t(90)));
}

#[test]
fn shadow_decides_the_same_but_writes_nothing() {
    let mut spec = base_spec();
    spec["mode"] = json!("shadow");
    let mut fleet = Fleet::new(spec);
    escalate(&mut fleet, t(30), 4);
    fleet.report(
        "b",
        Report {
            static_room: 9,
            ready_replicas: 1,
            ..report(t(30), 1)
        },
    );
    let out = fleet.step(t(30));
    assert_eq!(writes(&out), 0);
    assert!(fleet.members["b"].intent.is_none());
    assert_eq!(fleet.floor("b"), 3, "status.fleet simulates the floor");
    let d = out.decision.clone().expect("decision logged");
    assert_eq!(d.action, "AddCapacityShiftTraffic");
    assert!(!d.applied);
    assert!(
        events(&out).iter().any(
            |(r, m)| r == "AddCapacityShiftTraffic" && m.ends_with("(shadow: nothing applied)")
        )
    );
    // the simulated floor carries forward
    fleet.report(
        "b",
        Report {
            static_room: 7,
            ready_replicas: 1,
            ..report(t(100), 1)
        },
    );
    escalate(&mut fleet, t(100), 6);
    fleet.step(t(100));
    assert_eq!(fleet.floor("b"), 5);
}

#[test]
fn a_shortened_intent_ttl_sets_the_expiry_and_the_renewal_point() {
    let mut fleet = Fleet::new(base_spec());
    fleet.hub = fleet.hub.clone().with_intent_ttl(Duration::from_secs(20));
    escalate(&mut fleet, t(30), 6);
    fleet.report(
        "b",
        Report {
            static_room: 5,
            ..report(t(30), 1)
        },
    );
    fleet.step(t(30));
    let written = fleet.members["b"].intent.clone().expect("written");
    assert_eq!(written.expires, Some(t(30).plus(Duration::from_secs(20))));
    // More than half of the 20 s left: no renewal; less than half: renewed to now + 20 s.
    let early = fleet.step(t(30).plus(Duration::from_secs(5)));
    assert!(
        !early
            .effects
            .iter()
            .any(|e| matches!(e, Effect::WriteIntent { renewal: true, .. })),
        "{:?}",
        early.effects
    );
    let late_at = t(30).plus(Duration::from_secs(12));
    let late = fleet.step(late_at);
    assert!(
        late.effects.iter().any(|e| matches!(
            e,
            Effect::WriteIntent { cluster, renewal: true, intent: Some(i) }
                if cluster == "b" && i.expires == Some(late_at.plus(Duration::from_secs(20)))
        )),
        "{:?}",
        late.effects
    );
}
