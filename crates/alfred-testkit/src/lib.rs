//! Test and benchmark support: core crates take it as a dev-dependency only (their libraries
//! never use it), the benchmarks as a dependency. It holds the cluster builder the tests share
//! ([`ClusterBuilder`], in [`builder`]) and the one random cluster generator of the benchmarks
//! and tests.
//!
//! [`generate_cluster`]`(nodes, pods, seed)` builds a normalized [`ClusterSnapshot`] with a
//! realistic shape, the same for the same arguments on every machine (a [`SplitMix64`]
//! stream, no `rand`):
//!
//! * 2 or 3 GPU pools (`H100`, `A100`, `L40S`, weighted 6 : 3 : 1), nodes mostly 8-GPU with
//!   some 4/2/1-GPU shapes; ~3 % cordoned, ~2 % preemptible, ~1 % due for maintenance,
//!   ~0.5 % unhealthy; three labels each (product, instance type, hostname);
//! * GPU pods of 1/2/4/8 GPUs weighted toward small ones (45/25/18/12 %), filling the pools
//!   to about 82 % of their GPUs: OMENative InferenceServices (steady Instances, one pod, or
//!   leader + worker for some 8-GPU models, most with a 0-GPU router component), some
//!   RawDeployment ones, a few non-OME GPU jobs;
//! * the rest of the pod budget as 0-GPU pods (system daemons, CPU jobs), which the
//!   snapshot keeps for the scheduler model;
//! * a few workloads unsteady, opted out or cooling down; pending GPU pods of every size
//!   (the placements that found no room, plus fresh arrivals), some attributed to a pool;
//! * executor available (`migration.apiVersion: v1`), `observedAt` fixed.
//!
//! The exact pod count is `pods` (GPU pods are capped at 80 % of it).

#![warn(missing_docs, unreachable_pub)]

pub mod builder;
pub mod parts;
pub mod random;

pub use builder::*;

use std::collections::BTreeMap;

use alfred_model::snapshot::{
    Component, ComponentKind, DeploymentMode, HealthState, Instance, InstanceStatus,
    MigrationState, Node, PendingPod, Pod, PodPhase, PoolAttribution, ReplicaState, Workload,
};
use alfred_model::{ClusterSnapshot, Timestamp};

/// The instant every generated snapshot is observed at (2026-11-29T08:00:00Z).
pub const OBSERVED_AT_SECS: i64 = 1_795_939_200;

/// splitmix64 (Steele, Lea, Flood 2014): a tiny, fixed, seedable PRNG.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A stream from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// True with probability `per_mille / 1000`.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    /// A value drawn by integer weights.
    pub fn weighted<T: Copy>(&mut self, choices: &[(T, u64)]) -> T {
        let total: u64 = choices.iter().map(|(_, w)| w).sum();
        let mut x = self.below(total);
        for (v, w) in choices {
            if x < *w {
                return *v;
            }
            x -= w;
        }
        choices[choices.len() - 1].0
    }
}

/// xorshift64 (Marsaglia 2003, shifts 13, 7, 17): the stream the hand-rolled random
/// clusters of the tests and benchmarks draw from, kept so their clusters stay the same.
#[derive(Debug, Clone)]
pub struct XorShift64(u64);

impl XorShift64 {
    /// A stream from a non-zero state (0 would stay 0 forever).
    pub fn new(state: u64) -> Self {
        Self(state)
    }

    /// The next state, which is also the output.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// The next state reduced to `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

const POOLS: [(&str, u64); 3] = [("H100", 6), ("A100", 3), ("L40S", 1)];
const NODE_SIZES: [(u32, u64); 4] = [(8, 75), (4, 12), (2, 8), (1, 5)];
const POD_SIZES: [(u32, u64); 4] = [(1, 45), (2, 25), (4, 18), (8, 12)];

fn steady_status(pods: i64) -> InstanceStatus {
    parts::steady_status(pods, "rev-1")
}

fn steady_replica(name: String, replicas: i64) -> ReplicaState {
    parts::steady_replica(&name, replicas, "rev-1")
}

struct Builder {
    rng: SplitMix64,
    snap: ClusterSnapshot,
    /// Node indices per pool.
    by_pool: Vec<Vec<usize>>,
    pool_weights: Vec<(usize, u64)>,
    pod_budget: usize,
    pending_budget: usize,
}

impl Builder {
    fn bind(&mut self, mut pod: Pod, node: usize) -> String {
        let n = &mut self.snap.nodes[node];
        n.allocated_gpus += pod.gpus;
        n.free_gpus = n.total_gpus.saturating_sub(n.allocated_gpus);
        pod.node = n.name.clone();
        let key = format!("{}/{}", pod.namespace, pod.name);
        self.snap.pods.push(pod);
        self.pod_budget = self.pod_budget.saturating_sub(1);
        key
    }

