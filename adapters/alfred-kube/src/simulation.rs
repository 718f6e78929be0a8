//! Simulators for the pass: none, the in-process scheduler model, or worker processes
//! from `workers.json` (as `alfred run` runs them).
//!
//! # Worker processes (docs/design-simulation.md, docs/design-runtime.md#simulation-workers)
//!
//! [`WorkerPool::load`] reads `workers.json` strictly (alfred-sim's `parse_workers`: unknown
//! field, `null`, trailing data, more than 32 workers, relative paths, padded identity
//! fields, a repeated identity → an error naming it), checks that both paths are regular
//! files, the binary executable and the scheduler configuration at most 1 MiB, then probes
//! every worker, one at a time, with `--backend <b> --scheduler-config <path> --timeout
//! <simulation timeout> --print-profile` (empty environment, no stdin, stdout and stderr
//! capped at 64 KiB): the printed identity and `gangScheduling` must equal the entry's. The
//! whole probe has 30 s. Errors read `worker <i> …` / `probe worker <i>: …`; callers prefix
//! `unable to configure recommendation simulation: `.
//!
//! [`WorkerPool`] then answers [`Simulator::simulate`]: the worker whose identity equals the
//! move's profile exactly (no match, or a gang move for a worker without gang scheduling →
//! `Unavailable/WorkerFailed`), the request from [`alfred_dispatch::wire_request`] (≤ 16 MiB,
//! else `Unsupported/InputUnsupported`), one worker process at a time in the whole process,
//! no shell, an empty environment, the fixed arguments `--backend --scheduler-config
//! --timeout <80 % of the call's budget>`, the request on stdin, stdout capped at 16 MiB and
//! stderr at 64 KiB (exceeding either kills the worker → `WorkerFailed`). The call's budget
//! is min(`--simulation-timeout`, time left before the pass deadline set with
//! [`WorkerPool::set_deadline`]); past it the worker is killed (SIGKILL; its pipes get a 2 s
//! grace to close) → `SimulationBudgetExceeded` when the pass deadline was the bound, else
//! `WorkerFailed`. A non-zero exit → `WorkerFailed`; a result that fails re-validation →
//! `InvalidResponse`; otherwise the worker's decision.
//!
//! # From `alfred run`
//!
//! `run/workers.rs` probes asynchronously and returns the [`WorkersFile`]; the pass then
//! uses `WorkerPool::from_probed(file, options.simulation_timeout)`. The pool is a
//! synchronous [`Simulator`] (it blocks while a worker runs): the decider answers a pass's
//! simulation request on tokio's blocking pool, with a copy of the pool whose deadline
//! (`set_deadline(Some(pass start + 30 s))`) is set when the pass begins (`run/decision/pass.rs`).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use alfred_dispatch::unavailable;
use alfred_dispatch::{MoveSimulation, SimulationOutcome, Simulator};
use alfred_model::config::Config;
use alfred_model::reason::SchedulingReason;
use alfred_sim::Identity;
use alfred_sim::wire::{MAX_PROFILE_BYTES, MAX_REQUEST_BYTES, MAX_RESULT_BYTES, MAX_STDERR_BYTES};
use alfred_sim::workers::{
    MAX_FILE_BYTES, WorkerEntry, WorkersFile, check_probe, evaluate_args, go_duration_ms,
    parse_workers, probe_args,
};

/// No simulation workers: a pass without predictions never calls it; an execute-mode
/// re-check that does gets `WorkerFailed` (and withholds with `SimulationNotFeasible`).
pub struct NoSimulator;

impl Simulator for NoSimulator {
    fn simulate(&mut self, _request: &MoveSimulation<'_>) -> SimulationOutcome {
        SimulationOutcome::of(SchedulingReason::WorkerFailed)
    }
}

/// The simulator `alfred replay` uses: the model in-process, worker processes from
/// `workers` (loaded and probed now; errors are the startup errors of `alfred run`), or none.
pub fn for_replay(
    workers: Option<&Path>,
    in_process: bool,
    config: &Config,
    simulation_timeout: Duration,
) -> Result<Box<dyn Simulator>, String> {
    if in_process {
        return Ok(Box::new(alfred_dispatch::ModelSimulator::new(config)));
    }
    match workers {
        None => Ok(Box::new(NoSimulator)),
        Some(path) => {
            let mut pool = WorkerPool::load(path, simulation_timeout)
                .map_err(|e| format!("{PROBE_ERROR_PREFIX}: {e}"))?;
            // Replay runs one pass, right after this.
            pool.set_deadline(Some(Instant::now() + PASS_SIMULATION_BUDGET));
            Ok(Box::new(pool))
        }
    }
}

