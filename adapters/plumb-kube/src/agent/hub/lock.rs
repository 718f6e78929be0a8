//! The quorum lock over the members' `plumb-hub` Leases (docs/plumb/design.md#quorum,
//! docs/plumb/agent.md#the-lock), carried out with real requests: every retry period, read
//! each voter's Lease (`coordination.k8s.io/v1` in Plumb's namespace; a 404 is an absent
//! Lease, any other failure or a timeout an unreachable voter), hand the views to
//! plumb-core's [`Elector`], and carry out the compare-and-swap writes it plans: a replace at
//! the `resourceVersion` read, or a create where the Lease was absent. A 409 (changed since
//! read, or created meanwhile) is a failed compare-and-swap; so is a timeout, even if the write
//! landed, as the fault campaign's driver counts it. Every request has its own timeout, so one
//! dead member cannot hold a round past the renew deadline. On stop, [`QuorumLock::release`]
//! clears the holder on every Lease naming this agent, at once (client-go's
//! `ReleaseOnCancel`). The own member's Lease is part of every hold ([`own`]): a hub whose
//! own API server does not answer stops renewing and steps down at the renew deadline.

pub mod own;

use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::PostParams;
use kube::{Api, Client};
use plumb_core::quorum::{
    Attempt, CasWrite, Elector, LeaseRecord, LeaseTiming, LeaseView, Precondition, VoterView, Wait,
    WriteOutcome, WritePlan,
};
use utc_time::Timestamp;

use super::members::Fleet;
use crate::agent::config::HUB_LEASE;
use own::{OwnMember, Skip};

/// What the hub step needs to know of the lock: whether, and until when, this agent leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Leadership {
    /// The term (`leaseTransitions`) this agent committed last, while it leads.
    pub term: Option<u32>,
    /// When it stops acting unless it renews: its last committed renewal plus the renew
    /// deadline.
    pub until: Option<Timestamp>,
}

impl Leadership {
    /// Whether this agent may act as the hub at `now`.
    pub fn leading(&self, now: Timestamp) -> bool {
        self.until.is_some_and(|u| now < u)
    }
}

/// Each Lease request's timeout: a quarter of the renew deadline, so a round of a read and a
/// write against a dead member still ends well within it.
pub fn request_timeout(timing: &LeaseTiming) -> Duration {
    (timing.renew_deadline / 4).max(Duration::from_millis(100))
}

/// The election of one agent.
#[derive(Debug)]
pub struct QuorumLock {
    elector: Elector,
    /// This agent's own member (its cluster name).
    own: String,
    /// The own-member rule's memory.
    own_member: OwnMember,
    /// The skip last logged, so a change of reason is logged once.
    last_skip: Option<Skip>,
    timing: LeaseTiming,
    namespace: String,
    timeout: Duration,
    leadership: Leadership,
    /// The wait last logged, so the log says each change once, not every retry.
    last_wait: Option<String>,
    /// Why each member's Lease could not be read last round (absent: it could), so a member
    /// going away or coming back is logged once.
    unreadable: BTreeMap<String, String>,
}

impl QuorumLock {
    /// The lock of the agent `identity` (`<cluster>/<pod>`, of the member `own`) over the
    /// Leases in `namespace`.
    pub fn new(identity: &str, own: &str, timing: LeaseTiming, namespace: &str) -> QuorumLock {
        QuorumLock {
            elector: Elector::new(identity, timing),
            own: own.to_owned(),
            own_member: OwnMember::default(),
            last_skip: None,
            timing,
            namespace: namespace.to_owned(),
            timeout: request_timeout(&timing),
            leadership: Leadership::default(),
            last_wait: None,
            unreadable: BTreeMap::new(),
        }
    }

    /// Where this agent stands.
    pub fn leadership(&self) -> Leadership {
        self.leadership
    }

