//! `alfred run`: the Kubernetes adapter (docs/design-runtime.md#startup,
//! docs/design-runtime.md#observation-loop, docs/design-runtime.md#cadence,
//! docs/design-pass.md#rows-and-events, docs/design-runtime.md#leader-election).
//!
//! The modules are grouped by concern. Every replica decodes the API server's lists and
//! watch events (`decode`), keeps the cluster in caches, reloads `alfred-config` and builds a
//! snapshot with the pure observe function every `observationLoopInterval` (`watch`), and
//! reports its metrics and probes (`telemetry`). The holder of the Lease `alfred.ome.io`
//! (`apply::leader`) runs the decision passes (`decision`) and applies their effects and Events
//! (`apply`) while, and only while, it holds the lease.
//!
//! Kubernetes types stay inside this crate; the adapter holds no policy logic.

pub mod apply;
pub mod decision;
pub mod decode;
pub mod telemetry;
pub mod watch;

#[cfg(test)]
mod transcript_tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use alfred_model::config::{RuntimeFlags, RuntimeOptions};
use alfred_model::metric::MetricId;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::Client;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::mpsc;

use self::apply::applier::{self, Applier};
use self::apply::leader::LeaderGate;
use self::apply::{events, leader};
use self::decision::decide::Decider;
use self::decision::{decide, decision_log, pass, workers};
use self::telemetry::metrics::Metrics;
use self::watch::caches::Caches;
use self::watch::config::{ConfigStore, Reload, ReloadTracker};
use self::watch::observe::Observer;

/// What `alfred run` needs of its flags (docs/configuration.md#flags-of-alfred-run), all but
/// the HTTP addresses, which the binary serves. The `alfred` binary builds it from its
/// command line; the defaults there are the documented ones.
#[derive(Debug, Clone, Default)]
pub struct RunSettings {
    /// Elect a leader through the Lease `alfred.ome.io` (`false`: always the leader).
    pub leader_elect: bool,
    /// Namespace of alfred's ConfigMaps, journal and Lease (`None` or empty:
    /// `$POD_NAMESPACE`, else `ome`).
    pub namespace: Option<String>,
    /// The configuration ConfigMap.
    pub config_name: String,
    /// The key of the configuration document in it.
    pub config_key: String,
    /// Absolute path of `workers.json` (empty: no prediction).
    pub simulation_workers: String,
    /// Whole-process limit per simulation, in (0, 1m].
    pub simulation_timeout: String,
    /// `""` or `v1`.
    pub migration_api_version: String,
    /// alfred's ServiceAccount (required with `v1`).
    pub migration_service_account: String,
    /// In (0, 1h].
    pub migration_ack_timeout: String,
    /// In (0, 1h].
    pub migration_failure_backoff: String,
    /// A kubeconfig file (`None`: `$KUBECONFIG`, `~/.kube/config`, else in-cluster).
    pub kubeconfig: Option<std::path::PathBuf>,
    /// Write every snapshot as JSON to this file (debugging and tests).
    pub dump_snapshot: Option<std::path::PathBuf>,
    /// Append the decision log to this file; `-` is stdout.
    pub decision_log: Option<String>,
}

impl RunSettings {
    /// The pass-shaping flags.
    pub fn runtime_flags(&self) -> RuntimeFlags {
        RuntimeFlags {
            migration_api_version: self.migration_api_version.clone(),
            migration_service_account: self.migration_service_account.clone(),
            leader_elect: self.leader_elect,
            migration_ack_timeout: self.migration_ack_timeout.clone(),
            migration_failure_backoff: self.migration_failure_backoff.clone(),
            simulation_timeout: self.simulation_timeout.clone(),
            simulation_workers: self.simulation_workers.clone(),
        }
    }

    /// `--namespace`, else `$POD_NAMESPACE`, else `ome`.
    pub fn effective_namespace(&self) -> String {
        self.namespace
            .clone()
            .filter(|n| !n.is_empty())
            .or_else(|| {
                std::env::var("POD_NAMESPACE")
                    .ok()
                    .filter(|n| !n.is_empty())
            })
            .unwrap_or_else(|| "ome".to_owned())
    }
}

/// `$POD_NAME`, else the hostname, else `unknown`.
pub fn pod_name() -> String {
    kube_leader_lease::pod_name()
}

/// What a process reports before and while it runs: its pod name, the metrics registry with
/// the series a fresh process shows before its first pass, and the flag `/readyz` follows (set
/// once the simulation workers passed their probe). The binary serves the metrics and the
/// probes; [`run`] updates them.
pub struct Telemetry {
    /// The pod name (the `pod` label of `alfred_leader_status`, the lease identity's prefix).
    pub pod: String,
    /// The registry behind `/metrics`.
    pub metrics: Arc<Metrics>,
    /// Set once the simulation workers are probed.
    pub ready: Arc<AtomicBool>,
}

