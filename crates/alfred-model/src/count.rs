//! Counting everyone's migrations: the one function behind `maxMigrationsPerHour`
//! (arbiter `HourlyCap`, dispatch budget `HourlyCap`) and the in-flight count behind
//! `maxInFlightMigrations`.
//!
//! Seed 000: the caps "count everyone's migrations, not only Alfred's", and the hourly one
//! counts those "started in the last hour". Decision E4: one counting function shared by
//! the arbiter and the dispatcher (alfred-engine.md §8.2, corrected; §9.7); it lives in the
//! model so the drain-plan search can size a new plan to the hourly budget left.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::{ClusterSnapshot, Timestamp};

/// The identity of a migration request: `ownerUID/uuid` (alfred-engine.md §9.7). The same
/// request seen as an annotation, an InferenceReplica status row and a journal entry has
/// one identity, so the sources can be united without double counting.
pub fn identity(owner_uid: &str, uuid: &str) -> String {
    format!("{owner_uid}/{uuid}")
}

/// Whether an instant lies inside the window ending at `now`: its age is at most
/// `window` (`≤`, §13 item 20). An instant in the future counts (clock skew is no reason
/// to let a migration escape the cap).
pub fn within_window(at: Timestamp, now: Timestamp, window: Duration) -> bool {
    now.since(at) <= window
}

/// The identities of the migrations **started** within `window` of `now`, whoever
/// requested them (union by identity):
///
/// * every well-formed request annotation whose `requested_at` is within the window, and
///   every annotation whose start cannot be read (no `requested_at`, or a malformed
///   annotation): fail closed, it counts;
/// * every InferenceReplica migration row whose `startedAt` is within the window (a row
///   without `startedAt` counts, fail closed), the rows of replicas no workload reads
///   ([`crate::snapshot::UnattachedReplica`]) included;
/// * every journal entry in `journal_created_at` — `(identity, createdAt)`, identities
///   built with [`identity`] from the entry's `workloadUID` and `uuid` — whose `createdAt`
///   is within the window.
///
/// The dispatcher's budget check (§9.7) removes the retried entry's own identity from this
/// set; the arbiter uses its size as `hourly`.
pub fn started_migrations_within(
    snapshot: &ClusterSnapshot,
    journal_created_at: &[(String, Timestamp)],
    now: Timestamp,
    window: Duration,
) -> BTreeSet<String> {
    let inside = |at: Option<Timestamp>| at.is_none_or(|t| within_window(t, now, window));
    let mut set = BTreeSet::new();
    for w in &snapshot.workloads {
        let m = &w.migration;
        for r in &m.requests {
            if inside(r.requested_at) {
                set.insert(identity(&w.uid, &r.uuid));
            }
        }
        for uuid in &m.malformed_requests {
            set.insert(identity(&w.uid, uuid));
        }
        for row in &m.records {
            if inside(row.started_at) {
                set.insert(identity(&w.uid, &row.uuid));
            }
        }
    }
    for r in &snapshot.unattached_replicas {
        for row in &r.records {
            if inside(row.started_at) {
                set.insert(identity(r.owner_uid(), &row.uuid));
            }
        }
    }
    for (id, created) in journal_created_at {
        if within_window(*created, now, window) {
            set.insert(id.clone());
        }
    }
    set
}

/// THE count of migrations started within `window` of `now` (see
/// [`started_migrations_within`]); with the arbiter's `HOURLY_WINDOW` it is the `hourly` of the
/// arbiter's `HourlyCap` and the dispatcher's budget.
pub fn migrations_started_within(
    snapshot: &ClusterSnapshot,
    journal_created_at: &[(String, Timestamp)],
    now: Timestamp,
    window: Duration,
) -> usize {
    started_migrations_within(snapshot, journal_created_at, now, window).len()
}

/// The identities of the migrations in flight: every workload's active migrations
/// (waiting request annotations and non-terminal status rows, anyone's) and the
/// non-terminal rows of unattached InferenceReplicas, united with
/// `unresolved`, alfred's own requests that have not ended (identities from [`identity`]).
pub fn in_flight_migrations(snapshot: &ClusterSnapshot, unresolved: &[String]) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    for w in &snapshot.workloads {
        for a in &w.migration.active {
            set.insert(identity(&w.uid, &a.uuid));
        }
    }
    for r in &snapshot.unattached_replicas {
        for row in r.records.iter().filter(|row| !row.is_terminal()) {
            set.insert(identity(r.owner_uid(), &row.uuid));
        }
    }
    set.extend(unresolved.iter().cloned());
    set
}

/// The in-flight count of `maxInFlightMigrations` (see [`in_flight_migrations`]).
pub fn migrations_in_flight(snapshot: &ClusterSnapshot, unresolved: &[String]) -> usize {
    in_flight_migrations(snapshot, unresolved).len()
}
