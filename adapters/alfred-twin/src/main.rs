//! `alfred-twin`: runs the simulated cluster with one or more caretakers on the same
//! arrivals and writes `summary.json`, `timeseries.csv`, SVG charts and the decision log.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use alfred_model::config::{Config, DrainProtection};
use alfred_twin::alfred::AlfredCaretaker;
use alfred_twin::arrivals::{self, ArrivalOptions, Mode};
use alfred_twin::caretakers::{Crude, Descheduler};
use alfred_twin::engine::{self, Caretaker, MINUTE, NoCaretaker, RunResult, SimOptions};
use alfred_twin::report;
use alfred_twin::trace::{self, TraceNode};
use alfred_twin::world::{Placement, World};
use anyhow::{Context, Result, bail};
use clap::Parser;

/// The twin's allocator (see the crate's Cargo.toml).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A deterministic GPU-cluster twin driven by the Alibaba GPU trace, with alfred in the loop.
#[derive(Debug, Parser)]
#[command(name = "alfred-twin", version)]
struct Cli {
    /// GPU node list (openb_node_list_gpu_node.csv).
    #[arg(long)]
    nodes: Option<PathBuf>,
    /// Instead of --nodes: one synthetic pool `COUNTxGPUS` (e.g. 200x8), pool `SYN`.
    #[arg(long)]
    synthetic_pool: Option<String>,
    /// Pod list (openb_pod_list_*.csv).
    #[arg(long)]
    pods: PathBuf,
    /// churn | fill | timed.
    #[arg(long, default_value = "churn")]
    mode: String,
    /// spread (LeastAllocated) | binpack (MostAllocated).
    #[arg(long, default_value = "spread")]
    placement: String,
    /// none | descheduler | crude | alfred | alfred-noplans | alfred-nominate | alfred-taint |
    /// alfred-none | alfred<suffix>:CONFIG.yaml; repeat to compare on the same arrivals.
    #[arg(long = "caretaker", default_value = "none")]
    caretakers: Vec<String>,
    /// Simulated days.
    #[arg(long, default_value_t = 14.0)]
    days: f64,
    /// Offered load (churn).
    #[arg(long, default_value_t = 0.85)]
    target_utilization: f64,
    /// Mean lifetime in hours (churn).
    #[arg(long, default_value_t = 6.0)]
    mean_lifetime: f64,
    /// Share of capacity asked (fill).
    #[arg(long, default_value_t = 1.0)]
    fill_to: f64,
    /// Time multiplier: timed mode scales the trace's times; churn and fill scale
    /// inter-arrival times and lifetimes together (the run is still --days long).
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// Share of arrivals that are gangs: 2×8-GPU Instances (two pods of 8 GPUs, one
    /// PodGroup, ome-scheduler), placed all-or-nothing inside one pool.
    #[arg(long, default_value_t = 0.0)]
    gang_share: f64,
    /// Timed mode: the trace second to start at (default: the earliest creation; most of
    /// the default list is created after 10,300,000 s).
    #[arg(long)]
    timed_start: Option<i64>,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// alfred configuration (YAML); mode is forced to execute.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Output directory.
    #[arg(long, default_value = "twin-out")]
    out: PathBuf,
    /// Use only the first N tasks of the pod list.
    #[arg(long)]
    max_tasks: Option<usize>,
    /// Warm-up hours excluded from the metrics (default: churn 2 × mean lifetime, capped at a
    /// third of the run; otherwise 0).
    #[arg(long)]
    warmup_hours: Option<f64>,
    /// Minutes from acknowledgement to a ready replacement.
    #[arg(long, default_value_t = 3.0)]
    ready_minutes: f64,
    /// Seconds from a request to OMENative's acknowledgement.
    #[arg(long, default_value_t = 10.0)]
    ack_seconds: f64,
    /// Ignore CPU and memory (GPUs are the only fit constraint).
    #[arg(long)]
    no_cpu_mem: bool,
    /// Minutes between metric samples.
    #[arg(long, default_value_t = 10.0)]
    sample_minutes: f64,
    /// Minutes between pool-score samples (alfred-score on the whole cluster, ~0.1 s each
    /// on the full trace cluster; 0 = never).
    #[arg(long, default_value_t = 120.0)]
    score_minutes: f64,
    /// Descheduler: GPU utilisation threshold.
    #[arg(long, default_value_t = 0.5)]
    desched_threshold: f64,
    /// Descheduler: evictions per node per pass.
    #[arg(long, default_value_t = 8)]
    desched_per_node: usize,
    /// Descheduler: evictions per pass.
    #[arg(long, default_value_t = 10)]
    desched_total: usize,
    /// Crude defragmenter: moves per rolling hour.
    #[arg(long, default_value_t = 10)]
    crude_per_hour: usize,
    /// Decision log: list every advice row (default: counted by reason).
    #[arg(long)]
    log_all_advice: bool,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
    /// Minutes after alfred marks a request stalled until the operator, following seed
    /// 001's "A request is stalled", removes it from the journal (once the twin runs no
    /// migration under its UUID); 0 = no operator.
    #[arg(long, default_value_t = 60.0)]
    operator_minutes: f64,
}

