//! alfred's arbiter (docs/design.md#arbiter).
//!
//! In execute mode the arbiter takes the executable moves of both policies one at a time —
//! moves off Unhealthy nodes, then off nodes due for maintenance, then defragmentation;
//! by score, highest first; smaller Instances first — and admits a move that passes its
//! checks: the global limits and cooldowns, one move per InferenceService and per target
//! node in a pass, and room on a target node. The first check a move fails gives its
//! rejection reason.
//!
//! * [`arbitrate`] / [`arbitrate_one`]: the gates (docs/design.md#gates) and the target replay
//!   (docs/design.md#target-selection).
//! * [`migrations_started_within`] / [`started_migrations_within`]: **the one** counting
//!   function of started migrations (union by identity), shared with the dispatcher's
//!   budget check (docs/design.md#hourly-budget); [`migrations_in_flight`] the in-flight count.
//! * [`Ledger`]: alfred's own requests, **durable** (docs/design.md#ledger; the dispatcher
//!   persists it, its JSON schema is in [`ledger`]). [`Breaker`]: the circuit breaker,
//!   **not durable** (docs/design.md#circuit-breaker: a new leader starts the count afresh).
//!
//! Pure: no IO, no clock, no randomness, no hash collections; never panics.
//!
//! # Decisions this crate takes
//!
//! * Node cooling works at admission (docs/design.md#cooldowns), but the documented arbiter reasons
//!   (docs/reasons.md#arbiter-reasons) have no `NodeCooldown`. A move off a
//!   source node that one of alfred's own requests used less than
//!   `perNodeCooldownMinutes` ago is rejected as `Cooldown` (skipped for `NodeUnhealthy`);
//!   a target node in that state is refused like a node that already receives a move
//!   this pass, `TargetNodeBusy`. The dispatcher still reports `NodeCooldown` /
//!   `TargetCooldown` from its own budget check.
//! * Besides `Node::unavailable()`, a target is refused as `TargetUnavailable` when it is
//!   not Ready, preemptible while avoided (`spotPolicy.avoidAsTarget`, or the workload's
//!   `spot-policy: avoid`), outside the model's allowed nodes, or the move's own source —
//!   defence in depth; the policies already keep such nodes out of the targets.
//! * Live ledger records (alfred's requests not yet ended) claim their GPUs, count in
//!   flight (united by identity with the cluster's active migrations) and keep their
//!   workload `WorkloadBusy`; an explicit absorption time counts as the workload's last
//!   migration end for `Cooldown`.
//! * Hourly count: an annotation without `requested_at`, a malformed annotation and a
//!   status row without `startedAt` count (fail closed); future instants count.
//! * `cooldownOverridden` is set only on admitted verdicts.
//!
//! # Example
//!
//! With nothing proposed there is nothing to admit; a candidate would get a verdict,
//! admitted or rejected with one of the gates' reasons.
//!
//! ```
//! use alfred_arbiter::{ArbiterSettings, Breaker, Ledger, arbitrate};
//! use alfred_model::config::Config;
//! use alfred_model::{ClusterSnapshot, Timestamp};
//!
//! let now = Timestamp::from_unix_secs(1_790_000_000);
//! let snapshot = ClusterSnapshot { observed_at: now, ..ClusterSnapshot::default() };
//! let settings = ArbiterSettings::from_config(&Config::builtin());
//! let breaker = Breaker::new();
//! assert!(!breaker.is_open(now));
//! let arbitration = arbitrate(&[], &snapshot, &settings, &Ledger::new(), &breaker, now);
//! assert!(arbitration.order.is_empty());
//! ```

#![warn(missing_docs, unreachable_pub)]

pub mod arbiter;
pub mod breaker;
pub use alfred_model::count;
pub mod ledger;
pub mod settings;

pub use arbiter::{Arbitration, arbitrate, arbitrate_one, arbitration_order, evacuating_nodes};
pub use breaker::{BREAKER_MIN_OUTCOMES, BREAKER_OPEN_FOR, BREAKER_WINDOW, Breaker};
pub use count::{
    identity, in_flight_migrations, migrations_in_flight, migrations_started_within,
    started_migrations_within, within_window,
};
pub use ledger::{DispatchRecord, LEDGER_VERSION, Ledger, NodeClaim};
pub use settings::{ArbiterSettings, HOURLY_WINDOW, LEDGER_MIN_RETENTION};
