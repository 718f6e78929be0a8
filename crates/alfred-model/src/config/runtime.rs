//! The binary's flags that shape a decision pass (docs/configuration.md#flags-of-alfred-run,
//! docs/design-runtime.md#startup).

use std::time::Duration;

use super::duration::{format_go_duration, parse_go_duration_nanos};
use super::names::is_dns1123_subdomain;

/// `--migration-api-version`: the only wire version alfred speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum MigrationApiVersion {
    /// `v1`: the `ome.io/migration-request-v1-<uuid>` mailbox.
    #[serde(rename = "v1")]
    V1,
}

impl MigrationApiVersion {
    /// The flag spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            MigrationApiVersion::V1 => "v1",
        }
    }
}

/// The flags as the command line gave them (text, before validation). Defaults are the
/// binary's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeFlags {
    /// `--migration-api-version` (`""` or `v1`).
    pub migration_api_version: String,
    /// `--migration-service-account`.
    pub migration_service_account: String,
    /// `--leader-elect`.
    pub leader_elect: bool,
    /// `--migration-ack-timeout` (Go duration).
    pub migration_ack_timeout: String,
    /// `--migration-failure-backoff` (Go duration).
    pub migration_failure_backoff: String,
    /// `--simulation-timeout` (Go duration).
    pub simulation_timeout: String,
    /// `--simulation-workers` (a path; only whether it is set matters here).
    pub simulation_workers: String,
}

impl Default for RuntimeFlags {
    fn default() -> Self {
        RuntimeFlags {
            migration_api_version: String::new(),
            migration_service_account: String::new(),
            leader_elect: true,
            migration_ack_timeout: "2m".to_string(),
            migration_failure_backoff: "5m".to_string(),
            simulation_timeout: "10s".to_string(),
            simulation_workers: String::new(),
        }
    }
}

/// The validated flags that shape a pass.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeOptions {
    /// `--migration-api-version`: `None` for `""`.
    pub migration_api_version: Option<MigrationApiVersion>,
    /// `--migration-service-account` (required, a DNS-1123 subdomain, with `v1`).
    pub migration_service_account: String,
    /// `--leader-elect`.
    pub leader_elect: bool,
    /// `--migration-ack-timeout` (default 2m, in (0, 1h]).
    #[serde(serialize_with = "ser_duration")]
    pub migration_ack_timeout: Duration,
    /// `--migration-failure-backoff` (default 5m, in (0, 1h]).
    #[serde(serialize_with = "ser_duration")]
    pub migration_failure_backoff: Duration,
    /// `--simulation-timeout` (default 10s, in (0, 1m]).
    #[serde(serialize_with = "ser_duration")]
    pub simulation_timeout: Duration,
    /// Whether `--simulation-workers` is set (loading the workers is the adapter's business).
    pub simulation_configured: bool,
    /// Whether a pass may start helper threads (at most one more than the caller's at a
    /// time) on a large cluster: the policies' analysis and walk, the report's rows and a
    /// pass's second ending. Not a
    /// flag: the embedder's choice, `false` (one thread) by default; `alfred run` and the
    /// twin set it. Decisions and effects are the same either way.
    #[serde(skip)]
    pub helper_threads: bool,
    /// Whether a pass builds its metric updates and its Events about InferenceServices. Not
    /// a flag: the embedder's choice, [`Telemetry::Full`] by default and for `alfred run`.
    #[serde(skip)]
    pub telemetry: Telemetry,
}

/// What a pass reports besides its decisions ([`RuntimeOptions::telemetry`]).
///
/// On a large cluster most of a pass's effects are telemetry: each advice row's Event and
/// counter, four gauges per GPU node (about 12,000 effects a pass on a 1,213-node cluster).
/// An embedder that exports neither metrics nor Events, like the twin, would build them only
/// to drop them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Telemetry {
    /// Every effect of docs/metrics-and-events.md.
    #[default]
    Full,
    /// No [`Effect::Metric`] and no Event about an InferenceService (the rows' Events). The
    /// record, the durable state, the Node and ConfigMap Events and every write are those of
    /// [`Telemetry::Full`], in the same order: the effects are exactly `Full`'s without the
    /// ones [`Effect::is_telemetry`] names.
    ///
    /// [`Effect::Metric`]: crate::effect::Effect::Metric
    /// [`Effect::is_telemetry`]: crate::effect::Effect::is_telemetry
    DecisionsOnly,
    /// [`Telemetry::DecisionsOnly`], and the defragmentation walk's advice rows (about a
    /// fifth of a pass on the trace cluster, with their ordering and reporting) are counted
    /// by `(reason, advisoryReason)` instead of kept: the record's rows and the pass's
    /// explanation hold every other row (executable moves, drain-plan steps, node-health
    /// findings), and the pass output carries the counts. Decisions, durable state and
    /// every write are [`Telemetry::DecisionsOnly`]'s. For an embedder that publishes no
    /// record, like the twin.
    DecisionsCountingAdvice,
}

