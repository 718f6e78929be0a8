//! The cluster builder the tests share: small, hand-written clusters, one call per node, pod,
//! workload or pending pod.
//!
//! [`ClusterBuilder`] makes consistent snapshots: node GPU accounting is recomputed from
//! the pods at [`ClusterBuilder::build`], OMENative workloads come out steady (every
//! eligibility check of docs/design-policies.md#omenative-eligibility passes) unless a test breaks
//! them on purpose, and the executor is available (`migration.apiVersion: v1`) unless switched off.
//!
//! ```
//! use alfred_testkit::ClusterBuilder;
//!
//! let snap = ClusterBuilder::new()
//!     .node("n1", "H100", 8)
//!     .node("n2", "H100", 8)
//!     .omenative("prod", "a", &[&[("n1", 2)]])
//!     .pending("prod", "big", 8, 20)
//!     .build();
//! ```

use std::collections::BTreeMap;

use alfred_model::Timestamp;
use alfred_model::snapshot::{
    ClusterSnapshot, Component, ComponentKind, DeploymentMode, ExecutorState, HealthState,
    Instance, MigrationState, ModelInfo, ModelRef, Node, NodeCondition, PendingPod, Pod, PodPhase,
    PoolAttribution, ReplicaState, Runner, Workload,
};

/// The default snapshot time: Saturday 2026-11-28 12:00:00 UTC.
pub fn t0() -> Timestamp {
    Timestamp::parse_rfc3339("2026-11-28T12:00:00Z").unwrap_or(Timestamp::EPOCH)
}

/// Parses an RFC 3339 time (test helper; the epoch on a typo).
pub fn at(text: &str) -> Timestamp {
    Timestamp::parse_rfc3339(text).unwrap_or(Timestamp::EPOCH)
}

/// Builds a [`ClusterSnapshot`] step by step.
#[derive(Debug, Clone)]
pub struct ClusterBuilder {
    snap: ClusterSnapshot,
    /// Whether [`ClusterBuilder::build`] leaves the nodes' GPU accounting as set.
    accounting_as_set: bool,
}

impl Default for ClusterBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ClusterBuilder {
    /// An empty cluster observed at [`t0`], executor available.
    pub fn new() -> Self {
        ClusterBuilder {
            snap: ClusterSnapshot {
                observed_at: t0(),
                executor: ExecutorState {
                    available: true,
                    reason: "OperatorConfigured".into(),
                },
                ..ClusterSnapshot::default()
            },
            accounting_as_set: false,
        }
    }

    /// Keeps every node's allocated and free GPUs as set (with [`ClusterBuilder::free_gpus`]
    /// or [`ClusterBuilder::with_node`]) instead of recomputing them from the bound pods at
    /// [`ClusterBuilder::build`]. The arbiter judges claims against the free GPUs a node
    /// reports, so its tests set them apart from what runs there.
    pub fn keep_node_accounting(mut self) -> Self {
        self.accounting_as_set = true;
        self
    }

    /// Sets a node's free GPUs (the rest of its GPUs allocated); only lasts with
    /// [`ClusterBuilder::keep_node_accounting`].
    pub fn free_gpus(self, name: &str, free: u32) -> Self {
        self.with_node(name, |n| {
            n.free_gpus = free.min(n.total_gpus);
            n.allocated_gpus = n.total_gpus - n.free_gpus;
        })
    }

    /// Applies `f` to the builder in place, for edits through
    /// [`ClusterBuilder::node_mut`], [`ClusterBuilder::workload_mut`] and
    /// [`ClusterBuilder::pod_mut`] inside a chain.
    pub fn edit(mut self, f: impl FnOnce(&mut Self)) -> Self {
        f(&mut self);
        self
    }

    /// The snapshot as built so far, to change directly.
    pub fn snapshot_mut(&mut self) -> &mut ClusterSnapshot {
        &mut self.snap
    }

