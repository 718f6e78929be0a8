//! A fast, deterministic hash of object names, for finding them among many by a sorted list of
//! hashes (a caller that finds two names hashing alike takes its slower exact path): eight
//! bytes at a time, a multiply and a rotate each, and a final mix; fixed keys (no
//! per-process randomness, which a pure core does not read).

use std::hash::Hasher;

/// The hasher: a 64-bit state fed eight bytes at a time.
#[derive(Debug, Clone, Copy)]
pub struct NameHasher(u64);

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl Default for NameHasher {
    fn default() -> NameHasher {
        NameHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl NameHasher {
    fn mix(&mut self, word: u64) {
        self.0 = (self.0 ^ word).wrapping_mul(K).rotate_left(29);
    }
}

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(c);
            self.mix(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        // The length tells "ab" from "ab\0".
        self.mix(u64::from_le_bytes(word) ^ ((bytes.len() as u64) << 56));
    }

    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h
    }
}

#[cfg(test)]
mod tests {
    use std::hash::Hasher;

    use super::NameHasher;

    fn hash(parts: &[&str]) -> u64 {
        let mut h = NameHasher::default();
        for p in parts {
            h.write(p.as_bytes());
            h.write_u8(0xff);
        }
        h.finish()
    }

    #[test]
    fn names_hash_apart() {
        let mut all: Vec<u64> = (0..20_000)
            .map(|i| hash(&[&format!("node-{i:05}")]))
            .collect();
        all.extend((0..20_000).map(|i| hash(&["ml", &format!("svc-{i}")])));
        all.push(hash(&["m", "lsvc-1"]));
        all.push(hash(&["node-0499\0"]));
        all.push(hash(&["", ""]));
        all.push(hash(&[""]));
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
        assert_eq!(hash(&["ml", "a"]), hash(&["ml", "a"]));
    }
}
