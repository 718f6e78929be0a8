//! Drain plans (docs/design-policies.md#drain-plans): what frees one node for one waiting pod, as
//! the policy proposes it, as the dispatch state keeps it, and as the record shows it.
//!
//! A plan is priced in GPUs, independently of the pool's size: the seeds' single-move
//! benefit is a share of the pool's free GPUs, so in a pool of hundreds of nodes no single
//! move can pay for itself, while freeing a whole node for a pod that waits can.

use serde::{Deserialize, Serialize};

use crate::Timestamp;
use crate::config::DrainProtection;
use crate::reason::PlanEndReason;
use crate::snapshot::ComponentKind;

/// The taint key of `protection: taint` (value: the plan id, effect `NoSchedule`).
pub const DRAIN_TAINT_KEY: &str = "alfred.ome.io/drain-plan";

/// One move of a plan: an Instance leaving the plan's node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanMove {
    /// `namespace/name` of the InferenceService.
    pub workload: String,
    /// Component.
    pub component: ComponentKind,
    /// Instance index.
    pub instance: i64,
    /// GPUs the Instance holds on the plan's node.
    pub gpus: u32,
    /// Where its pods go, in the plan (the surge plan's first fit per pod, fullest first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
}

/// A plan the policy proposes in one pass (pure data, recomputed every pass).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DrainPlan {
    /// Stable id of the (node, pod) pair: `dp-` and 12 hex digits.
    pub id: String,
    /// The pool.
    pub pool: String,
    /// The node freed.
    pub node: String,
    /// Its uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_uid: String,
    /// The waiting pod, `namespace/name`.
    pub pod: String,
    /// Its uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pod_uid: String,
    /// The GPUs it requests.
    pub pod_gpus: u32,
    /// Since when it waits.
    pub pending_since: Timestamp,
    /// The moves still to make, in order.
    pub steps: Vec<PlanMove>,
    /// Unusable free GPUs the whole plan recovers (`ΔU`).
    pub recovered_gpus: f64,
    /// `ΔU` plus the GPUs of the pod it seats, weighted by the demand for its size.
    pub benefit_gpus: f64,
    /// Steps × the aggressiveness cost × the node's GPUs.
    pub cost_gpus: f64,
    /// An active plan (already in the dispatch state) continued, not a new one.
    #[serde(default)]
    pub continued: bool,
    /// Steps of a continued plan already requested (the step numbers count them).
    #[serde(default)]
    pub done_steps: u32,
}

impl DrainPlan {
    /// `benefit − cost`, the plan's rank (higher first).
    pub fn score(&self) -> f64 {
        self.benefit_gpus - self.cost_gpus
    }

    /// `(benefit − cost) / steps`: what the plan nets per move it still has to make, the
    /// order among the plans one pod could have. Moves are the scarce resource (one request
    /// a pass, the hourly cap), so a one-step plan netting 1.8 GPUs goes before a three-step
    /// one netting 4.5 in all: its pod is seated three times sooner and the two moves saved
    /// seat the next pod.
    pub fn rank(&self) -> f64 {
        let steps = u32::try_from(self.steps.len()).unwrap_or(u32::MAX).max(1);
        self.score() / f64::from(steps)
    }

    /// GPUs the plan moves.
    pub fn moved_gpus(&self) -> u32 {
        self.steps.iter().map(|s| s.gpus).sum()
    }

    /// The one-line story the record, the table and Events tell: "moving chat/a (2 GPUs)
    /// g2-017 → g2-004 and chat/b (1) g2-017 → g2-009 frees g2-017 for prod/big-0 (8 GPUs,
    /// pending 47 min)".
    pub fn story(&self, now: Timestamp) -> String {
        let moves: Vec<String> = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let unit = if i == 0 {
                    if s.gpus == 1 { " GPU" } else { " GPUs" }
                } else {
                    ""
                };
                let to = if s.targets.is_empty() {
                    "?".to_owned()
                } else {
                    s.targets.join("+")
                };
                format!("{} ({}{unit}) {} → {to}", s.workload, s.gpus, self.node)
            })
            .collect();
        let waited = now.minutes_since(self.pending_since).max(0.0).floor();
        let verb = if moves.is_empty() {
            "nothing left to move:".to_owned()
        } else {
            format!("moving {}", join_and(&moves))
        };
        format!(
            "{verb} frees {} for {} ({} GPUs, pending {waited} min)",
            self.node, self.pod, self.pod_gpus
        )
    }
}

fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Where an active plan stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlanPhase {
    /// Started: the protection is being put in place, no step submitted yet.
    Protecting,
    /// Steps are being made.
    Draining,
    /// The node has room for the pod: waiting for the scheduler to bind it.
    Handoff,
    /// The pod bound to the node.
    Completed,
    /// Given up (see the reason).
    Abandoned,
}

impl PlanPhase {
    /// The documented string.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanPhase::Protecting => "protecting",
            PlanPhase::Draining => "draining",
            PlanPhase::Handoff => "handoff",
            PlanPhase::Completed => "completed",
            PlanPhase::Abandoned => "abandoned",
        }
    }

    /// Whether the plan has ended.
    pub fn ended(self) -> bool {
        matches!(self, PlanPhase::Completed | PlanPhase::Abandoned)
    }
}

/// One step of a durable plan: the move and, once written, its request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanStepRecord {
    /// `namespace/name`.
    pub workload: String,
    /// Component.
    pub component: ComponentKind,
    /// Instance index.
    pub instance: i64,
    /// GPUs.
    pub gpus: u32,
    /// The journal entry of its request, once written.
    #[serde(
        default,
        rename = "requestUUID",
        skip_serializing_if = "String::is_empty"
    )]
    pub request_uuid: String,
}

/// A plan as the dispatch state keeps it (beside the journal's entries): what a new leader
/// needs to go on with it, or to remove its protection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanRecord {
    /// Plan id.
    pub id: String,
    /// Pool.
    pub pool: String,
    /// Node freed.
    pub node: String,
    /// Its uid.
    #[serde(default, rename = "nodeUID", skip_serializing_if = "String::is_empty")]
    pub node_uid: String,
    /// The waiting pod, `namespace/name`.
    pub pod: String,
    /// Its uid.
    #[serde(default, rename = "podUID", skip_serializing_if = "String::is_empty")]
    pub pod_uid: String,
    /// GPUs it requests.
    pub gpus: u32,
    /// The protection the plan started with.
    pub protection: DrainProtectionWire,
    /// The steps so far and the one in progress (later steps are re-planned each pass).
    #[serde(default)]
    pub steps: Vec<PlanStepRecord>,
    /// Phase.
    pub phase: PlanPhase,
    /// Why it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<PlanEndReason>,
    /// When it started.
    pub started_at: Timestamp,
    /// When it is abandoned if not completed.
    pub deadline: Timestamp,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
    /// The pod waited since.
    pub pending_since: Timestamp,
    /// The plan's benefit in thousandths of a GPU as priced when its latest step was
    /// requested: an ended plan's record row shows what the plan was worth, not 0 (whole
    /// numbers keep the record `Eq` and its JSON exact). 0 in a record saved before it was kept.
    #[serde(default, rename = "benefitMilliGPUs", skip_serializing_if = "is_zero")]
    pub benefit_milli_gpus: i64,
    /// The plan's cost in thousandths of a GPU, priced with [`PlanRecord::benefit_milli_gpus`].
    #[serde(default, rename = "costMilliGPUs", skip_serializing_if = "is_zero")]
    pub cost_milli_gpus: i64,
}

/// Whether a stored whole number is 0 (not written then).
fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// GPUs as thousandths of a GPU, rounded to the nearest (what a [`PlanRecord`] stores).
/// A plan's benefit and cost are a few hundred GPUs at most, far inside `i64` (the cast
/// saturates beyond it, and maps NaN to 0).
pub fn milli_gpus(gpus: f64) -> i64 {
    (gpus * 1000.0).round() as i64
}

impl PlanRecord {
    /// Records the plan's price (benefit and cost in GPUs) as of its latest step.
    pub fn set_price(&mut self, benefit_gpus: f64, cost_gpus: f64) {
        self.benefit_milli_gpus = milli_gpus(benefit_gpus);
        self.cost_milli_gpus = milli_gpus(cost_gpus);
    }

    /// Whether the plan is still running.
    pub fn active(&self) -> bool {
        !self.phase.ended()
    }
}

