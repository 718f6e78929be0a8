//! What a member's agent would observe in the simulated cluster, as the member report takes
//! it: the Deployment and its HPA, the pods (bound, or pending and unschedulable), the nodes
//! (static ones registered by `nodeSelector`, NodePool ones by the pool label), the NodePool
//! with its limit and usage, NodeClaims in flight and Karpenter's launch-failure Events, and
//! the signal samples Prometheus returns.

use std::collections::BTreeMap;

use plumb_core::member::observation::{
    AutoscalerSpec, ConditionsStatus, DeploymentSpec, DeploymentStatus, InvolvedObject,
    NodePoolSpec, NodePoolStatus, ObjectCondition, ScaleTarget,
};
use plumb_core::member::{
    Autoscaler, Deployment, Event, MemberObservation, NodeClaim, NodePool, ObservedPod,
    PodTemplate, QueryResult, RawSample, SignalSamples,
};
use scheduler_model::objects::{
    Container, LabelSelector, Node, NodeSpec, NodeStatus, ObjectMeta, Pod, PodSpec, PodStatus,
    ResourceRequirements,
};
use utc_time::Timestamp;

use crate::cluster::Cluster;
use crate::prom::Signals;
use crate::scenario::ModelSetup;

/// The policy's namespace and the workload's name.
pub const NAMESPACE: &str = "serving";
/// The workload (Deployment) name.
pub const WORKLOAD: &str = "llm";
/// The label that registers GPU nodes through `nodeSelector`.
pub const GPU_LABEL: &str = "plumb.example/gpu";
/// The NodePool's name.
pub const POOL: &str = "gpu";

fn meta(name: &str, namespace: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        uid: format!("{namespace}/{name}"),
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        ..ObjectMeta::default()
    }
}

fn template(model: &ModelSetup) -> PodTemplate {
    PodTemplate {
        metadata: meta("", NAMESPACE, &[("app", WORKLOAD)]),
        spec: pod_spec(model, ""),
    }
}

fn pod_spec(model: &ModelSetup, node: &str) -> PodSpec {
    PodSpec {
        node_name: node.to_owned(),
        containers: vec![Container {
            name: "vllm".to_owned(),
            resources: Some(ResourceRequirements {
                requests: BTreeMap::from([
                    ("cpu".to_owned(), "8".to_owned()),
                    (
                        "nvidia.com/gpu".to_owned(),
                        model.gpus_per_replica.to_string(),
                    ),
                ]),
                ..ResourceRequirements::default()
            }),
            ..Container::default()
        }],
        ..PodSpec::default()
    }
}

fn node(name: &str, region: &str, pool: bool, model: &ModelSetup) -> Node {
    let mut labels = vec![
        ("kubernetes.io/hostname", name),
        ("topology.kubernetes.io/region", region),
        (GPU_LABEL, "true"),
    ];
    if pool {
        labels.push(("karpenter.sh/nodepool", POOL));
    }
    Node {
        metadata: meta(name, "", &labels),
        spec: NodeSpec::default(),
        status: NodeStatus {
            allocatable: BTreeMap::from([
                ("cpu".to_owned(), "96".to_owned()),
                ("memory".to_owned(), "1100Gi".to_owned()),
                ("pods".to_owned(), "110".to_owned()),
                ("nvidia.com/gpu".to_owned(), model.gpus_per_node.to_string()),
            ]),
            ..NodeStatus::default()
        },
    }
}

/// The member's observation of `cluster`; `start` is the run's start (the time of second 0).
pub fn observation(cluster: &Cluster, model: &ModelSetup, start: Timestamp) -> MemberObservation {
    let region = cluster.setup.region.as_str();
    let nodes = cluster
        .nodes
        .iter()
        .map(|n| node(&n.name, region, n.pool, model))
        .collect();
    let pods = cluster
        .pods
        .iter()
        .map(|p| ObservedPod {
            pod: Pod {
                metadata: meta(&p.name, NAMESPACE, &[("app", WORKLOAD)]),
                spec: pod_spec(model, p.node.as_deref().unwrap_or("")),
                status: PodStatus {
                    phase: if p.node.is_some() {
                        "Running"
                    } else {
                        "Pending"
                    }
                    .to_owned(),
                    ..PodStatus::default()
                },
            },
            ready: p.ready,
            unschedulable: p.unschedulable,
        })
        .collect();
    let selector = LabelSelector {
        match_labels: BTreeMap::from([("app".to_owned(), WORKLOAD.to_owned())]),
        ..LabelSelector::default()
    };
    let deployment = Deployment {
        metadata: meta(WORKLOAD, NAMESPACE, &[]),
        spec: DeploymentSpec {
            replicas: Some(i64::from(cluster.desired)),
            selector: Some(selector),
            template: template(model),
        },
        status: DeploymentStatus {
            ready_replicas: Some(i64::from(cluster.ready())),
        },
    };
    let autoscaler = Autoscaler {
        metadata: meta(&format!("keda-hpa-{WORKLOAD}"), NAMESPACE, &[]),
        spec: AutoscalerSpec {
            scale_target_ref: ScaleTarget {
                kind: "Deployment".to_owned(),
                name: WORKLOAD.to_owned(),
            },
        },
        status: ConditionsStatus {
            conditions: vec![ObjectCondition {
                type_: "AbleToScale".to_owned(),
                status: "True".to_owned(),
                reason: if cluster.scale_down_held {
                    "ScaleDownStabilized"
                } else {
                    "ReadyForNewScale"
                }
                .to_owned(),
                last_transition_time: None,
            }],
        },
    };
    let mut node_pools = Vec::new();
    if cluster.setup.pool_gpus > 0 {
        node_pools.push(NodePool {
            metadata: meta(POOL, "", &[]),
            spec: NodePoolSpec {
                limits: BTreeMap::from([(
                    "nvidia.com/gpu".to_owned(),
                    cluster.setup.pool_gpus.to_string(),
                )]),
            },
            status: NodePoolStatus {
                resources: BTreeMap::from([(
                    "nvidia.com/gpu".to_owned(),
                    cluster.pool_gpus_used(model).to_string(),
                )]),
            },
        });
    }
    let node_claims = cluster
        .claims
        .iter()
        .map(|c| NodeClaim {
            metadata: meta(&c.name, "", &[("karpenter.sh/nodepool", POOL)]),
            status: ConditionsStatus::default(),
        })
        .collect();
    let events = cluster
        .failures
        .iter()
        .map(|(name, at)| Event {
            metadata: meta(&format!("{name}.failed"), "", &[]),
            involved_object: InvolvedObject {
                kind: "NodeClaim".to_owned(),
                name: name.clone(),
            },
            reason: "InsufficientCapacityError".to_owned(),
            last_timestamp: Some(start.plus(std::time::Duration::from_secs_f64(at.max(0.0)))),
            event_time: None,
        })
        .collect();
    MemberObservation {
        namespace: NAMESPACE.to_owned(),
        deployments: vec![deployment],
        autoscalers: vec![autoscaler],
        pods,
        bound_pods: Vec::new(),
        nodes,
        namespaces: Vec::new(),
        node_pools,
        node_claims,
        events,
        promised: Vec::new(),
    }
}

