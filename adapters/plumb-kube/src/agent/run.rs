//! Running `plumb agent`: the tokio runtime and JSON logs, the connection to this member,
//! `/metrics` `/healthz` `/readyz`, the local `plumb-agent` Lease (`--leader-elect`, holder
//! `<cluster>/<pod>`), and, only while this replica holds it, the member loop and the hub loop.
//! SIGTERM or Ctrl-C stops both loops (the hub loop releases its `plumb-hub` Leases itself) and
//! releases the local Lease, so the other replica takes over at once.
//!
//! `/readyz` turns ready after the first report pass, or, on a replica standing by for the
//! Lease, once its campaign has started (a standby must not block a rollout).

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use kube_leader_lease::LeaderGate;
use tokio::sync::watch;

use super::config::AGENT_LEASE;
use super::hub::{self, HubContext};
use super::member::{self, FIELD_MANAGER, MemberContext};
use super::{AgentConfig, AgentMetrics};
use crate::cli::AgentArgs;

/// The log filter without `RUST_LOG`: info, but not kube-rs's own line for every failed
/// request (it would repeat every retry period for a member that is down; the hub lock logs
/// a member going unreachable and coming back once each).
pub const DEFAULT_LOG_FILTER: &str = "info,kube_client::client::builder=off";

/// How long a stop waits for the loops (and the Lease release) before giving up.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// `plumb agent`: runs until SIGTERM or Ctrl-C; exit 1 with one line when it cannot start
/// or its Lease campaign dies.
pub fn main(args: &AgentArgs) -> ExitCode {
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER)),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let config = args.config(kube_leader_lease::pod_name());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("plumb agent: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(config, shutdown_signal())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("plumb agent: {}", crate::one_line(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}

/// The agent until `shutdown` completes (see the module doc).
pub async fn run(
    config: AgentConfig,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let client = kube_connect::connect(config.kubeconfig.as_deref())
        .await
        .map_err(anyhow::Error::msg)?;
    let metrics = AgentMetrics::new();
    let ready = Arc::new(AtomicBool::new(false));
    let render = metrics.clone();
    let endpoints = metrics_endpoint::Endpoints {
        render: Arc::new(move || render.render()),
        ready: ready.clone(),
        not_ready: "no report pass yet",
    };
    let addresses = metrics_endpoint::addresses(&config.metrics_bind, &config.health_probe_bind);
    metrics_endpoint::serve(&addresses, &endpoints)
        .await
        .map_err(anyhow::Error::msg)?;
    let gate = gate(&config);
    let election = tokio::spawn(campaign(gate.clone(), client.clone(), config.clone()));
    if config.leader_elect {
        ready.store(true, Ordering::SeqCst);
    }
    tracing::info!(identity = %config.identity(), cluster = %config.cluster_name, namespace = %config.namespace, "plumb agent started");
    let (reports_tx, reports_rx) = watch::channel(0_u64);
    let member = MemberContext {
        config: config.clone(),
        client: client.clone(),
        metrics: metrics.clone(),
        reports_changed: reports_tx,
        reported: ready,
    };
    let hub = HubContext {
        config: config.clone(),
        client: client.clone(),
        metrics,
        reports_changed: reports_rx,
    };
    let (stop_tx, stop_rx) = watch::channel(false);
    let leading = tokio::spawn(lead_while_held(gate.subscribe(), member, hub, stop_rx));
    let mut election = election;
    let result = tokio::select! {
        r = &mut election => match r {
            Ok(Ok(())) => Err(anyhow::anyhow!("the plumb-agent Lease campaign ended")),
            Ok(Err(e)) => Err(e.context("the plumb-agent Lease campaign failed")),
            Err(e) => Err(anyhow::anyhow!("the plumb-agent Lease campaign panicked: {e}")),
        },
        () = shutdown => {
            tracing::info!("shutting down");
            Ok(())
        }
    };
    // the loops first (the hub loop releases its plumb-hub Leases), then the campaign (its
    // manager stops renewing), then the local Lease
    stop_tx.send_replace(true);
    match tokio::time::timeout(STOP_GRACE * 2, leading).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => {
            tracing::warn!(error = %format!("{e:#}"), "the loops stopped with an error")
        }
        Ok(Err(e)) => tracing::warn!(error = %e, "the loops panicked"),
        Err(_) => tracing::warn!("the loops did not stop in time"),
    }
    election.abort();
    let _ = election.await;
    if config.leader_elect {
        release(&client, &config).await;
    }
    result
}

/// The local Lease's gate: the seed's 15 s (or the test flag), renewed a third before expiry.
fn gate(config: &AgentConfig) -> LeaderGate {
    if !config.leader_elect {
        return LeaderGate::always_leader();
    }
    let duration = config.timing.agent_lease_duration.as_secs().max(2);
    LeaderGate::with_timing(duration, (duration / 3).max(1))
}

