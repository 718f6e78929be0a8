//! Bound pods found by key without a map, for callers that look up many keys in order.

use std::cmp::Ordering;

use super::{NONE, cmp_pod, sorted_order};
use crate::snapshot::Pod;

/// Bound pods by `namespace/name` key over their key order, galloping from the previous
/// hit: Instances list their pods roughly in pod order (workloads are sorted and pods are
/// named after them), so a lookup costs O(log distance) rather than O(log n). A duplicate
/// key resolves to its first pod in input order.
///
/// The pods are assumed sorted (as [`normalize`] leaves them) until a key is not found: a hit
/// is exact whatever the order, so only a miss can come from an unsorted list. On the first miss the order is checked once and, when unsorted, a sorted
/// permutation is built and the lookup retried.
///
/// [`normalize`]: crate::snapshot::ClusterSnapshot::normalize
pub struct PodFinder<'s> {
    pub(super) pods: &'s [Pod],
    /// Key order, when the pods are not sorted.
    order: Option<Vec<u32>>,
    verified: bool,
    hint: usize,
}

impl<'s> PodFinder<'s> {
    /// A finder over `pods` (a snapshot's bound pods, in any order).
    pub fn new(pods: &'s [Pod]) -> PodFinder<'s> {
        PodFinder {
            pods,
            order: None,
            verified: false,
            hint: 0,
        }
    }

    /// The position in `pods` of the pod with this `namespace/name` key.
    pub fn position(&mut self, key: &str) -> Option<usize> {
        match self.find(key) {
            NONE => None,
            i => Some(i as usize),
        }
    }

    #[inline]
    fn at(&self, i: usize) -> usize {
        match &self.order {
            None => i,
            Some(o) => o[i] as usize,
        }
    }

    #[inline]
    fn cmp_at(&self, i: usize, ns: &str, name: &str) -> Ordering {
        cmp_pod(&self.pods[self.at(i)], ns, name)
    }

    /// The position of the pod with this key, or [`NONE`].
    pub(super) fn find(&mut self, key: &str) -> u32 {
        match self.search(key) {
            NONE if !self.verified => {
                self.verified = true;
                let order = sorted_order(self.pods, |a, b| cmp_pod(a, &b.namespace, &b.name));
                if order.iter().enumerate().any(|(k, i)| k != *i as usize) {
                    self.order = Some(order);
                    self.hint = 0;
                    self.search(key)
                } else {
                    NONE
                }
            }
            found => found,
        }
    }

    /// First position in `[lo, hi)` whose pod is not less than the key.
    fn lower_bound(&self, mut lo: usize, mut hi: usize, ns: &str, name: &str) -> usize {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.cmp_at(mid, ns, name) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    fn search(&mut self, key: &str) -> u32 {
        let Some((ns, name)) = key.split_once('/') else {
            return NONE;
        };
        let n = self.pods.len();
        if n == 0 {
            return NONE;
        }
        let h = self.hint.min(n - 1);
        let pos = match self.cmp_at(h, ns, name) {
            // The first pod not less than the key is at or before the hint (a run of
            // duplicates may start before it).
            Ordering::Equal | Ordering::Greater => {
                let mut hi = h;
                let mut step = 1usize;
                let lo = loop {
                    if step > h {
                        break 0;
                    }
                    let probe = h - step;
                    if self.cmp_at(probe, ns, name) == Ordering::Less {
                        break probe + 1;
                    }
                    hi = probe;
                    step = step.saturating_mul(2);
                };
                self.lower_bound(lo, hi, ns, name)
            }
            Ordering::Less => {
                let mut lo = h + 1;
                let mut step = 1usize;
                let hi = loop {
                    let probe = h.saturating_add(step);
                    if probe >= n {
                        break n;
                    }
                    if self.cmp_at(probe, ns, name) != Ordering::Less {
                        break probe + 1;
                    }
                    lo = probe + 1;
                    step = step.saturating_mul(2);
                };
                self.lower_bound(lo, hi, ns, name)
            }
        };
        self.hint = pos.min(n - 1);
        if pos < n && self.cmp_at(pos, ns, name) == Ordering::Equal {
            self.at(pos) as u32
        } else {
            NONE
        }
    }
}
