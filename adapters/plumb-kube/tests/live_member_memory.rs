//! How much the member loop's stores hold for the large member (5,000 nodes, 50,000
//! pods), fed object by object as the watches feed them, and the peak and time of the report
//! over them (lent to the pass as `MemberLoop` lends them). Ignored in plain runs (it prints measurements, it checks only that the stores hold
//! every object): `cargo test -p plumb-kube --release --test live_member_memory -- --ignored
//! --nocapture`.

use std::time::Instant;

use kube::runtime::watcher::Event;
use plumb_core::member::Occupancy;
use plumb_kube::agent::member::store::{Stores, lock};
use plumb_kube::signals::SignalAnswers;
use plumb_model::{AdaptivePolicy, Timestamp};
use serde_json::{Value, json};

const NODES: usize = 5_000;
const PODS_PER_NODE: usize = 10;

/// `VmRSS` and `VmHWM` of this process, in KiB.
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
            .unwrap()
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn node(i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": format!("ip-10-0-{}-{}.ec2.internal", i / 250, i % 250),
            "uid": format!("6f0c1c2e-0000-4000-8000-{i:012}"), "resourceVersion": "123456",
            "labels": {"karpenter.sh/nodepool": if i < 2_000 { "gpu" } else { "other" },
                "topology.kubernetes.io/region": "us-east-1", "topology.kubernetes.io/zone": "us-east-1a",
                "node.kubernetes.io/instance-type": "p4d.24xlarge", "kubernetes.io/hostname": format!("ip-{i}"),
                "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "karpenter.sh/nodeclaim": format!("gpu-{i}")}},
        "spec": {"providerID": format!("aws:///us-east-1a/i-{i:017}"),
            "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "95", "memory": "1100Gi", "pods": "110", "nvidia.com/gpu": "8", "ephemeral-storage": "900Gi"},
            "capacity": {"cpu": "96", "memory": "1152Gi", "pods": "110", "nvidia.com/gpu": "8", "ephemeral-storage": "1000Gi"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "lastTransitionTime": "2026-12-01T00:00:00Z"},
                {"type": "MemoryPressure", "status": "False"}, {"type": "DiskPressure", "status": "False"}],
            "addresses": [{"type": "InternalIP", "address": format!("10.0.{}.{}", i / 250, i % 250)}],
            "nodeInfo": {"kubeletVersion": "v1.33.1", "containerRuntimeVersion": "containerd://1.7.27"}}})
}

fn pod(n: usize, i: usize) -> Value {
    let workload = i == 0 && n < 100;
    let app = if workload {
        "llama".to_owned()
    } else {
        format!("svc-{}", i % 37)
    };
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{app}-{n}-{i}-7d9f8b6c5d"), "namespace": if workload { "serving" } else { "apps" },
            "uid": format!("1a2b3c4d-0000-4000-8000-{:012}", n * 10 + i), "resourceVersion": "987654",
            "labels": {"app": app, "pod-template-hash": "7d9f8b6c5d", "team": "ml"},
            "annotations": {"prometheus.io/scrape": "true", "kubectl.kubernetes.io/restartedAt": "2026-12-01T00:00:00Z"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-7d9f8b6c5d"),
                "uid": "0000", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"nodeName": node(n)["metadata"]["name"], "schedulerName": "default-scheduler", "priority": 0,
            "serviceAccountName": "default", "restartPolicy": "Always",
            "containers": [{"name": "main", "image": "registry.example.com/serving/model:1.2.3",
                "resources": {"requests": {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": if workload { "2" } else { "0" }},
                              "limits": {"memory": "32Gi"}},
                "ports": [{"containerPort": 8000, "protocol": "TCP"}],
                "env": [{"name": "MODEL", "value": "llama"}, {"name": "LOG_LEVEL", "value": "info"}],
                "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "volumes": [{"name": "cache", "emptyDir": {}}]},
        "status": {"phase": "Running", "podIP": "10.1.2.3", "hostIP": "10.0.0.1", "qosClass": "Burstable",
            "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"},
                {"type": "ContainersReady", "status": "True"}, {"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0, "image": "m", "imageID": "sha256:0",
                "containerID": "containerd://0", "started": true, "state": {"running": {"startedAt": "2026-12-01T00:00:00Z"}}}]}})
}

#[test]
#[ignore = "a measurement: run with --release --nocapture"]
fn member_stores_at_5000_nodes_and_50000_pods() {
    let stores = Stores::default();
    let (before, _) = memory();
    {
        let mut nodes = lock(&stores.nodes);
        nodes.apply(Event::Init).unwrap();
        for n in 0..NODES {
            nodes.apply(Event::InitApply(node(n))).unwrap();
        }
        nodes.apply(Event::InitDone).unwrap();
        let mut pods = lock(&stores.pods);
        pods.apply(Event::Init).unwrap();
        for n in 0..NODES {
            for i in 0..PODS_PER_NODE {
                pods.apply(Event::InitApply(pod(n, i))).unwrap();
            }
        }
        pods.apply(Event::InitDone).unwrap();
        assert_eq!(nodes.objects().len(), NODES);
        assert_eq!(pods.objects().len(), NODES * PODS_PER_NODE);
    }
    lock(&stores.deployments)
        .apply(Event::Apply(
            json!({"metadata": {"name": "llama", "namespace": "serving"},
            "spec": {"replicas": 100, "selector": {"matchLabels": {"app": "llama"}},
                "template": pod(0, 0)}}),
        ))
        .unwrap();
    let (stored, _) = memory();
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let mut observation = stores.lend();
    let (with_snapshot, _) = memory();
    let policy = AdaptivePolicy::from_value(json!({
        "metadata": {"name": "llama", "namespace": "serving"},
        "spec": {"workload": {"name": "llama"},
                 "clusters": [{"name": "us-east", "nodePools": ["gpu"], "maxReplicas": 400}]}}))
    .unwrap();
    let mut occupancy = Occupancy::new();
    let started = Instant::now();
    let reported = plumb_kube::observe::report_in(
        &mut occupancy,
        &mut observation,
        &SignalAnswers::new(),
        &policy,
        &[],
        "us-east",
        Timestamp::from_unix_secs(1_796_126_400),
    );
    let first = started.elapsed();
    let started = Instant::now();
    plumb_kube::observe::report_in(
        &mut occupancy,
        &mut observation,
        &SignalAnswers::new(),
        &policy,
        &[],
        "us-east",
        Timestamp::from_unix_secs(1_796_126_400),
    );
    let second = started.elapsed();
    let (_, peak) = memory();
    stores.give_back(observation);
    assert!(reported.report.is_some(), "{:?}", reported.ready);
    println!(
        "stores: {} KiB over {before} KiB before ({} B per pod, nodes included); lending them to a pass: +{} KiB; peak over the pass {peak} KiB; report {first:?}, the next policy's on the shared conversion {second:?}; Ready {:?}",
        stored - before,
        (stored - before) * 1024 / (NODES * PODS_PER_NODE) as u64,
        with_snapshot.saturating_sub(stored),
        reported.ready.reason,
    );
}
