//! `RuntimeOptions::telemetry`: a pass that builds no telemetry decides, records, writes
//! and remembers exactly what a pass with every effect does. Its effects are the full
//! pass's without the metric updates and the InferenceService Events, in the same order,
//! and its second ending (a failed journal save after the request) is the full one's too.

use alfred_dispatch::PassOutput;
use alfred_model::ClusterSnapshot;
use alfred_model::config::{Config, Telemetry};
use alfred_model::effect::Effect;
use alfred_testkit::random::small_cluster;
use proptest::prelude::*;

mod common;
mod reporting;

use common::{World, requests};

/// `out` as a pass without telemetry returns it: the telemetry effects left out, the
/// second ending's save found at its place in what is left.
fn without_telemetry(mut out: PassOutput) -> PassOutput {
    if let Some(c) = &mut out.if_final_save_fails {
        let kept_before = out.effects[..c.save_index]
            .iter()
            .filter(|e| !e.is_telemetry())
            .count();
        c.save_index = kept_before;
        c.then.retain(|e| !e.is_telemetry());
    }
    out.effects.retain(|e| !e.is_telemetry());
    out
}

fn telemetry_count(out: &PassOutput) -> usize {
    let then = out.if_final_save_fails.iter().flat_map(|c| &c.then);
    out.effects
        .iter()
        .chain(then)
        .filter(|e| e.is_telemetry())
        .count()
}

/// Three passes five minutes apart on `cluster` under `config`, once per telemetry
/// setting, compared pass by pass. Returns how many telemetry effects the full passes made
/// and whether any pass requested a move.
fn compare(cluster: ClusterSnapshot, config: &Config, execute: bool) -> (usize, bool) {
    let (mut made, mut requested) = (0, false);
    let settings = (Telemetry::Full, Telemetry::DecisionsOnly);
    reporting::three_passes(cluster, config, execute, settings, |with, without, pass| {
        assert_eq!(telemetry_count(&without), 0, "pass {pass}");
        made += telemetry_count(&with);
        requested |= with
            .effects
            .iter()
            .any(|e| matches!(e, Effect::RequestMigration { .. }));
        assert_eq!(without_telemetry(with), without, "pass {pass}");
    });
    (made, requested)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn a_pass_without_telemetry_is_the_full_pass_without_it(
        shape in reporting::shape(),
        execute in any::<bool>(),
    ) {
        let (made, _) = compare(small_cluster(shape), &reporting::config(execute), execute);
        // Every pass reports at least its gauges: the comparison compared something.
        prop_assert!(made > 0);
    }
}

/// The dispatch harness's execute-mode world, once per telemetry setting: its first pass
/// requests a move, saves the journal after it (so the pass has its second ending) and
/// Events and counts it; the next passes follow it.
#[test]
fn a_requested_move_is_the_same_without_telemetry() {
    let mut full = World::execute();
    let mut quiet = World::execute();
    quiet.runtime = quiet
        .runtime
        .clone()
        .with_telemetry(Telemetry::DecisionsOnly);
    let mut endings = 0;
    for pass in 0..3 {
        let (with, without) = (full.pass(), quiet.pass());
        if pass == 0 {
            assert_eq!(requests(&with), 1);
        }
        endings += usize::from(with.if_final_save_fails.is_some());
        assert!(telemetry_count(&with) > 0, "pass {pass}");
        assert_eq!(telemetry_count(&without), 0, "pass {pass}");
        assert_eq!(without_telemetry(with), without, "pass {pass}");
        full.advance_minutes(5);
        quiet.advance_minutes(5);
    }
    assert!(endings > 0, "no pass had a second ending");
}
