//! `plumb-twin`: runs a scenario under every caretaker (plumb, none, static, naive) on the
//! same arrivals and writes the summary, Plumb's decision log and the plots
//! (docs/plumb/twin.md#running-it). Bad input exits 2 with one line naming the flag.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use plumb_model::AdaptivePolicy;
use plumb_twin::caretakers::Kind;
use plumb_twin::engine::{Setup, run};
use plumb_twin::scenario::{NAMES, Scenario};
use plumb_twin::{report, sweep, trace};

/// Plumb's fleet twin: the real member report and hub step on a simulated fleet serving the
/// Azure LLM traces, against no hub, static weights and a naive shift.
#[derive(Debug, Parser)]
#[command(name = "plumb-twin", version)]
struct Args {
    /// The scenario: regional-shortage, burst-home, calm-diurnal, flapping-signal,
    /// burst-train or fleet-16.
    #[arg(long)]
    scenario: String,
    /// Seed of every random draw (trace offsets, launch delays, load times).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Simulated hours (default: the scenario's).
    #[arg(long)]
    hours: Option<f64>,
    /// Output folder for summary.json, decisions.jsonl and the SVG plots.
    #[arg(long)]
    out: PathBuf,
    /// An AdaptivePolicy (YAML or JSON) replacing the scenario's; its clusters must be the
    /// scenario's.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// Run only this caretaker (plumb, none, static or naive); repeat for several. Default:
    /// all four.
    #[arg(long)]
    caretaker: Vec<String>,
    /// Instead of the four caretakers: Plumb alone over the values of one setting (after,
    /// earlyAfter, cooldown, calmFor, stepPercent or placement), beside no hub.
    #[arg(long)]
    sweep: Option<String>,
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_policy(path: &Path, scenario: &Scenario) -> Result<AdaptivePolicy, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--policy {}: cannot read: {e}", path.display()))?;
    let parsed = if path.extension().is_some_and(|e| e == "json") {
        AdaptivePolicy::from_json(&text)
    } else {
        AdaptivePolicy::from_yaml(&text)
    };
    let policy = parsed.map_err(|e| format!("--policy {}: {e}", path.display()))?;
    let checked = policy.spec.check();
    if let Some(p) = checked.problems.first() {
        return Err(format!("--policy {}: {p}", path.display()));
    }
    let names: Vec<String> = policy
        .spec
        .clusters
        .iter()
        .flatten()
        .filter_map(|c| c.name.clone())
        .collect();
    let want: Vec<String> = scenario.clusters.iter().map(|c| c.name.clone()).collect();
    if names != want {
        return Err(format!(
            "--policy {}: spec.clusters must be the scenario's, in order: {}",
            path.display(),
            want.join(", ")
        ));
    }
    Ok(policy)
}

fn main_inner(args: &Args) -> Result<Option<String>, String> {
    let mut scenario = Scenario::preset(&args.scenario)?;
    let hours = args.hours.unwrap_or(scenario.hours);
    if !(hours > 0.0 && hours <= 24.0 * 14.0) {
        return Err(format!("--hours: {hours} is not within (0, 336]"));
    }
    let policy = match &args.policy {
        Some(p) => read_policy(p, &scenario)?,
        None => scenario.policy(),
    };
    scenario.use_policy_weights(&policy);
    let dir = trace::data_dir(&repo_root());
    let Some(traces) = trace::load(&dir)? else {
        return Ok(Some(format!(
            "plumb-twin: no trace data in {} (set {} to the azure-llm-2023 folder); nothing run",
            dir.display(),
            trace::DATA_ENV
        )));
    };
    let setup = Setup {
        scenario: &scenario,
        policy: &policy,
        trace: &traces.conv,
        seed: args.seed,
        hours,
    };
    if let Some(setting) = &args.sweep {
        let result = sweep::sweep(&setup, setting)?;
        std::fs::create_dir_all(&args.out)
            .map_err(|e| format!("--out {}: {e}", args.out.display()))?;
        let write = |file: String, text: String| {
            let path = args.out.join(file);
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
        };
        let json = serde_json::to_string_pretty(&result).unwrap_or_default() + "\n";
        write(format!("sweep-{setting}.json"), json)?;
        write(
            format!("sweep-{setting}.svg"),
            sweep::plot(&scenario.name, &result),
        )?;
        println!(
            "scenario {}  seed {}  {}",
            scenario.name,
            args.seed,
            report::duration(hours)
        );
        print!("{}", sweep::table(&result));
        return Ok(None);
    }
    let mut kinds = Vec::new();
    for name in &args.caretaker {
        let kind = Kind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                format!("--caretaker: unknown caretaker {name:?} (plumb, none, static, naive)")
            })?;
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    if kinds.is_empty() {
        kinds = Kind::ALL.to_vec();
    }
    kinds.sort();
    let outcomes: Vec<_> = kinds.iter().map(|&k| run(&setup, k)).collect();
    report::write_all(&args.out, &scenario, &policy, &outcomes)?;
    if let Some(path) = &args.policy {
        let weights: Vec<String> = scenario
            .clusters
            .iter()
            .map(|c| format!("{} {}", c.name, c.weight))
            .collect();
        println!(
            "policy {} (Steady weights: {})",
            path.display(),
            weights.join(", ")
        );
    }
    print!("{}", report::table(&scenario, args.seed, hours, &outcomes));
    Ok(None)
}

fn main() -> ExitCode {
    let args = Args::parse();
    match main_inner(&args) {
        Ok(None) => ExitCode::SUCCESS,
        Ok(Some(message)) => {
            eprintln!("{message}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("plumb-twin: {e} (scenarios: {})", NAMES.join(", "));
            ExitCode::from(2)
        }
    }
}
