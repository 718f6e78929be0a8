//! `workers.json` (docs/design-simulation.md#worker-registry, strict), the startup probe check
//! (docs/design-simulation.md#worker-registry) and the worker command lines (types and encoding
//! only: spawning a process belongs to the adapters).

use std::collections::BTreeSet;

use serde::{Deserialize, Deserializer, Serialize};
use thiserror::Error;

use crate::identity::{Identity, PrintedProfile};
use crate::wire::MAX_PROFILE_BYTES;

/// At most this many workers.
pub const MAX_WORKERS: usize = 32;
/// Largest `workers.json` and scheduler configuration file (1 MiB).
pub const MAX_FILE_BYTES: usize = 1024 * 1024;

/// `workers.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkersFile {
    /// The workers, one per profile identity.
    pub workers: Vec<WorkerEntry>,
}

/// One worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkerEntry {
    /// Absolute path of the simulator executable.
    pub binary_path: String,
    /// Absolute path of its KubeSchedulerConfiguration.
    pub scheduler_config_path: String,
    /// The identity its `--print-profile` must print.
    pub identity: Identity,
    /// Whether it claims gang scheduling (its probe must agree).
    #[serde(default, deserialize_with = "non_null_bool")]
    pub gang_scheduling: bool,
}

fn non_null_bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    bool::deserialize(d)
}

/// Why `workers.json` was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WorkersError {
    /// The file is over [`MAX_FILE_BYTES`].
    #[error("workers.json is larger than {MAX_FILE_BYTES} bytes")]
    TooLarge,
    /// The file is not valid JSON of the `workers.json` schema.
    #[error("workers.json: {}", crate::clip::clip(.0, 240))]
    Decode(String),
    /// More than [`MAX_WORKERS`] workers.
    #[error("workers.json: {count} workers, at most {MAX_WORKERS} are allowed")]
    TooMany {
        /// How many the file lists.
        count: usize,
    },
    /// A path that must be absolute is not.
    #[error(
        "workers.json: workers[{index}].{field}: {} must be an absolute path",
        crate::clip::clip(&format!("{:?}", .value), 120)
    )]
    NotAbsolute {
        /// The worker's position in the file.
        index: usize,
        /// The path field's name.
        field: &'static str,
        /// The value given.
        value: String,
    },
    /// An identity field is empty or padded with spaces.
    #[error(
        "workers.json: workers[{index}].identity.{field}: {} must be non-empty and unpadded",
        crate::clip::clip(&format!("{:?}", .value), 120)
    )]
    BadIdentityField {
        /// The worker's position in the file.
        index: usize,
        /// The identity field's name.
        field: &'static str,
        /// The value given.
        value: String,
    },
    /// Two workers share one identity, so a request could not pick between them.
    #[error(
        "workers.json: workers[{index}].identity repeats the identity of workers[{first}]: {}",
        crate::clip::clip(&format!("{:?}", .identity), 150)
    )]
    DuplicateIdentity {
        /// The later worker's position.
        index: usize,
        /// The earlier worker's position.
        first: usize,
        /// The shared identity.
        identity: Identity,
    },
}

impl WorkersError {
    /// The message with the file named as the caller was given it instead of `workers.json`.
    pub fn in_file(&self, file: &str) -> String {
        self.to_string().replacen("workers.json", file, 1)
    }
}

/// Parses `workers.json` strictly: unknown field, `null`, trailing data, bad paths, padded or
/// empty identity fields, a repeated identity → an error naming it.
pub fn parse_workers(bytes: &[u8]) -> Result<WorkersFile, WorkersError> {
    if bytes.len() > MAX_FILE_BYTES {
        return Err(WorkersError::TooLarge);
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let file: WorkersFile = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        WorkersError::Decode(if path == "." {
            inner.to_string()
        } else {
            format!("{path}: {inner}")
        })
    })?;
    de.end().map_err(|e| WorkersError::Decode(e.to_string()))?;
    if file.workers.len() > MAX_WORKERS {
        return Err(WorkersError::TooMany {
            count: file.workers.len(),
        });
    }
    let mut seen: Vec<&Identity> = Vec::new();
    for (index, w) in file.workers.iter().enumerate() {
        for (field, value) in [
            ("binaryPath", &w.binary_path),
            ("schedulerConfigPath", &w.scheduler_config_path),
        ] {
            if !value.starts_with('/') {
                return Err(WorkersError::NotAbsolute {
                    index,
                    field,
                    value: value.clone(),
                });
            }
        }
        let id = &w.identity;
        for (field, value) in [
            ("schedulerName", &id.scheduler_name),
            ("backend", &id.backend),
            ("schedulerVersion", &id.scheduler_version),
            ("configurationID", &id.configuration_id),
        ] {
            if value.is_empty() || value.trim() != value {
                return Err(WorkersError::BadIdentityField {
                    index,
                    field,
                    value: value.clone(),
                });
            }
        }
        if let Some(first) = seen.iter().position(|s| *s == id) {
            return Err(WorkersError::DuplicateIdentity {
                index,
                first,
                identity: id.clone(),
            });
        }
        seen.push(id);
    }
    let unique: BTreeSet<&Identity> = seen.into_iter().collect();
    debug_assert_eq!(unique.len(), file.workers.len());
    Ok(file)
}

