//! Follow-up of alfred's own requests (docs/design-pass.md#follow-up): each non-terminal journal
//! entry is reconciled against the snapshot (the InferenceService's UID, the
//! InferenceReplica's name, UID and owner, its `status.migrations` rows, and the request
//! annotation's presence and exact value).

use std::time::Duration;

use alfred_model::reason::DispatchReason;
use alfred_model::snapshot::MigrationRecord;
use alfred_model::{ClusterSnapshot, Timestamp};

use crate::dispatch::journal::{Entry, Journal, Phase};
use crate::dispatch::request::RequestPayload;

/// The result of reconciling the journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FollowReport {
    /// The reconciled journal.
    pub journal: Journal,
    /// Whether anything changed (the journal must be written).
    pub changed: bool,
    /// UUIDs of entries to report as rows this pass: changed or still unresolved.
    pub reported: Vec<String>,
    /// Outcomes of entries that ended this pass (`true` = completed), for the breaker.
    pub ended: Vec<bool>,
}

fn stall_if_late(e: &mut Entry, r: DispatchReason, now: Timestamp, ack: Duration) {
    if now.since(e.created_at) >= ack && now >= e.created_at {
        e.phase = Phase::Stalled;
        e.reason = Some(r);
    }
}

fn truncate_secs(t: Timestamp) -> Timestamp {
    Timestamp::from_unix_secs(t.unix_secs())
}

/// Reconciles one non-terminal entry in place.
pub(crate) fn reconcile_entry(
    e: &mut Entry,
    snap: &ClusterSnapshot,
    now: Timestamp,
    ack: Duration,
) {
    if e.phase.is_terminal() {
        return;
    }
    let Some(w) = snap.workload(&e.workload.namespace, &e.workload.name) else {
        return stall_if_late(e, DispatchReason::OwnerUnavailable, now, ack);
    };
    if w.uid != e.workload_uid {
        return stall_if_late(e, DispatchReason::OwnerUnavailable, now, ack);
    }
    // docs/design-pass.md#follow-up step 2 reads the replica by name: the component's own replica,
    // or one no workload reads any more (a second replica now claims the component, or the
    // component is not OMENative now), whose rows the follow-up still needs.
    let attached = w
        .component(e.component)
        .and_then(|c| c.replica.as_ref())
        .filter(|r| r.name == e.ir_name);
    let (uid, owner, spec_component, records) = match attached {
        Some(r) => (
            r.uid.as_str(),
            r.owner.as_ref(),
            r.spec_component.as_str(),
            w.migration.records.as_slice(),
        ),
        None => match snap.unattached_replica(&e.workload.namespace, &e.ir_name) {
            Some(r) => (
                r.uid.as_str(),
                r.controller.as_ref(),
                r.component.as_str(),
                r.records.as_slice(),
            ),
            None => return stall_if_late(e, DispatchReason::ReplicaUnavailable, now, ack),
        },
    };
    if uid != e.ir_uid {
        return stall_if_late(e, DispatchReason::ReplicaUnavailable, now, ack);
    }
    let owner_ok = owner
        .is_some_and(|o| o.kind == "InferenceService" && o.name == w.name && o.uid == w.uid)
        && (spec_component.is_empty() || spec_component == e.component.as_str());
    if !owner_ok {
        return stall_if_late(e, DispatchReason::ReplicaIdentityChanged, now, ack);
    }
    let rows: Vec<&MigrationRecord> = records.iter().filter(|r| r.uuid == e.uuid).collect();
    if rows.len() > 1 {
        return stall_if_late(e, DispatchReason::MigrationStatusInvalid, now, ack);
    }
    if let Some(row) = rows.first() {
        let started_ok = row
            .started_at
            .is_some_and(|s| s != Timestamp::EPOCH && s <= now && s >= truncate_secs(e.created_at));
        if row.trigger != "Manual"
            || row.source_instance != e.instance
            || row.from_node != e.from_node
            || !started_ok
        {
            return stall_if_late(e, DispatchReason::MigrationStatusInvalid, now, ack);
        }
        let started = row.started_at.unwrap_or(e.created_at);
        match row.phase.as_str() {
            "Completed" | "Failed" => {
                let Some(done) = row.completed_at.filter(|d| *d >= started && *d <= now) else {
                    return stall_if_late(e, DispatchReason::MigrationStatusInvalid, now, ack);
                };
                e.completed_at = Some(done.max(e.created_at));
                e.acknowledged_at.get_or_insert(started.max(e.created_at));
                e.phase = if row.phase == "Completed" {
                    Phase::Completed
                } else {
                    Phase::Failed
                };
                e.reason = Some(DispatchReason::TerminalStatusObserved);
            }
            "Accepted" | "SurgePending" | "SurgeReady" | "Draining" => {
                let Some(deadline) = row.deadline.filter(|d| *d > started) else {
                    return stall_if_late(e, DispatchReason::MigrationStatusInvalid, now, ack);
                };
                if row.completed_at.is_some() {
                    return stall_if_late(e, DispatchReason::MigrationStatusInvalid, now, ack);
                }
                e.acknowledged_at.get_or_insert(started.max(e.created_at));
                if now > deadline {
                    e.phase = Phase::Stalled;
                    e.reason = Some(DispatchReason::ConsumerDeadlineExceeded);
                } else {
                    e.phase = Phase::Acknowledged;
                    e.reason = Some(DispatchReason::UUIDStatusObserved);
                }
            }
            _ => stall_if_late(e, DispatchReason::MigrationStatusInvalid, now, ack),
        }
        return;
    }
    if e.acknowledged_at.is_some() {
        e.phase = Phase::Stalled;
        e.reason = Some(DispatchReason::AcknowledgedStatusMissing);
        return;
    }
    let malformed = w.migration.malformed_requests.contains(&e.uuid);
    let observed = w.migration.requests.iter().find(|r| r.uuid == e.uuid);
    if malformed || observed.is_some() {
        let same = !malformed && observed.is_some_and(|r| annotation_matches(r, &e.payload));
        if !same {
            e.phase = Phase::Stalled;
            e.reason = Some(DispatchReason::RequestPayloadChanged);
            return;
        }
        if e.phase != Phase::Stalled {
            e.phase = Phase::Submitted;
            e.reason = Some(DispatchReason::RequestAnnotationObserved);
        }
    }
    stall_if_late(e, DispatchReason::AcknowledgementTimeout, now, ack);
}