/// The configuration of an alfred caretaker: `alfred` runs `base` (`--config`, else the
/// defaults); `alfred-noplans` with `drainPlans.enabled: false`; `alfred-nominate`,
/// `alfred-taint`, `alfred-none` with that `drainPlans.protection`; `NAME:FILE` (NAME
/// starting with `alfred`) the configuration in FILE.
fn alfred_config(spec: &str, base: &Config) -> Result<Config> {
    if let Some((_, file)) = spec.split_once(':') {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("read {file} ({spec})"))?;
        return Config::from_yaml(&text).map_err(|e| anyhow::anyhow!("{file}: {e}"));
    }
    let mut c = base.clone();
    let plans = &mut c.policies.defragmentation.drain_plans;
    match spec {
        "alfred" => {}
        "alfred-noplans" => plans.enabled = false,
        "alfred-nominate" => plans.protection = DrainProtection::Nominate,
        "alfred-taint" => plans.protection = DrainProtection::Taint,
        "alfred-none" => plans.protection = DrainProtection::None,
        other => bail!(
            "unknown caretaker {other:?} (alfred, alfred-noplans, alfred-nominate, \
             alfred-taint, alfred-none, or NAME:CONFIG.yaml)"
        ),
    }
    Ok(c)
}

fn synthetic(spec: &str) -> Result<Vec<TraceNode>> {
    let (n, g) = spec
        .split_once('x')
        .context("--synthetic-pool is COUNTxGPUS, e.g. 200x8")?;
    let n: usize = n.parse().context("--synthetic-pool count")?;
    let g: u32 = g.parse().context("--synthetic-pool GPUs")?;
    Ok((0..n)
        .map(|i| TraceNode {
            name: format!("syn-node-{i:04}"),
            cpu_milli: 1_000_000,
            memory_mib: 8_388_608,
            gpus: g,
            model: "SYN".into(),
        })
        .collect())
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let mode = Mode::parse(&cli.mode).context("--mode must be churn, fill or timed")?;
    let placement =
        Placement::parse(&cli.placement).context("--placement must be spread or binpack")?;
    let (nodes, tasks, config) = read_inputs(&cli)?;
    let world = World::new(&nodes, placement);
    let horizon_ms = (cli.days * 86_400_000.0) as i64;
    let lifetime_ms = cli.mean_lifetime * 3_600_000.0;
    let arrivals = arrivals::generate(
        &tasks,
        world.total_gpus(),
        &ArrivalOptions {
            mode,
            horizon_ms,
            target_utilization: cli.target_utilization,
            mean_lifetime_ms: lifetime_ms,
            fill_to: cli.fill_to,
            time_scale: cli.time_scale,
            gang_share: cli.gang_share,
            timed_start: cli.timed_start,
            seed: cli.seed,
        },
    )?;
    let opts = sim_options(&cli, mode, horizon_ms, lifetime_ms);
    std::fs::create_dir_all(&cli.out).with_context(|| format!("create {}", cli.out.display()))?;
    eprintln!(
        "alfred-twin: {} nodes, {} GPUs, {} pools; {} trace tasks; {} arrivals over {} days ({}, {})",
        world.nodes.len(),
        world.total_gpus(),
        world.pools.len(),
        tasks.len(),
        arrivals.len(),
        cli.days,
        mode.as_str(),
        placement.as_str()
    );
    let mut results: Vec<(String, RunResult, f64, serde_json::Value)> = Vec::new();
    for name in &cli.caretakers {
        let start = Instant::now();
        let mut alfred = None;
        let mut boxed: Box<dyn Caretaker> = match name.as_str() {
            "none" => Box::new(NoCaretaker),
            "descheduler" => Box::new(Descheduler {
                threshold: cli.desched_threshold,
                per_node: cli.desched_per_node,
                total: cli.desched_total,
                ..Descheduler::default()
            }),
            "crude" => Box::new(Crude {
                per_hour: cli.crude_per_hour,
                ..Crude::default()
            }),
            other if other.starts_with("alfred") => {
                let c = alfred_config(other, &config)?;
                let mut a = AlfredCaretaker::new(c, cli.seed, placement);
                a.log_all_advice(cli.log_all_advice);
                a.operator_clears_after_ms = (cli.operator_minutes > 0.0)
                    .then_some((cli.operator_minutes * MINUTE as f64) as i64);
                a.name = other.split(':').next().unwrap_or(other).to_owned();
                alfred = Some(a);
                Box::new(NoCaretaker)
            }
            other => bail!(
                "unknown caretaker {other:?} (none, descheduler, crude, alfred, alfred-noplans, \
                 alfred-nominate, alfred-taint, alfred-none, alfred<suffix>:CONFIG.yaml)"
            ),
        };
        let quiet = cli.quiet;
        let mut progress = |f: f64| {
            if !quiet {
                eprint!(
                    "\r  {name:<12} {:5.1}%  {:6.1}s",
                    f * 100.0,
                    start.elapsed().as_secs_f64()
                );
                let _ = std::io::stderr().flush();
            }
        };
        let res = match alfred.as_mut() {
            Some(a) => engine::run(&arrivals, &tasks, world.clone(), &opts, a, &mut progress),
            None => engine::run(
                &arrivals,
                &tasks,
                world.clone(),
                &opts,
                boxed.as_mut(),
                &mut progress,
            ),
        };
        let wall = start.elapsed().as_secs_f64();
        if !cli.quiet {
            eprintln!();
        }
        let mut extra = serde_json::json!({});
        let name = &alfred
            .as_ref()
            .map_or_else(|| name.clone(), |a| a.name.clone());
        if let Some(a) = &alfred {
            extra = write_alfred_log(&cli, a, &res)?;
        }
        eprintln!(
            "  {name:<12} done in {wall:.1}s: {} moves/evictions",
            res.sim.moves_completed + res.sim.evictions
        );
        results.push((name.clone(), res, wall, extra));
    }
    let summaries: Vec<serde_json::Value> = results
        .iter()
        .map(|(n, r, w, e)| report::summary(n, r, *w, e.clone()))
        .collect();
    std::fs::write(
        cli.out.join("summary.json"),
        serde_json::to_string_pretty(&summaries)? + "\n",
    )?;
    let runs: Vec<(String, &RunResult)> =
        results.iter().map(|(n, r, _, _)| (n.clone(), r)).collect();
    std::fs::write(
        cli.out.join("timeseries.csv"),
        report::timeseries_csv(&runs),
    )?;
    std::fs::write(cli.out.join("waits.csv"), report::waits_csv(&runs))?;
    for (file, svg) in report::charts(&runs) {
        std::fs::write(cli.out.join(file), svg)?;
    }
    println!("{}", serde_json::to_string_pretty(&summaries)?);
    Ok(())
}

