//! alfred's policies: defragmentation and node health (docs/design-policies.md), and the
//! "does this node change warrant an early pass" test (docs/design-policies.md#early-passes).
//!
//! Pure: no IO, no clock (`now` is a parameter), no randomness, no hash collections.
//! Every output is sorted by a total key, so it does not depend on the order of the
//! snapshot's lists. No input makes these functions panic.
//!
//! Entry points: [`propose`] (both policies, node health first; [`analyze_and_propose`]
//! with the pass's pool scores),
//! [`defragmentation::evaluate_with`], [`nodehealth::evaluate_with`],
//! [`early_tick::warrants_early_pass`]. They read [`PolicySettings`], the part of the
//! configuration the policies use.
//!
//! # Choices and departures from the reference (docs/differences-from-ome-alfred.md)
//!
//! * docs/design-scoring.md#the-repack: Instances inside their per-workload cooldown stay out of
//!   the repack, so a pool whose only movable Instances cool down scores 0 (the reference repacks
//!   them).
//! * docs/design-policies.md#boosts: a move off a preemptible node prices its benefit with the
//!   preemptible source(s) counted as bins before and after the move (and uses the same bins for
//!   the emergency test), so the ×1.25 boost is reachable with the default `avoidAsTarget: true`.
//!   Those nodes stay out of the pool score and out of the targets.
//! * docs/design-scoring.md#pending-pressure: pending pressure uses the pod's real GPU count. Pool
//!   scores, the docs/design-policies.md#omenative-eligibility eligibility ladder and move pricing
//!   are `alfred-score`'s, so the policy and the published scores cannot disagree.
//! * docs/design-policies.md#defragmentation-ladder: with no executor, steady OMENative
//!   Instances say `OMENativeUnavailable` rather than `NonExecutableObservedFragmentation`;
//!   reasons earlier in the ladder (model, surface disabled, cooldown, not movable, not steady,
//!   invalid observation) still win, so most such rows, not all, say `OMENativeUnavailable`.
//! * Advice rows carry no hints (docs/design-policies.md#candidates); only executable rows
//!   carry `hintTargetNodes` and `placementTargetNodes`.
//! * The emergency's tenant lookup accepts the pod's `ome.io/inferenceservice` as `name`
//!   (in the pod's namespace) or as `namespace/name`.
//! * Every sort is completed with the remaining row fields (`fromNode`, advisory reason), so
//!   the output is a total order even for rows the documented keys leave tied.
//! * `NodeMarker` carries what the reporter needs; record lifecycle and Node events are the
//!   reporter's (docs/design-pass.md).
//!
//! # Example
//!
//! A node whose GPUs failed: the node-health policy marks it (the reporter's node record
//! and Node event come from the marker).
//!
//! ```
//! use alfred_model::config::Config;
//! use alfred_model::snapshot::{HealthState, Node, NodeCondition};
//! use alfred_model::{ClusterSnapshot, Timestamp};
//!
//! let now = Timestamp::from_unix_secs(1_790_000_000);
//! let mut node = Node {
//!     name: "gpu-a".into(),
//!     pool: Some("H100".into()),
//!     gpu_resource: "nvidia.com/gpu".into(),
//!     total_gpus: 8,
//!     free_gpus: 8,
//!     ready: true,
//!     ..Node::default()
//! };
//! node.health.state = HealthState::Unhealthy;
//! node.health.conditions = vec![NodeCondition {
//!     kind: "GpuUnhealthy".into(),
//!     status: "True".into(),
//!     last_transition_time: Some(now.plus_minutes(-60)),
//! }];
//! let mut snapshot = ClusterSnapshot { observed_at: now, nodes: vec![node], ..ClusterSnapshot::default() };
//! snapshot.normalize();
//! let proposal = alfred_policy::propose(&snapshot, &Config::builtin(), now);
//! assert_eq!(proposal.node_markers[0].node, "gpu-a");
//! assert!(proposal.candidates.is_empty(), "nothing runs there to move");
//! ```

#![warn(missing_docs, unreachable_pub)]

