//! The working plan of one step: every cluster's floor and share as the step found them, and
//! as it leaves them, with what changed and why.

use std::collections::BTreeMap;

use plumb_model::spec::Mode;
use plumb_model::{FleetCluster, FleetStatus, Intent, Phase, Tier, Timestamp};

use super::config::HubConfig;
use super::decision::{Action, ClusterState};
use super::effects::Event;
use super::members::MemberInput;
use super::traffic::largest_remainder;

/// The step's working state.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Per cluster (spec members only), keyed by name.
    pub clusters: BTreeMap<String, FleetCluster>,
    /// The phase.
    pub phase: Phase,
    /// Since when.
    pub phase_since: Timestamp,
    /// What changed.
    pub action: Action,
    /// Whether the phase changed.
    pub phase_changed: bool,
    /// One clause per change, in the order made.
    pub messages: Vec<String>,
    /// Members whose floor was due for release but kept.
    pub held: Vec<String>,
    /// Events other than the decision's own.
    pub events: Vec<Event>,
}

/// A floor's tier, with an intent written before tiers existed counting as existing nodes.
pub fn tier_of(cluster: &FleetCluster) -> Tier {
    cluster.tier.unwrap_or(Tier::ExistingNodes)
}

impl Plan {
    /// The plan as the step finds it: floors from the members' intents in auto mode (what the
    /// scalers serve), from the hub's own simulated `status.fleet` in shadow; shares from the
    /// routes in auto mode, simulated in shadow; clocks from `status.fleet`.
    pub fn load(
        config: &HubConfig,
        fleet: &FleetStatus,
        members: &BTreeMap<String, MemberInput>,
        weights: Option<&BTreeMap<String, u32>>,
        now: Timestamp,
    ) -> Plan {
        let kept_by_name: BTreeMap<&str, &FleetCluster> = fleet
            .clusters
            .iter()
            .map(|f| (f.name.as_str(), f))
            .collect();
        let clusters = config
            .clusters
            .iter()
            .map(|c| {
                let kept = kept_by_name.get(c.name.as_str()).copied();
                let mut cluster = kept.cloned().unwrap_or_else(|| FleetCluster {
                    name: c.name.clone(),
                    ..FleetCluster::default()
                });
                if config.mode == Mode::Auto {
                    let intent = members.get(&c.name).and_then(|m| m.intent.as_ref());
                    adopt_intent(&mut cluster, intent);
                }
                cluster.weight = config.traffic.then(|| {
                    let routed = weights.and_then(|w| w.get(&c.name)).copied();
                    let simulated = kept.and_then(|k| k.weight);
                    match config.mode {
                        Mode::Auto => routed.or(simulated),
                        Mode::Shadow => simulated.or(routed),
                    }
                    .unwrap_or(c.weight)
                });
                (c.name.clone(), cluster)
            })
            .collect();
        let mut clusters = clusters;
        normalise_shares(config, &mut clusters);
        Plan {
            clusters,
            phase: fleet.phase.unwrap_or(Phase::Steady),
            phase_since: fleet.phase_since.unwrap_or(now),
            action: Action::default(),
            phase_changed: false,
            messages: Vec::new(),
            held: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Each cluster's floor, static flag and share.
    pub fn states(&self) -> BTreeMap<String, ClusterState> {
        self.clusters
            .iter()
            .map(|(name, c)| {
                let state = ClusterState {
                    floor: c.floor,
                    static_: c.floor > 0 && c.added > 0 && c.static_,
                    weight: c.weight,
                };
                (name.clone(), state)
            })
            .collect()
    }

    /// Sum of `added` over the floors raised for a shortage (tiers 0 and 1).
    pub fn added_for_shortage(&self) -> u32 {
        self.clusters
            .values()
            .filter(|c| c.floor > 0 && tier_of(c) != Tier::Return)
            .map(|c| c.added)
            .sum()
    }

    /// Whether any cluster holds a floor.
    pub fn any_floor(&self) -> bool {
        self.clusters.values().any(|c| c.floor > 0)
    }

    /// Sets a new phase, noting the change.
    pub fn enter(&mut self, phase: Phase, now: Timestamp) {
        if self.phase != phase {
            self.phase = phase;
            self.phase_since = now;
            self.phase_changed = true;
        }
    }
}

/// Shares read from routes that do not sum to 100 (relative weights, a cluster missing from
/// the route) are turned into whole percents by largest remainder; none at all, or all 0,
/// read as the Steady shares.
fn normalise_shares(config: &HubConfig, clusters: &mut BTreeMap<String, FleetCluster>) {
    let parts: BTreeMap<String, f64> = clusters
        .iter()
        .filter_map(|(n, c)| c.weight.map(|w| (n.clone(), f64::from(w))))
        .collect();
    let sum: f64 = parts.values().sum();
    if parts.is_empty() || sum == 100.0 {
        return;
    }
    let shares = if sum > 0.0 {
        largest_remainder(&parts, 100)
    } else {
        config
            .clusters
            .iter()
            .map(|c| (c.name.clone(), c.weight))
            .collect()
    };
    for (name, cluster) in clusters.iter_mut() {
        if cluster.weight.is_some() {
            cluster.weight = shares.get(name).copied();
        }
    }
}

/// Takes floor, added and tier from the intent the member holds.
fn adopt_intent(cluster: &mut FleetCluster, intent: Option<&Intent>) {
    match intent.filter(|i| i.replicas > 0) {
        Some(i) => {
            cluster.floor = i.replicas;
            cluster.added = i.added.min(i.replicas);
            cluster.tier = i.tier;
            cluster.static_ = i.tier == Some(Tier::ExistingNodes);
        }
        None => {
            cluster.floor = 0;
            cluster.added = 0;
            cluster.tier = None;
            cluster.static_ = false;
        }
    }
}