    /// A node already added.
    ///
    /// # Panics
    /// When no node has that name: a test that edits a node it never added is wrong.
    pub fn node_mut(&mut self, name: &str) -> &mut Node {
        match self.snap.nodes.iter_mut().find(|n| n.name == name) {
            Some(n) => n,
            None => panic!("the test cluster has no node {name:?}"),
        }
    }

    /// A workload already added (`ns/name`).
    ///
    /// # Panics
    /// When no workload has that key.
    pub fn workload_mut(&mut self, key: &str) -> &mut Workload {
        match self.snap.workloads.iter_mut().find(|w| w.key() == key) {
            Some(w) => w,
            None => panic!("the test cluster has no workload {key:?}"),
        }
    }

    /// A bound pod already added (`ns/name`).
    ///
    /// # Panics
    /// When no bound pod has that key.
    pub fn pod_mut(&mut self, key: &str) -> &mut Pod {
        match self.snap.pods.iter_mut().find(|p| p.key() == key) {
            Some(p) => p,
            None => panic!("the test cluster has no bound pod {key:?}"),
        }
    }

    /// The snapshot time.
    pub fn now(&self) -> Timestamp {
        self.snap.observed_at
    }

    /// Sets the snapshot time.
    pub fn observed_at(mut self, t: Timestamp) -> Self {
        self.snap.observed_at = t;
        self
    }

    /// Whether `migration.apiVersion: v1` is configured.
    pub fn executor(mut self, available: bool) -> Self {
        self.snap.executor = ExecutorState {
            available,
            reason: if available {
                "OperatorConfigured".into()
            } else {
                String::new()
            },
        };
        self
    }

    /// A ready GPU node of `pool` with `total` GPUs.
    pub fn node(mut self, name: &str, pool: &str, total: u32) -> Self {
        self.snap.nodes.push(Node {
            uid: format!("uid-{name}"),
            ..crate::parts::gpu_node(name, pool, total)
        });
        self
    }

    /// Changes a node already added.
    pub fn with_node(mut self, name: &str, f: impl FnOnce(&mut Node)) -> Self {
        if let Some(n) = self.snap.nodes.iter_mut().find(|n| n.name == name) {
            f(n);
        }
        self
    }

    /// Marks a node `Unhealthy` (`GpuUnhealthy=True`).
    pub fn unhealthy(self, name: &str) -> Self {
        let t = self.now().plus_minutes(-60);
        self.with_node(name, |n| {
            n.health.state = HealthState::Unhealthy;
            n.health.conditions = vec![NodeCondition {
                kind: "GpuUnhealthy".into(),
                status: "True".into(),
                last_transition_time: Some(t),
            }];
            n.conditions = n.health.conditions.clone();
        })
    }

    /// Marks a node due for maintenance by the trigger `trigger`.
    pub fn maintenance(self, name: &str, trigger: &str) -> Self {
        self.with_node(name, |n| {
            n.maintenance.requested = true;
            n.maintenance.triggers.push(trigger.into());
            n.maintenance.triggers.sort();
        })
    }

    /// Marks a node preemptible.
    pub fn preemptible(self, name: &str) -> Self {
        self.with_node(name, |n| {
            n.preemptible = true;
            n.labels
                .insert("node.kubernetes.io/preemptible".into(), "true".into());
        })
    }

    /// A running, ready pod on `node` (`isvc`: its InferenceService label, component `engine`).
    pub fn pod(ns: &str, name: &str, node: &str, gpus: u32, isvc: Option<&str>) -> Pod {
        let mut labels = BTreeMap::new();
        if let Some(isvc) = isvc {
            labels.insert("ome.io/inferenceservice".to_string(), isvc.to_string());
            labels.insert("component".to_string(), "engine".to_string());
        }
        Pod {
            namespace: ns.into(),
            name: name.into(),
            node: node.into(),
            gpus,
            phase: PodPhase::Running,
            ready: true,
            ome: isvc.is_some(),
            uid: format!("uid-{ns}-{name}"),
            labels,
            ..Pod::default()
        }
    }