/// The annotation on the cluster carries exactly the bytes alfred wrote. With the raw
/// value unavailable, the decoded members are compared instead.
fn annotation_matches(r: &alfred_model::snapshot::MigrationRequestObserved, payload: &str) -> bool {
    if !r.raw.is_empty() {
        return r.raw == payload;
    }
    let Ok(p) = RequestPayload::decode(payload) else {
        return false;
    };
    r.component == p.component.as_str()
        && r.instance == p.instance
        && r.from_node == p.from_node
        && r.hint_target_nodes == p.hint_target_nodes
        && r.reason == p.reason.as_str()
        && r.requested_at == Some(p.requested_at)
        && r.requested_by == crate::dispatch::request::REQUESTED_BY
}

/// Reconciles every non-terminal entry; an entry that changes **to** `failed` or `stalled`
/// sets `backoffUntil = now + failureBackoff`.
pub(crate) fn reconcile(
    journal: &Journal,
    snap: &ClusterSnapshot,
    now: Timestamp,
    ack: Duration,
    failure_backoff: Duration,
) -> FollowReport {
    let mut out = journal.clone();
    let mut changed = false;
    let mut reported = Vec::new();
    let mut ended = Vec::new();
    let mut backoff = false;
    for e in &mut out.entries {
        if e.phase.is_terminal() {
            continue;
        }
        let before = e.clone();
        reconcile_entry(e, snap, now, ack);
        let this_changed = *e != before;
        if this_changed {
            changed = true;
            if e.phase != before.phase && matches!(e.phase, Phase::Failed | Phase::Stalled) {
                backoff = true;
            }
            if e.phase.is_terminal() {
                ended.push(e.phase == Phase::Completed);
            }
        }
        reported.push(e.uuid.clone());
    }
    if backoff {
        out.backoff_until = Some(now.plus(failure_backoff));
        changed = true;
    }
    FollowReport {
        journal: out,
        changed,
        reported,
        ended,
    }
}
