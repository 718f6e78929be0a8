//! The `plumb` command line: exit codes, and bad input reported in one line that names the
//! file and the field (never a panic), for `policy check`, `replay`, `scaler` and `version`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// A fresh folder holding a copy of `fixtures/plumb/default` with `file` replaced by `text`.
fn member_with(file: &str, text: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "plumb-cli-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let source = repo().join("fixtures/plumb/default");
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    std::fs::write(dir.join(file), text).unwrap();
    dir
}

/// One line on standard error, nothing on standard output, exit 2.
fn one_error_line(result: (i32, String, String)) -> String {
    let (code, stdout, stderr) = result;
    assert_eq!(code, 2, "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr.trim_end().to_owned()
}

fn replay(dir: &Path) -> (i32, String, String) {
    plumb(&[
        "replay",
        dir.to_str().unwrap(),
        "--cluster",
        "us-east",
        "--now",
        "2026-12-01T12:00:00Z",
    ])
}

#[test]
fn a_valid_policy_checks_ok() {
    for file in ["llama-70b.yaml", "minimal.json"] {
        let path = format!("fixtures/plumb/policies/{file}");
        let (code, stdout, stderr) = plumb(&["policy", "check", &path]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(stdout, format!("{path}: ok\n"));
        assert!(stderr.is_empty(), "{stderr}");
    }
}

#[test]
fn experimental_fields_are_accepted_with_a_notice_each() {
    let (code, stdout, _) = plumb(&[
        "policy",
        "check",
        "fixtures/plumb/policies/experimental.yaml",
    ]);
    assert_eq!(code, 0);
    for field in [
        "spec.signals.metrics",
        "spec.confidenceThresholdPercent",
        "spec.experimental.adaptive",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.contains(&format!("notice: {field}: ")) && l.contains("ignored")),
            "{field}: {stdout}"
        );
    }
}

#[test]
fn every_problem_is_one_line_naming_the_file_and_field() {
    let path = "fixtures/plumb/policies/invalid.yaml";
    let (code, stdout, stderr) = plumb(&["policy", "check", path]);
    assert_eq!(code, 2);
    assert!(stdout.is_empty(), "{stdout}");
    let lines: Vec<&str> = stderr.lines().collect();
    for field in [
        "spec.clusters[0].weight",
        "spec.clusters[1].name",
        "spec.clusters[1].maxReplicas",
        "spec.capacity.step",
        "spec.escalation.after",
        "spec.escalation.cooldown",
        "spec.clusters[1].backend",
        "spec.traffic.routes[0].cluster",
        "spec.traffic.stepPercent",
    ] {
        let prefix = format!("{path}: {field}: ");
        assert!(
            lines.iter().any(|l| l.starts_with(&prefix)),
            "no line for {field}: {stderr}"
        );
    }
    assert_eq!(lines.len(), 9, "{stderr}");
}

#[test]
fn an_unknown_field_a_syntax_error_and_a_missing_file_exit_2_in_one_line() {
    let line = one_error_line(plumb(&[
        "policy",
        "check",
        "fixtures/plumb/policies/unknown-field.yaml",
    ]));
    assert!(
        line.starts_with("fixtures/plumb/policies/unknown-field.yaml: spec.clusters[1]"),
        "{line}"
    );
    assert!(line.contains("maxReplica"), "{line}");
    let line = one_error_line(plumb(&[
        "policy",
        "check",
        "fixtures/plumb/policies/broken.json",
    ]));
    assert!(
        line.starts_with("fixtures/plumb/policies/broken.json: "),
        "{line}"
    );
    assert!(line.contains("line 3 column"), "{line}");
    let line = one_error_line(plumb(&[
        "policy",
        "check",
        "fixtures/plumb/policies/nope.yaml",
    ]));
    assert!(
        line.starts_with("fixtures/plumb/policies/nope.yaml: cannot read"),
        "{line}"
    );
}

