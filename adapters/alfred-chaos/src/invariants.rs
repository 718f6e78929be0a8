//! The invariants checked after every step of a run, each a pure function of what the
//! campaign recorded, so a test can plant a violation and see it caught.
//!
//! Write-level checks judge each write at the instant the API server received it
//! ([`WriteRecord`], [`LandedRequest`]); state-level checks judge the cluster and the
//! stored journal after each pass.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use alfred_dispatch::{Breaker, Journal};
use alfred_model::Timestamp;
use alfred_model::plan::{DRAIN_TAINT_KEY, DrainProtectionWire, PlanRecord};

use crate::apiserver::{
    LandedProtection, LandedRequest, ProtectionChange, StoredNode, StoredPod, StoredTaint,
    WriteRecord,
};

/// The observed snapshot a new request may be built on is at most this old
/// (docs/design-pass.md#dispatch-pass: `ObservationStale`).
pub const STALENESS_BOUND: Duration = Duration::from_secs(30);

/// A broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Which invariant.
    pub invariant: &'static str,
    /// What happened.
    pub detail: String,
}

fn fail(invariant: &'static str, detail: String) -> Result<(), Violation> {
    Err(Violation { invariant, detail })
}

/// No write reaches the server from a replica that does not hold the lease.
pub fn no_write_without_lease(w: &WriteRecord) -> Result<(), Violation> {
    if w.lease_held {
        return Ok(());
    }
    fail(
        "no-write-without-lease",
        format!("replica {} sent `{}` without the lease", w.replica, w.what),
    )
}

/// Never two unresolved alfred requests: in the cluster (alfred's request annotations and
/// the migrations running under alfred's UUIDs) and in the stored journal (non-terminal
/// entries). Under `drainPlans.overlapSteps`, `plan_steps` holds alfred's requests that were
/// drain-plan steps, each with its plan's node: several may be unresolved together when
/// one is such a step and every one is a step freeing the same node or a journal entry whose
/// request never landed leaving it (the plan may have ended, or its record gone with a reset
/// journal, since: alfred never cancels a request; docs/design-policies.md#overlapping-steps).
pub fn at_most_one_unresolved(
    cluster: &BTreeSet<String>,
    journal: Option<&Journal>,
    plan_steps: Option<&BTreeMap<String, String>>,
) -> Result<(), Violation> {
    // A request's plan node: a landed step's, or, for a journal entry whose request never
    // landed (saved `prepared` before its attempt, stalled since), the node it would leave.
    let node_of = |u: &str| -> Option<&str> {
        let steps = plan_steps?;
        steps.get(u).map(String::as_str).or_else(|| {
            journal?
                .entries
                .iter()
                .find(|e| e.uuid == u)
                .map(|e| e.from_node.as_str())
        })
    };
    let one_plans_steps = |uuids: &[&str]| {
        let nodes: BTreeSet<Option<&str>> = uuids.iter().map(|u| node_of(u)).collect();
        let landed = uuids
            .iter()
            .any(|u| plan_steps.is_some_and(|s| s.contains_key(*u)));
        landed && nodes.len() == 1 && !nodes.contains(&None)
    };
    let in_cluster: Vec<&str> = cluster.iter().map(String::as_str).collect();
    if cluster.len() > 1 && !one_plans_steps(&in_cluster) {
        return fail(
            "one-unresolved-request",
            format!(
                "{} unresolved requests in the cluster: {cluster:?}",
                cluster.len()
            ),
        );
    }
    if let Some(j) = journal {
        let open: Vec<&str> = j
            .entries
            .iter()
            .filter(|e| !e.phase.is_terminal())
            .map(|e| e.uuid.as_str())
            .collect();
        if open.len() > 1 && !one_plans_steps(&open) {
            return fail(
                "one-unresolved-request",
                format!("{} non-terminal journal entries: {open:?}", open.len()),
            );
        }
    }
    Ok(())
}

/// Never a request for an Instance that already has one unresolved.
pub fn no_second_request_for_an_instance(r: &LandedRequest) -> Result<(), Violation> {
    if r.same_instance.is_empty() {
        return Ok(());
    }
    fail(
        "one-request-per-instance",
        format!(
            "request {} for {} while {:?} unresolved on it",
            r.uuid, r.isvc, r.same_instance
        ),
    )
}

/// The in-flight and hourly caps, counting everyone's migrations: a request is written only
/// while no other request waits or runs anywhere (docs/design-pass.md#budget-check step 7, whatever
/// `maxInFlightMigrations` allows) and never beyond `maxMigrationsPerHour`.
pub fn within_caps(
    r: &LandedRequest,
    max_in_flight: u32,
    max_per_hour: u32,
) -> Result<(), Violation> {
    caps(r, max_in_flight, max_per_hour, false)
}

/// [`within_caps`] under `drainPlans.overlapSteps` (docs/design-policies.md#overlapping-steps):
/// a request may also be written while other requests wait or run when every one of them is
/// a step of one active plan of the journal the pass read and the request leaves that
/// plan's node (its next step); never beside anyone else's, never beyond
/// `maxInFlightMigrations` or `maxMigrationsPerHour`.
pub fn within_caps_overlapping(
    r: &LandedRequest,
    max_in_flight: u32,
    max_per_hour: u32,
) -> Result<(), Violation> {
    caps(r, max_in_flight, max_per_hour, true)
}

/// Whether every other request in flight is a step of the one active plan whose node `r`
/// leaves.
fn beside_its_own_plan_only(r: &LandedRequest) -> bool {
    let from = serde_json::from_str::<serde_json::Value>(&r.payload)
        .ok()
        .and_then(|v| v["from_node"].as_str().map(str::to_owned));
    let Some(from) = from else {
        return false;
    };
    r.context
        .journal_plans
        .iter()
        .filter(|p| p.active() && p.node == from)
        .any(|p| {
            r.in_flight_others
                .iter()
                .all(|u| p.steps.iter().any(|s| &s.request_uuid == u))
        })
}

