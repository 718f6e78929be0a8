//! `alfred-simulator`: one scheduler-simulation worker
//! (docs/design-simulation.md#worker-command-line, docs/design-simulation.md#request-and-result).
//!
//! `--print-profile` prints the worker's identity; otherwise one JSON request is read from
//! stdin and one JSON result written to stdout. Exit codes: 2 flag errors, 1 configuration,
//! request or internal errors (one line on stderr, prefixed `alfred-simulator: `), 0 after a
//! profile or a result (an `Unsupported` result included).

use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use alfred_sim::identity::BuildInfo;
use alfred_sim::wire::{MAX_REQUEST_BYTES, decode_request_cluster, evaluate_with_cluster};
use alfred_sim::workers::{MAX_FILE_BYTES, parse_timeout};
use alfred_sim::{Profile, encode_result, load_config, printed_profile};
use clap::Parser;

/// Scheduler-simulation worker for Alfred: a model of kube-scheduler v1.35.4 and OMEGangPack.
#[derive(Debug, Parser)]
#[command(name = "alfred-simulator", version)]
struct Cli {
    /// Operator-chosen backend name; becomes `identity.backend` verbatim.
    #[arg(long)]
    backend: String,
    /// Path to one KubeSchedulerConfiguration file (YAML 1.2 or JSON).
    #[arg(long = "scheduler-config")]
    scheduler_config: String,
    /// Evaluation deadline, Go duration syntax, positive and at most 60s.
    #[arg(long, default_value = "10s")]
    timeout: String,
    /// Print the profile and exit without reading stdin.
    #[arg(long = "print-profile")]
    print_profile: bool,
}

fn fail(code: u8, msg: impl std::fmt::Display) -> ExitCode {
    let line = msg.to_string().replace('\n', " ");
    let _ = writeln!(std::io::stderr(), "alfred-simulator: {line}");
    ExitCode::from(code)
}

fn build_info() -> Result<BuildInfo, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate own executable: {e}"))?;
    let bytes = std::fs::read(&exe).map_err(|e| format!("cannot read own executable: {e}"))?;
    Ok(BuildInfo {
        package: env!("CARGO_PKG_NAME").to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        source_revision: option_env!("ALFRED_SOURCE_REVISION")
            .unwrap_or("")
            .to_string(),
        executable_sha256: alfred_sim::sha256_hex(&bytes),
    })
}

fn read_config(path: &str) -> Result<Profile, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("cannot read scheduler config {path}: {e}"))?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read scheduler config {path}: {e}"))?;
    if text.len() > MAX_FILE_BYTES {
        return Err(format!("scheduler config {path} is larger than 1 MiB"));
    }
    load_config(&text).map_err(|e| format!("{path}: {e}"))
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            let msg = e.to_string();
            return fail(2, msg.lines().next().unwrap_or("invalid flags"));
        }
    };
    if cli.backend.is_empty() || cli.backend.trim() != cli.backend {
        return fail(
            2,
            format!(
                "invalid --backend {:?}: must be non-empty and unpadded",
                cli.backend
            ),
        );
    }
    if cli.scheduler_config.is_empty() {
        return fail(2, "--scheduler-config must not be empty");
    }
    let timeout_ns = match parse_timeout(&cli.timeout) {
        Ok(t) => t,
        Err(e) => return fail(2, e),
    };
    let started = Instant::now();
    let deadline = started + Duration::from_nanos(timeout_ns);
    let profile = match read_config(&cli.scheduler_config) {
        Ok(p) => p,
        Err(e) => return fail(1, e),
    };
    let build = match build_info() {
        Ok(b) => b,
        Err(e) => return fail(1, e),
    };
    let printed = printed_profile(&profile, &cli.backend, &build);
    if cli.print_profile {
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{}", printed.to_line())
            .and_then(|()| out.flush())
            .is_err()
        {
            return fail(1, "cannot write profile");
        }
        return ExitCode::SUCCESS;
    }
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin()
        .lock()
        .take(MAX_REQUEST_BYTES as u64 + 1)
        .read_to_end(&mut input)
    {
        return fail(1, format!("cannot read request: {e}"));
    }
    let (request, cluster) = match decode_request_cluster(&input) {
        Ok(r) => r,
        Err(e) => return fail(1, e),
    };
    let mut expired = || Instant::now() >= deadline;
    let evaluation = match evaluate_with_cluster(
        &profile,
        &printed.identity,
        &request,
        &cluster,
        &mut expired,
    ) {
        Ok(e) => e,
        Err(e) => return fail(1, e),
    };
    if let Some(d) = evaluation.diagnostic() {
        let _ = writeln!(std::io::stderr(), "alfred-simulator: {d}");
    }
    // The process exits right after writing: skip freeing the decoded snapshot.
    std::mem::forget(cluster);
    std::mem::forget(request);
    let mut out = std::io::stdout().lock();
    if out
        .write_all(encode_result(&evaluation.result).as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        return fail(1, "cannot write result");
    }
    ExitCode::SUCCESS
}
