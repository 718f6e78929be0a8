//! Sweeps: Plumb alone over a range of one escalation setting (`after`, `earlyAfter`,
//! `cooldown`, `calmFor`, `stepPercent`) or the placement order, on the scenario's arrivals,
//! with the no-hub run beside it; a table, `sweep-<name>.json` and a plot of minutes over
//! the SLO and GPU-hours against the setting.

use std::fmt::Write as _;

use plumb_model::AdaptivePolicy;
use serde::Serialize;
use serde_json::Value;

use crate::caretakers::Kind;
use crate::engine::{Setup, run};
use crate::figures::Summary;
use crate::svg::{Series, Stroke, chart};

/// The sweepable settings and their values.
pub const SWEEPS: [(&str, &[&str]); 6] = [
    ("after", &["30s", "1m", "2m", "3m", "5m", "8m"]),
    ("earlyAfter", &["0s", "15s", "30s", "1m", "2m", "4m"]),
    ("cooldown", &["10s", "30s", "1m", "2m", "4m"]),
    ("calmFor", &["1m", "3m", "5m", "10m", "15m", "30m"]),
    ("stepPercent", &["5", "10", "20", "40"]),
    ("placement", &["LocalFirst", "StaticFirst"]),
];

/// One point of a sweep.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Point {
    /// The setting's value.
    pub value: String,
    /// Plumb's figures with it.
    pub summary: Summary,
}

/// A sweep's result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SweepResult {
    /// The setting.
    pub setting: String,
    /// The no-hub run on the same arrivals.
    pub none: Summary,
    /// One point per value.
    pub points: Vec<Point>,
}

/// `policy` with `setting` set to `value`; the error names `--sweep`.
pub fn with_setting(
    policy: &AdaptivePolicy,
    setting: &str,
    value: &str,
) -> Result<AdaptivePolicy, String> {
    let mut v = serde_json::to_value(policy).map_err(|e| format!("--sweep: {e}"))?;
    let spec = &mut v["spec"];
    match setting {
        "after" | "earlyAfter" | "cooldown" | "calmFor" | "readyTimeout" => {
            spec["escalation"][setting] = Value::String(value.to_owned());
        }
        "stepPercent" => {
            let n: i64 = value
                .parse()
                .map_err(|_| format!("--sweep: stepPercent {value:?}"))?;
            spec["traffic"]["stepPercent"] = Value::from(n);
        }
        "placement" => spec["placement"] = Value::String(value.to_owned()),
        other => {
            let names: Vec<&str> = SWEEPS.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "--sweep: unknown setting {other:?} (one of {})",
                names.join(", ")
            ));
        }
    }
    AdaptivePolicy::from_value(v).map_err(|e| format!("--sweep {setting}={value}: {e}"))
}

/// Runs the sweep of `setting` over its values.
pub fn sweep(setup: &Setup<'_>, setting: &str) -> Result<SweepResult, String> {
    let values = SWEEPS
        .iter()
        .find(|(n, _)| *n == setting)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let names: Vec<&str> = SWEEPS.iter().map(|(n, _)| *n).collect();
            format!(
                "--sweep: unknown setting {setting:?} (one of {})",
                names.join(", ")
            )
        })?;
    let none = run(setup, Kind::None).summary;
    let mut points = Vec::new();
    for value in values {
        let policy = with_setting(setup.policy, setting, value)?;
        let s = Setup {
            policy: &policy,
            ..setup.clone()
        };
        points.push(Point {
            value: (*value).to_owned(),
            summary: run(&s, Kind::Plumb).summary,
        });
    }
    Ok(SweepResult {
        setting: setting.to_owned(),
        none,
        points,
    })
}

/// The sweep as a table.
pub fn table(result: &SweepResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<14}{:>9}{:>9}{:>10}{:>11}{:>10}{:>12}",
        result.setting, "MIN>SLO", "GPU-H", "DECISIONS", "OSCILLATE", "DROPPED", "RELEASE-MIN"
    );
    let row = |out: &mut String, label: &str, s: &Summary| {
        let lag: Vec<String> = s
            .release_lag_minutes
            .iter()
            .map(|l| l.map_or_else(|| "never".to_owned(), |l| format!("{l:.0}")))
            .collect();
        let _ = writeln!(
            out,
            "{:<14}{:>9}{:>9.1}{:>10}{:>11}{:>10}{:>12}",
            label,
            s.minutes_over_slo,
            s.gpu_hours,
            s.decisions,
            s.oscillations,
            s.requests_dropped,
            if lag.is_empty() {
                "-".to_owned()
            } else {
                lag.join("/")
            }
        );
    };
    row(&mut out, "(no hub)", &result.none);
    for p in &result.points {
        row(&mut out, &p.value, &p.summary);
    }
    out
}

/// The sweep's plot: minutes over the SLO and GPU-hours (relative to no hub) per value, the
/// values evenly spaced in their order.
pub fn plot(scenario: &str, result: &SweepResult) -> String {
    let idx = |i: usize| i as f64;
    let base_gpu = result.none.gpu_hours.max(1e-9);
    let series = vec![
        Series {
            label: "minutes over SLO".to_owned(),
            points: result
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| (idx(i), Some(f64::from(p.summary.minutes_over_slo))))
                .collect(),
            color: 0,
            stroke: Stroke::Solid,
        },
        Series {
            label: "GPU-hours % of no hub".to_owned(),
            points: result
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| (idx(i), Some(p.summary.gpu_hours / base_gpu * 100.0)))
                .collect(),
            color: 1,
            stroke: Stroke::Solid,
        },
        Series {
            label: "oscillations".to_owned(),
            points: result
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| (idx(i), Some(f64::from(p.summary.oscillations))))
                .collect(),
            color: 2,
            stroke: Stroke::Dashed,
        },
    ];
    let values: Vec<String> = result
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{i}={}", p.value))
        .collect();
    chart(
        &format!("{scenario}: sweep of {}", result.setting),
        &format!("{} ({})", result.setting, values.join(", ")),
        "minutes / percent / count",
        &series,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    #[test]
    fn every_sweep_value_makes_a_valid_policy() {
        let base = Scenario::preset("regional-shortage").unwrap().policy();
        for (setting, values) in SWEEPS {
            for value in values {
                let p = with_setting(&base, setting, value).unwrap();
                assert!(p.spec.check().is_valid(), "{setting}={value}");
            }
        }
        assert!(
            with_setting(&base, "nope", "1")
                .unwrap_err()
                .starts_with("--sweep")
        );
    }
}
