//! The decision and outcome lines of a short scenario with alfred in the loop: three 8-GPU
//! nodes, five 1-GPU Instances spread over them, an 8-GPU Instance waiting. alfred moves
//! the lone Instance off the third node; the waiting Instance gets that node.

mod common;

use alfred_model::config::Config;
use alfred_twin::alfred::AlfredCaretaker;
use alfred_twin::engine::{MigPhase, run};
use alfred_twin::world::{Placement, World};
use common::*;
use serde_json::{Value, json};

fn scenario() -> (AlfredCaretaker, alfred_twin::engine::RunResult) {
    scenario_logging(false)
}

/// [`scenario`], every advice row logged in full when `all_advice`.
fn scenario_logging(all_advice: bool) -> (AlfredCaretaker, alfred_twin::engine::RunResult) {
    let nodes = nodes(3, 8);
    let trace = vec![task(1), task(8)];
    let mut arrivals: Vec<_> = (0..5).map(|i| arrival(i, 0, None)).collect();
    arrivals.push(arrival(6, 1, None));
    let mut a = AlfredCaretaker::new(Config::default(), 1, Placement::Spread);
    a.log_all_advice(all_advice);
    let res = run(
        &arrivals,
        &trace,
        World::new(&nodes, Placement::Spread),
        &opts(2),
        &mut a,
        &mut |_| {},
    );
    (a, res)
}

/// The parts of each line a reader relies on (full lines depend on every core detail).
fn digest(line: &str) -> Value {
    let v: Value = serde_json::from_str(line).unwrap();
    match v["kind"].as_str() {
        Some("decision") => json!({
            "kind": "decision",
            "decisionId": v["decisionId"],
            "time": v["time"],
            "mode": v["mode"],
            "poolScoreG": v["pools"]["G"]["score"].as_f64().map(|x| (x * 1000.0).round() / 1000.0),
            "executable": v["candidates"].as_array().map(|c| c.iter().map(|c| json!({
                "workload": c["candidate"]["workload"],
                "fromNode": c["candidate"]["fromNode"],
                "hints": c["candidate"]["hintTargetNodes"],
                "admitted": c["verdict"]["admitted"],
                "rejectReason": c["verdict"]["rejectReason"],
                "dispatchStatus": c["verdict"]["dispatchStatus"],
            })).collect::<Vec<_>>()),
            "adviceCounts": v["adviceCounts"],
            "simulations": v["simulations"].as_array().map(|s| s.iter().map(|s| json!({
                "purpose": s["purpose"], "status": s["status"], "placements": s["placements"],
            })).collect::<Vec<_>>()),
            "dispatch": v["dispatch"].as_array().map(|d| d.iter().map(|d| d["workload"].clone()).collect::<Vec<_>>()),
            "pendingAtDecision": v["pendingAtDecision"].as_array().map(|p| p.iter().map(|p| p["pod"].clone()).collect::<Vec<_>>()),
        }),
        _ => json!({
            "kind": v["kind"],
            "decisionId": v["decisionId"],
            "afterSeconds": v["afterSeconds"],
            "final": v["final"],
            "completed": v["completed"],
            "requests": v["requests"].as_array().map(|r| r.iter().map(|r| json!({
                "phase": r["phase"], "completed": r["completed"],
                "readyAfterSeconds": r["readyAfterSeconds"], "target": r["target"],
            })).collect::<Vec<_>>()),
            "poolScoreG": v["pools"]["G"]["score"].as_f64().map(|x| (x * 1000.0).round() / 1000.0),
            "pending": v["pending"],
            "followedBy": v["followedBy"].as_array().map(|f| f.len()),
        }),
    }
}

