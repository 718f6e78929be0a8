//! The simulated cluster's nodes and the scheduler model used to place arriving pods.
//!
//! Placement reproduces, for the twin's single-pod GPU case, the scoring of `alfred-sim`'s
//! model of the kube-scheduler default profile with one documented change: the
//! `NodeResourcesFit` scoring resources are `cpu`, `memory` and `nvidia.com/gpu` (weight 1
//! each) — [`profile_yaml`] is the exact KubeSchedulerConfiguration. `spread` uses the
//! `LeastAllocated` strategy (the default's), `binpack` uses `MostAllocated`.
//!
//! Score of a feasible node = `NodeResourcesFit` + `NodeResourcesBalancedAllocation`
//! (the other default scorers give every node of the twin the same value: no taints,
//! affinities, topology constraints, ports or images). Ties go to the smallest node name,
//! as in `alfred-sim` (docs/design-simulation.md#default-profile). Pods without CPU/memory requests
//! use the scheduler's non-zero defaults (100m, 200Mi) for `NodeResourcesFit`. The agreement with
//! `alfred-sim` is tested on small clusters (`tests/sim_agreement.rs`).
//!
//! **Gangs** (2×8-GPU Instances, `--gang-share`): the twin's model of the OME gang
//! scheduler is all-or-nothing placement of every pod of the gang inside one topology
//! domain, the pool ([`GANG_TOPOLOGY_KEY`] labels each node with its pool): in each pool
//! the pods are placed one after the other by the same scoring (each on the best node
//! after the previous ones are bound), the pool whose pods' scores sum highest wins (ties
//! to the smallest pool name); when no pool takes all pods, none is placed.
//!
//! Calling `alfred-sim` per arrival would mean converting the whole cluster to Kubernetes
//! objects for each of ~270k pods; this module does the same arithmetic on integers.

use crate::trace::TraceNode;

/// `NodeResourcesFit` strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// `LeastAllocated` (the default profile's): spreads.
    Spread,
    /// `MostAllocated`: packs.
    Binpack,
}

impl Placement {
    /// CLI name.
    pub fn as_str(self) -> &'static str {
        match self {
            Placement::Spread => "spread",
            Placement::Binpack => "binpack",
        }
    }

    /// Parses the CLI name.
    pub fn parse(s: &str) -> Option<Placement> {
        match s {
            "spread" => Some(Placement::Spread),
            "binpack" => Some(Placement::Binpack),
            _ => None,
        }
    }
}

/// The KubeSchedulerConfiguration the twin's placement implements.
pub fn profile_yaml(p: Placement) -> String {
    let strategy = match p {
        Placement::Spread => "LeastAllocated",
        Placement::Binpack => "MostAllocated",
    };
    format!(
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: {strategy}
            resources:
              - name: cpu
                weight: 1
              - name: memory
                weight: 1
              - name: nvidia.com/gpu
                weight: 1
"
    )
}

/// The topology key of gangs: each node carries it with its pool as the value.
pub const GANG_TOPOLOGY_KEY: &str = "twin.alfred.io/pool";

const MAX_NODE_SCORE: i64 = 100;
/// The scheduler's non-zero CPU default (millicores).
pub const NZ_CPU: i64 = 100;
/// The scheduler's non-zero memory default (MiB).
pub const NZ_MEM: i64 = 200;

/// What one pod asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Request {
    /// GPUs.
    pub gpus: u32,
    /// CPU request (millicores; 0 = none).
    pub cpu: i64,
    /// Memory request (MiB; 0 = none).
    pub mem: i64,
    /// Allowed pools as a bit mask over [`World::pools`]; 0 = any.
    pub pools: u64,
}

impl Request {
    fn nz_cpu(&self) -> i64 {
        if self.cpu == 0 { NZ_CPU } else { self.cpu }
    }
    fn nz_mem(&self) -> i64 {
        if self.mem == 0 { NZ_MEM } else { self.mem }
    }
}