impl Telemetry {
    /// Whether a pass builds its metric updates and InferenceService Events.
    pub fn is_full(self) -> bool {
        self == Telemetry::Full
    }

    /// Whether the walk's advice rows are counted rather than kept.
    pub fn counts_advice(self) -> bool {
        self == Telemetry::DecisionsCountingAdvice
    }
}

fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_go_duration(*d))
}

/// A flag value alfred refuses at startup (exit status 1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid startup configuration: --{flag}: {message}")]
pub struct RuntimeOptionsError {
    /// The flag, without its dashes: `simulation-timeout`.
    pub flag: &'static str,
    /// What is wrong, naming the value.
    pub message: String,
}

const ONE_HOUR: Duration = Duration::from_secs(3600);
const ONE_MINUTE: Duration = Duration::from_secs(60);

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            migration_api_version: None,
            migration_service_account: String::new(),
            leader_elect: true,
            migration_ack_timeout: Duration::from_secs(120),
            migration_failure_backoff: Duration::from_secs(300),
            simulation_timeout: Duration::from_secs(10),
            simulation_configured: false,
            helper_threads: false,
            telemetry: Telemetry::Full,
        }
    }
}

impl RuntimeOptions {
    /// Validates the flags, first failure wins, in the order of docs/design-runtime.md#startup with
    /// `--simulation-timeout` checked with the others (docs/design-runtime.md#startup): api
    /// version, ack timeout, failure backoff, simulation timeout; then, only with `v1`: service
    /// account, leader election, simulation workers.
    pub fn from_flags(flags: &RuntimeFlags) -> Result<RuntimeOptions, RuntimeOptionsError> {
        let migration_api_version = match flags.migration_api_version.as_str() {
            "" => None,
            "v1" => Some(MigrationApiVersion::V1),
            other => {
                return Err(RuntimeOptionsError {
                    flag: "migration-api-version",
                    message: format!(
                        "{other:?} is invalid: migration-api-version must be empty or v1"
                    ),
                });
            }
        };
        let options = RuntimeOptions {
            migration_api_version,
            migration_service_account: flags.migration_service_account.clone(),
            leader_elect: flags.leader_elect,
            migration_ack_timeout: bounded(
                "migration-ack-timeout",
                &flags.migration_ack_timeout,
                ONE_HOUR,
            )?,
            migration_failure_backoff: bounded(
                "migration-failure-backoff",
                &flags.migration_failure_backoff,
                ONE_HOUR,
            )?,
            simulation_timeout: bounded(
                "simulation-timeout",
                &flags.simulation_timeout,
                ONE_MINUTE,
            )?,
            simulation_configured: !flags.simulation_workers.is_empty(),
            helper_threads: false,
            telemetry: Telemetry::Full,
        };
        options.validate()?;
        Ok(options)
    }

    /// Checks options built by hand (same rules and messages as [`RuntimeOptions::from_flags`]).
    pub fn validate(&self) -> Result<(), RuntimeOptionsError> {
        check_bounded(
            "migration-ack-timeout",
            self.migration_ack_timeout,
            ONE_HOUR,
        )?;
        check_bounded(
            "migration-failure-backoff",
            self.migration_failure_backoff,
            ONE_HOUR,
        )?;
        check_bounded("simulation-timeout", self.simulation_timeout, ONE_MINUTE)?;
        if self.executor_available() {
            if !is_dns1123_subdomain(&self.migration_service_account) {
                return Err(RuntimeOptionsError {
                    flag: "migration-service-account",
                    message: format!(
                        "{:?} is invalid: migration-service-account must be a nonempty DNS1123 name",
                        self.migration_service_account
                    ),
                });
            }
            if !self.leader_elect {
                return Err(RuntimeOptionsError {
                    flag: "leader-elect",
                    message: "false is invalid: migration dispatch requires leader election"
                        .to_string(),
                });
            }
            if !self.simulation_configured {
                return Err(RuntimeOptionsError {
                    flag: "simulation-workers",
                    message: "\"\" is invalid: migration dispatch requires simulation-workers"
                        .to_string(),
                });
            }
        }
        Ok(())
    }

