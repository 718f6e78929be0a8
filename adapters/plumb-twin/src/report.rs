//! The run's outputs: `summary.json` (one object per caretaker), `decisions.jsonl` (Plumb's
//! decision and outcome lines), the SVG plots per caretaker and the table printed.

use std::fmt::Write as _;
use std::path::Path;

use plumb_model::AdaptivePolicy;

use crate::engine::Outcome;
use crate::figures::Minute;
use crate::scenario::Scenario;
use crate::svg::{Series, Stroke, chart};

/// `summary.json`: the summaries as a JSON list, pretty-printed, with a trailing newline.
pub fn summary_json(outcomes: &[Outcome]) -> String {
    let list: Vec<_> = outcomes.iter().map(|o| &o.summary).collect();
    let mut s = serde_json::to_string_pretty(&list).unwrap_or_default();
    s.push('\n');
    s
}

fn fmt_list(values: &[f64]) -> String {
    if values.is_empty() {
        return "-".to_owned();
    }
    values
        .iter()
        .map(|v| format!("{v:.0}"))
        .collect::<Vec<_>>()
        .join("/")
}

fn fmt_lags(values: &[Option<f64>]) -> String {
    if values.is_empty() {
        return "-".to_owned();
    }
    values
        .iter()
        .map(|v| v.map_or_else(|| "never".to_owned(), |v| format!("{v:.0}")))
        .collect::<Vec<_>>()
        .join("/")
}

/// Hours as `6 h` or `50 min`.
pub fn duration(hours: f64) -> String {
    if hours.fract() == 0.0 {
        format!("{hours} h")
    } else {
        format!("{:.0} min", hours * 60.0)
    }
}

/// The table: one row per caretaker.
pub fn table(scenario: &Scenario, seed: u64, hours: f64, outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scenario {}  seed {seed}  {}  ({})",
        scenario.name,
        duration(hours),
        scenario.about
    );
    let _ = writeln!(
        out,
        "{:<9}{:>13}{:>11}{:>9}{:>9}{:>10}{:>11}{:>13}{:>12}",
        "CARETAKER",
        "MIN>SLO",
        "DROPPED",
        "DROP%",
        "GPU-H",
        "DECISIONS",
        "OSCILLATE",
        "RECOVER-MIN",
        "RELEASE-MIN"
    );
    for o in outcomes {
        let s = &o.summary;
        let pct = if s.requests == 0 {
            0.0
        } else {
            s.requests_dropped as f64 * 100.0 / s.requests as f64
        };
        let _ = writeln!(
            out,
            "{:<9}{:>13}{:>11}{:>9.2}{:>9.1}{:>10}{:>11}{:>13}{:>12}",
            s.caretaker,
            s.minutes_over_slo,
            s.requests_dropped,
            pct,
            s.gpu_hours,
            s.decisions,
            s.oscillations,
            fmt_list(&s.recover_minutes),
            fmt_lags(&s.release_lag_minutes)
        );
    }
    out
}

fn per_cluster<F>(minutes: &[Minute], i: usize, f: F) -> Vec<(f64, Option<f64>)>
where
    F: Fn(&Minute, usize) -> Option<f64>,
{
    minutes
        .iter()
        .map(|m| (f64::from(m.minute), f(m, i)))
        .collect()
}

