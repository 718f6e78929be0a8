//! Schedulable bins, slots, per-size fragmentation and the weighted sum (docs/design-scoring.md),
//! as reusable pieces: the scorer builds them once per pool, and the defragmentation policy
//! reuses them to price a move (docs/design-policies.md#benefit-cost-and-score).

use alfred_model::snapshot::Node;
use serde::{Deserialize, Serialize};

/// A pool's schedulable bins (docs/design-scoring.md#schedulable-bins): one per node of the pool
/// that can take new pods, as `(name, free, cap)`, kept in ascending name order.
///
/// Borrowed from the snapshot (node names are not copied). Mutating helpers
/// ([`Bins::take`], [`Bins::release`], [`Bins::insert`]) exist so the policy can apply a
/// planned move and ask [`weighted_fragmentation`] for `F(after)`
/// (docs/design-policies.md#benefit-cost-and-score).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Bins<'s> {
    names: Vec<&'s str>,
    nodes: Vec<u32>,
    free: Vec<u32>,
    cap: Vec<u32>,
}

/// One bin, as read back from [`Bins`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bin<'s> {
    /// Node name.
    pub name: &'s str,
    /// Index of the node in `ClusterSnapshot::nodes`.
    pub node: usize,
    /// Free GPUs (`freeGPUs`, never above `cap`).
    pub free: u32,
    /// Capacity (`totalGPUs`).
    pub cap: u32,
}

impl<'s> Bins<'s> {
    /// No bins.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a bin; the caller keeps names ascending (internal fast path).
    pub(crate) fn push_sorted(&mut self, name: &'s str, node: usize, free: u32, cap: u32) {
        self.names.push(name);
        self.nodes.push(u32::try_from(node).unwrap_or(u32::MAX));
        self.free.push(free.min(cap));
        self.cap.push(cap);
    }

    /// Adds `node` (index `node_index` in the snapshot) as a bin, keeping name order; does
    /// nothing when a bin of that name exists. `free` is the node's `freeGPUs` capped at
    /// its `totalGPUs`. Used for docs/design-policies.md#boosts: a preemptible source node counted
    /// as a bin before and after a move.
    pub fn insert(&mut self, node: &'s Node, node_index: usize) {
        match self.names.binary_search(&node.name.as_str()) {
            Ok(_) => {}
            Err(pos) => {
                self.names.insert(pos, node.name.as_str());
                self.nodes
                    .insert(pos, u32::try_from(node_index).unwrap_or(u32::MAX));
                self.free.insert(pos, node.free_gpus.min(node.total_gpus));
                self.cap.insert(pos, node.total_gpus);
            }
        }
    }

    /// Number of bins.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// No bins at all.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The bin at a position (name order).
    pub fn get(&self, pos: usize) -> Option<Bin<'s>> {
        Some(Bin {
            name: self.names.get(pos)?,
            node: *self.nodes.get(pos)? as usize,
            free: *self.free.get(pos)?,
            cap: *self.cap.get(pos)?,
        })
    }

    /// All bins in name order.
    pub fn iter(&self) -> impl Iterator<Item = Bin<'s>> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// The position of the bin of a node name (binary search).
    pub fn position(&self, name: &str) -> Option<usize> {
        self.names.binary_search(&name).ok()
    }

    /// Free GPUs per bin, in name order.
    pub fn free(&self) -> &[u32] {
        &self.free
    }

    /// Capacity per bin, in name order.
    pub fn caps(&self) -> &[u32] {
        &self.cap
    }

    /// Overwrites the free GPUs (same length and order as [`Bins::free`]); each value is
    /// capped at the bin's capacity. Returns false (and changes nothing) on a length mismatch.
    pub fn set_free(&mut self, free: &[u32]) -> bool {
        if free.len() != self.free.len() {
            return false;
        }
        for ((dst, src), cap) in self.free.iter_mut().zip(free).zip(&self.cap) {
            *dst = (*src).min(*cap);
        }
        true
    }

    /// `TotalFree`: Σ free over the bins.
    pub fn total_free(&self) -> u64 {
        self.free.iter().map(|f| u64::from(*f)).sum()
    }

    /// `maxCap`: the largest capacity among the bins, 0 without bins.
    pub fn max_cap(&self) -> u32 {
        self.cap.iter().copied().max().unwrap_or(0)
    }

    /// `slots(bins, s)` of docs/design-scoring.md#slots (0 for `s = 0`).
    pub fn slots(&self, size: u32) -> u64 {
        slots(&self.free, &self.cap, self.max_cap(), size)
    }

    /// Places `gpus` on the bin of `name`: succeeds (and subtracts) only when that bin
    /// exists and has at least `gpus` free — the fail-closed guard of
    /// docs/design-policies.md#benefit-cost-and-score.
    pub fn take(&mut self, name: &str, gpus: u32) -> bool {
        match self.position(name) {
            Some(pos) if self.free[pos] >= gpus => {
                self.free[pos] -= gpus;
                true
            }
            _ => false,
        }
    }

    /// Gives `gpus` back to the bin of `name`, capped at its capacity; a name that is not a
    /// bin (an excluded node) frees nothing usable
    /// (docs/design-policies.md#benefit-cost-and-score). Returns whether it was a bin.
    pub fn release(&mut self, name: &str, gpus: u32) -> bool {
        match self.position(name) {
            Some(pos) => {
                self.free[pos] = self.free[pos].saturating_add(gpus).min(self.cap[pos]);
                true
            }
            None => false,
        }
    }
}

