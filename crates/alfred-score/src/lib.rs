//! Fragmentation scoring of GPU pools: seed 000 "How Alfred scores a pool", as
//! alfred-policies.md §B states it with the binding corrections of decisions.md (G.2/E6
//! cooling Instances stay out of the repack, G.7/E5 pending pressure at the pod's real size,
//! E16 prior as configured and score clamped, E22 `f64`).
//!
//! Per pool: schedulable bins (§B.1), `slots(s)` including sizes above a node (§B.2),
//! `frag(s)` (§B.3), demand weights (§B.4), `F_observed`, the first-fit-decreasing repack of
//! the movable Instances with a fixed denominator and `F_best` (§B.5), `F_reclaimable`,
//! pending pressure (§B.6), the noisy-OR score (§B.7) and the threshold case (§B.8). With
//! the executor unavailable nothing is movable, so the score is 0 (§B.9).
//!
//! Entry points:
//!
//! * [`score`] (`&ClusterSnapshot`, `&Config`) → [`ClusterScore`], a thin wrapper over
//!   [`score_with`] (`&ClusterSnapshot`, [`ScoreSettings`]) → [`ClusterScore`], the
//!   published numbers (`pools[]` with `pool`, `totalFree`, `perSize`, `observed`, `best`,
//!   `reclaimable`, `pendingPressure`, `score`, `thresholdCase`);
//! * [`analyze`] → [`Analysis`]: the same plus, per pool, the observed [`Bins`], the
//!   [`Weights`] and the demand, which the defragmentation policy needs to price a move
//!   (§C.5) with [`PoolAnalysis::fragmentation`] / [`weighted_fragmentation`];
//! * [`repack_movable`] / [`repack_block`]: the documented §B.5 movability predicate;
//! * [`omenative_eligibility`], [`model_block`], [`in_cooldown`]: the §C.3 eligibility
//!   ladder, the §A.8 model reason and the §C.8 cooldown, shared with the policies (which
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
