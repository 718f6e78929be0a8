//! Decoding a 25,000-Pod list body (the size of `cargo xtask bench-live`'s cluster, ~2.4 KB a
//! Pod as the API server writes it, managed fields included) into alfred's slim Pods.
//!
//! `streamed`: what `alfred run` does, the body fed in 16 KB network-sized chunks to the
//! `ListSplitter` and each item decoded as it completes. `whole`: the body decoded at once as
//! one list (what a plain `Api::list` does after buffering it), for comparison.
//! `pod_list_25k_protobuf/streamed`: the same Pods in the API server's protobuf encoding (what
//! `alfred run` asks for), through the `ProtoListSplitter` and `FromProtobuf`; checked equal
//! to the JSON decoding before it is timed.
//! `snapshot`: then the first snapshot of those Pods on 5,000 8-GPU Nodes
//! (`CachedObjects::observe`: converting each slim object and `alfred_observe`).
//! `cargo bench -p alfred-kube --bench list_decode`.

use std::hint::black_box;

use alfred_kube::run::decode::list_split::ListSplitter;
use alfred_kube::run::decode::proto_list::ProtoListSplitter;
use alfred_kube::run::decode::protobuf::encode::Message;
use alfred_kube::run::decode::slim::{FromProtobuf, SlimNode, SlimPod};
use alfred_kube::run::watch::caches::CachedObjects;
use alfred_model::Timestamp;
use alfred_observe::{ClusterObjects, ObserveSettings};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use std::sync::Arc;

const PODS: usize = 25_000;
const CHUNK: usize = 16 * 1024;

