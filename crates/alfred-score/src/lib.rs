//! Fragmentation scoring of GPU pools, as docs/design-scoring.md describes it: cooling
//! Instances stay out of the repack (docs/design-scoring.md#the-repack), pending pressure is
//! judged at the pod's real size (docs/design-scoring.md#pending-pressure), the prior is used as
//! configured and the score clamped (docs/design-scoring.md#demand-and-weights), all in `f64`.
//!
//! Per pool: schedulable bins (docs/design-scoring.md#schedulable-bins), `slots(s)` including sizes
//! above a node (docs/design-scoring.md#slots), `frag(s)`
//! (docs/design-scoring.md#per-size-fragmentation), demand weights
//! (docs/design-scoring.md#demand-and-weights), `F_observed`, the first-fit-decreasing repack of
//! the movable Instances with a fixed denominator and `F_best` (docs/design-scoring.md#the-repack),
//! `F_reclaimable`, pending pressure (docs/design-scoring.md#pending-pressure), the noisy-OR score
//! (docs/design-scoring.md#score) and the threshold case (docs/design-scoring.md#threshold-cases).
//! With the executor unavailable nothing is movable, so the score is 0
//! (docs/design-scoring.md#scores-without-an-executor).
//!
//! Entry points:
//!
//! * [`score()`] (`&ClusterSnapshot`, `&Config`) → [`ClusterScore`], a thin wrapper over
//!   [`score_with`] (`&ClusterSnapshot`, [`ScoreSettings`]) → [`ClusterScore`], the
//!   published numbers (`pools[]` with `pool`, `totalFree`, `perSize`, `observed`, `best`,
//!   `reclaimable`, `pendingPressure`, `score`, `thresholdCase`);
//! * [`analyze`] → [`Analysis`]: the same plus, per pool, the observed [`Bins`], the
//!   [`Weights`] and the demand, which the defragmentation policy needs to price a move
//!   (docs/design-policies.md#benefit-cost-and-score) with [`PoolAnalysis::fragmentation`] /
//!   [`weighted_fragmentation`];
//! * [`repack_movable`] / [`repack_block`]: the documented docs/design-scoring.md#the-repack
//!   movability predicate;
//! * [`omenative_eligibility`], [`model_block`], [`in_cooldown`]: the
//!   docs/design-policies.md#omenative-eligibility eligibility ladder, the
//!   docs/design-snapshot.md#models-and-volumes model reason and the
//!   docs/design-policies.md#cooldown-inside-the-policies cooldown, shared with the policies (which
//!   report a block as [`RepackBlock::advisory_reason`]).
//!
//! Pure: no IO, no clock (`T` is `snapshot.observed_at`), no randomness, no hash-ordered
//! collections; results do not depend on the order of the snapshot's lists. No input makes
//! it panic. One pass over Instances and pods, O(pods + nodes + Instances) plus the repack's
//! O(items · log nodes): pod keys, node names, pool keys and status strings are read through
//! the snapshot's flat index ([`alfred_model::index::SnapshotIndex`], `u32` indices and bit
//! flags built once per snapshot by [`ClusterSnapshot::index`](alfred_model::ClusterSnapshot::index)),
//! never hashed or compared per call.
//!
//! # Example
//!
//! Two 8-GPU nodes with four GPUs free each: 8 free GPUs, but no slot for an 8-GPU pod.
//!
//! ```
//! use alfred_model::config::Config;
//! use alfred_model::snapshot::Node;
//! use alfred_model::{ClusterSnapshot, Timestamp};
//!
//! let half_free = |name: &str| Node {
//!     name: name.into(),
//!     pool: Some("H100".into()),
//!     gpu_resource: "nvidia.com/gpu".into(),
//!     total_gpus: 8,
//!     allocated_gpus: 4,
//!     free_gpus: 4,
//!     ready: true,
//!     ..Node::default()
//! };
//! let mut snapshot = ClusterSnapshot {
//!     observed_at: Timestamp::from_unix_secs(1_790_000_000),
//!     nodes: vec![half_free("gpu-a"), half_free("gpu-b")],
//!     ..ClusterSnapshot::default()
//! };
//! snapshot.normalize();
//! let score = alfred_score::score(&snapshot, &Config::builtin());
//! let pool = &score.pools[0];
//! assert_eq!(pool.pool, "H100");
//! let eight = pool.per_size.iter().find(|s| s.size == 8).expect("the 8-GPU size");
//! assert_eq!(eight.frag, 1.0, "every free GPU is unusable for an 8-GPU pod");
//! ```

#![warn(missing_docs, unreachable_pub)]

mod bins;
mod movable;
mod repack;
mod score;
mod settings;

pub use bins::{Bin, Bins, LadderSlots, Weights, weighted_fragmentation};
pub use movable::{
    RepackBlock, in_cooldown, model_block, omenative_eligibility, omenative_eligibility_indexed,
    repack_block, repack_movable,
};
pub use score::{
    Analysis, ClusterScore, PoolAnalysis, PoolScore, SizeScore, ThresholdCase, analyze, analyze_at,
    score, score_with,
};
pub use settings::ScoreSettings;
