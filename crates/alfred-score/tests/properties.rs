//! Properties of the score over random clusters: several pools, mixed 1/2/4/8-GPU nodes,
//! movable and fixed Instances, pending pods of all sizes.

use alfred_model::ClusterSnapshot;
use alfred_model::snapshot::DeploymentMode;
use alfred_score::{ScoreSettings, analyze, repack_movable, score_with};
use alfred_testkit::random::{SmallClusterShape as Knobs, shuffled, small_cluster as cluster};
use proptest::prelude::*;

fn knobs() -> impl Strategy<Value = Knobs> {
    (
        any::<u64>(),
        1usize..16,
        0usize..14,
        0usize..6,
        prop::bool::weighted(0.8),
        prop::bool::weighted(0.15),
        0u64..40,
    )
        .prop_map(
            |(seed, nodes, workloads, pending, executor, all_fixed, excluded_percent)| Knobs {
                seed,
                nodes,
                workloads,
                pending,
                executor,
                all_fixed,
                excluded_percent,
            },
        )
}

/// The repack exactly as docs/design-scoring.md#the-repack writes it, one item at a time (O(items ·
/// bins)).
fn reference_repack(
    s: &ClusterSnapshot,
    pool: &str,
    names: &[&str],
    free: &[u32],
    cap: &[u32],
) -> Vec<u32> {
    let settings = ScoreSettings::default();
    let mut items: Vec<(u32, String, String)> = Vec::new(); // (gpus, key, home)
    for w in &s.workloads {
        for c in &w.components {
            for inst in &c.instances {
                if !repack_movable(s, w, c, inst, pool, &settings, s.observed_at) {
                    continue;
                }
                for key in &inst.pods {
                    let Some(p) = s.pod_by_key(key) else { continue };
                    if p.gpus == 0 || p.node.is_empty() {
                        continue;
                    }
                    let Some(n) = s.node(&p.node) else { continue };
                    if n.has_gpus() && n.pool.as_deref() == Some(pool) {
                        items.push((p.gpus, key.clone(), p.node.clone()));
                    }
                }
            }
        }
    }
    let mut f: Vec<u32> = free.to_vec();
    for (g, _, home) in &items {
        if let Some(h) = names.iter().position(|n| n == home) {
            f[h] = (f[h] + g).min(cap[h]);
        }
    }
    items.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut order: Vec<usize> = (0..f.len()).collect();
    order.sort_by(|a, b| f[*a].cmp(&f[*b]).then(names[*a].cmp(names[*b])));
    for (g, _, home) in &items {
        match order.iter().find(|b| f[**b] >= *g && *g <= cap[**b]) {
            Some(b) => f[*b] -= g,
            None => {
                if let Some(h) = names.iter().position(|n| n == home) {
                    f[h] = f[h].saturating_sub(*g);
                }
            }
        }
    }
    f
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn values_are_fractions_and_slots_fit(k in knobs()) {
        let s = cluster(k);
        let a = analyze(&s, &ScoreSettings::default());
        let mut max = 0.0f64;
        for p in &a.pools {
            let sc = &p.score;
            for v in [sc.observed, sc.best, sc.reclaimable, sc.pending_pressure, sc.score] {
                prop_assert!((0.0..=1.0).contains(&v), "{v} in {sc:?}");
            }
            prop_assert!((sc.reclaimable - (sc.observed - sc.best)).abs() < 1e-15);
            for x in &sc.per_size {
                prop_assert!((0.0..=1.0).contains(&x.frag));
                prop_assert!(x.slots * u64::from(x.size) <= sc.total_free, "{x:?} free {}", sc.total_free);
            }
            prop_assert_eq!(sc.total_free, p.bins.total_free());
            max = max.max(sc.score);
        }
        prop_assert_eq!(a.score, max);
    }

    #[test]
    fn repack_matches_the_spec_and_respects_capacity(k in knobs()) {
        let s = cluster(k);
        let a = analyze(&s, &ScoreSettings::default());
        for p in &a.pools {
            let names: Vec<&str> = p.bins.iter().map(|b| b.name).collect();
            let expected = reference_repack(&s, &p.score.pool, &names, p.bins.free(), p.bins.caps());
            prop_assert_eq!(&p.repacked, &expected, "pool {}", p.score.pool);
            for (f, c) in p.repacked.iter().zip(p.bins.caps()) {
                prop_assert!(f <= c);
            }
            let after: u64 = p.repacked.iter().map(|f| u64::from(*f)).sum();
            prop_assert!(after <= p.score.total_free);
        }
    }

    #[test]
    fn best_never_exceeds_observed(k in knobs()) {
        let s = cluster(k);
        let a = analyze(&s, &ScoreSettings::default());
        for p in &a.pools {
            let sc = &p.score;
            prop_assert!(sc.best <= sc.observed, "{sc:?}");
            prop_assert_eq!(sc.best, p.repacked_fragmentation.min(sc.observed));
            prop_assert_eq!(sc.reclaimable, (sc.observed - p.repacked_fragmentation).max(0.0));
        }
    }

    #[test]
    fn nothing_movable_means_nothing_reclaimable(k in knobs()) {
        let s = cluster(Knobs { all_fixed: true, ..k });
        let settings = ScoreSettings::default();
        for w in &s.workloads {
            for c in &w.components {
                for i in &c.instances {
                    for pool in s.pools() {
                        prop_assert!(!repack_movable(&s, w, c, i, &pool, &settings, s.observed_at));
                    }
                }
            }
        }
        for p in &score_with(&s, &settings).pools {
            prop_assert_eq!(p.reclaimable, 0.0);
            prop_assert_eq!(p.pending_pressure, 0.0);
            prop_assert_eq!(p.score, 0.0);
            prop_assert_eq!(p.best, p.observed);
        }
        let off = cluster(Knobs { executor: false, ..k });
        for p in &score_with(&off, &settings).pools {
            prop_assert_eq!(p.score, 0.0);
        }
    }

    #[test]
    fn input_order_does_not_matter(k in knobs(), shuffle_seed in any::<u64>()) {
        let s = cluster(k);
        let t = shuffled(&s, shuffle_seed); // deliberately not normalized
        let settings = ScoreSettings::default();
        prop_assert_eq!(score_with(&s, &settings), score_with(&t, &settings));
    }
}

#[test]
fn raw_workloads_in_generated_clusters_are_never_movable() {
    let s = cluster(Knobs {
        seed: 7,
        nodes: 12,
        workloads: 14,
        pending: 3,
        executor: true,
        all_fixed: false,
        excluded_percent: 10,
    });
    let settings = ScoreSettings::default();
    for w in &s.workloads {
        for c in &w.components {
            if c.mode == DeploymentMode::RawDeployment {
                for i in &c.instances {
                    for pool in s.pools() {
                        assert!(!repack_movable(
                            &s,
                            w,
                            c,
                            i,
                            &pool,
                            &settings,
                            s.observed_at
                        ));
                    }
                }
            }
        }
    }
}
