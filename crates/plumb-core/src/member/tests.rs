//! The member report's rules, one test each, on small clusters built from Kubernetes JSON.

use serde_json::{Value, json};

use super::*;
use crate::member::observation::ObjectCondition;

pub(crate) const GPU: &str = "nvidia.com/gpu";

pub(crate) fn now() -> Timestamp {
    "2026-12-01T12:00:00Z".parse().expect("time")
}

pub(crate) fn at(s: &str) -> Timestamp {
    s.parse().expect("time")
}

/// A GPU node of `pool` (None: no NodePool) in `region`.
pub(crate) fn node(name: &str, gpus: u32, pool: Option<&str>, region: &str) -> Node {
    let mut labels = json!({"kubernetes.io/hostname": name});
    if let Some(p) = pool {
        labels["karpenter.sh/nodepool"] = json!(p);
    }
    if !region.is_empty() {
        labels["topology.kubernetes.io/region"] = json!(region);
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": "aws:///x"},
        "status": {"allocatable": {"cpu": "96", "memory": "1100Gi", "pods": "110",
                                   GPU: gpus.to_string()},
                   "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .expect("node")
}

use scheduler_model::objects::Node;

pub(crate) fn template(app: &str, gpus: u32) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "vllm", "image": "vllm:1",
                 "resources": {"requests": {"cpu": "8", "memory": "64Gi", GPU: gpus.to_string()}}}]}
    })
}

pub(crate) fn deployment(app: &str, replicas: i64, ready: i64, gpus: u32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": app, "namespace": "ml"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}},
                 "template": template(app, gpus)},
        "status": {"readyReplicas": ready}
    }))
    .expect("deployment")
}

