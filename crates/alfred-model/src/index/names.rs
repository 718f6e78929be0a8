//! Name tables: the arena that keeps the workloads' keys and the nodes' names by position,
//! and the node name → position table the index probes.

/// Strings by position, in one arena: the workloads' keys (`namespace/name`, by position in
/// `ClusterSnapshot::workloads`), the nodes' names (by position in `ClusterSnapshot::nodes`).
/// Why: the defragmentation walk counts thousands of advice rows a pass and names each
/// row's workload and source node by position; a key built per row read two cold strings
/// per row, about a tenth of a pass on the trace cluster, and a node name copied per row
/// was an allocation per row. Carried over like the other tables, the workloads' arena is
/// copied, not rebuilt from the workloads, and the nodes' is shared.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NameArena {
    text: String,
    /// Per position: where its string ends in `text`.
    ends: Vec<u32>,
}

impl NameArena {
    /// The string at `position`.
    pub fn get(&self, position: usize) -> Option<&str> {
        let end = *self.ends.get(position)? as usize;
        let start = match position {
            0 => 0,
            p => self.ends[p - 1] as usize,
        };
        self.text.get(start..end)
    }

    /// How many strings there are.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// An empty arena with room for `strings` strings of `text_len` bytes in all.
    pub(super) fn with_capacity(text_len: usize, strings: usize) -> NameArena {
        NameArena {
            text: String::with_capacity(text_len),
            ends: Vec::with_capacity(strings),
        }
    }

    /// The bytes of all its strings together.
    pub(super) fn text_len(&self) -> usize {
        self.text.len()
    }

    /// The heap bytes it holds.
    pub(super) fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * std::mem::size_of::<u32>()
    }

    /// Appends `key` as the next string.
    pub fn push_key(&mut self, key: &str) {
        self.text.push_str(key);
        self.ends.push(self.text.len() as u32);
    }

    /// Appends `namespace/name` as the next key.
    pub(super) fn push(&mut self, namespace: &str, name: &str) {
        self.text.push_str(namespace);
        self.text.push('/');
        self.text.push_str(name);
        self.ends.push(self.text.len() as u32);
    }

    /// Appends `other`'s key at `position` (an empty key when there is none).
    pub(super) fn push_from(&mut self, other: &NameArena, position: usize) {
        self.text.push_str(other.get(position).unwrap_or(""));
        self.ends.push(self.text.len() as u32);
    }
}

/// Node name → index, as an open-addressing table with a fixed hash (no `HashMap`: the
/// table is only probed, never iterated, so no output can depend on hash order). The names
/// are copied into one contiguous arena and each slot carries the name's place in it, so a
/// probe touches one table slot and one arena range rather than the node structs.
///
/// With duplicate names the first one in input order wins (Kubernetes names are unique).
pub(super) struct NameIndex {
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
    pub(super) fn new<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> Self {
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

    pub(super) fn get(&self, name: &str) -> Option<usize> {
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
