//! Invariants of the member report over random clusters: needed replicas follow their parts,
//! static room never shrinks when a registered node is added, and the report does not depend
//! on the order objects were listed in.

use proptest::prelude::*;
use serde_json::json;

use super::tests::{deployment, node, now, pod, pool, spec};
use super::*;

/// A random cluster: registered nodes of pool `gpu` with 0–8 GPUs, some unregistered nodes,
/// bound llama pods of 1–4 GPUs where they fit, a few pending ones.
#[derive(Debug, Clone)]
struct Case {
    registered: Vec<u32>,
    unregistered: Vec<u32>,
    pods: Vec<(u32, usize)>,
    pending: usize,
    desired: i64,
    demand: f64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec(0u32..=8, 1..8),
        proptest::collection::vec(0u32..=8, 0..4),
        proptest::collection::vec((1u32..=4, 0usize..8), 0..12),
        0usize..4,
        0i64..20,
        0.0f64..200.0,
    )
        .prop_map(
            |(registered, unregistered, pods, pending, desired, demand)| Case {
                registered,
                unregistered,
                pods,
                pending,
                desired,
                demand,
            },
        )
}

fn build(c: &Case) -> MemberObservation {
    let mut nodes: Vec<_> = c
        .registered
        .iter()
        .enumerate()
        .map(|(i, g)| node(&format!("r{i}"), *g, Some("gpu"), "us-east-1"))
        .collect();
    nodes.extend(
        c.unregistered
            .iter()
            .enumerate()
            .map(|(i, g)| node(&format!("u{i}"), *g, Some("other"), "us-east-1")),
    );
    let mut free: Vec<u32> = c.registered.clone();
    let mut pods = Vec::new();
    for (i, (gpus, at)) in c.pods.iter().enumerate() {
        let n = at % free.len();
        if free[n] >= *gpus {
            free[n] -= gpus;
            pods.push(pod("llama", i, *gpus, Some(&format!("r{n}")), None));
        }
    }
    for i in 0..c.pending {
        pods.push(pod("llama", 100 + i, 2, None, None));
    }
    MemberObservation {
        namespace: "ml".into(),
        deployments: vec![deployment("llama", c.desired, c.desired, 2)],
        pods,
        nodes,
        node_pools: vec![pool("gpu", Some(64), 8)],
        ..MemberObservation::default()
    }
}

fn signals(demand: f64) -> SignalSamples {
    SignalSamples {
        demand: Some(QueryResult::Samples(vec![RawSample {
            value: demand,
            time: now(),
        }])),
        ..SignalSamples::default()
    }
}

fn policy() -> AdaptivePolicySpec {
    spec(json!({"signals": {"demand": "d"},
                "clusters": [{"name": "us-east", "nodePools": ["gpu"], "maxReplicas": 1000}]}))
}

fn run(obs: &MemberObservation, demand: f64) -> MemberReport {
    report(obs, &policy(), "us-east", &signals(demand), None, now())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn needed_is_unschedulable_plus_the_demand_shortfall(c in case()) {
        let out = run(&build(&c), c.demand);
        let r = out.report.expect("member");
        let wanted = (c.demand / 4.0).ceil() as i64;
        let shortfall = u32::try_from((wanted - c.desired).max(0)).expect("small");
        prop_assert_eq!(r.unschedulable_replicas, u32::try_from(c.pending).expect("small"));
        prop_assert_eq!(r.needed_replicas, r.unschedulable_replicas + shortfall);
    }

    #[test]
    fn adding_a_registered_node_never_lowers_static_room(c in case(), gpus in 0u32..=8) {
        let obs = build(&c);
        let before = run(&obs, c.demand).report.expect("member").static_room;
        let mut more = obs;
        more.nodes.push(node("zz-new", gpus, Some("gpu"), "us-east-1"));
        let after = run(&more, c.demand).report.expect("member").static_room;
        prop_assert!(after >= before, "{} < {}", after, before);
        prop_assert!(after <= before + gpus / 2);
    }

    #[test]
    fn the_report_does_not_depend_on_listing_order(c in case(), seed in any::<u64>()) {
        let obs = build(&c);
        let mut shuffled = obs.clone();
        let mut s = seed | 1;
        let mut next = move |n: usize| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            usize::try_from(s % (n as u64)).expect("small")
        };
        for i in (1..shuffled.nodes.len()).rev() {
            let j = next(i + 1);
            shuffled.nodes.swap(i, j);
        }
        for i in (1..shuffled.pods.len()).rev() {
            let j = next(i + 1);
            shuffled.pods.swap(i, j);
        }
        prop_assert_eq!(run(&obs, c.demand), run(&shuffled, c.demand));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn bad_quantities_never_panic_and_are_named(limit in "\\PC{0,8}", used in "\\PC{0,8}", alloc in "\\PC{0,8}") {
        let mut obs = build(&Case {
            registered: vec![8],
            unregistered: vec![],
            pods: vec![],
            pending: 0,
            desired: 1,
            demand: 1.0,
        });
        obs.node_pools[0].spec.limits.insert(super::tests::GPU.to_owned(), limit.clone());
        obs.node_pools[0].status.resources.insert(super::tests::GPU.to_owned(), used.clone());
        obs.nodes[0].status.allocatable.insert("example.com/thing".to_owned(), alloc.clone());
        let out = run(&obs, 1.0);
        let r = out.report.expect("member");
        if let Some(e) = &r.error {
            prop_assert!(
                e.contains("nodePool gpu") || e.contains("node r0") || e.contains("staticRoom"),
                "{}", e
            );
            prop_assert_eq!(out.ready.reason.as_str(), "ObservationFailed");
        }
    }
}