#[test]
fn print_effective_fills_in_the_defaults() {
    let (code, stdout, stderr) = plumb(&[
        "policy",
        "check",
        "fixtures/plumb/policies/minimal.json",
        "--print-effective",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let back = plumb_model::AdaptivePolicy::from_yaml(&stdout).expect("the output reads back");
    assert_eq!(back.spec.mode, Some(plumb_model::spec::Mode::Shadow));
    assert_eq!(back.spec.capacity.as_ref().and_then(|c| c.step), Some(2));
    let escalation = back.spec.escalation.clone().expect("escalation filled in");
    assert_eq!(
        escalation.after.map(|d| d.nanos().unwrap()),
        Some(120_000_000_000)
    );
    assert!(back.spec.check().is_valid());
}

#[test]
fn replay_of_a_missing_folder_or_a_folder_without_objects_exits_2() {
    let line = one_error_line(replay(Path::new("fixtures/plumb/nope")));
    assert!(
        line.starts_with("fixtures/plumb/nope: cannot read the folder"),
        "{line}"
    );
    let empty = member_with("notes.txt", "no objects here");
    for entry in std::fs::read_dir(&empty).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let line = one_error_line(replay(&empty));
    assert!(
        line.ends_with(": holds no *.json file of Kubernetes objects"),
        "{line}"
    );
}

#[test]
fn replay_names_the_file_object_and_field_of_a_bad_object() {
    let dir = member_with(
        "workload.json",
        r#"{"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "llama-70b", "namespace": "serving"},
             "spec": {"replicas": "six"}}]}"#,
    );
    let line = one_error_line(replay(&dir));
    let file = dir.join("workload.json");
    assert!(
        line.starts_with(&format!(
            "{}: items[0] (Deployment serving/llama-70b): spec.replicas: ",
            file.display()
        )),
        "{line}"
    );
    let dir = member_with("capacity.json", "{\"kind\": \"List\", \"items\": [\n  {");
    let line = one_error_line(replay(&dir));
    assert!(line.contains("capacity.json: not JSON: "), "{line}");
    assert!(line.contains("line 2"), "{line}");
}

#[test]
fn replay_names_the_signal_and_field_of_a_bad_answer() {
    let dir = member_with(
        "signals.json",
        r#"{"demand": {"status": "success", "data": {"resultType": "vector",
            "result": [{"metric": {}, "value": [1764590395, "lots"]}]}}}"#,
    );
    let line = one_error_line(replay(&dir));
    assert!(
        line.ends_with("signals.json: demand.data.result[0].value[1]: \"lots\" is not a number"),
        "{line}"
    );
}

#[test]
fn replay_names_the_field_of_a_policy_it_cannot_use() {
    let text = std::fs::read_to_string(repo().join("fixtures/plumb/default/workload.json"))
        .unwrap()
        .replacen(
            "\"maxReplicas\": 12",
            "\"maxReplicas\": 12, \"weight\": 120",
            1,
        );
    let dir = member_with("workload.json", &text);
    let line = one_error_line(replay(&dir));
    assert!(
        line.contains(
            "workload.json: items[0] (AdaptivePolicy serving/llama-70b): spec.clusters[0]"
        ),
        "{line}"
    );
}

#[test]
fn replay_needs_policy_when_the_folder_holds_several() {
    let line = one_error_line(replay(&repo().join("fixtures/plumb/promised-elsewhere")));
    assert!(line.contains("holds 2 AdaptivePolicies"), "{line}");
    assert!(line.contains("--policy"), "{line}");
}

#[test]
fn replay_refuses_a_bad_time() {
    let line = one_error_line(plumb(&[
        "replay",
        "fixtures/plumb/default",
        "--cluster",
        "us-east",
        "--now",
        "yesterday",
    ]));
    assert!(line.starts_with("--now: "), "{line}");
}

#[test]
fn version_prints_the_version() {
    let (code, stdout, _) = plumb(&["version"]);
    assert_eq!(code, 0);
    assert_eq!(stdout, format!("plumb {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn plumb_scaler_refuses_bad_flags_and_unreadable_tls_files_in_one_line() {
    let (code, _, stderr) = plumb(&["scaler", "--grpc-bind-address", "port-6000"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("\"port-6000\" is not an address (HOST:PORT or :PORT)"),
        "{stderr}"
    );
    let (code, _, stderr) = plumb(&["scaler", "--tls-cert-file", "cert.pem"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--tls-key-file"), "{stderr}");
    let (code, stdout, stderr) = plumb(&[
        "scaler",
        "--tls-cert-file",
        "/nonexistent/tls.crt",
        "--tls-key-file",
        "/nonexistent/tls.key",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(stdout, "");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("plumb scaler: --tls-cert-file /nonexistent/tls.crt: "),
        "{stderr}"
    );
}
