//! `fleet.json`, a fleet folder's timeline, and the hub's copy of the policy beside it
//! (fixtures/plumb/README.md#a-fleet-folder). Everything is checked when read: unknown
//! fields, members the policy does not list, steps out of time order, each named by its
//! path (`steps[2].reports.b`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plumb_model::{AdaptivePolicy, AdaptivePolicySpec, FleetStatus, Intent, Timestamp};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::objects::InputError;

/// The timeline's file name; its presence makes a folder a fleet folder.
pub const FLEET_FILE: &str = "fleet.json";
/// The policy's file names, tried in this order.
pub const POLICY_FILES: [&str; 2] = ["policy.yaml", "policy.json"];
/// The most hub steps one timeline entry may stand for (`repeat`).
pub const MAX_REPEAT: u32 = 1000;
/// The most hub steps one timeline may stand for, all entries together.
pub const MAX_STEPS: u64 = 10_000;

/// `fleet.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Timeline {
    /// The hub's identity, `<cluster>/<pod>` (default: the first member's `/plumb-0`).
    #[serde(default)]
    pub hub: String,
    /// The `status.fleet` the hub adopts (default: none, Steady).
    #[serde(default)]
    pub fleet: Option<FleetStatus>,
    /// The route weights before the first step (default: the Steady weights, when the policy
    /// manages traffic).
    #[serde(default)]
    pub weights: Option<BTreeMap<String, u32>>,
    /// The steps, in time order.
    pub steps: Vec<Step>,
    /// Where it was read (for error lines).
    #[serde(skip)]
    file: PathBuf,
}

/// One timeline entry: one hub step, or `repeat` steps `everySeconds` apart.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// The (first) step's time.
    pub time: Timestamp,
    /// How many steps this entry stands for (default 1).
    #[serde(default = "one")]
    pub repeat: u32,
    /// Seconds between repeated steps (default 60).
    #[serde(default = "sixty")]
    pub every_seconds: u64,
    /// Reports by member: the fields that changed since its last report (merged over it),
    /// `null` for no report. The report's `time` is the step's unless given; `specHash` is the
    /// one the hub expects unless given.
    #[serde(default)]
    pub reports: BTreeMap<String, Option<Map<String, Value>>>,
    /// Members that do not report at this step: their last report keeps its time. Every
    /// other member reports again (its last report, at the step's time).
    #[serde(default)]
    pub silent: Vec<String>,
    /// Members whose report comes from a recorded member folder (relative to the fleet
    /// folder), through the member report at the step's time.
    #[serde(default)]
    pub members: BTreeMap<String, String>,
    /// Intents as read at this step, overriding what the hub wrote (`null`: none).
    #[serde(default)]
    pub intents: BTreeMap<String, Option<Intent>>,
    /// Route weights as read at this step, overriding what the hub wrote.
    #[serde(default)]
    pub weights: Option<BTreeMap<String, u32>>,
    /// The step's writes fail with this error (the decision is logged as not applied).
    #[serde(default)]
    pub write_fails: Option<String>,
}

fn one() -> u32 {
    1
}

fn sixty() -> u64 {
    60
}

impl Step {
    /// The times of the hub steps this entry stands for.
    pub fn times(&self) -> impl Iterator<Item = Timestamp> + '_ {
        (0..self.repeat).map(|i| {
            self.time.plus(std::time::Duration::from_secs(
                self.every_seconds.saturating_mul(u64::from(i)),
            ))
        })
    }

    fn last_time(&self) -> Timestamp {
        self.times().last().unwrap_or(self.time)
    }
}

