//! `alfred replay` on every recorded cluster in `fixtures/clusters/`, both formats,
//! snapshotted with insta, plus the documented error exits.
//!
//! Each fixture replays at `--now 2026-11-29T08:00:00Z` (the fixtures' time base is
//! 07:00) with `fixtures/configs/<name>.yaml` when it exists, else the built-in config.

use std::path::{Path, PathBuf};
use std::process::Command;

const NOW: &str = "2026-11-29T08:00:00Z";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn alfred(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_alfred"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run alfred");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fixture_args(path: &Path) -> Vec<String> {
    let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
    let mut args = vec![
        "replay".to_owned(),
        path.to_string_lossy().into_owned(),
        "--now".into(),
        NOW.into(),
    ];
    let config = repo().join("fixtures/configs").join(format!("{stem}.yaml"));
    if config.exists() {
        args.push("--config".into());
        args.push(config.to_string_lossy().into_owned());
    }
    args
}

#[test]
fn every_fixture_replays_in_json() {
    insta::glob!("../../../fixtures/clusters", "*.json", |path| {
        let mut args = fixture_args(path);
        args.extend(["--format".into(), "json".into()]);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = alfred(&refs);
        assert_eq!(code, 0, "{stderr}");
        let value: serde_json::Value = serde_json::from_str(&stdout).expect("replay prints JSON");
        assert!(value["record"]["timestamp"].is_string());
        insta::assert_json_snapshot!(value);
    });
}

#[test]
fn every_fixture_replays_as_a_table() {
    insta::glob!("../../../fixtures/clusters", "*.json", |path| {
        let args = fixture_args(path);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = alfred(&refs);
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("POOL"), "{stdout}");
        insta::assert_snapshot!(stdout);
    });
}

