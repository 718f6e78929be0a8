//! The fleet's hub election as a pure state machine over every member's `plumb-hub` Lease.
//!
//! There is no central store: each member keeps its own copy of the Lease, and the hub is
//! whoever a majority of those copies name (docs/plumb/design.md#quorum). The adapter reads
//! every voter's Lease (or fails to reach it), hands the views in, and carries out the
//! compare-and-swap writes this module plans; time is an input. Every voter counts,
//! reachable or not, so a member cut off from the others can never elect itself.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use utc_time::Timestamp;

/// How long a Lease record holds after its last renewal (`leaseDurationSeconds`).
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How long a hub keeps acting without a successful renewal before it steps down.
pub const RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// How often a candidate or the hub tries again.
pub const RETRY_PERIOD: Duration = Duration::from_secs(2);

/// The election's clocks. Production uses [`LeaseTiming::default`] (15 s, 10 s, 2 s); tests
/// may shorten them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTiming {
    /// `leaseDurationSeconds` written into the record.
    pub duration: Duration,
    /// A hub that has not renewed for this long stops acting as the hub.
    pub renew_deadline: Duration,
    /// The cadence at which the driver calls [`Elector::on_read`].
    pub retry_period: Duration,
}

impl Default for LeaseTiming {
    fn default() -> Self {
        LeaseTiming {
            duration: LEASE_DURATION,
            renew_deadline: RENEW_DEADLINE,
            retry_period: RETRY_PERIOD,
        }
    }
}

/// A majority of `voters`: `floor(n/2) + 1` (a fleet of one is its own majority).
pub fn majority(voters: usize) -> usize {
    voters / 2 + 1
}

/// The contents of one `plumb-hub` Lease (`spec` of a `coordination.k8s.io/v1` Lease).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRecord {
    /// `holderIdentity`: `<cluster>/<pod>`, or none when nobody holds it.
    pub holder: Option<String>,
    /// `acquireTime`: when the current holder took it.
    pub acquire_time: Option<Timestamp>,
    /// `renewTime`: the holder's last renewal.
    pub renew_time: Option<Timestamp>,
    /// `leaseDurationSeconds`.
    pub lease_duration_seconds: u32,
    /// `leaseTransitions`: how many times the holder changed.
    pub transitions: u32,
}

impl LeaseRecord {
    /// When the record expires by the clock that reads it (`renewTime + leaseDurationSeconds`);
    /// none without a renewal time.
    pub fn expires(&self) -> Option<Timestamp> {
        self.renew_time
            .map(|t| t.plus(Duration::from_secs(u64::from(self.lease_duration_seconds))))
    }
}

/// One voter's Lease as the candidate read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseView {
    /// The member's API server did not answer.
    Unreachable,
    /// The member answered that it has no `plumb-hub` Lease yet.
    Absent,
    /// The Lease and the `resourceVersion` it was read at.
    Present {
        /// The `resourceVersion` the compare-and-swap write must match.
        resource_version: String,
        /// What the Lease says.
        record: LeaseRecord,
    },
}

/// A voter (a member of the fleet, the candidate itself included) and its Lease view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoterView {
    /// The member's name.
    pub member: String,
    /// What reading its Lease gave.
    pub view: LeaseView,
}

impl VoterView {
    /// A voter's view, for drivers and tests.
    pub fn new(member: impl Into<String>, view: LeaseView) -> Self {
        VoterView {
            member: member.into(),
            view,
        }
    }
}

/// Too few members answered for a majority: the agent's log line
/// `<k> members reachable, need <N>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoQuorum {
    /// Voters whose Lease could be read (or written, for a write).
    pub reachable: usize,
    /// The majority of all voters.
    pub need: usize,
}

impl fmt::Display for NoQuorum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} members reachable, need {}",
            self.reachable, self.need
        )
    }
}

impl std::error::Error for NoQuorum {}

/// A majority read: the record most Leases agree on, and the views it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumRead {
    /// The newest term's freshest record, or none when no reachable Lease names a holder.
    pub record: Option<LeaseRecord>,
    /// How many Leases name that holder in that term.
    pub votes: usize,
    /// Every voter's view, sorted by member name (the write plan's input).
    pub views: Vec<VoterView>,
}

impl QuorumRead {
    /// The current hub's identity, when some Lease names one.
    pub fn holder(&self) -> Option<&str> {
        self.record.as_ref().and_then(|r| r.holder.as_deref())
    }
}

