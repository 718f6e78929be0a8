//! The worked examples of docs/design-scoring.md#worked-examples, the threshold cases of
//! docs/design-scoring.md#threshold-cases and docs/design-scoring.md#scores-without-an-executor.

use alfred_model::ClusterSnapshot;
use alfred_model::snapshot::PoolAttribution;
use alfred_score::{
    Bins, RepackBlock, ScoreSettings, ThresholdCase, analyze, repack_block, repack_movable,
    score_with, weighted_fragmentation,
};
use alfred_testkit::parts::{
    NOW, bind, executor_on, gpu_node as node, ome_pod as pod, omenative_workload,
    pending_pod as pending, raw_workload, steady_instance,
};

const EPS: f64 = 1e-9;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < EPS
}

macro_rules! assert_close {
    ($a:expr, $b:expr) => {
        assert!(
            close($a, $b),
            "{} = {} (expected {})",
            stringify!($a),
            $a,
            $b
        )
    };
}

/// Example 1: four 8-GPU nodes; A (2 GPUs) on n1, B (2) on n2, an 8-GPU job on n3, a
/// RawDeployment 4-GPU pod on n4; one 8-GPU pod pending 20 minutes.
fn example_1(executor: bool) -> ClusterSnapshot {
    let mut s = ClusterSnapshot {
        observed_at: NOW,
        nodes: ["n1", "n2", "n3", "n4"]
            .iter()
            .map(|n| node(n, "H100", 8))
            .collect(),
        ..ClusterSnapshot::default()
    };
    if executor {
        executor_on(&mut s);
    }
    bind(&mut s, pod("team", "a-0", "n1", 2));
    bind(&mut s, pod("team", "b-0", "n2", 2));
    let mut job = pod("batch", "job-0", "n3", 8);
    job.ome = false;
    bind(&mut s, job);
    bind(&mut s, pod("team", "raw-0", "n4", 4));
    s.workloads = vec![
        omenative_workload(
            "team",
            "a",
            vec![steady_instance(
                "team",
                0,
                &[("a-0".into(), "n1".into(), 2)],
            )],
        ),
        omenative_workload(
            "team",
            "b",
            vec![steady_instance(
                "team",
                0,
                &[("b-0".into(), "n2".into(), 2)],
            )],
        ),
        raw_workload("team", "raw", &[("raw-0".into(), "n4".into(), 4)]),
    ];
    s.pending_pods = vec![pending("team", "big-0", 8, 20)];
    s.normalize();
    s
}

#[test]
fn example_1_executor_available() {
    let s = example_1(true);
    let out = score_with(&s, &ScoreSettings::default());
    assert_eq!(out.pools.len(), 1);
    let p = &out.pools[0];
    assert_eq!(p.pool, "H100");
    assert_eq!(p.total_free, 16);
    let slots: Vec<u64> = p.per_size.iter().map(|x| x.slots).collect();
    assert_eq!(slots, vec![16, 8, 3, 0]);
    let frag: Vec<f64> = p.per_size.iter().map(|x| x.frag).collect();
    for (f, e) in frag.iter().zip([0.0, 0.0, 0.25, 1.0]) {
        assert_close!(*f, e);
    }
    let a = analyze(&s, &ScoreSettings::default());
    let w = &a.pools[0].weights.weights;
    for (x, e) in w.iter().zip([0.03, 0.205, 0.235, 0.53]) {
        assert_close!(*x, e);
    }
    assert_eq!(a.pools[0].demand, vec![0, 4, 4, 8]);
    assert_close!(p.observed, 0.58875);
    assert_close!(p.best, 0.0);
    assert_close!(p.reclaimable, 0.58875);
    let u = 1.0 - (-20.0f64 / 30.0).exp();
    assert_close!(p.pending_pressure, u);
    assert!((p.pending_pressure - 0.4866).abs() < 1e-4);
    let score = 1.0 - (1.0 - 0.58875) * (1.0 - u);
    assert_close!(p.score, score);
    assert!((p.score - 0.7889).abs() < 1e-4);
    assert_eq!(p.threshold_case, ThresholdCase::ExecutionOpen);
    assert_close!(out.score, score);
}

