//! The floor source: what the scaler knows about this member (its AdaptivePolicy copies and
//! its `plumb-hub` Lease), held in memory and fed by the watchers, and the floor served for a
//! policy at a given `now`, which is plumb-core's fencing function of that knowledge.
//!
//! Readers take an `Arc` snapshot through a tokio `watch` channel: answering a request costs
//! one atomic load and a map lookup, and streams wake when the snapshot changes.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use plumb_core::fencing::{Fence, fence};
use plumb_core::quorum::LeaseRecord;
use plumb_model::spec::Mode;
use plumb_model::{AdaptivePolicy, Intent};
use tokio::sync::watch;
use utc_time::Timestamp;

/// A policy's identity: `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PolicyKey {
    /// The policy's namespace.
    pub namespace: String,
    /// The policy's name.
    pub name: String,
}

impl PolicyKey {
    /// The key of `namespace/name`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        PolicyKey {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for PolicyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// What of a policy copy fencing reads: the mode, the intent and this member's cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyCopy {
    /// `spec.mode` (default shadow).
    pub mode: Mode,
    /// `status.intent`.
    pub intent: Option<Intent>,
    /// This member's `clusters[].maxReplicas` (none = no cap).
    pub max_replicas: Option<u32>,
}

impl PolicyCopy {
    /// The parts of `policy` fencing reads, for the member `cluster` (`--cluster-name`).
    ///
    /// An empty `cluster` caps nothing. A named member the policy does not list, or whose
    /// entry lacks `maxReplicas`, is capped at 0: the hub never asks a non-member for a floor,
    /// and an invalid copy serves nothing rather than an uncapped floor.
    pub fn from_policy(policy: &AdaptivePolicy, cluster: &str) -> Self {
        let max_replicas = (!cluster.is_empty()).then(|| {
            policy
                .spec
                .clusters
                .iter()
                .flatten()
                .find(|c| c.name.as_deref() == Some(cluster))
                .and_then(|c| c.max_replicas)
                .map_or(0, |max| u32::try_from(max.max(0)).unwrap_or(u32::MAX))
        });
        PolicyCopy {
            mode: policy.spec.mode.unwrap_or(Mode::Shadow),
            intent: policy.status.as_ref().and_then(|s| s.intent.clone()),
            max_replicas,
        }
    }
}

/// One cached copy: readable, or refused with the reason (then it serves 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CachedPolicy {
    /// A copy fencing can read.
    Readable(PolicyCopy),
    /// A copy that could not be read as an AdaptivePolicy, and why (one line).
    Unreadable(String),
}

/// What the scaler serves for one policy now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// The floor (0 = no influence on KEDA).
    pub floor: u32,
    /// Why it is 0, when fencing or an unreadable copy made it so.
    pub why_zero: Option<String>,
}

/// Why no answer can be given for a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unanswerable {
    /// The watchers have not listed the policies and the Lease yet.
    NotSynced,
    /// No copy of the policy in this member.
    UnknownPolicy(PolicyKey),
}

/// Everything the scaler knows, at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The member's policy copies by key.
    pub policies: BTreeMap<PolicyKey, CachedPolicy>,
    /// The member's `plumb-hub` Lease (none when it does not exist).
    pub lease: Option<LeaseRecord>,
    /// The policy watcher has listed every policy once.
    pub policies_synced: bool,
    /// The Lease watcher has listed the Lease once.
    pub lease_synced: bool,
}

impl Snapshot {
    /// Both watchers have listed once, so an absent policy is really absent.
    pub fn synced(&self) -> bool {
        self.policies_synced && self.lease_synced
    }

