//! `plumb replay DIR --cluster NAME --now TIME`: the member report of a recorded member,
//! offline. The folder holds the member's objects (`kubectl get … -o json` files: see
//! [`crate::objects`]) and its signal samples (`signals.json`: see [`crate::signals`]); the
//! policy's recorded `status.report` is the previous report. The same inputs and `--now` give
//! byte-identical output.
//!
//! Bad input exits 2 with one line naming the file, the object and the field.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use plumb_core::member::Diagnostics;
use plumb_model::{AdaptivePolicy, Condition, Report, Timestamp};
use serde_json::{Value, json};

use crate::objects::{InputError, MemberObjects, Origin, RecordedPolicy};
use crate::signals::{SignalAnswers, read_signals};

/// How the report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One field per line, then the conditions.
    Table,
    /// One JSON object: `policy`, `cluster`, `now`, `report` (the `status.report` fields by
    /// their names), `conditions`.
    Json,
}

/// `plumb replay`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// The recorded member (a folder of `kubectl get -o json` files and `signals.json`), or a
    /// fleet (a folder with `fleet.json` and the policy: the hub's decision log).
    pub dir: PathBuf,
    /// This member's name, as the policy's `clusters[].name` lists it (a member folder only).
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,
    /// The report's time, RFC 3339, e.g. `2026-12-01T12:00:00Z` (a member folder only).
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// The policy to report on (`NAMESPACE/NAME`), when the folder holds several.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub policy: Option<String>,
}

/// A recorded member, read.
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    /// Where it was read (names the folder in errors).
    pub dir: PathBuf,
    /// The Kubernetes objects.
    pub objects: MemberObjects,
    /// The signal answers.
    pub signals: SignalAnswers,
}

impl Recorded {
    /// Reads the folder.
    pub fn read(dir: &Path) -> Result<Self, InputError> {
        Ok(Self {
            dir: dir.to_path_buf(),
            objects: MemberObjects::read_dir(dir)?,
            signals: read_signals(dir)?,
        })
    }
}

/// What a replay computed.
#[derive(Debug, Clone)]
pub struct ReplayOutput {
    /// `<namespace>/<name>` of the policy reported on.
    pub policy: String,
    /// The member.
    pub cluster: String,
    /// The report's time.
    pub now: Timestamp,
    /// The member report (`None` when the cluster is not in the policy's `clusters[]`).
    pub report: Option<Report>,
    /// The conditions the member writes (`Ready`).
    pub conditions: Vec<Condition>,
    /// How static room was found: registered and `filtered` nodes, promised replicas placed.
    pub diagnostics: Diagnostics,
}

/// Runs the replay of `args`: the output text, or the one-line error.
pub fn run(args: &ReplayArgs) -> Result<String, String> {
    if crate::fleet::is_fleet(&args.dir) {
        for (flag, given) in [
            ("--cluster", args.cluster.is_some()),
            ("--now", args.now.is_some()),
            ("--policy", args.policy.is_some()),
        ] {
            if given {
                return Err(format!(
                    "{flag}: not for a fleet folder ({} holds fleet.json)",
                    args.dir.display()
                ));
            }
        }
        return crate::fleet::run(&args.dir, args.format);
    }
    let missing = |flag: &str| {
        format!(
            "{flag}: required for a recorded member ({} has no fleet.json)",
            args.dir.display()
        )
    };
    let cluster = args
        .cluster
        .as_deref()
        .ok_or_else(|| missing("--cluster"))?;
    let now = args.now.as_deref().ok_or_else(|| missing("--now"))?;
    let now: Timestamp = now.parse().map_err(|e| format!("--now: {e}"))?;
    let recorded = Recorded::read(&args.dir).map_err(|e| e.to_string())?;
    let output =
        replay(&recorded, cluster, now, args.policy.as_deref()).map_err(|e| e.to_string())?;
    Ok(match args.format {
        Format::Json => render_json(&output),
        Format::Table => render_table(&output),
    })
}

/// `plumb replay`: prints the report, or the error line and exits 2.
pub fn main(args: &ReplayArgs) -> ExitCode {
    match run(args) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}", crate::one_line(&e));
            ExitCode::from(crate::EXIT_BAD_INPUT)
        }
    }
}

/// Every recorded policy decoded, the one reported on first.
struct Policies {
    chosen: AdaptivePolicy,
    others: Vec<AdaptivePolicy>,
}

fn decode(recorded: &RecordedPolicy) -> Result<AdaptivePolicy, InputError> {
    AdaptivePolicy::from_value(recorded.object.clone()).map_err(|e| InputError {
        path: recorded.origin.path.clone(),
        message: located(&recorded.origin, &recorded.key(), &e.to_string()),
    })
}

/// `items[3] (AdaptivePolicy ns/name): <what>` (without the file, which the error carries).
fn located(origin: &Origin, key: &str, what: &str) -> String {
    match origin.index {
        Some(i) => format!("items[{i}] (AdaptivePolicy {key}): {what}"),
        None => format!("(AdaptivePolicy {key}): {what}"),
    }
}

