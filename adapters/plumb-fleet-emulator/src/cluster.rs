//! One member cluster's missing controllers for one workload: the ReplicaSet controller (pods
//! to the Deployment's replicas), the scheduler (bind to a node with free GPUs, else mark the
//! pod `Unschedulable`), Karpenter (launch a pool node for pending pods after a delay, within
//! the pool's limit; the first `launch_failures` launches fail with Karpenter's
//! `InsufficientCapacityError` Event on a deleted NodeClaim) and the kubelet (a bound pod turns
//! Ready after the load time), and the Deployment's status.
//!
//! [`plan`] decides from what was observed and the emulator's [`Memory`]; [`ClusterEmulator`]
//! reads the API server, plans, and carries the [`Action`]s out.

mod io;

use std::collections::BTreeMap;
use std::time::Duration;

pub use io::ClusterEmulator;

/// The label every workload pod carries (`app: <deployment>`).
pub const APP_LABEL: &str = "app";
/// Karpenter's pool label on nodes and NodeClaims.
pub const NODEPOOL_LABEL: &str = "karpenter.sh/nodepool";
/// The Event reason Karpenter records on a NodeClaim it could not launch for want of capacity.
pub const LAUNCH_FAILURE_REASON: &str = "InsufficientCapacityError";
/// The GPU resource name.
pub const GPU: &str = "nvidia.com/gpu";

/// What the emulated cluster is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSpec {
    /// The member's name (node names start with it).
    pub cluster: String,
    /// The workload's namespace.
    pub namespace: String,
    /// The workload's Deployment (its pods carry `app: <deployment>`).
    pub deployment: String,
    /// GPUs one replica requests.
    pub gpus_per_replica: u32,
    /// GPUs of one node.
    pub gpus_per_node: u32,
    /// The nodes' `topology.kubernetes.io/region`.
    pub region: String,
    /// The NodePool every node belongs to.
    pub pool: String,
    /// Nodes that exist from the start.
    pub static_nodes: u32,
    /// Nodes the pool may launch beyond the static ones (its limit).
    pub pool_max_nodes: u32,
    /// From a launch to its node.
    pub launch_delay: Duration,
    /// The first this many launches fail.
    pub launch_failures: u32,
    /// From binding to Ready.
    pub load_time: Duration,
}

/// A workload pod as observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodView {
    /// Its name.
    pub name: String,
    /// The node it is bound to.
    pub node: Option<String>,
    /// Whether it is Ready.
    pub ready: bool,
    /// Whether its `PodScheduled` condition says `Unschedulable`.
    pub unschedulable: bool,
}

/// What one tick observed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed {
    /// The Deployment's `spec.replicas`.
    pub replicas: u32,
    /// The workload's pods.
    pub pods: Vec<PodView>,
    /// The pool's nodes, by name.
    pub nodes: Vec<String>,
}

/// One launch in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    /// Its sequence number (0 = the first launch).
    pub index: u32,
    /// When it started (since the emulator started).
    pub started: Duration,
}

/// What the emulator remembers between ticks (what the real controllers keep in objects it
/// does not emulate).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memory {
    /// The next pod's number.
    pub next_pod: u32,
    /// Launches started so far.
    pub launches_started: u32,
    /// Launches in flight.
    pub in_flight: Vec<Launch>,
    /// When each pod was bound.
    pub bound_at: BTreeMap<String, Duration>,
}

/// One thing to carry out, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Create a workload pod.
    CreatePod(String),
    /// Delete a workload pod.
    DeletePod(String),
    /// Bind a pod to a node.
    Bind {
        /// The pod.
        pod: String,
        /// The node.
        node: String,
    },
    /// Mark a pod `PodScheduled=False/Unschedulable`.
    MarkUnschedulable(String),
    /// Mark a bound pod Running and Ready.
    MarkReady(String),
    /// Start a launch: a NodeClaim `<pool>-<index>` appears.
    StartLaunch(Launch),
    /// A launch succeeded: its node appears.
    CreateNode {
        /// The launch.
        launch: Launch,
        /// The new node's name.
        node: String,
    },
    /// A launch failed: Karpenter's Event, then the NodeClaim is deleted.
    LaunchFailed(Launch),
    /// The Deployment's status.
    DeploymentStatus {
        /// Pods that exist.
        replicas: u32,
        /// Pods that are Ready.
        ready: u32,
    },
}

/// A static node's name.
pub fn static_node(spec: &ClusterSpec, i: u32) -> String {
    format!("{}-static-{i}", spec.cluster)
}

/// A launched node's name.
pub fn launched_node(spec: &ClusterSpec, launch: Launch) -> String {
    format!("{}-{}-{}", spec.cluster, spec.pool, launch.index)
}

/// A launch's NodeClaim name (`<pool>-<suffix>`, as Karpenter names them).
pub fn claim_name(spec: &ClusterSpec, launch: Launch) -> String {
    format!("{}-{}", spec.pool, launch.index)
}

/// Which pods to delete when there are `excess` too many: pending ones first, then not ready,
/// then the newest (the ReplicaSet controller's preference, simplified).
fn victims(pods: &[PodView], excess: usize) -> Vec<String> {
    let mut ranked: Vec<&PodView> = pods.iter().collect();
    ranked.sort_by(|a, b| {
        (a.node.is_some(), a.ready)
            .cmp(&(b.node.is_some(), b.ready))
            .then_with(|| pod_number(&b.name).cmp(&pod_number(&a.name)))
    });
    ranked
        .into_iter()
        .take(excess)
        .map(|p| p.name.clone())
        .collect()
}

