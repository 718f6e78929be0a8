//! `plumb-chaos --runs N [--seed S] [--minutes M]`: runs seeds S, S+1, …, S+N−1 (each run a
//! pure function of its seed) and exits non-zero at the first run that breaks an invariant,
//! naming its seed and the command that replays it. The last line is always the summary
//! `N runs, … V violations`.

use std::collections::BTreeMap;
use std::process::ExitCode;

use clap::Parser;
use plumb_chaos::campaign::{Options, run};
use plumb_chaos::world::FleetCopies;

/// Randomized fault campaign of Plumb's quorum, hub step and fencing.
#[derive(Debug, Parser)]
#[command(name = "plumb-chaos")]
struct Args {
    /// Runs (seeds S … S+N−1).
    #[arg(long, default_value_t = 10)]
    runs: u64,
    /// The first run's seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Minutes of faults per run (then a calm stretch for the last outcome lines).
    #[arg(long, default_value_t = 60)]
    minutes: u32,
    /// No faults (the baseline).
    #[arg(long)]
    calm: bool,
    /// Store `status.fleet` on the hub's own copy only, as Plumb's spec has it (the default
    /// stores it on a majority of copies before acting).
    #[arg(long)]
    own_copy: bool,
    /// One line per run.
    #[arg(long)]
    verbose: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let started = std::time::Instant::now();
    let options = Options {
        minutes: args.minutes,
        calm: args.calm,
        fleet_copies: if args.own_copy {
            FleetCopies::Own
        } else {
            FleetCopies::Majority
        },
    };
    let mut faults: BTreeMap<&'static str, u64> = BTreeMap::new();
    let (mut steps, mut decisions, mut outcomes, mut followed, mut finished) = (0, 0, 0, 0, 0);
    let (mut judged, mut releases, mut served) = (0, 0, 0);
    let (mut crashes, mut partitions, mut checks, mut writes, mut orphans) = (0, 0, 0, 0, 0);
    let mut violations = 0usize;
    let mut runs = 0u64;
    for k in 0..args.runs {
        let seed = args.seed.wrapping_add(k);
        let r = run(seed, options);
        runs += 1;
        if args.verbose {
            println!(
                "seed {seed}: {} members, policies {:?}, {} steps, {} decisions, followed {:?}, {} crashes, {} partitions, {} violations",
                r.members,
                r.policies,
                r.counters.hub_steps,
                r.counters.decisions,
                r.followed,
                r.counters.crashes,
                r.counters.partitions,
                r.violations.len()
            );
        }
        steps += r.counters.hub_steps;
        decisions += r.counters.decisions;
        outcomes += r.counters.outcome_lines;
        followed += r.followed.0;
        finished += r.followed.1;
        judged += r.followed.2;
        releases += r.judged.0;
        served += r.judged.1;
        crashes += r.counters.crashes;
        partitions += r.counters.partitions;
        writes += r.counters.writes;
        checks += r.checks;
        orphans += r.orphan_outcomes;
        for (kind, n) in &r.faults {
            *faults.entry(kind).or_insert(0) += n;
        }
        if let Some(v) = r.violations.first() {
            violations = r.violations.len();
            eprintln!(
                "chaos-plumb: seed {seed} broke `{}` at {} s: {}",
                v.invariant,
                v.at_ms / 1000,
                v.detail
            );
            eprintln!(
                "replay: cargo xtask chaos-plumb --seed {seed} --runs 1 --minutes {}{}{}",
                args.minutes,
                if args.calm { " --calm" } else { "" },
                if args.own_copy { " --own-copy" } else { "" }
            );
            break;
        }
    }
    let injected: u64 = faults.values().sum();
    println!("chaos-plumb: faults by kind: {faults:?}");
    println!(
        "{runs} runs, seeds {}..={}, {} min of faults each, {steps} hub steps, {decisions} decisions ({followed} followed, {judged} judged for their outcome lines, {finished} with their final line), {outcomes} outcome lines ({orphans} of unlogged decisions), {writes} intent and weight writes, {releases} floors lowered, {served} floors served, {crashes} hub crashes mid-step, {partitions} partitions, {injected} faults injected, {checks} invariant checks in {:.1} s, {violations} violations",
        args.seed,
        args.seed.wrapping_add(runs.saturating_sub(1)),
        args.minutes,
        started.elapsed().as_secs_f64()
    );
    if violations > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