    /// The floor served for `key` at `now`.
    pub fn served(&self, key: &PolicyKey, now: Timestamp) -> Result<Served, Unanswerable> {
        if !self.synced() {
            return Err(Unanswerable::NotSynced);
        }
        match self.policies.get(key) {
            None => Err(Unanswerable::UnknownPolicy(key.clone())),
            Some(CachedPolicy::Unreadable(why)) => Ok(Served {
                floor: 0,
                why_zero: Some(format!("the policy copy cannot be read: {why}")),
            }),
            Some(CachedPolicy::Readable(copy)) => {
                let fenced = fence(
                    copy.intent.as_ref(),
                    self.lease.as_ref(),
                    copy.mode,
                    copy.max_replicas,
                    now,
                );
                Ok(match fenced {
                    Fence::Served(floor) => Served {
                        floor,
                        why_zero: (floor == 0).then(|| "the floor is 0".to_owned()),
                    },
                    Fence::Fenced(reason) => Served {
                        floor: 0,
                        why_zero: Some(reason.to_string()),
                    },
                })
            }
        }
    }

    /// Whether KEDA should see `key` active at `now`: the floor is above 0. An unknown policy
    /// is not active (a stream opened for it pushes `false` once it is deleted).
    pub fn active(&self, key: &PolicyKey, now: Timestamp) -> Option<bool> {
        match self.served(key, now) {
            Ok(served) => Some(served.floor > 0),
            Err(Unanswerable::UnknownPolicy(_)) => Some(false),
            Err(Unanswerable::NotSynced) => None,
        }
    }

    /// The next instant after `now` at which the answer for `key` may change with time alone:
    /// the intent's `expires` or the Lease's expiry, whichever comes first.
    pub fn next_change(&self, key: &PolicyKey, now: Timestamp) -> Option<Timestamp> {
        let intent_expires = match self.policies.get(key) {
            Some(CachedPolicy::Readable(copy)) => copy.intent.as_ref().and_then(|i| i.expires),
            _ => None,
        };
        let lease_expires = self.lease.as_ref().and_then(LeaseRecord::expires);
        [intent_expires, lease_expires]
            .into_iter()
            .flatten()
            .filter(|t| *t > now)
            .min()
    }
}

/// The shared cache: one writer side (the watchers, or a test), many readers.
#[derive(Debug, Clone)]
pub struct FloorCache {
    tx: Arc<watch::Sender<Arc<Snapshot>>>,
}

impl Default for FloorCache {
    fn default() -> Self {
        Self::new()
    }
}

impl FloorCache {
    /// An empty cache, not yet synced.
    pub fn new() -> Self {
        FloorCache {
            tx: Arc::new(watch::Sender::new(Arc::new(Snapshot::default()))),
        }
    }

    /// A cache holding `snapshot`.
    pub fn with_snapshot(snapshot: Snapshot) -> Self {
        FloorCache {
            tx: Arc::new(watch::Sender::new(Arc::new(snapshot))),
        }
    }

    /// What the cache holds now.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.tx.borrow().clone()
    }

    /// A receiver that wakes on every change.
    pub fn subscribe(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.tx.subscribe()
    }

    /// Changes the snapshot; readers see the change at once, and streams wake if it differs.
    pub fn update(&self, change: impl FnOnce(&mut Snapshot)) {
        self.tx.send_if_modified(|current| {
            let mut next = Snapshot::clone(current);
            change(&mut next);
            let modified = next != **current;
            if modified {
                *current = Arc::new(next);
            }
            modified
        });
    }

    /// Puts or replaces one policy copy.
    pub fn put_policy(&self, key: PolicyKey, policy: CachedPolicy) {
        self.update(|s| {
            s.policies.insert(key, policy);
        });
    }

    /// Removes one policy copy.
    pub fn remove_policy(&self, key: &PolicyKey) {
        self.update(|s| {
            s.policies.remove(key);
        });
    }

    /// Replaces every policy copy (a watcher's relist) and marks the policies listed.
    pub fn replace_policies(&self, policies: BTreeMap<PolicyKey, CachedPolicy>) {
        self.update(|s| {
            s.policies = policies;
            s.policies_synced = true;
        });
    }

    /// Sets the member's `plumb-hub` Lease (none = deleted) and marks it listed.
    pub fn set_lease(&self, lease: Option<LeaseRecord>) {
        self.update(|s| {
            s.lease = lease;
            s.lease_synced = true;
        });
    }
}

#[cfg(test)]
mod tests;