/// The samples the policy's four queries return.
pub fn samples(signals: &Signals, sampled: Timestamp) -> SignalSamples {
    let one = |value: f64| {
        Some(QueryResult::Samples(vec![RawSample {
            value,
            time: sampled,
        }]))
    };
    SignalSamples {
        demand: one(signals.demand),
        pressure: one(signals.pressure),
        latency: one(signals.latency),
        error_rate: one(signals.error_rate),
        saturation: None,
        metrics: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::scenario::Scenario;

    /// The real member report over the twin's observation of a cluster short of capacity:
    /// its pending replicas are unschedulable and needed, three failed launches void its
    /// NodePool room, its static nodes are full, its region and signals come through.
    #[test]
    fn the_member_report_reads_the_simulated_cluster() {
        let s = Scenario::preset("regional-shortage").unwrap();
        let policy = s.policy();
        let model = &s.model;
        let mut c = Cluster::new(s.clusters[0].clone(), model, 4, Rng::stream(1, "t"));
        c.resize(6);
        for t in 0..400 {
            c.tick(f64::from(t), model, true);
        }
        assert!(c.failures.len() >= 3);
        let start = Timestamp::from_unix_secs(1_796_083_200);
        let now = start.plus(std::time::Duration::from_secs(400));
        let obs = observation(&c, model, start);
        let signals = Signals {
            demand: 9.0,
            pressure: 3.0,
            latency: 4.0,
            error_rate: 0.0,
            sampled_at: 390,
        };
        let out = plumb_core::member::report(
            &obs,
            &policy.spec,
            "east-a",
            &samples(&signals, now),
            None,
            now,
        );
        assert_eq!(out.ready.status, "True", "{:?}", out.ready);
        let r = out.report.unwrap();
        assert_eq!((r.desired_replicas, r.ready_replicas), (6, 4));
        assert_eq!(r.unschedulable_replicas, 2);
        // 2 unschedulable + ceil(9 / 2) - 6 = 0 from demand; over the latency SLO: at least step
        assert_eq!(r.needed_replicas, 2);
        assert!(r.recent_launch_failures >= 3);
        assert_eq!(r.dynamic_room, 0, "recurring launch failures void it");
        assert_eq!(r.static_room, 0, "two static nodes hold four replicas");
        assert_eq!(r.region.as_deref(), Some("us-east-1"));
        assert_eq!(r.pressure.map(|p| p.value), Some(3.0));
        assert_eq!(
            r.spec_hash,
            plumb_model::hash::member_spec_hash(&policy.spec, Some(NAMESPACE), "east-a")
        );
    }

    /// A calm cluster with NodePool headroom: nothing needed, room in replicas under the
    /// pool's GPU limit and `maxReplicas`.
    #[test]
    fn a_calm_cluster_reports_its_pool_headroom() {
        let s = Scenario::preset("calm-diurnal").unwrap();
        let policy = s.policy();
        let model = &s.model;
        let c = Cluster::new(s.clusters[0].clone(), model, 4, Rng::stream(1, "t"));
        let start = Timestamp::from_unix_secs(1_796_083_200);
        let obs = observation(&c, model, start);
        let out = plumb_core::member::report(
            &obs,
            &policy.spec,
            "east-a",
            &samples(&Signals::default(), start),
            None,
            start,
        );
        let r = out.report.unwrap();
        assert_eq!(r.needed_replicas, 0);
        assert_eq!(r.recent_launch_failures, 0);
        // 32 GPUs of NodePool at 4 per replica: 8, within maxReplicas 16 - 4 desired
        assert_eq!(r.dynamic_room, 8);
    }
}
