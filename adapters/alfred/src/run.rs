//! `alfred run`'s command line: its flags, JSON logs on stderr, the `/metrics`, `/healthz` and
//! `/readyz` endpoints, then the adapter of `alfred_kube::run` (docs/design-runtime.md#startup).

use std::process::ExitCode;
use std::sync::Arc;

use alfred_kube::run::{Harness, RunSettings, Telemetry};
use alfred_model::config::{RuntimeFlags, RuntimeOptions};

/// Flags of `alfred run` (docs/configuration.md#flags-of-alfred-run).
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Address of `/metrics` (also serves `/healthz` and `/readyz`).
    #[arg(long, default_value = ":8080")]
    pub metrics_bind_address: String,
    /// Address of `/healthz` and `/readyz`.
    #[arg(long, default_value = ":8081")]
    pub health_probe_bind_address: String,
    /// Elect a leader through the Lease `alfred.ome.io` (`--leader-elect=false` to disable).
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// Namespace of alfred's ConfigMaps, journal and Lease [default: $POD_NAMESPACE, else ome].
    #[arg(long)]
    pub namespace: Option<String>,
    /// The configuration ConfigMap.
    #[arg(long, default_value = "alfred-config")]
    pub config_name: String,
    /// The key of the configuration document in it.
    #[arg(long, default_value = "config.yaml")]
    pub config_key: String,
    /// Absolute path of `workers.json` (empty: no prediction).
    #[arg(long, default_value = "")]
    pub simulation_workers: String,
    /// Whole-process limit per simulation, in (0, 1m].
    #[arg(long, default_value = "10s")]
    pub simulation_timeout: String,
    /// `""` or `v1`.
    #[arg(long, default_value = "")]
    pub migration_api_version: String,
    /// alfred's ServiceAccount (required with `v1`).
    #[arg(long, default_value = "")]
    pub migration_service_account: String,
    /// In (0, 1h].
    #[arg(long, default_value = "2m")]
    pub migration_ack_timeout: String,
    /// In (0, 1h].
    #[arg(long, default_value = "5m")]
    pub migration_failure_backoff: String,
    /// A kubeconfig file [default: $KUBECONFIG, ~/.kube/config, else in-cluster].
    #[arg(long)]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// Write every snapshot as JSON to this file (debugging and tests).
    #[arg(long, hide = true)]
    pub dump_snapshot: Option<std::path::PathBuf>,
    /// Append the decision log (JSON lines: decisions of the leader's passes and their
    /// outcomes at 1, 5 and 15 minutes) to this file; `-` is stdout.
    #[arg(long, value_name = "PATH|-")]
    pub decision_log: Option<String>,
}

impl RunArgs {
    /// What the adapter needs of the flags (all but the two HTTP addresses).
    pub fn settings(&self) -> RunSettings {
        RunSettings {
            leader_elect: self.leader_elect,
            namespace: self.namespace.clone(),
            config_name: self.config_name.clone(),
            config_key: self.config_key.clone(),
            simulation_workers: self.simulation_workers.clone(),
            simulation_timeout: self.simulation_timeout.clone(),
            migration_api_version: self.migration_api_version.clone(),
            migration_service_account: self.migration_service_account.clone(),
            migration_ack_timeout: self.migration_ack_timeout.clone(),
            migration_failure_backoff: self.migration_failure_backoff.clone(),
            kubeconfig: self.kubeconfig.clone(),
            dump_snapshot: self.dump_snapshot.clone(),
            decision_log: self.decision_log.clone(),
        }
    }

    /// The pass-shaping flags.
    pub fn runtime_flags(&self) -> RuntimeFlags {
        self.settings().runtime_flags()
    }
}

/// JSON lines on stderr, filtered by `RUST_LOG` (default `info`).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// `alfred run` in the caller's async runtime (multi-threaded) with a test [`Harness`]. Ends
/// with an error on a startup failure; otherwise runs until SIGTERM/SIGINT or until the
/// caller drops the runtime (which is how the live tests kill a replica).
pub async fn run_with(args: RunArgs, harness: Harness) -> Result<(), String> {
    init_logging();
    let mut flags = args.runtime_flags();
    if harness.simulate_in_process && flags.simulation_workers.is_empty() {
        flags.simulation_workers = "in-process".to_owned();
    }
    let options = RuntimeOptions::from_flags(&flags).map_err(|e| e.to_string())?;
    serve_and_run(args, options, harness).await
}

/// Entry point of `alfred run`. Exit status 1 on every startup failure
/// (docs/design-runtime.md#startup).
pub fn main(args: RunArgs) -> ExitCode {
    init_logging();
    let options = match RuntimeOptions::from_flags(&args.runtime_flags()) {
        Ok(o) => o,
        Err(e) => {
            tracing::error!(error = %e, "invalid startup configuration");
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve_and_run(args, options, Harness::default())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "alfred stopped");
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// The startup metrics, then the HTTP endpoints (so `/healthz` answers while the workers are
/// probed; `/readyz` waits for them), then the adapter.
async fn serve_and_run(
    args: RunArgs,
    options: RuntimeOptions,
    harness: Harness,
) -> Result<(), String> {
    let pod = harness
        .pod
        .clone()
        .unwrap_or_else(kube_leader_lease::pod_name);
    let telemetry = Telemetry::new(pod, &options);
    let metrics = telemetry.metrics.clone();
    let endpoints = metrics_endpoint::Endpoints {
        render: Arc::new(move || metrics.render()),
        ready: telemetry.ready.clone(),
        not_ready: "simulation workers not probed yet",
    };
    let addresses =
        metrics_endpoint::addresses(&args.metrics_bind_address, &args.health_probe_bind_address);
    metrics_endpoint::serve(&addresses, &endpoints).await?;
    alfred_kube::run::run(args.settings(), options, harness, telemetry).await
}
