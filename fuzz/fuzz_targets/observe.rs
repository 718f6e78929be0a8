//! Kubernetes objects through `observe`: whatever the objects hold, the snapshot builder never
//! panics and never drops a Node or a Pod without a problem naming it, and every problem is
//! one short line.
#![no_main]

use std::collections::BTreeSet;

use alfred_fuzz::assert_error_line;
use alfred_model::time::Timestamp;
use alfred_observe::{ClusterObjects, ObserveSettings, gpu_request, observe};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(objects) = ClusterObjects::from_documents(text) else {
        return;
    };
    let now = Timestamp::parse_rfc3339("2026-11-29T08:00:00Z").expect("a valid instant");
    let snapshot = observe(&objects, &ObserveSettings::default(), now).snapshot;

    let reported: BTreeSet<(&str, &str, &str)> = snapshot
        .problems
        .iter()
        .map(|p| (p.kind.as_str(), p.namespace.as_str(), p.name.as_str()))
        .collect();
    for problem in &snapshot.problems {
        assert_error_line(
            "observe problem",
            &format!("{}: {}", problem.field, problem.message),
        );
    }
    let nodes: BTreeSet<&str> = snapshot.nodes.iter().map(|n| n.name.as_str()).collect();
    for node in &objects.nodes {
        let name = node.metadata.name.as_deref().unwrap_or("");
        assert!(
            nodes.contains(name) || reported.contains(&("Node", "", name)),
            "Node {name:?} dropped without a problem"
        );
    }
    // Scheduled pods are in `pods`, pending ones in `pending_pods`.
    let pods: BTreeSet<(&str, &str)> = snapshot
        .pods
        .iter()
        .map(|p| (p.namespace.as_str(), p.name.as_str()))
        .chain(
            snapshot
                .pending_pods
                .iter()
                .map(|p| (p.namespace.as_str(), p.name.as_str())),
        )
        .collect();
    // Left out by design: finished pods hold nothing, and an unbound Pending pod is kept
    // only as GPU demand (one that requests no GPU or is being deleted is none). Every
    // other pod, whatever its phase (missing or unrecognised included), is kept or reported.
    for pod in &objects.pods {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded" | "Failed")) {
            continue;
        }
        let spec = pod.spec.clone().unwrap_or_default();
        let unbound = spec.node_name.as_deref().unwrap_or("").is_empty();
        let no_demand = pod.metadata.deletion_timestamp.is_some() || gpu_request(&spec) == 0;
        if unbound && phase == Some("Pending") && no_demand {
            continue;
        }
        assert!(
            pods.contains(&(ns, name)) || reported.contains(&("Pod", ns, name)),
            "Pod {ns}/{name} (phase {phase:?}) dropped without a problem"
        );
    }
    for id in &objects.unrecognised {
        assert!(
            reported.contains(&(id.kind.as_str(), id.namespace.as_str(), id.name.as_str())),
            "{id} dropped without a problem"
        );
    }
});