mod advice_counts;
mod context;
pub mod defragmentation;
pub mod drain;
pub mod early_tick;
mod eligibility;
pub mod nodehealth;
mod rows;
pub mod settings;
mod surge;
mod walk_chunks;
#[cfg(test)]
use alfred_testkit as testkit;

use alfred_model::Timestamp;
use alfred_model::config::Config;
use alfred_model::plan::PlanRecord;
use alfred_model::record::Candidate;
use alfred_model::snapshot::ClusterSnapshot;
use alfred_score::{Analysis, ScoreSettings};

pub use advice_counts::{CountedAdvice, count_rows as count_advice_rows};
pub use drain::DrainProposal;
pub use early_tick::EarlyTickReason;
pub use nodehealth::{NodeHealthOutput, NodeMarker};
pub use settings::{Aggressiveness, PolicySettings, Window};

/// What the policies propose in one pass.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Proposal {
    /// Node-health findings (ranked, docs/design-policies.md#ranking-of-findings), then
    /// defragmentation rows (sorted, docs/design-policies.md#defragmentation-pass).
    pub candidates: Vec<Candidate>,
    /// Node markers for the reporter's `node.<name>` records and Node events.
    pub node_markers: Vec<NodeMarker>,
    /// Drain plans (docs/design-policies.md#drain-plans): their steps are among `candidates`.
    pub drain: DrainProposal,
    /// Under [`PolicySettings::count_advice`], the defragmentation walk's advice rows, counted
    /// instead of among `candidates` (none otherwise).
    pub counted_advice: CountedAdvice,
}

/// Runs both policies: node health first, then defragmentation (docs/design-pass.md#pass-pipeline).
pub fn propose(snapshot: &ClusterSnapshot, config: &Config, now: Timestamp) -> Proposal {
    propose_with(snapshot, &PolicySettings::from_config(config), now)
}

/// [`propose`] with the policies' settings given directly.
pub fn propose_with(
    snapshot: &ClusterSnapshot,
    settings: &PolicySettings,
    now: Timestamp,
) -> Proposal {
    propose_with_plans(snapshot, settings, now, &[])
}

/// [`propose_with`] with the drain plans of the dispatch state (`plans`: active and recently
/// ended), which active plans go on and which pools back off.
pub fn propose_with_plans(
    snapshot: &ClusterSnapshot,
    settings: &PolicySettings,
    now: Timestamp,
    plans: &[PlanRecord],
) -> Proposal {
    let cfg = settings.sanitized();
    let ctx = context::Ctx::new(snapshot, &cfg, now);
    propose_in(&ctx, plans)
}

/// alfred-score's analysis of `snapshot` (at its `observed_at`, with `scoring`: the pass's
/// pool scores) and [`propose_with`], analysing the snapshot once for both when the
/// policies would analyse the very same thing: the snapshot needs no normalizing copy
/// (see [`propose_with`]'s context), `now` is its `observed_at`, and the policies' scoring
/// settings are `scoring` (after repair). Otherwise the policies analyse it themselves.
/// Either way the result is exactly `(alfred_score::analyze(snapshot, scoring),
/// propose_with(snapshot, settings, now))`; a decision pass scores every pool and proposes
/// on the same snapshot, and one analysis was ~10% of a pass.
///
/// On a large snapshot (at least [`CONCURRENT_MIN_PODS`] bound pods), when
/// `settings.helper_threads` allows it, the analysis, then half of the check of the
/// snapshot's order, run on another thread while this one checks the rest and indexes the
/// names; the two read the snapshot only, so the result is the same. With a helper thread
/// the defragmentation walk is shared too, beside the drain-plan search
/// (`walk_chunks`).
pub fn analyze_and_propose<'s>(
    snapshot: &'s ClusterSnapshot,
    scoring: &ScoreSettings,
    settings: &PolicySettings,
    now: Timestamp,
) -> (Analysis<'s>, Proposal) {
    analyze_and_propose_with_plans(snapshot, scoring, settings, now, &[])
}

