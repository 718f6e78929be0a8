//! Tests of the hub's step: a small in-memory fleet carries the effects out between steps.

mod allocation;
mod convergence;
mod outcomes;
mod phases;
mod properties;
mod readiness;
mod release;
mod reports;
mod story;
mod traffic;

use std::collections::BTreeMap;

use plumb_model::{
    AdaptivePolicySpec, FinishedDecision, FleetStatus, Intent, Report, Sample, Tier, Timestamp,
};
use serde_json::{Value, json};

use super::*;

pub(super) fn t(secs: i64) -> Timestamp {
    Timestamp::from_unix_secs(1_790_000_000 + secs)
}

pub(super) fn sample(value: f64, at: Timestamp) -> Sample {
    Sample { value, time: at }
}

/// A policy over members `a` (home, Steady weight 100, a NodePool) and `b`, `c` (helpers).
pub(super) fn base_spec() -> Value {
    json!({
        "mode": "auto",
        "workload": {"name": "llm"},
        "clusters": [
            {"name": "a", "nodePools": ["gpu"], "maxReplicas": 10, "weight": 100, "backend": {"name": "a"}},
            {"name": "b", "maxReplicas": 10, "weight": 0, "backend": {"name": "b"}},
            {"name": "c", "nodePools": ["gpu"], "maxReplicas": 10, "weight": 0, "backend": {"name": "c"}}
        ],
        "capacity": {"step": 2},
        "traffic": {"routes": [{"cluster": "a", "namespace": "x", "name": "r"}], "stepPercent": 10},
        "escalation": {"after": "2m", "earlyAfter": "30s", "readyTimeout": "10m", "cooldown": "1m", "calmFor": "10m"}
    })
}

pub(super) fn spec_of(value: Value) -> AdaptivePolicySpec {
    serde_json::from_value(value).expect("test spec parses")
}

/// A fresh, in-sync report at `at` with nothing short and no room.
pub(super) fn report(at: Timestamp, desired: u32) -> Report {
    Report {
        time: Some(at),
        desired_replicas: desired,
        ready_replicas: desired,
        spec_hash: "h".to_string(),
        ..Report::default()
    }
}

/// A report that is short of `need` since `since`.
pub(super) fn short(at: Timestamp, desired: u32, need: u32, since: Timestamp) -> Report {
    Report {
        needed_replicas: need,
        unschedulable_replicas: need,
        short_since: Some(since),
        ..report(at, desired)
    }
}

/// The fleet the tests drive: members' inputs and route weights, with a hub.
pub(super) struct Fleet {
    pub spec: AdaptivePolicySpec,
    pub members: BTreeMap<String, MemberInput>,
    pub weights: Option<BTreeMap<String, u32>>,
    pub hub: Hub,
    pub steps: u32,
}

impl Fleet {
    pub fn new(spec: Value) -> Fleet {
        let spec = spec_of(spec);
        let members = HubConfig::from_spec(&spec)
            .clusters
            .iter()
            .map(|c| {
                let input = MemberInput {
                    expected_hash: "h".to_string(),
                    ..MemberInput::default()
                };
                (c.name.clone(), input)
            })
            .collect();
        let weights = spec.traffic.is_some().then(|| {
            HubConfig::from_spec(&spec)
                .clusters
                .iter()
                .map(|c| (c.name.clone(), c.weight))
                .collect()
        });
        Fleet {
            spec,
            members,
            weights,
            hub: Hub::new("ns/llm", "a/plumb-0", FleetStatus::default()),
            steps: 0,
        }
    }

    pub fn report(&mut self, name: &str, report: Report) {
        self.members.get_mut(name).expect("member").report = Some(report);
    }

    pub fn no_report(&mut self, name: &str) {
        self.members.get_mut(name).expect("member").report = None;
    }

    /// One step at `now`, with every write carried out.
    pub fn step(&mut self, now: Timestamp) -> StepOutput {
        self.steps += 1;
        let suffix = format!("{:08x}", self.steps);
        let input = StepInput {
            spec: &self.spec,
            members: &self.members,
            weights: self.weights.as_ref(),
            now,
            id_suffix: &suffix,
        };
        let out = self.hub.step(&input);
        for effect in &out.effects {
            match effect {
                Effect::WriteIntent {
                    cluster, intent, ..
                } => {
                    self.members.get_mut(cluster).expect("member").intent = intent.clone();
                }
                Effect::WriteWeights { weights } => self.weights = Some(weights.clone()),
                Effect::Event(_) | Effect::Metric(_) => {}
            }
        }
        out
    }

    pub fn floor(&self, name: &str) -> u32 {
        self.hub
            .fleet()
            .clusters
            .iter()
            .find(|c| c.name == name)
            .map_or(0, |c| c.floor)
    }

    pub fn weight(&self, name: &str) -> Option<u32> {
        self.hub
            .fleet()
            .clusters
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.weight)
    }

    pub fn phase(&self) -> Phase {
        self.hub.fleet().phase.unwrap_or(Phase::Steady)
    }
}

pub(super) fn message(out: &StepOutput) -> String {
    out.decision
        .as_ref()
        .map(|d| d.message.clone())
        .unwrap_or_default()
}

pub(super) fn events(out: &StepOutput) -> Vec<(String, String)> {
    out.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Event(ev) => Some((ev.reason.clone(), ev.message.clone())),
            _ => None,
        })
        .collect()
}

pub(super) fn writes(out: &StepOutput) -> usize {
    out.effects
        .iter()
        .filter(|e| matches!(e, Effect::WriteIntent { .. } | Effect::WriteWeights { .. }))
        .count()
}
