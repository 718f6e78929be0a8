//! Building a [`ClusterSnapshot`] in code, for an embedder whose cluster is not a list of
//! Kubernetes objects (a simulator, a test, another operator's own model of its nodes).
//!
//! `alfred-observe` derives every fact of a snapshot from the objects; a snapshot built
//! here states them, and the builder keeps the few that must agree with each other
//! consistent: a node's allocated and free GPUs are the sum of the GPUs of the pods bound
//! to it, and every list is sorted ([`ClusterSnapshot::normalize`]). Anything the builder
//! has no method for goes in through [`SnapshotBuilder::node`],
//! [`SnapshotBuilder::pod`] and the other raw setters, at the struct's `Default`s.

use std::collections::BTreeMap;

use crate::Timestamp;
use crate::snapshot::{ClusterSnapshot, ExecutorState, Node, PendingPod, Pod, PodPhase, Workload};

/// Builds a [`ClusterSnapshot`] (see the module docs). Start with
/// [`ClusterSnapshot::builder`].
///
/// ```
/// use alfred_model::{ClusterSnapshot, Timestamp};
///
/// let now = Timestamp::parse_rfc3339("2026-11-29T08:00:00Z")?;
/// let snapshot = ClusterSnapshot::builder(now)
///     .gpu_node("gpu-b", "H100", 8)
///     .gpu_node("gpu-a", "H100", 8)
///     .gpu_pod("inference", "chat-0", "gpu-a", 1)
///     .pending_gpu_pod("inference", "batch-0", 8, now.plus_minutes(-40))
///     .build();
/// let a = snapshot.node("gpu-a").expect("built");
/// assert_eq!((a.allocated_gpus, a.free_gpus), (1, 7));
/// assert_eq!(snapshot.nodes[0].name, "gpu-a", "sorted by name");
/// assert!(!snapshot.executor.available, "no executor unless said");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SnapshotBuilder {
    snapshot: ClusterSnapshot,
}

impl ClusterSnapshot {
    /// A builder for a snapshot observed at `observed_at`: no nodes, no pods, no executor.
    pub fn builder(observed_at: Timestamp) -> SnapshotBuilder {
        SnapshotBuilder {
            snapshot: ClusterSnapshot {
                observed_at,
                ..ClusterSnapshot::default()
            },
        }
    }
}

impl SnapshotBuilder {
    /// A ready, schedulable node of `pool` with `gpus` allocatable `nvidia.com/gpu`
    /// (uid `uid-<name>`, no labels, taints, conditions or CPU/memory figures: the
    /// scheduler model then checks GPUs only).
    pub fn gpu_node(self, name: &str, pool: &str, gpus: u32) -> SnapshotBuilder {
        self.node(Node {
            name: name.into(),
            uid: format!("uid-{name}"),
            pool: Some(pool.into()),
            gpu_resource: "nvidia.com/gpu".into(),
            total_gpus: gpus,
            ready: true,
            ..Node::default()
        })
    }

    /// A node as given; its allocated and free GPUs are computed at [`SnapshotBuilder::build`].
    pub fn node(mut self, node: Node) -> SnapshotBuilder {
        self.snapshot.nodes.push(node);
        self
    }

    /// A running, ready pod with `gpus` GPUs bound to `node` (uid `uid-<namespace>-<name>`,
    /// not an OME pod, no owner).
    pub fn gpu_pod(self, namespace: &str, name: &str, node: &str, gpus: u32) -> SnapshotBuilder {
        self.pod(Pod {
            namespace: namespace.into(),
            name: name.into(),
            node: node.into(),
            gpus,
            phase: PodPhase::Running,
            ready: true,
            uid: format!("uid-{namespace}-{name}"),
            ..Pod::default()
        })
    }

    /// A bound pod as given; its GPUs count on its node.
    pub fn pod(mut self, pod: Pod) -> SnapshotBuilder {
        self.snapshot.pods.push(pod);
        self
    }

    /// A pending pod asking `gpus` GPUs since `since`, counted in every pool.
    pub fn pending_gpu_pod(
        self,
        namespace: &str,
        name: &str,
        gpus: u32,
        since: Timestamp,
    ) -> SnapshotBuilder {
        self.pending_pod(PendingPod {
            namespace: namespace.into(),
            name: name.into(),
            gpus_needed: gpus,
            pending_since: since,
            uid: format!("uid-{namespace}-{name}"),
            ..PendingPod::default()
        })
    }