/// One node's accounting.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeState {
    /// Name.
    pub name: String,
    /// Index into [`World::pools`].
    pub pool: usize,
    /// Allocatable GPUs.
    pub gpus: u32,
    /// Free GPUs.
    pub free_gpus: u32,
    /// Allocatable CPU (millicores).
    pub cpu: i64,
    /// Allocatable memory (MiB).
    pub mem: i64,
    /// Requested CPU.
    pub req_cpu: i64,
    /// Requested memory.
    pub req_mem: i64,
    /// Requested CPU with non-zero defaults.
    pub nz_cpu: i64,
    /// Requested memory with non-zero defaults.
    pub nz_mem: i64,
    /// Pods bound here (task ids; surge pods too).
    pub pods: u32,
    /// Cordoned (nothing new lands here).
    pub cordoned: bool,
    /// alfred's drain-plan `NoSchedule` taint (no twin pod tolerates it: nothing new lands).
    pub tainted: bool,
    /// The taint's value (the plan id).
    pub taint_value: String,
    /// GPUs of the pending pods nominated to this node: kube-scheduler holds them against
    /// pods of equal or lower priority (every twin pod has priority 0, so against all).
    pub held_gpus: u32,
    /// CPU the nominated pods request.
    pub held_cpu: i64,
    /// Memory the nominated pods request.
    pub held_mem: i64,
}

/// The cluster.
#[derive(Debug, Clone)]
pub struct World {
    /// Nodes sorted by name.
    pub nodes: Vec<NodeState>,
    /// Pool names, sorted.
    pub pools: Vec<String>,
    /// Largest node size per pool (the "node-size request" of stranded GPUs).
    pub pool_node_size: Vec<u32>,
    /// Placement strategy.
    pub placement: Placement,
}

impl World {
    /// Builds the cluster from trace nodes.
    pub fn new(trace: &[TraceNode], placement: Placement) -> World {
        let mut pools: Vec<String> = trace.iter().map(|n| n.model.clone()).collect();
        pools.sort();
        pools.dedup();
        let mut nodes: Vec<NodeState> = trace
            .iter()
            .map(|n| NodeState {
                name: n.name.clone(),
                pool: pools.binary_search(&n.model).unwrap_or(0),
                gpus: n.gpus,
                free_gpus: n.gpus,
                cpu: n.cpu_milli,
                mem: n.memory_mib,
                req_cpu: 0,
                req_mem: 0,
                nz_cpu: 0,
                nz_mem: 0,
                pods: 0,
                cordoned: false,
                tainted: false,
                taint_value: String::new(),
                held_gpus: 0,
                held_cpu: 0,
                held_mem: 0,
            })
            .collect();
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        let mut pool_node_size = vec![0u32; pools.len()];
        for n in &nodes {
            pool_node_size[n.pool] = pool_node_size[n.pool].max(n.gpus);
        }
        World {
            nodes,
            pools,
            pool_node_size,
            placement,
        }
    }

    /// Bit mask of pool names (unknown names are ignored; no known name → no pool).
    pub fn pool_mask(&self, names: &[String]) -> u64 {
        if names.is_empty() {
            return 0;
        }
        let mut m = 0u64;
        for n in names {
            if let Ok(i) = self.pools.binary_search(n) {
                m |= 1 << i;
            }
        }
        if m == 0 { u64::MAX << 63 } else { m }
    }

    /// Total GPUs.
    pub fn total_gpus(&self) -> u64 {
        self.nodes.iter().map(|n| u64::from(n.gpus)).sum()
    }

    /// Allocated GPUs.
    pub fn allocated_gpus(&self) -> u64 {
        self.nodes
            .iter()
            .map(|n| u64::from(n.gpus - n.free_gpus))
            .sum()
    }

    /// Whether `r` fits on node `i`.
    pub fn fits(&self, i: usize, r: &Request) -> bool {
        fits_state(&self.nodes[i], r)
    }

    /// Whether `r`, nominated to node `i` (so holding `r` there), fits it: kube-scheduler
    /// does not hold a pod's own nomination against it.
    pub fn fits_nominated(&self, i: usize, r: &Request) -> bool {
        let mut n = self.nodes[i].clone();
        unhold_state(&mut n, r);
        fits_state(&n, r)
    }

