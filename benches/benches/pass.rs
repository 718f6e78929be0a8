//! One decision pass on `generate_cluster` snapshots: the policies alone
//! (`alfred_policy::propose_with`) and a whole pass through `alfred_dispatch::Caretaker` with the real stages
//! (`CoreStages`), in recommend-only mode and in execute mode, with no simulator (recommend-only:
//! `simulation_configured: false`; execute: a simulator that answers `Unavailable`, so no move
//! passes the pre-submit re-check and the pass writes no journal entry).
//!
//! `cargo bench -p alfred-benches --bench pass` (`ALFRED_BENCH_SIZES=1k,5k` picks sizes;
//! `ALFRED_BENCH_SECS=2` sets criterion's measurement time; `ALFRED_BENCH_PLANS=off` disables
//! drain plans, to measure what they add on the same machine at the same hour). Besides
//! criterion's report,
//! each size prints one line with the median of a few wall-clock runs and the number of
//! candidates (executable ones in brackets).

use std::hint::black_box;
use std::time::Duration;

use alfred_benches::generate_cluster;
use alfred_dispatch::{
    Caretaker, DerivedUuids, DurableState, GuardObservation, Journal, JournalSlot, MoveSimulation,
    Reading, SimulationOutcome, Simulator,
};
use alfred_model::config::{Config, Mode, RuntimeOptions, Telemetry};
use alfred_model::reason::SchedulingReason;
use alfred_model::{ClusterSnapshot, Timestamp};
use criterion::{Criterion, criterion_group, criterion_main};

/// `(label, nodes, pods)`; `L` is the score bench's L size.
const SIZES: [(&str, usize, usize); 3] = [
    ("1k", 1_000, 10_000),
    ("5k", 5_000, 50_000),
    ("L", 5_000, 150_000),
];

/// No simulator: every request is `Unavailable`.
struct NoSimulator;

impl Simulator for NoSimulator {
    fn simulate(&mut self, _: &MoveSimulation<'_>) -> SimulationOutcome {
        SimulationOutcome::of(SchedulingReason::WorkerFailed)
    }
}

struct Fixture {
    snap: ClusterSnapshot,
    runtime: RuntimeOptions,
    state: DurableState,
    guard: GuardObservation,
    uuids: Vec<String>,
}

impl Fixture {
    fn new(snap: ClusterSnapshot) -> Self {
        let runtime = RuntimeOptions {
            migration_api_version: Some(alfred_model::config::MigrationApiVersion::V1),
            migration_service_account: "alfred".into(),
            simulation_configured: false,
            // What `alfred run` allows: the bench times the pass it runs.
            helper_threads: true,
            ..RuntimeOptions::default()
        };
        Fixture {
            snap,
            runtime,
            state: DurableState {
                journal: JournalSlot::Readable(Journal::empty()),
                ..DurableState::default()
            },
            guard: GuardObservation::assumed_installed("alfred-system", "alfred"),
            uuids: (0..4)
                .map(|i| format!("00000000-0000-4000-8000-{i:012}"))
                .collect(),
        }
    }

    /// One pass of a new term over the fixture's state (the same inputs every time).
    fn pass(&self, config: &Config) -> alfred_dispatch::PassOutput {
        self.pass_reporting(config, Telemetry::Full)
    }

    /// [`Fixture::pass`] reporting as `telemetry` says (an embedder that reads decisions
    /// only, like the twin, counts the advice: `DecisionsCountingAdvice`).
    fn pass_reporting(&self, config: &Config, telemetry: Telemetry) -> alfred_dispatch::PassOutput {
        let runtime = self.runtime.clone().with_telemetry(telemetry);
        let mut caretaker = Caretaker::new(runtime, DerivedUuids::new([0; 32]))
            .with_identity("alfred-system", "alfred-config");
        let reading = Reading::new(&self.snap, config, self.snap.observed_at)
            .state(self.state.clone())
            .guard(&self.guard)
            .uuids(&self.uuids);
        caretaker.pass(reading, &mut NoSimulator)
    }
}

fn bench_pass(c: &mut Criterion) {
    let filter: Vec<String> = alfred_benches::size_filter();
    let secs: u64 = std::env::var("ALFRED_BENCH_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let mut recommend = Config::default();
    recommend.policies.defragmentation.drain_plans.enabled =
        std::env::var("ALFRED_BENCH_PLANS").map_or(true, |v| v != "off");
    let execute = Config {
        mode: Mode::Execute,
        ..recommend.clone()
    };
    let mut lines = Vec::new();
    for (name, nodes, pods) in SIZES {
        if !alfred_benches::size_selected(&filter, "pass", name) {
            continue;
        }
        let fx = Fixture::new(generate_cluster(nodes, pods, 0xA1F2_ED00 + nodes as u64));
        let now: Timestamp = fx.snap.observed_at;
        // The policies as the pass runs them (helper threads allowed, as in `alfred run`).
        let policies = alfred_policy::PolicySettings {
            helper_threads: true,
            ..alfred_policy::PolicySettings::from_config(&recommend)
        };
        let mut group = c.benchmark_group(format!("pass/{name}"));
        group.sample_size(10);
        group.warm_up_time(Duration::from_millis(300));
        group.measurement_time(Duration::from_secs(secs));
        group.bench_function("propose", |b| {
            b.iter(|| alfred_policy::propose_with(black_box(&fx.snap), &policies, now))
        });
        group.bench_function("run_pass recommend-only", |b| {
            b.iter(|| fx.pass(black_box(&recommend)))
        });
        group.bench_function("run_pass execute", |b| {
            b.iter(|| fx.pass(black_box(&execute)))
        });
        group.bench_function("run_pass execute counting advice", |b| {
            b.iter(|| fx.pass_reporting(black_box(&execute), Telemetry::DecisionsCountingAdvice))
        });
        group.finish();

        let runs = 7;
        let propose_t = alfred_benches::median(runs, || {
            black_box(alfred_policy::propose_with(
                black_box(&fx.snap),
                &policies,
                now,
            ));
        });
        let rec_t = alfred_benches::median(runs, || {
            black_box(fx.pass(&recommend));
        });
        let exe_t = alfred_benches::median(runs, || {
            black_box(fx.pass(&execute));
        });
        let counted_t = alfred_benches::median(runs, || {
            black_box(fx.pass_reporting(&execute, Telemetry::DecisionsCountingAdvice));
        });
        let proposal = alfred_policy::propose(&fx.snap, &recommend, now);
        let executable = proposal.candidates.iter().filter(|c| c.executable).count();
        lines.push(format!(
            "{name:>3} nodes {nodes:>6} pods {pods:>7} | candidates {:>6} ({executable} executable) | propose {:>9.2} ms | pass recommend-only {:>9.2} ms | pass execute {:>9.2} ms | counting advice {:>9.2} ms",
            proposal.candidates.len(),
            propose_t.as_secs_f64() * 1e3,
            rec_t.as_secs_f64() * 1e3,
            exe_t.as_secs_f64() * 1e3,
            counted_t.as_secs_f64() * 1e3,
        ));
    }
    println!();
    for l in lines {
        println!("{l}");
    }
}

criterion_group!(benches, bench_pass);
criterion_main!(benches);
