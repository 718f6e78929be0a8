//! The campaign's only source of randomness: a seeded stream per run (`fastrand`'s wyrand,
//! pinned by the lock file), so a run is a pure function of its seed and a failing seed
//! replays exactly.

/// A seeded generator.
#[derive(Debug, Clone)]
pub struct Rng(fastrand::Rng);

impl Rng {
    /// A stream for `seed`; `stream` separates independent draws of one run.
    pub fn new(seed: u64, stream: u64) -> Rng {
        Rng(fastrand::Rng::with_seed(
            seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F),
        ))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.u64(..)
    }

    /// A value in `lo..=hi` (`lo` when `hi < lo`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// A value in `lo..=hi` as i64.
    pub fn range_i64(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        let span = hi.abs_diff(lo).saturating_add(1);
        lo.saturating_add_unsigned(self.next_u64() % span)
    }

    /// True with probability `p` (0 to 1).
    pub fn chance(&mut self, p: f64) -> bool {
        // 53 random bits as a fraction in [0, 1)
        let x = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        x < p
    }

    /// An index below `len` (0 when empty).
    pub fn index(&mut self, len: usize) -> usize {
        if len == 0 {
            return 0;
        }
        usize::try_from(self.next_u64() % len as u64).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn the_same_seed_gives_the_same_stream_and_ranges_hold() {
        let mut a = Rng::new(7, 1);
        let mut b = Rng::new(7, 1);
        let mut c = Rng::new(7, 2);
        let xs: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..5).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..5).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
        for _ in 0..1000 {
            let v = a.range(3, 9);
            assert!((3..=9).contains(&v));
            let w = a.range_i64(-2, 2);
            assert!((-2..=2).contains(&w));
            assert!(a.index(4) < 4);
        }
    }
}