    /// One round: read every voter's Lease, and write what the elector plans unless the
    /// own-member rule holds the round back ([`own`]). `now` is called for the read's time
    /// and again after the writes.
    pub async fn round(&mut self, fleet: &Fleet, now: impl Fn() -> Timestamp) -> Leadership {
        let views = self.read(fleet).await;
        let own_read = views
            .iter()
            .any(|v| v.member == self.own && v.view != LeaseView::Unreachable);
        let read_at = now();
        // The elector sees every read, written or not, so its expiry clocks keep time.
        let attempt = self.elector.on_read(views, read_at);
        let gate = self.own_member.may_write(own_read, read_at);
        self.note_skip(gate.err());
        match (attempt, gate) {
            (Attempt::Write(_), Err(_)) => {}
            (Attempt::Write(plan), Ok(())) => {
                let results = self.write(fleet, &plan).await;
                let outcome = plan.settle(&results);
                // The elector plans only records naming this agent: a committed write is a
                // committed hold (acquired or renewed) on the fleet, whatever this agent
                // makes of it.
                self.elector.on_write(&plan, &results, now());
                match outcome {
                    WriteOutcome::Committed { .. } => {
                        let own_landed = results.iter().any(|(m, ok)| *ok && *m == self.own);
                        if self.own_member.committed(own_landed) {
                            self.hold(&plan, fleet);
                        }
                    }
                    WriteOutcome::Failed(no) => {
                        self.note_wait(format!("the plumb-hub Lease write reached too few: {no}"));
                    }
                }
            }
            (Attempt::Wait(Wait::NoQuorum(no)), _) => self.note_wait(no.to_string()),
            (Attempt::Wait(Wait::HeldBy { holder, .. }), _) => {
                self.note_wait(format!("the hub is {holder}"));
            }
        }
        let at = now();
        if !self.leadership.leading(at) && self.leadership.until.is_some() {
            let benched = self.own_member.lapsed(at, self.timing.duration);
            tracing::warn!(
                identity = %self.elector.identity(),
                own_member_down = benched,
                "stopped leading the fleet: no renewal within the renew deadline"
            );
            self.leadership = Leadership::default();
        }
        self.leadership
    }

    /// A committed write that included the own member's Lease: this agent holds the lock
    /// until the record's renewal plus the renew deadline.
    fn hold(&mut self, plan: &WritePlan, fleet: &Fleet) {
        let held = Leadership {
            term: Some(plan.record.transitions),
            until: plan
                .record
                .renew_time
                .map(|t| t.plus(self.timing.renew_deadline)),
        };
        if held.term != self.leadership.term {
            tracing::info!(
                identity = %self.elector.identity(),
                term = plan.record.transitions,
                voters = fleet.voters.len(),
                "leading the fleet: this agent is the hub"
            );
        }
        self.leadership = held;
        self.last_wait = None;
    }

    /// Logs why the own-member rule holds rounds back, once per change of reason.
    fn note_skip(&mut self, skip: Option<Skip>) {
        let changed = match (&self.last_skip, &skip) {
            (Some(Skip::Benched { .. }), Some(Skip::Benched { .. })) => false,
            (a, b) => a != b,
        };
        if changed {
            let identity = self.elector.identity();
            match skip {
                Some(Skip::OwnUnreadable) if self.leadership.term.is_some() => tracing::warn!(
                    %identity,
                    member = %self.own,
                    "this member's API server does not answer: no renewal; stepping down at the renew deadline unless it answers"
                ),
                Some(Skip::OwnUnreadable) => tracing::warn!(
                    %identity,
                    member = %self.own,
                    "this member's API server does not answer: not campaigning until it does"
                ),
                Some(Skip::Benched { until }) => tracing::info!(
                    %identity,
                    %until,
                    "stepped down for this member's API server: not campaigning for one lease duration"
                ),
                None => {}
            }
            self.last_skip = skip;
        }
    }

    /// Logs a reason for not leading when it differs from the last one logged. No quorum is
    /// the seed's `<k> members reachable, need <N>`.
    fn note_wait(&mut self, why: String) {
        if self.last_wait.as_ref() != Some(&why) {
            if why.contains("members reachable, need") {
                tracing::warn!(identity = %self.elector.identity(), "no hub: {why}");
            } else {
                tracing::info!(identity = %self.elector.identity(), "{why}");
            }
            self.last_wait = Some(why);
        }
    }

    /// Every voter's view of its Lease, read at once. A member whose Lease stops (or
    /// starts again) being readable is logged once per change (a member without a client is
    /// the membership's to log).
    async fn read(&mut self, fleet: &Fleet) -> Vec<VoterView> {
        let this = &*self;
        let reads = fleet.voters.iter().map(|member| async move {
            match fleet.clients.get(member) {
                None => (VoterView::new(member.clone(), LeaseView::Unreachable), None),
                Some(client) => {
                    let (view, error) = this.read_one(client).await;
                    (VoterView::new(member.clone(), view), error)
                }
            }
        });
        let mut views = Vec::new();
        for (view, error) in join_all(reads).await {
            match error {
                Some(e) => {
                    if self.unreadable.get(&view.member) != Some(&e) {
                        tracing::warn!(identity = %self.elector.identity(), member = %view.member, "member unreachable: its plumb-hub Lease cannot be read: {e}");
                    }
                    self.unreadable.insert(view.member.clone(), e);
                }
                None => {
                    if self.unreadable.remove(&view.member).is_some() {
                        tracing::info!(identity = %self.elector.identity(), member = %view.member, "member reachable again");
                    }
                }
            }
            views.push(view);
        }
        views
    }

