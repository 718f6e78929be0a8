//! Property test: random candidate streams, cluster migrations and journal histories
//! against the invariants of docs/design-pass.md#invariants.

mod common;

use std::collections::BTreeSet;

use alfred_model::config::Mode;
use alfred_model::effect::Effect;
use common::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Step {
    Pass,
    Advance(i64),
    Ome(u8),
    PersonRequest,
    PersonDone,
    Mode(bool),
    Candidates(Vec<(u8, u8, u8)>),
    Unhealthy(u8),
    /// How the re-check's second look (after the simulation) sees the cluster from now
    /// on: 0 frozen, 1 unobservable, 2 a person's request appeared, 3 node `b` unhealthy.
    Look(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => Just(Step::Pass),
        2 => (1i64..20).prop_map(Step::Advance),
        2 => (0u8..4).prop_map(Step::Ome),
        1 => Just(Step::PersonRequest),
        1 => Just(Step::PersonDone),
        1 => any::<bool>().prop_map(Step::Mode),
        1 => proptest::collection::vec((0u8..2, 0u8..3, 0u8..3), 0..4).prop_map(Step::Candidates),
        1 => (0u8..3).prop_map(Step::Unhealthy),
        1 => (0u8..4).prop_map(Step::Look),
    ]
}

const NODES: [&str; 3] = ["a", "b", "c"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn dispatch_invariants_hold(steps in proptest::collection::vec(step(), 1..30)) {
        let mut w = World::execute();
        let mut written: BTreeSet<String> = BTreeSet::new();
        let mut look = 0u8;
        for s in steps {
            match s {
                Step::Advance(m) => w.advance_minutes(m),
                Step::Ome(k) => {
                    let last = w.journal().entries.last().cloned();
                    if let Some(e) = last {
                        let started = w.now.minus(std::time::Duration::from_secs(10));
                        let done = Some(w.now.minus(std::time::Duration::from_secs(1)));
                        match k {
                            0 => w.omenative(&e.uuid, "Accepted", started, None),
                            1 => w.omenative(&e.uuid, "Completed", started, done),
                            2 => w.omenative(&e.uuid, "Failed", started, done),
                            _ => {}
                        }
                    }
                }
                Step::PersonRequest => {
                    let now = w.now;
                    w.snap.workloads[1].migration.requests.push(alfred_model::snapshot::MigrationRequestObserved {
                        uuid: uuid(9000),
                        component: "engine".into(),
                        from_node: "a".into(),
                        requested_at: Some(now),
                        requested_by: "kubectl-ome".into(),
                        ..Default::default()
                    });
                }
                Step::PersonDone => {
                    for wl in &mut w.snap.workloads {
                        wl.migration.requests.retain(|r| r.uuid != uuid(9000));
                    }
                }
                Step::Mode(exec) => {
                    w.config.mode = if exec { Mode::Execute } else { Mode::RecommendOnly };
                }
                Step::Candidates(cs) => {
                    w.stages.candidates = cs
                        .iter()
                        .map(|(wl, from, hint)| {
                            let name = if *wl == 0 { "w1" } else { "w2" };
                            let h = NODES[*hint as usize];
                            candidate(name, "a", &[h], 0.1 + f64::from(*from))
                        })
                        .collect();
                }
                Step::Unhealthy(n) => {
                    let name = NODES[n as usize];
                    if let Some(node) = w.snap.nodes.iter_mut().find(|x| x.name == name) {
                        node.health.state = alfred_model::snapshot::HealthState::Unhealthy;
                    }
                }
                Step::Look(k) => look = k,
                Step::Pass => {
                    w.second_look = match look {
                        0 => None,
                        1 => Some(ScriptedLook(None)),
                        k => {
                            let mut second = w.snap.clone();
                            if k == 2 {
                                second.workloads[1].migration.requests.push(alfred_model::snapshot::MigrationRequestObserved {
                                    uuid: uuid(9001),
                                    component: "engine".into(),
                                    from_node: "d".into(),
                                    requested_at: Some(w.now),
                                    requested_by: "kubectl-ome".into(),
                                    ..Default::default()
                                });
                            } else if let Some(b) = second.nodes.iter_mut().find(|x| x.name == "b") {
                                b.health.state = alfred_model::snapshot::HealthState::Unhealthy;
                            }
                            Some(ScriptedLook(Some(second)))
                        }
                    };
                    let busy_cluster = w.snap.workloads.iter().any(|x| {
                        !x.migration.requests.is_empty()
                            || x.migration.records.iter().any(|r| !r.is_terminal())
                    });
                    let mode = w.config.mode;
                    let snap = w.snap.clone();
                    let before: BTreeSet<String> = w.journal().entries.iter().map(|e| e.uuid.clone()).collect();
                    let out = w.pass();
                    let reqs: Vec<(String, String)> = out.effects.iter().filter_map(|e| match e {
                        Effect::RequestMigration { uuid, name, .. } => Some((uuid.clone(), name.clone())),
                        _ => None,
                    }).collect();
                    prop_assert!(reqs.len() <= 1, "more than one submission in a pass");
                    if look == 1 || look == 2 {
                        prop_assert!(reqs.is_empty(), "submitted although the second look failed or saw a migration");
                    }
                    if !reqs.is_empty() {
                        prop_assert!(!busy_cluster, "submitted while a migration waits or runs");
                        // docs/design-pass.md#dispatch-pass: the follow-up runs first; after it no
                        // other entry may be unresolved (a request that ended this pass frees the
                        // slot).
                        let others = w.journal().unresolved().filter(|e| e.uuid != reqs[0].0).count();
                        prop_assert_eq!(others, 0, "submitted while a request is unresolved");
                        prop_assert_eq!(mode, Mode::Execute);
                    }
                    for (u, _) in &reqs {
                        prop_assert!(written.insert(u.clone()), "request {} written twice", u);
                        let j = w.journal();
                        let e = j.entry(u).expect("entry for request");
                        for t in &e.targets {
                            let n = snap.node(t).expect("target node");
                            prop_assert!(!n.unavailable() && n.ready, "move to excluded node {}", t);
                            prop_assert!(look != 3 || t != "b", "move to a node the second look saw unhealthy");
                        }
                    }
                    if mode == Mode::RecommendOnly {
                        // docs/design-pass.md#journal: recommend-only may update the journal's
                        // existing entries but never appends one and never writes anything else.
                        for e in &out.effects {
                            let allowed = matches!(e, Effect::UpdateRecommendations { .. } | Effect::RecordEvent(_) | Effect::Metric(_) | Effect::WriteJournal { .. });
                            prop_assert!(allowed, "recommend-only write effect");
                        }
                        let after: BTreeSet<String> = w.journal().entries.iter().map(|e| e.uuid.clone()).collect();
                        prop_assert!(after.is_subset(&before), "recommend-only appended an entry");
                    }
                    let hour = w.journal().entries.iter().filter(|e| w.now.since(e.created_at).as_secs() <= 3600).count();
                    prop_assert!(hour <= w.config.max_migrations_per_hour as usize);
                }
            }
        }
    }
}
