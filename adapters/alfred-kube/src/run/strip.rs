//! Keep only what the snapshot builder reads (memory matters at 150k pods).
//!
//! Applied by the watchers' `modify` hook before an object enters a reflector store. Each
//! function removes fields `alfred-observe` never reads, so `observe` of a stripped object
//! equals `observe` of the original (tested below and by the live equality test).

use k8s_openapi::api::core::v1::{Container, Node, NodeStatus, Pod, PodStatus};
use kube::api::DynamicObject;
use kube::core::TypeMeta;

/// Pods: metadata (without annotations and managed fields), the parts of the spec that
/// carry requests, scheduling constraints and the node, and the status fields the snapshot
/// reads (phase, Ready/PodScheduled conditions, start time, nominated node).
pub fn pod(p: &mut Pod) {
    let meta = &mut p.metadata;
    meta.managed_fields = None;
    meta.annotations = None;
    meta.generate_name = None;
    if let Some(spec) = p.spec.as_mut() {
        spec.volumes = None;
        spec.ephemeral_containers = None;
        spec.host_aliases = None;
        spec.dns_config = None;
        spec.security_context = None;
        spec.image_pull_secrets = None;
        spec.readiness_gates = None;
        spec.os = None;
        for c in spec.containers.iter_mut() {
            slim_container(c);
        }
        for c in spec.init_containers.iter_mut().flatten() {
            slim_container(c);
        }
    }
    if let Some(status) = p.status.take() {
        let conditions = status.conditions.map(|cs| {
            cs.into_iter()
                .filter(|c| c.type_ == "Ready" || c.type_ == "PodScheduled")
                .map(|mut c| {
                    c.message = None;
                    c
                })
                .collect()
        });
        p.status = Some(PodStatus {
            phase: status.phase,
            conditions,
            start_time: status.start_time,
            nominated_node_name: status.nominated_node_name,
            ..PodStatus::default()
        });
    }
}

fn slim_container(c: &mut Container) {
    *c = Container {
        name: std::mem::take(&mut c.name),
        resources: c.resources.take(),
        restart_policy: c.restart_policy.take(),
        ..Container::default()
    };
}

/// Nodes: drop the image list, volume and daemon fields and managed fields.
pub fn node(n: &mut Node) {
    n.metadata.managed_fields = None;
    if let Some(status) = n.status.take() {
        n.status = Some(NodeStatus {
            capacity: status.capacity,
            allocatable: status.allocatable,
            conditions: status.conditions.map(|cs| {
                cs.into_iter()
                    .map(|mut c| {
                        // The heartbeat changes every few seconds; alfred reads status and
                        // lastTransitionTime only.
                        c.last_heartbeat_time = None;
                        c.message = None;
                        c
                    })
                    .collect()
            }),
            node_info: status.node_info,
            phase: status.phase,
            ..NodeStatus::default()
        });
    }
}

/// OME objects and PodGroups read as JSON: drop managed fields and (InferenceServices only)
/// the status, which alfred never reads; set `apiVersion`/`kind` (list items may lack them).
pub fn dynamic(o: &mut DynamicObject, api_version: &str, kind: &str, keep_status: bool) {
    o.metadata.managed_fields = None;
    o.types = Some(TypeMeta {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
    });
    if !keep_status && let Some(map) = o.data.as_object_mut() {
        map.remove("status");
    }
}

/// The generic PVC/PV strip: managed fields only.
pub fn managed_fields(meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) {
    meta.managed_fields = None;
}

#[cfg(test)]
mod tests {
    use super::*;
    use alfred_model::Timestamp;
    use alfred_observe::{ClusterObjects, ObserveSettings, observe};

    const POD: &str = r#"{
      "apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"ome.io/inferenceservice": "x", "component": "engine"},
        "annotations": {"big": "value"},
        "managedFields": [{"manager": "kubelet", "operation": "Update"}],
        "creationTimestamp": "2026-01-01T00:00:00Z"},
      "spec": {"nodeName": "n1", "schedulerName": "default-scheduler",
        "containers": [{"name": "c", "image": "img", "command": ["a"], "env": [{"name": "A", "value": "b"}],
          "resources": {"requests": {"nvidia.com/gpu": "4", "cpu": "2"}, "limits": {"nvidia.com/gpu": "4"}}}],
        "volumes": [{"name": "v", "emptyDir": {}}],
        "tolerations": [{"key": "k", "operator": "Exists"}]},
      "status": {"phase": "Running", "startTime": "2026-01-01T00:01:00Z",
        "conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}],
        "containerStatuses": [{"name": "c", "image": "img", "imageID": "x", "ready": true, "restartCount": 0}]}
    }"#;

    const NODE: &str = r#"{
      "apiVersion": "v1", "kind": "Node",
      "metadata": {"name": "n1", "uid": "nu", "labels": {"nvidia.com/gpu.product": "H100"}},
      "spec": {},
      "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"},
        "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                       {"type": "GpuUnhealthy", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "images": [{"names": ["a"], "sizeBytes": 1}]}
    }"#;

    #[test]
    fn stripping_does_not_change_the_snapshot() {
        let original = ClusterObjects::from_documents(&format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{POD},{NODE}]}}"
        ))
        .unwrap();
        let mut stripped = original.clone();
        for p in &mut stripped.pods {
            pod(p);
        }
        for n in &mut stripped.nodes {
            node(n);
        }
        let now = Timestamp::from_unix_secs(1_767_229_200);
        let settings = ObserveSettings::default();
        assert_eq!(
            observe(&original, &settings, now),
            observe(&stripped, &settings, now)
        );
        let p = &stripped.pods[0];
        assert!(p.metadata.annotations.is_none());
        assert!(p.spec.as_ref().unwrap().volumes.is_none());
        assert!(p.spec.as_ref().unwrap().containers[0].image.is_none());
        assert!(p.status.as_ref().unwrap().container_statuses.is_none());
        assert!(stripped.nodes[0].status.as_ref().unwrap().images.is_none());
    }
}