/// [`analyze_and_propose`] with the drain plans of the dispatch state (see
/// [`propose_with_plans`]).
pub fn analyze_and_propose_with_plans<'s>(
    snapshot: &'s ClusterSnapshot,
    scoring: &ScoreSettings,
    settings: &PolicySettings,
    now: Timestamp,
    plans: &[PlanRecord],
) -> (Analysis<'s>, Proposal) {
    analyze_and_propose_at_once(
        snapshot,
        scoring,
        settings,
        now,
        settings.helper_threads && snapshot.pods.len() >= CONCURRENT_MIN_PODS,
        plans,
    )
}

/// The fewest bound pods for which [`analyze_and_propose`] analyses on another thread:
/// below it, starting the thread costs about what it saves.
pub const CONCURRENT_MIN_PODS: usize = 2048;

/// [`analyze_and_propose`], the analysis on another thread when `concurrent`.
fn analyze_and_propose_at_once<'s>(
    snapshot: &'s ClusterSnapshot,
    scoring: &ScoreSettings,
    settings: &PolicySettings,
    now: Timestamp,
    concurrent: bool,
    plans: &[PlanRecord],
) -> (Analysis<'s>, Proposal) {
    let cfg = settings.sanitized();
    let (prepared, analysis) = if concurrent {
        context::PassSnapshot::beside(snapshot, || alfred_score::analyze(snapshot, scoring))
    } else {
        (
            context::PassSnapshot::of(snapshot),
            alfred_score::analyze(snapshot, scoring),
        )
    };
    // Offered, and adopted when it is the pass's own (`context::PassAnalysis`).
    let ctx = context::Ctx::with(prepared, &cfg, now, Some((&analysis, scoring)));
    let proposal = propose_in(&ctx, plans);
    drop(ctx);
    (analysis, proposal)
}

fn propose_in(ctx: &context::Ctx<'_>, plans: &[PlanRecord]) -> Proposal {
    let nh = nodehealth::run(ctx);
    // One analysis for the walk and the drain-plan search (a whole scoring of the
    // snapshot: on a large cluster, about as much as the search itself).
    // Not made with defragmentation disabled: the walk and the search would find nothing.
    let analysis = ctx
        .inputs
        .cfg
        .defragmentation_enabled
        .then(|| ctx.analysis());
    // The drain-plan search reads the walk's context and analysis, not its rows: it runs
    // while a helper thread starts on the walk.
    let (walked, drain) = match analysis.as_deref() {
        Some(a) => defragmentation::run_beside(ctx, a, || {
            if ctx.inputs.cfg.drain_plans_enabled {
                drain::run(ctx, a, plans)
            } else {
                DrainProposal::default()
            }
        }),
        None => (Default::default(), DrainProposal::default()),
    };
    let defragmentation::Walked {
        rows: mut defrag,
        mut aside,
        keys,
        nodes,
    } = walked;
    // A plan's rows take the place of its Instances' own defragmentation rows (one row per
    // Instance), ahead of the other moves.
    let steps = if drain.plans.is_empty() {
        Vec::new()
    } else {
        drain::candidates(ctx, &drain)
    };
    if !steps.is_empty() {
        // Counted advice included: a step's row replaces its Instance's row, counted or not.
        let is_step = |workload: &str, component, instance| {
            steps.iter().any(|s| {
                s.workload == workload && s.component == component && s.instance == instance
            })
        };
        defrag.retain(|r| !is_step(&r.workload, r.component, r.instance));
        aside.retain(|r| {
            let workload = keys.get(r.workload as usize).unwrap_or_default();
            !is_step(workload, r.component, r.instance)
        });
    }
    // Rows are large and a big cluster's pass has thousands: moved once at most.
    let candidates = if nh.candidates.is_empty() && steps.is_empty() {
        defrag
    } else {
        let mut all = Vec::with_capacity(nh.candidates.len() + steps.len() + defrag.len());
        all.extend(nh.candidates);
        all.extend(steps);
        all.extend(defrag);
        all
    };
    Proposal {
        candidates,
        node_markers: nh.node_markers,
        drain,
        counted_advice: CountedAdvice::new(aside, keys, nodes),
    }
}

#[cfg(test)]
mod tests;