    /// Holds `r` on node `i` for a pod nominated there.
    pub fn hold(&mut self, i: usize, r: &Request) {
        let n = &mut self.nodes[i];
        n.held_gpus += r.gpus;
        n.held_cpu += r.cpu;
        n.held_mem += r.mem;
    }

    /// Releases a hold of [`World::hold`].
    pub fn unhold(&mut self, i: usize, r: &Request) {
        unhold_state(&mut self.nodes[i], r);
    }

    /// The scheduler's score of node `i` for `r` (assumed feasible).
    pub fn score(&self, i: usize, r: &Request) -> i64 {
        self.score_state(&self.nodes[i], r)
    }

    /// Pools whose nodes can take a gang pod of `gpus` GPUs.
    pub fn gang_pools(&self, gpus: u32) -> u64 {
        let mut m = 0u64;
        for (i, &size) in self.pool_node_size.iter().enumerate() {
            if size >= gpus {
                m |= 1 << i;
            }
        }
        if m == 0 { u64::MAX << 63 } else { m }
    }

    /// All-or-nothing placement of `pods` pods asking `r` each inside one pool (the gang
    /// topology domain), skipping `excluded` nodes: the node of each pod, in pod order.
    /// With `hints`, the hinted nodes are tried first: when every pod fits on a hint (in
    /// hint order, previous pods bound) and all of them are in one pool, that is the answer.
    pub fn choose_gang(
        &self,
        r: &Request,
        pods: u32,
        excluded: &[usize],
        hints: &[usize],
    ) -> Option<Vec<usize>> {
        if !hints.is_empty() {
            let mut overlay: Vec<(usize, NodeState)> = Vec::new();
            let mut got = Vec::new();
            for _ in 0..pods {
                let pick = hints.iter().copied().find(|&h| {
                    !excluded.contains(&h) && fits_state(overlay_state(&overlay, &self.nodes, h), r)
                });
                let Some(h) = pick else { break };
                bind_overlay(&mut overlay, &self.nodes, h, r);
                got.push(h);
            }
            if got.len() == pods as usize
                && got
                    .iter()
                    .all(|&g| self.nodes[g].pool == self.nodes[got[0]].pool)
            {
                return Some(got);
            }
        }
        let np = self.pools.len();
        let mut overlays: Vec<Vec<(usize, NodeState)>> = vec![Vec::new(); np];
        let mut picks: Vec<Vec<usize>> = vec![Vec::new(); np];
        let mut sums = vec![0i64; np];
        let mut alive: Vec<bool> = (0..np)
            .map(|p| r.pools == 0 || r.pools & (1 << p) != 0)
            .collect();
        for _ in 0..pods {
            let mut best: Vec<Option<(usize, i64)>> = vec![None; np];
            for (i, n) in self.nodes.iter().enumerate() {
                if !alive[n.pool] || excluded.contains(&i) {
                    continue;
                }
                let st = overlay_state(&overlays[n.pool], &self.nodes, i);
                if !fits_state(st, r) {
                    continue;
                }
                let s = self.score_state(st, r);
                if best[n.pool].is_none_or(|(_, b)| s > b) {
                    best[n.pool] = Some((i, s));
                }
            }
            for p in 0..np {
                match best[p] {
                    Some((i, s)) if alive[p] => {
                        bind_overlay(&mut overlays[p], &self.nodes, i, r);
                        picks[p].push(i);
                        sums[p] += s;
                    }
                    _ => alive[p] = false,
                }
            }
        }
        let mut winner: Option<usize> = None;
        for p in 0..np {
            if alive[p] && winner.is_none_or(|w| sums[p] > sums[w]) {
                winner = Some(p);
            }
        }
        winner.map(|p| std::mem::take(&mut picks[p]))
    }

    fn score_state(&self, n: &NodeState, r: &Request) -> i64 {
        self.fit_score(n, r) + balanced_score(n, r)
    }

