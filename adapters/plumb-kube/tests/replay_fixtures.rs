//! `plumb replay` on every recorded member in `fixtures/plumb/`, both formats, snapshotted
//! with insta, and the rule each fixture shows checked on its JSON report.
//!
//! Every fixture replays as cluster `us-east` at `--now 2026-12-01T12:00:00Z` (the fixtures'
//! time base) for the policy `serving/llama-70b`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const NOW: &str = "2026-12-01T12:00:00Z";
const CLUSTER: &str = "us-east";
const POLICY: &str = "serving/llama-70b";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn plumb(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run plumb");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn replay_args(dir: &str, format: &str) -> Vec<String> {
    [
        "replay",
        dir,
        "--cluster",
        CLUSTER,
        "--now",
        NOW,
        "--policy",
        POLICY,
        "--format",
        format,
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The JSON output of `fixtures/plumb/<name>`.
fn replay_json(name: &str) -> Value {
    let dir = format!("fixtures/plumb/{name}");
    let args = replay_args(&dir, "json");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, stderr) = plumb(&refs);
    assert_eq!(code, 0, "{name}: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {stdout}"))
}

fn fixture_dir(path: &Path) -> String {
    let dir = path
        .parent()
        .expect("a fixture file is in its member folder");
    let name = dir.file_name().unwrap().to_string_lossy();
    format!("fixtures/plumb/{name}")
}

#[test]
fn every_fixture_replays_in_json() {
    insta::glob!("../../../fixtures/plumb", "*/signals.json", |path| {
        let args = replay_args(&fixture_dir(path), "json");
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = plumb(&refs);
        assert_eq!(code, 0, "{stderr}");
        let value: Value = serde_json::from_str(&stdout).expect("replay prints JSON");
        assert_eq!(value["report"]["time"], NOW);
        insta::assert_json_snapshot!(value);
    });
}

#[test]
fn every_fixture_replays_as_a_table() {
    insta::glob!("../../../fixtures/plumb", "*/signals.json", |path| {
        let args = replay_args(&fixture_dir(path), "table");
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = plumb(&refs);
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("neededReplicas"), "{stdout}");
        insta::assert_snapshot!(stdout);
    });
}

#[test]
fn the_same_member_replays_byte_identically() {
    let args = replay_args("fixtures/plumb/promised-elsewhere", "json");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(plumb(&refs), plumb(&refs));
}

fn ready(value: &Value) -> (&str, &str, &str) {
    let c = &value["conditions"][0];
    assert_eq!(c["type"], "Ready");
    (
        c["status"].as_str().unwrap(),
        c["reason"].as_str().unwrap(),
        c["message"].as_str().unwrap_or(""),
    )
}

#[test]
fn default_member_is_short_by_its_unschedulable_replicas_plus_what_demand_asks() {
    let v = replay_json("default");
    let r = &v["report"];
    assert_eq!(ready(&v).0, "True");
    // Still True as recorded: the transition time is kept.
    assert_eq!(
        v["conditions"][0]["lastTransitionTime"],
        "2026-12-01T09:00:00Z"
    );
    assert_eq!(r["desiredReplicas"], 6);
    assert_eq!(r["readyReplicas"], 4);
    assert_eq!(r["unschedulableReplicas"], 2);
    // 2 unschedulable + (ceil(34 / 4) = 9) − 6 desired.
    assert_eq!(r["neededReplicas"], 5);
    // Carried over from the recorded previous report: short since 11:52, and the highest
    // pressure served safely since 03:00 (no safe moment now: the member is short).
    assert_eq!(r["shortSince"], "2026-12-01T11:52:00Z");
    assert_eq!(r["safePressure"], 4.2);
    assert_eq!(r["safeSince"], "2026-12-01T03:00:00Z");
    assert_eq!(r["staticRoom"], 0);
    // gpu-a100's limit of 32 GPUs holds 16 now: 16 more, four replicas of 4 GPUs.
    assert_eq!(r["dynamicRoom"], 4);
    assert_eq!(r["region"], "us-east-1");
    assert_eq!(r["demand"]["value"], 34.0);
    assert!(r["specHash"].as_str().unwrap().starts_with("sha256:"));
}

#[test]
fn a_settled_member_is_not_short_and_raises_its_safe_pressure() {
    let r = &replay_json("unregistered-pool")["report"];
    assert_eq!(r["neededReplicas"], 0);
    assert!(r.get("shortSince").is_none(), "{r}");
    // 6.5 served with every wanted replica ready and every signal read: above the recorded 4.2.
    assert_eq!(r["safePressure"], 6.5);
}