/// What callers print before a load or probe failure.
pub const PROBE_ERROR_PREFIX: &str = alfred_sim::workers::PROBE_ERROR_PREFIX;

/// The simulation budget of one pass (docs/design-simulation.md#per-pass-bounds).
pub const PASS_SIMULATION_BUDGET: Duration = Duration::from_secs(30);

/// The whole startup probe's budget.
pub const PROBE_BUDGET: Duration = Duration::from_secs(30);

/// How long a killed worker's pipes may stay open before alfred stops reading them.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// One worker process at a time in the whole process (the reference's registry-wide
/// semaphore), probes included.
static WORKER_SLOT: Mutex<()> = Mutex::new(());

/// Simulation workers from `workers.json`, probed (see the module docs).
#[derive(Debug, Clone)]
pub struct WorkerPool {
    workers: Vec<WorkerEntry>,
    timeout: Duration,
    deadline: Option<Instant>,
}

impl WorkerPool {
    /// Reads `workers.json` at `path` strictly, checks the files and probes every worker
    /// within 30 s. `simulation_timeout` is `--simulation-timeout`.
    pub fn load(path: &Path, simulation_timeout: Duration) -> Result<Self, String> {
        let bytes =
            read_capped(path, MAX_FILE_BYTES).map_err(|e| format!("{}: {e}", path.display()))?;
        let file = parse_workers(&bytes).map_err(|e| e.in_file(&path.display().to_string()))?;
        let probe_deadline = Instant::now() + PROBE_BUDGET;
        for (i, w) in file.workers.iter().enumerate() {
            check_files(w).map_err(|e| format!("worker {i}: {e}"))?;
            probe(w, simulation_timeout, probe_deadline)
                .map_err(|e| format!("probe worker {i}: {e}"))?;
        }
        Ok(Self::from_probed(file, simulation_timeout))
    }

    /// A pool of workers that already passed the startup probe (`alfred run` probes
    /// asynchronously in `run/workers.rs`).
    pub fn from_probed(file: WorkersFile, simulation_timeout: Duration) -> Self {
        WorkerPool {
            workers: file.workers,
            timeout: simulation_timeout,
            deadline: None,
        }
    }

    /// The pass deadline: no worker call runs past it (`SimulationBudgetExceeded`).
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    /// The worker answering `r`'s profile: exact identity, gang capability when needed.
    fn worker_for(&self, r: &MoveSimulation<'_>) -> Option<&WorkerEntry> {
        let scheduler_name = if r.profile.scheduler_name.is_empty() {
            alfred_sim::DEFAULT_SCHEDULER_NAME
        } else {
            r.profile.scheduler_name.as_str()
        };
        let wanted = Identity {
            scheduler_name: scheduler_name.to_owned(),
            backend: r.profile.backend.clone(),
            scheduler_version: r.profile.scheduler_version.clone(),
            configuration_id: r.profile.configuration_id.clone(),
        };
        self.workers
            .iter()
            .find(|w| w.identity == wanted)
            .filter(|w| w.gang_scheduling || !r.require_gang)
    }
}

