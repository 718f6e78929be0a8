//! The hub loop: members from ClusterProfiles (one client each), the quorum lock over their
//! `plumb-hub` Leases, and, while this agent holds it, the hub step of every policy
//! ([`driver::HubDriver`]) every `--hub-interval` or sooner when a member's report changes.
//!
//! Being built: `run` below is the contract the agent's lifecycle (`run.rs`) calls.

pub mod driver;

use std::collections::BTreeMap;

use crate::agent::{AgentConfig, AgentMetrics};

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
/// `plumb-hub` Lease it holds and returns.
pub async fn run(
    ctx: HubContext,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let _ = ctx;
    while !*stop.borrow_and_update() {
        if stop.changed().await.is_err() {
            break;
        }
    }
    Ok(())
}