#[test]
fn example_1_executor_unavailable_scores_zero_case_2() {
    let s = example_1(false);
    let out = score_with(&s, &ScoreSettings::default());
    let p = &out.pools[0];
    assert_close!(p.observed, 0.58875);
    assert_close!(p.best, p.observed);
    assert_eq!(p.reclaimable, 0.0);
    assert_eq!(p.pending_pressure, 0.0);
    assert_eq!(p.score, 0.0);
    assert_eq!(out.score, 0.0);
    assert_eq!(p.threshold_case, ThresholdCase::AdvisoryOnly);
    let w = &s.workloads[0];
    assert_eq!(
        repack_block(
            &s,
            w,
            &w.components[0],
            &w.components[0].instances[0],
            "H100",
            &ScoreSettings::default(),
            NOW
        ),
        Some(RepackBlock::Unavailable)
    );
}

#[test]
fn example_1_move_benefit_matches_c9() {
    // docs/design-policies.md#worked-examples: moving A's pod n1 → n4 gives F(after) = 0.32375,
    // benefit 0.265.
    let s = example_1(true);
    let a = analyze(&s, &ScoreSettings::default());
    let pool = a.pool("H100").expect("pool");
    let mut after = pool.bins.clone();
    assert!(after.take("n4", 2));
    assert!(after.release("n1", 2));
    assert_close!(pool.fragmentation(&pool.bins), 0.58875);
    assert_close!(pool.fragmentation(&after), 0.32375);
    assert_close!(
        pool.fragmentation(&pool.bins) - pool.fragmentation(&after),
        0.265
    );
}

#[test]
fn c9_preemptible_source_and_decision_g12() {
    // n1 preemptible with avoidAsTarget: n1 is not a bin, TotalFree 10, F_observed 0.577;
    // the move frees nothing the score sees. Leaving out the size-1 term would give
    // F(after) = 0.712 (benefit −0.135); with the fixed denominator 10 and 8 GPUs left free,
    // frag(1) = 0.2, so F(after) = 0.03·0.2 + 0.205·0.2 + 0.235·0.6 + 0.53 = 0.718.
    let mut s = example_1(true);
    s.nodes[0].preemptible = true;
    let a = analyze(&s, &ScoreSettings::default());
    let pool = a.pool("H100").expect("pool");
    assert_eq!(pool.score.total_free, 10);
    assert_close!(pool.score.observed, 0.577);
    let mut after = pool.bins.clone();
    assert!(after.take("n4", 2));
    assert!(!after.release("n1", 2));
    assert_close!(pool.fragmentation(&after), 0.718);
    // docs/design-policies.md#boosts: count the preemptible source as a bin before and after.
    let mut before = pool.bins.clone();
    before.insert(&s.nodes[0], 0);
    let mut after = before.clone();
    assert!(after.take("n4", 2));
    assert!(after.release("n1", 2));
    let denom = before.total_free();
    assert_eq!(denom, 16);
    let benefit = weighted_fragmentation(&before, &pool.weights, denom)
        - weighted_fragmentation(&after, &pool.weights, denom);
    assert!(benefit > 0.0, "{benefit}");
}

/// Example 2 (the seeds' ten-node example): ten 8-GPU nodes, ten 1-GPU replicas of one
/// OMENative workload, one on each node.
fn example_2(pending_8: bool) -> ClusterSnapshot {
    let mut s = ClusterSnapshot {
        observed_at: NOW,
        nodes: (0..10)
            .map(|i| node(&format!("n{i:02}"), "H100", 8))
            .collect(),
        ..ClusterSnapshot::default()
    };
    executor_on(&mut s);
    let mut instances = Vec::new();
    for i in 0..10 {
        let name = format!("small-engine-{i}");
        let n = format!("n{i:02}");
        bind(&mut s, pod("ml", &name, &n, 1));
        instances.push(steady_instance("ml", i, &[(name, n, 1)]));
    }
    s.workloads = vec![omenative_workload("ml", "small", instances)];
    if pending_8 {
        s.pending_pods = vec![pending("ml", "large-engine-0", 8, 5)];
    }
    s.normalize();
    s
}