#[test]
fn alfred_moves_the_lone_instance_and_the_log_follows_it() {
    let (a, res) = scenario();
    let s = &res.sim;
    assert!(
        s.migrations.iter().any(|m| m.phase == MigPhase::Completed),
        "alfred made a move: {:?}\n{}",
        s.migrations,
        a.log.join("\n")
    );
    let big = s.tasks.iter().find(|t| t.req.gpus == 8).unwrap();
    assert!(big.first_placed.is_some(), "the 8-GPU Instance got a node");
    // Every decision that dispatched has outcome lines at 60, 300, 900 s.
    let lines: Vec<Value> = a
        .log
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for d in lines
        .iter()
        .filter(|l| l["kind"] == "decision" && !l["dispatch"].as_array().unwrap().is_empty())
    {
        let after: Vec<i64> = lines
            .iter()
            .filter(|l| l["kind"] == "outcome" && l["decisionId"] == d["decisionId"])
            .map(|l| l["afterSeconds"].as_i64().unwrap())
            .collect();
        assert_eq!(after, vec![60, 300, 900], "{}", d["decisionId"]);
    }
    let digest: Vec<Value> = a
        .log
        .iter()
        .map(|l| digest(l))
        .filter(|d| {
            d["kind"] == "outcome"
                || d["executable"].as_array().is_some_and(|e| !e.is_empty())
                || d["dispatch"].as_array().is_some_and(|e| !e.is_empty())
        })
        .collect();
    insta::assert_json_snapshot!("decision_log_digest", digest);
    // The same seed gives the same log, byte for byte.
    let (b, _) = scenario();
    assert_eq!(a.log, b.log);
}

/// `--log-all-advice`: the passes keep their advice rows and each decision line lists them
/// in full, where by default they are counted. The same lines, the same decisions, and as
/// many advice rows listed as counted.
#[test]
fn logging_every_advice_row_lists_what_the_default_counts() {
    let (counted, _) = scenario_logging(false);
    let (listed, _) = scenario_logging(true);
    let parse = |a: &AlfredCaretaker| -> Vec<Value> {
        a.log
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (counted, listed) = (parse(&counted), parse(&listed));
    assert_eq!(counted.len(), listed.len());
    let mut advice = 0;
    for (c, l) in counted.iter().zip(&listed) {
        assert_eq!(c["kind"], l["kind"]);
        assert_eq!(c["decisionId"], l["decisionId"]);
        if c["kind"] != "decision" {
            assert_eq!(c, l);
            continue;
        }
        assert_eq!(c["dispatch"], l["dispatch"]);
        let rows = |v: &Value, executable: bool| {
            v["candidates"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|x| x["candidate"]["executable"] == executable)
                .count() as u64
        };
        let in_counts: u64 = c["adviceCounts"]
            .as_object()
            .unwrap()
            .values()
            .map(|n| n.as_u64().unwrap())
            .sum();
        assert_eq!(rows(l, false), in_counts, "{}", c["decisionId"]);
        assert_eq!(rows(l, true), rows(c, true), "{}", c["decisionId"]);
        assert_eq!(
            l["adviceCounts"],
            json!({}),
            "listed rows are not counted too"
        );
        advice += in_counts;
    }
    assert!(advice > 0, "the scenario has advice to log");
}

/// The README's story in the twin: ten 8-GPU nodes with one 1-GPU Instance each, an 8-GPU
/// Instance waiting; no single move pays, a one-step drain plan does.
fn ten_nodes() -> AlfredCaretaker {
    let nodes = nodes(10, 8);
    let trace = vec![task(1), task(8)];
    let mut arrivals: Vec<_> = (0..10).map(|i| arrival(i, 0, None)).collect();
    arrivals.push(arrival(11, 1, None));
    let mut a = AlfredCaretaker::new(Config::default(), 1, Placement::Spread);
    run(
        &arrivals,
        &trace,
        World::new(&nodes, Placement::Spread),
        &opts(2),
        &mut a,
        &mut |_| {},
    );
    a
}

#[test]
fn the_plan_that_frees_the_node_has_its_line_and_an_outcome_line_when_the_pod_binds() {
    let a = ten_nodes();
    let lines: Vec<Value> = a
        .log
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let plans: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "plan").collect();
    assert_eq!(plans.len(), 1, "{}", a.log.join("\n"));
    assert_eq!(plans[0]["podGpus"], 8);
    let outcomes: Vec<&Value> = lines
        .iter()
        .filter(|l| l["kind"] == "planOutcome")
        .collect();
    assert_eq!(outcomes.len(), 1, "{}", a.log.join("\n"));
    let o = outcomes[0];
    assert_eq!(o["planId"], plans[0]["planId"]);
    assert_eq!(o["outcome"], "completed");
    assert_eq!(o["boundOn"], "planNode");
    assert!(o["minutesSinceStart"].as_u64().unwrap() <= 10, "{o}");
    assert_eq!(o["node"], plans[0]["node"]);
}
