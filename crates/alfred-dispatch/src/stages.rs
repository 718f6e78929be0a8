//! The stages the pass composes: scoring, the policies and the arbiter, behind one port
//! ([`Stages`]) so the pass can run with the real crates (`alfred-score`,
//! `alfred-policy`, `alfred-arbiter`) or with scripted stand-ins in tests.
//!
//! [`BasicArbiter`] is a faithful-enough stand-in for the arbiter of alfred-engine.md §8
//! (ordering, the gates in order, surge target selection, caps, the shared hourly count)
//! used until `alfred-arbiter` is wired in.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use alfred_model::config::{Config, RuntimeOptions};
use alfred_model::reason::{RejectReason, RowReason};
use alfred_model::record::{Candidate, Verdict};
use alfred_model::snapshot::DeploymentMode;
use alfred_model::{ClusterSnapshot, Timestamp};

use crate::journal::Journal;

/// One pool's numbers, for the cluster gauges and `replay` (never in `last-cycle.json`, E22).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolGauge {
    /// Pool key.
    pub pool: String,
    /// `1 − (1 − reclaimable)(1 − pending pressure)`.
    pub score: f64,
    /// Size → observed fragmentation.
    pub observed: Vec<(u32, f64)>,
    /// Reclaimable fragmentation.
    pub reclaimable: f64,
    /// Pending pressure.
    pub pending_pressure: f64,
}

/// What the arbiter reads.
#[derive(Debug, Clone, Copy)]
pub struct ArbiterInput<'a> {
    /// All candidates (only executable ones are arbitrated).
    pub candidates: &'a [Candidate],
    /// The snapshot.
    pub snapshot: &'a ClusterSnapshot,
    /// The configuration.
    pub config: &'a Config,
    /// The journal: alfred's own requests, the durable ledger of decision 15.2.
    pub journal: &'a Journal,
    /// The circuit breaker is open now.
    pub breaker_open: bool,
    /// Now.
    pub now: Timestamp,
}

