//! The dispatch budget check (docs/design-pass.md#budget-check): union by request identity
//! `ownerUID/uuid` of every waiting or running request anywhere, of migrations started in
//! the last hour, alfred's own cooldowns and the failure backoff.

use std::collections::BTreeSet;
use std::time::Duration;

use alfred_model::config::Config;
use alfred_model::reason::{DispatchReason, RowReason};
use alfred_model::record::Candidate;
use alfred_model::snapshot::{MigrationRecord, is_key};
use alfred_model::{ClusterSnapshot, Timestamp};

use alfred_arbiter::{HOURLY_WINDOW, identity, started_migrations_within};

use crate::dispatch::journal::Journal;

/// `(identity, createdAt)` of every journal entry: alfred's part of the hourly count, in
/// the form [`started_migrations_within`] takes (the same as the derived ledger's
/// `Ledger::created_at`).
pub(crate) fn journal_created_at(journal: &Journal) -> Vec<(String, Timestamp)> {
    journal
        .entries
        .iter()
        .map(|e| (identity(&e.workload_uid, &e.uuid), e.created_at))
        .collect()
}

/// Whether `node` was used (as source or target) by one of alfred's entries within
/// `perNodeCooldownMinutes` of its `completedAt` (else `createdAt`), except `skip_uuid`.
pub(crate) fn node_cooling(
    journal: &Journal,
    node: &str,
    now: Timestamp,
    window: Duration,
    skip_uuid: Option<&str>,
) -> bool {
    recent_entry(journal, now, window, skip_uuid, |e| {
        e.from_node == node || e.targets.iter().any(|t| t == node)
    })
}

/// Whether one of alfred's entries landed on `node` (as a target) within `window`, except
/// `skip_uuid`: what of a node's cooldown a drain-plan step leaving that node still honours
/// (docs/design-policies.md#drain-plans, as the arbiter's `Ledger::node_received`).
pub(crate) fn node_received(
    journal: &Journal,
    node: &str,
    now: Timestamp,
    window: Duration,
    skip_uuid: Option<&str>,
) -> bool {
    recent_entry(journal, now, window, skip_uuid, |e| {
        e.targets.iter().any(|t| t == node)
    })
}

/// The request UUIDs of the started drain plan whose later step `candidate` is, when
/// `overlapSteps` lets such a step go beside them (docs/design-policies.md#overlapping-steps);
/// empty otherwise: the option off, no plan step, a plan's first step, or a plan the journal
/// does not hold as active.
pub(crate) fn own_plan_requests(
    journal: &Journal,
    candidate: &Candidate,
    config: &Config,
) -> BTreeSet<String> {
    let Some(step) = candidate.plan.as_ref() else {
        return BTreeSet::new();
    };
    if !config.policies.defragmentation.drain_plans.overlap_steps || step.starts_plan {
        return BTreeSet::new();
    }
    journal
        .plans
        .iter()
        .filter(|p| p.active() && p.id == step.plan_id)
        .flat_map(|p| p.steps.iter())
        .filter(|s| !s.request_uuid.is_empty())
        .map(|s| s.request_uuid.clone())
        .collect()
}

/// [`node_cooling`] not counting the entries in `own` (a started plan's earlier steps, for
/// its next step's targets: docs/design-policies.md#overlapping-steps).
pub(crate) fn node_cooling_outside(
    journal: &Journal,
    node: &str,
    now: Timestamp,
    window: Duration,
    skip_uuid: Option<&str>,
    own: &BTreeSet<String>,
) -> bool {
    recent_entry(journal, now, window, skip_uuid, |e| {
        !own.contains(&e.uuid) && (e.from_node == node || e.targets.iter().any(|t| t == node))
    })
}

/// Whether an entry other than `skip_uuid` that used its nodes within `window` matches.
fn recent_entry(
    journal: &Journal,
    now: Timestamp,
    window: Duration,
    skip_uuid: Option<&str>,
    used: impl Fn(&crate::dispatch::journal::Entry) -> bool,
) -> bool {
    journal.entries.iter().any(|e| {
        Some(e.uuid.as_str()) != skip_uuid && used(e) && now.since(e.node_use_time()) < window
    })
}

/// The source node's cooldown for `candidate` (docs/design-policies.md#drain-plans for plan steps,
/// as the arbiter): a started plan's own node is exempt between its steps, a new plan's node waits
/// only for requests that landed on it, every other move for every use of its source.
fn source_cooling(
    journal: &Journal,
    candidate: &Candidate,
    now: Timestamp,
    window: Duration,
    skip_uuid: Option<&str>,
) -> bool {
    let node = candidate.from_node.as_str();
    match candidate.plan.as_ref().filter(|p| p.node == node) {
        Some(p) if !p.starts_plan => false,
        Some(_) => node_received(journal, node, now, window, skip_uuid),
        None => node_cooling(journal, node, now, window, skip_uuid),
    }
}

