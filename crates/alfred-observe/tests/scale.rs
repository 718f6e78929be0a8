//! Scale smoke test: 2 000 nodes, 150 000 pods (10 000 OMENative Instances). Run with
//! `cargo test -p alfred-observe --release --test scale -- --ignored --nocapture`.

mod common;

use alfred_observe::{ClusterObjects, ObserveSettings, observe};
use common::*;
use serde_json::json;

#[test]
#[ignore = "scale smoke test; run explicitly"]
fn observe_150k_pods() {
    let mut objects = ClusterObjects::default();
    for i in 0..2000 {
        objects.add_value(node(&format!("n{i:05}"), "8")).unwrap();
    }
    let mut isvcs = Vec::new();
    for w in 0..100 {
        let name = format!("w{w:03}");
        objects
            .add_value(isvc(
                "ns",
                &name,
                json!({"deploymentMode": "OMENative", "engine": {}}),
            ))
            .unwrap();
        let idx: Vec<i64> = (0..100).collect();
        objects.add_value(ir("ns", &name, "engine", &idx)).unwrap();
        isvcs.push(name);
    }
    let mut count = 0;
    for (w, name) in isvcs.iter().enumerate() {
        for i in 0..100 {
            let n = format!("n{:05}", (w * 100 + i as usize) % 2000);
            objects
                .add_value(ome_pod("ns", name, "engine", i, &n, 1))
                .unwrap();
            count += 1;
        }
    }
    while count < 150_000 {
        let n = format!("n{:05}", count % 2000);
        objects
            .add_value(pod("batch", &format!("p{count:06}"), &n, 0))
            .unwrap();
        count += 1;
    }
    // No clock in core crates, not even in tests: the harness reports the duration (about
    // 3.5 s in a debug build on the development machine; a quadratic join would not finish).
    let s = observe(&objects, &ObserveSettings::default(), now()).snapshot;
    assert_eq!(s.pods.len(), 150_000);
    assert_eq!(s.workloads.len(), 100);
    assert!(s.problems.is_empty());
}