    /// The resource-fit half of [`World::score_state`] (LeastAllocated or MostAllocated over
    /// CPU, memory and GPUs): the average of the resources' scores.
    fn fit_score(&self, n: &NodeState, r: &Request) -> i64 {
        let fit_one = |used: i64, alloc: i64| -> Option<i64> {
            if alloc == 0 {
                return None;
            }
            Some(match self.placement {
                Placement::Spread => {
                    if used > alloc {
                        0
                    } else {
                        (alloc - used) * MAX_NODE_SCORE / alloc
                    }
                }
                Placement::Binpack => used.min(alloc) * MAX_NODE_SCORE / alloc,
            })
        };
        let mut sum = 0;
        let mut w = 0;
        for s in [
            fit_one(n.nz_cpu + r.nz_cpu(), n.cpu),
            fit_one(n.nz_mem + r.nz_mem(), n.mem),
            if r.gpus == 0 {
                None
            } else {
                fit_one(
                    i64::from(n.gpus - n.free_gpus) + i64::from(r.gpus),
                    i64::from(n.gpus),
                )
            },
        ]
        .into_iter()
        .flatten()
        {
            sum += s;
            w += 1;
        }
        if w == 0 { 0 } else { sum / w }
    }

    /// The node the scheduler picks for `r`, skipping `excluded` nodes; `None` when
    /// nothing fits.
    pub fn choose(&self, r: &Request, excluded: &[usize]) -> Option<usize> {
        let mut best: Option<(usize, i64)> = None;
        for (i, n) in self.nodes.iter().enumerate() {
            if !fits_state(n, r) || excluded.contains(&i) {
                continue;
            }
            // The balance half adds at most `MAX_NODE_SCORE`: a node whose fit cannot beat
            // the best so far even then is passed over without it (a strictly higher score
            // wins, so the pick is the one scoring every node would make). This runs for
            // every node at every placement, and the balance half is the costly one.
            let fit = self.fit_score(n, r);
            if best.is_some_and(|(_, b)| fit + MAX_NODE_SCORE <= b) {
                continue;
            }
            let s = fit + balanced_score(n, r);
            if best.is_none_or(|(_, b)| s > b) {
                best = Some((i, s));
            }
        }
        best.map(|(i, _)| i)
    }

    /// Binds `r` to node `i`.
    pub fn bind(&mut self, i: usize, r: &Request) {
        bind_state(&mut self.nodes[i], r);
    }

    /// Releases `r` from node `i`.
    pub fn release(&mut self, i: usize, r: &Request) {
        let n = &mut self.nodes[i];
        n.free_gpus += r.gpus;
        n.req_cpu -= r.cpu;
        n.req_mem -= r.mem;
        n.nz_cpu -= r.nz_cpu();
        n.nz_mem -= r.nz_mem();
        n.pods -= 1;
    }

    /// Node index by name.
    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes
            .binary_search_by(|n| n.name.as_str().cmp(name))
            .ok()
    }

    /// Stranded GPUs per pool: free GPUs on nodes whose free count is below the pool's
    /// node size (a request of the pool's node size cannot use them).
    pub fn stranded(&self) -> Vec<u64> {
        let mut out = vec![0u64; self.pools.len()];
        for n in &self.nodes {
            if n.free_gpus > 0 && n.free_gpus < self.pool_node_size[n.pool] {
                out[n.pool] += u64::from(n.free_gpus);
            }
        }
        out
    }
}