    /// A Lease's view, and why it could not be read.
    async fn read_one(&self, client: &Client) -> (LeaseView, Option<String>) {
        let api: Api<Lease> = Api::namespaced(client.clone(), &self.namespace);
        match tokio::time::timeout(self.timeout, api.get_opt(HUB_LEASE)).await {
            Ok(Ok(None)) => (LeaseView::Absent, None),
            Ok(Ok(Some(lease))) => (
                LeaseView::Present {
                    resource_version: lease.metadata.resource_version.clone().unwrap_or_default(),
                    record: plumb_scaler::watch::lease_record(&lease),
                },
                None,
            ),
            Ok(Err(e)) => (
                LeaseView::Unreachable,
                Some(error_line::one_line(&e.to_string())),
            ),
            Err(_) => (
                LeaseView::Unreachable,
                Some(format!("no answer within {:?}", self.timeout)),
            ),
        }
    }

    /// Carries out `plan`'s compare-and-swap writes at once; `(member, landed)` each.
    async fn write(&self, fleet: &Fleet, plan: &WritePlan) -> Vec<(String, bool)> {
        let writes = plan.writes.iter().map(|w| async move {
            let ok = match fleet.clients.get(&w.member) {
                None => false,
                Some(client) => self.write_one(client, w, &plan.record).await,
            };
            (w.member.clone(), ok)
        });
        join_all(writes).await
    }

    async fn write_one(&self, client: &Client, write: &CasWrite, record: &LeaseRecord) -> bool {
        let api: Api<Lease> = Api::namespaced(client.clone(), &self.namespace);
        let pp = PostParams::default();
        let rv = match &write.precondition {
            Precondition::Absent => None,
            Precondition::ResourceVersion(rv) => Some(rv.clone()),
        };
        let lease = lease_object(record, rv.clone());
        let call = async {
            match rv {
                None => api.create(&pp, &lease).await.map(drop),
                Some(_) => api.replace(HUB_LEASE, &pp, &lease).await.map(drop),
            }
        };
        match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                tracing::debug!(member = %write.member, error = %e, "plumb-hub Lease write failed");
                false
            }
            Err(_) => false,
        }
    }

    /// Clears the holder, at once, on every reachable Lease that names this agent (a
    /// compare-and-swap at the version read); the Lease keeps its term. Returns the members
    /// released.
    pub async fn release(&mut self, fleet: &Fleet, now: Timestamp) -> Vec<String> {
        let identity = self.elector.identity().to_owned();
        let this = &*self;
        let releases = fleet.clients.iter().map(|(member, client)| {
            let identity = identity.clone();
            async move {
                let (
                    LeaseView::Present {
                        resource_version,
                        record,
                    },
                    _,
                ) = this.read_one(client).await
                else {
                    return None;
                };
                if record.holder.as_deref() != Some(identity.as_str()) {
                    return None;
                }
                let released = LeaseRecord {
                    holder: None,
                    acquire_time: Some(now),
                    renew_time: Some(now),
                    lease_duration_seconds: 1,
                    transitions: record.transitions,
                };
                let write = CasWrite {
                    member: member.clone(),
                    precondition: Precondition::ResourceVersion(resource_version),
                };
                this.write_one(client, &write, &released)
                    .await
                    .then(|| member.clone())
            }
        });
        let released: Vec<String> = join_all(releases).await.into_iter().flatten().collect();
        if !released.is_empty() {
            tracing::info!(identity = %identity, members = ?released, "released the plumb-hub Leases");
        }
        self.leadership = Leadership::default();
        released
    }
}

/// The `plumb-hub` Lease holding `record`, at `resource_version` when replacing.
pub fn lease_object(record: &LeaseRecord, resource_version: Option<String>) -> Lease {
    let time = |t: Option<Timestamp>| {
        t.and_then(|t| {
            k8s_openapi::jiff::Timestamp::from_nanosecond(i128::from(t.unix_nanos())).ok()
        })
        .map(MicroTime)
    };
    Lease {
        metadata: ObjectMeta {
            name: Some(HUB_LEASE.to_owned()),
            resource_version,
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: record.holder.clone(),
            acquire_time: time(record.acquire_time),
            renew_time: time(record.renew_time),
            lease_duration_seconds: Some(
                i32::try_from(record.lease_duration_seconds).unwrap_or(i32::MAX),
            ),
            lease_transitions: Some(i32::try_from(record.transitions).unwrap_or(i32::MAX)),
            ..LeaseSpec::default()
        }),
    }
}

#[cfg(test)]
mod tests;
