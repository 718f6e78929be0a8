//! The first-fit-decreasing repack of docs/design-scoring.md#the-repack, in O((items + bins) · log
//! bins).
//!
//! First fit over a fixed bin order is answered by a max segment tree ("leftmost bin with
//! at least g free"). Items of one size are interchangeable for placement — each goes to
//! the leftmost bin with room whatever its identity — so a run of equal-size items is
//! placed in batches, `floor(free / g)` at a time. Identity only matters for the items of a
//! size that find no room: once one item of size `g` fails, every later item of size `g`
//! fails too (free space only shrinks), so the failing ones are exactly the last items of
//! the run in the documented order (key ascending), and each stays on its home bin (its GPUs
//! are subtracted there again, clamped at 0). This is the same result as placing the items
//! one at a time in the order of docs/design-scoring.md#the-repack.

use std::cmp::{Ordering, Reverse};
use std::iter::once;

use alfred_model::snapshot::{Node, Pod};

/// Marks "no bin" in node → bin tables.
pub(crate) const NONE: u32 = u32::MAX;

/// One pod of a movable Instance.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Item {
    /// Index into `ClusterSnapshot::pods`.
    pub pod: u32,
    /// Index into `ClusterSnapshot::nodes` (the home).
    pub node: u32,
    /// GPUs (> 0).
    pub gpus: u32,
}

/// `"ns/name"` byte-wise order (docs/design-snapshot.md), without allocating the key.
pub(crate) fn cmp_pod_key(a: &Pod, b: &Pod) -> Ordering {
    let ka = a.namespace.bytes().chain(once(b'/')).chain(a.name.bytes());
    let kb = b.namespace.bytes().chain(once(b'/')).chain(b.name.bytes());
    ka.cmp(kb)
}

struct MaxTree {
    size: usize,
    t: Vec<u32>,
}

impl MaxTree {
    fn new(values: impl ExactSizeIterator<Item = u32>) -> Self {
        let size = values.len().next_power_of_two().max(1);
        let mut t = vec![0u32; 2 * size];
        for (i, v) in values.enumerate() {
            t[size + i] = v;
        }
        for i in (1..size).rev() {
            t[i] = t[2 * i].max(t[2 * i + 1]);
        }
        MaxTree { size, t }
    }

    fn get(&self, i: usize) -> u32 {
        self.t[self.size + i]
    }

    fn set(&mut self, i: usize, v: u32) {
        let mut k = self.size + i;
        self.t[k] = v;
        while k > 1 {
            k /= 2;
            self.t[k] = self.t[2 * k].max(self.t[2 * k + 1]);
        }
    }

    /// The leftmost position holding at least `g`.
    fn first_at_least(&self, g: u32) -> Option<usize> {
        if self.t[1] < g {
            return None;
        }
        let mut k = 1;
        while k < self.size {
            k = if self.t[2 * k] >= g { 2 * k } else { 2 * k + 1 };
        }
        Some(k - self.size)
    }
}

/// Repacks `items` into the bins (`free`/`cap` in name order; `node_bin` maps a node index
/// to its bin position or [`NONE`]) and returns the repacked free GPUs in name order.
///
/// * lift: every item whose home is a bin gives its GPUs back there (capped at the bin's
///   capacity, which only matters for an inconsistent snapshot); items on excluded nodes are
///   lifted "from nowhere";
/// * bins ordered by free ascending after the lift, then name ascending (fullest first);
/// * items by GPUs descending, then `ns/name` ascending;
/// * each item goes to the first bin with `free ≥ gpus` (free never exceeds capacity, so
///   `gpus ≤ cap` holds too); when none has room it stays home.
pub(crate) fn repack(
    free: &[u32],
    cap: &[u32],
    node_bin: &[u32],
    items: &mut [Item],
    pods: &[Pod],
    nodes: &[Node],
) -> Vec<u32> {
    let nb = free.len();
    let mut lifted: Vec<u32> = free.iter().zip(cap).map(|(f, c)| (*f).min(*c)).collect();
    for it in items.iter() {
        let home = node_bin[it.node as usize];
        if home != NONE {
            let h = home as usize;
            lifted[h] = lifted[h].saturating_add(it.gpus).min(cap[h]);
        }
    }
    let order = order_fullest_first(&lifted);
    let mut pos_of = vec![0u32; nb];
    for (k, b) in order.iter().enumerate() {
        pos_of[*b as usize] = k as u32;
    }
    let mut tree = MaxTree::new(order.iter().map(|b| lifted[*b as usize]));

    items.sort_unstable_by_key(|it| Reverse(it.gpus));
    let mut start = 0;
    while start < items.len() {
        let g = items[start].gpus;
        let end = start + items[start..].iter().take_while(|it| it.gpus == g).count();
        let n = end - start;
        let mut remaining = n;
        while remaining > 0 {
            let Some(k) = tree.first_at_least(g) else {
                break;
            };
            let v = tree.get(k);
            let take = remaining.min((v / g) as usize);
            tree.set(k, v - (take as u32) * g);
            remaining -= take;
        }
        if remaining > 0 {
            let placed = n - remaining;
            let run = &mut items[start..end];
            let by_key = |a: &Item, b: &Item| {
                cmp_pod_key(&pods[a.pod as usize], &pods[b.pod as usize]).then_with(|| {
                    nodes[a.node as usize]
                        .name
                        .cmp(&nodes[b.node as usize].name)
                })
            };
            if placed > 0 {
                run.select_nth_unstable_by(placed, by_key);
            }
            for it in &run[placed..] {
                let home = node_bin[it.node as usize];
                if home != NONE {
                    let k = pos_of[home as usize] as usize;
                    let v = tree.get(k);
                    tree.set(k, v.saturating_sub(g));
                }
            }
        }
        start = end;
    }
    (0..nb).map(|b| tree.get(pos_of[b] as usize)).collect()
}

/// Bin positions ordered by free ascending, ties by position (= name order): a stable
/// counting sort when free values are small, a stable comparison sort otherwise.
fn order_fullest_first(free: &[u32]) -> Vec<u32> {
    let max = free.iter().copied().max().unwrap_or(0) as usize;
    if max <= 4096 {
        let mut start = vec![0u32; max + 2];
        for f in free {
            start[*f as usize + 1] += 1;
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut order = vec![0u32; free.len()];
        for (b, f) in free.iter().enumerate() {
            let slot = &mut start[*f as usize];
            order[*slot as usize] = b as u32;
            *slot += 1;
        }
        order
    } else {
        let mut order: Vec<u32> = (0..free.len() as u32).collect();
        order.sort_by_key(|b| free[*b as usize]);
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_tree_first_fit() {
        let mut t = MaxTree::new([0u32, 4, 8, 8, 2].into_iter());
        assert_eq!(t.first_at_least(3), Some(1));
        assert_eq!(t.first_at_least(5), Some(2));
        assert_eq!(t.first_at_least(9), None);
        t.set(1, 0);
        assert_eq!(t.first_at_least(3), Some(2));
        assert_eq!(t.first_at_least(1), Some(2));
        let e = MaxTree::new(std::iter::empty());
        assert_eq!(e.first_at_least(1), None);
    }

    #[test]
    fn fullest_first_is_stable() {
        assert_eq!(order_fullest_first(&[8, 0, 4, 0, 8]), vec![1, 3, 2, 0, 4]);
        assert_eq!(order_fullest_first(&[9000, 0, 9000, 1]), vec![1, 3, 0, 2]);
    }
}
