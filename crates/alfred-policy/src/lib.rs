//! alfred's policies: defragmentation and node health (alfred-policies.md §C–§E), and the
//! "does this node change warrant an early pass" test (§D.8).
//!
//! Pure: no IO, no clock (`now` is a parameter), no randomness, no hash collections.
//! Every output is sorted by a total key, so it does not depend on the order of the
//! snapshot's lists. No input makes these functions panic.
//!
//! Entry points: [`propose`] (both policies, node health first),
//! [`defragmentation::evaluate_with`], [`nodehealth::evaluate_with`],
//! [`early_tick::warrants_early_pass`]. They read [`PolicySettings`], the part of the
//! configuration the policies use.

mod common;
pub mod defragmentation;
pub mod early_tick;
pub mod nodehealth;
pub mod pool;
pub mod settings;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

use alfred_model::Timestamp;
use alfred_model::config::Config;
use alfred_model::record::Candidate;
use alfred_model::snapshot::ClusterSnapshot;

pub use early_tick::EarlyTickReason;
pub use nodehealth::{NodeHealthOutput, NodeMarker};
pub use settings::{Aggressiveness, PolicySettings, Window};

/// What the policies propose in one pass.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Proposal {
    /// Node-health findings (ranked, §D.5), then defragmentation rows (sorted, §C.1).
    pub candidates: Vec<Candidate>,
    /// Node markers for the reporter's `node.<name>` records and Node events.
    pub node_markers: Vec<NodeMarker>,
}

/// Runs both policies: node health first, then defragmentation (alfred-engine.md §5.3).
pub fn propose(snapshot: &ClusterSnapshot, config: &Config, now: Timestamp) -> Proposal {
    propose_with(snapshot, &PolicySettings::from_config(config), now)
}

/// [`propose`] with the policies' settings given directly.
pub fn propose_with(
    snapshot: &ClusterSnapshot,
    settings: &PolicySettings,
    now: Timestamp,
) -> Proposal {
    let cfg = settings.sanitized();
    let ctx = common::Ctx::new(snapshot, &cfg, now);
    let nh = nodehealth::run(&ctx);
    let mut candidates = nh.candidates;
    candidates.extend(defragmentation::run(&ctx));
    Proposal {
        candidates,
        node_markers: nh.node_markers,
    }
}

#[cfg(test)]
mod tests;
