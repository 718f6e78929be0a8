//! `plumb scaler`: KEDA's external-push scaler for Plumb (docs/plumb/scaler.md).
//!
//! Each member runs it beside the agent. KEDA asks it, per ScaledObject, for one metric,
//! `plumb-floor-<policy>` with target 1, whose value is the replica floor the hub asked this
//! member to keep, served only while plumb-core's [`plumb_core::fencing`] allows it (auto mode,
//! unexpired intent, the intent's hub holding this member's unexpired `plumb-hub` Lease) and 0
//! otherwise. Since KEDA takes the maximum over a ScaledObject's triggers, the scaler can only
//! raise replicas.
//!
//! It answers from memory only: [`floor::FloorCache`] holds the member's AdaptivePolicy copies
//! and its `plumb-hub` Lease, fed by [`watch`] (kube-rs watchers), and every answer is the
//! fencing function of that cache and the clock's `now`.

pub mod clock;
pub mod floor;
pub mod proto;
pub mod request;
pub mod server;
pub mod service;
pub mod stream;
pub mod watch;
