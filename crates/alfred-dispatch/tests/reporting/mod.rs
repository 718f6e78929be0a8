#![allow(dead_code)]
//! What the tests of `RuntimeOptions::telemetry` share: the same passes run by caretakers
//! that differ only in what they report.

use alfred_dispatch::{
    Caretaker, DerivedUuids, GuardObservation, ModelSimulator, PassOutput, Reading,
};
use alfred_model::ClusterSnapshot;
use alfred_model::config::{Config, RuntimeOptions, Telemetry};
use alfred_testkit::random::SmallClusterShape;
use proptest::prelude::*;

const EXECUTE: &str = include_str!("../../../../fixtures/configs/execute-mode.yaml");

/// The execute-mode fixture's configuration, or the default (recommend-only) one.
pub fn config(execute: bool) -> Config {
    if execute {
        Config::from_yaml(EXECUTE).expect("the execute-mode fixture reads")
    } else {
        Config::default()
    }
}

/// Small random clusters with a migration executor.
pub fn shape() -> impl Strategy<Value = SmallClusterShape> {
    (any::<u64>(), 1usize..14, 0usize..12, 0usize..6, 0u64..40).prop_map(
        |(seed, nodes, workloads, pending, excluded_percent)| SmallClusterShape {
            seed,
            nodes,
            workloads,
            pending,
            executor: true,
            all_fixed: false,
            excluded_percent,
        },
    )
}

/// Three passes five minutes apart on `cluster` under `config`, by one caretaker reporting
/// as `a` and one reporting as `b` (same UUIDs), each pair of outputs handed to `compare`
/// with the pass's number.
pub fn three_passes(
    mut cluster: ClusterSnapshot,
    config: &Config,
    execute: bool,
    (a, b): (Telemetry, Telemetry),
    mut compare: impl FnMut(PassOutput, PassOutput, i64),
) {
    let start = cluster.observed_at;
    let runtime = if execute {
        RuntimeOptions::with_executor("ome-alfred")
    } else {
        RuntimeOptions::recommend_only()
    };
    let caretaker = |telemetry| {
        Caretaker::new(
            runtime.clone().with_telemetry(telemetry),
            DerivedUuids::new([7; 32]),
        )
    };
    let (mut first, mut second) = (caretaker(a), caretaker(b));
    let guard = GuardObservation::assumed_installed("ome", "ome-alfred");
    for pass in 0..3 {
        let now = start.plus_minutes(5 * pass);
        cluster.observed_at = now;
        let reading = || Reading::new(&cluster, config, now).guard(&guard);
        let x = first.pass(reading(), &mut ModelSimulator::new(config));
        let y = second.pass(reading(), &mut ModelSimulator::new(config));
        compare(x, y, pass);
    }
}