/// Why a worker failed its startup probe. The messages are the documented ones
/// (docs/design-simulation.md#worker-registry); Alfred prefixes them with `unable to configure
/// recommendation simulation: `.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProbeError {
    /// The probe run did not exit 0.
    #[error("scheduler worker exited unsuccessfully")]
    ExitedUnsuccessfully,
    /// The probe printed something other than one profile line.
    #[error("worker profile output is invalid: {0}")]
    InvalidOutput(String),
    /// Names the first differing field: `identity.configurationID: printed "…", registered "…"`.
    #[error("worker profile identity does not match registry entry: {0}")]
    IdentityMismatch(String),
    /// The printed gang-scheduling claim differs from the registry entry's.
    #[error("worker gang scheduling claim does not match registry entry")]
    GangClaimMismatch,
}

/// The prefix Alfred logs before a probe failure.
pub const PROBE_ERROR_PREFIX: &str = "unable to configure recommendation simulation";

/// Checks a worker's `--print-profile` run against its registry entry.
pub fn check_probe(
    entry: &WorkerEntry,
    exit_success: bool,
    stdout: &[u8],
) -> Result<PrintedProfile, ProbeError> {
    if !exit_success {
        return Err(ProbeError::ExitedUnsuccessfully);
    }
    if stdout.len() > MAX_PROFILE_BYTES {
        return Err(ProbeError::InvalidOutput("output exceeds 64 KiB".into()));
    }
    let printed: PrintedProfile =
        serde_json::from_slice(stdout).map_err(|e| ProbeError::InvalidOutput(e.to_string()))?;
    if printed.identity != entry.identity {
        let (p, r) = (&printed.identity, &entry.identity);
        let differing = [
            ("schedulerName", &p.scheduler_name, &r.scheduler_name),
            ("backend", &p.backend, &r.backend),
            (
                "schedulerVersion",
                &p.scheduler_version,
                &r.scheduler_version,
            ),
            ("configurationID", &p.configuration_id, &r.configuration_id),
        ]
        .into_iter()
        .find(|(_, printed, registered)| printed != registered)
        .map(|(field, printed, registered)| {
            format!(
                "identity.{field}: printed {}, registered {}",
                clipped_quote(printed),
                clipped_quote(registered)
            )
        })
        .unwrap_or_default();
        return Err(ProbeError::IdentityMismatch(differing));
    }
    if printed.gang_scheduling != entry.gang_scheduling {
        return Err(ProbeError::GangClaimMismatch);
    }
    Ok(printed)
}

/// Arguments of the probe run (after `binaryPath`).
pub fn probe_args(entry: &WorkerEntry, timeout: &str) -> Vec<String> {
    let mut a = evaluate_args(entry, timeout);
    a.push("--print-profile".into());
    a
}

/// Arguments of an evaluation run (after `binaryPath`); the request goes on stdin.
pub fn evaluate_args(entry: &WorkerEntry, timeout: &str) -> Vec<String> {
    vec![
        "--backend".into(),
        entry.identity.backend.clone(),
        "--scheduler-config".into(),
        entry.scheduler_config_path.clone(),
        "--timeout".into(),
        timeout.into(),
    ]
}

/// Formats a duration in milliseconds as a Go duration string the worker accepts.
pub fn go_duration_ms(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{}.{:03}s", ms / 1000, ms % 1000)
    }
}

/// Parses `--timeout` (Go duration syntax: `10s`, `1m0s`, `799.999ms`, `1.5s`) into
/// nanoseconds; must be positive and at most 60 s.
pub fn parse_timeout(s: &str) -> Result<u64, String> {
    let mut rest = s;
    let mut total: f64 = 0.0;
    if rest.is_empty() {
        return Err(format!("invalid --timeout {s:?}: empty"));
    }
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("invalid --timeout {s:?}: missing unit"))?;
        if n == 0 {
            return Err(format!("invalid --timeout {s:?}: expected a number"));
        }
        let num: f64 = rest[..n]
            .parse()
            .map_err(|_| format!("invalid --timeout {s:?}: bad number"))?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..u] {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            other => return Err(format!("invalid --timeout {s:?}: unknown unit {other:?}")),
        };
        total += num * unit;
        rest = &rest[u..];
    }
    let ns = total.round();
    if ns <= 0.0 || ns > 60e9 {
        return Err(format!(
            "invalid --timeout {s:?}: must be positive and at most 60s"
        ));
    }
    Ok(ns as u64)
}

/// A value as an error shows it: quoted, at most 100 characters of it.
fn clipped_quote(value: &str) -> String {
    const MAX: usize = 100;
    match value.char_indices().nth(MAX) {
        None => format!("{value:?}"),
        Some((end, _)) => format!("{:?}… ({} bytes)", &value[..end], value.len()),
    }
}
