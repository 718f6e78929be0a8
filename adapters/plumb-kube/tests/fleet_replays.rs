//! `plumb replay` on every fleet folder in `fixtures/plumb/fleets/`: the decision log (JSON
//! lines) and the table snapshotted with insta, the rule each fleet shows checked on its
//! lines, the seed's two `jq` queries run unchanged on the log, and bad fleet input refused
//! in one line naming the file and the field.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

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

fn fleets() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo().join("fixtures/plumb/fleets"))
        .expect("fixtures/plumb/fleets")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("fleet.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn log_text(name: &str) -> String {
    let dir = format!("fixtures/plumb/fleets/{name}");
    let (code, stdout, stderr) = plumb(&["replay", &dir, "--format", "json"]);
    assert_eq!(code, 0, "{name}: {stderr}");
    stdout
}

fn log(name: &str) -> Vec<Value> {
    log_text(name)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {l}")))
        .collect()
}

fn decisions(lines: &[Value]) -> Vec<&Value> {
    lines.iter().filter(|l| l["kind"] == "decision").collect()
}

fn messages(lines: &[Value]) -> Vec<String> {
    decisions(lines)
        .iter()
        .map(|d| d["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn every_fleet_replays_deterministically_and_its_log_is_snapshotted() {
    let names = fleets();
    assert!(names.len() >= 10, "fleets: {names:?}");
    for name in names {
        let text = log_text(&name);
        assert_eq!(text, log_text(&name), "{name}: a second replay differs");
        for line in log(&name) {
            let kind = line["kind"].as_str().unwrap_or_default();
            assert!(
                kind == "decision" || kind == "outcome",
                "{name}: kind {kind}"
            );
            if kind == "decision" {
                for field in [
                    "action",
                    "phase",
                    "message",
                    "before",
                    "after",
                    "held",
                    "outOfSync",
                ] {
                    assert!(line.get(field).is_some(), "{name}: no {field} in {line}");
                }
            }
        }
        insta::assert_snapshot!(format!("{name}.jsonl"), text);
        let dir = format!("fixtures/plumb/fleets/{name}");
        let (code, table, stderr) = plumb(&["replay", &dir]);
        assert_eq!(code, 0, "{name}: {stderr}");
        insta::assert_snapshot!(format!("{name}.table"), table);
    }
}

#[test]
fn the_shortage_story_escalates_borrows_shifts_returns_and_releases_in_order() {
    let lines = log("shortage-story");
    let actions: Vec<String> = decisions(&lines)
        .iter()
        .map(|d| {
            format!(
                "{} {}",
                d["phase"].as_str().unwrap_or_default(),
                d["action"].as_str().unwrap_or_default()
            )
        })
        .collect();
    let first = |needle: &str| actions.iter().position(|a| a.contains(needle));
    let escalated = first("Escalated AddCapacity").expect("capacity borrowed");
    let recovering = first("Recovering").expect("recovering");
    let released = first("ReleaseCapacity").expect("released");
    let steady = first("Steady").expect("steady again");
    assert!(
        escalated < recovering && recovering < released && released <= steady,
        "{actions:?}"
    );
    let ds = decisions(&lines);
    assert!(
        ds[escalated]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("(existing nodes)")
    );
    assert_eq!(ds[steady]["after"]["helper"]["floor"], 0);
    assert_eq!(ds[steady]["after"]["home"]["weight"], 100);
    // traffic followed ready replicas: helper's share grew only as its replicas became ready
    let outcome = lines
        .iter()
        .find(|l| l["kind"] == "outcome" && l["readyAfterSeconds"]["helper"].is_number())
        .expect("a time to ready");
    assert_eq!(outcome["readyAfterSeconds"]["helper"], 120);
}

#[test]
fn each_runbook_fleet_shows_its_rule() {
    let no_room = messages(&log("no-room"));
    assert!(
        no_room
            .iter()
            .any(|m| m.contains("4 replicas short and no other cluster has room"))
    );
    assert!(
        no_room
            .iter()
            .any(|m| m.contains("6 replicas short and no other cluster has room"))
    );
    assert_eq!(
        no_room
            .iter()
            .filter(|m| m.contains("4 replicas short"))
            .count(),
        1
    );

    let never = messages(&log("never-on-a-node"));
    let taken = never
        .iter()
        .find(|m| m.contains("-2 on helper: not on a node after 10m0s"))
        .expect("taken back");
    assert!(
        taken.contains("+2 on spare (new nodes)"),
        "placed elsewhere in the same step: {taken}"
    );

    let table = plumb(&["replay", "fixtures/plumb/fleets/not-ready"]).1;
    assert!(
        table.contains(
            "ReplicasNotReady: helper: 1 of 3 replicas ready after 10m0s; the floor stays"
        )
    );
    assert!(
        !messages(&log("not-ready"))
            .iter()
            .any(|m| m.contains("-2 on helper"))
    );

    let held = log("release-held");
    let held_line = decisions(&held)
        .into_iter()
        .find(|d| d["held"].as_array().is_some_and(|h| !h.is_empty()))
        .expect("a held line");
    assert_eq!(held_line["held"][0], "helper");
    assert!(held_line["reports"]["helper"].is_null());
    assert!(
        messages(&held).iter().any(|m| m.contains("(release)")),
        "released once it reports"
    );

    let home = messages(&log("home-cannot-take-it"));
    let raise = home
        .iter()
        .position(|m| m.contains("(home, to take traffic back)"))
        .expect("home first");
    let back = home
        .iter()
        .position(|m| m.contains("home 60→80"))
        .expect("return resumed");
    assert!(raise < back, "{home:?}");

    let ignored = log("member-ignored");
    let ds = decisions(&ignored);
    assert!(
        ds.iter().any(|d| d["reports"]["helper"].is_null()
            && d["outOfSync"].as_array().is_some_and(Vec::is_empty)),
        "stale"
    );
    assert!(
        ds.iter()
            .any(|d| d["outOfSync"] == serde_json::json!(["helper"])
                && d["reports"]["helper"].is_null()),
        "out of sync"
    );

    let local = decisions(&log("local-first"))[0]["time"].clone();
    let static_first = decisions(&log("static-first"))[0]["time"].clone();
    assert_eq!(local, "2026-12-01T12:03:00Z", "LocalFirst waits `after`");
    assert_eq!(
        static_first, "2026-12-01T12:01:30Z",
        "StaticFirst lends static room after earlyAfter"
    );

    for d in decisions(&log("over-slo")) {
        let before = d["before"]["slow"]["weight"].as_u64().unwrap_or(0);
        let after = d["after"]["slow"]["weight"].as_u64().unwrap_or(0);
        assert!(after <= before, "slow is over its SLO and never gains: {d}");
    }
}

fn jq(filter: &str, input: &str) -> (bool, String, String) {
    let mut child = Command::new("jq")
        .args(["-c", filter])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("jq is installed (.ci/run installs it)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write to jq");
    let out = child.wait_with_output().expect("jq runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_two_jq_queries_of_the_operations_guide_run_unchanged_on_the_log() {
    let text = log_text("shortage-story");
    let finals = jq(
        r#"select(.kind=="outcome" and .final) | {decisionId, readyAfterSeconds, pressure: (.clusters | map_values(.pressure))}"#,
        &text,
    );
    assert!(finals.0, "{}", finals.2);
    let rows: Vec<Value> = finals
        .1
        .lines()
        .map(|l| serde_json::from_str(l).expect("jq prints JSON"))
        .collect();
    let expected = log("shortage-story")
        .iter()
        .filter(|l| l["kind"] == "outcome" && l["final"] == true)
        .count();
    assert_eq!(rows.len(), expected);
    assert!(rows.iter().all(|r| {
        r["pressure"]
            .as_object()
            .is_some_and(|p| p.contains_key("home"))
    }));
    assert_eq!(rows[0]["readyAfterSeconds"]["helper"], 120);
    let model = jq(
        r#"select(.kind=="decision" and .model.shadow and .model.accepted)
  | {decisionId, rules: .message, model: (.model.probabilities | to_entries | max_by(.value) | .key)}"#,
        &text,
    );
    assert!(model.0, "{}", model.2);
    assert_eq!(
        model.1, "",
        "this build has no model: no decision carries one"
    );
}

fn fleet_with(fleet_json: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "plumb-fleet-{}-{}",
        std::process::id(),
        fleet_json.len()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::copy(
        repo().join("fixtures/plumb/fleets/shortage-story/policy.json"),
        dir.join("policy.json"),
    )
    .expect("policy");
    std::fs::write(dir.join("fleet.json"), fleet_json).expect("fleet.json");
    dir
}

fn refused(fleet_json: &str) -> String {
    let dir = fleet_with(fleet_json);
    let (code, stdout, stderr) = plumb(&["replay", dir.to_str().expect("utf-8 path")]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 2, "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr.trim().to_owned()
}

#[test]
fn bad_fleet_input_exits_2_naming_the_file_and_field() {
    let e = refused(
        r#"{"steps": [{"time": "2026-12-01T12:00:00Z", "reports": {"home": {"readyReplicas": -1}}}]}"#,
    );
    assert!(
        e.contains("fleet.json: steps[0].reports.home.readyReplicas:"),
        "{e}"
    );
    let e = refused(r#"{"steps": [{"time": "2026-12-01T12:00:00Z", "reports": {"nowhere": {}}}]}"#);
    assert!(
        e.contains(
            "fleet.json: steps[0].reports: nowhere is not a member of the policy (home, helper)"
        ),
        "{e}"
    );
    let e = refused(
        r#"{"steps": [{"time": "2026-12-01T12:01:00Z"}, {"time": "2026-12-01T12:00:00Z"}]}"#,
    );
    assert!(
        e.contains(
            "fleet.json: steps[1].time: 2026-12-01T12:00:00Z is not after the previous step"
        ),
        "{e}"
    );
    let many: Vec<String> = (0..11)
        .map(|h| {
            format!(
                r#"{{"time": "2026-12-{:02}T00:00:00Z", "repeat": 1000}}"#,
                h + 1
            )
        })
        .collect();
    let e = refused(&format!(r#"{{"steps": [{}]}}"#, many.join(", ")));
    assert!(
        e.contains("fleet.json: steps: 11000 hub steps, at most 10000 in one timeline"),
        "{e}"
    );
    let e = refused(r#"{"steps": [{"time": "noon"}]}"#);
    assert!(e.contains("fleet.json: steps[0].time:"), "{e}");
    let e = refused(r#"{"steps": [{"time": "2026-12-01T12:00:00Z", "sleep": 1}]}"#);
    assert!(
        e.contains("fleet.json: steps[0].sleep: unknown field `sleep`"),
        "{e}"
    );
    let e =
        refused(r#"{"steps": [{"time": "2026-12-01T12:00:00Z", "members": {"home": "../x"}}]}"#);
    assert!(e.contains("steps[0].members.home"), "{e}");
}

#[test]
fn member_flags_are_refused_on_a_fleet_folder_and_required_on_a_member_folder() {
    let (code, _, e) = plumb(&[
        "replay",
        "fixtures/plumb/fleets/no-room",
        "--cluster",
        "home",
    ]);
    assert_eq!(code, 2);
    assert!(e.contains("--cluster: not for a fleet folder"), "{e}");
    let (code, _, e) = plumb(&["replay", "fixtures/plumb/default"]);
    assert_eq!(code, 2);
    assert!(
        e.contains("--cluster: required for a recorded member"),
        "{e}"
    );
}