/// A pod of `app`: bound to `node`, or pending (unschedulable, maybe nominated).
pub(crate) fn pod(
    app: &str,
    i: usize,
    gpus: u32,
    node: Option<&str>,
    nominated: Option<&str>,
) -> ObservedPod {
    let mut spec = template(app, gpus)["spec"].clone();
    let mut status = json!({"phase": "Pending"});
    match node {
        Some(n) => {
            spec["nodeName"] = json!(n);
            status = json!({"phase": "Running", "conditions": [
                {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]});
        }
        None => {
            status["conditions"] =
                json!([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]);
            if let Some(n) = nominated {
                status["nominatedNodeName"] = json!(n);
            }
        }
    }
    ObservedPod::from_value(&json!({
        "metadata": {"name": format!("{app}-{i}"), "namespace": "ml", "labels": {"app": app}},
        "spec": spec, "status": status
    }))
    .expect("pod")
}

pub(crate) fn pool(name: &str, gpu_limit: Option<u32>, gpus_now: u32) -> NodePool {
    let mut spec = json!({});
    if let Some(l) = gpu_limit {
        spec["limits"] = json!({GPU: l.to_string(), "cpu": "1000"});
    }
    serde_json::from_value(json!({
        "metadata": {"name": name}, "spec": spec,
        "status": {"resources": {GPU: gpus_now.to_string(), "cpu": "0"}}
    }))
    .expect("pool")
}

pub(crate) fn spec(value: Value) -> AdaptivePolicySpec {
    let mut base = json!({
        "workload": {"name": "llama"},
        "clusters": [{"name": "us-east", "nodePools": ["gpu"], "maxReplicas": 12},
                     {"name": "eu-west", "maxReplicas": 8}],
        "capacity": {"replicaCapacity": 4}
    });
    if let (Some(b), Some(v)) = (base.as_object_mut(), value.as_object()) {
        for (k, x) in v {
            b.insert(k.clone(), x.clone());
        }
    }
    serde_json::from_value(base).expect("spec")
}

/// us-east: two registered 8-GPU nodes of pool `gpu` with 4 llama replicas of 2 GPUs bound,
/// one unregistered pool `other` with an idle node, a 4-GPU node outside any pool.
pub(crate) fn observation() -> MemberObservation {
    MemberObservation {
        namespace: "ml".into(),
        deployments: vec![deployment("llama", 4, 4, 2)],
        pods: (0..4)
            .map(|i| pod("llama", i, 2, Some(if i < 2 { "g1" } else { "g2" }), None))
            .collect(),
        nodes: vec![
            node("g1", 8, Some("gpu"), "us-east-1"),
            node("g2", 8, Some("gpu"), "us-east-1"),
            node("o1", 8, Some("other"), "us-east-1"),
            node("s1", 4, None, "us-west-2"),
        ],
        node_pools: vec![pool("gpu", Some(32), 16), pool("other", None, 8)],
        ..MemberObservation::default()
    }
}

fn samples(value: f64) -> QueryResult {
    QueryResult::Samples(vec![RawSample { value, time: now() }])
}

fn run(obs: &MemberObservation, spec: &AdaptivePolicySpec, signals: &SignalSamples) -> Report {
    report(obs, spec, "us-east", signals, None, now())
        .report
        .expect("member")
}

#[test]
fn a_cluster_not_in_the_policy_gets_no_report_and_not_a_member() {
    let out = report(
        &observation(),
        &spec(json!({})),
        "ap-south",
        &SignalSamples::default(),
        None,
        now(),
    );
    assert_eq!(out.report, None);
    assert_eq!(out.ready.status, "False");
    assert_eq!(out.ready.reason, "NotAMember");
    assert!(
        out.ready.message.contains("ap-south"),
        "{}",
        out.ready.message
    );
}

#[test]
fn an_observed_member_is_ready_with_its_time_and_spec_hash() {
    let s = spec(json!({}));
    let out = report(
        &observation(),
        &s,
        "us-east",
        &SignalSamples::default(),
        None,
        now(),
    );
    assert_eq!(out.ready.status, "True");
    assert_eq!(out.ready.reason, "Observed");
    let r = out.report.expect("member");
    assert_eq!(r.time, Some(now()));
    assert_eq!(
        r.spec_hash,
        plumb_model::member_spec_hash(&s, Some("ml"), "us-east")
    );
    assert!(r.spec_hash.starts_with("sha256:"));
    assert_eq!(r.error, None);
}

#[test]
fn replicas_are_counted_and_nominated_ones_are_not_needed() {
    let mut obs = observation();
    obs.deployments = vec![deployment("llama", 7, 4, 2)];
    obs.pods.push(pod("llama", 4, 2, None, None));
    obs.pods.push(pod("llama", 5, 2, None, None));
    obs.pods.push(pod("llama", 6, 2, None, Some("g1")));
    obs.pods.push(pod("other-app", 0, 2, None, None));
    let r = run(&obs, &spec(json!({})), &SignalSamples::default());
    assert_eq!(
        (
            r.desired_replicas,
            r.ready_replicas,
            r.unschedulable_replicas,
            r.nominated_replicas
        ),
        (7, 4, 2, 1)
    );
    assert_eq!(r.needed_replicas, 2);
    assert!(!r.scale_down_held);
}

#[test]
fn a_held_scale_down_keeps_unschedulable_replicas_out_of_needed() {
    let mut obs = observation();
    obs.pods.push(pod("llama", 4, 2, None, None));
    let held: Autoscaler = serde_json::from_value(json!({
        "metadata": {"name": "llama", "namespace": "ml"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "llama"}},
        "status": {"conditions": [{"type": "AbleToScale", "status": "True",
                                   "reason": "ScaleDownStabilized"}]}
    }))
    .expect("hpa");
    obs.autoscalers = vec![held.clone()];
    let r = run(&obs, &spec(json!({})), &SignalSamples::default());
    assert!(r.scale_down_held);
    assert_eq!(r.unschedulable_replicas, 1);
    assert_eq!(r.needed_replicas, 0);
    let mut ready = held;
    ready.status.conditions = vec![ObjectCondition {
        type_: "AbleToScale".into(),
        status: "True".into(),
        reason: "ReadyForNewScale".into(),
        last_transition_time: None,
    }];
    obs.autoscalers = vec![ready];
    let r = run(&obs, &spec(json!({})), &SignalSamples::default());
    assert!(!r.scale_down_held);
    assert_eq!(r.needed_replicas, 1);
}