/// Picks the policy reported on (`--policy`, or the only one) and checks its spec.
fn policies(recorded: &Recorded, wanted: Option<&str>) -> Result<Policies, InputError> {
    let folder_error = |message: String| InputError {
        path: recorded.dir.clone(),
        message,
    };
    let keys: Vec<String> = recorded.objects.policies.iter().map(|p| p.key()).collect();
    let at = match (wanted, keys.len()) {
        (_, 0) => return Err(folder_error("holds no AdaptivePolicy".to_owned())),
        (None, 1) => 0,
        (None, _) => {
            return Err(folder_error(format!(
                "holds {} AdaptivePolicies ({}): name one with --policy",
                keys.len(),
                keys.join(", ")
            )));
        }
        (Some(key), _) => keys.iter().position(|k| k == key).ok_or_else(|| {
            folder_error(format!(
                "--policy {key}: no such AdaptivePolicy (it holds {})",
                keys.join(", ")
            ))
        })?,
    };
    let mut others = Vec::new();
    let mut chosen = None;
    for (i, recorded_policy) in recorded.objects.policies.iter().enumerate() {
        let policy = decode(recorded_policy)?;
        if i == at {
            let checked = policy.spec.check();
            if let Some(first) = checked.problems.first() {
                let more = match checked.problems.len() - 1 {
                    0 => String::new(),
                    n => format!(" (and {n} more: `plumb policy check` lists every problem)"),
                };
                return Err(InputError {
                    path: recorded_policy.origin.path.clone(),
                    message: located(&recorded_policy.origin, &keys[i], &format!("{first}{more}")),
                });
            }
            chosen = Some(policy);
        } else {
            others.push(policy);
        }
    }
    let chosen = chosen.ok_or_else(|| folder_error("the chosen policy vanished".to_owned()))?;
    Ok(Policies { chosen, others })
}

/// The report of `cluster` for the chosen policy at `now`.
pub fn replay(
    recorded: &Recorded,
    cluster: &str,
    now: Timestamp,
    wanted: Option<&str>,
) -> Result<ReplayOutput, InputError> {
    let policies = policies(recorded, wanted)?;
    let policy = &policies.chosen;
    let reported = crate::observe::report(
        &recorded.objects.observed,
        &recorded.signals,
        policy,
        &policies.others,
        cluster,
        now,
    );
    Ok(ReplayOutput {
        policy: policy.key(),
        cluster: cluster.to_owned(),
        now,
        report: reported.report,
        conditions: vec![reported.ready],
        diagnostics: reported.diagnostics,
    })
}

/// The JSON form: one object, keys in a fixed order, ending with a newline.
pub fn render_json(output: &ReplayOutput) -> String {
    let value = json!({
        "policy": output.policy,
        "cluster": output.cluster,
        "now": output.now,
        "report": output.report,
        "conditions": output.conditions,
        "staticDiagnostics": output.report.as_ref().map(|_| diagnostics_json(&output.diagnostics)),
    });
    serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
}

/// The table form: a header line, one line per report field (by its spec name; absent ones
/// left out), then one line per condition.
pub fn render_table(output: &ReplayOutput) -> String {
    let mut text = format!(
        "POLICY {}  CLUSTER {}  AT {}\n\n{:<24} VALUE\n",
        output.policy, output.cluster, output.now, "FIELD"
    );
    match serde_json::to_value(&output.report) {
        Ok(Value::Object(fields)) => {
            for (name, value) in &fields {
                let _ = writeln!(text, "{name:<24} {}", cell(value));
            }
            let d = &output.diagnostics;
            let _ = writeln!(
                text,
                "\nstatic room: {} registered nodes, {} filtered; {} promised replicas placed \
                 first, {} left for NodePool headroom",
                d.registered, d.filtered, d.promised_placed, d.promised_unplaced
            );
        }
        _ => text.push_str("(no report: the cluster is not a member)\n"),
    }
    let _ = writeln!(
        text,
        "\n{:<8} {:<7} {:<20} MESSAGE",
        "TYPE", "STATUS", "REASON"
    );
    for c in &output.conditions {
        let line = format!(
            "{:<8} {:<7} {:<20} {}",
            c.type_, c.status, c.reason, c.message
        );
        let _ = writeln!(text, "{}", line.trim_end());
    }
    text
}

/// The static diagnostics as JSON (the names the agent's log uses).
fn diagnostics_json(d: &Diagnostics) -> Value {
    json!({
        "registered": d.registered,
        "filtered": d.filtered,
        "promisedPlaced": d.promised_placed,
        "promisedUnplaced": d.promised_unplaced,
    })
}

/// A report value in one cell: a sample as `value (at time)`, text unquoted.
fn cell(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Object(map) if map.contains_key("value") && map.contains_key("time") => {
            format!("{} (at {})", map["value"], cell(&map["time"]))
        }
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", cell(v)))
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}