    /// A node of `pool` with `gpus` free, by random probes (None when crowded).
    fn find_room(&mut self, pool: usize, gpus: u32) -> Option<usize> {
        let nodes = &self.by_pool[pool];
        for _ in 0..24 {
            let i = nodes[self.rng.below(nodes.len() as u64) as usize];
            if self.snap.nodes[i].free_gpus >= gpus {
                return Some(i);
            }
        }
        None
    }

    fn pending(&mut self, ns: &str, name: String, gpus: u32, pool: usize, isvc: Option<String>) {
        if self.pending_budget == 0 {
            return;
        }
        self.pending_budget -= 1;
        let minutes = self.rng.below(90) as i64;
        let pools = if self.rng.chance(400) {
            PoolAttribution::Pools(vec![POOLS[pool].0.to_string()])
        } else {
            PoolAttribution::Any
        };
        self.snap.pending_pods.push(PendingPod {
            namespace: ns.into(),
            name,
            gpus_needed: gpus,
            isvc,
            pending_since: Timestamp::from_unix_secs(OBSERVED_AT_SECS - minutes * 60 - 7),
            pools,
            ..PendingPod::default()
        });
    }

    fn ome_pod(ns: &str, name: String, isvc: &str, component: &str, gpus: u32) -> Pod {
        let mut labels = BTreeMap::new();
        labels.insert("ome.io/inferenceservice".to_string(), isvc.to_string());
        labels.insert("component".to_string(), component.to_string());
        Pod {
            namespace: ns.into(),
            name,
            gpus,
            phase: PodPhase::Running,
            ready: true,
            ome: true,
            labels,
            ..Pod::default()
        }
    }