#[test]
fn needed_adds_the_demand_shortfall_to_the_unschedulable_replicas() {
    // 10 desired, 2 of them unschedulable; demand 60 at 4 per replica calls for 15: 2 + 5.
    let mut obs = observation();
    obs.deployments = vec![deployment("llama", 10, 8, 2)];
    obs.pods.push(pod("llama", 8, 2, None, None));
    obs.pods.push(pod("llama", 9, 2, None, None));
    let s = spec(json!({"signals": {"demand": "d"}}));
    let signals = SignalSamples {
        demand: Some(samples(60.0)),
        ..SignalSamples::default()
    };
    assert_eq!(run(&obs, &s, &signals).needed_replicas, 7);
    // Demand below what runs adds nothing (never negative).
    let low = SignalSamples {
        demand: Some(samples(1.0)),
        ..SignalSamples::default()
    };
    assert_eq!(run(&obs, &s, &low).needed_replicas, 2);
    // The cluster's own replicaCapacity wins over capacity.replicaCapacity: ceil(60/10) = 6.
    let own = spec(json!({"signals": {"demand": "d"}, "clusters": [
        {"name": "us-east", "nodePools": ["gpu"], "maxReplicas": 12, "replicaCapacity": 10}]}));
    assert_eq!(run(&obs, &own, &signals).needed_replicas, 2);
}

#[test]
fn demand_without_replica_capacity_counts_unschedulable_replicas_only() {
    let mut obs = observation();
    obs.pods.push(pod("llama", 4, 2, None, None));
    let s = spec(json!({"signals": {"demand": "d"}, "capacity": {}}));
    let signals = SignalSamples {
        demand: Some(samples(1000.0)),
        ..SignalSamples::default()
    };
    let r = run(&obs, &s, &signals);
    assert_eq!(r.needed_replicas, 1);
    assert_eq!(r.demand.map(|d| d.value), Some(1000.0));
}

#[test]
fn saturation_or_latency_over_its_limit_needs_at_least_a_step() {
    let obs = observation();
    let s = spec(
        json!({"signals": {"saturation": "s", "saturationThreshold": "0.9",
                                    "latency": "l", "latencySLO": 2.0},
                        "capacity": {"replicaCapacity": 4, "step": 3}}),
    );
    let calm = SignalSamples {
        saturation: Some(samples(0.9)),
        latency: Some(samples(2.0)),
        ..SignalSamples::default()
    };
    assert_eq!(run(&obs, &s, &calm).needed_replicas, 0);
    let saturated = SignalSamples {
        saturation: Some(samples(0.95)),
        ..calm.clone()
    };
    assert_eq!(run(&obs, &s, &saturated).needed_replicas, 3);
    let slow = SignalSamples {
        latency: Some(samples(2.5)),
        ..calm
    };
    assert_eq!(run(&obs, &s, &slow).needed_replicas, 3);
}

#[test]
fn a_bad_signal_is_left_out_and_turns_ready_false_naming_it() {
    let mut obs = observation();
    obs.pods.push(pod("llama", 4, 2, None, None));
    let s = spec(json!({"signals": {"demand": "d", "pressure": "p"}}));
    for (answer, why) in [
        (
            QueryResult::Samples(vec![
                RawSample {
                    value: 1.0,
                    time: now(),
                },
                RawSample {
                    value: 2.0,
                    time: now(),
                },
            ]),
            "2 samples",
        ),
        (
            QueryResult::Samples(vec![RawSample {
                value: f64::NAN,
                time: now(),
            }]),
            "NaN",
        ),
        (
            QueryResult::Error("connection refused".into()),
            "connection refused",
        ),
    ] {
        let signals = SignalSamples {
            demand: Some(answer),
            pressure: Some(samples(1.5)),
            ..SignalSamples::default()
        };
        let out = report(&obs, &s, "us-east", &signals, None, now());
        assert_eq!(out.ready.status, "False");
        assert_eq!(out.ready.reason, "ObservationFailed");
        assert!(
            out.ready.message.contains("signals.demand"),
            "{}",
            out.ready.message
        );
        assert!(out.ready.message.contains(why), "{}", out.ready.message);
        let r = out.report.expect("member");
        assert_eq!(r.demand, None);
        assert_eq!(r.pressure.map(|p| p.value), Some(1.5));
        assert_eq!(
            r.needed_replicas, 1,
            "the unschedulable replica still counts"
        );
        assert_eq!(r.error.as_deref(), Some(out.ready.message.as_str()));
    }
}

#[test]
fn short_since_is_kept_while_short_and_cleared_when_not() {
    let mut obs = observation();
    obs.pods.push(pod("llama", 4, 2, None, None));
    let s = spec(json!({}));
    let first = run(&obs, &s, &SignalSamples::default());
    assert_eq!(first.short_since, Some(now()));
    let later = at("2026-12-01T12:05:00Z");
    let second = report(
        &obs,
        &s,
        "us-east",
        &SignalSamples::default(),
        Some(&first),
        later,
    )
    .report
    .expect("member");
    assert_eq!(second.short_since, Some(now()));
    obs.pods.pop();
    let third = report(
        &obs,
        &s,
        "us-east",
        &SignalSamples::default(),
        Some(&second),
        later,
    )
    .report
    .expect("member");
    assert_eq!(third.short_since, None);
}

