//! Lookup structures built once per scoring call: node name → node index, and pod key →
//! pod index. Both are deterministic (a fixed hash function, no random seed, never
//! iterated for output) and independent of the order of the snapshot's lists.

use std::cmp::Ordering;

use alfred_model::snapshot::Pod;

/// Node name → index, as an open-addressing table with a fixed hash (no `HashMap`: the
/// table is only probed, never iterated, so no output can depend on hash order). The names
/// are copied into one contiguous arena and each slot carries the name's place in it, so a
/// probe touches one table slot and one arena range rather than the node structs.
///
/// With duplicate names the first one in input order wins (Kubernetes names are unique).
pub(crate) struct NameIndex {
    table: Vec<Slot>,
    mask: usize,
    arena: Vec<u8>,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    /// High 32 bits of the hash.
    tag: u32,
    /// Node index + 1; 0 = empty.
    index: u32,
    /// The name's range in the arena.
    start: u32,
    len: u32,
}

impl NameIndex {
    pub(crate) fn new<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> Self {
        let n = names.len();
        let size = (n * 2).next_power_of_two().max(16);
        let mut index = NameIndex {
            table: vec![Slot::default(); size],
            mask: size - 1,
            arena: Vec::new(),
        };
        for (i, name) in names.enumerate() {
            let (Ok(start), Ok(len), Ok(idx)) = (
                u32::try_from(index.arena.len()),
                u32::try_from(name.len()),
                u32::try_from(i + 1),
            ) else {
                break; // beyond 4 GiB of names: not a cluster this index serves
            };
            let h = hash(name.as_bytes());
            let tag = (h >> 32) as u32;
            let mut slot = (h as usize) & index.mask;
            loop {
                let entry = index.table[slot];
                if entry.index == 0 {
                    index.arena.extend_from_slice(name.as_bytes());
                    index.table[slot] = Slot {
                        tag,
                        index: idx,
                        start,
                        len,
                    };
                    break;
                }
                if entry.tag == tag && index.name(entry) == name.as_bytes() {
                    break; // duplicate: keep the first
                }
                slot = (slot + 1) & index.mask;
            }
        }
        index
    }

    #[inline]
    fn name(&self, s: Slot) -> &[u8] {
        let start = s.start as usize;
        self.arena
            .get(start..start + s.len as usize)
            .unwrap_or_default()
    }

    pub(crate) fn get(&self, name: &str) -> Option<usize> {
        let h = hash(name.as_bytes());
        let tag = (h >> 32) as u32;
        let mut slot = (h as usize) & self.mask;
        loop {
            let entry = self.table[slot];
            if entry.index == 0 {
                return None;
            }
            if entry.tag == tag
                && entry.len as usize == name.len()
                && self.name(entry) == name.as_bytes()
            {
                return Some(entry.index as usize - 1);
            }
            slot = (slot + 1) & self.mask;
        }
    }
}

/// A fixed 64-bit string hash (word-at-a-time multiply–rotate, murmur3 finaliser).
fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h: u64 = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

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

    #[test]
    fn name_index_finds_every_name_and_nothing_else() {
        let names: Vec<String> = (0..1000).map(|i| format!("node-{i:05}")).collect();
        let idx = NameIndex::new(names.iter().map(String::as_str));
        for (i, n) in names.iter().enumerate() {
            assert_eq!(idx.get(n), Some(i));
        }
        assert_eq!(idx.get("node-01000"), None);
        assert_eq!(idx.get(""), None);
        let dup = NameIndex::new(["a", "b", "a"].into_iter());
        assert_eq!(dup.get("a"), Some(0));
    }

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
