//! What the criterion benchmarks share besides the synthetic cluster (which is
//! `alfred-testkit`'s, re-exported here): the memory estimate of a snapshot, the median timer
//! and the size filter.

use std::collections::BTreeMap;

use alfred_model::ClusterSnapshot;
use alfred_model::snapshot::{Node, Pod};
pub use alfred_testkit::{OBSERVED_AT_SECS, SplitMix64, generate_cluster};

/// Approximate memory of a snapshot's node and pod arrays: `(node_bytes, pod_bytes)`, each
/// inline size plus the heap behind strings and maps (a B-tree entry is counted as its
/// key + value plus 16 bytes of node overhead), plus the node and pod tables of the
/// snapshot's flat index (`alfred_model::index`, built here if it was not yet).
pub fn snapshot_bytes(snap: &ClusterSnapshot) -> (usize, usize) {
    fn map_bytes<V>(m: &BTreeMap<String, V>, value_heap: impl Fn(&V) -> usize) -> usize {
        m.iter()
            .map(|(k, v)| {
                k.capacity()
                    + value_heap(v)
                    + std::mem::size_of::<String>()
                    + std::mem::size_of::<V>()
                    + 16
            })
            .sum()
    }
    let node_bytes: usize = snap
        .nodes
        .iter()
        .map(|n| {
            std::mem::size_of::<Node>()
                + n.name.capacity()
                + n.uid.capacity()
                + n.pool.as_ref().map_or(0, String::capacity)
                + n.gpu_resource.capacity()
                + map_bytes(&n.labels, String::capacity)
                + map_bytes(&n.allocatable, |_| 0)
        })
        .sum();
    let pod_bytes: usize = snap
        .pods
        .iter()
        .map(|p| {
            std::mem::size_of::<Pod>()
                + p.namespace.capacity()
                + p.name.capacity()
                + p.node.capacity()
                + p.uid.capacity()
                + map_bytes(&p.labels, String::capacity)
                + map_bytes(&p.scheduling.requests, |_| 0)
                + map_bytes(&p.scheduling.node_selector, String::capacity)
        })
        .sum();
    // The snapshot's flat index (`alfred_model::index`): node and pod tables count with the
    // node and pod arrays; its Instance tables, like the workloads, do not.
    let (index_nodes, index_pods, _) = snap.index().heap_bytes();
    (node_bytes + index_nodes, pod_bytes + index_pods)
}

/// Median wall time of `runs` calls (the figures the benches print beside criterion's).
pub fn median(runs: usize, mut f: impl FnMut()) -> std::time::Duration {
    let mut t: Vec<std::time::Duration> = (0..runs)
        .map(|_| {
            let start = std::time::Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    t.sort();
    t[t.len() / 2]
}

/// The sizes named in `ALFRED_BENCH_SIZES` (comma-separated, e.g. `S,M`); empty: all.
pub fn size_filter() -> Vec<String> {
    std::env::var("ALFRED_BENCH_SIZES")
        .map(|v| v.split(',').map(|x| x.trim().to_string()).collect())
        .unwrap_or_default()
}

/// Whether the size `name` of the bench `group` runs under `filter` ([`size_filter`]): every
/// size when it is empty, else a size named exactly, alone (`L`) or with its group
/// (`score/L`). Never by substring: `L` must not select `XL`.
pub fn size_selected(filter: &[String], group: &str, name: &str) -> bool {
    filter.is_empty()
        || filter.iter().any(|f| {
            f == name || f.strip_prefix(group).and_then(|r| r.strip_prefix('/')) == Some(name)
        })
}
