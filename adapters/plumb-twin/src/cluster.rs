//! One member cluster's infrastructure, second by second: static GPU nodes, one Karpenter
//! NodePool (limit, launch delay, launch failures while its region is short of capacity,
//! consolidation of an empty node after `consolidateAfter`), the workload's pods (pending,
//! bound and loading the model, ready), and KEDA's HPA (demand over a per-replica target,
//! the 10 % tolerance, a scale-down stabilisation window, and the floor Plumb's scaler
//! serves, the larger winning).

use std::collections::VecDeque;

use crate::rng::Rng;
use crate::scenario::{ClusterSetup, ModelSetup};

/// Karpenter waits this long after a failed launch before trying again, seconds.
pub const LAUNCH_BACKOFF_SECS: f64 = 60.0;
/// The HPA's tolerance around a ratio of 1.
pub const HPA_TOLERANCE: f64 = 0.1;

/// A GPU node.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Name.
    pub name: String,
    /// Launched by the NodePool (else static).
    pub pool: bool,
    /// Replicas bound to it.
    pub replicas: u32,
    /// Since when it has held no replica (NodePool nodes).
    pub empty_since: Option<f64>,
}

/// A NodeClaim being launched.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// Name (`gpu-<n>`).
    pub name: String,
    /// When it becomes a node, or fails.
    pub done_at: f64,
    /// Whether the launch fails for want of capacity.
    pub fails: bool,
}

/// One replica of the workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Pod {
    /// Name.
    pub name: String,
    /// Its node, once bound.
    pub node: Option<String>,
    /// When it is ready (set when bound: bound time plus the model's load time).
    pub ready_at: Option<f64>,
    /// Ready now.
    pub ready: bool,
    /// Pending with no node launching for it (`PodScheduled=False/Unschedulable` with
    /// nothing arriving).
    pub unschedulable: bool,
}

/// One cluster.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Its setup.
    pub setup: ClusterSetup,
    /// Nodes, static first.
    pub nodes: Vec<Node>,
    /// NodeClaims in flight.
    pub claims: Vec<Claim>,
    /// Failed launches (NodeClaim name, time), kept ten minutes.
    pub failures: VecDeque<(String, f64)>,
    /// The workload's pods, oldest first.
    pub pods: Vec<Pod>,
    /// The Deployment's replicas (the HPA's output).
    pub desired: u32,
    /// The HPA holds a scale-down (its stabilised recommendation is above the current one).
    pub scale_down_held: bool,
    recommendations: VecDeque<(f64, u32)>,
    backoff_until: f64,
    next_pod: u64,
    next_node: u64,
    rng: Rng,
}

impl Cluster {
    /// A cluster with its static nodes and `initial` ready replicas bound to them (then to
    /// pre-launched NodePool nodes).
    pub fn new(setup: ClusterSetup, model: &ModelSetup, initial: u32, rng: Rng) -> Cluster {
        let mut c = Cluster {
            nodes: (0..setup.static_nodes)
                .map(|i| Node {
                    name: format!("{}-static-{i}", setup.name),
                    pool: false,
                    replicas: 0,
                    empty_since: None,
                })
                .collect(),
            setup,
            claims: Vec::new(),
            failures: VecDeque::new(),
            pods: Vec::new(),
            desired: initial,
            scale_down_held: false,
            recommendations: VecDeque::from([(0.0, initial)]),
            backoff_until: 0.0,
            next_pod: 0,
            next_node: 0,
            rng,
        };
        let per_node = model.gpus_per_node / model.gpus_per_replica.max(1);
        let room = c.setup.static_nodes * per_node;
        let pool_nodes = initial.saturating_sub(room).div_ceil(per_node.max(1));
        let max_pool_nodes = c.setup.pool_gpus / model.gpus_per_node.max(1);
        for _ in 0..pool_nodes.min(max_pool_nodes) {
            c.add_pool_node(0.0);
        }
        c.resize(initial);
        c.schedule(0.0, model);
        for p in &mut c.pods {
            if p.node.is_some() {
                p.ready = true;
                p.ready_at = Some(0.0);
            }
        }
        c
    }

