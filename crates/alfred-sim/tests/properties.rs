//! Invariants: the answer does not depend on input order, and placements never exceed
//! allocatable.

mod common;

use std::collections::BTreeMap;

use alfred_sim::Decision;
use alfred_sim::objects::{Node, Pod};
use common::*;
use proptest::prelude::*;
use serde_json::json;

#[derive(Debug, Clone)]
struct Case {
    nodes: Vec<(i64, i64, String)>,
    bound: Vec<(usize, i64, i64)>,
    reps: Vec<(i64, i64)>,
    gang: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(
            (
                2i64..=16,
                prop_oneof![Just(0i64), Just(4), Just(8)],
                prop::sample::select(vec!["A", "B", "C"]),
            ),
            2..8,
        ),
        prop::collection::vec((0usize..8, 1i64..=8, 0i64..=4), 0..10),
        prop::collection::vec((1i64..=8, 0i64..=8), 1..4),
        any::<bool>(),
    )
        .prop_map(|(nodes, bound, reps, gang)| Case {
            nodes: nodes
                .into_iter()
                .map(|(c, g, d)| (c, g, d.to_string()))
                .collect(),
            bound,
            reps,
            gang,
        })
}

fn build(case: &Case) -> (alfred_sim::Cluster, Vec<Pod>) {
    let nodes: Vec<Node> = case
        .nodes
        .iter()
        .enumerate()
        .map(|(i, (cpu, gpu, d))| {
            node(
                &format!("n{i}"),
                &cpu.to_string(),
                "64Gi",
                *gpu,
                json!({"nvidia.com/gpu.clique": d}),
            )
        })
        .collect();
    // Bind only pods that fit, so the snapshot itself is valid.
    let mut used: Vec<(i64, i64)> = vec![(0, 0); nodes.len()];
    let mut pods = Vec::new();
    for (i, (n, cpu, gpu)) in case.bound.iter().enumerate() {
        let n = n % nodes.len();
        let (ncpu, ngpu, _) = &case.nodes[n];
        if used[n].0 + cpu <= *ncpu && used[n].1 + gpu <= *ngpu {
            used[n].0 += cpu;
            used[n].1 += gpu;
            let p = bound(
                pod("prod", &format!("b{i}"), &cpu.to_string(), "1Gi", *gpu),
                &format!("n{n}"),
            );
            pods.push(if case.gang { ome(p) } else { p });
        }
    }
    let mut c = cluster(nodes, pods);
    let reps: Vec<Pod> = case
        .reps
        .iter()
        .enumerate()
        .map(|(i, (cpu, gpu))| {
            let p = pod("prod", &format!("r{i}"), &cpu.to_string(), "1Gi", *gpu);
            if case.gang { member(p, "g1") } else { p }
        })
        .collect();
    if case.gang {
        c.pod_groups.push(pod_group(
            "prod",
            "g1",
            reps.len() as i32,
            Some("nvidia.com/gpu.clique"),
        ));
    }
    (c, reps)
}

fn outcome(case: &Case, c: &alfred_sim::Cluster, reps: &[Pod]) -> alfred_sim::Outcome {
    if case.gang {
        run_gang(&ome_profile(), c, reps, &[])
    } else {
        run(&default_profile(), c, reps, &[])
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn shuffled_input_gives_the_same_answer(case in case(), seed in any::<u64>()) {
        let (c, reps) = build(&case);
        let a = outcome(&case, &c, &reps);
        let mut shuffled = c.clone();
        // A deterministic permutation from the seed.
        let mut rng = alfred_testkit::XorShift64::new(seed | 1);
        let mut next = || rng.next_u64();
        for i in (1..shuffled.nodes.len()).rev() {
            let j = (next() % (i as u64 + 1)) as usize;
            shuffled.nodes.swap(i, j);
        }
        for i in (1..shuffled.pods.len()).rev() {
            let j = (next() % (i as u64 + 1)) as usize;
            shuffled.pods.swap(i, j);
        }
        let b = outcome(&case, &shuffled, &reps);
        prop_assert_eq!(a, b);
    }

    #[test]
    fn placements_never_exceed_capacity(case in case()) {
        let (c, reps) = build(&case);
        let o = outcome(&case, &c, &reps);
        if o.decision != Decision::Feasible {
            return Ok(());
        }
        let mut used: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for p in &c.pods {
            let e = used.entry(p.spec.node_name.clone()).or_default();
            let r = &p.spec.containers[0].resources.as_ref().expect("res").requests;
            e.0 += r["cpu"].parse::<i64>().expect("cpu");
            e.1 += r.get("nvidia.com/gpu").map_or(0, |g| g.parse::<i64>().expect("gpu"));
        }
        for (p, (cpu, gpu)) in o.placements.iter().zip(&case.reps) {
            let e = used.entry(p.node_name.clone()).or_default();
            e.0 += cpu;
            e.1 += gpu;
        }
        for (name, (cpu, gpu)) in used {
            let i: usize = name[1..].parse().expect("index");
            let (ncpu, ngpu, _) = &case.nodes[i];
            prop_assert!(cpu <= *ncpu && gpu <= *ngpu, "{} over capacity: {} cpu, {} gpu", name, cpu, gpu);
        }
        if case.gang {
            let domains: std::collections::BTreeSet<&String> = o
                .placements
                .iter()
                .map(|p| &case.nodes[p.node_name[1..].parse::<usize>().expect("i")].2)
                .collect();
            prop_assert_eq!(domains.len(), 1, "a gang lands in one domain");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Bad input is an error, never a panic.
    #[test]
    fn garbage_never_panics(text in ".{0,64}", bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = alfred_sim::quantity::parse_resource("cpu", &text, "f");
        let _ = alfred_sim::wire::is_rfc3339(&text);
        let _ = alfred_sim::workers::parse_timeout(&text);
        let _ = alfred_sim::load_config(&text);
        let _ = alfred_sim::decode_request(&bytes);
        let _ = alfred_sim::parse_workers(&bytes);
        let lossy = String::from_utf8_lossy(&bytes);
        let _ = alfred_sim::load_config(&lossy);
        prop_assert!(alfred_sim::quantity::parse_resource("cpu", "-1", "f").is_err());
    }
}