    fn add_workload(
        &mut self,
        ns: &str,
        name: &str,
        mode: DeploymentMode,
        insts: &[&[(&str, u32)]],
    ) {
        let mut instances = Vec::new();
        let mut all = Vec::new();
        for (i, pods) in insts.iter().enumerate() {
            let mut inst = Instance {
                index: u32::try_from(i).unwrap_or(u32::MAX),
                ..Instance::default()
            };
            for (j, (node, gpus)) in pods.iter().enumerate() {
                let pname = format!("{name}-engine-{i}-{j}");
                self.snap
                    .pods
                    .push(Self::pod(ns, &pname, node, *gpus, Some(name)));
                let key = format!("{ns}/{pname}");
                inst.pods.push(key.clone());
                all.push(key);
                *inst.nodes.entry((*node).to_string()).or_default() += 1;
                inst.total_gpus += gpus;
                inst.ready_pods += 1;
            }
            inst.pods.sort();
            if mode == DeploymentMode::OMENative {
                let n = i64::try_from(pods.len()).unwrap_or(i64::MAX);
                inst.status = Some(crate::parts::steady_status(n, "rev-1"));
            }
            instances.push(inst);
        }
        all.sort();
        let replica = (mode == DeploymentMode::OMENative).then(|| {
            let n = i64::try_from(insts.len()).unwrap_or(i64::MAX);
            let size = insts.first().map(|p| p.len()).unwrap_or(1);
            let runners = if size <= 1 {
                vec![Runner {
                    name: "default".into(),
                    size: 1,
                    ..Runner::default()
                }]
            } else {
                vec![
                    Runner {
                        name: "leader".into(),
                        size: 1,
                        ..Runner::default()
                    },
                    Runner {
                        name: "worker".into(),
                        size: u32::try_from(size - 1).unwrap_or(1),
                        ..Runner::default()
                    },
                ]
            };
            ReplicaState {
                uid: format!("uid-ir-{ns}-{name}"),
                runners,
                ..crate::parts::steady_replica(&format!("{name}-engine"), n, "rev-1")
            }
        });
        self.snap.workloads.push(Workload {
            namespace: ns.into(),
            name: name.into(),
            uid: format!("uid-isvc-{ns}-{name}"),
            generation: 1,
            components: vec![Component {
                kind: ComponentKind::Engine,
                mode,
                replica,
                observation_invalid: None,
                instances,
                pods: all,
                scheduler_name: String::new(),
                topology_key: String::new(),
            }],
            migration: MigrationState {
                valid: true,
                ..MigrationState::default()
            },
            ..Workload::default()
        });
    }

    /// A steady OMENative InferenceService `ns/name` whose engine has one Instance per
    /// entry of `instances`, each a list of `(node, gpus)` pods.
    pub fn omenative(mut self, ns: &str, name: &str, instances: &[&[(&str, u32)]]) -> Self {
        self.add_workload(ns, name, DeploymentMode::OMENative, instances);
        self
    }

    /// A RawDeployment InferenceService: one Instance per pod.
    pub fn raw(mut self, ns: &str, name: &str, pods: &[(&str, u32)]) -> Self {
        let insts: Vec<&[(&str, u32)]> = pods.iter().map(std::slice::from_ref).collect();
        self.add_workload(ns, name, DeploymentMode::RawDeployment, &insts);
        self
    }

    /// A MultiNode (LWS) InferenceService: one Instance holding every pod.
    pub fn multinode(mut self, ns: &str, name: &str, pods: &[(&str, u32)]) -> Self {
        self.add_workload(ns, name, DeploymentMode::MultiNode, &[pods]);
        self
    }

    /// A non-OME GPU pod (a notebook, a job).
    pub fn occupant(mut self, ns: &str, name: &str, node: &str, gpus: u32) -> Self {
        self.snap.pods.push(Self::pod(ns, name, node, gpus, None));
        self
    }