    /// One InferenceService; returns the GPUs it placed.
    fn workload(&mut self, w: usize) -> u64 {
        let ns = format!("team-{:02}", self.rng.below(30));
        let isvc = format!("isvc-{w:06}");
        let pool = self.rng.weighted(&self.pool_weights);
        let gpus = self.rng.weighted(&POD_SIZES);
        let raw = self.rng.chance(100);
        let replicas = 1 + self.rng.below(6) as u32;
        let pods_per_instance = if gpus == 8 && self.rng.chance(150) {
            2
        } else {
            1
        };
        let mut placed = 0u64;
        let mut instances = Vec::new();
        for idx in 0..replicas {
            if self.pod_budget < pods_per_instance as usize + 1 {
                break;
            }
            let mut keys = Vec::new();
            let mut nodes = BTreeMap::new();
            for ord in 0..pods_per_instance {
                let name = format!("{isvc}-engine-{idx}-{ord}");
                match self.find_room(pool, gpus) {
                    Some(node) => {
                        let pod = Self::ome_pod(&ns, name, &isvc, "engine", gpus);
                        let key = self.bind(pod, node);
                        *nodes
                            .entry(self.snap.nodes[node].name.clone())
                            .or_insert(0u32) += 1;
                        keys.push(key);
                        placed += u64::from(gpus);
                    }
                    None => self.pending(&ns, name, gpus, pool, Some(isvc.clone())),
                }
            }
            if keys.is_empty() {
                continue;
            }
            let n = keys.len() as i64;
            keys.sort();
            instances.push(Instance {
                index: idx,
                total_gpus: gpus * keys.len() as u32,
                ready_pods: keys.len() as u32,
                pods: keys,
                nodes,
                any_terminating: false,
                status: (!raw).then(|| steady_status(n)),
            });
        }
        if instances.is_empty() {
            return placed;
        }
        let mut components = vec![Component {
            kind: ComponentKind::Engine,
            mode: if raw {
                DeploymentMode::RawDeployment
            } else {
                DeploymentMode::OMENative
            },
            replica: (!raw)
                .then(|| steady_replica(format!("{isvc}-engine"), instances.len() as i64)),
            observation_invalid: None,
            pods: instances
                .iter()
                .flat_map(|i| i.pods.iter().cloned())
                .collect(),
            instances,
            scheduler_name: String::new(),
            topology_key: String::new(),
        }];
        if !raw && self.rng.chance(600) && self.pod_budget > 2 {
            // A 0-GPU router, anywhere.
            let routers = 1 + self.rng.below(2) as u32;
            let mut r_instances = Vec::new();
            for idx in 0..routers {
                let node = self.rng.below(self.snap.nodes.len() as u64) as usize;
                let pod = Self::ome_pod(&ns, format!("{isvc}-router-{idx}-0"), &isvc, "router", 0);
                let key = self.bind(pod, node);
                let mut nodes = BTreeMap::new();
                nodes.insert(self.snap.nodes[node].name.clone(), 1);
                r_instances.push(Instance {
                    index: idx,
                    pods: vec![key],
                    nodes,
                    total_gpus: 0,
                    ready_pods: 1,
                    any_terminating: false,
                    status: Some(steady_status(1)),
                });
            }
            components.push(Component {
                kind: ComponentKind::Router,
                mode: DeploymentMode::OMENative,
                replica: Some(steady_replica(
                    format!("{isvc}-router"),
                    r_instances.len() as i64,
                )),
                observation_invalid: None,
                pods: r_instances
                    .iter()
                    .flat_map(|i| i.pods.iter().cloned())
                    .collect(),
                instances: r_instances,
                scheduler_name: String::new(),
                topology_key: String::new(),
            });
        }
        let mut workload = Workload {
            namespace: ns,
            name: isvc,
            uid: format!("uid-{w}"),
            generation: 1,
            components,
            migration: MigrationState {
                valid: true,
                ..MigrationState::default()
            },
            ..Workload::default()
        };
        match self.rng.below(1000) {
            0..=29 => workload.settings.movable = false,
            30..=59 => {
                let ago = self.rng.below(120) as i64;
                workload.migration.last_migration =
                    Some(Timestamp::from_unix_secs(OBSERVED_AT_SECS - ago * 60));
            }
            60..=79 => {
                if let Some(s) = workload.components[0]
                    .instances
                    .first_mut()
                    .and_then(|i| i.status.as_mut())
                {
                    s.phase = "Updating".into();
                }
            }
            _ => {}
        }
        self.snap.workloads.push(workload);
        placed
    }
}

/// A deterministic synthetic cluster of exactly `nodes` nodes and `pods` bound pods (plus
/// pending pods), normalized. See the crate docs for its shape.
pub fn generate_cluster(nodes: usize, pods: usize, seed: u64) -> ClusterSnapshot {
    let mut rng = SplitMix64::new(seed);
    let npools = if nodes < 3 {
        1
    } else {
        2 + rng.below(2) as usize
    };
    let pool_weights: Vec<(usize, u64)> = (0..npools).map(|i| (i, POOLS[i].1)).collect();
    let mut snap = ClusterSnapshot {
        observed_at: Timestamp::from_unix_secs(OBSERVED_AT_SECS),
        ..ClusterSnapshot::default()
    };
    snap.executor.available = true;
    snap.executor.reason = "OperatorConfigured".into();
    let mut by_pool = vec![Vec::new(); npools];
    for i in 0..nodes.max(1) {
        let pool = if i < npools {
            i
        } else {
            rng.weighted(&pool_weights)
        };
        let total = rng.weighted(&NODE_SIZES);
        let name = format!("node-{i:06}");
        let mut labels = BTreeMap::new();
        labels.insert("nvidia.com/gpu.product".into(), POOLS[pool].0.to_string());
        labels.insert(
            "node.kubernetes.io/instance-type".into(),
            format!("BM.GPU.{}.{total}", POOLS[pool].0),
        );
        labels.insert("kubernetes.io/hostname".into(), name.clone());
        let mut node = Node {
            uid: format!("node-uid-{i}"),
            pool: Some(POOLS[pool].0.to_string()),
            gpu_resource: "nvidia.com/gpu".into(),
            total_gpus: total,
            free_gpus: total,
            ready: true,
            labels,
            name,
            ..Node::default()
        };
        match rng.below(1000) {
            0..=29 => node.cordoned = true,
            30..=49 => node.preemptible = true,
            50..=59 => node.maintenance.requested = true,
            60..=64 => node.health.state = HealthState::Unhealthy,
            _ => {}
        }
        by_pool[pool].push(snap.nodes.len());
        snap.nodes.push(node);
    }
    let capacity: u64 = snap.nodes.iter().map(|n| u64::from(n.total_gpus)).sum();
    let mut b = Builder {
        rng,
        snap,
        by_pool,
        pool_weights,
        pod_budget: pods,
        pending_budget: (pods / 100).max(4),
    };
    let gpu_pod_cap = pods * 8 / 10;
    let target = capacity * 82 / 100;
    let mut used = 0u64;
    let mut w = 0usize;
    let mut stalls = 0;
    while used < target && pods - b.pod_budget < gpu_pod_cap && stalls < 64 {
        let placed = b.workload(w);
        stalls = if placed == 0 { stalls + 1 } else { 0 };
        used += placed;
        w += 1;
        // Non-OME GPU jobs now and then.
        if b.rng.chance(50) && b.pod_budget > 0 {
            let pool = b.rng.weighted(&b.pool_weights);
            let g = b.rng.weighted(&POD_SIZES);
            if let Some(node) = b.find_room(pool, g) {
                let pod = Pod {
                    namespace: "batch".into(),
                    name: format!("train-{w:06}"),
                    gpus: g,
                    phase: PodPhase::Running,
                    ready: true,
                    ..Pod::default()
                };
                b.bind(pod, node);
                used += u64::from(g);
            }
        }
    }
    // Fresh pending arrivals of every size, including sizes above a node.
    for i in 0..(pods / 500).max(2) {
        let pool = b.rng.weighted(&b.pool_weights);
        let g = b
            .rng
            .weighted(&[(1u32, 3), (2, 3), (3, 1), (4, 3), (8, 4), (16, 1)]);
        b.pending("team-queue", format!("arrival-{i:06}"), g, pool, None);
    }
    // The rest: 0-GPU pods (daemons, CPU jobs).
    let mut i = 0usize;
    while b.pod_budget > 0 {
        let node = b.rng.below(b.snap.nodes.len() as u64) as usize;
        let ns = ["kube-system", "monitoring", "cpu-jobs", "logging"][i % 4];
        let pod = Pod {
            namespace: ns.into(),
            name: format!("{ns}-pod-{i:07}"),
            phase: PodPhase::Running,
            ready: true,
            ..Pod::default()
        };
        b.bind(pod, node);
        i += 1;
    }
    let mut snap = b.snap;
    snap.normalize();
    // Re-allocate in list order, as a snapshot builder does: the API server lists objects
    // sorted by namespace/name, so the builder's strings lie in that order on the heap.
    // (Sorting moved the structs but left their strings where generation put them.)
    snap.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_is_deterministic_and_sized() {
        let a = generate_cluster(100, 1000, 42);
        let b = generate_cluster(100, 1000, 42);
        assert_eq!(a, b);
        assert_eq!(a.nodes.len(), 100);
        assert_eq!(a.pods.len(), 1000);
        assert!(!a.pending_pods.is_empty());
        assert!(a.pools().len() >= 2);
        for n in &a.nodes {
            assert!(n.allocated_gpus <= n.total_gpus, "{}", n.name);
        }
        let gpu_pods = a.pods.iter().filter(|p| p.gpus > 0).count();
        assert!(gpu_pods > 100, "{gpu_pods}");
        assert_ne!(a, generate_cluster(100, 1000, 43));
    }

    #[test]
    fn xorshift_is_the_classic_13_7_17_stream() {
        let mut x = XorShift64::new(1);
        // 1 ^ 1<<13 = 8193; ^ >>7 = 8193 ^ 64 = 8257; ^ <<17 = 8257 ^ 1082261504.
        assert_eq!(x.next_u64(), 1_082_269_761);
        let mut y = XorShift64::new(1);
        y.next_u64();
        let next = y.clone().next_u64();
        assert_eq!(x.below(10), next % 10);
    }
}