impl Simulator for WorkerPool {
    fn simulate(&mut self, r: &MoveSimulation<'_>) -> SimulationOutcome {
        let Some(worker) = self.worker_for(r) else {
            tracing::warn!(
                scheduler = %r.profile.scheduler_name,
                backend = %r.profile.backend,
                "scheduler profile identity is not registered (or cannot schedule gangs)"
            );
            return unavailable(r, SchedulingReason::WorkerFailed);
        };
        let request = match alfred_dispatch::wire_request(r, &worker.identity) {
            Ok(req) => req,
            Err(reason) => return unavailable(r, reason),
        };
        let stdin = alfred_sim::encode_request(&request);
        if stdin.is_empty() || stdin.len() > MAX_REQUEST_BYTES {
            return unavailable(r, SchedulingReason::InputUnsupported);
        }
        let now = Instant::now();
        let mut budget = self.timeout;
        let mut deadline_bound = false;
        if let Some(d) = self.deadline {
            let left = d.saturating_duration_since(now);
            if left.is_zero() {
                return unavailable(r, SchedulingReason::SimulationBudgetExceeded);
            }
            if left < budget {
                budget = left;
                deadline_bound = true;
            }
        }
        let args = evaluate_args(worker, &worker_timeout(budget));
        let limits = Limits {
            stdout: MAX_RESULT_BYTES,
            stderr: MAX_STDERR_BYTES,
        };
        match run_bounded(&worker.binary_path, &args, &stdin, limits, now + budget) {
            Ok(out) if out.status.success() => {
                alfred_dispatch::outcome_of_stdout(r, &request, &out.stdout)
            }
            Ok(out) => {
                tracing::warn!(
                    request = %r.request_id,
                    status = %exit_text(out.status),
                    stderr = %String::from_utf8_lossy(&out.stderr).trim_end(),
                    "scheduler worker exited unsuccessfully"
                );
                unavailable(r, SchedulingReason::WorkerFailed)
            }
            Err(RunError::Timeout) if deadline_bound => {
                unavailable(r, SchedulingReason::SimulationBudgetExceeded)
            }
            Err(RunError::Timeout) => {
                tracing::warn!(
                    request = %r.request_id,
                    timeout = %go_duration_ms(u64::try_from(budget.as_millis()).unwrap_or(u64::MAX)),
                    "scheduler worker did not finish within --simulation-timeout; killed"
                );
                unavailable(r, SchedulingReason::WorkerFailed)
            }
            Err(e) => {
                tracing::warn!(request = %r.request_id, error = %e, "scheduler worker failed");
                unavailable(r, SchedulingReason::WorkerFailed)
            }
        }
    }
}

/// The worker's own `--timeout`: 80 % of the call's budget (at least 1 ms), so it can
/// still answer `Unsupported` in time.
pub fn worker_timeout(budget: Duration) -> String {
    let ms = u64::try_from(budget.as_millis()).unwrap_or(u64::MAX);
    go_duration_ms((ms.saturating_mul(4) / 5).max(1))
}

/// Reads at most `cap` bytes of `path` (one more byte is an error).
fn read_capped(path: &Path, cap: usize) -> Result<Vec<u8>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut bytes = Vec::new();
    file.take(cap as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() > cap {
        return Err(format!("larger than {cap} bytes"));
    }
    Ok(bytes)
}

/// Both paths are regular files, the binary executable, the configuration ≤ 1 MiB.
fn check_files(w: &WorkerEntry) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(&w.binary_path)
        .map_err(|e| format!("binaryPath {}: {e}", w.binary_path))?;
    if !meta.is_file() {
        return Err(format!(
            "binaryPath {} is not a regular file",
            w.binary_path
        ));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(format!(
            "worker binary is not executable: {}",
            w.binary_path
        ));
    }
    let meta = std::fs::metadata(&w.scheduler_config_path)
        .map_err(|e| format!("schedulerConfigPath {}: {e}", w.scheduler_config_path))?;
    if !meta.is_file() {
        return Err(format!(
            "schedulerConfigPath {} is not a regular file",
            w.scheduler_config_path
        ));
    }
    if meta.len() > MAX_FILE_BYTES as u64 {
        return Err(format!(
            "schedulerConfigPath {} is larger than 1 MiB",
            w.scheduler_config_path
        ));
    }
    Ok(())
}

