//! The campaign's invariants, checked after every event from what the emulated fleet saw and
//! did, each written from the rules of docs/plumb/design.md (quorum, fencing, traffic, outcome
//! lines) rather than from plumb-core's code, and each with a unit test below that plants a
//! violation and sees it caught.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use plumb_core::hub::{DecisionLine, Effect, MemberInput, OutcomeLine};
use plumb_core::quorum::LeaseRecord;
use plumb_model::spec::Mode;
use plumb_model::{AdaptivePolicySpec, Intent, Timestamp};

/// The bound on clock skew between any member and true time: each member's clock is off by
/// at most this much (so two members differ by at most twice it), well under the 5 s between
/// the renew deadline and the lease duration (docs/plumb/design.md#quorum).
pub const SKEW_BOUND_MS: i64 = 2_000;
/// `leaseDurationSeconds` as the fleet writes it.
pub const LEASE_MS: i64 = 15_000;
/// A report older than this is stale (docs/plumb/design.md#reports).
pub const FRESH_FOR: Duration = Duration::from_secs(120);

/// The invariants' names, as the campaign prints them.
pub mod names {
    /// One holder per Lease term, at most one agent acting as hub at any instant, and no step
    /// by an agent that does not lead.
    pub const ONE_HUB: &str = "at most one hub per quorum term";
    /// A served floor passes every fencing check against the member's own objects and clock,
    /// and comes from a hub that wrote a Lease within the lease duration plus the skew bound.
    pub const FENCED: &str = "no floor served by a fenced intent";
    /// Served floors and written intents stay at or under the member's `maxReplicas`.
    pub const MAX_REPLICAS: &str = "every floor <= maxReplicas";
    /// Written weights are whole percents summing to 100, each within its bounds.
    pub const WEIGHTS: &str = "weights integers summing to 100 within bounds";
    /// Shadow mode writes no intent and no weight.
    pub const SHADOW: &str = "no intent or weight write in shadow mode";
    /// A floor is lowered only on a member whose report the step could use.
    pub const RELEASE: &str = "no release without a fresh report";
    /// Every decision that changed a floor or share gets its final outcome line.
    pub const LOST: &str = "nothing lost";
}

/// A broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Which one ([`names`]).
    pub invariant: &'static str,
    /// The campaign's time, milliseconds since the run began.
    pub at_ms: i64,
    /// What was seen.
    pub detail: String,
}

/// What a scaler served for one (member, policy), with what it decided from.
#[derive(Debug, Clone, Copy)]
pub struct Served<'a> {
    /// The member.
    pub member: &'a str,
    /// The policy key.
    pub policy: &'a str,
    /// The floor served (0: none).
    pub floor: u32,
    /// The member's `status.intent`.
    pub intent: Option<&'a Intent>,
    /// The member's own `plumb-hub` Lease.
    pub lease: Option<&'a LeaseRecord>,
    /// The member's copy's mode.
    pub mode: Mode,
    /// The member's copy's `maxReplicas` for itself.
    pub max_replicas: Option<u32>,
    /// The member's clock.
    pub member_now: Timestamp,
}

/// One hub step as the driver ran it.
#[derive(Debug, Clone, Copy)]
pub struct StepSeen<'a> {
    /// The policy key.
    pub policy: &'a str,
    /// The hub's identity.
    pub hub: &'a str,
    /// Whether its elector led when it stepped.
    pub leading: bool,
    /// The hub's copy of the spec.
    pub spec: &'a AdaptivePolicySpec,
    /// The step's member inputs.
    pub members: &'a BTreeMap<String, MemberInput>,
    /// The hub's clock.
    pub now: Timestamp,
    /// The step's effects.
    pub effects: &'a [Effect],
}

/// Checks the invariants from the campaign's observations.
#[derive(Debug, Default)]
pub struct Checker {
    now_ms: i64,
    terms: BTreeMap<u32, String>,
    last_lease_write: BTreeMap<String, i64>,
    decisions: BTreeMap<String, (String, i64)>,
    finals: BTreeSet<String>,
    deleted: BTreeSet<String>,
    /// Every violation seen, in order.
    pub violations: Vec<Violation>,
    /// How many checks ran.
    pub checks: u64,
    /// Outcome lines of decisions never logged (a hub stored the decision's tracking, then
    /// stopped before logging its line): harmless, counted.
    pub orphan_outcomes: u64,
    /// Followed decisions judged by [`Checker::finish`].
    pub judged: usize,
    /// Floors lowered, each judged against the step's report.
    pub releases: u64,
    /// Scaler answers above 0, each judged against the fence.
    pub floors_served: u64,
}

impl Checker {
    /// The campaign's time for what follows (milliseconds since the run began).
    pub fn set_time(&mut self, ms: i64) {
        self.now_ms = ms;
    }