    /// A bound pod of raw fields (for unjoined OME pods and other odd cases).
    pub fn bound_pod(mut self, pod: Pod) -> Self {
        self.snap.pods.push(pod);
        self
    }

    /// A pending GPU pod waiting `minutes` (unattributed: counts in every pool).
    pub fn pending(mut self, ns: &str, name: &str, gpus: u32, minutes: i64) -> Self {
        let since = self.now().plus_minutes(-minutes);
        self.snap.pending_pods.push(PendingPod {
            namespace: ns.into(),
            name: name.into(),
            gpus_needed: gpus,
            isvc: None,
            pending_since: since,
            pools: PoolAttribution::Any,
            ..PendingPod::default()
        });
        self
    }

    /// Changes a pending pod already added.
    pub fn with_pending(mut self, key: &str, f: impl FnOnce(&mut PendingPod)) -> Self {
        if let Some(p) = self.snap.pending_pods.iter_mut().find(|p| p.key() == key) {
            f(p);
        }
        self
    }

    /// Changes a workload already added (`ns/name`).
    pub fn workload(mut self, key: &str, f: impl FnOnce(&mut Workload)) -> Self {
        if let Some(w) = self.snap.workloads.iter_mut().find(|w| w.key() == key) {
            f(w);
        }
        self
    }

    /// Gives a workload a ClusterBaseModel `model` resolved as `info`.
    pub fn model(mut self, key: &str, model: &str, info: ModelInfo) -> Self {
        let r = ModelRef {
            kind: "ClusterBaseModel".into(),
            namespace: String::new(),
            name: model.into(),
        };
        self.snap.models.insert(r.key(), info);
        self.workload(key, |w| w.model = Some(r))
    }

    /// Gives a workload a model that is missing from the snapshot (→ `ModelUnresolved`).
    pub fn missing_model(self, key: &str, model: &str) -> Self {
        self.workload(key, |w| {
            w.model = Some(ModelRef {
                kind: "ClusterBaseModel".into(),
                namespace: String::new(),
                name: model.into(),
            })
        })
    }

    /// Changes the snapshot directly.
    pub fn with(mut self, f: impl FnOnce(&mut ClusterSnapshot)) -> Self {
        f(&mut self.snap);
        self
    }

    /// The snapshot: node GPU accounting (allocated, terminating, free) recomputed from the
    /// bound pods unless [`ClusterBuilder::keep_node_accounting`], lists normalized.
    pub fn build(mut self) -> ClusterSnapshot {
        if self.accounting_as_set {
            self.snap.normalize();
            return self.snap;
        }
        self.snap.account_node_gpus();
        self.snap.normalize();
        self.snap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_pod() -> ClusterBuilder {
        ClusterBuilder::new()
            .node("n1", "H100", 8)
            .occupant("batch", "job", "n1", 2)
            .free_gpus("n1", 1)
    }

    #[test]
    fn node_accounting_comes_from_the_pods_unless_kept_as_set() {
        let recomputed = one_pod().build();
        assert_eq!(recomputed.nodes[0].free_gpus, 6);
        assert_eq!(recomputed.nodes[0].allocated_gpus, 2);
        let kept = one_pod().keep_node_accounting().build();
        assert_eq!(kept.nodes[0].free_gpus, 1);
        assert_eq!(kept.nodes[0].allocated_gpus, 7);
    }

    #[test]
    fn edits_reach_the_objects_already_added() {
        let snap = one_pod()
            .omenative("prod", "a", &[&[("n1", 1)]])
            .edit(|b| {
                b.node_mut("n1").cordoned = true;
                b.workload_mut("prod/a").settings.movable = false;
                b.pod_mut("batch/job").terminating = true;
            })
            .build();
        assert!(snap.nodes[0].cordoned);
        assert!(!snap.workloads[0].settings.movable);
        assert_eq!(snap.nodes[0].terminating_gpus, 2);
    }
}
