//! Leader election on the Lease `alfred.ome.io` (docs/design-runtime.md#leader-election).
//!
//! The gate and the campaign are the shared `kube-leader-lease` crate's ([`LeaderGate`]: a
//! cheap `is_leader()` checked before every write, closed at once on loss or when renewals stop
//! being confirmed); this module names alfred's Lease: `alfred.ome.io`, duration 15 s, renewed
//! 5 s before it expires, field manager `alfred`, holder `<pod>_<random UUID>`.
//!
//! Losing the lease does not end the process: the gate closes at once, `alfred_leader_status`
//! drops to 0, observation continues and the manager campaigns again. Only when the lease task
//! itself dies does [`LeaderGate::run`] return an error (fail-stop).

pub use kube_leader_lease::{LeaderGate, Lease, identity};

/// Lease name (leader election ID).
pub const LEASE_NAME: &str = "alfred.ome.io";
/// Lease duration (seconds).
pub const LEASE_DURATION_SECS: u64 = kube_leader_lease::DEFAULT_DURATION_SECS;
/// Renew this long before expiry (seconds): the renew deadline is 10 s.
pub const LEASE_GRACE_SECS: u64 = kube_leader_lease::DEFAULT_GRACE_SECS;
/// The field manager of the Lease's server-side applies.
pub const FIELD_MANAGER: &str = "alfred";

/// alfred's Lease in `namespace`, campaigned for by a fresh identity of `pod`.
pub fn lease(namespace: &str, pod: &str) -> Lease {
    Lease {
        name: LEASE_NAME.to_owned(),
        namespace: namespace.to_owned(),
        identity: identity(pod),
        field_manager: FIELD_MANAGER.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alfreds_lease_is_the_documented_one() {
        let l = lease("ome", "alfred-7f9c");
        assert_eq!(
            (
                l.name.as_str(),
                l.namespace.as_str(),
                l.field_manager.as_str()
            ),
            ("alfred.ome.io", "ome", "alfred")
        );
        assert!(l.identity.starts_with("alfred-7f9c_"), "{}", l.identity);
        let gate = LeaderGate::new();
        assert_eq!(
            (gate.duration_secs(), gate.grace_secs()),
            (LEASE_DURATION_SECS, LEASE_GRACE_SECS)
        );
        assert_eq!((LEASE_DURATION_SECS, LEASE_GRACE_SECS), (15, 5));
    }
}