/// The balance half of [`World::score_state`] (NodeResourcesBalancedAllocation over CPU
/// and memory): between half and all of `MAX_NODE_SCORE`, 0 for a request of neither.
fn balanced_score(n: &NodeState, r: &Request) -> i64 {
    if r.cpu == 0 && r.mem == 0 {
        return 0;
    }
    // No list of the fractions: this runs for every node at every placement.
    let cpu = (n.cpu > 0).then(|| ((n.req_cpu + r.cpu) as f64 / n.cpu as f64).min(1.0));
    let mem = (n.mem > 0).then(|| ((n.req_mem + r.mem) as f64 / n.mem as f64).min(1.0));
    let std = match (cpu, mem) {
        (Some(c), Some(m)) => (c - m).abs() / 2.0,
        _ => 0.0,
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

/// The filter: not cordoned or tainted, in an allowed pool, and the free resources less
/// what the node's nominated pods hold cover `r` (scores ignore the holds, as
/// kube-scheduler's do).
fn fits_state(n: &NodeState, r: &Request) -> bool {
    !n.cordoned
        && !n.tainted
        && (r.pools == 0 || r.pools & (1 << n.pool) != 0)
        && n.free_gpus >= r.gpus + n.held_gpus
        && n.req_cpu + n.held_cpu + r.cpu <= n.cpu
        && n.req_mem + n.held_mem + r.mem <= n.mem
}

fn unhold_state(n: &mut NodeState, r: &Request) {
    n.held_gpus = n.held_gpus.saturating_sub(r.gpus);
    n.held_cpu = (n.held_cpu - r.cpu).max(0);
    n.held_mem = (n.held_mem - r.mem).max(0);
}

fn bind_state(n: &mut NodeState, r: &Request) {
    n.free_gpus -= r.gpus;
    n.req_cpu += r.cpu;
    n.req_mem += r.mem;
    n.nz_cpu += r.nz_cpu();
    n.nz_mem += r.nz_mem();
    n.pods += 1;
}

fn overlay_state<'a>(
    overlay: &'a [(usize, NodeState)],
    nodes: &'a [NodeState],
    i: usize,
) -> &'a NodeState {
    overlay
        .iter()
        .find(|(j, _)| *j == i)
        .map_or(&nodes[i], |(_, s)| s)
}

