//! The two-member shortage story, start to finish, against a small simulated world: escalate,
//! borrow static room, traffic follows ready replicas, calm, return, release, Steady.

use super::*;

/// The world: home `a` is short of 4 until `calm_at`; helper `b` runs what its floor asks,
/// each replica ready a minute after it is wanted.
struct World {
    b_desired: u32,
    b_ready: u32,
    b_wanted_at: Timestamp,
}

impl World {
    fn observe(&mut self, fleet: &mut Fleet, now: Timestamp, calm_at: i64) {
        let floor = fleet.members["b"].intent.as_ref().map_or(0, |i| i.replicas);
        let desired = floor.max(1);
        if desired != self.b_desired {
            self.b_desired = desired;
            self.b_wanted_at = now;
        }
        if now.since(self.b_wanted_at) >= std::time::Duration::from_secs(60) {
            self.b_ready = self.b_desired;
        }
        self.b_ready = self.b_ready.min(self.b_desired);
        let a = if now < t(calm_at) {
            short(now, 4, 4, t(0))
        } else {
            report(now, 4)
        };
        fleet.report("a", a);
        let b = Report {
            static_room: 8u32.saturating_sub(self.b_desired),
            ready_replicas: self.b_ready,
            ..report(now, self.b_desired)
        };
        fleet.report("b", b);
    }
}

#[test]
fn a_shortage_start_to_finish() {
    let mut spec = base_spec();
    spec["clusters"].as_array_mut().expect("list").truncate(2);
    spec["traffic"]["stepPercent"] = json!(20);
    spec["escalation"]["calmFor"] = json!("5m");
    let mut fleet = Fleet::new(spec);
    let mut world = World {
        b_desired: 1,
        b_ready: 1,
        b_wanted_at: t(0),
    };
    let mut log = Vec::new();
    let mut now = t(0);
    while now <= t(7200) {
        world.observe(&mut fleet, now, 900);
        if let Some(d) = fleet.step(now).decision {
            if d.action.contains("ReleaseCapacity") {
                assert_eq!(
                    d.after["b"].weight,
                    Some(0),
                    "a borrowed floor goes once b's share is back"
                );
            }
            log.push(format!(
                "{} {:?} {} | {}",
                now.unix_secs() - t(0).unix_secs(),
                d.phase,
                d.action,
                d.message
            ));
        }
        now = now.plus(std::time::Duration::from_secs(30));
    }
    let text = log.join("\n");
    assert_eq!(fleet.phase(), Phase::Steady, "{text}");
    assert_eq!((fleet.floor("a"), fleet.floor("b")), (0, 0), "{text}");
    assert_eq!(
        (fleet.weight("a"), fleet.weight("b")),
        (Some(100), Some(0)),
        "{text}"
    );
    // escalated after earlyAfter (a's NodePools report no room); b's static room first, and
    // traffic follows b's ready replicas
    assert!(
        log[0].starts_with("30 Escalated AddCapacityShiftTraffic | +2 on b (existing nodes)"),
        "{text}"
    );
    let first = |what: &str| {
        log.iter()
            .position(|l| l.contains(what))
            .unwrap_or(usize::MAX)
    };
    assert!(
        first("ShiftTraffic") < first("Recovering"),
        "traffic follows ready replicas first:\n{text}"
    );
    assert!(first("Recovering") < first("ReleaseCapacity"), "{text}");
    assert!(log.last().is_some_and(|l| l.contains("Steady")), "{text}");
}
