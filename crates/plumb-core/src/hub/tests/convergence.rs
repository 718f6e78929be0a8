//! Liveness over random shortages: once the shortage ends and every member reports, the
//! fleet gives everything back and returns to Steady.

use proptest::prelude::*;

use super::*;

/// One helper as the world runs it: its desired replicas follow the floor, each ready a
/// minute after it is wanted.
#[derive(Debug, Clone, Copy)]
struct Helper {
    desired: u32,
    ready: u32,
    wanted_at: Timestamp,
    static_room: u32,
    dynamic_room: u32,
}

impl Helper {
    fn observe(&mut self, floor: u32, now: Timestamp) {
        let desired = floor.max(1);
        if desired != self.desired {
            self.desired = desired;
            self.wanted_at = now;
        }
        if now.since(self.wanted_at) >= std::time::Duration::from_secs(60) {
            self.ready = self.desired;
        }
        self.ready = self.ready.min(self.desired);
    }
}

fn floor_of(fleet: &Fleet, name: &str) -> u32 {
    fleet.members[name]
        .intent
        .as_ref()
        .map_or(0, |i| i.replicas)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn after_a_shortage_the_fleet_returns_to_steady(
        pressure in any::<bool>(),
        static_first in any::<bool>(),
        shortage_secs in 60i64..1800,
        need in 1u32..7,
        rooms in proptest::collection::vec((0u32..5, 0u32..5), 2),
        home_room in 0u32..4,
        safe in prop_oneof![Just(1.2f64), Just(0.9f64)],
    ) {
        let mut spec = base_spec();
        if pressure {
            spec["signals"] = json!({"pressure": "q"});
        }
        if static_first {
            spec["placement"] = json!("StaticFirst");
        }
        let mut fleet = Fleet::new(spec);
        let mut helpers: Vec<(&str, Helper)> = ["b", "c"]
            .into_iter()
            .zip(&rooms)
            .map(|(n, (s, d))| (n, Helper { desired: 1, ready: 1, wanted_at: t(0), static_room: *s, dynamic_room: *d }))
            .collect();
        let mut home = Helper { desired: 4, ready: 4, wanted_at: t(0), static_room: home_room, dynamic_room: 0 };
        let mut now = t(0);
        let end = t(6 * 3600);
        while now <= end {
            let short_now = now < t(shortage_secs);
            // demand in replicas' worth of load: home's 4, plus what it is short of
            let demand = if short_now { 4.0 + f64::from(need) } else { 4.0 };
            let weights = fleet.weights.clone().unwrap_or_default();
            let share = |name: &str| f64::from(weights.get(name).copied().unwrap_or(0));
            home.observe(floor_of(&fleet, "a").max(4), now);
            let mut a = if short_now { short(now, home.desired, need, t(0)) } else { report(now, home.desired) };
            a.ready_replicas = home.ready;
            a.static_room = home.static_room.saturating_sub(home.desired - 4);
            if pressure {
                a.pressure = Some(sample(demand * share("a") / 100.0 / f64::from(home.ready.max(1)), now));
                a.safe_pressure = Some(safe);
            }
            fleet.report("a", a);
            for (name, h) in helpers.iter_mut() {
                h.observe(floor_of(&fleet, name), now);
                let mut r = Report {
                    static_room: h.static_room.saturating_sub(h.desired.saturating_sub(1)),
                    dynamic_room: h.dynamic_room,
                    ready_replicas: h.ready,
                    ..report(now, h.desired)
                };
                if pressure {
                    let ready = f64::from(h.ready.max(1));
                    r.pressure = Some(sample(demand * share(name) / 100.0 / ready, now));
                    r.safe_pressure = Some(safe);
                }
                fleet.report(name, r);
            }
            fleet.step(now);
            now = now.plus(std::time::Duration::from_secs(30));
        }
        // without room at home, a return past its safe pressure waits for demand to drop,
        // which this world never does: the split holds and the borrowed capacity serves
        let home_can_take_it = !pressure || safe >= 1.0 || home_room > 0;
        if !home_can_take_it {
            return Ok(());
        }
        prop_assert_eq!(fleet.phase(), Phase::Steady);
        for name in ["a", "b", "c"] {
            prop_assert_eq!(fleet.floor(name), 0, "{} keeps a floor", name);
            prop_assert!(fleet.members[name].intent.is_none());
        }
        prop_assert_eq!(fleet.weight("a"), Some(100));
    }
}
