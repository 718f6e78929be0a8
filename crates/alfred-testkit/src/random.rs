//! Random inputs for property tests and benchmarks: a small cluster drawn from a few knobs,
//! a permutation of a snapshot's lists, and the fragmented occupancy of the scheduler
//! benchmarks.

use alfred_model::ClusterSnapshot;
use alfred_model::snapshot::PoolAttribution;

use crate::parts::{
    NOW, bind, executor_on, gpu_node as node, ome_pod as pod, omenative_workload,
    pending_pod as pending, raw_workload, steady_instance,
};
use crate::{SplitMix64, XorShift64};

/// The draws the generator needs, over the crate's splitmix64 stream.
struct Draws(SplitMix64);

impl Draws {
    fn below(&mut self, n: u64) -> u64 {
        self.0.below(n)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    fn shuffle<T>(&mut self, xs: &mut [T]) {
        for i in (1..xs.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            xs.swap(i, j);
        }
    }
}

/// The shape of a [`small_cluster`]: what property tests draw and shrink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmallClusterShape {
    /// The generator's seed.
    pub seed: u64,
    /// GPU nodes.
    pub nodes: usize,
    /// InferenceServices tried (one is dropped when none of its pods finds room).
    pub workloads: usize,
    /// Pending GPU pods.
    pub pending: usize,
    /// Whether the executor is available.
    pub executor: bool,
    /// Whether every workload is opted out of moves.
    pub all_fixed: bool,
    /// The percentage of nodes excluded one way or another (cordoned, preemptible, due for
    /// maintenance, marked for scale-down).
    pub excluded_percent: u64,
}

/// A small random cluster for property tests: one to three pools of mixed 1/2/4/8-GPU
/// nodes, a few non-OME jobs, OMENative and RawDeployment InferenceServices of one to three
/// Instances (some opted out, some cooling), pending pods of every size, some attributed to
/// a pool. Unlike [`generate_cluster`](crate::generate_cluster), whose shape is fixed for
/// benchmarks, every knob is the test's to draw, so proptest can shrink a failure to a few
/// nodes.
pub fn small_cluster(k: SmallClusterShape) -> ClusterSnapshot {
    let mut r = Draws(SplitMix64::new(k.seed));
    let pools = ["A100", "H100", "L40S"];
    let npools = 1 + r.below(3) as usize;
    let mut s = ClusterSnapshot {
        observed_at: NOW,
        ..ClusterSnapshot::default()
    };
    if k.executor {
        executor_on(&mut s);
    }
    for i in 0..k.nodes {
        let mut n = node(
            &format!("node-{i:03}"),
            pools[r.below(npools as u64) as usize],
            r.pick(&[1, 2, 4, 8, 8, 8]),
        );
        if r.chance(k.excluded_percent) {
            match r.below(4) {
                0 => n.cordoned = true,
                1 => n.preemptible = true,
                2 => n.maintenance.requested = true,
                _ => n.scale_down_marked = true,
            }
        }
        s.nodes.push(n);
    }
    // Non-OME occupants.
    for j in 0..r.below(4) {
        let ni = r.below(k.nodes as u64) as usize;
        let free = s.nodes[ni].free_gpus;
        if free > 0 {
            let g = 1 + r.below(u64::from(free)) as u32;
            let mut p = pod("batch", &format!("job-{j}"), &s.nodes[ni].name.clone(), g);
            p.ome = false;
            bind(&mut s, p);
        }
    }
    for w in 0..k.workloads {
        let ns = format!("ns{}", r.below(3));
        let name = format!("w{w:02}");
        let ninst = 1 + r.below(3) as u32;
        let mut instances = Vec::new();
        for i in 0..ninst {
            let npods = 1 + r.below(2) as usize;
            let mut pods = Vec::new();
            for p in 0..npods {
                let g: u32 = r.pick(&[1, 1, 1, 2, 2, 4, 8]);
                // A node with room, tried from a random start.
                let start = r.below(k.nodes as u64) as usize;
                let found = (0..k.nodes)
                    .map(|d| (start + d) % k.nodes)
                    .find(|ni| s.nodes[*ni].free_gpus >= g);
                if let Some(ni) = found {
                    let pname = format!("{name}-{i}-{p}");
                    let nname = s.nodes[ni].name.clone();
                    bind(&mut s, pod(&ns, &pname, &nname, g));
                    pods.push((pname, nname, g));
                }
            }
            if !pods.is_empty() {
                instances.push(steady_instance(&ns, i, &pods));
            }
        }
        if instances.is_empty() {
            continue;
        }
        let mut wl = if r.chance(20) {
            let flat: Vec<_> = instances
                .iter()
                .flat_map(|inst| {
                    inst.pods.iter().map(|key| {
                        s.pods
                            .iter()
                            .find(|p| &p.key() == key)
                            .map(|p| (p.name.clone(), p.node.clone(), p.gpus))
                    })
                })
                .flatten()
                .collect();
            raw_workload(&ns, &name, &flat)
        } else {
            omenative_workload(&ns, &name, instances)
        };
        wl.settings.movable = !k.all_fixed && !r.chance(15);
        if r.chance(10) {
            wl.migration.last_migration = Some(NOW.plus_minutes(-(r.below(60) as i64)));
        }
        s.workloads.push(wl);
    }
    for i in 0..k.pending {
        let mut p = pending(
            &format!("ns{}", r.below(3)),
            &format!("pend-{i}"),
            r.pick(&[1, 2, 3, 4, 6, 8, 12, 16]),
            r.below(120) as i64,
        );
        if r.chance(40) {
            p.pools = PoolAttribution::Pools(vec![pools[r.below(3) as usize].to_string()]);
        }
        s.pending_pods.push(p);
    }
    s.normalize();
    s
}

