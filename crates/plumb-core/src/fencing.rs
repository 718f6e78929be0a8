//! Fencing: the floor a member's scaler serves to KEDA, and when it serves none.
//!
//! The hub writes a floor into a member's `status.intent`, but a deposed hub, or a second
//! hub of a fleet split in two, may still write one. The scaler therefore serves the floor
//! only while every check below passes, each against what the member itself holds now
//! (docs/plumb/design.md#fencing): auto mode, an unexpired intent, the intent's hub being the
//! holder of the member's own `plumb-hub` Lease, and that Lease unexpired by the scaler's
//! clock. It serves 0 (no influence on KEDA) otherwise, never an error.

use std::fmt;

use plumb_model::Intent;
use plumb_model::spec::Mode;
use utc_time::Timestamp;

use crate::quorum::LeaseRecord;

/// What the scaler serves for one (policy, cluster), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fence {
    /// Serve this floor (the intent's replicas, capped at `maxReplicas`).
    Served(u32),
    /// Serve 0, for this reason.
    Fenced(FenceReason),
}

/// Why no floor is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FenceReason {
    /// The policy is in shadow mode.
    Shadow,
    /// The member's copy has no `status.intent`.
    NoIntent,
    /// The intent has no `expires`, or it has passed.
    IntentExpired,
    /// The intent names no hub.
    NoHub,
    /// The member has no `plumb-hub` Lease, or nobody holds it.
    NoLeaseHolder,
    /// The intent's hub is not the Lease's holder.
    NotTheHolder {
        /// `status.intent.hub`.
        intent_hub: String,
        /// The Lease's `holderIdentity`.
        holder: String,
    },
    /// The Lease's `renewTime + leaseDurationSeconds` has passed (or it was never renewed).
    LeaseExpired,
}

impl fmt::Display for FenceReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FenceReason::Shadow => write!(f, "mode is shadow"),
            FenceReason::NoIntent => write!(f, "no status.intent"),
            FenceReason::IntentExpired => write!(f, "status.intent.expires has passed"),
            FenceReason::NoHub => write!(f, "status.intent.hub is empty"),
            FenceReason::NoLeaseHolder => write!(f, "the plumb-hub Lease has no holder"),
            FenceReason::NotTheHolder { intent_hub, holder } => write!(
                f,
                "status.intent.hub {intent_hub:?} does not hold the plumb-hub Lease (held by {holder:?})"
            ),
            FenceReason::LeaseExpired => write!(f, "the plumb-hub Lease has expired"),
        }
    }
}

/// Decides what the scaler serves: the intent's replicas only in auto mode, before
/// `intent.expires`, while `intent.hub` holds the member's own unexpired `plumb-hub` Lease;
/// capped at `max_replicas` (the member's current `clusters[].maxReplicas`, none = no cap).
pub fn fence(
    intent: Option<&Intent>,
    lease: Option<&LeaseRecord>,
    mode: Mode,
    max_replicas: Option<u32>,
    now: Timestamp,
) -> Fence {
    match check(intent, lease, mode, now) {
        Ok(replicas) => Fence::Served(max_replicas.map_or(replicas, |max| replicas.min(max))),
        Err(reason) => Fence::Fenced(reason),
    }
}

/// The floor served: [`fence`]'s replicas, or 0 whenever a check fails.
pub fn served_floor(
    intent: Option<&Intent>,
    lease: Option<&LeaseRecord>,
    mode: Mode,
    max_replicas: Option<u32>,
    now: Timestamp,
) -> u32 {
    match fence(intent, lease, mode, max_replicas, now) {
        Fence::Served(replicas) => replicas,
        Fence::Fenced(_) => 0,
    }
}

fn check(
    intent: Option<&Intent>,
    lease: Option<&LeaseRecord>,
    mode: Mode,
    now: Timestamp,
) -> Result<u32, FenceReason> {
    if mode != Mode::Auto {
        return Err(FenceReason::Shadow);
    }
    let intent = intent.ok_or(FenceReason::NoIntent)?;
    if intent.expires.is_none_or(|expires| now >= expires) {
        return Err(FenceReason::IntentExpired);
    }
    let intent_hub = intent
        .hub
        .as_deref()
        .filter(|h| !h.is_empty())
        .ok_or(FenceReason::NoHub)?;
    let lease = lease.ok_or(FenceReason::NoLeaseHolder)?;
    let holder = lease
        .holder
        .as_deref()
        .filter(|h| !h.is_empty())
        .ok_or(FenceReason::NoLeaseHolder)?;
    if holder != intent_hub {
        return Err(FenceReason::NotTheHolder {
            intent_hub: intent_hub.to_string(),
            holder: holder.to_string(),
        });
    }
    if lease.expires().is_none_or(|expires| now >= expires) {
        return Err(FenceReason::LeaseExpired);
    }
    Ok(intent.replicas)
}

#[cfg(test)]
mod tests;
