//! The planner's rules, tick by tick.

use super::*;

fn spec() -> ClusterSpec {
    ClusterSpec {
        cluster: "east".into(),
        namespace: "serving".into(),
        deployment: "llm".into(),
        gpus_per_replica: 4,
        gpus_per_node: 8,
        region: "us-east".into(),
        pool: "gpu".into(),
        static_nodes: 1,
        pool_max_nodes: 1,
        launch_delay: Duration::from_secs(60),
        launch_failures: 0,
        load_time: Duration::from_secs(30),
    }
}

fn pod(name: &str, node: Option<&str>, ready: bool) -> PodView {
    PodView {
        name: name.into(),
        node: node.map(Into::into),
        ready,
        unschedulable: false,
    }
}

/// Runs ticks as the IO loop would: applies every action to the observed state and memory.
fn run(spec: &ClusterSpec, seen: &mut Observed, memory: &mut Memory, now: Duration) -> Vec<Action> {
    let actions = plan(spec, seen, memory, now);
    for a in &actions {
        memory.record(a, now);
        match a {
            Action::CreatePod(n) => seen.pods.push(pod(n, None, false)),
            Action::DeletePod(n) => seen.pods.retain(|p| &p.name != n),
            Action::Bind { pod, node } => {
                if let Some(p) = seen.pods.iter_mut().find(|p| &p.name == pod) {
                    p.node = Some(node.clone());
                }
            }
            Action::MarkUnschedulable(n) => {
                if let Some(p) = seen.pods.iter_mut().find(|p| &p.name == n) {
                    p.unschedulable = true;
                }
            }
            Action::MarkReady(n) => {
                if let Some(p) = seen.pods.iter_mut().find(|p| &p.name == n) {
                    p.ready = true;
                }
            }
            Action::CreateNode { node, .. } => seen.nodes.push(node.clone()),
            Action::StartLaunch(_) | Action::LaunchFailed(_) | Action::DeploymentStatus { .. } => {}
        }
    }
    actions
}

#[test]
fn pods_follow_the_replicas_bind_while_room_lasts_and_turn_ready_after_the_load_time() {
    let s = spec();
    let mut seen = Observed {
        replicas: 3,
        pods: vec![],
        nodes: vec![static_node(&s, 0)],
    };
    let mut memory = Memory::default();
    let first = run(&s, &mut seen, &mut memory, Duration::ZERO);
    assert_eq!(
        first,
        vec![
            Action::CreatePod("llm-0".into()),
            Action::CreatePod("llm-1".into()),
            Action::CreatePod("llm-2".into()),
            Action::Bind {
                pod: "llm-0".into(),
                node: "east-static-0".into()
            },
            Action::Bind {
                pod: "llm-1".into(),
                node: "east-static-0".into()
            },
            Action::MarkUnschedulable("llm-2".into()),
            Action::StartLaunch(Launch {
                index: 0,
                started: Duration::ZERO
            }),
            Action::DeploymentStatus {
                replicas: 3,
                ready: 0
            },
        ]
    );
    let at_30 = run(&s, &mut seen, &mut memory, Duration::from_secs(30));
    assert!(at_30.contains(&Action::MarkReady("llm-0".into())));
    assert!(at_30.contains(&Action::DeploymentStatus {
        replicas: 3,
        ready: 2
    }));
    let at_60 = run(&s, &mut seen, &mut memory, Duration::from_secs(60));
    assert!(at_60.contains(&Action::CreateNode {
        launch: Launch {
            index: 0,
            started: Duration::ZERO
        },
        node: "east-gpu-0".into()
    }));
    assert!(at_60.contains(&Action::Bind {
        pod: "llm-2".into(),
        node: "east-gpu-0".into()
    }));
    let at_90 = run(&s, &mut seen, &mut memory, Duration::from_secs(90));
    assert!(at_90.contains(&Action::DeploymentStatus {
        replicas: 3,
        ready: 3
    }));
}

#[test]
fn the_pools_limit_stops_launches_and_pods_stay_unschedulable() {
    let s = ClusterSpec {
        pool_max_nodes: 0,
        ..spec()
    };
    let mut seen = Observed {
        replicas: 4,
        pods: vec![],
        nodes: vec![static_node(&s, 0)],
    };
    let mut memory = Memory::default();
    let actions = run(&s, &mut seen, &mut memory, Duration::ZERO);
    assert!(!actions.iter().any(|a| matches!(a, Action::StartLaunch(_))));
    assert_eq!(seen.pods.iter().filter(|p| p.unschedulable).count(), 2);
    // Marked once, not again every tick.
    let again = run(&s, &mut seen, &mut memory, Duration::from_secs(1));
    assert!(
        !again
            .iter()
            .any(|a| matches!(a, Action::MarkUnschedulable(_)))
    );
}

#[test]
fn scripted_launch_failures_fail_first_then_a_later_launch_succeeds() {
    let s = ClusterSpec {
        launch_failures: 1,
        ..spec()
    };
    let mut seen = Observed {
        replicas: 3,
        pods: vec![],
        nodes: vec![static_node(&s, 0)],
    };
    let mut memory = Memory::default();
    run(&s, &mut seen, &mut memory, Duration::ZERO);
    let failed = run(&s, &mut seen, &mut memory, Duration::from_secs(60));
    assert!(failed.contains(&Action::LaunchFailed(Launch {
        index: 0,
        started: Duration::ZERO
    })));
    // The pod still waits, so the next launch starts at once and succeeds a delay later.
    assert!(failed.contains(&Action::StartLaunch(Launch {
        index: 1,
        started: Duration::from_secs(60)
    })));
    let later = run(&s, &mut seen, &mut memory, Duration::from_secs(120));
    assert!(
        later
            .iter()
            .any(|a| matches!(a, Action::CreateNode { node, .. } if node == "east-gpu-1"))
    );
}

#[test]
fn scaling_down_deletes_pending_pods_first_then_the_newest() {
    let s = spec();
    let seen = Observed {
        replicas: 1,
        pods: vec![
            pod("llm-0", Some("n"), true),
            pod("llm-1", Some("n"), true),
            pod("llm-2", None, false),
        ],
        nodes: vec!["n".into()],
    };
    let actions = plan(&s, &seen, &Memory::default(), Duration::ZERO);
    assert_eq!(actions[0], Action::DeletePod("llm-2".into()));
    assert_eq!(actions[1], Action::DeletePod("llm-1".into()));
}
