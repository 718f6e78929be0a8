//! Execute-mode safety seen through `alfred replay --format json` on the execute-mode
//! fixture, snapshotted with insta: a migration no workload reads blocks the request
//! (`InFlightCap`), and a `prepared` entry retried after its InferenceReplica's generation
//! or a source pod's annotations changed is `SourceChanged`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("alfred-replay-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One execute-mode pass over `inputs` at `now`, the durable state in `state`.
fn pass(inputs: &[&Path], state: &Path, now: &str) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_alfred"));
    cmd.arg("replay").args(inputs).args([
        "--config",
        "fixtures/configs/execute-mode.yaml",
        "--migration-api-version",
        "v1",
        "--simulate-in-process",
        "--now",
        now,
        "--format",
        "json",
        "--state",
    ]);
    let out = cmd
        .arg(state)
        .current_dir(repo())
        .output()
        .expect("run alfred");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("replay prints JSON")
}

fn requests(v: &Value) -> usize {
    v["effects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "requestMigration")
        .count()
}

fn alpha_row(v: &Value) -> &Value {
    v["record"]["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["workload"] == "chat/alpha")
        .expect("a row for chat/alpha")
}

const FIXTURE: &str = "fixtures/clusters/execute-move-pays.json";

#[test]
fn a_draining_replica_whose_inferenceservice_is_gone_blocks_the_request() {
    let d = dir("unattached");
    let extra = repo().join("adapters/alfred/tests/data/unattached-draining-replica.json");
    let out = pass(
        &[Path::new(FIXTURE), &extra],
        &d.join("state.json"),
        "2026-11-29T08:15:00Z",
    );
    assert_eq!(requests(&out), 0);
    assert_eq!(alpha_row(&out)["dispatchReason"], "InFlightCap");
    insta::assert_json_snapshot!(out);
}

/// The journal of a replay state file (the file holds it under `journal`, or is it).
fn entries(state: &mut Value) -> &mut Vec<Value> {
    let journal = if state.get("journal").is_some() {
        &mut state["journal"]
    } else {
        state
    };
    journal["entries"].as_array_mut().expect("journal entries")
}

/// The first pass submits chat/alpha's request; the state then says the request was never
/// written (the entry is back to `prepared`, the cluster carries no annotation), so the
/// second pass retries it against the cluster `change` makes of the fixture.
fn retry_after(name: &str, change: impl FnOnce(&mut Value)) -> Value {
    let d = dir(name);
    let state = d.join("state.json");
    let first = pass(&[Path::new(FIXTURE)], &state, "2026-11-29T08:15:00Z");
    assert_eq!(requests(&first), 1);
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    let e = &mut entries(&mut s)[0];
    e["phase"] = "prepared".into();
    e["reason"] = "SubmissionPrepared".into();
    std::fs::write(&state, serde_json::to_string(&s).unwrap()).unwrap();
    let mut cluster: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join(FIXTURE)).unwrap()).unwrap();
    change(&mut cluster);
    let file = d.join("cluster.json");
    std::fs::write(&file, serde_json::to_string(&cluster).unwrap()).unwrap();
    pass(&[&file], &state, "2026-11-29T08:16:00Z")
}

fn item<'a>(cluster: &'a mut Value, kind: &str, name: &str) -> &'a mut Value {
    cluster["items"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|i| i["kind"] == kind && i["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn alpha_pod(cluster: &mut Value) -> &mut Value {
    cluster["items"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|i| {
            i["kind"] == "Pod" && i["metadata"]["labels"]["ome.io/inferenceservice"] == "alpha"
        })
        .expect("chat/alpha's pod")
}

#[test]
fn a_prepared_entry_is_retried_only_while_its_source_is_unchanged() {
    let same = retry_after("retry-same", |_| {});
    assert_eq!(requests(&same), 1);
    assert_eq!(alpha_row(&same)["dispatchReason"], "RequestSubmitted");

    let generation = retry_after("retry-generation", |c| {
        let ir = item(c, "InferenceReplica", "alpha-engine");
        ir["metadata"]["generation"] = 2.into();
        ir["status"]["observedGeneration"] = 2.into();
        ir["spec"]["lifecycle"]["instanceReadyTimeout"] = "50m".into();
    });
    assert_eq!(requests(&generation), 0);
    assert_eq!(alpha_row(&generation)["dispatchReason"], "SourceChanged");
    insta::assert_json_snapshot!("retry_after_the_replica_generation_changed", generation);

    let annotation = retry_after("retry-annotation", |c| {
        let pod = alpha_pod(c);
        if pod["metadata"]["annotations"].is_null() {
            pod["metadata"]["annotations"] = serde_json::json!({});
        }
        pod["metadata"]["annotations"]["example.com/drain-after"] = "2026-11-30".into();
    });
    assert_eq!(requests(&annotation), 0);
    assert_eq!(alpha_row(&annotation)["dispatchReason"], "SourceChanged");
    insta::assert_json_snapshot!("retry_after_a_source_pod_annotation_changed", annotation);
}
