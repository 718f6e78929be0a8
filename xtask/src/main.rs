//! alfred's automation, run as `cargo xtask <task>` (the alias lives in `.cargo/config.toml`).
//!
//! See <https://github.com/matklad/cargo-xtask/>: tasks are plain Rust, built with nothing but
//! cargo. Only `std`, `anyhow` and `serde_json` are used, to keep this crate quick to compile.
//!
//! - `ci [STEP...]`: runs `.ci/run` (the one definition of CI; with steps, only those steps).
//! - `test`: the README's test command (`.ci/run test`: nextest, then the doctests).
//! - `tidy`: the repository rules of `tidy.rs`, also run as a test by the normal test command.
//! - `apiserver build|start|stop|status`: a real kube-apiserver v1.20.2 for integration tests.
//! - `bench-smoke`: every benchmark once, as a test (criterion's test mode).
//! - `fuzz [TARGET...] [--seconds N]`, `fuzz --list`: the libFuzzer targets of `fuzz/` (`fuzz.rs`).
//! - `chaos [--runs N] [--seed S] [--passes P] [--release]`: the randomized fault campaign
//!   (`adapters/alfred-chaos`).
//! - `chaos-plumb [--runs N] [--seed S] [--minutes M] [--release]`: Plumb's fault campaign
//!   (`adapters/plumb-chaos`).
//! - `replay-dump [--nodes N] [--pods M] [--yaml] OUT`: a large synthetic List for measuring
//!   `alfred replay` (`dump.rs`).
//! - `proto [--check]`: the plumb scaler's generated gRPC code from its `.proto` (`proto.rs`).
//! - `plumb-live [NEXTEST ARGS...]`: Plumb's live fleet tests against three private API
//!   servers (`plumb_live.rs`).
//! - `plumb-fleet [--minutes N] [--mode auto|shadow]`: a three-member Plumb fleet to watch
//!   (`adapters/plumb-fleet-emulator`'s `plumb-fleet`, with `plumb` built first).
//! - `image [--tag NAME:TAG] [--engine E] [--check]`: the container image of the `Containerfile`,
//!   built from this machine's release binaries without pulling a base (`image.rs`).

mod apiserver;
mod dump;
mod fuzz;
mod image;
mod plumb_live;
mod proto;
mod tidy;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;

const USAGE: &str = "\
usage: cargo xtask <task>

tasks:
  ci [STEP...]        run .ci/run (all steps, or only the named ones; `cargo xtask ci --list`)
  test                the README's test command: nextest + doctests (= `.ci/run test`)
  tidy                check repository rules (dependency boundaries, banned calls, module docs, ...)
  apiserver build     build kube-apiserver v1.20.2 + etcd from Debian packages into the cache
  apiserver start     (build if needed and) start etcd + kube-apiserver on loopback, write kubeconfigs
  apiserver stop      stop them
  apiserver status    print whether they run and where the kubeconfigs are
  bench-smoke         run every benchmark once (criterion test mode)
  fuzz [TARGET...] [--seconds N] [--minimize]
                      build the libFuzzer targets of fuzz/ (stable toolchain) and run each for N s
                      (default 20); fails on a crash; `fuzz --list` names the targets
  chaos [--runs N] [--seed S] [--passes P] [--release] [--verbose]
                      randomized fault campaign of the decision loop (adapters/alfred-chaos);
                      a failing run prints its seed: `--seed S --runs 1` reproduces it
  chaos-plumb [--runs N] [--seed S] [--minutes M] [--release] [--verbose]
                      fault campaign of Plumb's quorum, hub step and fencing over an emulated
                      fleet (adapters/plumb-chaos); last line `N runs, ... 0 violations`
  replay-dump [--nodes N] [--pods M] [--yaml] OUT
                      write a synthetic List (default 100,000 nodes, 1,000,000 pods) for
                      measuring alfred replay's memory; never committed
  image [--tag NAME:TAG] [--engine podman|docker] [--check]
                      build the container image (Containerfile) from this machine's release
                      binaries, nothing pulled (default tag localhost/alfred:<version>);
                      --check runs `alfred replay` inside it and compares with the host's
  proto [--check]     regenerate plumb scaler's gRPC code from its .proto (or check it is current)
  plumb-live [NEXTEST ARGS...]
                      Plumb's live fleet tests: three private API servers (17443, 17453, 17463;
                      target/plumb-live/), the live_fleet* tests of plumb-kube, servers stopped
  plumb-fleet [--minutes N] [--mode auto|shadow]
                      a three-member Plumb fleet on this machine (API servers, agents, scalers,
                      emulators, a load that peaks); prints decisions as they happen; Ctrl-C stops
  bench-live          alfred run's cold start and peak RSS at 5,000 nodes / 25,000 pods against a
                      private API server (adapters/alfred-kube/BENCH-LIVE.md); on demand only
";