fn pod(i: usize) -> serde_json::Value {
    let gpus = (1 + i % 2).to_string();
    let resources = json!({"requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": gpus},
                           "limits": {"nvidia.com/gpu": gpus}});
    json!({
        "metadata": {
            "name": format!("bench-pod-{i:06}"), "namespace": "bench",
            "uid": format!("6f1c2b9e-0000-4000-8000-{i:012}"), "resourceVersion": format!("{}", 10_000 + i),
            "creationTimestamp": "2026-11-29T07:00:00Z", "labels": {"app": format!("job-{}", i / 5)},
            "managedFields": [
                {"manager": "python-urllib", "operation": "Update", "apiVersion": "v1",
                 "time": "2026-11-29T07:00:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                              "f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:image": {},
                                  "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {}}}}}},
                {"manager": "python-urllib", "operation": "Update", "apiVersion": "v1",
                 "time": "2026-11-29T07:00:01Z", "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:conditions": {}, "f:phase": {}, "f:startTime": {}}}}
            ]
        },
        "spec": {
            "nodeName": format!("bench-gpu-{:05}", i / 5),
            "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:25.08-py3",
                            "resources": resources, "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "securityContext": {}, "schedulerName": "default-scheduler", "priority": 0,
            "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        },
        "status": {"phase": "Running", "startTime": "2026-11-29T07:01:00Z", "qosClass": "Burstable",
                   "conditions": [
                       {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-29T07:05:00Z"},
                       {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-29T07:00:00Z"}]}
    })
}

fn body() -> Vec<u8> {
    let items: Vec<_> = (0..PODS).map(pod).collect();
    serde_json::to_vec(&json!({"kind": "PodList", "apiVersion": "v1",
                                "metadata": {"resourceVersion": "99999"}, "items": items}))
    .expect("a JSON body")
}

/// `pod(i)` as the API server encodes it in protobuf, managed fields included (the field numbers
/// of `k8s.io/api/core/v1` and `k8s.io/apimachinery/pkg/apis/meta/v1`'s `generated.proto`).
fn pod_protobuf(i: usize) -> Message {
    const T0: u64 = 1_795_935_600; // 2026-11-29T07:00:00Z
    let gpus = (1 + i % 2).to_string();
    let managed = |time: u64, fields: &str, subresource: Option<&str>| {
        let m = Message::new()
            .string(1, "python-urllib")
            .string(2, "Update")
            .string(3, "v1")
            .time(4, time)
            .string(6, "FieldsV1")
            .message(7, Message::new().string(1, fields));
        match subresource {
            Some(s) => m.string(8, s),
            None => m,
        }
    };
    let meta = Message::new()
        .string(1, &format!("bench-pod-{i:06}"))
        .string(2, "")
        .string(3, "bench")
        .string(4, "")
        .string(5, &format!("6f1c2b9e-0000-4000-8000-{i:012}"))
        .string(6, &format!("{}", 10_000 + i))
        .varint(7, 0)
        .time(8, T0)
        .entry(11, "app", &format!("job-{}", i / 5))
        .string(15, "")
        .message(17, managed(T0, r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{}}}}}"#, None))
        .message(17, managed(T0 + 1, r#"{"f:status":{"f:conditions":{},"f:phase":{},"f:startTime":{}}}"#, Some("status")));
    let resources = Message::new()
        .quantity(1, "nvidia.com/gpu", &gpus)
        .quantity(2, "cpu", "8")
        .quantity(2, "memory", "64Gi")
        .quantity(2, "nvidia.com/gpu", &gpus);
    let container = Message::new()
        .string(1, "main")
        .string(2, "nvcr.io/nvidia/pytorch:25.08-py3")
        .string(5, "")
        .message(8, resources)
        .string(13, "/dev/termination-log")
        .string(14, "IfNotPresent")
        .varint(16, 0)
        .varint(17, 0)
        .varint(18, 0)
        .string(20, "File");
    let spec = Message::new()
        .message(2, container)
        .string(3, "Always")
        .varint(4, 30)
        .string(6, "ClusterFirst")
        .string(8, "")
        .string(9, "")
        .string(10, &format!("bench-gpu-{:05}", i / 5))
        .varint(11, 0)
        .varint(12, 0)
        .varint(13, 0)
        .message(14, Message::new())
        .string(16, "")
        .string(17, "")
        .string(19, "default-scheduler")
        .message(
            22,
            Message::new()
                .string(1, "nvidia.com/gpu")
                .string(2, "Exists")
                .string(3, "")
                .string(4, "NoSchedule"),
        )
        .string(24, "")
        .varint(25, 0)
        .varint(30, 1)
        .string(31, "PreemptLowerPriority");
    let condition = |kind: &str, at: u64| {
        Message::new()
            .string(1, kind)
            .string(2, "True")
            .message(3, Message::new())
            .time(4, at)
            .string(5, "")
            .string(6, "")
    };
    let status = Message::new()
        .string(1, "Running")
        .message(2, condition("Ready", T0 + 300))
        .message(2, condition("PodScheduled", T0))
        .string(3, "")
        .string(4, "")
        .string(5, "")
        .string(6, "")
        .time(7, T0 + 60)
        .string(9, "Burstable")
        .string(11, "");
    Message::new()
        .message(1, meta)
        .message(2, spec)
        .message(3, status)
}

/// The protobuf list body: the `k8s\0` envelope around a `PodList`.
fn body_protobuf() -> Vec<u8> {
    let mut list = Message::new().message(
        1,
        Message::new()
            .string(1, "")
            .string(2, "99999")
            .string(3, ""),
    );
    for i in 0..PODS {
        list = list.message(2, pod_protobuf(i));
    }
    let envelope = Message::new()
        .message(1, Message::new().string(1, "v1").string(2, "PodList"))
        .message(2, list)
        .string(3, "")
        .string(4, "");
    let mut out = b"k8s\0".to_vec();
    out.extend_from_slice(&envelope.0);
    out
}

fn decode_protobuf(body: &[u8]) -> Vec<SlimPod> {
    let mut splitter = ProtoListSplitter::new();
    let mut pods = Vec::with_capacity(PODS);
    for chunk in body.chunks(CHUNK) {
        splitter
            .push(chunk, |item| {
                pods.push(SlimPod::from_protobuf(item).expect("a pod"))
            })
            .expect("a list");
    }
    splitter.finish().expect("a whole list");
    pods
}

fn decode_pb(c: &mut Criterion) {
    let body = body_protobuf();
    let json: Vec<SlimPod> = (0..PODS)
        .map(|i| serde_json::from_value(pod(i)).expect("a pod"))
        .collect();
    assert!(
        decode_protobuf(&body) == json,
        "protobuf and JSON decode alike"
    );
    let mut group = c.benchmark_group("pod_list_25k_protobuf");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("streamed", |b| b.iter(|| black_box(decode_protobuf(&body))));
    group.finish();
}

#[derive(serde::Deserialize)]
struct List {
    items: Vec<SlimPod>,
}

fn decode(c: &mut Criterion) {
    let body = body();
    let mut group = c.benchmark_group("pod_list_25k");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("streamed", |b| {
        b.iter(|| {
            let mut splitter = ListSplitter::new();
            let mut pods = Vec::with_capacity(PODS);
            for chunk in body.chunks(CHUNK) {
                splitter
                    .push(chunk, |item| {
                        pods.push(serde_json::from_slice::<SlimPod>(item).expect("a pod"));
                    })
                    .expect("a list");
            }
            splitter.finish().expect("a whole list");
            black_box(pods)
        })
    });
    group.bench_function("split_only", |b| {
        b.iter(|| {
            let mut splitter = ListSplitter::new();
            let mut items = 0usize;
            for chunk in body.chunks(CHUNK) {
                splitter.push(chunk, |_| items += 1).expect("a list");
            }
            splitter.finish().expect("a whole list");
            black_box(items)
        })
    });
    group.bench_function("whole", |b| {
        b.iter(|| black_box(serde_json::from_slice::<List>(&body).expect("a list").items))
    });
    group.finish();
}

fn node(i: usize) -> SlimNode {
    serde_json::from_value(json!({
        "metadata": {"name": format!("bench-gpu-{i:05}"), "resourceVersion": "7",
                     "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "kubernetes.io/hostname": format!("bench-gpu-{i:05}")}},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "128", "memory": "1Ti", "pods": "110", "nvidia.com/gpu": "8"},
                   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-29T07:00:00Z"}]}
    }))
    .expect("a node")
}

fn snapshot(c: &mut Criterion) {
    let nodes = (0..PODS / 5).map(|i| Arc::new(node(i))).collect();
    let pods = (0..PODS)
        .map(|i| Arc::new(serde_json::from_value::<SlimPod>(pod(i)).expect("a pod")))
        .collect();
    let objects = CachedObjects::new(ClusterObjects::default(), nodes, pods);
    let settings = ObserveSettings::default();
    let now = Timestamp::from_unix_secs(1_795_000_000);
    let mut group = c.benchmark_group("snapshot_25k");
    group.sample_size(10);
    group.bench_function("observe", |b| {
        b.iter(|| black_box(objects.observe(&settings, now)))
    });
    group.finish();
}

criterion_group!(benches, decode, decode_pb, snapshot);
criterion_main!(benches);