/// docs/design-pass.md#budget-check step 4 for the rows of one InferenceReplica whose owner has
/// `owner_uid`: each row needs a UUID and a non-zero `startedAt` not after `now`; waiting and
/// running phases are *active*; an unknown phase is `MigrationStateInvalid`.
fn classify_rows(
    owner_uid: &str,
    rows: &[MigrationRecord],
    now: Timestamp,
    active: &mut BTreeSet<String>,
) -> Result<(), DispatchReason> {
    for r in rows {
        if r.started_at
            .filter(|s| !r.uuid.is_empty() && *s != Timestamp::EPOCH && *s <= now)
            .is_none()
        {
            return Err(DispatchReason::MigrationStateInvalid);
        }
        match r.phase.as_str() {
            "Accepted" | "SurgePending" | "SurgeReady" | "Draining" => {
                active.insert(identity(owner_uid, &r.uuid));
            }
            "Completed" | "Failed" | "Relocated" => {}
            _ => return Err(DispatchReason::MigrationStateInvalid),
        }
    }
    Ok(())
}

/// Runs the check for `candidate` against the (fresh) snapshot; `retry_uuid` names the
/// entry being retried.
pub(crate) fn check_budget(
    candidate: &Candidate,
    snap: &ClusterSnapshot,
    journal: &Journal,
    config: &Config,
    retry_uuid: Option<&str>,
    now: Timestamp,
) -> Result<(), DispatchReason> {
    let mins = |m: u32| Duration::from_secs(u64::from(m) * 60);
    let mut active: BTreeSet<String> = BTreeSet::new();
    let mut window = mins(config.per_workload_cooldown_minutes);
    for w in &snap.workloads {
        if w.settings.cooldown_invalid {
            return Err(DispatchReason::InvalidCooldown);
        }
        if w.has_key(&candidate.workload)
            && let Some(m) = w.settings.cooldown_minutes
        {
            window = mins(m);
        }
        for r in &w.migration.requests {
            active.insert(identity(&w.uid, &r.uuid));
        }
        for u in &w.migration.malformed_requests {
            active.insert(identity(&w.uid, u));
        }
        classify_rows(&w.uid, &w.migration.records, now, &mut active)?;
    }
    // docs/design-pass.md#budget-check step 4 reads *every* captured InferenceReplica: the rows no
    // workload reads count too, and a replica with rows but no InferenceService owner makes them
    // unusable.
    for r in &snap.unattached_replicas {
        if r.owner.is_none() || r.invalid.is_some() {
            return Err(DispatchReason::MigrationStateInvalid);
        }
        classify_rows(r.owner_uid(), &r.records, now, &mut active)?;
    }
    if candidate.reason == RowReason::NodeUnhealthy {
        window = mins(config.policies.node_health.health_cooldown_floor_minutes);
    }
    let mut retry_id = None;
    for e in &journal.entries {
        let id = identity(&e.workload_uid, &e.uuid);
        if Some(e.uuid.as_str()) == retry_uuid {
            retry_id = Some(id.clone());
        }
        if e.is_unresolved() {
            active.insert(id);
        }
        if Some(e.uuid.as_str()) != retry_uuid
            && is_key(&e.workload.namespace, &e.workload.name, &candidate.workload)
            && e.completed_at.is_some_and(|d| now.since(d) < window)
        {
            return Err(DispatchReason::Cooldown);
        }
    }
    // The hourly count is THE counting function the arbiter's `HourlyCap` uses
    // (docs/design.md#hourly-budget): migrations started in the last hour, whoever requested them,
    // united by identity with alfred's journal entries by `createdAt`.
    let mut hourly =
        started_migrations_within(snap, &journal_created_at(journal), now, HOURLY_WINDOW);
    // docs/design-pass.md#budget-check step 6: the retried entry does not count against itself.
    if let Some(id) = retry_id {
        active.remove(&id);
        hourly.remove(&id);
    }
    // docs/design-policies.md#overlapping-steps: with `overlapSteps`, a started plan's own
    // earlier steps do not hold its next one back; any other migration still does.
    let own = own_plan_requests(journal, candidate, config);
    for e in journal.entries.iter().filter(|e| own.contains(&e.uuid)) {
        active.remove(&identity(&e.workload_uid, &e.uuid));
    }
    if !active.is_empty() {
        return Err(DispatchReason::InFlightCap);
    }
    if hourly.len() >= config.max_migrations_per_hour as usize {
        return Err(DispatchReason::HourlyCap);
    }
    if journal.backoff_until.is_some_and(|b| b > now) {
        return Err(DispatchReason::FailureBackoff);
    }
    if candidate.reason != RowReason::NodeUnhealthy
        && source_cooling(
            journal,
            candidate,
            now,
            mins(config.per_node_cooldown_minutes),
            retry_uuid,
        )
    {
        return Err(DispatchReason::NodeCooldown);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alfred_model::plan::PlanStepRef;

    /// The journal example's entry left `gpu-h100-a07` for `gpu-h100-c03` and `gpu-h100-c11`
    /// (created 10:15:02, acknowledged, not completed: it cools its nodes from creation).
    fn journal() -> Journal {
        Journal::parse(crate::dispatch::journal::tests::EXAMPLE).expect("example journal")
    }

    fn step(from: &str, plan_node: &str, starts_plan: bool) -> Candidate {
        let mut c = crate::dispatch::entry_candidate(&journal().entries[0]);
        c.workload = "inference/other".into();
        c.from_node = from.into();
        c.plan = Some(PlanStepRef {
            plan_id: "dp-1".into(),
            step: 2,
            steps: 3,
            node: plan_node.into(),
            starts_plan,
        });
        c
    }

    #[test]
    fn a_plan_step_waits_only_for_landings_on_its_node_and_a_started_plan_not_at_all() {
        let j = journal();
        let now = j.entries[0].created_at.plus_minutes(5);
        let window = Duration::from_secs(600);
        let cooling = |c: &Candidate| source_cooling(&j, c, now, window, None);
        // A move that is no plan step waits out every use of its source.
        let mut plain = step("gpu-h100-a07", "gpu-h100-a07", false);
        plain.plan = None;
        assert!(cooling(&plain));
        plain.from_node = "gpu-h100-c03".into();
        assert!(cooling(&plain));
        // The node the entry left: a started plan's next step and a new plan both go on.
        assert!(!cooling(&step("gpu-h100-a07", "gpu-h100-a07", false)));
        assert!(!cooling(&step("gpu-h100-a07", "gpu-h100-a07", true)));
        // A node the entry landed on: a new plan waits, a started one does not.
        assert!(cooling(&step("gpu-h100-c03", "gpu-h100-c03", true)));
        assert!(!cooling(&step("gpu-h100-c03", "gpu-h100-c03", false)));
        // A plan step leaving a node that is not its plan's node is an ordinary move.
        assert!(cooling(&step("gpu-h100-a07", "elsewhere", false)));
        // Past the window nothing cools.
        let later = j.entries[0].created_at.plus_minutes(11);
        assert!(!source_cooling(&j, &plain, later, window, None));
    }

    /// The example journal with its (acknowledged, in progress) entry listed as step 1 of the
    /// active plan `dp-1` freeing `gpu-h100-a07`.
    fn plan_journal() -> Journal {
        use alfred_model::plan::{DrainProtectionWire, PlanPhase, PlanRecord, PlanStepRecord};
        let mut j = journal();
        let e = &j.entries[0];
        j.plans = vec![PlanRecord {
            benefit_milli_gpus: 0,
            cost_milli_gpus: 0,
            id: "dp-1".into(),
            pool: "H100".into(),
            node: "gpu-h100-a07".into(),
            node_uid: "uid-a07".into(),
            pod: "prod/big".into(),
            pod_uid: "p1".into(),
            gpus: 8,
            protection: DrainProtectionWire::Nominate,
            steps: vec![PlanStepRecord {
                workload: "inference/qwen3-235b".into(),
                component: e.component,
                instance: e.instance,
                gpus: 4,
                request_uuid: e.uuid.clone(),
            }],
            phase: PlanPhase::Draining,
            reason: None,
            started_at: e.created_at,
            deadline: e.created_at.plus_minutes(60),
            ended_at: None,
            pending_since: e.created_at.plus_minutes(-30),
        }];
        j
    }

    fn overlap(on: bool) -> Config {
        let mut c = Config::builtin();
        c.policies.defragmentation.drain_plans.overlap_steps = on;
        c
    }

    /// An empty cluster observed `minutes` after the journal's entry was created.
    fn cluster_at(j: &Journal, minutes: i64) -> (ClusterSnapshot, Timestamp) {
        let now = j.entries[0].created_at.plus_minutes(minutes);
        let snap = ClusterSnapshot {
            observed_at: now,
            ..ClusterSnapshot::default()
        };
        (snap, now)
    }

    #[test]
    fn off_a_plans_next_step_waits_for_its_own_earlier_step() {
        let j = plan_journal();
        let (snap, now) = cluster_at(&j, 5);
        let next = step("gpu-h100-a07", "gpu-h100-a07", false);
        assert_eq!(
            check_budget(&next, &snap, &j, &overlap(false), None, now),
            Err(DispatchReason::InFlightCap)
        );
        assert!(own_plan_requests(&j, &next, &overlap(false)).is_empty());
    }

    #[test]
    fn on_a_started_plans_next_step_goes_beside_its_own_steps_only() {
        let j = plan_journal();
        let (snap, now) = cluster_at(&j, 5);
        let next = step("gpu-h100-a07", "gpu-h100-a07", false);
        assert_eq!(
            check_budget(&next, &snap, &j, &overlap(true), None, now),
            Ok(())
        );
        // A plan's first step, another plan's step and a move of no plan still wait.
        let first = step("gpu-h100-a07", "gpu-h100-a07", true);
        let mut other_plan = next.clone();
        if let Some(p) = other_plan.plan.as_mut() {
            p.plan_id = "dp-2".into();
        }
        let mut no_plan = next.clone();
        no_plan.plan = None;
        for c in [first, other_plan, no_plan] {
            assert_eq!(
                check_budget(&c, &snap, &j, &overlap(true), None, now),
                Err(DispatchReason::InFlightCap),
                "{:?}",
                c.plan
            );
        }
        // Someone else's migration beside the plan's holds the step back.
        let mut busy = snap.clone();
        busy.workloads.push(alfred_model::snapshot::Workload {
            namespace: "ns".into(),
            name: "someone".into(),
            uid: "uid-someone".into(),
            migration: alfred_model::snapshot::MigrationState {
                requests: vec![alfred_model::snapshot::MigrationRequestObserved {
                    uuid: "theirs".into(),
                    ..Default::default()
                }],
                valid: true,
                ..Default::default()
            },
            ..Default::default()
        });
        assert_eq!(
            check_budget(&next, &busy, &j, &overlap(true), None, now),
            Err(DispatchReason::InFlightCap)
        );
        // An ended plan's steps are nobody's to overlap.
        let mut ended = j.clone();
        ended.plans[0].phase = alfred_model::plan::PlanPhase::Abandoned;
        assert_eq!(
            check_budget(&next, &snap, &ended, &overlap(true), None, now),
            Err(DispatchReason::InFlightCap)
        );
    }

    #[test]
    fn on_the_hourly_cap_counts_the_plans_own_steps() {
        let j = plan_journal();
        let (snap, now) = cluster_at(&j, 5);
        let next = step("gpu-h100-a07", "gpu-h100-a07", false);
        // The plan's step 1 is this hour's one migration: a cap of one leaves nothing.
        let mut config = overlap(true);
        config.max_migrations_per_hour = 1;
        assert_eq!(
            check_budget(&next, &snap, &j, &config, None, now),
            Err(DispatchReason::HourlyCap)
        );
        config.max_migrations_per_hour = 2;
        assert_eq!(check_budget(&next, &snap, &j, &config, None, now), Ok(()));
    }

    #[test]
    fn on_the_target_cooldown_skips_only_the_plans_own_steps() {
        let j = plan_journal();
        let (_, now) = cluster_at(&j, 5);
        let window = Duration::from_secs(600);
        let next = step("gpu-h100-a07", "gpu-h100-a07", false);
        let cooling = |config: &Config, c: &Candidate| {
            let own = own_plan_requests(&j, c, config);
            node_cooling_outside(&j, "gpu-h100-c03", now, window, None, &own)
        };
        // Step 1 landed on c03 five minutes ago.
        assert!(cooling(&overlap(false), &next));
        assert!(!cooling(&overlap(true), &next));
        assert!(cooling(
            &overlap(true),
            &step("gpu-h100-a07", "gpu-h100-a07", true)
        ));
        // Without the plan's mark, the same entry cools c03 for the step too.
        let mut unplanned = j.clone();
        unplanned.plans.clear();
        let own = own_plan_requests(&unplanned, &next, &overlap(true));
        assert!(own.is_empty());
        assert!(node_cooling_outside(
            &unplanned,
            "gpu-h100-c03",
            now,
            window,
            None,
            &own
        ));
    }
}