/// The trace's nodes (or a synthetic pool), its tasks and alfred's configuration, as the
/// command line names them.
fn read_inputs(cli: &Cli) -> Result<(Vec<TraceNode>, Vec<trace::TraceTask>, Config)> {
    let nodes = match (&cli.nodes, &cli.synthetic_pool) {
        (_, Some(s)) => synthetic(s)?,
        (Some(p), None) => trace::parse_nodes(
            &std::fs::read_to_string(p).with_context(|| format!("read {}", p.display()))?,
        )?,
        (None, None) => bail!("--nodes or --synthetic-pool is required"),
    };
    let mut tasks = trace::parse_pods(
        &std::fs::read_to_string(&cli.pods)
            .with_context(|| format!("read {}", cli.pods.display()))?,
    )?;
    if let Some(m) = cli.max_tasks {
        tasks.truncate(m);
    }
    if cli.synthetic_pool.is_some() {
        for t in &mut tasks {
            t.gpu_spec.clear();
        }
    }
    let config = match &cli.config {
        Some(p) => Config::from_yaml(
            &std::fs::read_to_string(p).with_context(|| format!("read {}", p.display()))?,
        )
        .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?,
        None => Config::default(),
    };
    Ok((nodes, tasks, config))
}

/// The simulation's options from the command line (the warm-up defaults to twice the mean
/// lifetime under churn, at most a third of the run).
fn sim_options(cli: &Cli, mode: Mode, horizon_ms: i64, lifetime_ms: f64) -> SimOptions {
    let warmup_ms = match cli.warmup_hours {
        Some(h) => (h * 3_600_000.0) as i64,
        None if mode == Mode::Churn => ((2.0 * lifetime_ms) as i64).min(horizon_ms / 3),
        None => 0,
    };
    SimOptions {
        horizon_ms,
        mode,
        warmup_ms,
        sample_every_ms: (cli.sample_minutes * MINUTE as f64) as i64,
        score_every_ms: (cli.score_minutes * MINUTE as f64) as i64,
        ack_delay_ms: (cli.ack_seconds * 1000.0) as i64,
        ready_ms: (cli.ready_minutes * MINUTE as f64) as i64,
        cpu_mem: !cli.no_cpu_mem,
    }
}

/// Writes alfred's decision log into the output folder; the summary's alfred fields.
fn write_alfred_log(cli: &Cli, a: &AlfredCaretaker, res: &RunResult) -> Result<serde_json::Value> {
    let file = if a.name == "alfred" {
        format!("decisions-{}.jsonl", cli.placement)
    } else {
        format!("decisions-{}-{}.jsonl", cli.placement, a.name)
    };
    let path = cli.out.join(file);
    let mut text = a.log.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
    Ok(serde_json::json!({
        "passes": a.passes,
        "coreSeconds": (a.core_seconds * 1000.0).round() / 1000.0,
        "decisionLog": path.file_name().map(|f| f.to_string_lossy().into_owned()),
        "maxMigrationsPerHourConfigured": a.config().max_migrations_per_hour,
        "drainPlansConfigured": a.config().policies.defragmentation.drain_plans,
        "drainPlans": a.plans.summary(&res.sim, res.end),
        "nominationsApplied": res.sim.nominations,
        "operatorClears": a.operator_clears,
        "operatorMinutes": cli.operator_minutes,
    }))
}
