//! The faults of a run, drawn each second from the run's fault stream while the fault phase
//! lasts: the hub agent killed in the middle of a step, other agents restarting, partitions
//! (a side of any size: the hub in the minority or the majority, or no side with a majority),
//! a member's API server stopped, its reports delayed, its signals missing, stale or absurd,
//! and the API write faults of [`crate::store::ApiFaults`] in force throughout. After the
//! phase everything heals.

use crate::campaign::{draw_signal_fault, kill_agent};
use crate::store::ApiFaults;
use crate::world::World;

/// Per-second chances.
const CRASH_HUB: f64 = 1.0 / 300.0;
const RESTART_AGENT: f64 = 1.0 / 1200.0;
const PARTITION: f64 = 1.0 / 500.0;
const API_DOWN: f64 = 1.0 / 900.0;
const REPORT_DELAY: f64 = 1.0 / 1500.0;
const SIGNAL_FAULT: f64 = 1.0 / 900.0;

/// Draws this second's new faults.
pub fn draw(w: &mut World) {
    let t = w.t;
    let n = w.members.len();
    let r = &mut w.fault_rng;
    if r.chance(CRASH_HUB) {
        w.crash_next_step = true;
    }
    if r.chance(RESTART_AGENT) {
        let i = r.index(n);
        count(w, "agent restarted");
        kill_agent(w, i);
    }
    let r = &mut w.fault_rng;
    if w.partition.is_none() && r.chance(PARTITION) {
        let side: Vec<bool> = (0..n).map(|_| r.chance(0.5)).collect();
        if side.iter().any(|s| *s) && side.iter().any(|s| !*s) {
            let until = t + r.range_i64(20_000, 300_000);
            w.partition = Some((side, until));
            w.counters.partitions += 1;
            count(w, "partition");
        }
    }
    for i in 0..n {
        let r = &mut w.fault_rng;
        if r.chance(API_DOWN) {
            w.members[i].api_down_until = t + r.range_i64(10_000, 180_000);
            count(w, "API server stopped");
        }
        let r = &mut w.fault_rng;
        if r.chance(REPORT_DELAY) {
            w.members[i].reports_paused_until = t + r.range_i64(60_000, 360_000);
            count(w, "reports delayed");
        }
        let r = &mut w.fault_rng;
        if r.chance(SIGNAL_FAULT) {
            let fault = draw_signal_fault(r);
            w.members[i].signal_fault = Some((fault, t + r.range_i64(60_000, 300_000)));
            count(w, "signal fault");
        }
    }
    w.api = w.api_drawn;
}

/// Ends faults whose time is up.
pub fn expire(w: &mut World) {
    if w.partition.as_ref().is_some_and(|(_, until)| *until <= w.t) {
        w.partition = None;
    }
}

/// Ends every fault (the calm stretch at the end of a run).
pub fn heal(w: &mut World) {
    w.partition = None;
    w.crash_next_step = false;
    w.api = ApiFaults::default();
    for m in &mut w.members {
        m.api_down_until = m.api_down_until.min(w.t);
        m.reports_paused_until = m.reports_paused_until.min(w.t);
        m.signal_fault = None;
    }
}

fn count(w: &mut World, kind: &'static str) {
    *w.faults.entry(kind).or_insert(0) += 1;
}