/// Campaigns for `plumb-agent` (forever without `--leader-elect`: the gate is always open).
async fn campaign(gate: LeaderGate, client: Client, config: AgentConfig) -> anyhow::Result<()> {
    if !config.leader_elect {
        return std::future::pending().await;
    }
    let lease = kube_leader_lease::Lease {
        name: AGENT_LEASE.to_owned(),
        namespace: config.namespace.clone(),
        identity: config.identity(),
        field_manager: FIELD_MANAGER.to_owned(),
    };
    gate.run(client, &lease, |held| {
        if held {
            tracing::info!(
                lease = AGENT_LEASE,
                "holding the local Lease: reporting (and campaigning for the hub)"
            );
        } else {
            tracing::info!(
                lease = AGENT_LEASE,
                "not holding the local Lease: standing by"
            );
        }
    })
    .await
}

/// Runs both loops each time the local Lease is held, and stops them when it is lost or when
/// `stop` turns true (then returns).
async fn lead_while_held(
    mut held: watch::Receiver<bool>,
    member: MemberContext,
    hub: HubContext,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    loop {
        tokio::select! {
            r = becomes(&mut held, true) => r?,
            () = stopped(&mut stop) => return Ok(()),
        }
        let running = Running::start(&member, &hub);
        let lost = tokio::select! {
            r = becomes(&mut held, false) => r,
            () = stopped(&mut stop) => {
                running.stop().await;
                return Ok(());
            }
        };
        running.stop().await;
        lost?;
    }
}

/// Until `held` is `value`.
async fn becomes(held: &mut watch::Receiver<bool>, value: bool) -> anyhow::Result<()> {
    held.wait_for(|h| *h == value)
        .await
        .map(|_| ())
        .map_err(|_| anyhow::anyhow!("the local Lease's gate is gone"))
}

/// Until `stop` turns true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await.map(|_| ());
}

/// Both loops of one leadership term.
struct Running {
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Running {
    fn start(member: &MemberContext, hub: &HubContext) -> Running {
        let (stop, stopped) = watch::channel(false);
        let tasks = vec![
            tokio::spawn(logged(
                "member",
                member::run(member.clone(), stopped.clone()),
            )),
            tokio::spawn(logged("hub", hub::run(hub.clone(), stopped))),
        ];
        Running { stop, tasks }
    }

    /// Asks both loops to stop and waits for them (at most [`STOP_GRACE`]).
    async fn stop(mut self) {
        self.stop.send_replace(true);
        for task in std::mem::take(&mut self.tasks) {
            match tokio::time::timeout(STOP_GRACE, task).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "a loop panicked"),
                Err(_) => tracing::warn!("a loop did not stop in time"),
            }
        }
    }
}

/// Runs one loop and logs at once why it ended early (e.g. the hub loop refusing a malformed
/// `--clusterprofile-provider-file`), while the other loop goes on.
async fn logged(name: &'static str, run: impl std::future::Future<Output = anyhow::Result<()>>) {
    if let Err(e) = run.await {
        tracing::error!(loop_ = name, error = %crate::one_line(&format!("{e:#}")), "loop stopped");
    }
}

impl Drop for Running {
    /// A term dropped without [`Running::stop`] (its task aborted) still tells the loops to
    /// stop, so they never run on without the Lease.
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

/// Releases the local Lease if this process holds it (a merge patch conditional on the
/// resourceVersion read), so the other replica need not wait for it to expire. The lease
/// manager, stopping, may release it at the same moment: a conflict is read again.
async fn release(client: &Client, config: &AgentConfig) {
    let api: Api<Lease> = Api::namespaced(client.clone(), &config.namespace);
    let identity = config.identity();
    let attempt = async {
        for _ in 0..3 {
            let lease = api.get(AGENT_LEASE).await?;
            let holder = lease.spec.as_ref().and_then(|s| s.holder_identity.clone());
            if holder.as_deref() != Some(identity.as_str()) {
                return Ok::<&str, kube::Error>("the local Lease is not held (released)");
            }
            let patch = serde_json::json!({
                "metadata": {"resourceVersion": lease.metadata.resource_version},
                "spec": {"holderIdentity": null, "acquireTime": null, "renewTime": null},
            });
            match api
                .patch(AGENT_LEASE, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return Ok("released the local Lease"),
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
        Ok("the local Lease kept changing; left to expire")
    };
    match tokio::time::timeout(STOP_GRACE, attempt).await {
        Ok(Ok(what)) => tracing::info!(lease = AGENT_LEASE, "{what}"),
        Ok(Err(e)) => {
            tracing::warn!(lease = AGENT_LEASE, error = %e, "could not release the local Lease")
        }
        Err(_) => tracing::warn!(lease = AGENT_LEASE, "releasing the local Lease timed out"),
    }
}

/// SIGTERM (the kubelet stopping the pod) or Ctrl-C.
pub async fn shutdown_signal() {
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
        () = term => {}
    }
}