fn main() {
    // Print the error chain without a backtrace, whatever RUST_BACKTRACE says.
    if let Err(e) = main_inner() {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn main_inner() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((task, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        std::process::exit(2);
    };
    match task.as_str() {
        "ci" => ci_script(rest),
        "test" => ci_script(&["test".to_owned()]),
        "tidy" => tidy::run_all(&workspace_root()),
        "apiserver" => apiserver::main(rest),
        "bench-smoke" => bench_smoke(),
        "bench-live" => bench_live(rest),
        "fuzz" => fuzz::main(rest),
        "chaos" => chaos(rest),
        "chaos-plumb" => chaos_plumb(rest),
        "replay-dump" => dump::main(rest),
        "image" => image::main(rest),
        "proto" => proto::main(rest),
        "plumb-live" => plumb_live::main(rest),
        "plumb-fleet" => plumb_fleet(rest),
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            Ok(())
        }
        other => {
            eprint!("unknown task `{other}`\n\n{USAGE}");
            std::process::exit(2);
        }
    }
}

/// The workspace root: xtask lives at `<root>/xtask`.
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask has a parent directory")
        .to_path_buf()
}

/// `cargo xtask ci` is `.ci/run`: CI has exactly one definition, so the two cannot drift.
fn ci_script(steps: &[String]) -> Result<()> {
    let root = workspace_root();
    run(Command::new("bash")
        .arg(root.join(".ci/run"))
        .args(steps)
        .current_dir(&root))
}

fn bench_smoke() -> Result<()> {
    // Without `--bench`, criterion runs each benchmark exactly once and checks it does not panic.
    run(Command::new(cargo())
        .args(["test", "--workspace", "--benches", "--locked"])
        .current_dir(workspace_root()))
}

pub(crate) fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

/// Running commands: the shared test API server crate's helpers (one echo and error format).
pub(crate) use kube_test_apiserver::{output, run};

/// `cargo xtask chaos`: builds and runs `alfred-chaos` with the given arguments (`--release`
/// builds it optimized, for long campaigns; CI runs a short one in the test profile it
/// already built).
fn chaos(rest: &[String]) -> Result<()> {
    let release = rest.iter().any(|a| a == "--release");
    let mut cmd = Command::new(cargo());
    cmd.args(["run", "--locked", "-q", "-p", "alfred-chaos"]);
    if release {
        cmd.arg("--release");
    }
    cmd.arg("--")
        .args(rest.iter().filter(|a| *a != "--release"))
        .current_dir(workspace_root());
    run(&mut cmd)
}

/// `cargo xtask chaos-plumb`: builds and runs `plumb-chaos` with the given arguments
/// (`--release` for long campaigns), as `chaos` does for alfred.
fn chaos_plumb(rest: &[String]) -> Result<()> {
    let release = rest.iter().any(|a| a == "--release");
    let mut cmd = Command::new(cargo());
    cmd.args(["run", "--locked", "-q", "-p", "plumb-chaos"]);
    if release {
        cmd.arg("--release");
    }
    cmd.arg("--")
        .args(rest.iter().filter(|a| *a != "--release"))
        .current_dir(workspace_root());
    run(&mut cmd)
}

/// `cargo xtask plumb-fleet [ARGS...]`: builds `plumb`, then runs `plumb-fleet` (its servers,
/// processes and state under `target/plumb-fleet/`) with the given arguments; the binary is
/// found where cargo put it (`CARGO_TARGET_DIR`, else `target/`).
fn plumb_fleet(rest: &[String]) -> Result<()> {
    let root = workspace_root();
    run(Command::new(cargo())
        .args([
            "build",
            "--locked",
            "-q",
            "-p",
            "plumb-kube",
            "--bin",
            "plumb",
        ])
        .current_dir(&root))?;
    let plumb = image::target_dir(&root).join("debug/plumb");
    run(Command::new(cargo())
        .args([
            "run",
            "--locked",
            "-q",
            "-p",
            "plumb-fleet-emulator",
            "--bin",
            "plumb-fleet",
        ])
        .arg("--")
        .arg("--plumb")
        .arg(&plumb)
        .arg("--dir")
        .arg(root.join("target/plumb-fleet"))
        .args(rest)
        .current_dir(&root))
}

/// `cargo xtask bench-live [--nodes N] [--pods-per-node K] [--concurrency C]`: a private API
/// server (`apiserver start --dir <tmp>/alfred-bench-live --port 18443`), `alfred` built in
/// release, then `adapters/alfred-kube/bench/bench_live.py` (load, list floor, cold start, peak
/// RSS); the server is stopped afterwards. Not a test: run on demand.
fn bench_live(rest: &[String]) -> Result<()> {
    let root = workspace_root();
    let dir = std::env::temp_dir().join("alfred-bench-live");
    let server = |task: &str| {
        apiserver::main(&[
            task.to_owned(),
            "--dir".to_owned(),
            dir.display().to_string(),
            "--port".to_owned(),
            "18443".to_owned(),
        ])
    };
    server("start")?;
    let result = (|| {
        run(
            Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
                .args(["build", "--release", "-p", "alfred", "--bin", "alfred"])
                .current_dir(&root),
        )?;
        run(Command::new("python3")
            .arg(root.join("adapters/alfred-kube/bench/bench_live.py"))
            .arg("--root")
            .arg(&root)
            .arg("--admin")
            .arg(dir.join("admin.kubeconfig"))
            .arg("--alfred-kubeconfig")
            .arg(dir.join("alfred.kubeconfig"))
            .arg("--alfred")
            .arg(root.join("target/release/alfred"))
            .args(rest)
            .current_dir(&root))
    })();
    server("stop")?;
    result
}
