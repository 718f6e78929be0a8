//! `cargo xtask plumb-live [NEXTEST ARGS...]`: Plumb's live fleet tests against three real
//! member API servers (docs/plumb/agent.md#live-tests).
//!
//! Starts three private kube-apiserver + etcd instances (the shared `kube-test-apiserver`
//! recipe and its cached binaries, one per member: `us-east` on 17443, `us-west` on 17453,
//! `eu-west` on 17463, state under `target/plumb-live/<member>/`), writes the access-provider
//! file whose exec plugin (`fixtures/plumb/exec-plugin/token-from-csv.sh`) prints an
//! `ExecCredential` for a member's admin token, and runs the `live_fleet*` tests of plumb-kube
//! one at a time (they stop and restart members) with
//! `PLUMB_LIVE_MEMBERS=us-east=<dir>,us-west=<dir>,eu-west=<dir>` and
//! `PLUMB_LIVE_PROVIDER_FILE`. The tests install the CRDs, the namespace `plumb` and each
//! member's ClusterProfiles themselves, so one test's changes never leak into the next.
//! The servers' resident memory is printed after the tests, and the servers are stopped
//! whether the tests passed or not. `PLUMB_LIVE_PORT_OFFSET=<n>` adds `n` to every port (and
//! keeps the state under `target/plumb-live-<n>/`), so a second run can go on beside another.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};
use kube_test_apiserver::Profile;

use crate::{cargo, run, workspace_root};

/// The members' servers: the shared recipe's binaries (alfred's cache folder, so nothing is
/// built twice), kubeconfigs for Plumb's namespace.
const PLUMB_LIVE: Profile = Profile {
    cache_folder: "alfred-apiserver",
    env_prefix: "PLUMB_LIVE_APISERVER",
    namespace: "plumb",
    service_account: "plumb-agent",
    kubeconfig_name: "plumb-agent",
    cluster_name: "plumb-member",
};

/// The fleet: member names and their API server ports (etcd on the next two).
pub(crate) const MEMBERS: [(&str, u16); 3] =
    [("us-east", 17443), ("us-west", 17453), ("eu-west", 17463)];

/// Runs the task: servers up, tests, RSS, servers down.
pub(crate) fn main(rest: &[String]) -> Result<()> {
    let root = workspace_root();
    let offset = port_offset()?;
    let base = match offset {
        0 => root.join("target/plumb-live"),
        n => root.join(format!("target/plumb-live-{n}")),
    };
    let members = MEMBERS.map(|(name, port)| (name, port + offset));
    std::fs::create_dir_all(&base)?;
    let started = Instant::now();
    let result = (|| {
        for (name, port) in members {
            server("start", &base.join(name), port)?;
        }
        let providers = write_provider_file(&root, &base)?;
        let dirs = members
            .iter()
            .map(|(name, _)| format!("{name}={}", base.join(name).display()))
            .collect::<Vec<_>>()
            .join(",");
        let tests = run(Command::new(cargo())
            .args(["nextest", "run", "-p", "plumb-kube", "--locked"])
            .args(["--run-ignored", "only", "--test-threads", "1"])
            .args(["-E", "test(/^live_fleet/)"])
            .args(rest)
            .env("PLUMB_LIVE_MEMBERS", &dirs)
            .env("PLUMB_LIVE_PROVIDER_FILE", &providers)
            .current_dir(&root));
        print_rss(&base);
        tests
    })();
    for (name, port) in members {
        if let Err(e) = server("stop", &base.join(name), port) {
            eprintln!("plumb-live: stopping {name}: {e:#}");
        }
    }
    eprintln!(
        "plumb-live: {} in {:.0} s",
        if result.is_ok() { "passed" } else { "failed" },
        started.elapsed().as_secs_f64()
    );
    result
}

/// `PLUMB_LIVE_PORT_OFFSET` (0 when unset); one line naming the variable when it is not a
/// small number.
fn port_offset() -> Result<u16> {
    match std::env::var("PLUMB_LIVE_PORT_OFFSET") {
        Err(_) => Ok(0),
        Ok(v) => v
            .parse::<u16>()
            .ok()
            .filter(|n| *n <= 1000)
            .with_context(|| format!("PLUMB_LIVE_PORT_OFFSET={v:?}: not a number from 0 to 1000")),
    }
}

/// `apiserver <task> --dir DIR --port PORT` with Plumb's profile.
fn server(task: &str, dir: &Path, port: u16) -> Result<()> {
    kube_test_apiserver::main(
        &PLUMB_LIVE,
        &[
            task.to_owned(),
            "--dir".to_owned(),
            dir.display().to_string(),
            "--port".to_owned(),
            port.to_string(),
        ],
    )
}

/// The access-provider file: one provider, `plumb-live`, whose plugin reads the admin token
/// from the `tokens.csv` each ClusterProfile passes through KEP-5339's additional-args
/// extension.
fn write_provider_file(root: &Path, base: &Path) -> Result<PathBuf> {
    let plugin = root.join("fixtures/plumb/exec-plugin/token-from-csv.sh");
    let file = serde_json::json!({"providers": [{
        "name": "plumb-live",
        "execConfig": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": plugin.display().to_string(),
            "args": [],
            "provideClusterInfo": true,
        },
        "profileSourcedCLIArgsPolicy": "Append",
    }]});
    let path = base.join("providers.json");
    std::fs::write(&path, serde_json::to_string_pretty(&file)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Prints each member's kube-apiserver and etcd resident memory (VmRSS).
fn print_rss(base: &Path) {
    let mut total = 0;
    for (name, _) in MEMBERS {
        for process in ["kube-apiserver", "etcd"] {
            let kib = rss_kib(&base.join(name).join(format!("{process}.pid")));
            total += kib.unwrap_or(0);
            match kib {
                Some(kib) => eprintln!("plumb-live: {name} {process} RSS {} MiB", kib / 1024),
                None => eprintln!("plumb-live: {name} {process} not running"),
            }
        }
    }
    eprintln!("plumb-live: the three members' RSS {} MiB", total / 1024);
}

fn rss_kib(pid_file: &Path) -> Option<u64> {
    let pid = std::fs::read_to_string(pid_file).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid.trim())).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