#[test]
fn region_is_the_specs_else_the_nodes_most_common_with_ties_to_the_first_name() {
    let obs = observation();
    assert_eq!(
        run(&obs, &spec(json!({})), &SignalSamples::default())
            .region
            .as_deref(),
        Some("us-east-1")
    );
    let named =
        spec(json!({"clusters": [{"name": "us-east", "maxReplicas": 4, "region": "eu-1"}]}));
    assert_eq!(
        run(&obs, &named, &SignalSamples::default())
            .region
            .as_deref(),
        Some("eu-1")
    );
    let mut tie = observation();
    tie.nodes = vec![
        node("a", 8, None, "zz-2"),
        node("b", 8, None, "aa-1"),
        node("c", 8, None, ""),
    ];
    assert_eq!(
        run(&tie, &spec(json!({})), &SignalSamples::default())
            .region
            .as_deref(),
        Some("aa-1")
    );
    let mut none = observation();
    none.nodes = vec![node("a", 8, None, "")];
    assert_eq!(
        run(&none, &spec(json!({})), &SignalSamples::default()).region,
        None
    );
}

#[test]
fn static_room_counts_only_registered_nodes() {
    // g1 and g2 (pool gpu) hold 4 free GPUs each: 4 replicas of 2 GPUs. The idle node of the
    // unregistered pool and the node outside any pool add nothing.
    let out = report(
        &observation(),
        &spec(json!({})),
        "us-east",
        &SignalSamples::default(),
        None,
        now(),
    );
    let r = out.report.expect("member");
    assert_eq!(r.static_room, 4);
    assert_eq!(out.diagnostics.registered, 2);
    assert_eq!(out.diagnostics.filtered, 2);
    // Registering nodes outside NodePools by nodeSelector adds s1 (4 GPUs: 2 replicas).
    let selector = spec(
        json!({"clusters": [{"name": "us-east", "nodePools": ["gpu"],
        "maxReplicas": 12, "nodeSelector": {"kubernetes.io/hostname": "s1"}}]}),
    );
    // The selector also narrows the pool's nodes to those matching: only s1 is left.
    let r = run(&observation(), &selector, &SignalSamples::default());
    assert_eq!(r.static_room, 2);
}

#[test]
fn static_room_is_counted_up_to_max_replicas() {
    let s =
        spec(json!({"clusters": [{"name": "us-east", "nodePools": ["gpu"], "maxReplicas": 3}]}));
    assert_eq!(
        run(&observation(), &s, &SignalSamples::default()).static_room,
        3
    );
}

#[test]
fn other_policies_promised_replicas_take_the_room_first() {
    let mut obs = observation();
    let promised = |policy: &str, replicas: u32, gpus: u32| Promised {
        policy: policy.into(),
        namespace: "ml".into(),
        template: serde_json::from_value(template("mistral", gpus)).expect("template"),
        replicas,
    };
    // With only the registered nodes, one 4-GPU replica lands on g1 or g2: 2 replicas of
    // room are left.
    let mut registered_only = observation();
    registered_only.nodes.truncate(2);
    registered_only.promised = vec![promised("ml/mistral", 1, 4)];
    let out = report(
        &registered_only,
        &spec(json!({})),
        "us-east",
        &SignalSamples::default(),
        None,
        now(),
    );
    assert_eq!(out.report.as_ref().map(|r| r.static_room), Some(2));
    assert_eq!(out.diagnostics.promised_placed, 1);
    // With the idle unregistered node there, the scheduler puts it there: room stays 4.
    obs.promised = vec![promised("ml/mistral", 1, 4)];
    let out = report(
        &obs,
        &spec(json!({})),
        "us-east",
        &SignalSamples::default(),
        None,
        now(),
    );
    assert_eq!(out.report.as_ref().map(|r| r.static_room), Some(4));
    // Eight 8-GPU replicas: one lands on the idle unregistered node, seven find no node and
    // are charged to the pool's headroom (16 GPUs left: 2 more charged fit, 5 do not).
    obs.promised = vec![promised("ml/big", 8, 8)];
    let out = report(
        &obs,
        &spec(json!({})),
        "us-east",
        &SignalSamples::default(),
        None,
        now(),
    );
    let r = out.report.expect("member");
    assert_eq!(out.diagnostics.promised_placed, 1);
    assert_eq!(out.diagnostics.promised_unplaced, 7);
    assert_eq!(
        r.static_room, 4,
        "the idle unregistered node took the one that fit"
    );
    assert_eq!(
        r.dynamic_room, 0,
        "two 8-GPU replicas used up the pool's 16 GPUs"
    );
}

