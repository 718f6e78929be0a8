//! The twin's own mechanics on small hand-made traces: arrivals, departures, placement,
//! pending retries, surge migrations, failures, evictions, determinism.

mod common;

use alfred_twin::caretakers::Descheduler;
use alfred_twin::engine::{Action, Caretaker, MINUTE, MigPhase, NoCaretaker, Sim, TaskState, run};
use alfred_twin::world::{Placement, World};
use common::*;

#[test]
fn arrivals_place_pending_waits_and_departure_retries() {
    let nodes = nodes(2, 2);
    let trace = vec![task(1), task(2)];
    // Four 1-GPU tasks fill both nodes; a 2-GPU task waits until two leave from one node.
    let arrivals = vec![
        arrival(0, 0, Some(60)),
        arrival(1, 0, Some(30)),
        arrival(2, 0, Some(40)),
        arrival(3, 0, Some(200)),
        arrival(5, 1, Some(10)),
    ];
    let res = run(
        &arrivals,
        &trace,
        World::new(&nodes, Placement::Spread),
        &opts(4),
        &mut NoCaretaker,
        &mut |_| {},
    );
    let s = &res.sim;
    // Spread: t0 → n0, t1 → n1, t2 → n0, t3 → n1.
    let placed: Vec<_> = s.tasks.iter().map(|t| t.first_placed).collect();
    assert_eq!(
        placed[..4],
        [Some(0), Some(MINUTE), Some(2 * MINUTE), Some(3 * MINUTE)]
    );
    // t1 leaves at 31 min: n1 still has t3; t2 leaves at 42 min, n0 keeps t0 until 60
    // min, when the waiting 2-GPU task gets n0 (lifetimes run from the first placement).
    assert_eq!(s.tasks[4].first_placed, Some(60 * MINUTE));
    assert_eq!(s.tasks[4].depart_at, Some(70 * MINUTE));
    assert_eq!(s.tasks[4].node, None, "it left after 10 minutes");
    assert_eq!(s.tasks[4].state, TaskState::Gone);
    assert!(s.pending.is_empty());
    assert_eq!(s.world.allocated_gpus(), 0, "everyone left by 4 h");
    // waits.csv lists the one pod of two GPUs or more, its 55-minute wait and its pool.
    let csv = alfred_twin::report::waits_csv(&[("none".into(), &res)]);
    let pool = &s.world.pools[s.world.nodes[0].pool];
    assert_eq!(
        csv,
        format!(
            "caretaker,task,gpus,size,arrived_hours,wait_minutes,placed_pool\n\
             none,{},2,2,0.0833,55.000,{pool}\n",
            s.tasks[4].name
        )
    );
}

#[test]
fn binpack_packs() {
    let nodes = nodes(2, 4);
    let trace = vec![task(1)];
    let arrivals = vec![arrival(0, 0, None), arrival(1, 0, None)];
    let res = run(
        &arrivals,
        &trace,
        World::new(&nodes, Placement::Binpack),
        &opts(1),
        &mut NoCaretaker,
        &mut |_| {},
    );
    assert_eq!(res.sim.tasks[0].node, res.sim.tasks[1].node);
}

/// Asks for one move at the first pass.
struct OneMove {
    task: usize,
    hints: Vec<usize>,
    done: bool,
    seen_surge: Option<(u32, u32)>,
}

impl Caretaker for OneMove {
    fn name(&self) -> String {
        "one".into()
    }
    fn interval_ms(&self) -> i64 {
        MINUTE
    }
    fn pass(&mut self, sim: &Sim, _now: i64) -> Vec<Action> {
        if let Some(m) = sim.migrations.first()
            && m.phase == MigPhase::Surge
            && self.seen_surge.is_none()
        {
            let t = m.target.unwrap_or(0);
            self.seen_surge = Some((
                sim.world.nodes[m.from].free_gpus,
                sim.world.nodes[t].free_gpus,
            ));
        }
        if self.done {
            return vec![];
        }
        self.done = true;
        vec![Action::Migrate {
            task: self.task,
            uuid: "u-1".into(),
            payload: String::new(),
            hints: self.hints.clone(),
        }]
    }
}

#[test]
fn surge_holds_both_then_moves_and_frees_the_source() {
    let nodes = nodes(3, 4);
    let trace = vec![task(1), task(4)];
    // Spread: t0 → n0, t1 → n1, t2 → n2; a 4-GPU task waits.
    let arrivals = vec![
        arrival(0, 0, None),
        arrival(0, 0, None),
        arrival(0, 0, None),
        arrival(0, 1, None),
    ];
    let mut c = OneMove {
        task: 2,
        hints: vec![0],
        done: false,
        seen_surge: None,
    };
    let res = run(
        &arrivals,
        &trace,
        World::new(&nodes, Placement::Spread),
        &opts(1),
        &mut c,
        &mut |_| {},
    );
    let s = &res.sim;
    let m = &s.migrations[0];
    assert_eq!(m.phase, MigPhase::Completed);
    assert_eq!(m.target, Some(0), "the hint wins");
    assert_eq!(
        m.started,
        Some(MINUTE + 10_000),
        "acknowledged after the ack delay"
    );
    assert_eq!(
        m.ended,
        Some(MINUTE + 10_000 + 3 * MINUTE),
        "ready after the ready time"
    );
    assert_eq!(
        c.seen_surge,
        Some((3, 2)),
        "during the surge both pods hold a GPU"
    );
    assert_eq!(s.tasks[2].node, Some(0));
    assert_eq!(s.tasks[2].incarnation, 2);
    // The freed n2 takes the waiting 4-GPU task at once.
    assert_eq!(s.tasks[3].node, Some(2));
    assert_eq!(s.tasks[3].first_placed, m.ended);
    assert_eq!(s.moves_completed, 1);
}

