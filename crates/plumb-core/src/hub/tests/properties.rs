//! Invariants over random fleets and timelines.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

#[derive(Debug, Clone)]
struct MemberStep {
    kind: u8, // 0 usable, 1 missing, 2 stale, 3 out of sync
    desired: u32,
    ready: u32,
    need: u32,
    short_for: i64,
    static_room: u32,
    dynamic_room: u32,
    failures: u32,
    over_slo: bool,
    pressure: Option<f64>,
    safe: Option<f64>,
}

fn member_step() -> impl Strategy<Value = MemberStep> {
    (
        prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8), 1 => Just(3u8)],
        0u32..8,
        0u32..8,
        prop_oneof![2 => Just(0u32), 1 => 1u32..6],
        0i64..400,
        0u32..5,
        0u32..5,
        0u32..4,
        prop::bool::weighted(0.15),
        proptest::option::of(0.0f64..10.0),
        proptest::option::of(0.0f64..10.0),
    )
        .prop_map(
            |(
                kind,
                desired,
                ready,
                need,
                short_for,
                static_room,
                dynamic_room,
                failures,
                over_slo,
                pressure,
                safe,
            )| MemberStep {
                kind,
                desired,
                ready: ready.min(desired),
                need,
                short_for,
                static_room,
                dynamic_room,
                failures,
                over_slo,
                pressure,
                safe,
            },
        )
}

fn to_report(m: &MemberStep, now: Timestamp) -> Option<Report> {
    let at = if m.kind == 2 {
        now.minus(std::time::Duration::from_secs(200))
    } else {
        now
    };
    let r = Report {
        time: Some(at),
        desired_replicas: m.desired,
        ready_replicas: m.ready,
        unschedulable_replicas: m.need.min(2),
        needed_replicas: m.need,
        short_since: (m.need > 0)
            .then(|| now.minus(std::time::Duration::from_secs(m.short_for as u64))),
        static_room: m.static_room,
        dynamic_room: m.dynamic_room,
        recent_launch_failures: m.failures,
        latency: m.over_slo.then(|| sample(5.0, at)),
        pressure: m.pressure.map(|p| sample(p, at)),
        safe_pressure: m.safe,
        spec_hash: if m.kind == 3 {
            "old".into()
        } else {
            "h".into()
        },
        ..Report::default()
    };
    (m.kind != 1).then_some(r)
}

fn spec_for(shadow: bool, pressure: bool, static_first: bool, weights: [u32; 3]) -> Value {
    let mut spec = base_spec();
    spec["mode"] = json!(if shadow { "shadow" } else { "auto" });
    spec["signals"] = json!({"latency": "l", "latencySLO": 2.0});
    if pressure {
        spec["signals"]["pressure"] = json!("q");
    }
    if static_first {
        spec["placement"] = json!("StaticFirst");
    }
    spec["clusters"][1]["maxReplicas"] = json!(5);
    spec["clusters"][2]["minWeight"] = json!(0);
    spec["clusters"][2]["maxWeight"] = json!(60);
    for (i, w) in weights.iter().enumerate() {
        spec["clusters"][i]["weight"] = json!(w);
    }
    spec["escalation"]["calmFor"] = json!("3m");
    spec
}

fn weight_split() -> impl Strategy<Value = [u32; 3]> {
    (0u32..=100, 0u32..=60).prop_map(|(a, c)| {
        let c = c.min(100 - a);
        [a, 100 - a - c, c]
    })
}

fn added_of(fleet: &Fleet) -> BTreeMap<String, u32> {
    fleet
        .hub
        .fleet()
        .clusters
        .iter()
        .map(|c| (c.name.clone(), c.added))
        .collect()
}

fn floors_of(fleet: &Fleet) -> BTreeMap<String, u32> {
    fleet
        .hub
        .fleet()
        .clusters
        .iter()
        .map(|c| (c.name.clone(), c.floor))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Floors within maxReplicas; at most `step` added per cluster per step; weights whole,
    /// summing to 100, within bounds; no gain over an SLO; at most one changing step per
    /// cooldown; no release or gain on a member without a usable report; shadow writes
    /// nothing.
    #[test]
    fn hub_invariants_hold_over_random_timelines(
        shadow in any::<bool>(),
        pressure in any::<bool>(),
        static_first in any::<bool>(),
        weights in weight_split(),
        timeline in proptest::collection::vec((10i64..200, proptest::collection::vec(member_step(), 3)), 1..25),
    ) {
        let mut fleet = Fleet::new(spec_for(shadow, pressure, static_first, weights));
        let config = HubConfig::from_spec(&fleet.spec);
        let mut now = t(0);
        let mut last_change: Option<Timestamp> = None;
        for (dt, steps) in &timeline {
            now = now.plus(std::time::Duration::from_secs(*dt as u64));
            for (c, m) in config.clusters.iter().zip(steps) {
                let r = to_report(m, now);
                fleet.members.get_mut(&c.name).expect("member").report = r;
            }
            let added_before = added_of(&fleet);
            let floors_before = floors_of(&fleet);
            let weights_before: BTreeMap<String, Option<u32>> =
                config.clusters.iter().map(|c| (c.name.clone(), fleet.weight(&c.name))).collect();
            let out = fleet.step(now);
            if shadow {
                prop_assert_eq!(writes(&out), 0);
            }
            if fleet.hub.fleet().last_step == Some(now) {
                if let Some(prev) = last_change {
                    prop_assert!(now.since(prev) >= config.cooldown, "two changing steps within cooldown");
                }
                last_change = Some(now);
            }
            let mut sum = 0;
            for (c, m) in config.clusters.iter().zip(steps) {
                let fc = fleet.hub.fleet().clusters.iter().find(|f| f.name == c.name).expect("planned").clone();
                prop_assert!(fc.floor <= c.max_replicas.max(floors_before.get(&c.name).copied().unwrap_or(0)), "{} floor {} over max", c.name, fc.floor);
                let gained = fc.added.saturating_sub(added_before.get(&c.name).copied().unwrap_or(0));
                prop_assert!(gained <= config.step, "{} gained {gained}", c.name);
                if m.kind != 0 {
                    prop_assert_eq!(gained, 0, "no gain without a usable report");
                    prop_assert!(fc.floor >= floors_before.get(&c.name).copied().unwrap_or(0), "no release without a usable report");
                }
                let w = fc.weight.expect("traffic managed");
                prop_assert!(w >= c.min_weight && w <= c.max_weight);
                if m.kind == 0 && m.over_slo {
                    prop_assert!(w <= weights_before[&c.name].unwrap_or(w), "{} gained over its SLO", c.name);
                }
                sum += w;
            }
            prop_assert_eq!(sum, 100);
        }
    }
}
