//! Lease-based leader election for a Kubernetes controller with several replicas.
//!
//! The election itself is kube-lease-manager's (server-side apply on a `coordination.k8s.io/v1`
//! Lease, renewed [`LeaderGate::grace_secs`] before it expires). [`LeaderGate`] is what the rest
//! of a controller sees: a cheap [`LeaderGate::is_leader`] checked before every write, and a
//! watch channel ([`LeaderGate::subscribe`]) for the loop that acts only while leading.
//!
//! Losing the lease does not end the process: the gate closes at once and the manager campaigns
//! again. Only when the lease task itself dies does [`LeaderGate::run`] return an error, so the
//! caller can fail-stop.
//!
//! Defence in depth: kube-lease-manager keeps its last answer while the API server is
//! unreachable, so the gate also closes when the last confirmed renewal is older than the lease
//! duration (the point at which another replica may take over), and at once when the Lease
//! object names another holder.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> anyhow::Result<()> {
//! use kube_leader_lease::{LeaderGate, Lease, identity, pod_name};
//!
//! let gate = LeaderGate::new();
//! let lease = Lease {
//!     name: "my-controller.example.com".into(),
//!     namespace: "default".into(),
//!     identity: identity(&pod_name()),
//!     field_manager: "my-controller".into(),
//! };
//! let writer_gate = gate.clone(); // checked with `is_leader()` before every write
//! gate.run(client, &lease, |held| eprintln!("leading: {held}")).await?;
//! # drop(writer_gate);
//! # Ok(())
//! # }
//! ```
//!
//! The crate has no Kubernetes API version of its own: the final binary picks one through its
//! `k8s-openapi` version feature (k8s-openapi 0.29).

#![warn(missing_docs, unreachable_pub)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use kube::Client;
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;

/// The lease duration client-go's leader election uses by default (seconds).
pub const DEFAULT_DURATION_SECS: u64 = 15;
/// Renew this long before expiry (seconds): with [`DEFAULT_DURATION_SECS`], a renew deadline
/// of 10 s, client-go's default.
pub const DEFAULT_GRACE_SECS: u64 = 5;
/// How often the holder re-reads the Lease object to confirm its renewals.
const CONFIRM_EVERY: Duration = Duration::from_secs(2);

/// The Lease one campaign competes for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The Lease object's name (the leader election ID).
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// This replica's holder identity, unique per process (see [`identity`]).
    pub identity: String,
    /// The field manager of the server-side applies on the Lease.
    pub field_manager: String,
}

/// Whether this process may write. Cloning shares the state: every clone sees the same answer.
#[derive(Clone)]
pub struct LeaderGate {
    held: Arc<AtomicBool>,
    /// Milliseconds since `origin` of the last confirmation (acquire or renewal), or -1.
    confirmed_ms: Arc<AtomicI64>,
    origin: Instant,
    /// Without leader election the gate is always open.
    always: bool,
    duration_secs: u64,
    grace_secs: u64,
    tx: watch::Sender<bool>,
}

impl LeaderGate {
    /// A gate that starts closed, with the default lease duration and grace.
    pub fn new() -> LeaderGate {
        LeaderGate::with_timing(DEFAULT_DURATION_SECS, DEFAULT_GRACE_SECS)
    }

    /// A gate that starts closed, for a lease of `duration_secs` renewed `grace_secs` before it
    /// expires.
    pub fn with_timing(duration_secs: u64, grace_secs: u64) -> LeaderGate {
        let (tx, _) = watch::channel(false);
        LeaderGate {
            held: Arc::new(AtomicBool::new(false)),
            confirmed_ms: Arc::new(AtomicI64::new(-1)),
            origin: Instant::now(),
            always: false,
            duration_secs,
            grace_secs,
            tx,
        }
    }

    /// Leader election disabled: always the leader.
    pub fn always_leader() -> LeaderGate {
        let mut g = LeaderGate::new();
        g.always = true;
        g.held.store(true, Ordering::SeqCst);
        g.tx.send_replace(true);
        g
    }

    /// The lease duration (seconds).
    pub fn duration_secs(&self) -> u64 {
        self.duration_secs
    }