#[test]
fn dynamic_room_is_the_pools_headroom_under_their_limits_in_replicas() {
    // Pool gpu: limit 32 GPUs, 16 held: 8 replicas of 2 GPUs, within maxReplicas − desired.
    let r = run(&observation(), &spec(json!({})), &SignalSamples::default());
    assert_eq!(r.dynamic_room, 8);
    // Capped by maxReplicas − desired (6 − 4).
    let capped =
        spec(json!({"clusters": [{"name": "us-east", "nodePools": ["gpu"], "maxReplicas": 6}]}));
    assert_eq!(
        run(&observation(), &capped, &SignalSamples::default()).dynamic_room,
        2
    );
    // A pool without limits is bounded by maxReplicas − desired only.
    let mut obs = observation();
    obs.node_pools = vec![pool("gpu", None, 16)];
    assert_eq!(
        run(&obs, &spec(json!({})), &SignalSamples::default()).dynamic_room,
        8
    );
    // No pools registered: nothing can be added.
    let none = spec(json!({"clusters": [{"name": "us-east", "maxReplicas": 12}]}));
    assert_eq!(
        run(&observation(), &none, &SignalSamples::default()).dynamic_room,
        0
    );
    // A registered pool not observed adds nothing.
    let mut gone = observation();
    gone.node_pools.clear();
    assert_eq!(
        run(&gone, &spec(json!({})), &SignalSamples::default()).dynamic_room,
        0
    );
}

fn failure(claim: &str, when: &str) -> Event {
    serde_json::from_value(json!({
        "metadata": {"name": format!("{claim}.1"), "namespace": "default"},
        "involvedObject": {"kind": "NodeClaim", "name": claim},
        "reason": "InsufficientCapacityError", "lastTimestamp": when
    }))
    .expect("event")
}

#[test]
fn recurring_launch_failures_in_the_last_ten_minutes_void_dynamic_room() {
    let mut obs = observation();
    obs.events = vec![
        failure("gpu-a", "2026-12-01T11:55:00Z"),
        failure("gpu-b", "2026-12-01T11:51:00Z"),
        failure("gpu-old", "2026-12-01T11:49:59Z"),
        failure("other-x", "2026-12-01T11:58:00Z"),
    ];
    let r = run(&obs, &spec(json!({})), &SignalSamples::default());
    assert_eq!(
        r.recent_launch_failures, 2,
        "old and unregistered-pool failures do not count"
    );
    assert_eq!(r.dynamic_room, 8);
    let claim: NodeClaim = serde_json::from_value(json!({
        "metadata": {"name": "c1", "labels": {"karpenter.sh/nodepool": "gpu"}},
        "status": {"conditions": [{"type": "Launched", "status": "False",
                                   "reason": "LaunchFailed", "lastTransitionTime": "2026-12-01T11:59:00Z"}]}
    }))
    .expect("claim");
    obs.node_claims = vec![claim];
    let r = run(&obs, &spec(json!({})), &SignalSamples::default());
    assert_eq!(r.recent_launch_failures, 3);
    assert_eq!(r.dynamic_room, 0);
    assert_eq!(r.static_room, 4, "static room is not affected");
}

#[test]
fn a_missing_workload_is_an_observation_failure() {
    let mut obs = observation();
    obs.deployments.clear();
    let out = report(
        &obs,
        &spec(json!({})),
        "us-east",
        &SignalSamples::default(),
        None,
        now(),
    );
    assert_eq!(out.ready.reason, "ObservationFailed");
    assert!(
        out.ready.message.contains("Deployment ml/llama not found"),
        "{}",
        out.ready.message
    );
    assert_eq!(
        out.report.map(|r| (r.static_room, r.needed_replicas)),
        Some((0, 0))
    );
}