fn caps(
    r: &LandedRequest,
    max_in_flight: u32,
    max_per_hour: u32,
    overlap: bool,
) -> Result<(), Violation> {
    let in_flight = r.in_flight_others.len() + 1;
    let beside_others = !(r.in_flight_others.is_empty() || overlap && beside_its_own_plan_only(r));
    if beside_others || in_flight > max_in_flight as usize {
        return fail(
            "in-flight-cap",
            format!(
                "request {} written while {:?} in flight (cap {max_in_flight})",
                r.uuid, r.in_flight_others
            ),
        );
    }
    if r.hourly > max_per_hour as usize {
        return fail(
            "hourly-cap",
            format!(
                "request {} is the {}th started within an hour (cap {max_per_hour})",
                r.uuid, r.hourly
            ),
        );
    }
    Ok(())
}

/// No new request built on an observed snapshot older than [`STALENESS_BOUND`] (or from
/// the future). A retry of a journal entry is built on fresh looks only.
pub fn built_on_a_fresh_snapshot(r: &LandedRequest) -> Result<(), Violation> {
    if r.context.journal_uuids.contains(&r.uuid) {
        return Ok(());
    }
    let (Some(now), Some(observed)) = (r.context.now, r.context.snapshot_observed_at) else {
        return fail(
            "staleness-bound",
            format!("request {} written by a pass with no snapshot", r.uuid),
        );
    };
    if observed > now || now.since(observed) > STALENESS_BOUND {
        return fail(
            "staleness-bound",
            format!(
                "request {} built on a snapshot observed at {observed} by a pass at {now}",
                r.uuid
            ),
        );
    }
    Ok(())
}

/// No request while the breaker is open.
pub fn no_request_while_the_breaker_is_open(r: &LandedRequest) -> Result<(), Violation> {
    if !r.context.breaker_open {
        return Ok(());
    }
    fail(
        "breaker",
        format!("request {} written while the breaker was open", r.uuid),
    )
}

/// The circuit breaker as docs/design.md#circuit-breaker states it, written independently of the
/// arbiter's: the last 10 terminal outcomes; after an outcome, with at least 4 held and
/// more than half failed, open for 60 minutes (a later trip only extends it) and forget the
/// outcomes. A new leader starts closed and empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReferenceBreaker {
    outcomes: VecDeque<bool>,
    open_until: Option<Timestamp>,
}

impl ReferenceBreaker {
    /// Records a terminal outcome at `now`.
    pub fn record(&mut self, success: bool, now: Timestamp) {
        self.outcomes.push_back(success);
        if self.outcomes.len() > 10 {
            self.outcomes.pop_front();
        }
        let failed = self.outcomes.iter().filter(|s| !**s).count();
        if self.outcomes.len() >= 4 && 2 * failed > self.outcomes.len() {
            let until = now.plus(Duration::from_secs(3600));
            self.open_until = Some(self.open_until.map_or(until, |u| u.max(until)));
            self.outcomes.clear();
        }
    }

    /// Open at `now`.
    pub fn is_open(&self, now: Timestamp) -> bool {
        self.open_until.is_some_and(|u| now < u)
    }
}

/// alfred's breaker opens and closes as the reference does.
pub fn breaker_as_specified(
    reference: &ReferenceBreaker,
    actual: &Breaker,
    now: Timestamp,
) -> Result<(), Violation> {
    if reference.is_open(now) == actual.is_open(now) && reference.open_until == actual.open_until()
    {
        return Ok(());
    }
    fail(
        "breaker",
        format!(
            "at {now} the breaker is {} until {:?}; the specification says {} until {:?}",
            if actual.is_open(now) {
                "open"
            } else {
                "closed"
            },
            actual.open_until(),
            if reference.is_open(now) {
                "open"
            } else {
                "closed"
            },
            reference.open_until
        ),
    )
}

/// Every journal alfred wrote reads back: it parses, and what it parses to is what its
/// re-encoding parses to.
pub fn journal_reads_back(text: &str) -> Result<(), Violation> {
    let j = match Journal::parse(text) {
        Ok(j) => j,
        Err(e) => {
            return fail(
                "journal-reads-back",
                format!("written journal unreadable: {e}"),
            );
        }
    };
    let again = j
        .to_state_json()
        .map_err(|e| e.to_string())
        .and_then(|t| Journal::parse(&t).map_err(|e| e.to_string()));
    match again {
        Ok(k) if k == j => Ok(()),
        Ok(_) => fail(
            "journal-reads-back",
            "written journal changes when re-encoded".into(),
        ),
        Err(e) => fail(
            "journal-reads-back",
            format!("written journal does not re-encode: {e}"),
        ),
    }
}

/// No request lands from a pass whose configuration is recommend-only.
pub fn no_request_in_recommend_only(r: &LandedRequest) -> Result<(), Violation> {
    if r.context.executing {
        return Ok(());
    }
    fail(
        "recommend-only-writes-no-request",
        format!(
            "request {} for {} written in recommend-only",
            r.uuid, r.isvc
        ),
    )
}

/// No request lands from a pass whose migration guard read unhealthy
/// (docs/design-pass.md#migration-guard).
pub fn no_request_without_a_healthy_guard(r: &LandedRequest) -> Result<(), Violation> {
    if r.context.guard_healthy {
        return Ok(());
    }
    fail(
        "no-request-without-the-guard",
        format!(
            "request {} for {} written with the guard unhealthy",
            r.uuid, r.isvc
        ),
    )
}