/// `s` with every list the snapshot holds in a random order (nodes, pods, pending pods,
/// workloads, their components, each component's Instances and pods, each Instance's pods),
/// not normalized: outputs must not depend on
/// input order.
pub fn shuffled(s: &ClusterSnapshot, seed: u64) -> ClusterSnapshot {
    let mut r = Draws(SplitMix64::new(seed ^ 0xDEAD_BEEF));
    let mut t = s.clone();
    r.shuffle(&mut t.nodes);
    r.shuffle(&mut t.pods);
    r.shuffle(&mut t.pending_pods);
    r.shuffle(&mut t.workloads);
    for w in &mut t.workloads {
        r.shuffle(&mut w.components);
        for c in &mut w.components {
            r.shuffle(&mut c.instances);
            r.shuffle(&mut c.pods);
            for i in &mut c.instances {
                r.shuffle(&mut i.pods);
            }
        }
    }
    t
}

/// The GPU requests of the pods on each of `nodes` 8-GPU nodes, fragmented: 1-, 2-, 4- and
/// 8-GPU pods drawn in turn until one does not fit or a one-in-five stop, so most nodes keep
/// a few GPUs free. The scheduler benchmarks (the simulator's surge bench, the dispatcher's
/// simulation bench) lay the same occupancy out as Kubernetes objects or as a snapshot.
pub fn fragmented_occupancy(nodes: usize, seed: u64) -> Vec<Vec<u32>> {
    let mut rng = XorShift64::new(seed);
    (0..nodes)
        .map(|_| {
            let mut free = 8;
            let mut pods = Vec::new();
            loop {
                let x = rng.next_u64();
                let gpus = [1, 2, 4, 8][(x % 4) as usize];
                if gpus > free || x.is_multiple_of(5) {
                    break pods;
                }
                free -= gpus;
                pods.push(gpus);
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(seed: u64) -> SmallClusterShape {
        SmallClusterShape {
            seed,
            nodes: 8,
            workloads: 6,
            pending: 3,
            executor: true,
            all_fixed: false,
            excluded_percent: 20,
        }
    }

    #[test]
    fn a_small_cluster_is_the_same_for_the_same_shape_and_fits_its_nodes() {
        for seed in 0..20 {
            let s = small_cluster(shape(seed));
            assert_eq!(s, small_cluster(shape(seed)));
            assert_eq!(s.nodes.len(), 8);
            assert_eq!(s.pending_pods.len(), 3);
            for n in &s.nodes {
                let bound: u32 = s
                    .pods
                    .iter()
                    .filter(|p| p.node == n.name)
                    .map(|p| p.gpus)
                    .sum();
                assert!(bound <= n.total_gpus, "{} holds {bound}", n.name);
            }
        }
    }

    #[test]
    fn shuffling_keeps_every_object_and_normalizing_undoes_it() {
        let s = small_cluster(shape(7));
        let mut t = shuffled(&s, 3);
        assert_eq!(t.nodes.len(), s.nodes.len());
        assert_eq!(t.pods.len(), s.pods.len());
        assert_eq!(t.workloads.len(), s.workloads.len());
        t.normalize();
        assert_eq!(t, s);
    }

    #[test]
    fn fragmented_occupancy_fills_no_node_past_eight_and_repeats_for_a_seed() {
        let a = fragmented_occupancy(500, 42);
        assert_eq!(a, fragmented_occupancy(500, 42));
        assert_ne!(a, fragmented_occupancy(500, 43));
        assert!(a.iter().all(|pods| pods.iter().sum::<u32>() <= 8));
        assert!(a.iter().any(|pods| pods.iter().sum::<u32>() < 8));
        assert!(a.iter().any(|pods| !pods.is_empty()));
    }
}