    /// How long before expiry the lease is renewed (seconds).
    pub fn grace_secs(&self) -> u64 {
        self.grace_secs
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
        age_ms < i64::try_from(self.duration_secs * 1000).unwrap_or(i64::MAX)
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

    /// Campaigns for `lease` until the lease machinery dies. `on_change` is called with every
    /// change of leadership (metrics, logs).
    pub async fn run(
        &self,
        client: Client,
        lease: &Lease,
        on_change: impl Fn(bool) + Send + 'static,
    ) -> anyhow::Result<()> {
        let manager = LeaseManagerBuilder::new(client.clone(), &lease.name)
            .with_namespace(&lease.namespace)
            .with_identity(&lease.identity)
            .with_duration(self.duration_secs)
            .with_grace(self.grace_secs)
            .with_field_manager(&lease.field_manager)
            .build()
            .await?;
        let (mut rx, task) = manager.watch().await;
        // Renewals are invisible through the watch channel; follow the Lease object so a
        // holder that cannot renew closes its gate when the lease lapses.
        let confirmer = tokio::spawn(self.clone().confirm_renewals(client, lease.clone()));
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

    /// Every [`CONFIRM_EVERY`] while held: a fresh renewal by this identity confirms the gate,
    /// another holder closes it.
    async fn confirm_renewals(self, client: Client, lease: Lease) {
        let api: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
            kube::Api::namespaced(client, &lease.namespace);
        let duration = i64::try_from(self.duration_secs).unwrap_or(i64::MAX);
        loop {
            tokio::time::sleep(CONFIRM_EVERY).await;
            if !self.held.load(Ordering::SeqCst) {
                continue;
            }
            match api.get(&lease.name).await {
                Ok(object) => {
                    let spec = object.spec.unwrap_or_default();
                    if spec.holder_identity.as_deref() == Some(lease.identity.as_str()) {
                        let fresh = spec.renew_time.as_ref().is_some_and(|t| {
                            let renewed = t.0;
                            let now = jiff::Timestamp::now();
                            now.duration_since(renewed).as_secs() < duration
                        });
                        if fresh {
                            self.confirm();
                        }
                    } else {
                        tracing::warn!(
                            "lease {} is held by another replica; stopping writes",
                            lease.name
                        );
                        self.held.store(false, Ordering::SeqCst);
                    }
                }
                Err(e) => tracing::debug!(error = %e, "lease read failed"),
            }
        }
    }
}

impl Default for LeaderGate {
    fn default() -> Self {
        Self::new()
    }
}

/// `<pod name>_<random UUID>`: unique per process, so a restarted pod never inherits its
/// predecessor's lease (client-go's convention).
pub fn identity(pod_name: &str) -> String {
    format!("{pod_name}_{}", uuid_v4())
}

/// `$POD_NAME`, else `$HOSTNAME`, else `/etc/hostname`, else `unknown`.
pub fn pod_name() -> String {
    std::env::var("POD_NAME")
        .ok()
        .filter(|n| !n.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|n| !n.is_empty()))
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|s| s.trim().to_owned())
                .filter(|n| !n.is_empty())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A fresh RFC 4122 version 4 UUID in lower-case canonical form.
fn uuid_v4() -> String {
    let mut b = [0u8; 16];
    if let Err(e) = getrandom::fill(&mut b) {
        // No entropy source is fatal for a holder identity: never reuse one.
        panic!("no random source for the lease identity: {e}");
    }
    format_v4(b)
}

/// Sets the version (4) and variant (RFC 4122) bits of 16 random bytes and prints them.
fn format_v4(mut b: [u8; 16]) -> String {
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
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
            g.now_ms() - i64::try_from(DEFAULT_DURATION_SECS * 1000).unwrap() - 1,
            Ordering::SeqCst,
        );
        assert!(!g.is_leader());
        g.confirm();
        assert!(g.is_leader());
    }

    #[test]
    fn a_shorter_lease_lapses_sooner() {
        let g = LeaderGate::with_timing(2, 1);
        g.set(true);
        g.confirmed_ms.store(g.now_ms() - 2_001, Ordering::SeqCst);
        assert!(!g.is_leader());
        assert_eq!((g.duration_secs(), g.grace_secs()), (2, 1));
    }

    #[test]
    fn identities_are_the_pod_name_and_a_canonical_v4_uuid() {
        assert_eq!(
            format_v4([0xff; 16]),
            "ffffffff-ffff-4fff-bfff-ffffffffffff"
        );
        assert_eq!(format_v4([0; 16]), "00000000-0000-4000-8000-000000000000");
        let a = identity("alfred-0");
        let uuid = a.strip_prefix("alfred-0_").unwrap();
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4");
        assert_ne!(a, identity("alfred-0"));
    }
}
