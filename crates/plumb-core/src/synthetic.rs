//! A large synthetic member as Kubernetes JSON: 5,000 nodes and 50,000 pods, one Deployment,
//! one Karpenter NodePool and the spec of one policy on them. Shared by the measurements (the
//! report bench decodes it; plumb-kube's `member_pass_scale` example feeds it through the
//! agent's watch stores) so both measure the same cluster. Behind the `synthetic` feature:
//! nothing the agent runs uses it.

use serde_json::{Value, json};

/// Nodes of the synthetic member.
pub const NODES: usize = 5_000;
/// Pods of the synthetic member, 10 per node.
pub const PODS: usize = 50_000;
/// The namespace of the workload and of every pod.
pub const NAMESPACE: &str = "ml";
/// The workload (Deployment) the policy scales.
pub const WORKLOAD: &str = "llama";
/// The extended resource every GPU node offers and GPU pods request.
pub const GPU: &str = "nvidia.com/gpu";

/// Node `i`: 2,000 nodes of the registered pool `gpu` (`i % 5` is 0 or 1), 2,000 of `batch`,
/// 1,000 outside any pool; 8 GPUs each, tainted for GPU pods.
pub fn node(i: usize) -> Value {
    let name = format!("node-{i:05}");
    let mut labels = json!({"kubernetes.io/hostname": name,
                            "topology.kubernetes.io/region": "us-east-1",
                            "topology.kubernetes.io/zone": format!("us-east-1{}", ["a", "b", "c"][i % 3])});
    match i % 5 {
        0 | 1 => labels["karpenter.sh/nodepool"] = json!("gpu"),
        2 | 3 => labels["karpenter.sh/nodepool"] = json!("batch"),
        _ => {}
    }
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": format!("aws:///us-east-1a/i-{i:017}"),
                 "taints": [{"key": GPU, "value": "present", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "191", "memory": "2000Gi", "pods": "110", GPU: "8"},
                   "capacity": {"cpu": "192", "memory": "2048Gi", "pods": "110", GPU: "8"},
                   "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

/// A pod template of `app` requesting `gpus` GPUs (and 4 CPUs, 32 GiB).
pub fn template(app: &str, gpus: u32) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "server", "image": format!("registry.example.com/{app}:1"),
                 "resources": {"requests": {"cpu": "4", "memory": "32Gi", GPU: gpus.to_string()}}}],
                 "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]}
    })
}

/// Pod `i` of [`PODS`], bound and Ready: the workload's 100 replicas of 2 GPUs (`i < 100`, on
/// pool `gpu`), then one 1-GPU pod in three of every ten (apps `svc-0`…`svc-99`), the rest
/// small CPU pods.
pub fn pod(i: usize) -> Value {
    let node = i % NODES;
    let (app, gpus) = if i < 100 {
        (WORKLOAD.to_owned(), 2)
    } else if i % 10 < 3 {
        (format!("svc-{}", i % 100), 1)
    } else {
        (format!("side-{}", i % 50), 0)
    };
    let mut spec = template(&app, gpus)["spec"].take();
    let node = if i < 100 { (node / 5) * 5 } else { node };
    spec["nodeName"] = json!(format!("node-{node:05}"));
    if gpus == 0 {
        spec["containers"][0]["resources"]["requests"] = json!({"cpu": "250m", "memory": "256Mi"});
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{app}-{i:06}"), "namespace": NAMESPACE, "labels": {"app": app},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                          "name": format!("{app}-rs"), "uid": format!("rs-{app}"),
                                          "controller": true}]},
        "spec": spec,
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

/// The workload's Deployment: 100 replicas of 2 GPUs, all ready.
pub fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": WORKLOAD, "namespace": NAMESPACE},
        "spec": {"replicas": 100, "selector": {"matchLabels": {"app": WORKLOAD}},
                 "template": template(WORKLOAD, 2)},
        "status": {"readyReplicas": 100}
    })
}

/// The registered NodePool `gpu`: 20,000 GPUs allowed, 16,000 in use.
pub fn node_pool() -> Value {
    json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"},
           "spec": {"limits": {GPU: "20000"}}, "status": {"resources": {GPU: "16000"}}})
}

/// The spec of the policy on the workload: member `us-east` on pool `gpu`, signals named `d`
/// (demand) and `p` (pressure), 4 requests per replica.
pub fn policy_spec() -> Value {
    json!({
        "workload": {"name": WORKLOAD},
        "clusters": [{"name": "us-east", "nodePools": ["gpu"], "maxReplicas": 400}],
        "signals": {"demand": "d", "pressure": "p"},
        "capacity": {"replicaCapacity": 4}
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::member::ObservedPod;
    use scheduler_model::objects::Node;

    #[test]
    fn every_object_decodes_and_pods_spread_ten_per_node() {
        for i in [0, 1, 2, 4, NODES - 1] {
            let _: Node = serde_json::from_value(node(i)).expect("node");
        }
        let workload = pod(99);
        assert!(ObservedPod::from_value(&workload).expect("pod").ready);
        assert_eq!(workload["spec"]["nodeName"], json!("node-00095"));
        let side = pod(PODS - 1);
        assert_eq!(side["spec"]["nodeName"], json!("node-04999"));
        assert_eq!(
            side["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            json!("250m")
        );
        let spec: plumb_model::AdaptivePolicySpec =
            serde_json::from_value(policy_spec()).expect("spec");
        assert!(spec.workload.is_some());
    }
}