/// Reads the quorum: the freshest record of the newest term — the highest
/// `leaseTransitions`, then the latest renewal, then the holder most Leases name, then the
/// smaller identity (so the result never depends on the input order). Naming simply the holder
/// most Leases name would let a deposed holder's record, still on most of one read's Leases,
/// outvote a newer term written on a bare majority, and two candidates would both hold the
/// quorum (docs/plumb/design.md#quorum). Fails when fewer than a majority of all voters
/// answered. A voter listed twice counts once.
pub fn read(views: Vec<VoterView>) -> Result<QuorumRead, NoQuorum> {
    let views = dedup_sorted(views);
    let reachable = views
        .iter()
        .filter(|v| v.view != LeaseView::Unreachable)
        .count();
    let need = majority(views.len());
    if reachable < need {
        return Err(NoQuorum { reachable, need });
    }
    let held: Vec<(&str, &LeaseRecord)> = views
        .iter()
        .filter_map(|v| match &v.view {
            LeaseView::Present { record, .. } => record
                .holder
                .as_deref()
                .filter(|h| !h.is_empty())
                .map(|h| (h, record)),
            _ => None,
        })
        .collect();
    let votes = |holder: &str, transitions: u32| {
        held.iter()
            .filter(|(h, r)| *h == holder && r.transitions == transitions)
            .count()
    };
    let best = held.iter().max_by(|(an, ar), (bn, br)| {
        ar.transitions
            .cmp(&br.transitions)
            .then(ar.renew_time.cmp(&br.renew_time))
            .then(votes(an, ar.transitions).cmp(&votes(bn, br.transitions)))
            .then(bn.cmp(an))
    });
    let (record, votes) = match best {
        Some((holder, record)) => (Some((*record).clone()), votes(holder, record.transitions)),
        None => (None, 0),
    };
    Ok(QuorumRead {
        record,
        votes,
        views,
    })
}

/// The highest `leaseTransitions` any reachable Lease shows (a new term goes above it).
fn newest_term(read: &QuorumRead) -> Option<u32> {
    read.views
        .iter()
        .filter_map(|v| match &v.view {
            LeaseView::Present { record, .. } => Some(record.transitions),
            _ => None,
        })
        .max()
}

fn dedup_sorted(mut views: Vec<VoterView>) -> Vec<VoterView> {
    views.sort_by(|a, b| a.member.cmp(&b.member));
    views.dedup_by(|later, earlier| later.member == earlier.member);
    views
}

/// What must still hold on a Lease for a write to land there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    /// Create the Lease; fails if it exists by now.
    Absent,
    /// Replace the Lease only at this `resourceVersion` (fails if it changed since read).
    ResourceVersion(String),
}

/// One compare-and-swap write of the new record to one voter's Lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CasWrite {
    /// The voter whose Lease is written.
    pub member: String,
    /// What must still be true there.
    pub precondition: Precondition,
}

/// A write of one record to every reachable Lease, each a compare-and-swap on what was read.
/// It takes effect only when a majority of all voters accepted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritePlan {
    /// The record to write.
    pub record: LeaseRecord,
    /// One write per reachable voter, sorted by member.
    pub writes: Vec<CasWrite>,
    /// How many voters there are (reachable or not).
    pub voters: usize,
}

/// Plans writing `record` over the Leases of `read`. Fails when the reachable Leases are
/// fewer than a majority, since such a write can never take effect.
pub fn plan_write(read: &QuorumRead, record: LeaseRecord) -> Result<WritePlan, NoQuorum> {
    let writes: Vec<CasWrite> = read
        .views
        .iter()
        .filter_map(|v| {
            let precondition = match &v.view {
                LeaseView::Unreachable => return None,
                LeaseView::Absent => Precondition::Absent,
                LeaseView::Present {
                    resource_version, ..
                } => Precondition::ResourceVersion(resource_version.clone()),
            };
            Some(CasWrite {
                member: v.member.clone(),
                precondition,
            })
        })
        .collect();
    let voters = read.views.len();
    let need = majority(voters);
    if writes.len() < need {
        return Err(NoQuorum {
            reachable: writes.len(),
            need,
        });
    }
    Ok(WritePlan {
        record,
        writes,
        voters,
    })
}

/// How a planned write ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// A majority of voters accepted the record.
    Committed {
        /// Leases written.
        accepted: usize,
    },
    /// Too few accepted; the record holds nowhere as far as the fleet is concerned.
    Failed(NoQuorum),
}

