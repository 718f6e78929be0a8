//! Gangs (2×8-GPU Instances, `--gang-share`): all-or-nothing placement in one pool, a gang
//! waiting until one pool has room for both pods, a gang surge move, and the gang as alfred
//! sees it (multi-pod `ome-scheduler` Instance, PodGroup, the pass's simulator).

mod common;

use alfred_dispatch::sim::{ProfileIdentity, SimulationPurpose};
use alfred_dispatch::{MoveSimulation, Simulator};
use alfred_model::config::Config;
use alfred_model::reason::SchedulingReason;
use alfred_model::snapshot::ComponentKind;
use alfred_twin::alfred::{AlfredCaretaker, TwinSimulator};
use alfred_twin::engine::{Action, Caretaker, MINUTE, MigPhase, NoCaretaker, Sim, TaskState, run};
use alfred_twin::snapshot;
use alfred_twin::trace::TraceNode;
use alfred_twin::world::{GANG_TOPOLOGY_KEY, Placement, World};
use common::*;

/// Pool A: a0, a1; pool B: b0, b1, b2 (8 GPUs each).
fn two_pools() -> Vec<TraceNode> {
    ["a0", "a1", "b0", "b1", "b2"]
        .iter()
        .map(|n| TraceNode {
            name: (*n).into(),
            cpu_milli: 64_000,
            memory_mib: 262_144,
            gpus: 8,
            model: n[..1].to_uppercase(),
        })
        .collect()
}

#[test]
fn a_gang_takes_two_nodes_of_one_pool_or_waits_for_them() {
    let trace = vec![task(1)];
    let arrivals = vec![
        arrival(0, 0, None),      // t0: 1 GPU on a0
        gang_arrival(1, 0, None), // t1: A has one free node, B has three → b0 + b1
        gang_arrival(2, 0, None), // t2: A: a1 only, B: b2 only → waits
        arrival(3, 0, None),      // t3: 1 GPU → a1 (spread: most free, smallest name)
        arrival(4, 0, Some(1)),   // t4: 1 GPU → b2, gone at 5 min
    ];
    let res = run(
        &arrivals,
        &trace,
        World::new(&two_pools(), Placement::Spread),
        &opts(3),
        &mut NoCaretaker,
        &mut |_| {},
    );
    let s = &res.sim;
    let name = |n: Option<usize>| n.map(|i| s.world.nodes[i].name.clone());
    assert_eq!(name(s.tasks[0].node).as_deref(), Some("a0"));
    assert!(s.tasks[1].gang && s.tasks[1].pod_count() == 2);
    assert_eq!(s.tasks[1].total_gpus(), 16);
    assert_eq!(
        (name(s.tasks[1].node), name(s.tasks[1].worker)),
        (Some("b0".into()), Some("b1".into()))
    );
    assert_eq!(name(s.tasks[3].node).as_deref(), Some("a1"));
    assert_eq!(s.tasks[4].state, TaskState::Gone);
    // t4 leaving frees b2, but pool B has one free node only: the gang still waits (no
    // half placement), and A has a0 and a1 in use.
    assert_eq!(s.tasks[2].state, TaskState::Pending);
    assert_eq!(s.tasks[2].first_placed, None);
    assert_eq!(s.pending, vec![2]);
    assert_eq!(s.world.allocated_gpus(), 1 + 16 + 1);
    // Its wait is reported under "2x8".
    let w = alfred_twin::report::waits(s, res.end);
    assert_eq!(w["2x8"].len(), 2);
}