    fn add_pool_node(&mut self, t: f64) {
        let name = format!("{}-gpu-{}", self.setup.name, self.next_node);
        self.next_node += 1;
        self.nodes.push(Node {
            name,
            pool: true,
            replicas: 0,
            empty_since: Some(t),
        });
    }

    /// Ready replicas.
    pub fn ready(&self) -> u32 {
        u32::try_from(self.pods.iter().filter(|p| p.ready).count()).unwrap_or(u32::MAX)
    }

    /// Replicas bound to a node (ready or loading).
    pub fn bound(&self) -> u32 {
        u32::try_from(self.pods.iter().filter(|p| p.node.is_some()).count()).unwrap_or(u32::MAX)
    }

    /// GPUs of NodePool nodes and claims (what the NodePool's limit counts).
    pub fn pool_gpus_used(&self, model: &ModelSetup) -> u32 {
        let nodes = self.nodes.iter().filter(|n| n.pool).count() + self.claims.len();
        u32::try_from(nodes).unwrap_or(u32::MAX) * model.gpus_per_node
    }

    /// GPUs of NodePool nodes no replica uses.
    pub fn idle_pool_gpus(&self, model: &ModelSetup) -> u32 {
        self.nodes
            .iter()
            .filter(|n| n.pool)
            .map(|n| {
                model
                    .gpus_per_node
                    .saturating_sub(n.replicas * model.gpus_per_replica)
            })
            .sum()
    }

    /// One second of infrastructure at `t`: launches land or fail, pods bind and load,
    /// Karpenter launches for pods nothing holds, empty NodePool nodes are consolidated.
    pub fn tick(&mut self, t: f64, model: &ModelSetup, short_of_capacity: bool) {
        self.land_claims(t);
        self.schedule(t, model);
        for p in &mut self.pods {
            if !p.ready && p.ready_at.is_some_and(|r| r <= t) {
                p.ready = true;
            }
        }
        self.provision(t, model, short_of_capacity);
        self.consolidate(t, model);
        while self.failures.front().is_some_and(|(_, at)| t - at > 600.0) {
            self.failures.pop_front();
        }
    }

    fn land_claims(&mut self, t: f64) {
        let (done, waiting): (Vec<Claim>, Vec<Claim>) =
            self.claims.drain(..).partition(|c| c.done_at <= t);
        self.claims = waiting;
        for c in done {
            if c.fails {
                self.failures.push_back((c.name, t));
                self.backoff_until = t + LAUNCH_BACKOFF_SECS;
            } else {
                self.add_pool_node(t);
            }
        }
    }

    /// Binds pending pods to nodes with a free slot, static nodes first, then by name order.
    fn schedule(&mut self, t: f64, model: &ModelSetup) {
        let per_node = model.gpus_per_node / model.gpus_per_replica.max(1);
        for i in 0..self.pods.len() {
            if self.pods[i].node.is_some() {
                continue;
            }
            let Some(n) = self.nodes.iter_mut().find(|n| n.replicas < per_node) else {
                break;
            };
            n.replicas += 1;
            n.empty_since = None;
            let load = self.rng.between(model.load_secs.0, model.load_secs.1);
            let p = &mut self.pods[i];
            p.node = Some(n.name.clone());
            p.ready_at = Some(t + load);
            p.unschedulable = false;
        }
    }

