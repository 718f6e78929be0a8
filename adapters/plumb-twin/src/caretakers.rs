//! The caretakers: `plumb` (the real hub step every 10 s over the members' real reports,
//! its writes carried out, its decision and outcome lines logged), `naive` (on any shortage
//! floors and traffic move at once; none short, everything goes back at once), and the two
//! without a hub, `none` (each cluster serves its own users) and `static` (the gateways keep
//! the Steady split).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use plumb_core::fencing;
use plumb_core::hub::{Effect, Hub, MemberInput, StepInput};
use plumb_core::quorum::LeaseRecord;
use plumb_model::spec::Mode;
use plumb_model::{AdaptivePolicy, FleetStatus, Intent, Timestamp};

use crate::fleet::Fleet;
use crate::rng::Rng;
use crate::scenario::Scenario;

/// Which caretaker runs the fleet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Plumb's hub.
    Plumb,
    /// No hub, no cross-cluster routing.
    None,
    /// The Steady split, no floors.
    Static,
    /// Naive shift.
    Naive,
}

impl Kind {
    /// Every caretaker, in the summary's order.
    pub const ALL: [Kind; 4] = [Kind::Plumb, Kind::None, Kind::Static, Kind::Naive];

    /// Its name in `summary.json`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Plumb => "plumb",
            Kind::None => "none",
            Kind::Static => "static",
            Kind::Naive => "naive",
        }
    }

    /// Whether its gateways split the users' requests by the route weights.
    pub fn routed(self) -> bool {
        self != Kind::None
    }

    /// Whether its members report (the hub and the naive shift read the reports).
    pub fn reports(self) -> bool {
        matches!(self, Kind::Plumb | Kind::Naive)
    }
}

/// What a hub-like caretaker did in one step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stepped {
    /// It decided something (a decision line, or a naive change).
    pub decided: bool,
}

/// The Plumb hub and what drives it.
#[derive(Debug, Clone)]
pub struct PlumbDriver {
    hub: Hub,
    identity: String,
    members: BTreeMap<String, MemberInput>,
    ids: Rng,
    /// The decision log (decision and outcome lines).
    pub log: String,
    /// Decision lines written.
    pub decisions: u32,
}

impl PlumbDriver {
    /// A hub elected in the first member, with no adopted fleet status.
    pub fn new(policy: &AdaptivePolicy, seed: u64) -> PlumbDriver {
        let spec = &policy.spec;
        let names: Vec<String> = spec
            .clusters
            .iter()
            .flatten()
            .filter_map(|c| c.name.clone())
            .collect();
        let identity = format!("{}/plumb-0", names.first().map_or("hub", String::as_str));
        let namespace = policy.metadata.namespace.as_deref();
        let members = names
            .iter()
            .map(|n| {
                let input = MemberInput {
                    expected_hash: plumb_model::hash::member_spec_hash(spec, namespace, n),
                    ..MemberInput::default()
                };
                (n.clone(), input)
            })
            .collect();
        PlumbDriver {
            hub: Hub::new(policy.key(), identity.clone(), FleetStatus::default()),
            identity,
            members,
            ids: Rng::stream(seed, "decision-ids"),
            log: String::new(),
            decisions: 0,
        }
    }

    /// The `plumb-hub` Lease every member holds: this hub, renewed now.
    pub fn lease(&self, now: Timestamp) -> LeaseRecord {
        LeaseRecord {
            holder: Some(self.identity.clone()),
            acquire_time: None,
            renew_time: Some(now),
            lease_duration_seconds: 15,
            transitions: 0,
        }
    }

    /// One hub step at `now` over the members' latest reports and intents; carries out its
    /// writes (intents onto the members, weights onto the gateways) and logs its lines.
    pub fn step(
        &mut self,
        policy: &AdaptivePolicy,
        scenario: &Scenario,
        fleet: &mut Fleet,
        now: Timestamp,
    ) -> Stepped {
        for (i, c) in scenario.clusters.iter().enumerate() {
            if let Some(m) = self.members.get_mut(&c.name) {
                m.report.clone_from(&fleet.reports[i]);
                m.intent.clone_from(&fleet.intents[i]);
            }
        }
        let weights = fleet.weight_map(scenario);
        let suffix = format!("{:08x}", self.ids.next_u64() >> 32);
        let out = self.hub.step(&StepInput {
            spec: &policy.spec,
            members: &self.members,
            weights: Some(&weights),
            now,
            id_suffix: &suffix,
        });
        for effect in &out.effects {
            match effect {
                Effect::WriteIntent {
                    cluster, intent, ..
                } => {
                    if let Some(i) = scenario.clusters.iter().position(|c| &c.name == cluster) {
                        fleet.intents[i].clone_from(intent);
                    }
                }
                Effect::WriteWeights { weights } => {
                    for (i, c) in scenario.clusters.iter().enumerate() {
                        fleet.weights[i] = weights.get(&c.name).copied().unwrap_or(0);
                    }
                }
                Effect::Event(_) | Effect::Metric(_) => {}
            }
        }
        if let Some(d) = &out.decision {
            self.decisions += 1;
            let _ = writeln!(self.log, "{}", serde_json::to_string(d).unwrap_or_default());
        }
        for o in &out.outcomes {
            let _ = writeln!(self.log, "{}", serde_json::to_string(o).unwrap_or_default());
        }
        Stepped {
            decided: out.decision.is_some(),
        }
    }