impl Telemetry {
    /// The startup series of `pod` under `options`, not ready yet.
    pub fn new(pod: String, options: &RuntimeOptions) -> Telemetry {
        Telemetry {
            metrics: startup_metrics(&pod, options),
            pod,
            ready: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// What only the live tests change in a run (the `alfred` binary's `run_with`); `alfred run` uses
/// [`Harness::default`]: the guard read from the API, the pod name from the environment, the
/// simulator of `--simulation-workers`, no write hook.
#[derive(Default)]
pub struct Harness {
    /// The migration guard as the passes see it (`None`: read from the API).
    pub guard: Option<Arc<dyn decide::GuardSource>>,
    /// The pod name (`None`: `$POD_NAME`, else the hostname).
    pub pod: Option<String>,
    /// Simulate in process (the model of `alfred replay --simulate-in-process`) instead of
    /// worker processes; satisfies `--migration-api-version v1`'s need for a simulator.
    pub simulate_in_process: bool,
    /// Called after every write (see [`applier::WriteHook`]).
    pub on_write: Option<applier::WriteHook>,
}

/// `alfred run` after its HTTP endpoints are up: connects, probes the simulation workers (then
/// `/readyz` turns ready), starts the config watch, the caches, the observation loop and the
/// decision loop, and campaigns for the lease. Ends with an error on a startup failure or when
/// the lease machinery dies; otherwise runs until SIGTERM/SIGINT or until the caller drops the
/// runtime.
pub async fn run(
    args: RunSettings,
    options: RuntimeOptions,
    harness: Harness,
    telemetry: Telemetry,
) -> Result<(), String> {
    let namespace = args.effective_namespace();
    let Telemetry {
        pod,
        metrics,
        ready,
    } = telemetry;
    let client = kube_connect::connect(args.kubeconfig.as_deref()).await?;

    let simulation = simulation(&args, &options, &harness).await?;
    ready.store(true, Ordering::SeqCst);

    let gate = if options.leader_elect {
        LeaderGate::new()
    } else {
        metrics.set(MetricId::LeaderStatus, &[("pod", &pod)], 1.0);
        LeaderGate::always_leader()
    };
    let applier = Arc::new(
        Applier::new(client.clone(), &namespace, gate.clone(), metrics.clone())
            .with_hook(harness.on_write.clone()),
    );
    let config = Arc::new(ConfigStore::new());
    tokio::spawn(watch_config(
        client.clone(),
        namespace.clone(),
        args.config_name.clone(),
        args.config_key.clone(),
        config.clone(),
        metrics.clone(),
        applier.clone(),
    ));

    let decision_log = match &args.decision_log {
        Some(target) => Some(
            decision_log::DecisionLog::open(target, options.migration_ack_timeout)
                .map_err(|e| format!("unable to open the decision log {target}: {e}"))?,
        ),
        None => None,
    };
    let (early_tx, early_rx) = mpsc::channel(1);
    let caches = Arc::new(Caches::start(&client, config.clone(), early_tx));
    let observer = Arc::new(Observer::new(
        client.clone(),
        caches,
        config.clone(),
        options.clone(),
        metrics.clone(),
        args.dump_snapshot.clone(),
    ));
    tokio::spawn(observer.clone().run());
    if let Some(log) = &decision_log {
        tokio::spawn(decision_log::follow(
            log.clone(),
            observer.clone(),
            config.clone(),
        ));
    }
    let decider = Decider {
        client: client.clone(),
        namespace: namespace.clone(),
        config_name: args.config_name.clone(),
        runtime: options.clone(),
        config,
        decision_log,
        observer,
        gate: gate.clone(),
        applier,
        metrics: metrics.clone(),
        simulation,
        guard: harness
            .guard
            .clone()
            .unwrap_or_else(|| Arc::new(decide::ApiGuard(client.clone()))),
    };
    tokio::spawn(decider.run(early_rx));

    let election = async {
        if !options.leader_elect {
            return std::future::pending::<Result<(), String>>().await;
        }
        let lease = leader::lease(&namespace, &pod);
        tracing::info!(identity = %lease.identity, lease = leader::LEASE_NAME, "campaigning for the lease");
        let m = metrics.clone();
        let p = pod.clone();
        gate.run(client.clone(), &lease, move |held| {
            m.set(
                MetricId::LeaderStatus,
                &[("pod", &p)],
                if held { 1.0 } else { 0.0 },
            );
            if held {
                tracing::info!("acquired the lease");
            } else {
                tracing::warn!("not the leader");
            }
        })
        .await
        .map_err(|e| format!("leader election failed: {e}"))
    };
    tokio::select! {
        r = election => r,
        _ = shutdown_signal() => {
            tracing::info!("shutting down");
            Ok(())
        }
    }
}

/// The metrics registry with the series a fresh process reports before its first pass.
fn startup_metrics(pod: &str, options: &RuntimeOptions) -> Arc<Metrics> {
    let metrics = Arc::new(Metrics::new());
    for outcome in ["success", "failure"] {
        metrics.touch(MetricId::PolicyReload, &[("outcome", outcome)]);
    }
    metrics.set(MetricId::LeaderStatus, &[("pod", pod)], 0.0);
    metrics.set(MetricId::CircuitBreakerState, &[], 0.0);
    metrics.set(
        MetricId::OmenativeUnavailable,
        &[],
        if options.executor_available() {
            0.0
        } else {
            1.0
        },
    );
    metrics
}

/// How passes simulate moves: in process (test harness), through the configured workers
/// (probed first), or not at all.
async fn simulation(
    args: &RunSettings,
    options: &RuntimeOptions,
    harness: &Harness,
) -> Result<pass::Simulation, String> {
    if harness.simulate_in_process && args.simulation_workers.is_empty() {
        tracing::info!("simulating in process (test harness)");
        return Ok(pass::Simulation::InProcess);
    }
    if args.simulation_workers.is_empty() {
        return Ok(pass::Simulation::None);
    }
    match workers::load_and_probe(&args.simulation_workers, options.simulation_timeout).await {
        Ok(pool) => {
            tracing::info!("simulation workers loaded");
            Ok(pass::Simulation::Workers(pool))
        }
        Err(e) => {
            let msg = format!("unable to configure recommendation simulation: {e}");
            tracing::error!("{msg}");
            Err(msg)
        }
    }
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// Every replica follows `<namespace>/<name>` and reloads `key`
/// (docs/design-runtime.md#hot-reload).
async fn watch_config(
    client: Client,
    namespace: String,
    name: String,
    key: String,
    store: Arc<ConfigStore>,
    metrics: Arc<Metrics>,
    applier: Arc<Applier>,
) {
    let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
    let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut stream = watcher::watcher(api, cfg).default_backoff().boxed();
    let mut tracker = ReloadTracker::default();
    let mut listed_any = false;
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Init) => listed_any = false,
            Ok(Event::InitApply(cm)) | Ok(Event::Apply(cm)) => {
                listed_any = true;
                let text = cm
                    .data
                    .as_ref()
                    .and_then(|d| d.get(&key))
                    .map(String::as_str);
                match tracker.observe(&namespace, &name, &key, text) {
                    Reload::Unchanged => {}
                    Reload::Loaded(c) => {
                        let mode = format!("{:?}", c.mode);
                        store.swap(*c);
                        metrics.inc(MetricId::PolicyReload, &[("outcome", "success")], 1);
                        tracing::info!(mode = %mode, "config reloaded");
                    }
                    Reload::Failed(message) => {
                        metrics.inc(MetricId::PolicyReload, &[("outcome", "failure")], 1);
                        tracing::warn!(error = %message, "config reload failed; keeping last-known-good");
                        let involved = ObjectReference {
                            api_version: Some("v1".to_owned()),
                            kind: Some("ConfigMap".to_owned()),
                            namespace: Some(namespace.clone()),
                            name: Some(name.clone()),
                            uid: cm.metadata.uid.clone(),
                            resource_version: cm.metadata.resource_version.clone(),
                            ..ObjectReference::default()
                        };
                        let reason = alfred_model::event::EventReason::PolicyReloadFailed;
                        let event_type = events::type_str(reason.event_type());
                        let outcome = applier
                            .record_event(&involved, event_type, reason.as_str(), &message)
                            .await;
                        if outcome != applier::Outcome::Applied {
                            tracing::warn!(
                                outcome = outcome.label(),
                                "cannot record PolicyReloadFailed"
                            );
                        }
                    }
                }
                store.mark_initialised();
            }
            Ok(Event::InitDone) => {
                if !listed_any && !store.initialised() {
                    tracing::warn!(
                        configmap = %format!("{namespace}/{name}"),
                        "configuration ConfigMap not found; using the built-in defaults"
                    );
                }
                store.mark_initialised();
            }
            Ok(Event::Delete(_)) => {
                tracing::warn!(
                    configmap = %format!("{namespace}/{name}"),
                    "configuration ConfigMap deleted; keeping the current configuration"
                );
            }
            Err(e) => tracing::warn!(error = %e, "config watch failed; retrying"),
        }
    }
}