fn ours(taints: &[StoredTaint]) -> Vec<&StoredTaint> {
    taints.iter().filter(|t| t.key == DRAIN_TAINT_KEY).collect()
}

fn others(taints: &[StoredTaint]) -> Vec<&StoredTaint> {
    taints.iter().filter(|t| t.key != DRAIN_TAINT_KEY).collect()
}

/// The nomination or taint a protection write put in place, if it set one: (`pod` or
/// node, node or plan id).
fn set_by(p: &LandedProtection) -> Option<(&str, String)> {
    match &p.change {
        ProtectionChange::Nomination {
            pod,
            before,
            after: Some(after),
        } if before.as_ref() != Some(after) => Some((pod.as_str(), after.clone())),
        ProtectionChange::Taints {
            node,
            before,
            after,
        } => {
            let now = ours(after);
            let was = ours(before);
            (now.len() == 1 && !was.contains(&now[0]))
                .then(|| (node.as_str(), now[0].value.clone()))
        }
        ProtectionChange::Nomination { .. } => None,
    }
}

/// alfred sets `status.nominatedNodeName` only where it was unset, and clears only its own
/// value: the node of a plan (active or ended, in the stored journal or as the pass read
/// it) for that pod.
pub fn nomination_only_where_unset(p: &LandedProtection) -> Result<(), Violation> {
    let ProtectionChange::Nomination { pod, before, after } = &p.change else {
        return Ok(());
    };
    match (before, after) {
        (Some(b), Some(a)) if a != b => fail(
            "nomination-only-where-unset",
            format!("{pod}: nomination {b:?} overwritten with {a:?}"),
        ),
        (Some(b), None) => {
            let own = p
                .durable_plans
                .iter()
                .flatten()
                .chain(&p.context.journal_plans)
                .any(|r| r.pod == *pod && r.node == *b);
            if own {
                Ok(())
            } else {
                fail(
                    "nomination-only-where-unset",
                    format!("{pod}: nomination {b:?} cleared, and no plan of alfred's names it"),
                )
            }
        }
        _ => Ok(()),
    }
}

/// Every nomination or taint alfred sets names a plan the stored journal holds as active at
/// that instant, on that pod and node, with that protection; a taint write keeps every
/// other taint as it was and leaves at most one of alfred's key.
pub fn protection_names_an_active_plan(p: &LandedProtection) -> Result<(), Violation> {
    const NAME: &str = "protection-names-an-active-plan";
    if let ProtectionChange::Taints {
        node,
        before,
        after,
    } = &p.change
    {
        if others(before) != others(after) {
            return fail(
                NAME,
                format!("node {node}: taints {before:?} became {after:?} (others' changed)"),
            );
        }
        if ours(after).len() > 1 {
            return fail(
                NAME,
                format!("node {node}: several of alfred's taints {after:?}"),
            );
        }
        if ours(after).iter().any(|t| t.effect != "NoSchedule") {
            return fail(
                NAME,
                format!("node {node}: alfred's taint is not NoSchedule: {after:?}"),
            );
        }
    }
    let Some((object, value)) = set_by(p) else {
        return Ok(());
    };
    let plans = p.durable_plans.as_deref().unwrap_or_default();
    let named = plans
        .iter()
        .filter(|r| r.active())
        .any(|r| match &p.change {
            ProtectionChange::Nomination { .. } => {
                r.pod == object && r.node == value && r.protection == DrainProtectionWire::Nominate
            }
            ProtectionChange::Taints { .. } => {
                r.node == object && r.id == value && r.protection == DrainProtectionWire::Taint
            }
        });
    if named {
        return Ok(());
    }
    fail(
        NAME,
        format!(
            "{object}: {value:?} set while the stored journal holds no such active plan ({}; {:?})",
            if p.durable_plans.is_some() {
                "readable"
            } else {
                "missing or unreadable"
            },
            p.change
        ),
    )
}

/// With drain plans disabled or in recommend-only, alfred sets no nomination or taint
/// (removing its own is allowed: that is how plans end).
pub fn no_protection_while_plans_are_off(p: &LandedProtection) -> Result<(), Violation> {
    if p.context.plans_enabled && p.context.executing {
        return Ok(());
    }
    match set_by(p) {
        None => Ok(()),
        Some((object, value)) => fail(
            "no-protection-while-plans-are-off",
            format!(
                "{object}: {value:?} set with plans {} and {}",
                if p.context.plans_enabled { "on" } else { "off" },
                if p.context.executing {
                    "execute"
                } else {
                    "recommend-only"
                }
            ),
        ),
    }
}

/// After a clean pass of a leader (journal read, fresh snapshot, lease kept, every write
/// landed without a fault): every taint of alfred's names an active plan on its node, and
/// every nomination (only alfred nominates in the campaign) names an active `nominate` plan
/// for its pod and node. A nomination on a pod no plan of the stored journal names at all
/// is let be: its record went with a journal an operator reset, and a nomination carries
/// nothing that tells alfred's from the scheduler's.
pub fn no_leftover_protection(
    pods: &BTreeMap<String, StoredPod>,
    nodes: &BTreeMap<String, StoredNode>,
    plans: &[PlanRecord],
) -> Result<(), Violation> {
    const NAME: &str = "no-leftover-protection";
    for (name, n) in nodes {
        for t in ours(&n.taints) {
            let named = plans
                .iter()
                .any(|r| r.active() && r.node == *name && r.id == t.value);
            if !named {
                return fail(
                    NAME,
                    format!(
                        "node {name} keeps alfred's taint {:?}, no active plan names it",
                        t.value
                    ),
                );
            }
        }
    }
    for (pod, p) in pods {
        let Some(node) = &p.nominated else { continue };
        let known = plans.iter().any(|r| r.pod == *pod);
        let named = plans.iter().any(|r| {
            r.active()
                && r.pod == *pod
                && r.node == *node
                && r.protection == DrainProtectionWire::Nominate
        });
        if known && !named {
            return fail(
                NAME,
                format!("pod {pod} keeps nomination {node:?}, no active plan names it"),
            );
        }
    }
    Ok(())
}