/// Runs `--print-profile` and checks it against the entry. One worker's probe is bounded by
/// `--simulation-timeout` (the `--timeout` it is given), the whole probe by `deadline`.
fn probe(w: &WorkerEntry, simulation_timeout: Duration, deadline: Instant) -> Result<(), String> {
    let ms = u64::try_from(simulation_timeout.as_millis()).unwrap_or(u64::MAX);
    let args = probe_args(w, &go_duration_ms(ms.max(1)));
    let limits = Limits {
        stdout: MAX_PROFILE_BYTES,
        stderr: MAX_STDERR_BYTES,
    };
    let own_deadline = Instant::now() + simulation_timeout;
    let out = run_bounded(
        &w.binary_path,
        &args,
        b"",
        limits,
        deadline.min(own_deadline),
    )
    .map_err(|e| match e {
        RunError::Timeout if own_deadline < deadline => format!(
            "scheduler worker did not answer --print-profile within --simulation-timeout {}; killed",
            go_duration_ms(ms.max(1))
        ),
        RunError::Timeout => "probing the simulation workers took longer than 30s".to_owned(),
        other => other.to_string(),
    })?;
    check_probe(w, out.status.success(), &out.stdout)
        .map(|_| ())
        .map_err(|e| {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let stderr = one_line_clipped(stderr.trim_end());
            let status = if out.status.success() {
                String::new()
            } else {
                format!(" ({})", exit_text(out.status))
            };
            if out.status.success() || stderr.is_empty() {
                format!("{e}{status}")
            } else {
                format!("{e}{status}: {stderr}")
            }
        })
}

/// How a worker ended: `exit status 3`, `killed by signal 11 (SIGSEGV)`.
fn exit_text(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal} ({})", signal_name(signal)),
        (None, None) => status.to_string(),
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        _ => "unknown signal",
    }
}

/// A worker's stderr inside a one-line message: newlines as spaces, at most 200 characters.
fn one_line_clipped(text: &str) -> String {
    const MAX: usize = 200;
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match line.char_indices().nth(MAX) {
        None => line,
        Some((end, _)) => format!("{}… ({} bytes)", &line[..end], line.len()),
    }
}

/// Output caps of one worker run.
#[derive(Debug, Clone, Copy)]
struct Limits {
    stdout: usize,
    stderr: usize,
}

/// A finished worker run.
#[derive(Debug)]
struct RunOutput {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Why a worker run produced no output to judge.
#[derive(Debug)]
enum RunError {
    Spawn(std::io::Error),
    Wait(std::io::Error),
    Timeout,
    TooMuchOutput(&'static str, usize),
    PipesOpen,
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Spawn(e) => write!(f, "cannot start the scheduler worker: {e}"),
            RunError::Wait(e) => write!(f, "cannot wait for the scheduler worker: {e}"),
            RunError::Timeout => write!(f, "scheduler worker timed out"),
            RunError::TooMuchOutput(stream, cap) => {
                write!(
                    f,
                    "scheduler worker wrote more than {cap} bytes to {stream}"
                )
            }
            RunError::PipesOpen => write!(
                f,
                "scheduler worker exited but its output stayed open past the grace period"
            ),
        }
    }
}

/// Which stream a reader thread reports on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Stdout,
    Stderr,
}

/// One reader thread's report: the bytes read, or `None` when the cap was exceeded.
type Report = (Stream, Option<Vec<u8>>);

/// Runs `binary` with `args` (no shell, empty environment, working directory `/`),
/// `stdin` written from memory, stdout and stderr read up to their caps, killed at
/// `deadline` or as soon as a cap is exceeded.
fn run_bounded(
    binary: &str,
    args: &[String],
    stdin: &[u8],
    limits: Limits,
    deadline: Instant,
) -> Result<RunOutput, RunError> {
    let _slot = WORKER_SLOT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if Instant::now() >= deadline {
        return Err(RunError::Timeout);
    }
    let mut child = Command::new(binary)
        .args(args)
        .env_clear()
        .current_dir("/")
        .stdin(if stdin.is_empty() {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(RunError::Spawn)?;
    let (tx, rx) = mpsc::channel::<Report>();
    spawn_reader(
        child.stdout.take(),
        Stream::Stdout,
        limits.stdout,
        tx.clone(),
    );
    spawn_reader(child.stderr.take(), Stream::Stderr, limits.stderr, tx);
    if let Some(mut pipe) = child.stdin.take() {
        let bytes = stdin.to_vec();
        // A worker that exits early makes the write fail (EPIPE); its exit status tells.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    let mut stdout = None;
    let mut stderr = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => {
                kill(&mut child);
                return Err(RunError::Wait(e));
            }
        }
        let now = Instant::now();
        if now >= deadline {
            kill(&mut child);
            return Err(RunError::Timeout);
        }
        let tick = (deadline - now).min(Duration::from_millis(5));
        match rx.recv_timeout(tick) {
            Ok((stream, Some(bytes))) => match stream {
                Stream::Stdout => stdout = Some(bytes),
                Stream::Stderr => stderr = Some(bytes),
            },
            Ok((stream, None)) => {
                kill(&mut child);
                return Err(over_cap(stream, limits));
            }
            Err(_) => {}
        }
    };
    // The process is gone; its pipes close unless a descendant holds them.
    let grace = Instant::now() + KILL_GRACE;
    while stdout.is_none() || stderr.is_none() {
        let left = grace.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((Stream::Stdout, Some(bytes))) => stdout = Some(bytes),
            Ok((Stream::Stderr, Some(bytes))) => stderr = Some(bytes),
            Ok((stream, None)) => return Err(over_cap(stream, limits)),
            Err(_) => return Err(RunError::PipesOpen),
        }
    }
    Ok(RunOutput {
        status,
        stdout: stdout.unwrap_or_default(),
        stderr: stderr.unwrap_or_default(),
    })
}

