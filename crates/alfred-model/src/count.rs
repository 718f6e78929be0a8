//! Counting everyone's migrations: the one function behind `maxMigrationsPerHour`
//! (arbiter `HourlyCap`, dispatch budget `HourlyCap`) and the in-flight count behind
//! `maxInFlightMigrations`.
//!
//! Both caps count every migration, whoever asked for it, and the hourly one counts those that
//! started in the last hour, with one counting function shared by the arbiter and the
//! dispatcher (docs/design.md#hourly-budget, docs/design-pass.md#budget-check); it lives in the
//! model so the drain-plan search can size a new plan to the hourly budget left.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::{ClusterSnapshot, Timestamp};

/// The identity of a migration request: `ownerUID/uuid` (docs/design-pass.md#budget-check). The
/// same request seen as an annotation, an InferenceReplica status row and a journal entry has
/// one identity, so the sources can be united without double counting.
pub fn identity(owner_uid: &str, uuid: &str) -> String {
    format!("{owner_uid}/{uuid}")
}

/// Whether an instant lies inside the window ending at `now`: its age is at most
/// `window` (`≤`, docs/design.md#hourly-budget). An instant in the future counts (clock
/// skew is no reason to let a migration escape the cap).
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
/// The dispatcher's budget check (docs/design-pass.md#budget-check) removes the retried entry's own
/// identity from this set; the arbiter uses its size as `hourly`.
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

/// When each migration [`started_migrations_within`] counts started (one instant per
/// identity, the latest any source gives it); a start that cannot be read is `now` (fail
/// closed: it stays in every window ahead the longest). `hourly == starts.len()`.
pub fn migration_starts_within(
    snapshot: &ClusterSnapshot,
    journal_created_at: &[(String, Timestamp)],
    now: Timestamp,
    window: Duration,
) -> Vec<Timestamp> {
    let mut starts: std::collections::BTreeMap<String, Timestamp> =
        std::collections::BTreeMap::new();
    let mut note = |id: String, at: Option<Timestamp>| {
        let at = at.unwrap_or(now);
        if within_window(at, now, window) {
            let e = starts.entry(id).or_insert(at);
            *e = (*e).max(at);
        }
    };
    for w in &snapshot.workloads {
        let m = &w.migration;
        for r in &m.requests {
            note(identity(&w.uid, &r.uuid), r.requested_at);
        }
        for uuid in &m.malformed_requests {
            note(identity(&w.uid, uuid), None);
        }
        for row in &m.records {
            note(identity(&w.uid, &row.uuid), row.started_at);
        }
    }
    for r in &snapshot.unattached_replicas {
        for row in &r.records {
            note(identity(r.owner_uid(), &row.uuid), row.started_at);
        }
    }
    for (id, created) in journal_created_at {
        note(id.clone(), Some(*created));
    }
    starts.into_values().collect()
}

/// How many of a plan's first `steps` steps the hourly cap lets through when the plan
/// starts at `now` and makes one step a pass: step `i` (from 0) is due `i × interval` after
/// `now`, when the migrations in `starts` older than `window` no longer count, and it needs
/// `counted + admitted + i < max`. "The hourly budget left covers all its steps"
/// (docs/design-policies.md#drain-plans) read at the time each step is due: a plan need not wait
/// for the budget a step will have when it comes.
pub fn plan_steps_within_cap(
    starts: &[Timestamp],
    now: Timestamp,
    window: Duration,
    interval: Duration,
    max: u32,
    admitted: usize,
    steps: u32,
) -> u32 {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    for i in 0..steps {
        let due = now.plus(interval.saturating_mul(i));
        let counted = starts
            .iter()
            .filter(|s| within_window(**s, due, window))
            .count();
        let step = usize::try_from(i).unwrap_or(usize::MAX);
        if counted.saturating_add(admitted).saturating_add(step) >= max {
            return i;
        }
    }
    steps
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plans_steps_count_the_budget_each_has_when_it_is_due() {
        let now = Timestamp::from_unix_secs(10_000);
        let hour = Duration::from_secs(3600);
        let pass = Duration::from_secs(300);
        let ago = |m: i64| now.plus_minutes(-m);
        // Eight started 58 minutes ago: the first step fits (8 < 10), so does the second
        // (9 < 10); by the third they are past the hour.
        let old = vec![ago(58); 8];
        assert_eq!(plan_steps_within_cap(&old, now, hour, pass, 10, 0, 8), 8);
        // Eight started 10 minutes ago stay all hour: two steps, then the cap.
        let recent = vec![ago(10); 8];
        assert_eq!(plan_steps_within_cap(&recent, now, hour, pass, 10, 0, 8), 2);
        // A move admitted earlier in the pass takes one of them.
        assert_eq!(plan_steps_within_cap(&recent, now, hour, pass, 10, 1, 8), 1);
        // Exactly an hour old still counts (`≤`, docs/design.md#hourly-budget).
        assert_eq!(
            plan_steps_within_cap(&[ago(60); 10], now, hour, pass, 10, 0, 3),
            0
        );
        assert_eq!(plan_steps_within_cap(&[], now, hour, pass, 10, 0, 4), 4);
        assert_eq!(plan_steps_within_cap(&[], now, hour, pass, 0, 0, 4), 0);
    }
}
