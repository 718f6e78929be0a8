//! Scenario 19 (CLI part): flags, `--print-profile` (golden, stability), exit codes, and one
//! request/result exchange over stdin/stdout, run with an empty environment.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_alfred-simulator");

const DEFAULT_YAML: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
";

/// Writes a configuration file under Cargo's scratch folder for integration tests (inside
/// `target/`, so runs leave nothing behind in the system's temporary folder); one folder per
/// test process (each test writes files of its own names).
fn write_config(name: &str, text: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("alfred-simulator-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write config");
    path
}

fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

fn profile_line(backend: &str, path: &Path) -> String {
    let out = run(
        &[
            &format!("--backend={backend}"),
            &format!("--scheduler-config={}", path.display()),
            "--print-profile",
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

fn redact(line: &str) -> String {
    let start = line.find("sha256:").expect("id") + "sha256:".len();
    let id = &line[start..start + 64];
    assert!(
        id.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{id}"
    );
    format!("{}<id>{}", &line[..start], &line[start + 64..])
}

#[test]
fn print_profile_matches_the_golden_shape() {
    let d = write_config("default-scheduler.yaml", DEFAULT_YAML);
    let o = write_config("ome-scheduler.yaml", alfred_sim::config::OME_SCHEDULER_YAML);
    let got = format!(
        "{}{}",
        redact(&profile_line("kube-v135", &d)),
        redact(&profile_line("ome-v135", &o))
    );
    assert_eq!(got, include_str!("golden/print-profile.redacted.txt"));
}

#[test]
fn identity_is_stable_and_follows_the_configuration() {
    let a = write_config("a.yaml", DEFAULT_YAML);
    let b = write_config("b.yaml", DEFAULT_YAML);
    let first = profile_line("kube-v135", &a);
    assert_eq!(
        first,
        profile_line("kube-v135", &a),
        "same file, same build"
    );
    assert_eq!(
        first,
        profile_line("kube-v135", &b),
        "the path is not part of the identity"
    );
    let edited = write_config(
        "c.yaml",
        &DEFAULT_YAML.replace("profiles:", "parallelism: 17\nprofiles:"),
    );
    assert_ne!(redact(&first), "");
    assert_ne!(first, profile_line("kube-v135", &edited));
    // Separate-argument flag form.
    let out = run(
        &[
            "--backend",
            "kube-v135",
            "--scheduler-config",
            a.to_str().expect("path"),
            "--print-profile",
        ],
        b"",
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), first);
}

#[test]
fn flag_errors_exit_2() {
    let d = write_config("flags.yaml", DEFAULT_YAML);
    let cfg = format!("--scheduler-config={}", d.display());
    for args in [
        vec!["--backend= kube", cfg.as_str(), "--print-profile"],
        vec!["--backend=", cfg.as_str(), "--print-profile"],
        vec![
            "--backend=b",
            cfg.as_str(),
            "--timeout=61s",
            "--print-profile",
        ],
        vec![
            "--backend=b",
            cfg.as_str(),
            "--timeout=0s",
            "--print-profile",
        ],
        vec!["--backend=b", cfg.as_str(), "positional"],
        vec![cfg.as_str(), "--print-profile"],
    ] {
        let out = run(&args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).starts_with("alfred-simulator: "),
            "{args:?}"
        );
    }
    for ok in ["1m0s", "799.999ms", "1.5s", "8s"] {
        let out = run(
            &[
                "--backend=b",
                cfg.as_str(),
                &format!("--timeout={ok}"),
                "--print-profile",
            ],
            b"",
        );
        assert!(out.status.success(), "{ok}");
    }
}

#[test]
fn configuration_errors_exit_1_with_one_line() {
    let cases = [
        (
            "extenders.yaml",
            DEFAULT_YAML.replace(
                "profiles:",
                "extenders:\n  - urlPrefix: http://x\nprofiles:",
            ),
            "extenders",
        ),
        (
            "unknown.yaml",
            DEFAULT_YAML.replace("profiles:", "bogusField: 1\nprofiles:"),
            "bogusField",
        ),
        (
            "kubeconfig.yaml",
            DEFAULT_YAML.replace(
                "profiles:",
                "clientConnection:\n  kubeconfig: /k\nprofiles:",
            ),
            "kubeconfig",
        ),
        (
            "two.yaml",
            format!("{DEFAULT_YAML}  - schedulerName: other\n"),
            "exactly one profile",
        ),
    ];
    for (name, text, needle) in cases {
        let path = write_config(name, &text);
        let out = run(
            &[
                "--backend=b",
                &format!("--scheduler-config={}", path.display()),
                "--print-profile",
            ],
            b"",
        );
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("alfred-simulator: ") && err.contains(needle),
            "{name}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    let out = run(
        &[
            "--backend=b",
            "--scheduler-config=/nonexistent/x.yaml",
            "--print-profile",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn one_request_one_result() {
    let d = write_config("eval.yaml", DEFAULT_YAML);
    let cfg = format!("--scheduler-config={}", d.display());
    let line = profile_line("kube-v135", &d);
    let printed: serde_json::Value = serde_json::from_str(&line).expect("profile");
    let node = |name: &str| {
        serde_json::json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "8"}}})
    };
    let pod = |name: &str, node: Option<&str>| {
        let mut p = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": "prod", "name": name, "uid": format!("u-{name}")},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}});
        if let Some(n) = node {
            p["spec"]["nodeName"] = serde_json::json!(n);
        }
        p
    };
    let req = serde_json::json!({
        "schemaVersion": "v1", "requestID": "r1", "snapshotID": "s1",
        "snapshotTime": "2026-11-29T08:00:00Z", "profile": printed["identity"],
        "replacementPods": [pod("new", None)], "sourcePods": [pod("old", Some("a"))],
        "clusterObjects": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}},
                           node("a"), node("b"), pod("old", Some("a"))],
        "excludedNodes": ["a"]
    });
    let out = run(&["--backend=kube-v135", &cfg], req.to_string().as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert!(text.ends_with('\n') && text.trim_end().lines().count() == 1);
    let res: serde_json::Value = serde_json::from_str(&text).expect("result");
    assert_eq!(res["decision"], "Feasible");
    assert_eq!(res["placements"][0]["nodeName"], "b");

    // The source node is excluded and full: nothing else fits → Infeasible, still exit 0.
    let mut full = req.clone();
    full["clusterObjects"]
        .as_array_mut()
        .expect("array")
        .push(pod("blocker", Some("b")));
    let out = run(&["--backend=kube-v135", &cfg], full.to_string().as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let res: serde_json::Value = serde_json::from_slice(&out.stdout).expect("result");
    assert_eq!(
        (res["decision"].as_str(), res["reason"].as_str()),
        (Some("Infeasible"), Some("NoFeasiblePlacement"))
    );

    for bad in [&b"not json"[..], b"", b"[]", b"{\"schemaVersion\":\"v1\"}"] {
        let out = run(&["--backend=kube-v135", &cfg], bad);
        assert_eq!(out.status.code(), Some(1));
        assert!(out.stdout.is_empty());
    }
    // A request for another identity is refused.
    let mut other = req;
    other["profile"]["backend"] = serde_json::json!("other");
    let out = run(&["--backend=kube-v135", &cfg], other.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(1));
}