#[test]
fn an_unregistered_pool_with_idle_gpus_adds_no_room() {
    let v = replay_json("unregistered-pool");
    assert_eq!(v["report"]["staticRoom"], 0);
    // gpu-spot-1, gpu-spot-2 and the CPU node are left out.
    assert_eq!(v["staticDiagnostics"]["filtered"], 3);
    assert_eq!(v["staticDiagnostics"]["registered"], 2);
}

#[test]
fn replicas_on_an_unregistered_node_count_as_ready_but_the_node_adds_no_room() {
    let v = replay_json("outside-registered");
    // Two of the four ready replicas run on gpu-shared-1, which no pool or selector registers.
    assert_eq!(v["report"]["readyReplicas"], 4);
    assert_eq!(v["staticDiagnostics"]["registered"], 2);
    assert_eq!(v["staticDiagnostics"]["filtered"], 2);
    // The room is gpu-a100-2's eight free GPUs only: two replicas.
    assert_eq!(v["report"]["staticRoom"], 2);
}

#[test]
fn a_member_without_a_region_reports_none() {
    assert_eq!(replay_json("default")["report"]["region"], "us-east-1");
    let v = replay_json("no-region");
    assert!(v["report"].get("region").is_none(), "{v}");
    assert_eq!(ready(&v).0, "True");
}

#[test]
fn a_signal_with_two_samples_nan_or_an_error_is_ignored_and_ready_turns_false() {
    for (fixture, signal) in [
        ("signal-two-samples", "demand"),
        ("signal-nan", "pressure"),
        ("signal-error", "latency"),
    ] {
        let v = replay_json(fixture);
        let (status, reason, message) = ready(&v);
        assert_eq!(
            (status, reason),
            ("False", "ObservationFailed"),
            "{fixture}"
        );
        assert!(message.contains(signal), "{fixture}: {message}");
        let r = &v["report"];
        assert!(r.get(signal).is_none(), "{fixture}: {r}");
        assert_eq!(r["error"], message, "{fixture}");
        // The recorded condition was True: the status changed now.
        assert_eq!(v["conditions"][0]["lastTransitionTime"], NOW, "{fixture}");
        // The rest still counts: unschedulable replicas and the other signals.
        assert_eq!(r["unschedulableReplicas"], 2, "{fixture}");
        assert!(r["neededReplicas"].as_u64().unwrap() >= 2, "{fixture}");
        assert!(r["saturation"]["value"].is_number(), "{fixture}");
    }
}

#[test]
fn demand_without_replica_capacity_counts_the_shortage_from_unschedulable_replicas_only() {
    let v = replay_json("no-replica-capacity");
    let r = &v["report"];
    assert_eq!(r["demand"]["value"], 34.0);
    // 2 unschedulable, saturated (0.97 > 0.9): at least step (2); demand never counts.
    assert_eq!(r["neededReplicas"], 2);
}

#[test]
fn recurring_launch_failures_void_dynamic_room() {
    assert_eq!(replay_json("default")["report"]["dynamicRoom"], 4);
    let r = &replay_json("launch-failures")["report"];
    assert_eq!(r["recentLaunchFailures"], 3);
    assert_eq!(r["dynamicRoom"], 0);
}

#[test]
fn another_policys_promised_replicas_take_the_room_first() {
    let v = replay_json("promised-elsewhere");
    // gpu-a100-3's 8 free GPUs: mistral-7b's 2 unplaced 2-GPU replicas first, then one 4-GPU
    // llama replica.
    assert_eq!(v["staticDiagnostics"]["promisedPlaced"], 2);
    assert_eq!(v["report"]["staticRoom"], 1);
}

#[test]
fn a_copy_differing_only_in_hub_only_fields_hashes_the_same() {
    let default = replay_json("default");
    let changed = replay_json("hub-only-change");
    assert_eq!(default["report"]["specHash"], changed["report"]["specHash"]);
    assert_eq!(default["report"], changed["report"]);
}

#[test]
fn a_cluster_not_in_the_policy_is_not_a_member() {
    let (code, stdout, stderr) = plumb(&[
        "replay",
        "fixtures/plumb/default",
        "--cluster",
        "ap-south",
        "--now",
        NOW,
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert!(v["report"].is_null());
    assert!(v["staticDiagnostics"].is_null());
    assert_eq!(ready(&v).1, "NotAMember");
}