#[test]
fn example_2_quiet_without_large_demand() {
    let s = example_2(false);
    let p = &score_with(&s, &ScoreSettings::default()).pools[0];
    assert_eq!(p.total_free, 70);
    let slots: Vec<u64> = p.per_size.iter().map(|x| x.slots).collect();
    assert_eq!(slots, vec![70, 30, 10, 0]);
    assert_close!(p.per_size[1].frag, 1.0 - 60.0 / 70.0);
    assert_close!(p.per_size[2].frag, 1.0 - 40.0 / 70.0);
    assert_close!(p.observed, 0.21);
    // Nothing is pending; the repack still reclaims, but the score stays below θ? No: the
    // reclaimable part alone decides. F_best with w = (0.73, 0.03, 0.06, 0.18):
    let best = 0.06 * (1.0 - 68.0 / 70.0) + 0.18 * (1.0 - 64.0 / 70.0);
    assert_close!(p.best, best);
    assert_close!(p.reclaimable, 0.21 - best);
    assert_eq!(p.pending_pressure, 0.0);
    assert!(p.score < 0.25);
    assert_eq!(p.threshold_case, ThresholdCase::Quiet);
}

#[test]
fn example_2_ten_node_trap_with_pending_8() {
    let s = example_2(true);
    let out = score_with(&s, &ScoreSettings::default());
    let p = &out.pools[0];
    let w1: f64 = 0.7 * (10.0 / 18.0) + 0.03;
    let w8: f64 = 0.7 * (8.0 / 18.0) + 0.18;
    assert!((w1 - 0.4189).abs() < 1e-4 && (w8 - 0.4911).abs() < 1e-4);
    let observed = 0.03 * (1.0 - 60.0 / 70.0) + 0.06 * (1.0 - 40.0 / 70.0) + w8;
    assert_close!(p.observed, observed);
    assert!((p.observed - 0.5211).abs() < 1e-4);
    let best = 0.06 * (1.0 - 68.0 / 70.0) + w8 * (1.0 - 64.0 / 70.0);
    assert_close!(p.best, best);
    assert!((p.best - 0.0438).abs() < 1e-4);
    assert_close!(p.reclaimable, observed - best);
    assert!((p.reclaimable - 0.4773).abs() < 1e-4);
    let u = 1.0 - (-5.0f64 / 30.0).exp();
    assert_close!(p.pending_pressure, u);
    assert!((p.pending_pressure - 0.1535).abs() < 1e-4);
    let score = 1.0 - (1.0 - (observed - best)) * (1.0 - u);
    assert_close!(p.score, score);
    assert!((p.score - 0.5575).abs() < 1e-4);
    assert_eq!(p.threshold_case, ThresholdCase::ExecutionOpen);
}

#[test]
fn example_3_sizes_above_a_node_in_the_score() {
    // Three fully free 8-GPU nodes, one 8-GPU node with 3 free, one free 4-GPU node.
    let mut s = ClusterSnapshot {
        observed_at: NOW,
        nodes: vec![
            node("a", "H100", 8),
            node("b", "H100", 8),
            node("c", "H100", 8),
            node("d", "H100", 8),
            node("e", "H100", 4),
        ],
        ..ClusterSnapshot::default()
    };
    bind(&mut s, pod("x", "p", "d", 5));
    let settings = ScoreSettings {
        size_ladder: vec![4, 8, 16, 24],
        size_prior: [(4, 0.25), (8, 0.25), (16, 0.25), (24, 0.25)]
            .into_iter()
            .collect(),
        ..ScoreSettings::default()
    };
    let p = &score_with(&s, &settings).pools[0];
    let slots: Vec<u64> = p.per_size.iter().map(|x| x.slots).collect();
    assert_eq!(slots, vec![7, 3, 1, 1]);
    assert_eq!(p.total_free, 31);
}