fn bind_overlay(overlay: &mut Vec<(usize, NodeState)>, nodes: &[NodeState], i: usize, r: &Request) {
    if let Some((_, s)) = overlay.iter_mut().find(|(j, _)| *j == i) {
        bind_state(s, r);
    } else {
        let mut s = nodes[i].clone();
        bind_state(&mut s, r);
        overlay.push((i, s));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tn(name: &str, gpus: u32, model: &str) -> TraceNode {
        TraceNode {
            name: name.into(),
            cpu_milli: 64000,
            memory_mib: 262144,
            gpus,
            model: model.into(),
        }
    }

    /// Random nodes (varied CPU and memory) with random pods bound, and a request.
    fn busy_world() -> impl Strategy<Value = (World, Request)> {
        let node = (1u32..=8, 1i64..=8, 1i64..=8);
        let pod = (0u32..=4, 0i64..=8, 0i64..=8);
        (
            prop::collection::vec(node, 1..24),
            prop::collection::vec((any::<prop::sample::Index>(), pod.clone()), 0..60),
            pod,
            any::<bool>(),
        )
            .prop_map(|(nodes, pods, (gpus, cpu, mem), binpack)| {
                let trace: Vec<TraceNode> = nodes
                    .iter()
                    .enumerate()
                    .map(|(i, &(gpus, cpu, mem))| TraceNode {
                        cpu_milli: cpu * 8000,
                        memory_mib: mem * 32768,
                        ..tn(
                            &format!("n{i:02}"),
                            gpus,
                            if i % 3 == 0 { "A" } else { "B" },
                        )
                    })
                    .collect();
                let placement = if binpack {
                    Placement::Binpack
                } else {
                    Placement::Spread
                };
                let mut w = World::new(&trace, placement);
                let ask = |(gpus, cpu, mem): (u32, i64, i64)| Request {
                    gpus,
                    cpu: cpu * 1000,
                    mem: mem * 4096,
                    pools: 0,
                };
                for (at, p) in pods {
                    let i = at.index(w.nodes.len());
                    let r = ask(p);
                    if w.fits(i, &r) {
                        w.bind(i, &r);
                    }
                }
                (w, ask((gpus, cpu, mem)))
            })
    }

    proptest::proptest! {
        /// The scheduler's pick, which passes over nodes whose fit cannot win, is the first
        /// of the best-scoring fitting nodes when every node is scored.
        #[test]
        fn the_pick_is_the_best_scoring_fitting_node((w, r) in busy_world(), skip in 0usize..24) {
            for excluded in [vec![], vec![skip]] {
                let mut best: Option<(usize, i64)> = None;
                for i in 0..w.nodes.len() {
                    if w.fits(i, &r) && !excluded.contains(&i) {
                        let s = w.score(i, &r);
                        if best.is_none_or(|(_, b)| s > b) {
                            best = Some((i, s));
                        }
                    }
                }
                proptest::prop_assert_eq!(w.choose(&r, &excluded), best.map(|(i, _)| i));
            }
        }
    }

    #[test]
    fn spread_spreads_and_binpack_packs() {
        let nodes = [tn("a", 8, "G"), tn("b", 8, "G")];
        let r = Request {
            gpus: 1,
            cpu: 1000,
            mem: 1024,
            pools: 0,
        };
        for (p, second) in [(Placement::Spread, 1), (Placement::Binpack, 0)] {
            let mut w = World::new(&nodes, p);
            let first = w.choose(&r, &[]).unwrap();
            assert_eq!(first, 0, "tie goes to the smallest name");
            w.bind(first, &r);
            assert_eq!(w.choose(&r, &[]), Some(second), "{p:?}");
        }
    }

    #[test]
    fn pools_cpu_and_stranded() {
        let nodes = [tn("a", 8, "G"), tn("b", 2, "T")];
        let mut w = World::new(&nodes, Placement::Spread);
        let only_t = w.pool_mask(&["T".to_owned()]);
        let r = Request {
            gpus: 1,
            cpu: 0,
            mem: 0,
            pools: only_t,
        };
        assert_eq!(w.choose(&r, &[]), Some(1));
        let big_cpu = Request {
            gpus: 1,
            cpu: 100_000,
            mem: 0,
            pools: 0,
        };
        assert_eq!(w.choose(&big_cpu, &[]), None);
        w.bind(
            0,
            &Request {
                gpus: 3,
                ..Request::default()
            },
        );
        w.bind(
            1,
            &Request {
                gpus: 1,
                ..Request::default()
            },
        );
        assert_eq!(w.stranded(), vec![5, 1]);
        assert_eq!(w.allocated_gpus(), 4);
        assert_eq!(w.pool_mask(&["nope".to_owned()]) & 0b11, 0);
    }

    #[test]
    fn gangs_place_all_pods_in_one_pool_or_none() {
        let nodes = [
            tn("a1", 8, "A"),
            tn("a2", 8, "A"),
            tn("b1", 8, "B"),
            tn("b2", 8, "B"),
            tn("c1", 16, "C"),
        ];
        let r = Request {
            gpus: 8,
            cpu: 1000,
            mem: 1024,
            pools: 0,
        };
        let mut w = World::new(&nodes, Placement::Spread);
        // LeastAllocated: the first pod scores best on the empty 16-GPU node, and C's sum
        // beats two empty 8-GPU nodes: both pods on c1.
        assert_eq!(w.choose_gang(&r, 2, &[], &[]), Some(vec![4, 4]));
        // One GPU used on c1: C can take one pod only; A and B tie, A has the smaller name.
        w.bind(4, &Request { gpus: 1, ..r });
        assert_eq!(w.choose_gang(&r, 2, &[], &[]), Some(vec![0, 1]));
        // One GPU used on a1: pool A can no longer take the gang, B can.
        w.bind(1, &Request { gpus: 1, ..r });
        assert_eq!(w.choose_gang(&r, 2, &[], &[]), Some(vec![2, 3]));
        // Nothing: a0, b1 and c1 each have room for one pod, but no pool for both.
        assert_eq!(w.choose_gang(&r, 2, &[2], &[]), None);
        // Hints in one pool win, in hint order; hints across pools are ignored.
        assert_eq!(w.choose_gang(&r, 2, &[], &[3, 2]), Some(vec![3, 2]));
        assert_eq!(w.choose_gang(&r, 2, &[], &[0, 3]), Some(vec![2, 3]));
        // MostAllocated: a half-used 16-GPU node takes one pod only; A before B.
        let mut w = World::new(&nodes, Placement::Binpack);
        w.bind(4, &Request { gpus: 8, ..r });
        assert_eq!(w.choose_gang(&r, 2, &[], &[]), Some(vec![0, 1]));
        assert_eq!(w.gang_pools(8), 0b111);
        assert_eq!(w.gang_pools(16), 0b100);
    }
}