    /// Karpenter: launches nodes for pending pods no node or claim in flight holds, within
    /// the NodePool's limit and outside its back-off after a failure.
    fn provision(&mut self, t: f64, model: &ModelSetup, short_of_capacity: bool) {
        let per_node = model.gpus_per_node / model.gpus_per_replica.max(1);
        let pending = self.pods.iter().filter(|p| p.node.is_none()).count();
        let pending = u32::try_from(pending).unwrap_or(u32::MAX);
        let in_flight = u32::try_from(self.claims.len()).unwrap_or(u32::MAX) * per_node;
        let covered = in_flight;
        if self.setup.pool_gpus > 0 && pending > covered && t >= self.backoff_until {
            let want = (pending - covered).div_ceil(per_node.max(1));
            let left = self
                .setup
                .pool_gpus
                .saturating_sub(self.pool_gpus_used(model))
                / model.gpus_per_node.max(1);
            for _ in 0..want.min(left) {
                let name = format!("gpu-{}-{}", self.setup.name, self.next_node);
                self.next_node += 1;
                let done_at = if short_of_capacity {
                    t + self
                        .rng
                        .between(model.launch_fail_secs.0, model.launch_fail_secs.1)
                } else {
                    t + self
                        .rng
                        .lognormal(model.launch_median_secs, model.launch_sigma)
                };
                self.claims.push(Claim {
                    name,
                    done_at,
                    fails: short_of_capacity,
                });
            }
        }
        // The scheduler marks every pod it cannot place `PodScheduled=False/Unschedulable`,
        // those a NodeClaim is launching for included (Karpenter acts on exactly these).
        for p in self.pods.iter_mut().filter(|p| p.node.is_none()) {
            p.unschedulable = true;
        }
    }

    fn consolidate(&mut self, t: f64, model: &ModelSetup) {
        let after = model.consolidate_after_secs;
        for n in &mut self.nodes {
            if n.pool && n.replicas == 0 && n.empty_since.is_none() {
                n.empty_since = Some(t);
            }
        }
        self.nodes.retain(|n| {
            !(n.pool && n.replicas == 0 && n.empty_since.is_some_and(|e| t - e >= after))
        });
    }

    /// The HPA's sync at `t`: demand (requests/s, as the query reads it) over the target per
    /// replica, within the tolerance of the current count keeping it; the served floor; the
    /// larger, within `[minReplicaCount, maxReplicaCount]`; scale-down to the highest
    /// recommendation of the stabilisation window.
    pub fn autoscale(&mut self, t: f64, model: &ModelSetup, demand: f64, floor: u32) {
        let current = self.desired.max(1);
        let ratio = demand / (f64::from(current) * model.target_per_replica);
        let by_demand = if (ratio - 1.0).abs() <= HPA_TOLERANCE {
            current
        } else {
            let want = (demand / model.target_per_replica).ceil();
            if want.is_finite() && want > 0.0 {
                want.min(f64::from(u32::MAX)) as u32
            } else {
                0
            }
        };
        let rec = by_demand
            .max(floor)
            .clamp(self.setup.min_replicas, self.setup.max_replicas.max(1));
        self.recommendations.push_back((t, rec));
        let window = model.stabilization_secs as f64;
        while self
            .recommendations
            .front()
            .is_some_and(|(at, _)| t - at > window)
        {
            self.recommendations.pop_front();
        }
        let stabilised = self
            .recommendations
            .iter()
            .map(|(_, r)| *r)
            .max()
            .unwrap_or(rec);
        let next = if rec >= self.desired {
            rec
        } else {
            stabilised.min(self.desired)
        };
        self.scale_down_held = next > rec;
        self.resize(next);
    }