#[test]
fn example_4_one_pending_pod_crosses_the_default_threshold_after_8_63_minutes() {
    // Two 8-GPU nodes, each with one movable 4-GPU Instance: an 8-GPU pod fits only after
    // the repack. No other demand-weighted fragmentation may matter: use pressure alone.
    let build = |minutes: i64| {
        let mut s = ClusterSnapshot {
            observed_at: NOW,
            nodes: vec![node("n1", "H100", 8), node("n2", "H100", 8)],
            ..ClusterSnapshot::default()
        };
        executor_on(&mut s);
        bind(&mut s, pod("ns", "a-0", "n1", 4));
        bind(&mut s, pod("ns", "b-0", "n2", 4));
        s.workloads = vec![
            omenative_workload(
                "ns",
                "a",
                vec![steady_instance("ns", 0, &[("a-0".into(), "n1".into(), 4)])],
            ),
            omenative_workload(
                "ns",
                "b",
                vec![steady_instance("ns", 0, &[("b-0".into(), "n2".into(), 4)])],
            ),
        ];
        s.pending_pods = vec![pending("ns", "big", 8, minutes)];
        s.normalize();
        s
    };
    let p = score_with(&build(8), &ScoreSettings::default()).pools[0].clone();
    assert_close!(p.pending_pressure, 1.0 - (-8.0f64 / 30.0).exp());
    assert!(p.pending_pressure < 0.25);
    let p = score_with(&build(9), &ScoreSettings::default()).pools[0].clone();
    assert!(p.pending_pressure > 0.25);
    assert_eq!(p.threshold_case, ThresholdCase::ExecutionOpen);
}

#[test]
fn threshold_case_classify_is_strict() {
    assert_eq!(
        ThresholdCase::classify(0.3, 0.0, 0.0, 0.25),
        ThresholdCase::ExecutionOpen
    );
    assert_eq!(
        ThresholdCase::classify(0.25, 0.9, 0.0, 0.25),
        ThresholdCase::AdvisoryOnly
    );
    assert_eq!(
        ThresholdCase::classify(0.25, 0.5, 0.25, 0.25),
        ThresholdCase::Quiet
    );
    assert_eq!(
        ThresholdCase::classify(0.0, 0.0, 0.0, 0.25),
        ThresholdCase::Quiet
    );
    assert_eq!(ThresholdCase::Quiet.number(), 3);
    assert_eq!(
        serde_json::to_string(&ThresholdCase::AdvisoryOnly).unwrap(),
        "\"advisoryOnly\""
    );
}

#[test]
fn each_threshold_case_from_a_snapshot() {
    // Case 1: example 1. Case 2: example 1 without executor. Case 3: example 2 quiet.
    let c1 = score_with(&example_1(true), &ScoreSettings::default());
    let c2 = score_with(&example_1(false), &ScoreSettings::default());
    let c3 = score_with(&example_2(false), &ScoreSettings::default());
    assert_eq!(c1.pools[0].threshold_case, ThresholdCase::ExecutionOpen);
    assert_eq!(c2.pools[0].threshold_case, ThresholdCase::AdvisoryOnly);
    assert_eq!(c3.pools[0].threshold_case, ThresholdCase::Quiet);
    // Case 2 with the executor on: nothing movable (all opted out), damage above θ.
    let mut s = example_1(true);
    for w in &mut s.workloads {
        w.settings.movable = false;
    }
    let p = &score_with(&s, &ScoreSettings::default()).pools[0];
    assert_eq!(p.score, 0.0);
    assert_eq!(p.threshold_case, ThresholdCase::AdvisoryOnly);
}

#[test]
fn json_names_are_camel_case() {
    let out = score_with(&example_1(true), &ScoreSettings::default());
    let v = serde_json::to_value(&out).unwrap();
    let p = &v["pools"][0];
    for key in [
        "pool",
        "totalFree",
        "perSize",
        "observed",
        "best",
        "reclaimable",
        "pendingPressure",
        "score",
        "thresholdCase",
    ] {
        assert!(p.get(key).is_some(), "{key} missing in {p}");
    }
    assert_eq!(p.as_object().unwrap().len(), 9);
    for key in ["size", "slots", "frag"] {
        assert!(p["perSize"][0].get(key).is_some());
    }
    assert_eq!(p["thresholdCase"], "executionOpen");
}

