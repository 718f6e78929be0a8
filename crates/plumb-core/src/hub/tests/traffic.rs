//! Relief, the guarded return and home first.

use super::*;

fn pressure_spec(weights: [u32; 3]) -> Value {
    let mut spec = base_spec();
    spec["signals"] = json!({"pressure": "q", "latency": "l", "latencySLO": 2.0});
    for (i, w) in weights.iter().enumerate() {
        spec["clusters"][i]["weight"] = json!(w);
    }
    spec
}

fn with_pressure(r: Report, p: f64) -> Report {
    let at = r.time.expect("timed");
    Report {
        pressure: Some(sample(p, at)),
        ..r
    }
}

#[test]
fn without_pressure_shares_follow_ready_replicas_a_step_at_a_time() {
    let mut fleet = Fleet::new(base_spec());
    fleet.report("a", short(t(30), 2, 4, t(0)));
    fleet.report(
        "b",
        Report {
            static_room: 2,
            ready_replicas: 6,
            ..report(t(30), 6)
        },
    );
    fleet.report("c", report(t(30), 0));
    let out = fleet.step(t(30));
    assert_eq!(fleet.weight("a"), Some(90));
    assert_eq!(fleet.weight("b"), Some(10));
    assert!(
        message(&out).contains("traffic a 100→90, b 0→10"),
        "{}",
        message(&out)
    );
    let weights = out.effects.iter().find_map(|e| match e {
        Effect::WriteWeights { weights } => Some(weights.clone()),
        _ => None,
    });
    assert_eq!(weights.map(|w| w.values().sum::<u32>()), Some(100));
}

#[test]
fn a_member_over_its_slo_never_gains() {
    let mut spec = base_spec();
    spec["signals"] = json!({"latency": "l", "latencySLO": 2.0});
    let mut fleet = Fleet::new(spec);
    fleet.report("a", short(t(30), 2, 4, t(0)));
    fleet.report(
        "b",
        Report {
            ready_replicas: 6,
            latency: Some(sample(3.0, t(30))),
            ..report(t(30), 6)
        },
    );
    fleet.report(
        "c",
        Report {
            ready_replicas: 2,
            ..report(t(30), 2)
        },
    );
    fleet.step(t(30));
    assert_eq!(fleet.weight("b"), Some(0));
    assert_eq!(fleet.weight("c"), Some(10));
}

#[test]
fn pressure_relief_keeps_out_of_the_band_and_short_of_equal_pressure() {
    let mut fleet = Fleet::new(pressure_spec([50, 50, 0]));
    fleet.report("a", with_pressure(short(t(30), 4, 2, t(0)), 10.0));
    fleet.report("b", with_pressure(report(t(30), 4), 8.0));
    fleet.step(t(30));
    assert_eq!(
        fleet.weight("a"),
        Some(50),
        "10 vs 8 is within the 20 % band"
    );

    let mut fleet = Fleet::new(pressure_spec([50, 50, 0]));
    fleet.report("a", with_pressure(short(t(30), 4, 2, t(0)), 10.0));
    fleet.report("b", with_pressure(report(t(30), 4), 7.0));
    fleet.step(t(30));
    // 10·(50−k)/50 ≥ 7·(50+k)/50 holds up to k = 8
    assert_eq!((fleet.weight("a"), fleet.weight("b")), (Some(42), Some(58)));
    // nothing more before both report again
    fleet.report("a", with_pressure(short(t(20), 4, 2, t(0)), 10.0));
    fleet.step(t(100));
    assert_eq!(fleet.weight("a"), Some(42));
}

#[test]
fn an_over_slo_cluster_is_drained_first_even_when_less_busy() {
    let mut fleet = Fleet::new(pressure_spec([50, 50, 0]));
    let mut a = with_pressure(report(t(30), 4), 1.0);
    a.latency = Some(sample(5.0, t(30)));
    fleet.report("a", a);
    fleet.report("b", with_pressure(report(t(30), 4), 3.0));
    fleet.step(t(30));
    assert_eq!((fleet.weight("a"), fleet.weight("b")), (Some(40), Some(60)));
}