/// The per-size weights `w(s)` of a pool (docs/design-scoring.md#demand-and-weights), in ladder
/// order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Weights {
    /// Ladder sizes, ascending.
    pub sizes: Vec<u32>,
    /// `w(s)` for each ladder size.
    pub weights: Vec<f64>,
}

impl Weights {
    /// The weight of a ladder size (0 for a size not on the ladder).
    pub fn get(&self, size: u32) -> f64 {
        self.sizes
            .iter()
            .position(|s| *s == size)
            .and_then(|i| self.weights.get(i).copied())
            .unwrap_or(0.0)
    }
}

/// `slots` over raw arrays (`free` and `cap` aligned), given the bins' `maxCap`.
pub(crate) fn slots(free: &[u32], cap: &[u32], max_cap: u32, size: u32) -> u64 {
    if size == 0 || max_cap == 0 {
        return 0;
    }
    if size <= max_cap {
        free.iter().map(|f| u64::from(*f / size)).sum()
    } else {
        let whole = free
            .iter()
            .zip(cap)
            .filter(|(f, c)| **c == max_cap && **f == **c)
            .count() as u64;
        let group = u64::from(size.div_ceil(max_cap));
        whole / group
    }
}

/// `frag(s) = max(0, 1 − slots(s)·s / denominator)`, 0 when the denominator is 0
/// (docs/design-scoring.md#per-size-fragmentation).
pub(crate) fn frag(slots: u64, size: u32, denominator: u64) -> f64 {
    if denominator == 0 {
        return 0.0;
    }
    let f = 1.0 - (slots as f64 * f64::from(size)) / denominator as f64;
    f.max(0.0)
}

/// `Σ_s w(s) · frag(s)` over the ladder, with the per-size fragmentation of `bins` taken
/// against a **fixed** `denominator` (docs/design-scoring.md#the-repack and
/// docs/design-policies.md#benefit-cost-and-score: always the observed `TotalFree` of the pool, so
/// that a hypothetical bin set is compared on the same scale).
///
/// * `F_observed` = `weighted_fragmentation(bins, w, bins.total_free())`;
/// * `F_best` = `weighted_fragmentation(repacked, w, observed_total_free)`;
/// * `F(after)` of a move (docs/design-policies.md#benefit-cost-and-score) =
///   `weighted_fragmentation(after, w, observed_total_free)`.
pub fn weighted_fragmentation(bins: &Bins<'_>, weights: &Weights, denominator: u64) -> f64 {
    weighted_fragmentation_raw(&bins.free, &bins.cap, weights, denominator)
}

pub(crate) fn weighted_fragmentation_raw(
    free: &[u32],
    cap: &[u32],
    weights: &Weights,
    denominator: u64,
) -> f64 {
    let max_cap = cap.iter().copied().max().unwrap_or(0);
    let mut total = 0.0;
    for (size, w) in weights.sizes.iter().zip(&weights.weights) {
        let s = slots(free, cap, max_cap, *size);
        total += w * frag(s, *size, denominator);
    }
    total
}

