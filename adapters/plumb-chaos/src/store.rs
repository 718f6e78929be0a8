//! One member's API server as the campaign models it: its copy of each policy (spec and
//! status with a `resourceVersion`), its `plumb-hub` Lease and the HTTPRoutes it hosts. Every
//! write is a compare-and-swap on the `resourceVersion` read (a changed object is a 409, as
//! kube-apiserver answers a stale update), and each call may meet an injected fault: 409, 422,
//! 500, or a timeout before or after the write landed.

use std::collections::BTreeMap;

use plumb_core::quorum::{LeaseRecord, Precondition};
use plumb_model::{AdaptivePolicySpec, FleetStatus, PolicyStatus, Timestamp};

use crate::rng::Rng;

/// The fault rates of one run, per API call (each drawn per run; a quarter of runs leave
/// each out).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiFaults {
    /// An injected 409 Conflict on a write.
    pub conflict: f64,
    /// An injected 422 Unprocessable on a write.
    pub invalid: f64,
    /// A 500 on any call.
    pub server_error: f64,
    /// A timeout before the write landed.
    pub timeout_lost: f64,
    /// A timeout after the write landed (the caller cannot tell).
    pub timeout_landed: f64,
}

impl ApiFaults {
    /// Draws a run's rates.
    pub fn draw(rng: &mut Rng) -> ApiFaults {
        let mut rate = |max: f64| {
            if rng.chance(0.25) {
                0.0
            } else {
                // whole per-mille steps up to `max`
                let permille = rng.range(0, 1000);
                max * f64::from(u32::try_from(permille).unwrap_or(0)) / 1000.0
            }
        };
        ApiFaults {
            conflict: rate(0.05),
            invalid: rate(0.02),
            server_error: rate(0.05),
            timeout_lost: rate(0.03),
            timeout_landed: rate(0.03),
        }
    }
}

/// How one call went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// Answered; the write (if any) landed.
    Ok,
    /// The write landed but the caller saw a timeout.
    LandedTimeout,
    /// Failed with this status (0 for a timeout before it landed); nothing changed.
    Failed(u16),
}

impl Call {
    /// Whether the write is on the server.
    pub fn landed(self) -> bool {
        matches!(self, Call::Ok | Call::LandedTimeout)
    }

    /// Whether the caller saw success.
    pub fn answered_ok(self) -> bool {
        self == Call::Ok
    }

    /// The error text a driver logs.
    pub fn error(self) -> String {
        match self {
            Call::Ok => "ok".into(),
            Call::LandedTimeout | Call::Failed(0) => "timeout".into(),
            Call::Failed(code) => format!("status {code}"),
        }
    }
}

/// Counts of injected faults, by kind.
pub type FaultCounts = BTreeMap<&'static str, u64>;

/// Draws the fault of one write call.
pub fn write_fault(rng: &mut Rng, faults: &ApiFaults, counts: &mut FaultCounts) -> Call {
    let draws = [
        (faults.conflict, "409", Call::Failed(409)),
        (faults.invalid, "422", Call::Failed(422)),
        (faults.server_error, "500", Call::Failed(500)),
        (faults.timeout_lost, "timeout (lost)", Call::Failed(0)),
        (
            faults.timeout_landed,
            "timeout (landed)",
            Call::LandedTimeout,
        ),
    ];
    for (p, name, call) in draws {
        if p > 0.0 && rng.chance(p) {
            *counts.entry(name).or_insert(0) += 1;
            return call;
        }
    }
    Call::Ok
}

/// Whether a read call fails (500 or timeout).
pub fn read_fails(rng: &mut Rng, faults: &ApiFaults, counts: &mut FaultCounts) -> bool {
    let p = faults.server_error + faults.timeout_lost;
    if p > 0.0 && rng.chance(p) {
        *counts.entry("read failed").or_insert(0) += 1;
        return true;
    }
    false
}