#[test]
fn a_waiting_gang_gets_both_nodes_when_a_pool_frees_them() {
    let trace = vec![task(1)];
    let arrivals = vec![
        arrival(0, 0, Some(30)), // a0
        arrival(0, 0, None),     // a1
        arrival(0, 0, None),     // b0
        arrival(0, 0, None),     // b1
        gang_arrival(1, 0, None),
    ];
    let res = run(
        &arrivals,
        &trace,
        World::new(&two_pools(), Placement::Spread),
        &opts(2),
        &mut NoCaretaker,
        &mut |_| {},
    );
    let s = &res.sim;
    // Only b2 is free in B, a0 frees at 30 min but a1 is used: the gang waits to the end.
    assert_eq!(s.tasks[4].state, TaskState::Pending);
    // Now with b1 leaving at 20 min: b1 + b2 take it then.
    let arrivals = vec![
        arrival(0, 0, None),
        arrival(0, 0, None),
        arrival(0, 0, None),
        arrival(0, 0, Some(20)),
        gang_arrival(1, 0, None),
    ];
    let res = run(
        &arrivals,
        &trace,
        World::new(&two_pools(), Placement::Spread),
        &opts(2),
        &mut NoCaretaker,
        &mut |_| {},
    );
    let s = &res.sim;
    let g = &s.tasks[4];
    assert_eq!(g.state, TaskState::Running);
    assert_eq!(g.first_placed, Some(20 * MINUTE));
    let mut nodes: Vec<String> = g
        .pod_nodes()
        .iter()
        .map(|&n| s.world.nodes[n].name.clone())
        .collect();
    nodes.sort();
    assert_eq!(nodes, vec!["b1", "b2"]);
}

/// Moves task 0 at the first pass (with `from` named by the payload when given).
struct MoveGang {
    hints: Vec<usize>,
    done: bool,
    surge_gpus: Option<u64>,
}

impl Caretaker for MoveGang {
    fn name(&self) -> String {
        "move-gang".into()
    }
    fn interval_ms(&self) -> i64 {
        MINUTE
    }
    fn pass(&mut self, sim: &Sim, _now: i64) -> Vec<Action> {
        if sim
            .migrations
            .first()
            .is_some_and(|m| m.phase == MigPhase::Surge)
            && self.surge_gpus.is_none()
        {
            self.surge_gpus = Some(sim.world.allocated_gpus());
        }
        if self.done {
            return vec![];
        }
        self.done = true;
        vec![Action::Migrate {
            task: 0,
            uuid: "u-gang".into(),
            payload: String::new(),
            hints: self.hints.clone(),
        }]
    }
}

#[test]
fn a_gang_surge_move_places_both_replacements_in_one_pool_then_frees_the_source() {
    // Gang t0 → a0 + a1 (A and B tie at first; A has the smaller name); a 1-GPU t1 → b0.
    let trace = vec![task(1)];
    let arrivals = vec![gang_arrival(0, 0, None), arrival(0, 0, None)];
    // Hints across pools (a1 is a source node, b1 fits): ignored, the gang model picks
    // b1 + b2 (B is the only pool with two free nodes outside the source's a0).
    let mut c = MoveGang {
        hints: vec![1, 3],
        done: false,
        surge_gpus: None,
    };
    let res = run(
        &arrivals,
        &trace,
        World::new(&two_pools(), Placement::Spread),
        &opts(1),
        &mut c,
        &mut |_| {},
    );
    let s = &res.sim;
    let m = &s.migrations[0];
    assert_eq!(m.phase, MigPhase::Completed);
    assert_eq!(s.world.nodes[m.from].name, "a0");
    let (t, w) = (m.target.unwrap(), m.worker_target.unwrap());
    assert_eq!(
        (
            s.world.nodes[t].name.as_str(),
            s.world.nodes[w].name.as_str()
        ),
        ("b1", "b2")
    );
    assert_eq!(
        c.surge_gpus,
        Some(16 + 16 + 1),
        "both gangs hold GPUs during the surge"
    );
    assert_eq!(s.tasks[0].pod_nodes(), vec![t, w]);
    assert_eq!(s.tasks[0].incarnation, 2);
    assert_eq!(s.world.nodes[0].free_gpus, 8);
    assert_eq!(s.world.nodes[1].free_gpus, 8);
    assert_eq!(s.world.allocated_gpus(), 17);
    assert!(s.on_node[0].is_empty() && s.on_node[1].is_empty());

    // No pool with two free nodes outside the source: the move fails, the gang stays.
    let arrivals = vec![
        gang_arrival(0, 0, None),
        arrival(0, 0, None),
        arrival(0, 0, None),
    ];
    let mut c = MoveGang {
        hints: vec![],
        done: false,
        surge_gpus: None,
    };
    let res = run(
        &arrivals,
        &trace,
        World::new(&two_pools(), Placement::Spread),
        &opts(1),
        &mut c,
        &mut |_| {},
    );
    assert_eq!(res.sim.migrations[0].phase, MigPhase::Failed);
    assert_eq!(res.sim.tasks[0].pod_nodes(), vec![0, 1]);
}

