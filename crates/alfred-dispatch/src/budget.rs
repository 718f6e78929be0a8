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

use crate::journal::Journal;

/// `(identity, createdAt)` of every journal entry: alfred's part of the hourly count, in
/// the form [`started_migrations_within`] takes (the same as the derived ledger's
/// `Ledger::created_at`).
pub fn journal_created_at(journal: &Journal) -> Vec<(String, Timestamp)> {
    journal
        .entries
        .iter()
        .map(|e| (identity(&e.workload_uid, &e.uuid), e.created_at))
        .collect()
}

/// Whether `node` was used (as source or target) by one of alfred's entries within
/// `perNodeCooldownMinutes` of its `completedAt` (else `createdAt`), except `skip_uuid`.
pub fn node_cooling(
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
pub fn node_received(
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

/// Whether an entry other than `skip_uuid` that used its nodes within `window` matches.
fn recent_entry(
    journal: &Journal,
    now: Timestamp,
    window: Duration,
    skip_uuid: Option<&str>,
    used: impl Fn(&crate::journal::Entry) -> bool,
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
pub fn check_budget(
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
        Journal::parse(crate::journal::tests::EXAMPLE).expect("example journal")
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
}
