//! Pod lookup by `namespace/name` key for the callers that hold a key rather than the
//! snapshot's index ([`crate::omenative_eligibility`]); independent of the order of the
//! snapshot's pods.

use std::cmp::Ordering;

use alfred_model::snapshot::Pod;

/// Finds bound pods by `namespace/name` key. The snapshot keeps `pods` sorted by
/// `(namespace, name)`, and lookups gallop from the previous hit, so keys that arrive
/// roughly in pod order (the usual case: workloads are sorted and pods are named after
/// them) cost O(log distance) instead of O(log n).
///
/// Sortedness is verified lazily: a hit is always exact (the key is compared), so only a
/// miss can be caused by an unsorted list. On the first miss the list is checked once
/// (O(n)); if it is not sorted, a sorted permutation is built and the lookup retried, so
/// the answers never depend on the input order.
pub(crate) struct PodFinder<'s> {
    pods: &'s [Pod],
    perm: Option<Vec<u32>>,
    verified: bool,
    hint: usize,
}

fn cmp_pod(p: &Pod, ns: &str, name: &str) -> Ordering {
    match p.namespace.as_str().cmp(ns) {
        Ordering::Equal => p.name.as_str().cmp(name),
        o => o,
    }
}

impl<'s> PodFinder<'s> {
    pub(crate) fn new(pods: &'s [Pod]) -> Self {
        PodFinder {
            pods,
            perm: None,
            verified: false,
            hint: 0,
        }
    }

    /// Checks the order once; builds the sorted permutation when needed.
    fn verify(&mut self) {
        self.verified = true;
        let pods = self.pods;
        let sorted = pods
            .windows(2)
            .all(|w| cmp_pod(&w[0], &w[1].namespace, &w[1].name) != Ordering::Greater);
        if !sorted {
            let mut perm: Vec<u32> = (0..pods.len() as u32).collect();
            perm.sort_by(|a, b| {
                let (pa, pb) = (&pods[*a as usize], &pods[*b as usize]);
                cmp_pod(pa, &pb.namespace, &pb.name).then(a.cmp(b))
            });
            self.perm = Some(perm);
            self.hint = 0;
        }
    }

    /// The index (into the snapshot's `pods`) of the pod with this `namespace/name` key.
    pub(crate) fn find(&mut self, key: &str) -> Option<usize> {
        let (ns, name) = key.split_once('/')?;
        match self.search(ns, name) {
            Some(i) => Some(i),
            None if !self.verified => {
                self.verify();
                self.search(ns, name)
            }
            None => None,
        }
    }

    #[inline]
    fn at(&self, i: usize) -> usize {
        match &self.perm {
            None => i,
            Some(p) => p[i] as usize,
        }
    }

    #[inline]
    fn cmp_at(&self, i: usize, ns: &str, name: &str) -> Ordering {
        cmp_pod(&self.pods[self.at(i)], ns, name)
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

    fn search(&mut self, ns: &str, name: &str) -> Option<usize> {
        let n = self.pods.len();
        if n == 0 {
            return None;
        }
        let h = self.hint.min(n - 1);
        let pos = match self.cmp_at(h, ns, name) {
            Ordering::Equal => h,
            Ordering::Less => {
                // Gallop forward: the key lies in (h, n).
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
            Ordering::Greater => {
                // Gallop backward: the key lies in [0, h).
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
        };
        self.hint = pos.min(n - 1);
        if pos < n && self.cmp_at(pos, ns, name) == Ordering::Equal {
            Some(self.at(pos))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(ns: &str, name: &str) -> Pod {
        Pod {
            namespace: ns.into(),
            name: name.into(),
            ..Pod::default()
        }
    }

    #[test]
    fn pod_finder_sorted_and_unsorted() {
        let mut pods: Vec<Pod> = (0..200)
            .map(|i| pod(&format!("ns{}", i % 3), &format!("p{i:04}")))
            .collect();
        pods.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        let keys: Vec<String> = pods.iter().map(Pod::key).collect();
        let mut f = PodFinder::new(&pods);
        for (i, k) in keys.iter().enumerate().rev() {
            assert_eq!(f.find(k), Some(i));
        }
        for (i, k) in keys.iter().enumerate().step_by(7) {
            assert_eq!(f.find(k), Some(i));
        }
        assert_eq!(f.find("ns9/x"), None);
        assert_eq!(f.find("nokey"), None);
        pods.reverse();
        let mut f = PodFinder::new(&pods);
        for k in &keys {
            let i = f.find(k).expect("found");
            assert_eq!(&pods[i].key(), k);
        }
        assert_eq!(f.find("ns0/zzz"), None);
    }
}
