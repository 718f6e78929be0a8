//! Leader election on the Lease `alfred.ome.io` (docs/design-runtime.md#leader-election).
//!
//! The election itself is kube-lease-manager's (server-side apply on the Lease, duration 15 s,
//! renewed 5 s before it expires). [`LeaderGate`] is what the rest of alfred sees: a cheap
//! `is_leader()` checked before every write, and a watch channel for the decision loop.
//!
//! Losing the lease does not end the process: the gate closes at once, `alfred_leader_status`
//! drops to 0, observation continues and the manager campaigns again. Only when the lease task
//! itself dies does [`LeaderGate::run`] return an error (fail-stop).
//!
//! Defence in depth: kube-lease-manager keeps its last answer while the API server is
//! unreachable, so the gate also closes when the last confirmed renewal is older than the lease
//! duration (the point at which another replica may take over).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use kube::Client;
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;

/// Lease name (leader election ID).
pub const LEASE_NAME: &str = "alfred.ome.io";
/// Lease duration (seconds).
pub const LEASE_DURATION_SECS: u64 = 15;
/// Renew this long before expiry (seconds): the renew deadline is 10 s.
pub const LEASE_GRACE_SECS: u64 = 5;

/// Whether this process may write.
#[derive(Clone)]
pub struct LeaderGate {
    held: Arc<AtomicBool>,
    /// Milliseconds since `origin` of the last confirmation (acquire or renewal), or -1.
    confirmed_ms: Arc<AtomicI64>,
    origin: Instant,
    /// Without leader election the gate is always open.
    always: bool,
    tx: watch::Sender<bool>,
}

impl LeaderGate {
    /// A gate that starts closed.
    pub fn new() -> LeaderGate {
        let (tx, _) = watch::channel(false);
        LeaderGate {
            held: Arc::new(AtomicBool::new(false)),
            confirmed_ms: Arc::new(AtomicI64::new(-1)),
            origin: Instant::now(),
            always: false,
            tx,
        }
    }

    /// `--leader-elect=false`: always the leader.
    pub fn always_leader() -> LeaderGate {
        let mut g = LeaderGate::new();
        g.always = true;
        g.held.store(true, Ordering::SeqCst);
        g.tx.send_replace(true);
        g
    }

    /// True while the lease is held and was confirmed within the lease duration.
    pub fn is_leader(&self) -> bool {
        if self.always {
            return true;
        }
        if !self.held.load(Ordering::SeqCst) {
            return false;
        }
        let confirmed = self.confirmed_ms.load(Ordering::SeqCst);
        if confirmed < 0 {
            return false;
        }
        let age_ms = self.now_ms() - confirmed;
        age_ms < i64::try_from(LEASE_DURATION_SECS * 1000).unwrap_or(i64::MAX)
    }

    /// Follows leadership changes.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.tx.subscribe()
    }

    fn now_ms(&self) -> i64 {
        i64::try_from(self.origin.elapsed().as_millis()).unwrap_or(i64::MAX)
    }

    /// Records the manager's answer (tests drive the gate through this too).
    pub fn set(&self, held: bool) {
        if held {
            self.confirmed_ms.store(self.now_ms(), Ordering::SeqCst);
        }
        self.held.store(held, Ordering::SeqCst);
        self.tx.send_if_modified(|v| {
            let changed = *v != held;
            *v = held;
            changed
        });
    }

    /// Marks a renewal seen on the Lease object (see [`run`](Self::run)).
    pub fn confirm(&self) {
        if self.held.load(Ordering::SeqCst) {
            self.confirmed_ms.store(self.now_ms(), Ordering::SeqCst);
        }
    }

    /// Campaigns for the lease until the lease machinery dies. `on_change` is called with every
    /// change of leadership (metrics, logs).
    pub async fn run(
        &self,
        client: Client,
        namespace: &str,
        identity: &str,
        on_change: impl Fn(bool) + Send + 'static,
    ) -> anyhow::Result<()> {
        let manager = LeaseManagerBuilder::new(client.clone(), LEASE_NAME)
            .with_namespace(namespace)
            .with_identity(identity)
            .with_duration(LEASE_DURATION_SECS)
            .with_grace(LEASE_GRACE_SECS)
            .with_field_manager("alfred")
            .build()
            .await?;
        let (mut rx, task) = manager.watch().await;
        // Renewals are invisible through the watch channel; follow the Lease object so a
        // holder that cannot renew closes its gate when the lease lapses.
        let confirmer = {
            let gate = self.clone();
            let api: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
                kube::Api::namespaced(client, namespace);
            let identity = identity.to_owned();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    if !gate.held.load(Ordering::SeqCst) {
                        continue;
                    }
                    match api.get(LEASE_NAME).await {
                        Ok(lease) => {
                            let spec = lease.spec.unwrap_or_default();
                            if spec.holder_identity.as_deref() == Some(identity.as_str()) {
                                let fresh = spec.renew_time.as_ref().is_some_and(|t| {
                                    let renewed = t.0;
                                    let now = jiff::Timestamp::now();
                                    now.duration_since(renewed).as_secs()
                                        < i64::try_from(LEASE_DURATION_SECS).unwrap_or(i64::MAX)
                                });
                                if fresh {
                                    gate.confirm();
                                }
                            } else {
                                tracing::warn!(
                                    "lease alfred.ome.io is held by another replica; stopping writes"
                                );
                                gate.held.store(false, Ordering::SeqCst);
                            }
                        }
                        Err(e) => tracing::debug!(error = %e, "lease read failed"),
                    }
                }
            })
        };
        let mut last = false;
        let result = loop {
            let held = *rx.borrow_and_update();
            if held != last {
                self.set(held);
                on_change(held);
                last = held;
            }
            if rx.changed().await.is_err() {
                break Err(anyhow::anyhow!("the lease manager stopped"));
            }
        };
        confirmer.abort();
        self.set(false);
        on_change(false);
        match task.await {
            Ok(Ok(_)) => result,
            Ok(Err(e)) => Err(anyhow::anyhow!("lease manager failed: {e}")),
            Err(e) => Err(anyhow::anyhow!("lease manager task failed: {e}")),
        }
    }
}

impl Default for LeaderGate {
    fn default() -> Self {
        Self::new()
    }
}

/// `<pod hostname>_<random UUID>` (docs/design-runtime.md#leader-election).
pub fn identity(pod_name: &str) -> String {
    format!("{pod_name}_{}", crate::run::apply::ids::uuid_v4())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_closes_at_once_on_loss() {
        let g = LeaderGate::new();
        assert!(!g.is_leader());
        let mut rx = g.subscribe();
        g.set(true);
        assert!(g.is_leader());
        assert!(*rx.borrow_and_update());
        g.set(false);
        assert!(!g.is_leader());
        assert!(rx.has_changed().unwrap());
        assert!(LeaderGate::always_leader().is_leader());
    }

    #[test]
    fn a_stale_confirmation_closes_the_gate() {
        let g = LeaderGate::new();
        g.set(true);
        g.confirmed_ms.store(
            g.now_ms() - i64::try_from(LEASE_DURATION_SECS * 1000).unwrap() - 1,
            Ordering::SeqCst,
        );
        assert!(!g.is_leader());
        g.confirm();
        assert!(g.is_leader());
    }
}