/// Per-ladder-size slot counts of a bin set (docs/design-scoring.md#slots), kept so that a change
/// to a few bins updates them in O(ladder) per bin instead of recounting every bin: the policy
/// prices a move this way (docs/design-policies.md#benefit-cost-and-score), and
/// [`LadderSlots::weighted_fragmentation`] gives exactly what [`weighted_fragmentation`] gives on
/// the changed bins (same slot counts, same `f64` formula in the same order).
///
/// The counts are only valid for bins whose capacities do not exceed [`LadderSlots::max_cap`]
/// (fixed at construction): adding a larger bin changes `maxCap`, hence every count, and
/// needs a recount.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LadderSlots {
    sizes: Vec<u32>,
    max_cap: u32,
    /// Per size: Σ floor(free / s) when `s ≤ maxCap`; the number of fully free bins of
    /// capacity `maxCap` when `s > maxCap` (divided by `ceil(s / maxCap)` on read).
    counts: Vec<u64>,
}

impl LadderSlots {
    /// The counts of `bins` for the ladder sizes of `weights`.
    pub fn new(bins: &Bins<'_>, weights: &Weights) -> Self {
        let mut out = LadderSlots {
            sizes: weights.sizes.clone(),
            max_cap: bins.max_cap(),
            counts: vec![0; weights.sizes.len()],
        };
        for (free, cap) in bins.free.iter().zip(&bins.cap) {
            out.add(*free, *cap);
        }
        out
    }

    /// `maxCap` of the bins counted.
    pub fn max_cap(&self) -> u32 {
        self.max_cap
    }

    fn contribution(&self, size: u32, free: u32, cap: u32) -> u64 {
        if size == 0 || self.max_cap == 0 {
            0
        } else if size <= self.max_cap {
            u64::from(free / size)
        } else {
            u64::from(cap == self.max_cap && free == cap)
        }
    }

    /// Counts one more bin (`free` already capped at `cap`; `cap ≤ max_cap`).
    pub fn add(&mut self, free: u32, cap: u32) {
        for i in 0..self.sizes.len() {
            let c = self.contribution(self.sizes[i], free, cap);
            self.counts[i] += c;
        }
    }

    /// A counted bin of capacity `cap` went from `old` to `new` free GPUs (both capped at
    /// `cap`).
    pub fn update(&mut self, old: u32, new: u32, cap: u32) {
        for i in 0..self.sizes.len() {
            let size = self.sizes[i];
            let added = self.contribution(size, new, cap);
            let removed = self.contribution(size, old, cap);
            self.counts[i] = (self.counts[i] + added).saturating_sub(removed);
        }
    }

    /// `slots(s)` per ladder size, in ladder order.
    pub fn slots(&self) -> impl Iterator<Item = u64> + '_ {
        self.sizes
            .iter()
            .zip(&self.counts)
            .map(|(size, count)| self.slots_of(*size, *count))
    }

    /// `slots(size)` from its count.
    fn slots_of(&self, size: u32, count: u64) -> u64 {
        if size == 0 || self.max_cap == 0 {
            0
        } else if size <= self.max_cap {
            count
        } else {
            count / u64::from(size.div_ceil(self.max_cap))
        }
    }

    /// `Σ_s w(s) · frag(s)` from these slot counts against a fixed `denominator`:
    /// bit-for-bit [`weighted_fragmentation`] of the bins counted (`weights` must be the
    /// ones the counts were built for).
    pub fn weighted_fragmentation(&self, weights: &Weights, denominator: u64) -> f64 {
        weighted_sum(weights, denominator, self.slots())
    }

    /// [`LadderSlots::weighted_fragmentation`] of a copy of these counts after
    /// [`LadderSlots::update`] with each `(old, new, cap)` of `updates` in turn, without the
    /// copy: a move is priced thousands of times a pass, against the same pool counts.
    pub fn weighted_fragmentation_after(
        &self,
        updates: impl Iterator<Item = (u32, u32, u32)> + Clone,
        weights: &Weights,
        denominator: u64,
    ) -> f64 {
        let slots = self.sizes.iter().zip(&self.counts).map(|(size, count)| {
            let mut count = *count;
            for (old, new, cap) in updates.clone() {
                let added = self.contribution(*size, new, cap);
                let removed = self.contribution(*size, old, cap);
                count = (count + added).saturating_sub(removed);
            }
            self.slots_of(*size, count)
        });
        weighted_sum(weights, denominator, slots)
    }
}