impl Timeline {
    /// Parses and checks `fleet.json` against the policy's members. The error names the
    /// field.
    pub fn parse(text: &str, policy: &AdaptivePolicy) -> Result<Timeline, String> {
        let mut de = serde_json::Deserializer::from_str(text);
        let mut timeline: Timeline = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let inner = crate::one_line(&e.into_inner().to_string());
            if path == "." {
                inner
            } else {
                format!("{path}: {inner}")
            }
        })?;
        timeline.check(&policy.spec)?;
        if timeline.hub.is_empty() {
            let config = plumb_core::hub::HubConfig::from_spec(&policy.spec);
            let first = config.clusters.first().map_or("hub", |c| c.name.as_str());
            timeline.hub = format!("{first}/plumb-0");
        }
        Ok(timeline)
    }

    fn check(&self, spec: &AdaptivePolicySpec) -> Result<(), String> {
        let config = plumb_core::hub::HubConfig::from_spec(spec);
        let names: Vec<&str> = config.clusters.iter().map(|c| c.name.as_str()).collect();
        let member = |path: String, name: &str| {
            if names.contains(&name) {
                Ok(())
            } else {
                Err(format!(
                    "{path}: {name} is not a member of the policy ({})",
                    names.join(", ")
                ))
            }
        };
        if self.steps.is_empty() {
            return Err("steps: no step".to_owned());
        }
        for name in self.weights.iter().flat_map(BTreeMap::keys) {
            member("weights".to_owned(), name)?;
        }
        let total: u64 = self.steps.iter().map(|s| u64::from(s.repeat)).sum();
        if total > MAX_STEPS {
            return Err(format!(
                "steps: {total} hub steps, at most {MAX_STEPS} in one timeline"
            ));
        }
        let mut previous: Option<Timestamp> = None;
        for (i, step) in self.steps.iter().enumerate() {
            if step.repeat == 0 || step.repeat > MAX_REPEAT {
                return Err(format!(
                    "steps[{i}].repeat: must be 1 to {MAX_REPEAT} (is {})",
                    step.repeat
                ));
            }
            if step.every_seconds == 0 && step.repeat > 1 {
                return Err(format!("steps[{i}].everySeconds: must be above 0"));
            }
            if previous.is_some_and(|p| step.time <= p) {
                return Err(format!(
                    "steps[{i}].time: {} is not after the previous step",
                    step.time.to_rfc3339()
                ));
            }
            previous = Some(step.last_time());
            for name in step.reports.keys() {
                member(format!("steps[{i}].reports"), name)?;
            }
            for name in &step.silent {
                member(format!("steps[{i}].silent"), name)?;
            }
            for (name, folder) in &step.members {
                member(format!("steps[{i}].members"), name)?;
                if folder.is_empty() || Path::new(folder).is_absolute() || folder.contains("..") {
                    return Err(format!(
                        "steps[{i}].members.{name}: {folder:?} must be a folder inside the fleet folder"
                    ));
                }
            }
            for name in step.intents.keys() {
                member(format!("steps[{i}].intents"), name)?;
            }
            for name in step.weights.iter().flat_map(BTreeMap::keys) {
                member(format!("steps[{i}].weights"), name)?;
            }
        }
        Ok(())
    }

    /// The route weights before the first step.
    pub fn initial_weights(&self, spec: &AdaptivePolicySpec) -> Option<BTreeMap<String, u32>> {
        self.weights.clone().or_else(|| {
            spec.traffic.as_ref().map(|_| {
                plumb_core::hub::HubConfig::from_spec(spec)
                    .clusters
                    .iter()
                    .map(|c| (c.name.clone(), c.weight))
                    .collect()
            })
        })
    }

    /// `fleet.json`'s path, for error lines.
    pub fn dir_file(&self) -> PathBuf {
        self.file.clone()
    }

    /// Records where it was read.
    pub fn read_from(mut self, file: PathBuf) -> Timeline {
        self.file = file;
        self
    }
}

/// Reads the hub's copy of the policy (`policy.yaml` or `policy.json`) and checks it.
pub fn read_policy(dir: &Path) -> Result<AdaptivePolicy, InputError> {
    let Some(path) = POLICY_FILES
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.is_file())
    else {
        return Err(InputError {
            path: dir.to_path_buf(),
            message: format!("a fleet folder needs {}", POLICY_FILES.join(" or ")),
        });
    };
    let text = super::read_text(&path)?;
    let (policy, checked) = crate::policy::check_text(&text);
    let error = |message: String| InputError {
        path: path.clone(),
        message,
    };
    if let Some(first) = checked.problems.first() {
        return Err(error(first.to_string()));
    }
    policy.ok_or_else(|| error("not a policy".to_owned()))
}