#[test]
fn a_move_with_no_room_fails() {
    let nodes = nodes(2, 1);
    let trace = vec![task(1)];
    let arrivals = vec![arrival(0, 0, None), arrival(0, 0, None)];
    let mut c = OneMove {
        task: 0,
        hints: vec![1],
        done: false,
        seen_surge: None,
    };
    let res = run(
        &arrivals,
        &trace,
        World::new(&nodes, Placement::Spread),
        &opts(1),
        &mut c,
        &mut |_| {},
    );
    assert_eq!(res.sim.migrations[0].phase, MigPhase::Failed);
    assert_eq!(res.sim.moves_failed, 1);
    assert_eq!(res.sim.tasks[0].node, Some(0), "the original stays");
}

#[test]
fn a_task_leaving_during_its_move_leaves_when_the_move_ends() {
    let nodes = nodes(2, 2);
    let trace = vec![task(1)];
    let arrivals = vec![arrival(0, 0, Some(2))];
    let mut c = OneMove {
        task: 0,
        hints: vec![1],
        done: false,
        seen_surge: None,
    };
    let res = run(
        &arrivals,
        &trace,
        World::new(&nodes, Placement::Spread),
        &opts(1),
        &mut c,
        &mut |_| {},
    );
    let s = &res.sim;
    assert_eq!(s.migrations[0].phase, MigPhase::Completed);
    assert_eq!(s.tasks[0].state, TaskState::Gone);
    assert_eq!(s.world.allocated_gpus(), 0);
}

#[test]
fn descheduler_evicts_from_underutilised_nodes_and_records_downtime() {
    let nodes = nodes(2, 4);
    let trace = vec![task(1)];
    // Spread: n0 gets 2, n1 gets 1 → both below 50%... n0 at 50% is not below; n1 is.
    let arrivals = vec![
        arrival(0, 0, None),
        arrival(0, 0, None),
        arrival(0, 0, None),
    ];
    let mut d = Descheduler {
        interval_ms: 5 * MINUTE,
        ..Descheduler::default()
    };
    let res = run(
        &arrivals,
        &trace,
        World::new(&nodes, Placement::Binpack),
        &opts(1),
        &mut d,
        &mut |_| {},
    );
    let s = &res.sim;
    // Binpack puts all three on n0 (75%), nothing to evict.
    assert_eq!(s.evictions, 0);
    let res = run(
        &arrivals,
        &trace,
        World::new(&nodes, Placement::Spread),
        &opts(1),
        &mut d,
        &mut |_| {},
    );
    let s = &res.sim;
    // Spread: n0 = 2 (50%), n1 = 1 (25%): the lone pod on n1 is evicted and re-placed on
    // n0 (the only node not underutilised it fits) — then spread keeps it there.
    assert!(s.evictions >= 1, "{}", s.evictions);
    assert!(
        s.disruption_ms >= 3 * MINUTE,
        "downtime includes the ready time"
    );
    assert_eq!(s.on_node[0].len(), 3);
}

#[test]
fn runs_are_deterministic_for_a_seed() {
    use alfred_twin::arrivals::{ArrivalOptions, Mode, generate};
    let nodes = nodes(20, 8);
    let trace = vec![task(1), task(2), task(4), task(8)];
    let world = World::new(&nodes, Placement::Spread);
    let o = ArrivalOptions {
        mode: Mode::Churn,
        horizon_ms: 24 * 60 * MINUTE,
        target_utilization: 0.85,
        mean_lifetime_ms: 6.0 * 60.0 * MINUTE as f64,
        fill_to: 1.0,
        time_scale: 1.0,
        timed_start: None,
        gang_share: 0.0,
        seed: 9,
    };
    let go = |seed: u64| {
        let arrivals = generate(
            &trace,
            world.total_gpus(),
            &ArrivalOptions { seed, ..o.clone() },
        )
        .unwrap();
        let mut d = Descheduler::default();
        let r = run(
            &arrivals,
            &trace,
            world.clone(),
            &opts(24),
            &mut d,
            &mut |_| {},
        );
        let mut v = alfred_twin::report::summary("d", &r, 0.0, serde_json::json!({}));
        v["wallSeconds"] = serde_json::json!(0);
        v
    };
    assert_eq!(go(9), go(9));
    assert_ne!(go(9), go(10));
}

#[test]
fn crude_cordons_drains_and_hands_the_node_to_the_waiting_pod() {
    use alfred_twin::caretakers::Crude;
    let nodes = nodes(2, 4);
    let trace = vec![task(1), task(4)];
    let arrivals = vec![
        arrival(0, 0, None),
        arrival(0, 0, None),
        arrival(1, 1, None),
    ];
    let mut c = Crude::default();
    let res = run(
        &arrivals,
        &trace,
        World::new(&nodes, Placement::Spread),
        &opts(1),
        &mut c,
        &mut |_| {},
    );
    let s = &res.sim;
    assert_eq!(s.moves_completed, 1);
    assert_eq!(s.tasks[0].node, Some(1), "n0's pod moved to n1");
    assert_eq!(
        s.tasks[2].node,
        Some(0),
        "the 4-GPU pod got the drained node"
    );
    assert!(!s.world.nodes[0].cordoned && !s.world.nodes[1].cordoned);
}