#[test]
fn alfred_sees_a_multi_pod_ome_scheduler_instance_and_simulates_it_as_a_gang() {
    let trace = vec![task(1)];
    let arrivals = vec![gang_arrival(0, 0, None), arrival(0, 0, None)];
    let res = run(
        &arrivals,
        &trace,
        World::new(&two_pools(), Placement::Spread),
        &opts(1),
        &mut NoCaretaker,
        &mut |_| {},
    );
    let sim = &res.sim;
    let snap = snapshot::build(sim, res.end, true);
    let w = snap
        .workload("twin", &sim.tasks[0].name)
        .expect("the gang's workload");
    let c = w.component(ComponentKind::Engine).unwrap();
    assert_eq!(c.scheduler_name, "ome-scheduler");
    assert_eq!(c.topology_key, GANG_TOPOLOGY_KEY);
    let ir = c.replica.as_ref().unwrap();
    let runners: Vec<(&str, u32)> = ir
        .runners
        .iter()
        .map(|r| (r.name.as_str(), r.size))
        .collect();
    assert_eq!(runners, vec![("leader", 1), ("worker", 1)]);
    assert!(ir.runners.iter().all(|r| {
        r.template
            .pointer("/spec/schedulerName")
            .and_then(|v| v.as_str())
            == Some("ome-scheduler")
    }));
    let inst = &c.instances[0];
    assert_eq!(inst.pods.len(), 2);
    assert_eq!(inst.total_gpus, 16);
    assert_eq!(inst.nodes.len(), 2);
    assert_eq!(snap.pod_groups.len(), 1);
    assert_eq!(snap.pod_groups[0].min_member, 2);
    assert_eq!(snap.pod_groups[0].topology_key, GANG_TOPOLOGY_KEY);
    assert!(
        snap.pods
            .iter()
            .filter(|p| p.name.starts_with(&sim.tasks[0].name))
            .all(|p| {
                p.labels.get(snapshot::POD_GROUP_LABEL) == Some(&snap.pod_groups[0].name)
                    && p.scheduling.scheduler_name == "ome-scheduler"
            })
    );
    assert!(
        snap.nodes
            .iter()
            .all(|n| n.labels.contains_key(GANG_TOPOLOGY_KEY))
    );

    // The caretaker registers the twin's gang model as the ome-scheduler profile.
    let care = AlfredCaretaker::new(Config::default(), 1, Placement::Spread);
    assert!(care.config().scheduling.profiles["ome-scheduler"].gang_scheduling);
    assert!(!care.config().scheduling.profiles["default-scheduler"].gang_scheduling);

    // The pass's simulator answers a gang move with one placement per pod, in one pool.
    let mut simulator = TwinSimulator::new(sim);
    let from = sim.world.nodes[sim.tasks[0].node.unwrap()].name.clone();
    let mut req = MoveSimulation {
        request_id: "r".into(),
        purpose: SimulationPurpose::Prediction,
        snapshot: &snap,
        workload: format!("twin/{}", sim.tasks[0].name),
        component: ComponentKind::Engine,
        instance: 0,
        from_node: from.clone(),
        excluded_nodes: inst.nodes.keys().cloned().collect(),
        hint_nodes: vec![],
        profile: ProfileIdentity {
            scheduler_name: "ome-scheduler".into(),
            gang_scheduling: true,
            ..ProfileIdentity::default()
        },
        require_gang: true,
    };
    let out = simulator.simulate(&req);
    let nodes: Vec<&str> = out
        .placements
        .iter()
        .map(|p| p.node_name.as_str())
        .collect();
    assert_eq!(nodes, vec!["b1", "b2"], "b0 holds the 1-GPU task");
    // Excluding b1 too: no pool has two free nodes.
    req.excluded_nodes.push("b1".into());
    let out = simulator.simulate(&req);
    assert_eq!(out.reason, SchedulingReason::NoFeasiblePlacement);
    assert!(out.placements.is_empty());
    assert_eq!(simulator.records.borrow().len(), 2);
}