    /// Options without a migration executor: no executor, no simulation workers, the
    /// documented defaults otherwise (ack timeout 2m, failure backoff 5m, simulation timeout
    /// 10s, leader election on, one thread). The same as [`RuntimeOptions::default`].
    ///
    /// What a pass without an executor can and cannot show: it observes, scores the pools,
    /// runs node health and reports every row, but it can plan no OMENative move, since a move's
    /// target exists only through the executor (docs/design-snapshot.md#executor-availability).
    /// Every OMENative candidate's row is advisory with `OMENativeUnavailable` and no target,
    /// scored 0; each pool's score is 0 with case `advisoryOnly` (what is reclaimable stays
    /// unknown); `alfred_omenative_unavailable` is 1. An embedder that wants to see which
    /// moves alfred would make, even with `mode: recommend-only` in its configuration (which
    /// alone keeps requests from being written), uses [`RuntimeOptions::with_executor`].
    pub fn recommend_only() -> RuntimeOptions {
        RuntimeOptions::default()
    }

    /// Options with a migration executor configured: OMENative's migration API `v1`, requests
    /// written as `service_account` (the migration guard's username), and a simulator (the
    /// pre-submit simulation refuses every move without one); the other options at
    /// [`RuntimeOptions::recommend_only`]'s defaults. [`RuntimeOptions::validate`] checks the
    /// account's name.
    ///
    /// An executor being configured does not switch execution on: the configuration's `mode`
    /// decides whether requests are written (`recommend-only` plans and prices moves and
    /// writes none). `alfred run --migration-api-version v1` builds the same options.
    pub fn with_executor(service_account: &str) -> RuntimeOptions {
        RuntimeOptions {
            migration_api_version: Some(MigrationApiVersion::V1),
            migration_service_account: service_account.into(),
            simulation_configured: true,
            ..RuntimeOptions::default()
        }
    }

    /// These options with helper threads allowed or not (see
    /// [`RuntimeOptions::helper_threads`]).
    pub fn with_helper_threads(mut self, allowed: bool) -> RuntimeOptions {
        self.helper_threads = allowed;
        self
    }

    /// These options with `telemetry` (see [`RuntimeOptions::telemetry`]).
    pub fn with_telemetry(mut self, telemetry: Telemetry) -> RuntimeOptions {
        self.telemetry = telemetry;
        self
    }

    /// Whether the migration executor is configured (`--migration-api-version=v1`), the only
    /// way OMENative moves can be planned with targets and dispatched
    /// (docs/design-snapshot.md#executor-availability).
    pub fn executor_available(&self) -> bool {
        self.migration_api_version == Some(MigrationApiVersion::V1)
    }
}

fn bounded(flag: &'static str, text: &str, max: Duration) -> Result<Duration, RuntimeOptionsError> {
    let problem = |why: String| RuntimeOptionsError {
        flag,
        message: format!("{text:?} is invalid: {why}"),
    };
    let nanos = parse_go_duration_nanos(text)
        .map_err(|e| problem(format!("not a duration ({})", e.why)))?;
    match u64::try_from(nanos).ok().map(Duration::from_nanos) {
        Some(d) if !d.is_zero() && d <= max => Ok(d),
        _ => Err(problem(range_text(flag, max))),
    }
}

fn check_bounded(
    flag: &'static str,
    d: Duration,
    max: Duration,
) -> Result<(), RuntimeOptionsError> {
    if d.is_zero() || d > max {
        return Err(RuntimeOptionsError {
            flag,
            message: format!(
                "{:?} is invalid: {}",
                format_go_duration(d),
                range_text(flag, max)
            ),
        });
    }
    Ok(())
}

