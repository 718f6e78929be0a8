//! Following raised floors until ready: take-back, skip, ReplicasNotReady.

use super::*;

/// a short of 2 from t(0); b lends 2 at t(30) (floor 3); c has NodePool room.
fn lent(fleet: &mut Fleet) {
    fleet.report("a", short(t(30), 4, 2, t(0)));
    fleet.report(
        "b",
        Report {
            static_room: 2,
            ..report(t(30), 1)
        },
    );
    fleet.report("c", report(t(30), 1));
    fleet.step(t(30));
    assert_eq!(fleet.floor("b"), 3);
}

fn capacity_only() -> Value {
    let mut spec = base_spec();
    spec.as_object_mut().expect("object").remove("traffic");
    spec
}

#[test]
fn replicas_never_on_a_node_are_taken_back_and_placed_elsewhere() {
    let mut fleet = Fleet::new(capacity_only());
    lent(&mut fleet);
    for now in [100, 300, 620] {
        fleet.report("a", short(t(now), 4, 2, t(0)));
        fleet.report(
            "b",
            Report {
                unschedulable_replicas: 2,
                needed_replicas: 2,
                ready_replicas: 1,
                ..report(t(now), 3)
            },
        );
        fleet.report(
            "c",
            Report {
                dynamic_room: 4,
                ..report(t(now), 1)
            },
        );
        let out = fleet.step(t(now));
        assert!(
            out.decision
                .as_ref()
                .is_none_or(|d| !d.action.contains("Capacity")),
            "at {now}: {}",
            message(&out)
        );
    }
    fleet.report("a", short(t(640), 4, 2, t(0)));
    fleet.report(
        "b",
        Report {
            unschedulable_replicas: 2,
            needed_replicas: 2,
            ready_replicas: 1,
            ..report(t(640), 3)
        },
    );
    fleet.report(
        "c",
        Report {
            dynamic_room: 4,
            ..report(t(640), 1)
        },
    );
    let out = fleet.step(t(640));
    let msg = message(&out);
    assert!(
        msg.starts_with("-2 on b: not on a node after 10m0s"),
        "{msg}"
    );
    assert!(
        msg.contains("+2 on c (new nodes)"),
        "placed elsewhere in the same step: {msg}"
    );
    assert_eq!(fleet.floor("b"), 1);
    let b = fleet
        .hub
        .fleet()
        .clusters
        .iter()
        .find(|c| c.name == "b")
        .expect("b")
        .clone();
    assert_eq!(b.skipped_until, Some(t(640 + 600)));
    assert_eq!(b.added, 0);
    // b still shows the taken-back replicas pending until it reports again: not its shortage
    let out = fleet.step(t(700));
    assert!(
        out.decision
            .as_ref()
            .is_none_or(|d| d.phase == Phase::Escalated)
    );
    assert_eq!(fleet.floor("b"), 1);
}

#[test]
fn replicas_on_nodes_but_not_ready_raise_replicas_not_ready_and_the_floor_stays() {
    let mut fleet = Fleet::new(base_spec());
    lent(&mut fleet);
    fleet.report("a", short(t(100), 4, 2, t(0)));
    fleet.report(
        "b",
        Report {
            ready_replicas: 1,
            ..report(t(100), 3)
        },
    );
    fleet.step(t(100));
    fleet.report("a", short(t(640), 4, 2, t(0)));
    fleet.report(
        "b",
        Report {
            ready_replicas: 1,
            ..report(t(640), 3)
        },
    );
    let out = fleet.step(t(640));
    assert!(events(&out).iter().any(|(r, m)| r == "ReplicasNotReady"
        && m == "b: 1 of 3 replicas ready after 10m0s; the floor stays"));
    assert_eq!(fleet.floor("b"), 3);
    // the check repeats after another readyTimeout, not before
    fleet.report(
        "b",
        Report {
            ready_replicas: 1,
            ..report(t(700), 3)
        },
    );
    let out = fleet.step(t(700));
    assert!(events(&out).iter().all(|(r, _)| r != "ReplicasNotReady"));
}

#[test]
fn shadow_does_not_follow_readiness() {
    let mut spec = base_spec();
    spec["mode"] = json!("shadow");
    let mut fleet = Fleet::new(spec);
    lent(&mut fleet);
    fleet.report("a", short(t(700), 4, 2, t(0)));
    fleet.report(
        "b",
        Report {
            unschedulable_replicas: 2,
            ready_replicas: 1,
            ..report(t(700), 3)
        },
    );
    let out = fleet.step(t(700));
    assert!(!message(&out).contains("not on a node"));
    assert_eq!(fleet.floor("b"), 3);
}