/// A recommend-only pass writes nothing to Pods or Nodes: no nomination or taint set,
/// cleared or removed (a request is [`no_request_in_recommend_only`]'s).
pub fn no_protection_write_in_recommend_only(p: &LandedProtection) -> Result<(), Violation> {
    if p.context.executing {
        return Ok(());
    }
    fail(
        "recommend-only-writes-nothing",
        format!("{:?} written in recommend-only", p.change),
    )
}

/// Outside every maintenance window a new request is an emergency or node health's
/// (docs/design-policies.md#maintenance-windows); a drain plan's step is one only when its
/// pod makes it one. A retry of a request the journal already held is judged where it was
/// first made.
pub fn outside_windows_only_emergencies(r: &LandedRequest) -> Result<(), Violation> {
    let c = &r.context;
    if c.window_open || c.window_exempt.contains(&r.uuid) || c.journal_uuids.contains(&r.uuid) {
        return Ok(());
    }
    fail(
        "windows-hold-all-but-emergencies",
        format!(
            "request {} for {} written outside every window, not an emergency{}",
            r.uuid,
            r.isvc,
            if c.plan_steps.contains_key(&r.uuid) {
                " (a plan step)"
            } else {
                ""
            }
        ),
    )
}

/// No request is written from a pass whose snapshot had no executor.
pub fn no_request_without_an_executor(r: &LandedRequest) -> Result<(), Violation> {
    if r.context.executor_available {
        return Ok(());
    }
    fail(
        "no-request-without-an-executor",
        format!("request {} for {} written with no executor", r.uuid, r.isvc),
    )
}

/// No drain-plan step is requested for a node its pod could not use in the snapshot the
/// pass decided on (not ready, or tainted NoSchedule by someone else).
pub fn no_step_for_an_unusable_node(r: &LandedRequest) -> Result<(), Violation> {
    let Some(node) = r.context.plan_steps.get(&r.uuid) else {
        return Ok(());
    };
    if !r.context.unusable_nodes.contains(node) {
        return Ok(());
    }
    fail(
        "no-step-for-an-unusable-node",
        format!(
            "plan step {} for {} requested for node {node}, which the pod cannot use",
            r.uuid, r.isvc
        ),
    )
}

/// An ended plan never becomes active again: an active plan of the stored journal that
/// `ended` (plan id → when the stored journal last showed it ended) saw end, and that
/// started no later than that end, resumed. (A new plan reusing the id starts after it.)
pub fn ended_plans_never_resume(
    ended: &BTreeMap<String, Timestamp>,
    plans: &[PlanRecord],
) -> Result<(), Violation> {
    for p in plans.iter().filter(|p| p.active()) {
        if let Some(at) = ended.get(&p.id)
            && p.started_at <= *at
        {
            return fail(
                "ended-plans-never-resume",
                format!(
                    "plan {} ended at {at} is active again ({}, started {})",
                    p.id,
                    p.phase.as_str(),
                    p.started_at
                ),
            );
        }
    }
    Ok(())
}