/// A pod name's trailing number (pods are `<deployment>-<n>`), for newest-first ordering.
fn pod_number(name: &str) -> u32 {
    name.rsplit('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Everything to do this tick, at `now` (since the emulator started).
pub fn plan(spec: &ClusterSpec, seen: &Observed, memory: &Memory, now: Duration) -> Vec<Action> {
    let mut actions = Vec::new();
    let mut pods: Vec<PodView> = seen.pods.clone();
    let want = seen.replicas as usize;
    if pods.len() > want {
        let gone = victims(&pods, pods.len() - want);
        pods.retain(|p| !gone.contains(&p.name));
        actions.extend(gone.into_iter().map(Action::DeletePod));
    }
    let mut next = memory.next_pod;
    while pods.len() < want {
        let name = format!("{}-{next}", spec.deployment);
        next += 1;
        actions.push(Action::CreatePod(name.clone()));
        pods.push(PodView {
            name,
            node: None,
            ready: false,
            unschedulable: false,
        });
    }
    let mut nodes = seen.nodes.clone();
    for launch in &memory.in_flight {
        if launch.started + spec.launch_delay <= now {
            if launch.index < spec.launch_failures {
                actions.push(Action::LaunchFailed(*launch));
            } else {
                let node = launched_node(spec, *launch);
                nodes.push(node.clone());
                actions.push(Action::CreateNode {
                    launch: *launch,
                    node,
                });
            }
        }
    }
    nodes.sort();
    bind(spec, &mut pods, &nodes, &mut actions);
    let pending = pods.iter().filter(|p| p.node.is_none()).count();
    launch(spec, memory, &nodes, pending, now, &mut actions);
    for p in &pods {
        let loaded = memory
            .bound_at
            .get(&p.name)
            .is_some_and(|at| *at + spec.load_time <= now);
        if p.node.is_some() && !p.ready && loaded {
            actions.push(Action::MarkReady(p.name.clone()));
        }
    }
    let ready = pods.iter().filter(|p| p.ready).count()
        + actions
            .iter()
            .filter(|a| matches!(a, Action::MarkReady(_)))
            .count();
    actions.push(Action::DeploymentStatus {
        replicas: u32::try_from(pods.len()).unwrap_or(u32::MAX),
        ready: u32::try_from(ready).unwrap_or(u32::MAX),
    });
    actions
}

/// Binds pending pods (by name) to the first node (by name) with enough free GPUs; marks the
/// rest unschedulable once.
fn bind(spec: &ClusterSpec, pods: &mut [PodView], nodes: &[String], actions: &mut Vec<Action>) {
    let mut free: BTreeMap<&str, u32> = nodes
        .iter()
        .map(|n| (n.as_str(), spec.gpus_per_node))
        .collect();
    for p in pods.iter() {
        if let Some(f) = p.node.as_deref().and_then(|n| free.get_mut(n)) {
            *f = f.saturating_sub(spec.gpus_per_replica);
        }
    }
    for p in pods.iter_mut().filter(|p| p.node.is_none()) {
        let fit = free.iter_mut().find(|(_, f)| **f >= spec.gpus_per_replica);
        match fit {
            Some((node, f)) => {
                *f -= spec.gpus_per_replica;
                p.node = Some((*node).to_owned());
                actions.push(Action::Bind {
                    pod: p.name.clone(),
                    node: (*node).to_owned(),
                });
            }
            None if !p.unschedulable => actions.push(Action::MarkUnschedulable(p.name.clone())),
            None => {}
        }
    }
}

/// Starts launches for `pending` pods the nodes in flight will not hold, within the pool's
/// limit.
fn launch(
    spec: &ClusterSpec,
    memory: &Memory,
    nodes: &[String],
    pending: usize,
    now: Duration,
    actions: &mut Vec<Action>,
) {
    let per_node = (spec.gpus_per_node / spec.gpus_per_replica.max(1)).max(1) as usize;
    let still_flying = memory
        .in_flight
        .iter()
        .filter(|l| l.started + spec.launch_delay > now)
        .count();
    let wanted = pending.div_ceil(per_node).saturating_sub(still_flying);
    let limit = (spec.static_nodes + spec.pool_max_nodes) as usize;
    let room = limit.saturating_sub(nodes.len() + still_flying);
    for i in 0..wanted.min(room) {
        let index = memory.launches_started + u32::try_from(i).unwrap_or(u32::MAX);
        actions.push(Action::StartLaunch(Launch {
            index,
            started: now,
        }));
    }
}

impl Memory {
    /// Remembers what `action`, carried out at `now`, changed.
    pub fn record(&mut self, action: &Action, now: Duration) {
        match action {
            Action::CreatePod(name) => self.next_pod = self.next_pod.max(pod_number(name) + 1),
            Action::DeletePod(name) => {
                self.bound_at.remove(name);
            }
            Action::Bind { pod, .. } => {
                self.bound_at.insert(pod.clone(), now);
            }
            Action::StartLaunch(l) => {
                self.launches_started = self.launches_started.max(l.index + 1);
                self.in_flight.push(*l);
            }
            Action::CreateNode { launch, .. } | Action::LaunchFailed(launch) => {
                self.in_flight.retain(|l| l.index != launch.index);
            }
            Action::MarkUnschedulable(_)
            | Action::MarkReady(_)
            | Action::DeploymentStatus { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests;
