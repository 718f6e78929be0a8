//! The twin's own deterministic generator (xoshiro256**, seeded through splitmix64): every
//! random draw of a run (trace offsets, launch delays, load times, decision id suffixes)
//! comes from `--seed`, so the same seed gives byte-identical output. No external crate.

/// One splitmix64 step: seeds xoshiro and derives independent streams.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A xoshiro256** generator.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator for `seed` and a named stream, so that adding draws to one part of the
    /// model does not shift another part's draws.
    pub fn stream(seed: u64, name: &str) -> Rng {
        let mut h = seed ^ 0x5851_F42D_4C95_7F2D;
        for b in name.bytes() {
            h = h.rotate_left(8) ^ u64::from(b);
            splitmix64(&mut h);
        }
        let mut sm = h;
        Rng {
            s: [
                splitmix64(&mut sm),
                splitmix64(&mut sm),
                splitmix64(&mut sm),
                splitmix64(&mut sm),
            ],
        }
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        // 53 random bits: exact in an f64.
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi)`.
    pub fn between(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }

    /// Log-normally distributed with the given median and spread (`sigma` of the log).
    pub fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        median * (sigma * self.normal()).exp()
    }

    /// Standard normal (Box–Muller, one value per call).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_repeats_for_its_seed_and_differs_by_name() {
        let a: Vec<u64> = (0..4).map(|_| Rng::stream(7, "x").next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(
            Rng::stream(7, "x").next_u64(),
            Rng::stream(7, "y").next_u64()
        );
        assert_ne!(
            Rng::stream(7, "x").next_u64(),
            Rng::stream(8, "x").next_u64()
        );
    }

    #[test]
    fn draws_stay_in_their_ranges() {
        let mut r = Rng::stream(1, "t");
        for _ in 0..10_000 {
            let u = r.uniform();
            assert!((0.0..1.0).contains(&u));
            let b = r.between(2.0, 3.0);
            assert!((2.0..3.0).contains(&b));
            assert!(r.lognormal(60.0, 0.3) > 0.0);
        }
    }
}