#[test]
fn safe_pressure_grows_only_while_served_safely() {
    let obs = observation();
    let s = spec(json!({"signals": {"pressure": "p"}}));
    let with = |p: f64| SignalSamples {
        pressure: Some(samples(p)),
        ..SignalSamples::default()
    };
    let first = run(&obs, &s, &with(2.0));
    assert_eq!(
        (first.safe_pressure, first.safe_since),
        (Some(2.0), Some(now()))
    );
    let later = at("2026-12-01T12:01:00Z");
    let mut short = obs.clone();
    short.pods.push(pod("llama", 4, 2, None, None));
    let second = report(&short, &s, "us-east", &with(5.0), Some(&first), later)
        .report
        .expect("member");
    assert_eq!(
        second.safe_pressure,
        Some(2.0),
        "a short cluster does not raise it"
    );
    let third = report(&obs, &s, "us-east", &with(3.0), Some(&second), later)
        .report
        .expect("member");
    assert_eq!(
        (third.safe_pressure, third.safe_since),
        (Some(3.0), Some(now()))
    );
    let mut unready = obs;
    unready.deployments = vec![deployment("llama", 4, 3, 2)];
    let fourth = report(&unready, &s, "us-east", &with(9.0), Some(&third), later)
        .report
        .expect("member");
    assert_eq!(fourth.safe_pressure, Some(3.0), "not every replica ready");
}

#[test]
fn the_workloads_own_pending_pods_take_their_room_before_it_is_counted() {
    // Only the registered nodes: an idle unregistered node would take them first.
    let mut obs = observation();
    obs.nodes.truncate(2);
    let mut fresh = pod("llama", 4, 2, None, None);
    fresh.unschedulable = false;
    obs.pods.push(fresh);
    obs.pods.push(pod("llama", 5, 2, None, Some("g1")));
    let r = run(&obs, &spec(json!({})), &SignalSamples::default());
    assert_eq!(
        r.static_room, 2,
        "two of the four free slots are already wanted"
    );
    assert_eq!((r.unschedulable_replicas, r.nominated_replicas), (0, 1));
}

#[test]
fn an_observation_reads_back_what_it_writes_and_pods_read_from_kubernetes_json() {
    let obs = observation();
    let text = serde_json::to_string(&obs).expect("write");
    let back: MemberObservation = serde_json::from_str(&text).expect("read");
    assert_eq!(back, obs);
    let p = &obs.pods[0];
    assert!(p.ready && !p.unschedulable);
    let pending = pod("llama", 9, 2, None, None);
    assert!(!pending.ready && pending.unschedulable);
    let bad = ObservedPod::from_value(&json!({"metadata": {"name": 3}}));
    assert!(bad.is_err_and(|e| e.starts_with("pod:")));
}

#[test]
fn reports_sharing_one_conversion_equal_reports_made_alone() {
    let mut obs = observation();
    obs.promised = vec![Promised {
        policy: "ml/mistral".into(),
        namespace: "ml".into(),
        template: serde_json::from_value(template("mistral", 4)).expect("template"),
        replicas: 2,
    }];
    obs.pods.push(pod("llama", 4, 2, None, None));
    let mut occupancy = Occupancy::new();
    let narrow =
        spec(json!({"clusters": [{"name": "us-east", "nodePools": ["gpu"], "maxReplicas": 3}]}));
    for s in [spec(json!({})), narrow.clone(), spec(json!({})), narrow] {
        let alone = report(&obs, &s, "us-east", &SignalSamples::default(), None, now());
        let shared = report_with(
            &mut occupancy,
            &obs,
            &s,
            "us-east",
            &SignalSamples::default(),
            None,
            now(),
        );
        assert_eq!(shared, alone);
    }
}

#[test]
fn a_policy_breaking_a_rule_reports_no_needs_or_room_and_names_the_field() {
    let mut obs = observation();
    obs.pods.push(pod("llama", 4, 2, None, None));
    let bad = spec(json!({"capacity": {"replicaCapacity": 4, "step": 0}}));
    let out = report(
        &obs,
        &bad,
        "us-east",
        &SignalSamples::default(),
        None,
        now(),
    );
    assert_eq!(out.ready.reason, "ObservationFailed");
    assert!(
        out.ready.message.contains("spec.capacity.step"),
        "{}",
        out.ready.message
    );
    let r = out.report.expect("member");
    assert_eq!(
        (r.needed_replicas, r.static_room, r.dynamic_room),
        (0, 0, 0)
    );
    assert_eq!(r.error.as_deref(), Some(out.ready.message.as_str()));
    assert!(r.spec_hash.starts_with("sha256:"));
}