/// `Σ_s w(s) · frag(s)` over the ladder sizes of `weights`, `slots` in ladder order.
fn weighted_sum(weights: &Weights, denominator: u64, slots: impl Iterator<Item = u64>) -> f64 {
    let mut total = 0.0;
    for ((size, w), s) in weights.sizes.iter().zip(&weights.weights).zip(slots) {
        total += w * frag(s, *size, denominator);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bins(spec: &[(u32, u32)]) -> (Vec<String>, Vec<(u32, u32)>) {
        let names = (0..spec.len()).map(|i| format!("n{i:02}")).collect();
        (names, spec.to_vec())
    }

    #[test]
    fn example_3_sizes_larger_than_a_node() {
        let (names, spec) = bins(&[(8, 8), (8, 8), (8, 8), (3, 8), (4, 4)]);
        let mut b = Bins::new();
        for (i, (free, cap)) in spec.iter().enumerate() {
            b.push_sorted(&names[i], i, *free, *cap);
        }
        assert_eq!(b.slots(16), 1);
        assert_eq!(b.slots(24), 1);
        assert_eq!(b.slots(8), 3);
        assert_eq!(b.slots(4), 7);
        assert_eq!(b.slots(32), 0);
        assert_eq!(b.slots(0), 0);
        assert_eq!(Bins::new().slots(1), 0);
    }

    #[test]
    fn take_and_release_guard_and_cap() {
        let (names, _) = bins(&[(0, 0); 2]);
        let mut b = Bins::new();
        b.push_sorted(&names[0], 0, 2, 8);
        b.push_sorted(&names[1], 1, 8, 8);
        assert!(!b.take("n00", 3));
        assert!(b.take("n00", 2));
        assert!(!b.take("zz", 1));
        assert!(b.release("n01", 4));
        assert_eq!(b.free(), &[0, 8]);
        assert!(!b.release("zz", 4));
    }

    proptest::proptest! {
        /// Pricing a move from the pool's counts without copying them answers bit for bit
        /// what a copy updated bin by bin answers.
        #[test]
        fn fragmentation_after_updates_equals_a_copy_updated(
            spec in proptest::collection::vec((0u32..=8, 1u32..=8), 1..12),
            moves in proptest::collection::vec((0usize..12, 0u32..=8), 0..4),
            sizes in proptest::collection::btree_set(1u32..=24, 1..5),
            denominator in 1u64..200,
        ) {
            let (names, spec) = bins(&spec);
            let mut b = Bins::new();
            for (i, (free, cap)) in spec.iter().enumerate() {
                b.push_sorted(&names[i], i, (*free).min(*cap), *cap);
            }
            let sizes: Vec<u32> = sizes.into_iter().collect();
            let weights = Weights {
                weights: sizes.iter().map(|s| 1.0 / f64::from(*s)).collect(),
                sizes,
            };
            let counts = LadderSlots::new(&b, &weights);
            let updates: Vec<(u32, u32, u32)> = moves
                .iter()
                .filter_map(|(at, new)| {
                    let bin = b.get(*at % b.len())?;
                    Some((bin.free, (*new).min(bin.cap), bin.cap))
                })
                .collect();
            let mut copy = counts.clone();
            for (old, new, cap) in &updates {
                copy.update(*old, *new, *cap);
            }
            let want = copy.weighted_fragmentation(&weights, denominator);
            let got = counts.weighted_fragmentation_after(updates.iter().copied(), &weights, denominator);
            proptest::prop_assert_eq!(got.to_bits(), want.to_bits());
            proptest::prop_assert_eq!(&counts, &LadderSlots::new(&b, &weights));
        }
    }
}
