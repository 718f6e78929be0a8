//! How the twin keeps a node being freed for a waiting pod (drain plans' `protection`):
//! a nomination holds the pod's GPUs on the node against every other pod (all twin pods
//! have the same priority) and the pod is tried there first; alfred's taint keeps every new
//! pod off the node until it is removed; without either, the next pod takes the room.

mod common;

use alfred_twin::engine::{Action, Caretaker, MINUTE, Sim, run};
use alfred_twin::world::{Placement, World};
use common::*;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    None,
    Nominate,
    Taint,
}

/// At the first pass, moves t1 off n1 (hint n0) and protects n1 for the waiting t2; at the
/// pass at minute 6, removes the protection (the plan's hand-off).
struct Plan {
    mode: Mode,
    passes: u32,
}

impl Caretaker for Plan {
    fn name(&self) -> String {
        "plan".into()
    }
    fn interval_ms(&self) -> i64 {
        MINUTE
    }
    fn pass(&mut self, sim: &Sim, _now: i64) -> Vec<Action> {
        self.passes += 1;
        let incarnation = sim.tasks[2].incarnation;
        match (self.passes, self.mode) {
            (1, mode) => {
                let mut a = vec![Action::Migrate {
                    task: 1,
                    uuid: "u-1".into(),
                    payload: String::new(),
                    hints: vec![0],
                }];
                match mode {
                    Mode::Nominate => a.push(Action::Nominate {
                        task: 2,
                        incarnation,
                        node: 1,
                    }),
                    Mode::Taint => a.push(Action::Taint {
                        node: 1,
                        tainted: true,
                        value: "dp-1".into(),
                    }),
                    Mode::None => {}
                }
                a
            }
            (6, Mode::Taint) => vec![Action::Taint {
                node: 1,
                tainted: false,
                value: String::new(),
            }],
            (6, Mode::Nominate) => vec![Action::ClearNomination {
                task: 2,
                incarnation,
                node: 1,
            }],
            _ => vec![],
        }
    }
}

/// Two 4-GPU nodes, a 1-GPU pod on each, a 4-GPU pod waiting, and a 1-GPU pod arriving at
/// minute 2 while n1 drains (the move ends at 4m10s).
fn scenario(mode: Mode) -> Sim {
    let nodes = nodes(2, 4);
    let trace = vec![task(1), task(4)];
    let arrivals = vec![
        arrival(0, 0, None),
        arrival(0, 0, None),
        arrival(0, 1, None),
        arrival(2, 0, None),
    ];
    let mut c = Plan { mode, passes: 0 };
    run(
        &arrivals,
        &trace,
        World::new(&nodes, Placement::Spread),
        &opts(1),
        &mut c,
        &mut |_| {},
    )
    .sim
}

#[test]
fn a_nomination_keeps_the_freed_node_for_the_pod() {
    let s = scenario(Mode::Nominate);
    assert_eq!(s.nominations, 1);
    // The 1-GPU arrival could not use n1's free GPUs: they were held for t2.
    assert_eq!(s.tasks[3].node, Some(0));
    assert_eq!(s.tasks[2].node, Some(1));
    assert_eq!(s.tasks[2].first_placed, Some(4 * MINUTE + 10_000));
    // Bound: the nomination and its hold are gone.
    assert_eq!(s.tasks[2].nominated, None);
    assert_eq!(s.world.nodes[1].held_gpus, 0);
}

#[test]
fn without_protection_the_next_pod_takes_the_room() {
    let s = scenario(Mode::None);
    assert_eq!(s.tasks[3].node, Some(1), "spread prefers the draining node");
    assert_eq!(s.tasks[2].first_placed, None);
}

#[test]
fn a_taint_keeps_every_pod_off_until_it_is_removed() {
    let s = scenario(Mode::Taint);
    assert_eq!(s.tasks[3].node, Some(0));
    // n1 is empty at 4m10s but tainted: t2 lands when the taint goes (the pass at 6 min).
    assert_eq!(s.tasks[2].node, Some(1));
    assert_eq!(s.tasks[2].first_placed, Some(6 * MINUTE));
    assert!(!s.world.nodes[1].tainted);
}

#[test]
fn a_nomination_is_set_only_where_unset_and_cleared_only_by_its_node() {
    let nodes = nodes(1, 4);
    let trace = vec![task(1), task(8)];
    // t1 (8 GPUs) never fits: it stays pending.
    let arrivals = vec![arrival(0, 0, None), arrival(0, 1, None)];
    struct Writes(u32);
    impl Caretaker for Writes {
        fn name(&self) -> String {
            "writes".into()
        }
        fn interval_ms(&self) -> i64 {
            MINUTE
        }
        fn pass(&mut self, _sim: &Sim, _now: i64) -> Vec<Action> {
            self.0 += 1;
            let nominate = Action::Nominate {
                task: 1,
                incarnation: 1,
                node: 0,
            };
            match self.0 {
                1 => vec![nominate.clone(), nominate],
                // Wrong incarnation (another pod uid): refused.
                2 => vec![Action::ClearNomination {
                    task: 1,
                    incarnation: 9,
                    node: 0,
                }],
                _ => vec![],
            }
        }
    }
    let res = run(
        &arrivals,
        &trace,
        World::new(&nodes, Placement::Spread),
        &opts(1),
        &mut Writes(0),
        &mut |_| {},
    );
    let s = &res.sim;
    assert_eq!(s.nominations, 1, "the second write finds the field set");
    assert_eq!(s.tasks[1].nominated, Some(0));
    assert_eq!(s.world.nodes[0].held_gpus, 8);
}
