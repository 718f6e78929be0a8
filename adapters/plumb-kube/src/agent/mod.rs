//! `plumb agent`: one process per member cluster (two replicas, one elected by the local
//! `plumb-agent` Lease) that reports its cluster into its copies of every AdaptivePolicy and,
//! while a majority of the fleet's `plumb-hub` Leases name it, is the fleet's hub.
//!
//! The decisions are plumb-core's; this module only reads the API servers and Prometheus,
//! calls the pure functions with the time read once per pass, and carries out their effects:
//! - [`member`]: the member loop (`--interval`): watches, Prometheus instant queries, the
//!   report and the `Ready` condition patched into `status` (only what changed);
//! - [`hub`]: the hub loop (`--hub-interval`, sooner when a report changes): ClusterProfiles,
//!   one client per member, the quorum lock, the hub step, intents, `status.fleet`, Events,
//!   HTTPRoute weights and the decision log;
//! - [`metrics`]: the seed's metric set;
//! - [`config`]: what the command line resolves to.

pub mod config;
pub mod decision_log;
pub mod hub;
pub mod member;
pub mod metrics;
pub mod prometheus;
pub mod run;

pub use config::{AgentConfig, AgentTiming, DecisionLogTarget};
pub use metrics::AgentMetrics;