fn range_text(flag: &str, max: Duration) -> String {
    format!(
        "{flag} must be positive and at most {}",
        format_go_duration(max)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags() -> RuntimeFlags {
        RuntimeFlags::default()
    }

    #[test]
    fn defaults() {
        let o = RuntimeOptions::from_flags(&flags()).unwrap();
        assert_eq!(o, RuntimeOptions::default());
        assert_eq!(o.migration_ack_timeout, Duration::from_secs(120));
        assert_eq!(o.migration_failure_backoff, Duration::from_secs(300));
        assert_eq!(o.simulation_timeout, Duration::from_secs(10));
        assert!(!o.executor_available());
        assert!(!o.simulation_configured);
        assert!(o.leader_elect);
    }

    #[test]
    fn v1_enables_the_executor_when_its_requirements_hold() {
        let f = RuntimeFlags {
            migration_api_version: "v1".into(),
            migration_service_account: "ome-alfred".into(),
            simulation_workers: "/etc/alfred-simulation/workers.json".into(),
            ..flags()
        };
        let o = RuntimeOptions::from_flags(&f).unwrap();
        assert!(o.executor_available());
        assert!(o.simulation_configured);
        assert_eq!(o.migration_api_version, Some(MigrationApiVersion::V1));
    }

    #[test]
    fn rejections_name_the_flag() {
        let cases: Vec<(RuntimeFlags, &str)> = vec![
            (
                RuntimeFlags {
                    migration_api_version: "v2".into(),
                    ..flags()
                },
                "invalid startup configuration: --migration-api-version: \"v2\" is invalid: migration-api-version must be empty or v1",
            ),
            (
                RuntimeFlags {
                    migration_ack_timeout: "0s".into(),
                    ..flags()
                },
                "invalid startup configuration: --migration-ack-timeout: \"0s\" is invalid: migration-ack-timeout must be positive and at most 1h",
            ),
            (
                RuntimeFlags {
                    migration_ack_timeout: "61m".into(),
                    ..flags()
                },
                "invalid startup configuration: --migration-ack-timeout: \"61m\" is invalid: migration-ack-timeout must be positive and at most 1h",
            ),
            (
                RuntimeFlags {
                    migration_failure_backoff: "-5m".into(),
                    ..flags()
                },
                "invalid startup configuration: --migration-failure-backoff: \"-5m\" is invalid: migration-failure-backoff must be positive and at most 1h",
            ),
            (
                RuntimeFlags {
                    simulation_timeout: "2m".into(),
                    ..flags()
                },
                "invalid startup configuration: --simulation-timeout: \"2m\" is invalid: simulation-timeout must be positive and at most 1m",
            ),
            (
                RuntimeFlags {
                    simulation_timeout: "0".into(),
                    ..flags()
                },
                "invalid startup configuration: --simulation-timeout: \"0\" is invalid: simulation-timeout must be positive and at most 1m",
            ),
            (
                RuntimeFlags {
                    simulation_timeout: "soon".into(),
                    ..flags()
                },
                "invalid startup configuration: --simulation-timeout: \"soon\" is invalid: not a duration (expected a number)",
            ),
            (
                RuntimeFlags {
                    migration_api_version: "v1".into(),
                    ..flags()
                },
                "invalid startup configuration: --migration-service-account: \"\" is invalid: migration-service-account must be a nonempty DNS1123 name",
            ),
            (
                RuntimeFlags {
                    migration_api_version: "v1".into(),
                    migration_service_account: "ome-alfred".into(),
                    leader_elect: false,
                    ..flags()
                },
                "invalid startup configuration: --leader-elect: false is invalid: migration dispatch requires leader election",
            ),
            (
                RuntimeFlags {
                    migration_api_version: "v1".into(),
                    migration_service_account: "ome-alfred".into(),
                    ..flags()
                },
                "invalid startup configuration: --simulation-workers: \"\" is invalid: migration dispatch requires simulation-workers",
            ),
        ];
        for (f, want) in cases {
            assert_eq!(
                RuntimeOptions::from_flags(&f).unwrap_err().to_string(),
                want
            );
        }
    }

    #[test]
    fn bounds_are_inclusive() {
        let f = RuntimeFlags {
            migration_ack_timeout: "1h".into(),
            migration_failure_backoff: "1ns".into(),
            simulation_timeout: "1m".into(),
            ..flags()
        };
        let o = RuntimeOptions::from_flags(&f).unwrap();
        assert_eq!(o.migration_ack_timeout, ONE_HOUR);
        assert_eq!(o.simulation_timeout, ONE_MINUTE);
        // Service account and leader election are only checked with v1.
        let f = RuntimeFlags {
            leader_elect: false,
            migration_service_account: "Not A Name".into(),
            ..flags()
        };
        assert!(RuntimeOptions::from_flags(&f).is_ok());
        let bad = RuntimeOptions {
            simulation_timeout: Duration::ZERO,
            ..RuntimeOptions::default()
        };
        assert_eq!(bad.validate().unwrap_err().flag, "simulation-timeout");
    }
}
