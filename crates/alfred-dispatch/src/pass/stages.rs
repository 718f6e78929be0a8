//! The stages the pass composes: scoring, the policies and the arbiter, behind one port
//! ([`Stages`]). [`CoreStages`] is the real pipeline (`alfred-score`, `alfred-policy`,
//! `alfred-arbiter`); `ScriptedStages` (tests only, feature `testkit`) scripts the
//! policies' candidates and keeps the real arbiter.
//!
//! The policies' answer is a [`Proposal`]: the candidates and the node-health policy's node
//! markers, the one source of the reporter's `node.<name>` records and Node events
//! (docs/design-policies.md#node-health, docs/design-pass.md#node-records): no markers, no records.

use std::collections::BTreeSet;

use alfred_model::config::{Config, RuntimeOptions};
use alfred_model::plan::PlanRecord;
use alfred_model::record::{Candidate, Verdict};
use alfred_model::{ClusterSnapshot, Timestamp};

use alfred_arbiter::{ArbiterSettings, Breaker};
use alfred_policy::{PolicySettings, Proposal};
use alfred_score::ScoreSettings;

use crate::dispatch::journal::Journal;
use crate::dispatch::ledger::ledger_of;

/// One pool's numbers, for the cluster gauges and `replay` (never in `last-cycle.json`,
/// docs/design-pass.md#the-record).
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
    /// The journal: alfred's own requests, the durable ledger of docs/design.md#ledger.
    pub journal: &'a Journal,
    /// The circuit breaker of this leadership term (not durable, docs/design.md#circuit-breaker).
    pub breaker: &'a Breaker,
    /// Now.
    pub now: Timestamp,
}

/// The pipeline stages.
pub trait Stages {
    /// Pool scores (metrics, replay).
    fn score(&self, snapshot: &ClusterSnapshot, config: &Config) -> Vec<PoolGauge>;
    /// Both policies, node health first, with the drain plans of the dispatch state
    /// (`plans`): candidates (a plan's steps among them) and the plans.
    fn propose(
        &self,
        snapshot: &ClusterSnapshot,
        config: &Config,
        runtime: &RuntimeOptions,
        plans: &[PlanRecord],
        now: Timestamp,
    ) -> Proposal;
    /// [`Stages::score`] and [`Stages::propose`] of one snapshot, as the pass asks for both:
    /// a stage may share work between them (the real one analyses the snapshot once) but
    /// must answer exactly as the two calls would. The default makes the two calls.
    fn score_and_propose(
        &self,
        snapshot: &ClusterSnapshot,
        config: &Config,
        runtime: &RuntimeOptions,
        plans: &[PlanRecord],
        now: Timestamp,
    ) -> (Vec<PoolGauge>, Proposal) {
        (
            self.score(snapshot, config),
            self.propose(snapshot, config, runtime, plans, now),
        )
    }
    /// Arbitrates the executable candidates: `(candidate index, verdict)` in arbitration
    /// order.
    fn arbitrate(&self, input: &ArbiterInput<'_>) -> Vec<(usize, Verdict)>;
    /// Arbitrates `input.candidates[0]` alone (the pre-submit re-check,
    /// docs/design-pass.md#pre-submit-re-check step 3) with `evacuating`, the evacuation set of the
    /// fresh policies' output. `None` when the arbiter gave no verdict. The default runs
    /// [`Stages::arbitrate`] on the slice.
    fn arbitrate_one(
        &self,
        input: &ArbiterInput<'_>,
        evacuating: &BTreeSet<String>,
    ) -> Option<Verdict> {
        let _ = evacuating;
        self.arbitrate(input)
            .into_iter()
            .find(|(i, _)| *i == 0)
            .map(|(_, v)| v)
    }
}

/// The real stages: `alfred-score`, `alfred-policy` and `alfred-arbiter`, configured from
/// the pass's [`Config`] on every call (no state of its own, so one value serves every
/// pass and every configuration).
///
/// * `score`: [`alfred_score::score_with`] with [`ScoreSettings::from_config`], one
///   [`PoolGauge`] per pool (computed even while defragmentation is off, docs/design-scoring.md);
/// * `proposal`: [`alfred_policy::propose_with`] with [`PolicySettings::from_config`]:
///   node-health findings first, then defragmentation rows, and the node markers;
/// * `arbitrate`: [`alfred_arbiter::arbitrate`] (the re-check:
///   [`alfred_arbiter::arbitrate_one`]) with [`ArbiterSettings::from_config`], the
///   session's breaker and the ledger derived from the journal (`src/dispatch/ledger.rs`,
///   docs/design.md#ledger).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreStages;

/// The real arbiter on an [`ArbiterInput`] (used by [`CoreStages`] and the scripted
/// stages).
pub(crate) fn core_arbitrate(input: &ArbiterInput<'_>) -> Vec<(usize, Verdict)> {
    let ledger = ledger_of(input.journal, input.snapshot);
    let mut arb = alfred_arbiter::arbitrate(
        input.candidates,
        input.snapshot,
        &ArbiterSettings::from_config(input.config),
        &ledger,
        input.breaker,
        input.now,
    );
    arb.order
        .iter()
        .filter_map(|&i| {
            arb.verdicts
                .get_mut(i)
                .and_then(Option::take)
                .map(|v| (i, v))
        })
        .collect()
}

/// The real arbiter's re-check of `input.candidates[0]` alone (see
/// [`Stages::arbitrate_one`]). The journal in `input` must already exclude a retried
/// entry (it then plays the part of `ledger.without(uuid)`).
pub(crate) fn core_arbitrate_one(
    input: &ArbiterInput<'_>,
    evacuating: &BTreeSet<String>,
) -> Option<Verdict> {
    let candidate = input.candidates.first()?;
    let ledger = ledger_of(input.journal, input.snapshot);
    Some(alfred_arbiter::arbitrate_one(
        candidate,
        evacuating,
        input.snapshot,
        &ArbiterSettings::from_config(input.config),
        &ledger,
        input.breaker,
        input.now,
    ))
}

/// One [`PoolGauge`] per pool of a cluster score.
fn gauges(score: alfred_score::ClusterScore) -> Vec<PoolGauge> {
    score
        .pools
        .into_iter()
        .map(|p| PoolGauge {
            pool: p.pool,
            score: p.score,
            observed: p.per_size.iter().map(|s| (s.size, s.frag)).collect(),
            reclaimable: p.reclaimable,
            pending_pressure: p.pending_pressure,
        })
        .collect()
}

/// The policies' settings: the configuration's, with the helper threads the embedder
/// allows.
fn policy_settings(config: &Config, runtime: &RuntimeOptions) -> PolicySettings {
    PolicySettings {
        helper_threads: runtime.helper_threads,
        count_advice: runtime.telemetry.counts_advice(),
        ..PolicySettings::from_config(config)
    }
}

impl Stages for CoreStages {
    fn score(&self, snapshot: &ClusterSnapshot, config: &Config) -> Vec<PoolGauge> {
        gauges(alfred_score::score_with(
            snapshot,
            &ScoreSettings::from_config(config),
        ))
    }