/// After a clean execute pass (plans on), every active `nominate` plan's pending pod is
/// nominated to the plan's node: a nomination the scheduler dropped is put back in any
/// phase of the plan.
pub fn lost_nominations_put_back(
    pods: &BTreeMap<String, StoredPod>,
    plans: &[PlanRecord],
) -> Result<(), Violation> {
    for p in plans
        .iter()
        .filter(|p| p.active() && p.protection == DrainProtectionWire::Nominate)
    {
        let Some(pod) = pods.get(&p.pod) else {
            continue;
        };
        if pod.nominated.is_none() && (p.pod_uid.is_empty() || pod.uid == p.pod_uid) {
            return fail(
                "lost-nominations-put-back",
                format!(
                    "plan {} ({}) is active and its pod {} is nominated nowhere",
                    p.id,
                    p.phase.as_str(),
                    p.pod
                ),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::PassContext;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_unix_secs(1_795_996_800 + secs)
    }

    fn landed() -> LandedRequest {
        LandedRequest {
            uuid: "u1".into(),
            isvc: "t000001".into(),
            payload: String::new(),
            same_instance: vec![],
            in_flight_others: vec![],
            hourly: 1,
            context: PassContext {
                now: Some(t(100)),
                snapshot_observed_at: Some(t(95)),
                ..PassContext::default()
            },
        }
    }

    #[test]
    fn a_write_without_the_lease_is_caught() {
        let mut w = WriteRecord {
            replica: 1,
            lease_held: true,
            what: "PUT configmaps/alfred-dispatch-state".into(),
            landed: true,
            request: None,
            journal: None,
            protection: None,
        };
        assert!(no_write_without_lease(&w).is_ok());
        w.lease_held = false;
        let v = no_write_without_lease(&w).unwrap_err();
        assert_eq!(v.invariant, "no-write-without-lease");
        assert!(v.detail.contains("replica 1"), "{}", v.detail);
    }

    fn journal(phases: &[&str]) -> Journal {
        let entries: Vec<serde_json::Value> = phases
            .iter()
            .enumerate()
            .map(|(i, phase)| {
                let mut e = serde_json::json!({
                    "uuid": format!("6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5{i}"),
                    "workload": {"Namespace": "twin", "Name": format!("t{i}")},
                    "workloadUID": "u", "irName": "ir", "irUID": "iu", "component": "engine",
                    "instance": 0, "fromNode": "n0", "payload": "{}",
                    "sourceFingerprint": "f", "createdAt": "2026-11-30T00:00:00Z",
                    "phase": phase,
                });
                if *phase == "completed" {
                    e["completedAt"] = "2026-11-30T00:05:00Z".into();
                }
                e
            })
            .collect();
        let text = serde_json::json!({"version": "v1", "entries": entries}).to_string();
        Journal::parse(&text).expect("a valid journal")
    }

    #[test]
    fn two_unresolved_requests_are_caught_in_the_cluster_and_in_the_journal() {
        let one: BTreeSet<String> = ["a".to_owned()].into();
        let two: BTreeSet<String> = ["a".to_owned(), "b".to_owned()].into();
        let fine = journal(&["completed", "stalled"]);
        assert!(at_most_one_unresolved(&one, Some(&fine), None).is_ok());
        assert!(at_most_one_unresolved(&two, None, None).is_err());
        let bad = journal(&["submitted", "stalled"]);
        let v = at_most_one_unresolved(&one, Some(&bad), None).unwrap_err();
        assert!(v.detail.contains("2 non-terminal"), "{}", v.detail);
        // Under overlapping steps, the steps freeing one node may be unresolved together,
        // and nothing else.
        let uuids: Vec<String> = bad.entries.iter().map(|e| e.uuid.clone()).collect();
        let steps: BTreeSet<String> = uuids.iter().cloned().collect();
        let mut of_n01: BTreeMap<String, String> = uuids
            .iter()
            .map(|u| (u.clone(), "n01".to_owned()))
            .collect();
        assert!(at_most_one_unresolved(&steps, Some(&bad), Some(&of_n01)).is_ok());
        assert!(at_most_one_unresolved(&steps, Some(&bad), None).is_err());
        assert!(at_most_one_unresolved(&two, Some(&bad), Some(&of_n01)).is_err());
        if let Some(n) = of_n01.get_mut(&uuids[0]) {
            *n = "n02".into();
        }
        assert!(at_most_one_unresolved(&steps, None, Some(&of_n01)).is_err());
        // A step saved `prepared` beside a landed one leaving the same node (the journal
        // fixture's entries leave n0); entries that never landed alone are no plan's.
        let prepared = journal(&["submitted", "prepared"]);
        let landed = BTreeMap::from([(prepared.entries[0].uuid.clone(), "n0".to_owned())]);
        assert!(at_most_one_unresolved(&BTreeSet::new(), Some(&prepared), Some(&landed)).is_ok());
        let elsewhere = BTreeMap::from([(prepared.entries[0].uuid.clone(), "n7".to_owned())]);
        assert!(
            at_most_one_unresolved(&BTreeSet::new(), Some(&prepared), Some(&elsewhere)).is_err()
        );
        let two_prepared = journal(&["prepared", "prepared"]);
        let other = BTreeMap::from([("another".to_owned(), "n0".to_owned())]);
        assert!(
            at_most_one_unresolved(&BTreeSet::new(), Some(&two_prepared), Some(&other)).is_err()
        );
    }

    #[test]
    fn a_second_request_for_an_instance_is_caught() {
        let mut r = landed();
        assert!(no_second_request_for_an_instance(&r).is_ok());
        r.same_instance = vec!["u0".into()];
        assert_eq!(
            no_second_request_for_an_instance(&r).unwrap_err().invariant,
            "one-request-per-instance"
        );
    }

    #[test]
    fn a_request_beyond_either_cap_is_caught() {
        let mut r = landed();
        assert!(within_caps(&r, 1, 2).is_ok());
        r.in_flight_others = vec!["someone-else".into()];
        assert_eq!(
            within_caps(&r, 3, 2).unwrap_err().invariant,
            "in-flight-cap"
        );
        let mut r = landed();
        r.hourly = 3;
        assert_eq!(within_caps(&r, 1, 2).unwrap_err().invariant, "hourly-cap");
        assert!(within_caps(&r, 1, 3).is_ok());
    }

    #[test]
    fn with_overlapping_steps_only_the_plans_own_steps_may_be_in_flight() {
        use alfred_model::plan::{DrainProtectionWire, PlanPhase, PlanRecord, PlanStepRecord};
        let step = |uuid: &str| PlanStepRecord {
            workload: "twin/t000001".into(),
            component: alfred_model::snapshot::ComponentKind::Engine,
            instance: 0,
            gpus: 1,
            request_uuid: uuid.into(),
        };
        let mut r = landed();
        r.payload = r#"{"from_node":"n1"}"#.into();
        r.in_flight_others = vec!["u0".into()];
        r.context.journal_plans = vec![PlanRecord {
            benefit_milli_gpus: 0,
            cost_milli_gpus: 0,
            id: "dp-1".into(),
            pool: "H100".into(),
            node: "n1".into(),
            node_uid: "uid-n1".into(),
            pod: "twin/p".into(),
            pod_uid: "p".into(),
            gpus: 8,
            protection: DrainProtectionWire::Nominate,
            steps: vec![step("u0")],
            phase: PlanPhase::Draining,
            reason: None,
            started_at: t(0),
            deadline: t(3600),
            ended_at: None,
            pending_since: t(0),
        }];
        // Off, the plan's own step in flight is still a violation.
        assert_eq!(
            within_caps(&r, 3, 10).unwrap_err().invariant,
            "in-flight-cap"
        );
        // On, the plan's next step goes beside it, within maxInFlightMigrations.
        assert!(within_caps_overlapping(&r, 3, 10).is_ok());
        assert_eq!(
            within_caps_overlapping(&r, 1, 10).unwrap_err().invariant,
            "in-flight-cap"
        );
        // Beside anyone else's migration: caught.
        let mut other = r.clone();
        other.in_flight_others.push("someone-else".into());
        assert!(within_caps_overlapping(&other, 3, 10).is_err());
        // A request that does not leave the plan's node, or an ended plan: caught.
        let mut elsewhere = r.clone();
        elsewhere.payload = r#"{"from_node":"n2"}"#.into();
        assert!(within_caps_overlapping(&elsewhere, 3, 10).is_err());
        let mut ended = r.clone();
        ended.context.journal_plans[0].phase = PlanPhase::Abandoned;
        assert!(within_caps_overlapping(&ended, 3, 10).is_err());
        // The hourly cap counts every request.
        let mut hourly = r.clone();
        hourly.hourly = 11;
        assert_eq!(
            within_caps_overlapping(&hourly, 3, 10)
                .unwrap_err()
                .invariant,
            "hourly-cap"
        );
    }

    #[test]
    fn a_request_on_a_stale_snapshot_is_caught_unless_it_is_a_retry() {
        let mut r = landed();
        assert!(built_on_a_fresh_snapshot(&r).is_ok());
        r.context.snapshot_observed_at = Some(t(60));
        assert_eq!(
            built_on_a_fresh_snapshot(&r).unwrap_err().invariant,
            "staleness-bound"
        );
        r.context.snapshot_observed_at = Some(t(130));
        assert!(built_on_a_fresh_snapshot(&r).is_err(), "from the future");
        r.context.journal_uuids.insert("u1".into());
        assert!(built_on_a_fresh_snapshot(&r).is_ok());
    }

    #[test]
    fn a_request_while_the_breaker_is_open_is_caught() {
        let mut r = landed();
        assert!(no_request_while_the_breaker_is_open(&r).is_ok());
        r.context.breaker_open = true;
        assert!(no_request_while_the_breaker_is_open(&r).is_err());
    }

    #[test]
    fn the_reference_breaker_follows_the_specification() {
        let mut b = ReferenceBreaker::default();
        for ok in [true, false, false] {
            b.record(ok, t(0));
        }
        assert!(!b.is_open(t(0)), "three outcomes are too few");
        b.record(false, t(10));
        assert!(b.is_open(t(10)));
        assert!(b.is_open(t(10 + 3599)));
        assert!(!b.is_open(t(10 + 3600)), "closes after 60 minutes");
        // The window was cleared: four more are needed to trip again.
        for _ in 0..3 {
            b.record(false, t(20));
        }
        assert_eq!(b.open_until, Some(t(3610)));
    }

    #[test]
    fn a_breaker_that_differs_from_the_specification_is_caught() {
        let mut reference = ReferenceBreaker::default();
        let mut actual = Breaker::default();
        for ok in [false, false, true, false] {
            reference.record(ok, t(0));
            actual.record_outcome(ok, t(0));
        }
        assert!(breaker_as_specified(&reference, &actual, t(5)).is_ok());
        // A breaker that opened on three outcomes (or never) is caught.
        let mut early = Breaker::default();
        for _ in 0..3 {
            early.record_outcome(false, t(0));
        }
        let closed = ReferenceBreaker::default();
        assert!(breaker_as_specified(&closed, &early, t(5)).is_ok());
        assert!(breaker_as_specified(&reference, &Breaker::default(), t(5)).is_err());
        assert!(breaker_as_specified(&closed, &actual, t(5)).is_err());
    }

    #[test]
    fn a_journal_that_does_not_read_back_is_caught() {
        let good = journal(&["completed"]).to_state_json().unwrap();
        assert!(journal_reads_back(&good).is_ok());
        let v = journal_reads_back(&good[..good.len() / 2]).unwrap_err();
        assert_eq!(v.invariant, "journal-reads-back");
        assert!(journal_reads_back("{\"version\":\"v2\",\"entries\":[]}").is_err());
    }

    #[test]
    fn a_request_in_recommend_only_is_caught() {
        let mut r = landed();
        r.context.executing = true;
        assert!(no_request_in_recommend_only(&r).is_ok());
        r.context.executing = false;
        let v = no_request_in_recommend_only(&r).unwrap_err();
        assert_eq!(v.invariant, "recommend-only-writes-no-request");
    }

    #[test]
    fn a_request_with_the_guard_unhealthy_is_caught() {
        let mut r = landed();
        r.context.guard_healthy = true;
        assert!(no_request_without_a_healthy_guard(&r).is_ok());
        r.context.guard_healthy = false;
        let v = no_request_without_a_healthy_guard(&r).unwrap_err();
        assert_eq!(v.invariant, "no-request-without-the-guard");
    }

    const POD: &str = "twin/t3-engine-0";

    fn plan(id: &str, node: &str, protection: DrainProtectionWire, phase: &str) -> PlanRecord {
        serde_json::from_value(serde_json::json!({
            "id": id, "pool": "G", "node": node, "pod": POD, "gpus": 8,
            "protection": protection, "phase": phase,
            "startedAt": "2026-11-30T00:00:00Z", "deadline": "2026-11-30T01:00:00Z",
            "pendingSince": "2026-11-29T23:50:00Z",
        }))
        .expect("a plan record")
    }

    fn taint(key: &str, value: &str) -> StoredTaint {
        StoredTaint {
            key: key.into(),
            value: value.into(),
            effect: "NoSchedule".into(),
        }
    }

    fn protection(change: ProtectionChange, plans: Vec<PlanRecord>) -> LandedProtection {
        LandedProtection {
            change,
            durable_plans: Some(plans),
            context: PassContext {
                plans_enabled: true,
                executing: true,
                ..PassContext::default()
            },
        }
    }

    fn nomination(before: Option<&str>, after: Option<&str>) -> ProtectionChange {
        ProtectionChange::Nomination {
            pod: POD.into(),
            before: before.map(Into::into),
            after: after.map(Into::into),
        }
    }

    #[test]
    fn a_nomination_overwritten_or_a_foreign_one_cleared_is_caught() {
        let plans = vec![plan(
            "dp-1",
            "n01",
            DrainProtectionWire::Nominate,
            "protecting",
        )];
        let set = protection(nomination(None, Some("n01")), plans.clone());
        assert!(nomination_only_where_unset(&set).is_ok());
        let clear = protection(nomination(Some("n01"), None), plans.clone());
        assert!(nomination_only_where_unset(&clear).is_ok());
        let over = protection(nomination(Some("n02"), Some("n01")), plans.clone());
        let v = nomination_only_where_unset(&over).unwrap_err();
        assert_eq!(v.invariant, "nomination-only-where-unset");
        let foreign = protection(nomination(Some("n02"), None), plans);
        assert!(nomination_only_where_unset(&foreign).is_err());
    }

    #[test]
    fn a_protection_no_active_plan_names_is_caught() {
        let active = plan("dp-1", "n01", DrainProtectionWire::Nominate, "draining");
        let ended = plan("dp-1", "n01", DrainProtectionWire::Nominate, "abandoned");
        let tainting = plan("dp-2", "n01", DrainProtectionWire::Taint, "protecting");
        let ok = protection(nomination(None, Some("n01")), vec![active.clone()]);
        assert!(protection_names_an_active_plan(&ok).is_ok());
        for plans in [vec![], vec![ended], vec![tainting.clone()]] {
            let p = protection(nomination(None, Some("n01")), plans);
            let v = protection_names_an_active_plan(&p).unwrap_err();
            assert_eq!(v.invariant, "protection-names-an-active-plan");
        }
        let elsewhere = protection(nomination(None, Some("n02")), vec![active]);
        assert!(protection_names_an_active_plan(&elsewhere).is_err());
        let mut unreadable = protection(nomination(None, Some("n01")), vec![]);
        unreadable.durable_plans = None;
        assert!(protection_names_an_active_plan(&unreadable).is_err());

        let other = taint("example.com/gpu", "bad");
        let taints = |before: Vec<StoredTaint>, after: Vec<StoredTaint>| ProtectionChange::Taints {
            node: "n01".into(),
            before,
            after,
        };
        let good = taints(
            vec![other.clone()],
            vec![other.clone(), taint(DRAIN_TAINT_KEY, "dp-2")],
        );
        assert!(
            protection_names_an_active_plan(&protection(good.clone(), vec![tainting.clone()]))
                .is_ok()
        );
        assert!(protection_names_an_active_plan(&protection(good, vec![])).is_err());
        let wrong_plan = taints(vec![], vec![taint(DRAIN_TAINT_KEY, "dp-9")]);
        assert!(
            protection_names_an_active_plan(&protection(wrong_plan, vec![tainting.clone()]))
                .is_err()
        );
        let dropped_other = taints(vec![other.clone()], vec![taint(DRAIN_TAINT_KEY, "dp-2")]);
        assert!(
            protection_names_an_active_plan(&protection(dropped_other, vec![tainting.clone()]))
                .is_err()
        );
        let two = taints(
            vec![],
            vec![
                taint(DRAIN_TAINT_KEY, "dp-2"),
                taint(DRAIN_TAINT_KEY, "dp-3"),
            ],
        );
        assert!(protection_names_an_active_plan(&protection(two, vec![tainting.clone()])).is_err());
        let mut soft = taint(DRAIN_TAINT_KEY, "dp-2");
        soft.effect = "PreferNoSchedule".into();
        let soft = taints(vec![], vec![soft]);
        assert!(
            protection_names_an_active_plan(&protection(soft, vec![tainting.clone()])).is_err()
        );
        let removed = taints(
            vec![other.clone(), taint(DRAIN_TAINT_KEY, "dp-7")],
            vec![other],
        );
        assert!(protection_names_an_active_plan(&protection(removed, vec![])).is_ok());
    }

    #[test]
    fn a_protection_set_with_plans_off_or_in_recommend_only_is_caught() {
        let plans = vec![plan(
            "dp-1",
            "n01",
            DrainProtectionWire::Nominate,
            "protecting",
        )];
        let mut p = protection(nomination(None, Some("n01")), plans.clone());
        assert!(no_protection_while_plans_are_off(&p).is_ok());
        p.context.plans_enabled = false;
        let v = no_protection_while_plans_are_off(&p).unwrap_err();
        assert_eq!(v.invariant, "no-protection-while-plans-are-off");
        p.context.plans_enabled = true;
        p.context.executing = false;
        assert!(no_protection_while_plans_are_off(&p).is_err());
        let mut clear = protection(nomination(Some("n01"), None), plans);
        clear.context.executing = false;
        assert!(no_protection_while_plans_are_off(&clear).is_ok());
    }

    #[test]
    fn a_leftover_nomination_or_taint_is_caught() {
        let pod = |nominated: Option<&str>| {
            BTreeMap::from([(
                POD.to_owned(),
                StoredPod {
                    uid: "u".into(),
                    rv: 1,
                    nominated: nominated.map(Into::into),
                },
            )])
        };
        let node = |taints: Vec<StoredTaint>| {
            BTreeMap::from([(
                "n01".to_owned(),
                StoredNode {
                    uid: "un".into(),
                    rv: 1,
                    taints,
                },
            )])
        };
        let active = plan("dp-1", "n01", DrainProtectionWire::Nominate, "handoff");
        let ended = plan("dp-1", "n01", DrainProtectionWire::Nominate, "completed");
        let tainting = plan("dp-2", "n01", DrainProtectionWire::Taint, "draining");
        let none = node(vec![taint("example.com/gpu", "bad")]);
        assert!(no_leftover_protection(&pod(Some("n01")), &none, &[active]).is_ok());
        let v = no_leftover_protection(&pod(Some("n01")), &none, std::slice::from_ref(&ended))
            .unwrap_err();
        assert_eq!(v.invariant, "no-leftover-protection");
        // A nomination on a pod no plan names at all (its record lost with a reset journal).
        assert!(no_leftover_protection(&pod(Some("n01")), &none, &[]).is_ok());
        let tainted = node(vec![taint(DRAIN_TAINT_KEY, "dp-2")]);
        assert!(
            no_leftover_protection(&pod(None), &tainted, std::slice::from_ref(&tainting)).is_ok()
        );
        assert!(no_leftover_protection(&pod(None), &tainted, &[ended]).is_err());
        assert!(no_leftover_protection(&pod(None), &tainted, &[]).is_err());
    }

    #[test]
    fn a_protection_write_of_any_kind_in_recommend_only_is_caught() {
        let mut p = protection(nomination(Some("n01"), None), vec![]);
        assert!(no_protection_write_in_recommend_only(&p).is_ok());
        p.context.executing = false;
        let v = no_protection_write_in_recommend_only(&p).unwrap_err();
        assert_eq!(v.invariant, "recommend-only-writes-nothing");
        p.change = ProtectionChange::Taints {
            node: "n01".into(),
            before: vec![taint(DRAIN_TAINT_KEY, "dp-1")],
            after: vec![],
        };
        assert!(no_protection_write_in_recommend_only(&p).is_err());
    }

    #[test]
    fn a_request_outside_the_windows_that_is_no_emergency_is_caught() {
        let mut r = landed();
        r.context.window_open = true;
        assert!(outside_windows_only_emergencies(&r).is_ok());
        r.context.window_open = false;
        r.context.plan_steps.insert("u1".into(), "n01".into());
        let v = outside_windows_only_emergencies(&r).unwrap_err();
        assert_eq!(v.invariant, "windows-hold-all-but-emergencies");
        assert!(v.detail.ends_with("(a plan step)"), "{}", v.detail);
        // An emergency, node health's, or a retry.
        r.context.window_exempt.insert("u1".into());
        assert!(outside_windows_only_emergencies(&r).is_ok());
        r.context.window_exempt.clear();
        r.context.journal_uuids.insert("u1".into());
        assert!(outside_windows_only_emergencies(&r).is_ok());
    }

    #[test]
    fn a_request_without_an_executor_is_caught() {
        let mut r = landed();
        r.context.executor_available = true;
        assert!(no_request_without_an_executor(&r).is_ok());
        r.context.executor_available = false;
        let v = no_request_without_an_executor(&r).unwrap_err();
        assert_eq!(v.invariant, "no-request-without-an-executor");
    }

    #[test]
    fn a_plan_step_for_a_node_the_pod_cannot_use_is_caught() {
        let mut r = landed();
        r.context.unusable_nodes.insert("n01".into());
        // Not a plan step: a single move off an unusable node is fine.
        assert!(no_step_for_an_unusable_node(&r).is_ok());
        r.context.plan_steps.insert("u1".into(), "n02".into());
        assert!(no_step_for_an_unusable_node(&r).is_ok());
        r.context.plan_steps.insert("u1".into(), "n01".into());
        let v = no_step_for_an_unusable_node(&r).unwrap_err();
        assert_eq!(v.invariant, "no-step-for-an-unusable-node");
    }

    #[test]
    fn an_ended_plan_active_again_is_caught_and_a_new_one_with_its_id_is_not() {
        let active = plan("dp-1", "n01", DrainProtectionWire::Nominate, "draining");
        // Ended after it started: the same record active again resumed.
        let ended = BTreeMap::from([("dp-1".to_owned(), active.started_at.plus_minutes(5))]);
        let v = ended_plans_never_resume(&ended, std::slice::from_ref(&active)).unwrap_err();
        assert_eq!(v.invariant, "ended-plans-never-resume");
        // A plan that started after the end is a new plan for the same node and pod.
        let earlier = BTreeMap::from([("dp-1".to_owned(), active.started_at.plus_minutes(-5))]);
        assert!(ended_plans_never_resume(&earlier, std::slice::from_ref(&active)).is_ok());
        assert!(ended_plans_never_resume(&BTreeMap::new(), &[active]).is_ok());
    }

    #[test]
    fn an_active_nominate_plan_whose_pod_lost_its_nomination_is_caught() {
        let pods = |nominated: Option<&str>| {
            BTreeMap::from([(
                POD.to_owned(),
                StoredPod {
                    uid: "u".into(),
                    rv: 1,
                    nominated: nominated.map(Into::into),
                },
            )])
        };
        let draining = plan("dp-1", "n01", DrainProtectionWire::Nominate, "draining");
        assert!(
            lost_nominations_put_back(&pods(Some("n01")), std::slice::from_ref(&draining)).is_ok()
        );
        let v =
            lost_nominations_put_back(&pods(None), std::slice::from_ref(&draining)).unwrap_err();
        assert_eq!(v.invariant, "lost-nominations-put-back");
        // Ended plans and taint plans ask for no nomination.
        let ended = plan("dp-1", "n01", DrainProtectionWire::Nominate, "abandoned");
        let taint = plan("dp-1", "n01", DrainProtectionWire::Taint, "draining");
        assert!(lost_nominations_put_back(&pods(None), &[ended, taint]).is_ok());
    }
}
