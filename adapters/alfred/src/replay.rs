//! `alfred replay`: one decision pass over a recorded cluster, offline.
//!
//! The adapter's only jobs here are reading files, building the snapshot with the pure
//! `observe`, running the pure pass and printing; with `--state FILE` the durable state
//! (journal, node records) is read before and written back after, atomically, so a
//! sequence of replays behaves like a sequence of passes of successive leaders.
//!
//! Deterministic: the same inputs and `--now` give byte-identical output. The UUIDs a
//! pass may need are derived from the inputs and `now` (see [`replay_uuids`]), not drawn
//! at random.

use std::path::PathBuf;
use std::process::ExitCode;

use alfred_dispatch::{
    Caretaker, DerivedUuids, DurableState, GuardObservation, PassOutput, Reading,
};
use alfred_model::config::{Config, RuntimeFlags, RuntimeOptions};
use alfred_model::{ClusterSnapshot, Timestamp};
use alfred_observe::ObserveSettings;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use alfred_kube::inputs::{self, Inputs};
use alfred_kube::{EXIT_BAD_INPUT, one_line};

use crate::table;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// kubectl-style tables.
    Table,
    /// `{"record", "nodes", "pools", "effects"}` as JSON.
    Json,
}

/// Flags of `alfred replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// Files or directories of `kubectl get -o json|yaml` output, or one alfred snapshot JSON.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// alfred config (`config.yaml` of the alfred-config ConfigMap); built-in defaults without it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Durable state file (journal + node records): read when it exists, written back after.
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// The instant of the pass (RFC 3339). Default: the snapshot's `observedAt` for a
    /// snapshot input, the clock otherwise.
    #[arg(long)]
    pub now: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Also print every candidate and its verdict.
    #[arg(long)]
    pub explain: bool,
    /// `--migration-api-version` of `alfred run` (`v1` enables the executor).
    #[arg(long, default_value = "")]
    pub migration_api_version: String,
    /// `--migration-service-account` of `alfred run` (the migration guard's username).
    #[arg(long, default_value = "ome-alfred")]
    pub migration_service_account: String,
    /// `--migration-ack-timeout` of `alfred run`.
    #[arg(long, default_value = "2m")]
    pub migration_ack_timeout: String,
    /// `--migration-failure-backoff` of `alfred run`.
    #[arg(long, default_value = "5m")]
    pub migration_failure_backoff: String,
    /// `--simulation-timeout` of `alfred run`.
    #[arg(long, default_value = "10s")]
    pub simulation_timeout: String,
    /// `workers.json` of simulation workers, run as child processes as `alfred run` does.
    #[arg(long)]
    pub simulation_workers: Option<PathBuf>,
    /// Simulate with the scheduler model in-process, for both built-in profiles.
    #[arg(long, conflicts_with = "simulation_workers")]
    pub simulate_in_process: bool,
    /// alfred's namespace (events on the config ConfigMap name it).
    #[arg(long, default_value = "ome")]
    pub namespace: String,
    /// Name of the alfred config ConfigMap.
    #[arg(long, default_value = "alfred-config")]
    pub config_name: String,
}

/// A replay failure: bad input (exit 2) or anything else (exit 1).
enum Failure {
    BadInput(String),
    Other(String),
}

/// Entry point.
pub fn main(args: ReplayArgs) -> ExitCode {
    match run(&args) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(Failure::BadInput(m)) => {
            eprintln!("alfred replay: {}", one_line(&m));
            ExitCode::from(EXIT_BAD_INPUT)
        }
        Err(Failure::Other(m)) => {
            eprintln!("alfred replay: {}", one_line(&m));
            ExitCode::FAILURE
        }
    }
}

