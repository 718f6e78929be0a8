//! `alfred run` startup exit errors (docs/design-runtime.md#startup): exit status 1 with the
//! documented messages. No API server needed: the client is built from a kubeconfig without
//! contacting it.

use std::process::Command;

fn kubeconfig() -> std::path::PathBuf {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("alfred-startup-{}.kubeconfig", std::process::id()));
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n\
         users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n\
         current-context: x\n",
    )
    .unwrap();
    path
}

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_alfred"))
        .arg("run")
        .arg("--kubeconfig")
        .arg(kubeconfig())
        .args([
            "--metrics-bind-address=127.0.0.1:0",
            "--health-probe-bind-address=127.0.0.1:0",
        ])
        .args(args)
        .output()
        .expect("run alfred");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn invalid_flags_exit_1_with_invalid_startup_configuration() {
    for (args, want) in [
        (
            vec!["--migration-api-version=v2"],
            "migration-api-version must be empty or v1",
        ),
        (
            vec!["--migration-ack-timeout=0s"],
            "migration-ack-timeout must be positive and at most 1h",
        ),
        (
            vec!["--migration-failure-backoff=2h"],
            "migration-failure-backoff must be positive and at most 1h",
        ),
        (
            vec!["--simulation-timeout=2m"],
            "simulation-timeout must be positive and at most 1m",
        ),
        (
            vec!["--migration-api-version=v1"],
            "migration-service-account must be a nonempty DNS1123 name",
        ),
        (
            vec![
                "--migration-api-version=v1",
                "--migration-service-account=ome-alfred",
                "--leader-elect=false",
            ],
            "migration dispatch requires leader election",
        ),
        (
            vec![
                "--migration-api-version=v1",
                "--migration-service-account=ome-alfred",
            ],
            "migration dispatch requires simulation-workers",
        ),
    ] {
        let (code, stderr) = run(&args);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains("invalid startup configuration"),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

#[test]
fn broken_simulation_workers_stop_alfred_at_startup() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("alfred-workers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let workers = dir.join("workers.json");
    std::fs::write(&workers, r#"{"workers": [], "extra": 1}"#).unwrap();
    let (code, stderr) = run(&[&format!("--simulation-workers={}", workers.display())]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("unable to configure recommendation simulation"),
        "{stderr}"
    );
    let (code, stderr) = run(&["--simulation-workers=/nonexistent/workers.json"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("unable to configure recommendation simulation"),
        "{stderr}"
    );
}

#[test]
fn help_lists_the_documented_flags() {
    let out = Command::new(env!("CARGO_BIN_EXE_alfred"))
        .args(["run", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--metrics-bind-address",
        "--health-probe-bind-address",
        "--leader-elect",
        "--namespace",
        "--config-name",
        "--config-key",
        "--simulation-workers",
        "--simulation-timeout",
        "--migration-api-version",
        "--migration-service-account",
        "--migration-ack-timeout",
        "--migration-failure-backoff",
    ] {
        assert!(help.contains(flag), "{flag} missing from\n{help}");
    }
}