/// One member's copy of one policy.
#[derive(Debug, Clone)]
pub struct PolicyCopy {
    /// Its spec (the same on every copy in this campaign; shared, as it never changes).
    pub spec: std::rc::Rc<AdaptivePolicySpec>,
    /// The spec hash of each member's part of it (`member_spec_hash`, computed once per run:
    /// the spec never changes here). A member reports its own; the hub expects each one's.
    pub hashes: std::rc::Rc<std::collections::BTreeMap<String, String>>,
    /// Its status.
    pub status: PolicyStatus,
    /// Its `resourceVersion`.
    pub rv: u64,
    /// When the hub last wrote `status.fleet` here, by the hub's clock (the tie-break between
    /// copies with the same `lastStep`: an annotation in a real agent).
    pub fleet_written: Option<Timestamp>,
}

/// An HTTPRoute's backend weights and its `resourceVersion`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteCopy {
    /// Weight by cluster.
    pub weights: BTreeMap<String, u32>,
    /// Its `resourceVersion`.
    pub rv: u64,
}

/// One member's API server.
#[derive(Debug, Clone, Default)]
pub struct Store {
    /// The `plumb-hub` Lease and its `resourceVersion`.
    pub lease: Option<(u64, LeaseRecord)>,
    /// Policy copies by key `<namespace>/<name>`.
    pub policies: BTreeMap<String, PolicyCopy>,
    /// Routes by `<policy key>/<route name>`.
    pub routes: BTreeMap<String, RouteCopy>,
    next_rv: u64,
}

impl Store {
    /// A fresh `resourceVersion`.
    pub fn bump(&mut self) -> u64 {
        self.next_rv += 1;
        self.next_rv
    }

    /// The Lease's `resourceVersion` as a string (the quorum module's form).
    pub fn lease_rv(&self) -> Option<String> {
        self.lease.as_ref().map(|(rv, _)| rv.to_string())
    }

    /// A compare-and-swap write of the Lease: `Ok` when the precondition held.
    pub fn cas_lease(&mut self, pre: &Precondition, record: &LeaseRecord) -> Result<(), u16> {
        let holds = match (pre, &self.lease) {
            (Precondition::Absent, None) => true,
            (Precondition::ResourceVersion(rv), Some((current, _))) => *rv == current.to_string(),
            _ => false,
        };
        if !holds {
            return Err(409);
        }
        let rv = self.bump();
        self.lease = Some((rv, record.clone()));
        Ok(())
    }

    /// A compare-and-swap of a policy copy's status through `change`, at `rv` as read.
    pub fn cas_status(
        &mut self,
        policy: &str,
        rv: u64,
        change: impl FnOnce(&mut PolicyCopy),
    ) -> Result<(), u16> {
        let Some(copy) = self.policies.get(policy) else {
            return Err(404);
        };
        if copy.rv != rv {
            return Err(409);
        }
        let next = self.bump();
        if let Some(copy) = self.policies.get_mut(policy) {
            change(copy);
            copy.rv = next;
        }
        Ok(())
    }
}

/// Picks the most recent `status.fleet` among copies by plumb-core's rule (the latest
/// `lastStep`), ties going to the latest write.
pub fn most_recent_fleet<'a>(
    copies: impl IntoIterator<Item = &'a PolicyCopy>,
) -> Option<FleetStatus> {
    plumb_core::hub::most_recent_fleet(
        copies
            .into_iter()
            .filter_map(|c| c.status.fleet.as_ref().map(|f| (f, c.fleet_written))),
    )
    .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(holder: &str) -> LeaseRecord {
        LeaseRecord {
            holder: Some(holder.into()),
            acquire_time: None,
            renew_time: None,
            lease_duration_seconds: 15,
            transitions: 0,
        }
    }

    #[test]
    fn a_lease_write_at_a_changed_resource_version_is_a_conflict() {
        let mut s = Store::default();
        assert_eq!(s.cas_lease(&Precondition::Absent, &record("a")), Ok(()));
        assert_eq!(s.cas_lease(&Precondition::Absent, &record("b")), Err(409));
        let rv = s.lease_rv().unwrap_or_default();
        assert_eq!(
            s.cas_lease(&Precondition::ResourceVersion(rv.clone()), &record("b")),
            Ok(())
        );
        assert_eq!(
            s.cas_lease(&Precondition::ResourceVersion(rv), &record("c")),
            Err(409)
        );
        assert_eq!(s.lease.map(|(_, r)| r.holder), Some(Some("b".into())));
    }
}