fn run(args: &ReplayArgs) -> Result<String, Failure> {
    let config = match &args.config {
        Some(path) => alfred_kube::load_config(path).map_err(Failure::BadInput)?,
        None => Config::builtin(),
    };
    let simulation_configured = args.simulation_workers.is_some() || args.simulate_in_process;
    let flags = RuntimeFlags {
        migration_api_version: args.migration_api_version.clone(),
        migration_service_account: args.migration_service_account.clone(),
        leader_elect: true,
        migration_ack_timeout: args.migration_ack_timeout.clone(),
        migration_failure_backoff: args.migration_failure_backoff.clone(),
        simulation_timeout: args.simulation_timeout.clone(),
        simulation_workers: if simulation_configured {
            "configured".into()
        } else {
            String::new()
        },
    };
    let runtime =
        RuntimeOptions::from_flags(&flags).map_err(|e| Failure::BadInput(e.to_string()))?;

    let loaded = inputs::load(&args.inputs).map_err(|e| Failure::BadInput(e.to_string()))?;
    let explicit_now = match &args.now {
        Some(text) => Some(
            Timestamp::parse_rfc3339(text).map_err(|e| Failure::BadInput(format!("--now: {e}")))?,
        ),
        None => None,
    };
    let snapshot = match loaded {
        Inputs::Snapshot(mut snap) => {
            snap.executor.available = runtime.executor_available();
            *snap
        }
        Inputs::Objects(objects) => {
            let now = explicit_now.unwrap_or_else(wall_clock);
            let settings = ObserveSettings::new(&config, &runtime);
            objects.observe(&settings, now).snapshot
        }
    };
    let now = explicit_now.unwrap_or(snapshot.observed_at);

    let state = match &args.state {
        Some(path) if path.exists() => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::BadInput(format!("{}: cannot read: {e}", path.display())))?;
            DurableState::from_text(&text)
        }
        _ => DurableState::default(),
    };
    // The pass treats an unreadable journal as `JournalUnavailable`; the reason it is
    // unreadable goes to the user too, on stderr and in the JSON output.
    let state_error = match (&args.state, &state.journal) {
        (Some(path), alfred_dispatch::JournalSlot::Unreadable { error, .. }) => {
            let line = one_line(&format!("{}: journal unreadable: {error}", path.display()));
            eprintln!("alfred replay: {line}");
            Some(line)
        }
        _ => None,
    };

    let input_digest = digest(&snapshot, &config, now);
    let guard =
        GuardObservation::assumed_installed(&args.namespace, &args.migration_service_account);
    let mut simulator = alfred_kube::simulation::for_replay(
        args.simulation_workers.as_deref(),
        args.simulate_in_process,
        &config,
        runtime.simulation_timeout,
    )
    .map_err(Failure::BadInput)?;
    // One pass of a new term: the durable state as read, the UUIDs derived from the inputs.
    let mut caretaker = Caretaker::new(runtime, DerivedUuids::new(input_digest))
        .with_identity(&args.namespace, &args.config_name);
    let reading = Reading::new(&snapshot, &config, now)
        .state(state)
        .guard(&guard);
    let output = caretaker.pass(reading, simulator.as_mut());

    if let Some(path) = &args.state {
        inputs::write_atomically(path, output.new_state.to_text().as_bytes())
            .map_err(|e| Failure::Other(format!("{}: cannot write state: {e}", path.display())))?;
    }
    let pools = alfred_score::score(&snapshot, &config);
    let pools_json: Vec<Value> = pools
        .pools
        .iter()
        .map(|p| serde_json::to_value(p).unwrap_or(Value::Null))
        .collect();
    Ok(match args.format {
        Format::Json => {
            let mut text = render_json(&output, &snapshot, pools_json, args.explain);
            if let Some(error) = state_error {
                // Appended as the document's last member, after the pretty-printed body.
                let member = format!(",\n  \"stateError\": {}\n}}\n", Value::String(error));
                if let Some(end) = text.trim_end().strip_suffix('}') {
                    text = format!("{}{member}", end.trim_end());
                }
            }
            text
        }
        Format::Table => render_table(&output, &snapshot, &pools_json, args.explain),
    })
}