    /// A pending pod as given.
    pub fn pending_pod(mut self, pod: PendingPod) -> SnapshotBuilder {
        self.snapshot.pending_pods.push(pod);
        self
    }

    /// An InferenceService's workload as given.
    pub fn workload(mut self, workload: Workload) -> SnapshotBuilder {
        self.snapshot.workloads.push(workload);
        self
    }

    /// OMENative's migration API is configured (`migration.apiVersion: v1`), so execute
    /// mode may request moves. Default: not configured.
    pub fn executor_available(mut self) -> SnapshotBuilder {
        self.snapshot.executor = ExecutorState {
            available: true,
            reason: "OperatorConfigured".into(),
        };
        self
    }

    /// The snapshot: each node's allocated GPUs are those of the pods bound to it
    /// (terminating ones among them also as terminating GPUs), its free GPUs what is left,
    /// and every list sorted.
    pub fn build(mut self) -> ClusterSnapshot {
        self.snapshot.account_node_gpus();
        self.snapshot.normalize();
        self.snapshot
    }
}

impl ClusterSnapshot {
    /// Sets each node's allocated, terminating and free GPUs from the pods bound to it, for
    /// snapshots built in code (the observer takes them from the objects instead).
    pub fn account_node_gpus(&mut self) {
        let mut by_node: BTreeMap<&str, (u32, u32)> = BTreeMap::new();
        for p in &self.pods {
            let (allocated, terminating) = by_node.entry(p.node.as_str()).or_default();
            *allocated = allocated.saturating_add(p.gpus);
            if p.terminating {
                *terminating = terminating.saturating_add(p.gpus);
            }
        }
        for node in &mut self.nodes {
            let (allocated, terminating) =
                by_node.get(node.name.as_str()).copied().unwrap_or_default();
            node.allocated_gpus = allocated;
            node.terminating_gpus = terminating;
            node.free_gpus = node.total_gpus.saturating_sub(allocated);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_unix_secs(1_790_000_000 + secs)
    }

    #[test]
    fn nodes_account_for_the_pods_bound_to_them() {
        let mut gone = Pod {
            namespace: "a".into(),
            name: "leaving".into(),
            node: "n1".into(),
            gpus: 2,
            terminating: true,
            ..Pod::default()
        };
        gone.phase = PodPhase::Running;
        let s = ClusterSnapshot::builder(t(0))
            .gpu_node("n1", "H100", 8)
            .gpu_node("n2", "H100", 4)
            .gpu_pod("a", "x", "n1", 4)
            .pod(gone)
            .gpu_pod("a", "y", "n2", 6)
            .build();
        let n1 = s.node("n1").expect("n1");
        assert_eq!(
            (n1.allocated_gpus, n1.terminating_gpus, n1.free_gpus),
            (6, 2, 2)
        );
        let n2 = s.node("n2").expect("n2");
        assert_eq!(
            (n2.allocated_gpus, n2.free_gpus),
            (6, 0),
            "overcommitted: nothing free, never negative"
        );
    }

    #[test]
    fn the_lists_come_out_sorted_whatever_the_order_in() {
        let a = ClusterSnapshot::builder(t(0))
            .gpu_node("b", "p", 8)
            .gpu_node("a", "p", 8)
            .gpu_pod("ns", "z", "a", 1)
            .gpu_pod("ns", "y", "b", 1)
            .build();
        let b = ClusterSnapshot::builder(t(0))
            .gpu_node("a", "p", 8)
            .gpu_pod("ns", "y", "b", 1)
            .gpu_node("b", "p", 8)
            .gpu_pod("ns", "z", "a", 1)
            .build();
        assert_eq!(a, b);
        assert_eq!(a.pods[0].name, "y");
    }

    #[test]
    fn the_executor_is_there_only_when_said() {
        assert!(!ClusterSnapshot::builder(t(0)).build().executor.available);
        let s = ClusterSnapshot::builder(t(0)).executor_available().build();
        assert!(s.executor.available);
        assert_eq!(s.observed_at, t(0));
    }
}