impl WritePlan {
    /// Settles the plan from the adapter's results (`true` = the compare-and-swap landed).
    /// Only members of the plan count, each once.
    pub fn settle(&self, results: &[(String, bool)]) -> WriteOutcome {
        let accepted = self
            .writes
            .iter()
            .filter(|w| results.iter().any(|(m, ok)| *ok && *m == w.member))
            .count();
        let need = majority(self.voters);
        if accepted >= need {
            WriteOutcome::Committed { accepted }
        } else {
            WriteOutcome::Failed(NoQuorum {
                reachable: accepted,
                need,
            })
        }
    }
}

/// What the candidate does after a read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Write this plan (acquire or renew), then call [`Elector::on_write`].
    Write(WritePlan),
    /// Nothing to write now.
    Wait(Wait),
}

/// Why the candidate does not write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wait {
    /// Too few voters answered.
    NoQuorum(NoQuorum),
    /// Another identity holds the Lease; by this candidate's clock it expires then.
    HeldBy {
        /// The current hub.
        holder: String,
        /// When, by this candidate's observation, the record expires.
        until: Timestamp,
    },
}

/// The record the candidate saw last, and when it first saw it that way.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Observed {
    record: Option<LeaseRecord>,
    at: Timestamp,
}

/// What each voter's Lease said when the candidate last read it (`None`: no Lease). A record
/// the candidate has not seen before restarts its expiry clock, not only a change of the
/// quorum's record: a record that landed on a minority (a failed acquisition of a newer term)
/// can be read as the quorum's while the live hub renews the older term on a majority, and a
/// clock that followed only that stale record would expire the live hub (fault campaign seed
/// 82926). Every renewal is such a new record. A missing Lease is no sign of anyone's life, a
/// voter that does not answer keeps what it said last, and a record first read on a voter but
/// seen before on another is nothing new, so neither reachability nor the order in which
/// voters answer restarts the clock.
type LastSeen = BTreeMap<String, Option<LeaseRecord>>;

/// Records what `views` say in `seen`; whether any answering voter shows a record the
/// candidate has not seen before (see [`LastSeen`]).
fn note_changes(seen: &mut LastSeen, views: &[VoterView]) -> bool {
    let mut changed = false;
    for v in views {
        let record = match &v.view {
            LeaseView::Unreachable => continue,
            LeaseView::Absent => None,
            LeaseView::Present { record, .. } => Some(record),
        };
        changed |= match (seen.get(&v.member), record) {
            (_, None) => false,
            (Some(Some(before)), Some(now)) => before != now,
            (_, Some(now)) => !seen.values().any(|r| r.as_ref() == Some(now)),
        };
        seen.insert(v.member.clone(), record.cloned());
    }
    changed
}

/// A leader-election loop in the manner of client-go's elector, over a quorum of Leases.
///
/// A candidate judges another holder's record expired by its own time of observing the last
/// change of any Lease (a record it had not seen), plus the record's duration, never by the
/// record's timestamps (they come from another clock). A hub that fails to renew for
/// `renew_deadline` stops leading.
#[derive(Debug, Clone)]
pub struct Elector {
    identity: String,
    timing: LeaseTiming,
    observed: Option<Observed>,
    last_seen: LastSeen,
    renewed_at: Option<Timestamp>,
    /// The record this candidate last committed on a majority (its term is
    /// `leaseTransitions`).
    committed: Option<LeaseRecord>,
    /// The write last planned was an acquisition (not a renewal).
    acquiring: bool,
    /// This candidate's last acquisition failed and it has not committed since: it waits a
    /// record out a little longer by its rank (see [`Elector::stagger`]).
    lost_acquisition: bool,
}

impl Elector {
    /// A candidate with this identity (`<cluster>/<pod>`).
    pub fn new(identity: impl Into<String>, timing: LeaseTiming) -> Self {
        Elector {
            identity: identity.into(),
            timing,
            observed: None,
            last_seen: LastSeen::new(),
            renewed_at: None,
            committed: None,
            acquiring: false,
            lost_acquisition: false,
        }
    }

    /// The candidate's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Whether this candidate may act as the hub at `now`: it committed a renewal less than
    /// the renew deadline ago.
    pub fn is_leading(&self, now: Timestamp) -> bool {
        self.renewed_at
            .is_some_and(|t| now < t.plus(self.timing.renew_deadline))
    }