    fn violate(&mut self, invariant: &'static str, detail: String) {
        self.violations.push(Violation {
            invariant,
            at_ms: self.now_ms,
            detail,
        });
    }

    /// A Lease write naming `holder` landed on some member now.
    pub fn lease_written(&mut self, holder: &str) {
        self.last_lease_write
            .insert(holder.to_string(), self.now_ms);
    }

    /// `holder` holds `term` on a majority of Leases, or its elector committed it.
    pub fn term_held(&mut self, term: u32, holder: &str) {
        self.checks += 1;
        match self.terms.get(&term) {
            Some(h) if h != holder => {
                let detail = format!("term {term} held by {h} and by {holder}");
                self.violate(names::ONE_HUB, detail);
            }
            Some(_) => {}
            None => {
                self.terms.insert(term, holder.to_string());
            }
        }
    }

    /// The agents that lead now, each by its own clock.
    pub fn leaders(&mut self, leaders: &[String]) {
        self.checks += 1;
        if leaders.len() > 1 {
            self.violate(
                names::ONE_HUB,
                format!(
                    "{} agents lead at once: {}",
                    leaders.len(),
                    leaders.join(", ")
                ),
            );
        }
    }

    /// A scaler's answer.
    pub fn served(&mut self, s: &Served<'_>) {
        self.checks += 1;
        if let Some(max) = s.max_replicas.filter(|m| s.floor > *m) {
            let detail = format!(
                "{} serves {} for {} above maxReplicas {max}",
                s.member, s.floor, s.policy
            );
            self.violate(names::MAX_REPLICAS, detail);
        }
        if s.floor == 0 {
            return;
        }
        self.floors_served += 1;
        if let Err(why) = self.fence_holds(s) {
            let detail = format!("{} serves {} for {}: {why}", s.member, s.floor, s.policy);
            self.violate(names::FENCED, detail);
        }
    }

    /// The fencing checks (docs/plumb/design.md#fencing), against the member's own objects and clock, and the fleet-wide
    /// bound: the intent's hub wrote a Lease within `LEASE_MS + 2 * SKEW_BOUND_MS`.
    fn fence_holds(&self, s: &Served<'_>) -> Result<(), String> {
        if s.mode != Mode::Auto {
            return Err("the copy is in shadow mode".into());
        }
        let intent = s.intent.ok_or("no intent")?;
        if s.floor > intent.replicas {
            return Err(format!("more than the intent's {}", intent.replicas));
        }
        if intent.expires.is_none_or(|e| s.member_now >= e) {
            return Err("the intent has expired".into());
        }
        let hub = intent
            .hub
            .as_deref()
            .filter(|h| !h.is_empty())
            .ok_or("no hub")?;
        let lease = s.lease.ok_or("no Lease")?;
        if lease.holder.as_deref() != Some(hub) {
            return Err(format!("{hub} does not hold the member's Lease"));
        }
        let expires = lease
            .renew_time
            .map(|t| t.plus(Duration::from_secs(u64::from(lease.lease_duration_seconds))));
        if expires.is_none_or(|e| s.member_now >= e) {
            return Err("the member's Lease has expired".into());
        }
        match self.last_lease_write.get(hub) {
            None => Err(format!("{hub} never wrote a Lease")),
            Some(&at) if self.now_ms >= at + LEASE_MS + 2 * SKEW_BOUND_MS => Err(format!(
                "{hub} last wrote a Lease {} ms ago",
                self.now_ms - at
            )),
            Some(_) => Ok(()),
        }
    }

    /// A hub step and its effects.
    pub fn step(&mut self, s: &StepSeen<'_>) {
        self.checks += 1;
        if !s.leading {
            self.violate(names::ONE_HUB, format!("{} stepped without leading", s.hub));
        }
        let shadow = s.spec.mode() != Mode::Auto;
        for effect in s.effects {
            match effect {
                Effect::WriteIntent {
                    cluster,
                    intent,
                    renewal,
                } => {
                    if shadow {
                        let detail = format!("{}: intent for {cluster} in shadow", s.policy);
                        self.violate(names::SHADOW, detail);
                    }
                    self.intent_effect(s, cluster, intent.as_ref(), *renewal);
                }
                Effect::WriteWeights { weights } => {
                    if shadow {
                        let detail = format!("{}: weights in shadow", s.policy);
                        self.violate(names::SHADOW, detail);
                    }
                    self.weights_effect(s, weights);
                }
                Effect::Event(_) | Effect::Metric(_) => {}
            }
        }
    }

