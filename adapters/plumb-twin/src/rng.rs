//! The twin's deterministic generator: the shared [`seeded_rng`] (xoshiro256**, seeded
//! through splitmix64). Every random draw of a run (trace offsets, launch delays, load times,
//! decision id suffixes) comes from `--seed` through a named stream, so the same seed gives
//! byte-identical output.

pub use seeded_rng::Rng;

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