/// The pipeline stages.
pub trait Stages {
    /// Pool scores (metrics, replay).
    fn score(&self, snapshot: &ClusterSnapshot, config: &Config) -> Vec<PoolGauge>;
    /// Both policies, node health first: candidates (node markers are derived by the
    /// reporter from the snapshot).
    fn propose(
        &self,
        snapshot: &ClusterSnapshot,
        config: &Config,
        runtime: &RuntimeOptions,
        now: Timestamp,
    ) -> Vec<Candidate>;
    /// Arbitrates the executable candidates: `(candidate index, verdict)` in arbitration
    /// order.
    fn arbitrate(&self, input: &ArbiterInput<'_>) -> Vec<(usize, Verdict)>;
}

/// An admission: first target, placement (node → GPUs), cooldown overridden.
type Admission = (String, Vec<(String, u32)>, bool);

/// The stand-in arbiter (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct BasicArbiter;

/// The identities of migrations started within the last hour, whoever asked: request
/// annotations by `requested_at` (unreadable ones count), status rows by `startedAt`
/// (missing counts), journal entries by `createdAt`; union by `ownerUID/uuid`.
pub fn started_within_hour(
    snapshot: &ClusterSnapshot,
    journal: &Journal,
    now: Timestamp,
) -> BTreeSet<String> {
    let hour = Duration::from_secs(3600);
    let inside = |t: Option<Timestamp>| t.is_none_or(|t| now.since(t) <= hour);
    let mut set = BTreeSet::new();
    for w in &snapshot.workloads {
        for r in &w.migration.requests {
            if inside(r.requested_at) {
                set.insert(format!("{}/{}", w.uid, r.uuid));
            }
        }
        for u in &w.migration.malformed_requests {
            set.insert(format!("{}/{}", w.uid, u));
        }
        for r in &w.migration.records {
            if inside(r.started_at) {
                set.insert(format!("{}/{}", w.uid, r.uuid));
            }
        }
    }
    for e in &journal.entries {
        if inside(Some(e.created_at)) {
            set.insert(format!("{}/{}", e.workload_uid, e.uuid));
        }
    }
    set
}

impl BasicArbiter {
    /// The stable arbitration order of §8.1.
    pub fn order(candidates: &[Candidate]) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..candidates.len())
            .filter(|&i| candidates[i].executable)
            .collect();
        idx.sort_by(|&a, &b| {
            let (x, y) = (&candidates[a], &candidates[b]);
            y.class()
                .cmp(&x.class())
                .then(y.score.total_cmp(&x.score))
                .then(x.footprint_gpus.cmp(&y.footprint_gpus))
        });
        idx
    }

    /// Arbitrates (see [`Stages::arbitrate`]).
    pub fn arbitrate(input: &ArbiterInput<'_>) -> Vec<(usize, Verdict)> {
        let ArbiterInput {
            candidates,
            snapshot,
            config,
            journal,
            breaker_open,
            now,
        } = *input;
        let evacuating: BTreeSet<&str> = candidates
            .iter()
            .filter(|c| c.executable && c.reason != RowReason::Fragmentation)
            .map(|c| c.from_node.as_str())
            .collect();
        let mut claims: BTreeMap<String, u32> = BTreeMap::new();
        let mut landed: BTreeSet<String> = BTreeSet::new();
        let mut admitted_workloads: BTreeSet<String> = BTreeSet::new();
        let in_flight = snapshot.migrations_in_flight();
        let hourly = started_within_hour(snapshot, journal, now).len();
        let mut admitted = 0usize;
        let mut out = Vec::new();
        for i in Self::order(candidates) {
            let c = &candidates[i];
            let v = Self::gate(
                c,
                snapshot,
                config,
                breaker_open,
                now,
                &evacuating,
                &landed,
                &claims,
                &admitted_workloads,
                in_flight + admitted,
                hourly + admitted,
            );
            let verdict = match v {
                Ok((target, placement, overridden)) => {
                    admitted += 1;
                    admitted_workloads.insert(c.workload.clone());
                    for (n, g) in &placement {
                        landed.insert(n.clone());
                        *claims.entry(n.clone()).or_insert(0) += g;
                    }
                    Verdict {
                        admitted: true,
                        target,
                        placement,
                        cooldown_overridden: overridden,
                        ..Verdict::default()
                    }
                }
                Err(r) => Verdict {
                    admitted: false,
                    reject_reason: Some(r),
                    ..Verdict::default()
                },
            };
            out.push((i, verdict));
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn gate(
        c: &Candidate,
        snapshot: &ClusterSnapshot,
        config: &Config,
        breaker_open: bool,
        now: Timestamp,
        evacuating: &BTreeSet<&str>,
        landed: &BTreeSet<String>,
        claims: &BTreeMap<String, u32>,
        admitted_workloads: &BTreeSet<String>,
        in_flight: usize,
        hourly: usize,
    ) -> Result<Admission, RejectReason> {
        if breaker_open {
            return Err(RejectReason::CircuitBreakerOpen);
        }
        let (ns, name) = c.workload.split_once('/').unwrap_or(("", ""));
        let w = snapshot
            .workload(ns, name)
            .ok_or(RejectReason::InstanceGone)?;
        let inst = w
            .component(c.component)
            .filter(|comp| comp.mode == DeploymentMode::OMENative)
            .and_then(|comp| {
                u32::try_from(c.instance)
                    .ok()
                    .and_then(|ix| comp.instances.iter().find(|i| i.index == ix))
            })
            .ok_or(RejectReason::InstanceGone)?;
        if !w.settings.movable {
            return Err(RejectReason::NotMovable);
        }
        if !w.migration.malformed_requests.is_empty() {
            return Err(RejectReason::MalformedRequestPending);
        }
        if !w.migration.valid {
            return Err(RejectReason::MigrationStateInvalid);
        }
        if inst.any_terminating {
            return Err(RejectReason::InstanceTerminating);
        }
        if !w.migration.active.is_empty() || admitted_workloads.contains(&c.workload) {
            return Err(RejectReason::WorkloadBusy);
        }
        let health = c.reason == RowReason::NodeUnhealthy;
        let floor = Duration::from_secs(
            u64::from(config.policies.node_health.health_cooldown_floor_minutes) * 60,
        );
        let standard = Duration::from_secs(
            u64::from(
                w.settings
                    .cooldown_minutes
                    .unwrap_or(config.per_workload_cooldown_minutes),
            ) * 60,
        );
        let mut overridden = false;
        if let Some(last) = w.migration.last_migration {
            let age = now.since(last);
            if health {
                if age < floor {
                    return Err(RejectReason::Cooldown);
                }
                overridden = age < standard;
            } else if age < standard {
                return Err(RejectReason::Cooldown);
            }
        }
        let placement_window = if health {
            floor
        } else {
            Duration::from_secs(u64::from(config.recent_placement_cooldown_minutes) * 60)
        };
        for p in &inst.pods {
            if let Some(pod) = snapshot.pod_by_key(p)
                && let Some(st) = pod.started_at
                && now.since(st) < placement_window
            {
                return Err(RejectReason::PlacementCooldown);
            }
        }
        let targets = if c.placement_target_nodes.is_empty() {
            &c.hint_target_nodes
        } else {
            &c.placement_target_nodes
        };
        let mut pods: Vec<u32> = if c.pod_gpus.is_empty() {
            if c.footprint_gpus > 0 {
                vec![c.footprint_gpus]
            } else {
                vec![]
            }
        } else {
            c.pod_gpus.clone()
        };
        pods.sort_by(|a, b| b.cmp(a));
        let mut placement: BTreeMap<String, u32> = BTreeMap::new();
        for g in pods {
            let (mut unavailable, mut evac, mut busy) = (false, false, false);
            let mut chosen = None;
            for t in targets {
                let Some(n) = snapshot.node(t) else {
                    unavailable = true;
                    continue;
                };
                if n.unavailable() {
                    unavailable = true;
                    continue;
                }
                if evacuating.contains(t.as_str()) {
                    evac = true;
                    continue;
                }
                if landed.contains(t) {
                    busy = true;
                    continue;
                }
                let used =
                    claims.get(t).copied().unwrap_or(0) + placement.get(t).copied().unwrap_or(0);
                if n.free_gpus.saturating_sub(used) >= g {
                    chosen = Some(t.clone());
                    break;
                }
            }
            match chosen {
                Some(t) => *placement.entry(t).or_insert(0) += g,
                None if unavailable => return Err(RejectReason::TargetUnavailable),
                None if evac => return Err(RejectReason::TargetUnderEvacuation),
                None if busy => return Err(RejectReason::TargetNodeBusy),
                None => return Err(RejectReason::NoCapacity),
            }
        }
        if in_flight >= config.max_in_flight_migrations as usize {
            return Err(RejectReason::InFlightCap);
        }
        if hourly >= config.max_migrations_per_hour as usize {
            return Err(RejectReason::HourlyCap);
        }
        let first = targets
            .iter()
            .find(|t| placement.contains_key(*t))
            .cloned()
            .unwrap_or_default();
        Ok((first, placement.into_iter().collect(), overridden))
    }
}

/// Scripted stages for tests and `replay` before the real crates are wired: the policies
/// return the given candidates, scoring returns nothing, the arbiter is [`BasicArbiter`].
#[derive(Debug, Clone, Default)]
pub struct ScriptedStages {
    /// Candidates `propose` returns.
    pub candidates: Vec<Candidate>,
    /// Candidates `propose` returns when called on the fresh snapshot (pre-submit
    /// re-check); `None` = the same as `candidates`.
    pub fresh_candidates: Option<Vec<Candidate>>,
}

impl Stages for ScriptedStages {
    fn score(&self, _: &ClusterSnapshot, _: &Config) -> Vec<PoolGauge> {
        Vec::new()
    }
    fn propose(
        &self,
        snapshot: &ClusterSnapshot,
        _: &Config,
        _: &RuntimeOptions,
        _: Timestamp,
    ) -> Vec<Candidate> {
        // The fresh snapshot is told apart by a marker the tests set: a different
        // observation time than the pass's own snapshot is not enough, so tests use
        // `fresh_candidates` only when they need the policies to change their mind.
        match (
            &self.fresh_candidates,
            snapshot.problems.iter().any(|p| p.kind == "FreshMarker"),
        ) {
            (Some(f), true) => f.clone(),
            _ => self.candidates.clone(),
        }
    }
    fn arbitrate(&self, input: &ArbiterInput<'_>) -> Vec<(usize, Verdict)> {
        BasicArbiter::arbitrate(input)
    }
}
