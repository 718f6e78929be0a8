//! The pieces every hand-made snapshot repeats: a steady Instance status, a steady
//! InferenceReplica and a ready GPU node. The revision is an argument because the tests name it
//! differently (`rev-1`, `r1`): only its equality with the replica's revisions matters to
//! alfred, never its text.

use alfred_model::snapshot::{InstanceStatus, Node, ReplicaState};

/// The status row of a steady Instance of `pods` pods: ready, admitted, serving `revision`,
/// no operation, every count equal to `pods`.
pub fn steady_status(pods: i64, revision: &str) -> InstanceStatus {
    InstanceStatus {
        incarnation: 1,
        phase: "Ready".into(),
        running_revision: revision.into(),
        admitted: true,
        status_pods: pods,
        observed_pods: pods,
        serving_pods: pods,
        available_pods: pods,
        ready_pods: pods,
        desired_pods: pods,
        ..InstanceStatus::default()
    }
}

/// A fresh InferenceReplica `name` of `replicas` steady Instances, not rolling out: current and
/// update revision both `revision`, every count equal to `replicas`.
pub fn steady_replica(name: &str, replicas: i64, revision: &str) -> ReplicaState {
    ReplicaState {
        name: name.into(),
        status_fresh: true,
        desired_replicas: replicas,
        replicas,
        ready_replicas: replicas,
        serving_replicas: replicas,
        available_replicas: replicas,
        updated_replicas: replicas,
        updated_ready_replicas: replicas,
        current_revision: revision.into(),
        update_revision: revision.into(),
        ..ReplicaState::default()
    }
}

/// A ready node of `pool` with `total` free `nvidia.com/gpu` GPUs and nothing else set.
pub fn gpu_node(name: &str, pool: &str, total: u32) -> Node {
    Node {
        name: name.into(),
        pool: Some(pool.into()),
        gpu_resource: "nvidia.com/gpu".into(),
        total_gpus: total,
        free_gpus: total,
        ready: true,
        ..Node::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_parts_agree_on_their_counts_and_revision() {
        let s = steady_status(2, "r1");
        assert_eq!((s.desired_pods, s.ready_pods, s.serving_pods), (2, 2, 2));
        assert_eq!(s.running_revision, "r1");
        let r = steady_replica("x-engine", 3, "r1");
        assert_eq!((r.replicas, r.updated_ready_replicas), (3, 3));
        assert_eq!(r.current_revision, r.update_revision);
        let n = gpu_node("n1", "H100", 8);
        assert_eq!((n.total_gpus, n.free_gpus, n.ready), (8, 8, true));
    }
}
