//! The hub loop: members from ClusterProfiles (one client each, [`members`], credentials
//! through KEP-5339 exec plugins, [`credentials`]), the quorum lock over their `plumb-hub`
//! Leases ([`lock`]), and, while this agent holds it, the hub step of every policy
//! ([`driver`]) every `--hub-interval` or sooner when a member's report changes
//! (docs/plumb/agent.md).
//!
//! Two loops run side by side in one task: the election (every retry period: refresh the
//! members, one lock round, publish [`Leadership`]) and the steps (driven by that leadership,
//! the hub interval and the member loop's report counter). The election never waits for a
//! step, so a slow step cannot let the Lease lapse; a step acts only while the leadership it
//! reads is unexpired.

pub mod credentials;
pub mod driver;
pub mod lock;
pub mod members;

use std::collections::BTreeMap;
use std::sync::Arc;

use plumb_scaler::clock::{Clock, SystemClock};
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};

use crate::agent::{AgentConfig, AgentMetrics};
pub use lock::Leadership;
use members::{Fleet, Membership};

/// Everything the hub loop needs from the agent.
#[derive(Clone)]
pub struct HubContext {
    /// The agent's configuration (identity, namespace, provider file, timings).
    pub config: AgentConfig,
    /// This member's own API server.
    pub client: kube::Client,
    /// The shared metrics.
    pub metrics: AgentMetrics,
    /// Bumped by the member loop whenever one of its reports changed: the hub plans sooner.
    pub reports_changed: tokio::sync::watch::Receiver<u64>,
}

impl std::fmt::Debug for HubContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubContext")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The members the hub reaches, by cluster name (this member included, under its own name).
pub type MemberClients = BTreeMap<String, kube::Client>;

/// Runs the hub loop until `stop` turns true; then releases this member's hold on every
/// `plumb-hub` Lease it holds and returns. A provider file that cannot be read is an error
/// (one line naming the file and field) before anything runs: guessing a fleet of one could
/// elect a second hub.
pub async fn run(ctx: HubContext, stop: watch::Receiver<bool>) -> anyhow::Result<()> {
    let config = &ctx.config;
    let providers = match &config.provider_file {
        Some(path) => Some(credentials::ProviderFile::read(path).map_err(anyhow::Error::msg)?),
        None => {
            tracing::info!("no --clusterprofile-provider-file: the fleet is this member alone");
            None
        }
    };
    let timing = config.timing.hub_lease;
    let membership = Membership::new(
        &config.cluster_name,
        ctx.client.clone(),
        &config.namespace,
        providers,
        lock::request_timeout(&timing),
    );
    let lock = lock::QuorumLock::new(
        &config.identity(),
        &config.cluster_name,
        timing,
        &config.namespace,
    );
    let (lead_tx, lead_rx) = watch::channel(Leadership::default());
    let (fleet_tx, fleet_rx) = watch::channel(Arc::new(Fleet::default()));
    tokio::join!(
        election(&ctx, membership, lock, lead_tx, fleet_tx, stop.clone()),
        steps(&ctx, lead_rx, fleet_rx, stop),
    );
    Ok(())
}

/// The election loop: every retry period, the members and one lock round; on stop, the
/// release.
async fn election(
    ctx: &HubContext,
    mut membership: Membership,
    mut lock: lock::QuorumLock,
    lead_tx: watch::Sender<Leadership>,
    fleet_tx: watch::Sender<Arc<Fleet>>,
    mut stop: watch::Receiver<bool>,
) {
    let clock = SystemClock;
    let mut tick = tokio::time::interval(ctx.config.timing.hub_lease.retry_period);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut waiting_logged = false;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => {}
        }
        if *stop.borrow() {
            break;
        }
        let Some(fleet) = membership.refresh().await else {
            if !waiting_logged {
                tracing::info!("waiting for the ClusterProfiles to be listed before the election");
                waiting_logged = true;
            }
            continue;
        };
        ctx.metrics
            .fleet_members
            .set(i64::try_from(fleet.voters.len()).unwrap_or(i64::MAX));
        let fleet = Arc::new(fleet);
        fleet_tx.send_replace(fleet.clone());
        let leadership = lock.round(&fleet, || clock.now()).await;
        ctx.metrics
            .hub_leading
            .set(i64::from(leadership.leading(clock.now())));
        lead_tx.send_replace(leadership);
    }
    lead_tx.send_replace(Leadership::default());
    ctx.metrics.hub_leading.set(0);
    let fleet = fleet_tx.borrow().clone();
    lock.release(&fleet, clock.now()).await;
}

/// The step loop: while leading, the driver's step of every policy every hub interval, or
/// sooner when a report changed; the term ends when leadership does.
async fn steps(
    ctx: &HubContext,
    mut lead_rx: watch::Receiver<Leadership>,
    fleet_rx: watch::Receiver<Arc<Fleet>>,
    mut stop: watch::Receiver<bool>,
) {
    let clock = SystemClock;
    let mut reports = ctx.reports_changed.clone();
    let mut reports_open = true;
    let mut term: Option<u32> = None;
    let mut due = true;
    let mut next = Instant::now();
    let mut hub = driver::HubDriver::new(&ctx.config, ctx.metrics.clone());
    loop {
        tokio::select! {
            _ = stop.changed() => {}
            r = reports.changed(), if reports_open => match r {
                Ok(()) => due = true,
                Err(_) => reports_open = false,
            },
            r = lead_rx.changed() => if r.is_err() { break },
            _ = tokio::time::sleep_until(next) => due = true,
        }
        if *stop.borrow() {
            break;
        }
        let now = clock.now();
        let leadership = *lead_rx.borrow();
        if !leadership.leading(now) || leadership.term != term {
            if term.is_some() {
                hub.end_term();
            }
            term = leadership.leading(now).then_some(leadership.term).flatten();
            due = term.is_some();
        }
        if term.is_some() && due {
            let fleet = fleet_rx.borrow().clone();
            let summary = hub.step_all(&fleet.clients, now).await;
            log_summary(&summary);
            due = false;
            next = Instant::now() + ctx.config.hub_interval;
        } else if term.is_none() {
            next = Instant::now() + ctx.config.hub_interval;
        }
    }
    if term.is_some() {
        hub.end_term();
    }
}

/// One line per pass that did something, one per error.
fn log_summary(summary: &driver::StepSummary) {
    for error in &summary.errors {
        tracing::warn!("hub step: {error}");
    }
    if summary.decisions > 0 || summary.writes > 0 || summary.waiting > 0 {
        tracing::info!(
            stepped = summary.stepped,
            waiting = summary.waiting,
            decisions = summary.decisions,
            outcomes = summary.outcomes,
            writes = summary.writes,
            "hub step"
        );
    }
}