#[test]
fn cooling_instances_stay_out_of_the_repack() {
    // docs/design-scoring.md#the-repack: A and B finished a migration 10 minutes ago (cooldown 30).
    let mut s = example_1(true);
    for w in &mut s.workloads {
        w.migration.last_migration = Some(NOW.plus_minutes(-10));
    }
    let p = &score_with(&s, &ScoreSettings::default()).pools[0];
    assert_eq!(p.reclaimable, 0.0);
    assert_eq!(p.pending_pressure, 0.0);
    assert_eq!(p.score, 0.0);
    let w = &s.workloads[0];
    let (c, i) = (&w.components[0], &w.components[0].instances[0]);
    assert_eq!(
        repack_block(&s, w, c, i, "H100", &ScoreSettings::default(), NOW),
        Some(RepackBlock::Cooldown)
    );
    // An override of 5 minutes has expired: movable again.
    for w in &mut s.workloads {
        w.settings.cooldown_minutes = Some(5);
    }
    let w = &s.workloads[0];
    let (c, i) = (&w.components[0], &w.components[0].instances[0]);
    assert!(repack_movable(
        &s,
        w,
        c,
        i,
        "H100",
        &ScoreSettings::default(),
        NOW
    ));
    assert!(!repack_movable(
        &s,
        w,
        c,
        i,
        "A100",
        &ScoreSettings::default(),
        NOW
    ));
    let p = &score_with(&s, &ScoreSettings::default()).pools[0];
    assert_close!(p.reclaimable, 0.58875);
}

#[test]
fn migration_surface_disabled_and_raw_are_not_movable() {
    let s = example_1(true);
    let settings = ScoreSettings {
        omenative_migration_enabled: false,
        ..ScoreSettings::default()
    };
    assert_eq!(score_with(&s, &settings).pools[0].score, 0.0);
    let raw = &s.workloads[2];
    assert_eq!(raw.name, "raw");
    let (c, i) = (&raw.components[0], &raw.components[0].instances[0]);
    assert_eq!(
        repack_block(&s, raw, c, i, "H100", &ScoreSettings::default(), NOW),
        Some(RepackBlock::NotOMENative)
    );
}

#[test]
fn pending_pressure_uses_the_real_pod_size() {
    // docs/design-scoring.md#pending-pressure: a 3-GPU pod next to a node with 3 free GPUs is not
    // stuck, even though its ladder size (4) has no seat.
    let mut s = ClusterSnapshot {
        observed_at: NOW,
        nodes: vec![node("n1", "H100", 8), node("n2", "H100", 8)],
        ..ClusterSnapshot::default()
    };
    executor_on(&mut s);
    bind(&mut s, pod("ns", "a-0", "n1", 5));
    bind(&mut s, pod("ns", "b-0", "n2", 5));
    s.workloads = vec![
        omenative_workload(
            "ns",
            "a",
            vec![steady_instance("ns", 0, &[("a-0".into(), "n1".into(), 5)])],
        ),
        omenative_workload(
            "ns",
            "b",
            vec![steady_instance("ns", 0, &[("b-0".into(), "n2".into(), 5)])],
        ),
    ];
    s.pending_pods = vec![pending("ns", "three", 3, 60)];
    s.normalize();
    let p = &score_with(&s, &ScoreSettings::default()).pools[0];
    assert_eq!(p.pending_pressure, 0.0);
}

#[test]
fn pending_pods_count_only_in_their_pools() {
    let mut s = example_1(true);
    s.nodes.push(node("z1", "A100", 8));
    s.pending_pods[0].pools = PoolAttribution::Pools(vec!["A100".into()]);
    s.normalize();
    let out = score_with(&s, &ScoreSettings::default());
    assert_eq!(out.pools.len(), 2);
    assert_eq!(out.pools[0].pool, "A100");
    assert_eq!(out.pools[0].pending_pressure, 0.0); // seats now on the free node
    let h = &out.pools[1];
    assert_eq!(h.pending_pressure, 0.0);
    assert_close!(h.score, h.reclaimable);
}

#[test]
fn excluded_nodes_are_not_bins_but_their_pods_are_demand() {
    let mut s = example_1(true);
    s.nodes[3].cordoned = true; // n4 with the Raw pod
    let a = analyze(&s, &ScoreSettings::default());
    let p = &a.pools[0];
    assert_eq!(p.score.total_free, 12);
    assert_eq!(p.demand, vec![0, 4, 4, 8]);
    assert!(p.bins.position("n4").is_none());
    let _: &Bins = &p.bins;
}