#[test]
fn main_job_with_executor_and_in_process_simulation() {
    let (code, stdout, stderr) = alfred(&[
        "replay",
        "fixtures/clusters/ten-node-spread.json",
        "--now",
        NOW,
        "--migration-api-version",
        "v1",
        "--simulate-in-process",
        "--format",
        "json",
        "--explain",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let value: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    insta::assert_json_snapshot!(value);
}

#[test]
fn replay_is_byte_for_byte_deterministic() {
    let args = [
        "replay",
        "fixtures/clusters/ten-node-spread.json",
        "--now",
        NOW,
        "--format",
        "json",
        "--migration-api-version",
        "v1",
        "--simulate-in-process",
    ];
    let (a, first, _) = alfred(&args);
    let (b, second, _) = alfred(&args);
    assert_eq!((a, b), (0, 0));
    assert_eq!(first, second);
}

#[test]
fn malformed_json_exits_2_naming_the_file() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("alfred-replay-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("broken.json");
    std::fs::write(&file, "{\"kind\": \"List\", \"items\": [").unwrap();
    let (code, _, stderr) = alfred(&["replay", file.to_str().unwrap(), "--now", NOW]);
    assert_eq!(code, 2);
    assert!(stderr.contains("broken.json"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn node_without_status_is_reported_not_fatal() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("alfred-replay-nostatus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("node.json");
    std::fs::write(&file, r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-1"}}]}"#).unwrap();
    let (code, stdout, stderr) = alfred(&[
        "replay",
        file.to_str().unwrap(),
        "--now",
        NOW,
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let value: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let problems = value["problems"].as_array().expect("problems listed");
    assert!(
        problems
            .iter()
            .any(|p| p["kind"] == "Node" && p["name"] == "gpu-1"),
        "{stdout}"
    );
}

#[test]
fn bad_config_exits_2_naming_the_key() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("alfred-replay-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("config.yaml");
    std::fs::write(
        &cfg,
        "schemaVersion: 1\npolicies:\n  defragmentation:\n    fragmentationThreshold: 1.5\n",
    )
    .unwrap();
    let (code, _, stderr) = alfred(&[
        "replay",
        "fixtures/clusters/two-pools.json",
        "--config",
        cfg.to_str().unwrap(),
        "--now",
        NOW,
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("policies.defragmentation.fragmentationThreshold: 1.5 is outside [0, 1]"),
        "{stderr}"
    );
    let unknown = dir.join("unknown.yaml");
    std::fs::write(&unknown, "schemaVersion: 1\nmaxInflight: 3\n").unwrap();
    let (code, _, stderr) = alfred(&["config", "check", unknown.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(stderr.contains("maxInflight"), "{stderr}");
}

#[test]
fn config_check_prints_the_effective_config() {
    let (code, stdout, stderr) = alfred(&[
        "config",
        "check",
        "fixtures/configs/maintenance-label.yaml",
        "--print-effective",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("fragmentationThreshold"), "{stdout}");
    assert!(stdout.contains("os-patching"), "{stdout}");
}

#[test]
fn state_file_carries_the_journal_between_replays() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("alfred-replay-state-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("state.json");
    let (code, _, stderr) = alfred(&[
        "replay",
        "fixtures/clusters/ten-node-spread.json",
        "--now",
        NOW,
        "--state",
        state.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(&state).expect("state written");
    let value: serde_json::Value = serde_json::from_str(&text).expect("state is JSON");
    assert!(value.get("version").is_some(), "{text}");
    // A corrupt state file is never rewritten: execution stops, the bytes stay.
    std::fs::write(&state, "{\"version\":\"v1\",\"entries\":[").unwrap();
    let (code, _, stderr) = alfred(&[
        "replay",
        "fixtures/clusters/ten-node-spread.json",
        "--now",
        NOW,
        "--state",
        state.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&state).unwrap(),
        "{\"version\":\"v1\",\"entries\":["
    );
}

#[test]
fn execute_mode_story_across_replays_submits_once_then_stalls() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("alfred-replay-execute-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("state.json");
    let pass = |now: &str| {
        let (code, stdout, stderr) = alfred(&[
            "replay",
            "fixtures/clusters/execute-move-pays.json",
            "--config",
            "fixtures/configs/execute-mode.yaml",
            "--migration-api-version",
            "v1",
            "--simulate-in-process",
            "--state",
            state.to_str().unwrap(),
            "--now",
            now,
            "--format",
            "json",
        ]);
        assert_eq!(code, 0, "{stderr}");
        serde_json::from_str::<serde_json::Value>(&stdout).unwrap()
    };
    let requests = |v: &serde_json::Value| {
        v["effects"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "requestMigration")
            .count()
    };
    let first = pass("2026-11-29T08:15:00Z");
    let rows = first["record"]["recommendations"].as_array().unwrap();
    assert_eq!(
        rows.iter().filter(|r| r["outcome"] == "submitted").count(),
        1,
        "{rows:?}"
    );
    // The move is the one step of a drain plan freeing gpu-h100-01 for the pending 8-GPU
    // pod (docs/design-policies.md#drain-plans): the plan starts, the pod is nominated to the node,
    // and chat/beta may not land on the plan's node nor on the target just claimed.
    let alpha = rows.iter().find(|r| r["outcome"] == "submitted").unwrap();
    assert_eq!(alpha["workload"], "chat/alpha");
    assert_eq!(alpha["planStep"], "1/1");
    assert!(
        rows.iter()
            .any(|r| r["workload"] == "chat/beta" && r["rejectReason"] == "TargetNodeBusy"),
        "{rows:?}"
    );
    let plans = first["record"]["plans"].as_array().unwrap();
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0]["node"], "gpu-h100-01");
    assert_eq!(plans[0]["phase"], "protecting");
    let kinds: Vec<&str> = first["effects"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    let request = kinds.iter().position(|k| *k == "requestMigration").unwrap();
    let nominate = kinds.iter().position(|k| *k == "nominatePod").unwrap();
    // The plan's journal write comes between the request and the nomination.
    assert!(
        kinds[request + 1..nominate].contains(&"writeJournal"),
        "{kinds:?}"
    );
    assert_eq!(requests(&first), 1);
    // Five minutes later nothing acknowledged the request (the recorded cluster never
    // changes): the entry stalls, it still blocks, and no second request is written.
    let second = pass("2026-11-29T08:20:00Z");
    let rows = second["record"]["recommendations"].as_array().unwrap();
    assert!(
        rows.iter()
            .any(|r| r["outcome"] == "stalled" && r["dispatchReason"] == "AcknowledgementTimeout"),
        "{rows:?}"
    );
    assert_eq!(requests(&second), 0);
}

/// docs/design-pass.md#node-records across a `--state` chain on `node-health-disabled.json`: node
/// health on (`maintenance-label.yaml`: records for the Unhealthy node and the one due for
/// maintenance, their Node events), off (`node-health-disabled.yaml`: no records, no Node events,
/// both stored keys deleted), on again (records from fresh markers, the events again).
#[test]
fn node_health_off_and_on_again_across_a_state_chain() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("alfred-replay-nodehealth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("state.json");
    let pass = |config: &str, now: &str| {
        let (code, stdout, stderr) = alfred(&[
            "replay",
            "fixtures/clusters/node-health-disabled.json",
            "--config",
            config,
            "--state",
            state.to_str().unwrap(),
            "--now",
            now,
            "--format",
            "json",
        ]);
        assert_eq!(code, 0, "{stderr}");
        serde_json::from_str::<serde_json::Value>(&stdout).unwrap()
    };
    let on = "fixtures/configs/maintenance-label.yaml";
    let off = "fixtures/configs/node-health-disabled.yaml";
    let chain = [
        pass(on, "2026-11-29T08:00:00Z"),
        pass(off, "2026-11-29T08:05:00Z"),
        pass(on, "2026-11-29T08:10:00Z"),
    ];
    let node_events = |v: &serde_json::Value| -> Vec<String> {
        v["effects"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "recordEvent" && e["regarding"]["kind"] == "Node")
            .map(|e| e["reason"].as_str().unwrap().to_owned())
            .collect()
    };
    let keys = |v: &serde_json::Value| -> Vec<String> {
        v["nodes"].as_object().unwrap().keys().cloned().collect()
    };
    let both = vec!["node.gpu-h100-01".to_owned(), "node.gpu-h100-02".to_owned()];
    assert_eq!(keys(&chain[0]), both);
    assert_eq!(
        node_events(&chain[0]),
        ["NodeRepairNeeded", "NodeMaintenanceRequested"]
    );
    assert!(keys(&chain[1]).is_empty());
    assert!(node_events(&chain[1]).is_empty());
    assert_eq!(keys(&chain[2]), both);
    assert_eq!(
        node_events(&chain[2]),
        ["NodeRepairNeeded", "NodeMaintenanceRequested"]
    );
    // Only what the chain is about: the node records and the recommendations write.
    let story: Vec<serde_json::Value> = chain
        .iter()
        .map(|v| {
            serde_json::json!({
                "nodes": v["nodes"],
                "recommendations": v["effects"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|e| e["kind"] == "updateRecommendations")
                    .cloned(),
                "nodeEvents": v["effects"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|e| e["kind"] == "recordEvent" && e["regarding"]["kind"] == "Node")
                    .cloned()
                    .collect::<Vec<_>>(),
            })
        })
        .collect();
    insta::assert_json_snapshot!(story);
}

/// `policies.defragmentation.drainPlans.enabled: false` gives exactly the seeds' behaviour
/// (docs/design-policies.md#drain-plans): every fixture replays as it did before drain plans
/// existed (these snapshots were checked byte for byte against the pre-plan outputs when plans
/// landed).
#[test]
fn with_drain_plans_disabled_every_fixture_replays_as_before_plans() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("alfred-replay-noplans-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    insta::glob!("../../../fixtures/clusters", "*.json", |path| {
        let mut args = fixture_args(path);
        let base = match args.iter().position(|a| a == "--config") {
            Some(i) => args[i + 1].clone(),
            None => {
                let f = dir.join("builtin.yaml");
                std::fs::write(&f, "schemaVersion: 1\n").unwrap();
                f.to_string_lossy().into_owned()
            }
        };
        let (code, effective, stderr) = alfred(&["config", "check", &base, "--print-effective"]);
        assert_eq!(code, 0, "{stderr}");
        let at = effective
            .find("drainPlans:")
            .expect("drainPlans in the effective config");
        let (head, tail) = effective.split_at(at);
        let tail = tail.replacen("enabled: true", "enabled: false", 1);
        let off = dir.join(format!(
            "{}.yaml",
            path.file_stem().unwrap().to_string_lossy()
        ));
        std::fs::write(&off, format!("{head}{tail}")).unwrap();
        args.retain(|a| a != "--config" && *a != base);
        args.extend([
            "--config".into(),
            off.to_string_lossy().into_owned(),
            "--format".into(),
            "json".into(),
        ]);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = alfred(&refs);
        assert_eq!(code, 0, "{stderr}");
        let value: serde_json::Value = serde_json::from_str(&stdout).expect("replay prints JSON");
        insta::assert_json_snapshot!(value);
    });
    std::fs::remove_dir_all(&dir).ok();
}
