//! `--format table`: kubectl-style columns for the rows and a line per pool.
//!
//! Columns are padded to their widest cell, three spaces apart, upper-case headers,
//! `<none>` for empty cells, as `kubectl get` prints them.

use alfred_model::record::Row;
use serde_json::Value;

/// The row's most specific "why": dispatch reason, else rejection, else advice, else the
/// policy's reason.
fn why(row: &Row) -> String {
    if let Some(r) = row.dispatch_reason {
        return r.to_string();
    }
    if let Some(r) = row.reject_reason {
        return r.to_string();
    }
    if let Some(r) = row.advisory_reason {
        return r.to_string();
    }
    row.reason.to_string()
}

fn cell(text: String) -> String {
    if text.is_empty() {
        "<none>".to_owned()
    } else {
        text
    }
}

fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(c);
                s.push_str(&" ".repeat(widths[i] - c.chars().count() + 3));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(&header.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>());
    for r in rows {
        line(r);
    }
    out
}

/// The recommendations table.
pub fn rows_table(rows: &[Row]) -> String {
    if rows.is_empty() {
        return "No recommendations.\n".to_owned();
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let targets = if r.target.is_empty() {
                r.hint_targets.join(",")
            } else {
                r.target.clone()
            };
            vec![
                r.workload.clone(),
                r.component.as_str().to_owned(),
                r.instance.to_string(),
                r.policy.as_str().to_owned(),
                serde_json::to_value(r.outcome)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                why(r),
                cell(r.from_node.clone()),
                cell(targets),
                format!("{:.3}", r.score),
            ]
        })
        .collect();
    render(
        &[
            "WORKLOAD",
            "COMPONENT",
            "INSTANCE",
            "POLICY",
            "OUTCOME",
            "REASON",
            "FROM",
            "TARGETS",
            "SCORE",
        ],
        &cells,
    )
}

fn num(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if n.is_f64() => format!("{f:.3}"),
            _ => n.to_string(),
        },
        Some(Value::String(s)) => s.clone(),
        _ => "<none>".to_owned(),
    }
}

/// One summary line per pool, from the pools' JSON (`pool`, `totalFree`, `observed`, …).
pub fn pools_table(pools: &[Value]) -> String {
    if pools.is_empty() {
        return "No GPU pools.\n".to_owned();
    }
    let cells: Vec<Vec<String>> = pools
        .iter()
        .map(|p| {
            vec![
                num(p, "pool"),
                num(p, "totalFree"),
                num(p, "observed"),
                num(p, "best"),
                num(p, "reclaimable"),
                num(p, "pendingPressure"),
                num(p, "score"),
                num(p, "thresholdCase"),
            ]
        })
        .collect();
    render(
        &[
            "POOL",
            "FREE",
            "OBSERVED",
            "BEST",
            "RECLAIMABLE",
            "PENDING",
            "SCORE",
            "CASE",
        ],
        &cells,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use alfred_model::reason::{AdvisoryReason, RowReason};
    use alfred_model::record::{Outcome, Policy};
    use alfred_model::snapshot::ComponentKind;

    #[test]
    fn rows_render_as_aligned_columns() {
        let row = Row {
            workload: "team-a/llama".into(),
            component: ComponentKind::Engine,
            instance: 0,
            policy: Policy::Defragmentation,
            reason: RowReason::Fragmentation,
            outcome: Outcome::Advisory,
            advisory_reason: Some(AdvisoryReason::OMENativeUnavailable),
            reject_reason: None,
            from_node: "gpu-1".into(),
            target: String::new(),
            hint_targets: vec!["gpu-2".into(), "gpu-3".into()],
            score: 0.0,
            emergency: false,
            cooldown_overridden: false,
            dispatch_status: None,
            request_uuid: String::new(),
            dispatch_reason: None,
            scheduling: None,
            plan_id: String::new(),
            plan_step: String::new(),
        };
        let t = rows_table(&[row]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with("WORKLOAD       COMPONENT   INSTANCE"),
            "{t}"
        );
        assert!(lines[1].contains("OMENativeUnavailable"), "{t}");
        assert!(lines[1].contains("gpu-2,gpu-3"), "{t}");
        assert!(lines[1].ends_with("0.000"), "{t}");
        assert_eq!(lines[0].find("COMPONENT"), lines[1].find("engine"));
    }

    #[test]
    fn pools_render_numbers_with_three_decimals() {
        let pools = vec![
            serde_json::json!({"pool":"H100","totalFree":70,"observed":0.5,"best":0.0,"reclaimable":0.5,"pendingPressure":0.25,"score":0.625,"thresholdCase":"actionable"}),
        ];
        let t = pools_table(&pools);
        assert!(t.lines().nth(1).unwrap().starts_with("H100   70"), "{t}");
        assert!(t.contains("0.625"), "{t}");
        assert_eq!(rows_table(&[]), "No recommendations.\n");
    }
}