    /// One round of the loop: the views of every voter's Lease, read at `now`.
    pub fn on_read(&mut self, views: Vec<VoterView>, now: Timestamp) -> Attempt {
        let read = match read(views) {
            Ok(read) => read,
            Err(no) => return Attempt::Wait(Wait::NoQuorum(no)),
        };
        let leases_changed = note_changes(&mut self.last_seen, &read.views);
        if leases_changed || self.observed.as_ref().map(|o| &o.record) != Some(&read.record) {
            self.observed = Some(Observed {
                record: read.record.clone(),
                at: now,
            });
        }
        let duration = whole_seconds(self.timing.duration);
        // Only a term this candidate committed is renewed. A record naming it that it never
        // committed (an acquisition that landed on a minority, or one from before a restart)
        // may have been read as the freshest of its term because another clock is behind,
        // while another candidate holds that term on a majority: renewing it would write over
        // a live hub. It is waited out like anyone else's record. Conversely, a term this
        // candidate committed is its own whatever record of that term reads as the freshest:
        // two majorities share a Lease, whose compare-and-swap lets one write of the term land,
        // so another holder's record of the same term is an acquisition that landed on a
        // minority (two candidates starting at once), and the hub renews over it rather than
        // wait it out (which left the fleet without a hub for a lease duration).
        let record = match (read.record.as_ref(), self.committed.as_ref()) {
            (Some(current), Some(mine)) if mine.transitions == current.transitions => LeaseRecord {
                renew_time: Some(now),
                lease_duration_seconds: duration,
                ..mine.clone()
            },
            (current, _) => {
                let stagger = self.stagger(&read.views);
                if let Some(wait) = self.held_elsewhere(current, stagger, now) {
                    return Attempt::Wait(wait);
                }
                LeaseRecord {
                    holder: Some(self.identity.clone()),
                    acquire_time: Some(now),
                    renew_time: Some(now),
                    lease_duration_seconds: duration,
                    transitions: newest_term(&read).map_or(0, |t| t.saturating_add(1)),
                }
            }
        };
        self.acquiring = self
            .committed
            .as_ref()
            .is_none_or(|c| c.transitions != record.transitions);
        match plan_write(&read, record) {
            Ok(plan) => Attempt::Write(plan),
            Err(no) => Attempt::Wait(Wait::NoQuorum(no)),
        }
    }

    /// How much longer than a lease duration this candidate waits a record out: nothing,
    /// unless its last acquisition failed; then one retry period per voter whose member name
    /// sorts before its own. Candidates that saw the same record expire at the same instant
    /// try at once, and with two of three members reachable each can win one Lease, neither a
    /// majority; their records then expire together again, so they could split again and
    /// again (the live fault test saw two splits in a row). Ranked by name, the retries go
    /// one after another: the first commits, the others see its record and wait. Only ever
    /// longer, so no safety property depends on it.
    fn stagger(&self, views: &[VoterView]) -> Duration {
        if !self.lost_acquisition {
            return Duration::ZERO;
        }
        let member = self.identity.split('/').next().unwrap_or_default();
        let rank = views.iter().filter(|v| v.member.as_str() < member).count();
        self.timing.retry_period * u32::try_from(rank).unwrap_or(u32::MAX)
    }

    /// Whether another identity's record still holds by this candidate's observation, its
    /// expiry pushed back by `stagger`.
    fn held_elsewhere(
        &self,
        current: Option<&LeaseRecord>,
        stagger: Duration,
        now: Timestamp,
    ) -> Option<Wait> {
        let current = current?;
        let holder = current.holder.as_deref().filter(|h| !h.is_empty())?;
        let observed_at = self.observed.as_ref().map(|o| o.at)?;
        let until = observed_at
            .plus(Duration::from_secs(u64::from(
                current.lease_duration_seconds,
            )))
            .plus(stagger);
        (until > now).then(|| Wait::HeldBy {
            holder: holder.to_string(),
            until,
        })
    }

    /// Settles a write planned by [`Elector::on_read`] from the adapter's per-Lease results.
    /// Returns whether this candidate now leads.
    pub fn on_write(
        &mut self,
        plan: &WritePlan,
        results: &[(String, bool)],
        now: Timestamp,
    ) -> bool {
        match plan.settle(results) {
            WriteOutcome::Committed { .. } => {
                self.observed = Some(Observed {
                    record: Some(plan.record.clone()),
                    at: now,
                });
                self.renewed_at = plan.record.renew_time;
                self.committed = Some(plan.record.clone());
                self.lost_acquisition = false;
            }
            WriteOutcome::Failed(_) => self.lost_acquisition |= self.acquiring,
        }
        self.is_leading(now)
    }
}

fn whole_seconds(d: Duration) -> u32 {
    u32::try_from(d.as_secs()).unwrap_or(u32::MAX).max(1)
}

#[cfg(test)]
mod tests;
