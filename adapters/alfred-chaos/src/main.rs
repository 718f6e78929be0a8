//! `alfred-chaos --runs N --seed S [--passes P]`: runs seeds S, S+1, …, S+N−1 (each run is a
//! pure function of its seed) and exits non-zero at the first run that breaks an invariant,
//! printing its seed and the command that reproduces it.

use std::process::ExitCode;

use clap::Parser;

/// Randomized fault campaign of alfred's decision loop.
#[derive(Debug, Parser)]
#[command(name = "alfred-chaos")]
struct Args {
    /// Runs (seeds S … S+N−1).
    #[arg(long, default_value_t = 10)]
    runs: u64,
    /// The first run's seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Decision passes per run.
    #[arg(long, default_value_t = 200)]
    passes: u32,
    /// No faults (the baseline: how much the same runs dispatch undisturbed).
    #[arg(long)]
    calm: bool,
    /// Print one line per run.
    #[arg(long)]
    verbose: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let started = std::time::Instant::now();
    let mut totals = alfred_chaos::campaign::RunReport::default();
    let mut runs_by_protection = std::collections::BTreeMap::new();
    let mut runs_with_plans = 0u64;
    for i in 0..args.runs {
        let seed = args.seed.wrapping_add(i);
        let r = alfred_chaos::campaign::run(seed, args.passes, args.calm);
        if args.verbose {
            println!(
                "seed {seed}: {} passes, {} requests, {} completed, {} failed, {} API requests, \
                 protection {}, plans {} started {} ended, nominations {} set {} cleared, taints {} set {} removed, \
                 reloads {} loaded {} rejected, faults {:?}",
                r.passes,
                r.requests,
                r.completed,
                r.failed,
                r.api_requests,
                r.protection,
                r.plans_started,
                r.plans_ended,
                r.nominations_set,
                r.nominations_cleared,
                r.taints_set,
                r.taints_removed,
                r.config_reloads,
                r.config_rejected,
                r.faults
            );
        }
        *runs_by_protection.entry(r.protection).or_insert(0u64) += 1;
        if r.plans_started > 0 {
            runs_with_plans += 1;
        }
        totals.plans_started += r.plans_started;
        totals.plans_ended += r.plans_ended;
        totals.nominations_set += r.nominations_set;
        totals.nominations_cleared += r.nominations_cleared;
        totals.taints_set += r.taints_set;
        totals.taints_removed += r.taints_removed;
        totals.leftover_checks += r.leftover_checks;
        totals.config_reloads += r.config_reloads;
        totals.config_rejected += r.config_rejected;
        totals.passes += r.passes;
        totals.requests += r.requests;
        totals.completed += r.completed;
        totals.failed += r.failed;
        totals.api_requests += r.api_requests;
        totals.writes += r.writes;
        for (k, v) in &r.faults {
            *totals.faults.entry(k).or_insert(0) += v;
        }
        if let Some((pass, v)) = r.violations.first() {
            eprintln!(
                "chaos: seed {seed} broke `{}` in pass {pass}: {}\nreproduce: cargo xtask chaos --seed {seed} --runs 1 --passes {}",
                v.invariant, v.detail, args.passes
            );
            return ExitCode::FAILURE;
        }
    }
    let injected: u64 = totals.faults.values().sum();
    println!(
        "chaos: {} runs (seeds {}..={}), {} passes, {} alfred requests landed, {} migrations completed, {} failed, {} API requests, {} writes checked, {injected} faults injected, 0 violations ({:.1} s)",
        args.runs,
        args.seed,
        args.seed.wrapping_add(args.runs.saturating_sub(1)),
        totals.passes,
        totals.requests,
        totals.completed,
        totals.failed,
        totals.api_requests,
        totals.writes,
        started.elapsed().as_secs_f64()
    );
    println!(
        "chaos: drain plans: {runs_with_plans} runs started plans (protection by run {runs_by_protection:?}), {} started, {} ended; nominations {} set, {} cleared; taints {} set, {} removed; {} leftover checks; config reloads {} loaded, {} rejected",
        totals.plans_started,
        totals.plans_ended,
        totals.nominations_set,
        totals.nominations_cleared,
        totals.taints_set,
        totals.taints_removed,
        totals.leftover_checks,
        totals.config_reloads,
        totals.config_rejected
    );
    println!("chaos: faults by kind: {:?}", totals.faults);
    ExitCode::SUCCESS
}