/// [`DrainProtection`] as stored (the config enum has no serde `Deserialize`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DrainProtectionWire {
    /// `none`.
    None,
    /// `nominate`.
    Nominate,
    /// `taint`.
    Taint,
}

impl From<DrainProtection> for DrainProtectionWire {
    fn from(p: DrainProtection) -> Self {
        match p {
            DrainProtection::None => DrainProtectionWire::None,
            DrainProtection::Nominate => DrainProtectionWire::Nominate,
            DrainProtection::Taint => DrainProtectionWire::Taint,
        }
    }
}

/// A plan's place in one candidate (a row of `last-cycle.json` carries `planId` and
/// `planStep`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanStepRef {
    /// Plan id.
    pub plan_id: String,
    /// 1-based step number within the plan as proposed this pass (steps already made
    /// count: a plan's second request is step 2).
    pub step: u32,
    /// Steps in all.
    pub steps: u32,
    /// The node the plan frees.
    pub node: String,
    /// Whether this step would start the plan (the hourly budget must cover every step).
    #[serde(default)]
    pub starts_plan: bool,
}

impl PlanStepRef {
    /// `"1/2"`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.step, self.steps)
    }
}

/// A plan as `last-cycle.json` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanView {
    /// Plan id.
    pub id: String,
    /// Pool.
    pub pool: String,
    /// Node freed.
    pub node: String,
    /// The waiting pod.
    pub pod: String,
    /// GPUs it requests.
    pub pod_gpus: u32,
    /// Minutes it has waited.
    pub pending_minutes: u64,
    /// `proposed` (advice or about to start), or the durable phase.
    pub phase: String,
    /// Why it ended, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<PlanEndReason>,
    /// The moves still to make.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moves: Vec<PlanMove>,
    /// Benefit in GPUs.
    pub benefit_gpus: f64,
    /// Cost in GPUs.
    pub cost_gpus: f64,
    /// The one-line story.
    pub summary: String,
    /// The protection (`nomination` or `taint`) an ended plan left in place, reported every
    /// pass until it is gone (only execute mode lifts it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protection_left: Option<String>,
}

/// The stable id of a (node, pod) pair: `dp-` and the first 12 hex digits of FNV-1a 64
/// over the node's and the pod's names and uids. Short enough for a taint value.
pub fn plan_id(node: &str, node_uid: &str, pod: &str, pod_uid: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [node, node_uid, pod, pod_uid] {
        for b in part.bytes().chain(std::iter::once(0u8)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("dp-{:012x}", h >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_ids_are_stable_short_label_values() {
        let a = plan_id("g2-017", "u1", "prod/big-0", "p1");
        assert_eq!(a, plan_id("g2-017", "u1", "prod/big-0", "p1"));
        assert_ne!(a, plan_id("g2-017", "u1", "prod/big-0", "p2"));
        assert_eq!(a.len(), 15);
        assert!(a[3..].chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn the_story_names_every_move_the_node_and_the_pod() {
        let plan = DrainPlan {
            id: "dp-1".into(),
            pool: "p".into(),
            node: "g2-017".into(),
            node_uid: String::new(),
            pod: "prod/big-0".into(),
            pod_uid: String::new(),
            pod_gpus: 8,
            pending_since: Timestamp::parse_rfc3339("2026-11-29T07:13:00Z").unwrap(),
            steps: vec![
                PlanMove {
                    workload: "chat/a".into(),
                    component: ComponentKind::Engine,
                    instance: 0,
                    gpus: 2,
                    targets: vec!["g2-004".into()],
                },
                PlanMove {
                    workload: "chat/b".into(),
                    component: ComponentKind::Engine,
                    instance: 0,
                    gpus: 1,
                    targets: vec!["g2-009".into()],
                },
            ],
            recovered_gpus: 4.0,
            benefit_gpus: 8.0,
            cost_gpus: 2.4,
            continued: false,
            done_steps: 0,
        };
        let now = Timestamp::parse_rfc3339("2026-11-29T08:00:00Z").unwrap();
        assert_eq!(
            plan.story(now),
            "moving chat/a (2 GPUs) g2-017 → g2-004 and chat/b (1) g2-017 → g2-009 frees \
             g2-017 for prod/big-0 (8 GPUs, pending 47 min)"
        );
    }
}