/// The three plots of one caretaker: (file name, SVG).
pub fn plots(scenario: &Scenario, outcome: &Outcome) -> Vec<(String, String)> {
    let name = &outcome.summary.caretaker;
    let m = &outcome.minutes;
    let mut replicas = Vec::new();
    let mut traffic = Vec::new();
    let mut latency = Vec::new();
    for (i, c) in scenario.clusters.iter().enumerate() {
        let series = |label: String, stroke, points| Series {
            label,
            points,
            color: i,
            stroke,
        };
        replicas.push(series(
            format!("{} ready", c.name),
            Stroke::Solid,
            per_cluster(m, i, |m, i| Some(f64::from(m.ready[i]))),
        ));
        replicas.push(series(
            format!("{} floor", c.name),
            Stroke::Dashed,
            per_cluster(m, i, |m, i| Some(f64::from(m.floor[i]))),
        ));
        let capacity = scenario.model.replica_capacity;
        replicas.push(Series {
            label: format!("{} load/replicaCapacity", c.name),
            points: per_cluster(m, i, |m, i| Some(m.load[i] / capacity)),
            color: i + 4,
            stroke: Stroke::Dashed,
        });
        traffic.push(series(
            format!("{} weight %", c.name),
            Stroke::Dashed,
            per_cluster(m, i, |m, i| Some(f64::from(m.weight[i]))),
        ));
        traffic.push(series(
            format!("{} load req/s", c.name),
            Stroke::Solid,
            per_cluster(m, i, |m, i| Some(m.load[i])),
        ));
        latency.push(series(
            format!("{} TTFT p95", c.name),
            Stroke::Solid,
            per_cluster(m, i, |m, i| m.latency[i].map(|l| l.min(30.0))),
        ));
    }
    let slo = scenario.model.latency_slo;
    latency.push(Series {
        label: format!("SLO {slo} s"),
        points: m.iter().map(|m| (f64::from(m.minute), Some(slo))).collect(),
        color: 6,
        stroke: Stroke::Dashed,
    });
    let title = |what: &str| format!("{}: {what} ({name})", scenario.name);
    vec![
        (
            format!("{name}-replicas.svg"),
            chart(
                &title("ready replicas, floors and load"),
                "minutes",
                "replicas",
                &replicas,
            ),
        ),
        (
            format!("{name}-traffic.svg"),
            chart(
                &title("route weights and load"),
                "minutes",
                "percent / requests per second",
                &traffic,
            ),
        ),
        (
            format!("{name}-latency.svg"),
            chart(
                &title("TTFT p95 per minute (capped at 30 s) against the SLO"),
                "minutes",
                "seconds",
                &latency,
            ),
        ),
    ]
}

/// The per-minute series of one caretaker as CSV: the minute, then per cluster its ready
/// replicas, floor, weight, requests/s received and TTFT p95 (empty: no request).
pub fn minutes_csv(scenario: &Scenario, outcome: &Outcome) -> String {
    let mut out = String::from("minute");
    for c in &scenario.clusters {
        let n = &c.name;
        let _ = write!(
            out,
            ",{n}_ready,{n}_floor,{n}_weight,{n}_requests_per_s,{n}_ttft_p95_s"
        );
    }
    out.push('\n');
    for m in &outcome.minutes {
        let _ = write!(out, "{}", m.minute);
        for i in 0..scenario.clusters.len() {
            let p95 = m.latency[i].map_or_else(String::new, |l| format!("{l:.3}"));
            let _ = write!(
                out,
                ",{},{},{},{:.3},{p95}",
                m.ready[i], m.floor[i], m.weight[i], m.load[i]
            );
        }
        out.push('\n');
    }
    out
}

/// Writes `summary.json`, `decisions.jsonl`, the plots, the per-minute CSVs and the policy the members applied
/// (`policy.json`, a starting point for `--policy`) into `dir` (created if missing).
pub fn write_all(
    dir: &Path,
    scenario: &Scenario,
    policy: &AdaptivePolicy,
    outcomes: &[Outcome],
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("--out {}: {e}", dir.display()))?;
    let write = |file: &str, text: &str| {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
    };
    write("summary.json", &summary_json(outcomes))?;
    let log: String = outcomes.iter().map(|o| o.decision_log.as_str()).collect();
    write("decisions.jsonl", &log)?;
    let policy = serde_json::to_string_pretty(policy).unwrap_or_default() + "\n";
    write("policy.json", &policy)?;
    for o in outcomes {
        for (file, svg) in plots(scenario, o) {
            write(&file, &svg)?;
        }
        write(
            &format!("{}-minutes.csv", o.summary.caretaker),
            &minutes_csv(scenario, o),
        )?;
    }
    Ok(())
}