/// Recovering since t(0) with 30 % of home's traffic on b; home (a) at pressure 4 with 4
/// ready replicas.
fn returning(safe: Option<f64>, static_room: u32) -> Fleet {
    let mut fleet = Fleet::new(pressure_spec([100, 0, 0]));
    let adopted = FleetStatus {
        phase: Some(Phase::Recovering),
        phase_since: Some(t(0)),
        ..FleetStatus::default()
    };
    fleet.hub = Hub::new("ns/llm", "a/plumb-0", adopted);
    fleet.weights = Some([("a".into(), 70), ("b".into(), 30), ("c".into(), 0)].into());
    let home = Report {
        safe_pressure: safe,
        static_room,
        ..with_pressure(report(t(600), 4), 4.0)
    };
    fleet.report("a", home);
    fleet.report(
        "b",
        Report {
            safe_pressure: None,
            ..with_pressure(report(t(600), 3), 2.0)
        },
    );
    fleet.report("c", report(t(600), 0));
    fleet
}

#[test]
fn the_return_steps_back_when_home_stays_within_its_safe_pressure() {
    let mut fleet = returning(Some(6.0), 0);
    let out = fleet.step(t(600));
    assert_eq!((fleet.weight("a"), fleet.weight("b")), (Some(80), Some(20)));
    assert_eq!(
        out.decision.map(|d| d.action),
        Some("ShiftTraffic".to_string())
    );
    // the next step back only after another calmFor
    fleet.report(
        "a",
        with_pressure(
            Report {
                safe_pressure: Some(6.0),
                ..report(t(900), 4)
            },
            4.0,
        ),
    );
    fleet.report("b", with_pressure(report(t(900), 3), 2.0));
    fleet.step(t(900));
    assert_eq!(fleet.weight("a"), Some(80));
    fleet.report(
        "a",
        with_pressure(
            Report {
                safe_pressure: Some(6.0),
                ..report(t(1200), 4)
            },
            4.0,
        ),
    );
    fleet.report("b", with_pressure(report(t(1200), 3), 2.0));
    fleet.step(t(1200));
    assert_eq!(fleet.weight("a"), Some(90));
}

#[test]
fn home_first_raises_homes_floor_when_the_return_would_overload_it() {
    // 4 replicas at 4.0 carrying 70 %: 80 % would be 4.57 > 4.5
    let mut fleet = returning(Some(4.5), 2);
    let out = fleet.step(t(600));
    assert_eq!(fleet.weight("a"), Some(70), "the split holds");
    assert_eq!(fleet.floor("a"), 6);
    let intent = fleet.members["a"].intent.clone().expect("home's floor");
    assert_eq!((intent.tier, intent.added), (Some(Tier::Return), 2));
    assert_eq!(message(&out), "+2 on a (home, to take traffic back)");
    // home's pending replicas are not a shortage
    let mut a = with_pressure(report(t(700), 6), 4.0);
    a.ready_replicas = 4;
    a.unschedulable_replicas = 2;
    a.needed_replicas = 2;
    a.safe_pressure = Some(4.5);
    fleet.report("a", a);
    fleet.step(t(700));
    assert_eq!(fleet.phase(), Phase::Recovering);
}

#[test]
fn without_a_safe_pressure_no_step_back_is_taken_under_pressure() {
    let mut fleet = returning(None, 2);
    let out = fleet.step(t(600));
    assert_eq!(fleet.weight("a"), Some(70));
    assert!(out.decision.is_none());
}

#[test]
fn without_room_home_waits_for_demand_to_drop() {
    let mut fleet = returning(Some(4.5), 0);
    let out = fleet.step(t(600));
    assert_eq!((fleet.weight("a"), fleet.floor("a")), (Some(70), 0));
    assert!(out.decision.is_none());
}

#[test]
fn route_weights_that_are_not_percents_are_read_as_shares_of_100() {
    let mut fleet = Fleet::new(base_spec());
    fleet.weights = Some([("a".into(), 1), ("b".into(), 1), ("c".into(), 1)].into());
    fleet.report("a", short(t(30), 4, 2, t(0)));
    fleet.report(
        "b",
        Report {
            static_room: 2,
            ..report(t(30), 0)
        },
    );
    let out = fleet.step(t(30));
    let d = out.decision.expect("escalated");
    let before: Vec<Option<u32>> = d.before.values().map(|s| s.weight).collect();
    assert_eq!(
        before,
        [Some(34), Some(33), Some(33)],
        "largest remainder, ties by name"
    );
    let after: u32 = d.after.values().filter_map(|s| s.weight).sum();
    assert_eq!(after, 100);
}