    /// Sets the Deployment's replicas: new pods are pending; removed ones go pending first,
    /// then loading, then the newest ready.
    pub fn resize(&mut self, replicas: u32) {
        self.desired = replicas;
        while self.pods.len() < replicas as usize {
            self.pods.push(Pod {
                name: format!("llm-{}-{}", self.setup.name, self.next_pod),
                node: None,
                ready_at: None,
                ready: false,
                unschedulable: false,
            });
            self.next_pod += 1;
        }
        while self.pods.len() > replicas as usize {
            let victim = self
                .pods
                .iter()
                .rposition(|p| p.node.is_none())
                .or_else(|| self.pods.iter().rposition(|p| !p.ready))
                .unwrap_or(self.pods.len() - 1);
            let pod = self.pods.remove(victim);
            if let Some(node) = pod.node
                && let Some(n) = self.nodes.iter_mut().find(|n| n.name == node)
            {
                n.replicas = n.replicas.saturating_sub(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    fn cluster(initial: u32) -> (Cluster, ModelSetup) {
        let s = Scenario::preset("regional-shortage").unwrap();
        let model = s.model.clone();
        let c = Cluster::new(s.clusters[0].clone(), &model, initial, Rng::stream(1, "c"));
        (c, model)
    }

    #[test]
    fn initial_replicas_are_ready_on_static_nodes_then_pool_nodes() {
        let (c, _) = cluster(6);
        assert_eq!(c.ready(), 6);
        assert_eq!(c.nodes.iter().filter(|n| n.pool).count(), 1);
    }

    #[test]
    fn a_pod_beyond_static_room_waits_for_a_launched_node_then_loads() {
        let (mut c, m) = cluster(4);
        c.resize(5);
        c.tick(0.0, &m, false);
        assert_eq!(c.claims.len(), 1);
        assert!(
            c.pods[4].unschedulable,
            "pending for the scheduler, a node launching"
        );
        let mut t = 0.0;
        while c.ready() < 5 {
            t += 1.0;
            c.tick(t, &m, false);
            assert!(t < 1200.0);
        }
        // launch (log-normal around 75 s) plus load (120-240 s)
        assert!(t > 120.0, "{t}");
    }

    #[test]
    fn launches_fail_while_the_region_is_short_and_pods_turn_unschedulable() {
        let (mut c, m) = cluster(4);
        c.resize(6);
        for t in 0..300 {
            c.tick(f64::from(t), &m, true);
        }
        assert_eq!(c.ready(), 4);
        assert!(c.failures.len() >= 3, "{:?}", c.failures);
        c.tick(300.0, &m, true);
        assert!(c.pods.iter().filter(|p| p.unschedulable).count() == 2);
    }

    #[test]
    fn the_pool_limit_bounds_launches() {
        let (mut c, m) = cluster(4);
        c.resize(16);
        c.tick(0.0, &m, false);
        assert_eq!(c.pool_gpus_used(&m), c.setup.pool_gpus);
        assert_eq!(c.claims.len(), 4); // 32 GPUs: four 8-GPU nodes for 8 of the 12 pending
        assert_eq!(c.pods.iter().filter(|p| p.unschedulable).count(), 12);
    }

    #[test]
    fn an_empty_pool_node_is_consolidated_at_once_by_default() {
        let (mut c, m) = cluster(6);
        c.resize(4);
        c.tick(10.0, &m, false);
        assert_eq!(c.nodes.iter().filter(|n| n.pool).count(), 0);
    }

    #[test]
    fn the_hpa_scales_up_at_once_down_after_the_window_and_keeps_the_floor() {
        let (mut c, m) = cluster(4);
        c.autoscale(0.0, &m, 0.0, 0); // the initial count holds through the window
        assert_eq!(c.desired, 4);
        c.autoscale(0.0, &m, 9.0, 0); // 9 / 1.5 = 6
        assert_eq!(c.desired, 6);
        c.autoscale(15.0, &m, 3.0, 0); // wants 2, held by the window
        assert_eq!(c.desired, 6);
        assert!(c.scale_down_held);
        c.autoscale(400.0, &m, 3.0, 0);
        assert_eq!(c.desired, 2);
        c.autoscale(415.0, &m, 3.0, 5);
        assert_eq!(c.desired, 5);
        // within the tolerance the count stays
        c.autoscale(430.0, &m, 5.0 * 1.5 * 1.05, 0);
        assert_eq!(c.desired, 5);
    }
}