fn over_cap(stream: Stream, limits: Limits) -> RunError {
    match stream {
        Stream::Stdout => RunError::TooMuchOutput("stdout", limits.stdout),
        Stream::Stderr => RunError::TooMuchOutput("stderr", limits.stderr),
    }
}

/// SIGKILL, then reap within the grace period (a zombie is reaped by a later `try_wait`
/// of nobody: the grace bounds how long alfred waits).
fn kill(child: &mut Child) {
    let _ = child.kill();
    let until = Instant::now() + KILL_GRACE;
    while Instant::now() < until {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return,
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// Reads `pipe` to its end, at most `cap` bytes, and reports once.
fn spawn_reader(
    pipe: Option<impl Read + Send + 'static>,
    stream: Stream,
    cap: usize,
    tx: mpsc::Sender<Report>,
) {
    let Some(pipe) = pipe else {
        let _ = tx.send((stream, Some(Vec::new())));
        return;
    };
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let read = pipe.take(cap as u64 + 1).read_to_end(&mut bytes);
        let report = match read {
            Ok(_) if bytes.len() <= cap => Some(bytes),
            Ok(_) => None,
            // A read error ends the stream: what was read is judged as is.
            Err(_) => Some(bytes),
        };
        let _ = tx.send((stream, report));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worker_timeout_is_80_percent_of_the_budget() {
        assert_eq!(worker_timeout(Duration::from_secs(10)), "8s");
        assert_eq!(worker_timeout(Duration::from_millis(1001)), "0.800s");
        assert_eq!(worker_timeout(Duration::from_secs(60)), "48s");
        assert_eq!(worker_timeout(Duration::from_nanos(1)), "0.001s");
    }

    fn sh(script: &str, deadline: Duration, stdout_cap: usize) -> Result<RunOutput, RunError> {
        // Only the tests use a shell, to script misbehaving workers.
        run_bounded(
            "/bin/sh",
            &["-c".to_owned(), script.to_owned()],
            b"",
            Limits {
                stdout: stdout_cap,
                stderr: MAX_STDERR_BYTES,
            },
            Instant::now() + deadline,
        )
    }

    #[test]
    fn a_worker_past_its_deadline_is_killed() {
        let started = Instant::now();
        let r = sh("exec sleep 30", Duration::from_millis(200), 1024);
        assert!(matches!(r, Err(RunError::Timeout)), "{r:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn output_past_its_cap_kills_the_worker() {
        let r = sh(
            "head -c 5000 /dev/zero; exec sleep 30",
            Duration::from_secs(20),
            1024,
        );
        assert!(
            matches!(r, Err(RunError::TooMuchOutput("stdout", 1024))),
            "{r:?}"
        );
    }

    #[test]
    fn the_environment_is_empty_and_stdin_is_fed() {
        let out = run_bounded(
            "/bin/sh",
            &["-c".to_owned(), "env; cat".to_owned()],
            b"hello",
            Limits {
                stdout: 1024,
                stderr: 1024,
            },
            Instant::now() + Duration::from_secs(20),
        )
        .expect("runs");
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        // sh itself may export PWD, SHLVL and `_`; nothing of alfred's environment leaks.
        assert!(!text.contains("PATH="), "{text}");
        assert!(!text.contains("HOME="), "{text}");
        assert!(text.ends_with("hello"), "{text}");
    }
}