#[test]
fn empty_and_degenerate_inputs_do_not_panic() {
    let s = ClusterSnapshot::default();
    let out = score_with(&s, &ScoreSettings::default());
    assert_eq!(out.score, 0.0);
    assert!(out.pools.is_empty());
    let weird = ScoreSettings {
        size_ladder: vec![0, 8, 8, 2],
        demand_blend_lambda: f64::NAN,
        size_prior: [(8, f64::INFINITY)].into_iter().collect(),
        pending_urgency_tau_minutes: 0,
        fragmentation_threshold: f64::NAN,
        ..ScoreSettings::default()
    };
    let out = score_with(&example_1(true), &weird);
    let p = &out.pools[0];
    assert_eq!(
        p.per_size.iter().map(|x| x.size).collect::<Vec<_>>(),
        vec![2, 8]
    );
    for v in [
        p.observed,
        p.best,
        p.reclaimable,
        p.pending_pressure,
        p.score,
    ] {
        assert!((0.0..=1.0).contains(&v), "{v}");
    }
}

#[test]
fn settings_from_the_builtin_config_are_the_defaults() {
    let config = alfred_model::config::Config::builtin();
    assert_eq!(
        ScoreSettings::from_config(&config),
        ScoreSettings::default()
    );
    let s = example_1(true);
    assert_eq!(
        alfred_score::score(&s, &config),
        score_with(&s, &ScoreSettings::default())
    );
}

#[test]
fn eligibility_ladder_order_pod_flags_and_reasons() {
    use alfred_model::reason::AdvisoryReason;
    use alfred_score::omenative_eligibility;
    let block = |s: &ClusterSnapshot| {
        let w = &s.workloads[0];
        omenative_eligibility(s, w, &w.components[0], &w.components[0].instances[0])
    };
    let s = example_1(true);
    assert_eq!(block(&s), None);
    // Step 13 reads the pods: one not Ready, or terminating, fails the state check …
    type Edit = fn(&mut alfred_model::snapshot::Pod);
    let edits: [Edit; 2] = [|p| p.ready = false, |p| p.terminating = true];
    for edit in edits {
        let mut t = s.clone();
        t.pods.iter_mut().filter(|p| p.name == "a-0").for_each(edit);
        assert_eq!(block(&t), Some(RepackBlock::StateIneligible));
        // A stays put in the repack: less is reclaimable than with both A and B (0.58875).
        let p = &score_with(&t, &ScoreSettings::default()).pools[0];
        assert!(p.reclaimable < 0.58875 - 1e-6, "{p:?}");
    }
    // … and a pod missing from the snapshot is a missing input.
    let mut t = s.clone();
    t.pods.retain(|p| p.name != "a-0");
    assert_eq!(block(&t), Some(RepackBlock::ObservationInvalid));
    // Without the executor a steady Instance says Unavailable (step 8), and a missing status
    // row is read at step 9, after it; state reasons (step 2) come first.
    let mut t = example_1(false);
    assert_eq!(block(&t), Some(RepackBlock::Unavailable));
    t.workloads[0].components[0].instances[0].status = None;
    assert_eq!(block(&t), Some(RepackBlock::Unavailable));
    executor_on(&mut t);
    assert_eq!(block(&t), Some(RepackBlock::ObservationInvalid));
    t.workloads[0].settings.movable = false;
    assert_eq!(block(&t), Some(RepackBlock::StateIneligible));
    // The reasons the policies report.
    let all = [
        RepackBlock::MigrationSurfaceDisabled,
        RepackBlock::NotOMENative,
        RepackBlock::OutsidePool,
        RepackBlock::ModelUnresolved,
        RepackBlock::VolumePinned,
        RepackBlock::ObservationInvalid,
        RepackBlock::StateIneligible,
        RepackBlock::Unavailable,
        RepackBlock::Cooldown,
    ];
    for b in all {
        match (b, b.advisory_reason()) {
            (RepackBlock::NotOMENative | RepackBlock::OutsidePool, r) => assert_eq!(r, None),
            (RepackBlock::Cooldown, r) => {
                assert_eq!(r, Some(AdvisoryReason::OMENativeStateIneligible))
            }
            (b, Some(r)) => assert_eq!(b.as_str(), r.as_str()),
            (b, None) => panic!("{b:?} has no reason"),
        }
    }
}