fn wall_clock() -> Timestamp {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp::from_unix_nanos(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// SHA-256 over the canonical JSON of the pass's inputs.
fn digest(snapshot: &ClusterSnapshot, config: &Config, now: Timestamp) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(serde_json::to_vec(snapshot).unwrap_or_default());
    h.update(config.to_effective_json().as_bytes());
    h.update(now.to_rfc3339().as_bytes());
    h.finalize().into()
}

/// The first `count` UUIDs a replay derives from its input digest
/// ([`DerivedUuids`]), so a replay is reproducible (a live `alfred run` draws them at
/// random instead).
pub fn replay_uuids(seed: &[u8; 32], count: usize) -> Vec<String> {
    let mut supply = DerivedUuids::new(*seed);
    (0..count)
        .map(|_| alfred_dispatch::UuidSupply::next_uuid(&mut supply))
        .collect()
}

fn node_records_json(output: &PassOutput) -> Value {
    let mut nodes = serde_json::Map::new();
    for (name, record) in &output.node_records {
        nodes.insert(
            format!("node.{name}"),
            serde_json::to_value(record).unwrap_or(Value::Null),
        );
    }
    Value::Object(nodes)
}

fn render_json(
    output: &PassOutput,
    snapshot: &ClusterSnapshot,
    pools: Vec<Value>,
    explain: bool,
) -> String {
    let mut doc = json!({
        "record": output.record,
        "nodes": node_records_json(output),
        "pools": pools,
        "effects": output.effects,
    });
    if !snapshot.problems.is_empty() {
        doc["problems"] = serde_json::to_value(&snapshot.problems).unwrap_or(Value::Null);
    }
    if explain {
        doc["explain"] = serde_json::to_value(&output.explain).unwrap_or(Value::Null);
    }
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

fn render_table(
    output: &PassOutput,
    snapshot: &ClusterSnapshot,
    pools: &[Value],
    explain: bool,
) -> String {
    let mut out = String::new();
    let rows = output.record.recommendations.clone().unwrap_or_default();
    out.push_str(&format!(
        "Decision pass at {} ({})\n\n",
        output.record.timestamp,
        output.record.mode.as_str()
    ));
    out.push_str(&table::rows_table(&rows));
    out.push('\n');
    out.push_str(&table::pools_table(pools));
    if !output.record.plans.is_empty() {
        out.push('\n');
        for p in &output.record.plans {
            let reason = p.reason.map(|r| format!(" ({r})")).unwrap_or_default();
            out.push_str(&format!(
                "drain plan {} [{}{reason}] benefit {:.2} GPUs, cost {:.2} GPUs: {}\n",
                p.id, p.phase, p.benefit_gpus, p.cost_gpus, p.summary
            ));
        }
    }
    if !output.node_records.is_empty() {
        out.push('\n');
        for (name, r) in &output.node_records {
            let maint = if r.maintenance.requested {
                format!(", maintenance: {}", r.maintenance.triggers.join(","))
            } else {
                String::new()
            };
            out.push_str(&format!("node {name}: {}{maint}\n", r.state.as_str()));
        }
    }
    let writes = output.effects.iter().filter(|e| e.is_write()).count();
    out.push_str(&format!(
        "\n{} effects ({} writes)\n",
        output.effects.len(),
        writes
    ));
    for p in &snapshot.problems {
        let who = if p.namespace.is_empty() {
            p.name.clone()
        } else {
            format!("{}/{}", p.namespace, p.name)
        };
        out.push_str(&format!(
            "problem: {} {who}: {}: {}\n",
            p.kind, p.field, p.message
        ));
    }
    if explain {
        out.push('\n');
        for e in &output.explain {
            let c = &e.candidate;
            let verdict = match &e.verdict {
                None => "advice".to_owned(),
                Some(v) if v.admitted => format!("admitted target={}", v.target),
                Some(v) => format!(
                    "rejected {}",
                    v.reject_reason.map(|r| r.to_string()).unwrap_or_default()
                ),
            };
            out.push_str(&format!(
                "candidate {} {} {} {} from={} score={:.3} benefit={:.3} cost={:.3}: {verdict}\n",
                c.policy.as_str(),
                c.workload,
                c.component.as_str(),
                c.instance,
                c.from_node,
                c.score,
                c.benefit,
                c.cost
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_uuids_are_canonical_v4_and_reproducible() {
        let a = replay_uuids(&[7; 32], 3);
        assert_eq!(a, replay_uuids(&[7; 32], 3));
        assert_ne!(a[0], a[1]);
        for u in &a {
            assert_eq!(u.len(), 36);
            assert_eq!(&u[14..15], "4");
            assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"), "{u}");
            assert!(
                u.chars()
                    .all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
            );
        }
    }
}