    fn intent_effect(
        &mut self,
        s: &StepSeen<'_>,
        cluster: &str,
        intent: Option<&Intent>,
        renewal: bool,
    ) {
        let replicas = intent.map_or(0, |i| i.replicas);
        let max = cluster_spec(s.spec, cluster).map(|c| c.max_replicas.unwrap_or(0));
        if max.is_none_or(|m| i64::from(replicas) > m) {
            let detail = format!(
                "{}: intent of {replicas} for {cluster} (maxReplicas {max:?})",
                s.policy
            );
            self.violate(names::MAX_REPLICAS, detail);
        }
        let member = s.members.get(cluster);
        let before = member
            .and_then(|m| m.intent.as_ref())
            .map_or(0, |i| i.replicas);
        if !renewal && replicas < before {
            self.releases += 1;
        }
        if !renewal && replicas < before && !fresh(member, s.now) {
            let detail = format!(
                "{}: {cluster}'s floor {before} -> {replicas} without a fresh report",
                s.policy
            );
            self.violate(names::RELEASE, detail);
        }
    }

    fn weights_effect(&mut self, s: &StepSeen<'_>, weights: &BTreeMap<String, u32>) {
        let clusters = s.spec.clusters.as_deref().unwrap_or_default();
        let sum: u64 = weights.values().map(|w| u64::from(*w)).sum();
        let mut problems = Vec::new();
        if sum != 100 {
            problems.push(format!("sum {sum}"));
        }
        if weights.len() != clusters.len() {
            problems.push(format!(
                "{} shares for {} clusters",
                weights.len(),
                clusters.len()
            ));
        }
        for c in clusters {
            let name = c.name.as_deref().unwrap_or_default();
            let w = weights.get(name).map_or(-1, |w| i64::from(*w));
            if w < c.min_weight() || w > c.max_weight() {
                problems.push(format!(
                    "{name} {w} outside [{}, {}]",
                    c.min_weight(),
                    c.max_weight()
                ));
            }
        }
        if !problems.is_empty() {
            let detail = format!("{}: weights {weights:?}: {}", s.policy, problems.join("; "));
            self.violate(names::WEIGHTS, detail);
        }
    }

    /// An intent or weight write landed on a member's store, from a copy in `mode`.
    pub fn store_write(&mut self, policy: &str, what: &str, mode: Mode) {
        self.checks += 1;
        if mode != Mode::Auto {
            self.violate(names::SHADOW, format!("{policy}: {what} written in shadow"));
        }
    }

    /// A decision line was logged.
    pub fn decision(&mut self, d: &DecisionLine) {
        if plumb_core::hub::outcomes::followed(d) {
            self.decisions
                .insert(d.decision_id.clone(), (d.policy.clone(), self.now_ms));
        }
    }

    /// An outcome line was logged.
    pub fn outcome(&mut self, o: &OutcomeLine) {
        if !self.decisions.contains_key(&o.decision_id) {
            self.orphan_outcomes += 1;
        }
        if o.final_ {
            self.finals.insert(o.decision_id.clone());
        }
    }

    /// A policy was deleted: its decisions need no more lines.
    pub fn policy_deleted(&mut self, policy: &str) {
        self.deleted.insert(policy.to_string());
    }

    /// At the end of a run: every followed decision logged at or before `decided_by_ms` (of a
    /// policy not deleted) has its final outcome line.
    pub fn finish(&mut self, decided_by_ms: i64) {
        let judged: Vec<(&String, &(String, i64))> = self
            .decisions
            .iter()
            .filter(|(_, (policy, at))| *at <= decided_by_ms && !self.deleted.contains(policy))
            .collect();
        self.judged = judged.len();
        let lost: Vec<String> = judged
            .into_iter()
            .filter(|(id, _)| !self.finals.contains(*id))
            .map(|(id, (policy, at))| format!("{policy} {id} (decided at {at} ms)"))
            .collect();
        self.checks += 1;
        if !lost.is_empty() {
            let detail = format!("no final outcome line for {}", lost.join(", "));
            self.violate(names::LOST, detail);
        }
    }

    /// Followed decisions logged, and how many got their final line.
    pub fn followed_counts(&self) -> (usize, usize) {
        let finished = self
            .decisions
            .keys()
            .filter(|id| self.finals.contains(*id))
            .count();
        (self.decisions.len(), finished)
    }
}

fn cluster_spec<'a>(
    spec: &'a AdaptivePolicySpec,
    name: &str,
) -> Option<&'a plumb_model::spec::ClusterSpec> {
    spec.clusters
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|c| c.name.as_deref() == Some(name))
}

/// Whether the step had a usable report from the member: in sync and at most two minutes old.
fn fresh(member: Option<&MemberInput>, now: Timestamp) -> bool {
    member.is_some_and(|m| {
        m.report.as_ref().is_some_and(|r| {
            r.spec_hash == m.expected_hash && r.time.is_some_and(|t| now.since(t) <= FRESH_FOR)
        })
    })
}

#[cfg(test)]
mod tests;