    /// The floor cluster `i`'s scaler serves at `now`, through the real fencing check.
    pub fn served_floor(
        &self,
        policy: &AdaptivePolicy,
        scenario: &Scenario,
        fleet: &Fleet,
        i: usize,
        now: Timestamp,
    ) -> u32 {
        let mode = policy.spec.mode.unwrap_or(Mode::Shadow);
        let lease = self.lease(now);
        fencing::served_floor(
            fleet.intents[i].as_ref(),
            Some(&lease),
            mode,
            Some(scenario.clusters[i].max_replicas),
            now,
        )
    }
}

/// The naive shift: reads the same reports; while any member needs replicas, every other
/// member's floor is raised at once by as much as fits under its `maxReplicas`, and the
/// weights follow ready replicas at once; when none does, floors and weights go back at once.
#[derive(Debug, Clone, Default)]
pub struct NaiveDriver {
    /// Steps that changed something.
    pub decisions: u32,
}

impl NaiveDriver {
    /// One step at `now`.
    pub fn step(&mut self, scenario: &Scenario, fleet: &mut Fleet, now: Timestamp) -> Stepped {
        let fresh = |i: usize| {
            fleet.reports[i].as_ref().filter(|r| {
                r.time
                    .is_some_and(|t| now.since(t) <= Duration::from_secs(120))
            })
        };
        let n = scenario.clusters.len();
        let short: Vec<bool> = (0..n)
            .map(|i| fresh(i).is_some_and(|r| r.needed_replicas > 0))
            .collect();
        let need: u32 = (0..n)
            .filter(|&i| short[i])
            .filter_map(|i| fresh(i).map(|r| r.needed_replicas))
            .sum();
        let mut floors: Vec<u32> = vec![0; n];
        let mut weights: Vec<u32> = scenario.clusters.iter().map(|c| c.weight).collect();
        if need > 0 {
            let mut left = need;
            for i in (0..n).filter(|&i| !short[i]) {
                let c = &fleet.clusters[i];
                let current = fleet.intents[i].as_ref().map_or(0, |f| f.replicas);
                let base = current.max(c.desired);
                let add = scenario.clusters[i]
                    .max_replicas
                    .saturating_sub(base)
                    .min(left);
                left -= add;
                floors[i] = if add > 0 { base + add } else { current };
            }
            let ready: Vec<u32> = fleet.clusters.iter().map(|c| c.ready()).collect();
            weights = shares(&ready);
        }
        let mut changed = weights != fleet.weights;
        fleet.weights = weights;
        for (i, floor) in floors.into_iter().enumerate() {
            let intent = (floor > 0).then(|| Intent {
                replicas: floor,
                expires: Some(now.plus(Duration::from_secs(300))),
                hub: Some("naive".to_owned()),
                ..Intent::default()
            });
            let before = fleet.intents[i].as_ref().map(|f| f.replicas);
            if before != intent.as_ref().map(|f| f.replicas) {
                changed = true;
            }
            fleet.intents[i] = intent;
        }
        if changed {
            self.decisions += 1;
        }
        Stepped { decided: changed }
    }
}

/// Whole percents proportional to `parts`, summing to 100 (largest remainder, ties to the
/// lower index); all zero parts give equal shares.
pub fn shares(parts: &[u32]) -> Vec<u32> {
    let n = parts.len();
    if n == 0 {
        return Vec::new();
    }
    let total: u64 = parts.iter().map(|&p| u64::from(p)).sum();
    let parts: Vec<u64> = if total == 0 {
        vec![1; n]
    } else {
        parts.iter().map(|&p| u64::from(p)).collect()
    };
    let total: u64 = parts.iter().sum();
    let mut out: Vec<u32> = parts
        .iter()
        .map(|p| u32::try_from(p * 100 / total).unwrap_or(100))
        .collect();
    let mut rest: Vec<(u64, usize)> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| (p * 100 % total, i))
        .collect();
    rest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let given: u32 = out.iter().sum();
    for &(_, i) in rest.iter().take(100usize.saturating_sub(given as usize)) {
        out[i] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_model::Report;

    fn report(now: Timestamp, needed: u32) -> Option<Report> {
        Some(Report {
            time: Some(now),
            needed_replicas: needed,
            ..Report::default()
        })
    }

    #[test]
    fn the_naive_shift_acts_at_once_and_undoes_at_once() {
        let s = Scenario::preset("regional-shortage").unwrap();
        let mut fleet = Fleet::new(&s, 1, true, 0.0);
        let now = Timestamp::from_unix_secs(1_796_083_200);
        fleet.reports = vec![report(now, 3), report(now, 0), report(now, 0)];
        let mut naive = NaiveDriver::default();
        assert!(naive.step(&s, &mut fleet, now).decided);
        // the whole need goes to the first other member with headroom, at once
        let east_b = fleet.clusters[1].desired;
        assert_eq!(
            fleet.intents[1].as_ref().map(|i| i.replicas),
            Some(east_b + 3)
        );
        assert!(fleet.intents[0].is_none() && fleet.intents[2].is_none());
        assert_eq!(fleet.weights.iter().sum::<u32>(), 100);
        // nobody short: floors dropped and the Steady split back in the same step
        fleet.reports = vec![report(now, 0), report(now, 0), report(now, 0)];
        assert!(naive.step(&s, &mut fleet, now).decided);
        assert!(fleet.intents.iter().all(Option::is_none));
        assert_eq!(fleet.weights, vec![35, 35, 30]);
        assert!(!naive.step(&s, &mut fleet, now).decided);
        assert_eq!(naive.decisions, 2);
    }

    #[test]
    fn shares_sum_to_100() {
        assert_eq!(shares(&[1, 1, 1]), vec![34, 33, 33]);
        assert_eq!(shares(&[0, 0]), vec![50, 50]);
        assert_eq!(shares(&[3, 0, 1]), vec![75, 0, 25]);
    }
}