    /// One `alfred-score` analysis for both when the policies would make the same one
    /// ([`alfred_policy::analyze_and_propose`]).
    fn score_and_propose(
        &self,
        snapshot: &ClusterSnapshot,
        config: &Config,
        runtime: &RuntimeOptions,
        plans: &[PlanRecord],
        now: Timestamp,
    ) -> (Vec<PoolGauge>, Proposal) {
        let (analysis, proposal) = alfred_policy::analyze_and_propose_with_plans(
            snapshot,
            &ScoreSettings::from_config(config),
            &policy_settings(config, runtime),
            now,
            plans,
        );
        (gauges(analysis.into_scores()), proposal)
    }

    fn propose(
        &self,
        snapshot: &ClusterSnapshot,
        config: &Config,
        runtime: &RuntimeOptions,
        plans: &[PlanRecord],
        now: Timestamp,
    ) -> Proposal {
        // The executor's availability reaches the policies through
        // `snapshot.executor` (the observer sets it from the same flag).
        alfred_policy::propose_with_plans(snapshot, &policy_settings(config, runtime), now, plans)
    }

    fn arbitrate(&self, input: &ArbiterInput<'_>) -> Vec<(usize, Verdict)> {
        core_arbitrate(input)
    }

    fn arbitrate_one(
        &self,
        input: &ArbiterInput<'_>,
        evacuating: &BTreeSet<String>,
    ) -> Option<Verdict> {
        core_arbitrate_one(input, evacuating)
    }
}

#[cfg(any(test, feature = "testkit"))]
/// Scripted stages (a test double): the policies return the given candidates, scoring
/// returns nothing, the arbiter is the real one ([`core_arbitrate`]). The node markers
/// are the real node-health policy's on the snapshot and configuration, unless scripted.
#[derive(Debug, Clone, Default)]
pub struct ScriptedStages {
    /// Candidates `propose` returns.
    pub candidates: Vec<Candidate>,
    /// Candidates `propose` returns when called on the fresh snapshot (pre-submit
    /// re-check); `None` = the same as `candidates`.
    pub fresh_candidates: Option<Vec<Candidate>>,
    /// Node markers `proposal` returns; `None` = the real node-health policy's
    /// ([`alfred_policy::nodehealth::evaluate`]).
    pub node_markers: Option<Vec<alfred_policy::NodeMarker>>,
}

#[cfg(any(test, feature = "testkit"))]
impl Stages for ScriptedStages {
    fn score(&self, _: &ClusterSnapshot, _: &Config) -> Vec<PoolGauge> {
        Vec::new()
    }
    fn propose(
        &self,
        snapshot: &ClusterSnapshot,
        config: &Config,
        _: &RuntimeOptions,
        _: &[PlanRecord],
        now: Timestamp,
    ) -> Proposal {
        // The fresh snapshot is told apart by a marker the tests set: a different
        // observation time than the pass's own snapshot is not enough, so tests use
        // `fresh_candidates` only when they need the policies to change their mind.
        let candidates = match (
            &self.fresh_candidates,
            snapshot.problems.iter().any(|p| p.kind == "FreshMarker"),
        ) {
            (Some(f), true) => f.clone(),
            _ => self.candidates.clone(),
        };
        let node_markers = match &self.node_markers {
            Some(m) => m.clone(),
            None => alfred_policy::nodehealth::evaluate(snapshot, config, now).node_markers,
        };
        Proposal {
            candidates,
            node_markers,
            ..Proposal::default()
        }
    }
    fn arbitrate(&self, input: &ArbiterInput<'_>) -> Vec<(usize, Verdict)> {
        core_arbitrate(input)
    }
    fn arbitrate_one(
        &self,
        input: &ArbiterInput<'_>,
        evacuating: &BTreeSet<String>,
    ) -> Option<Verdict> {
        core_arbitrate_one(input, evacuating)
    }
}
