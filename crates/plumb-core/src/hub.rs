//! The hub's step (docs/plumb/design.md#the-step): one [`Hub`] per policy and leadership
//! term reads every member's report, the current floors and route weights, and decides —
//! at most once per `cooldown` — where replicas are borrowed (floors) and where traffic goes
//! (weights), and gives both back slowly. Plain data in; the new `status.fleet`, effects in
//! the order to carry them out, and the decision line out. No IO.
//!
//! ```
//! use std::collections::BTreeMap;
//!
//! use plumb_core::hub::{Effect, Hub, MemberInput, StepInput};
//! use plumb_model::{AdaptivePolicySpec, FleetStatus, Timestamp};
//!
//! let spec: AdaptivePolicySpec = serde_json::from_str(
//!     r#"{"workload": {"name": "llm"}, "clusters": [{"name": "a", "maxReplicas": 4}]}"#,
//! )?;
//! // one hub per policy and leadership term, carrying on from the adopted status.fleet
//! let mut hub = Hub::new("ns/llm", "a/plumb-0", FleetStatus::default());
//! let members = BTreeMap::from([("a".to_string(), MemberInput::default())]);
//! let now = Timestamp::from_unix_secs(1_790_000_000);
//! let input = StepInput { spec: &spec, members: &members, weights: None, now, id_suffix: "0000abcd" };
//! let out = hub.step(&input);
//! for effect in &out.effects {
//!     // carry each out in order; on a failed write call `out.write_failed(..)` and stop
//!     assert!(matches!(effect, Effect::Metric(_)));
//! }
//! assert!(out.decision.is_none()); // nobody is short: nothing to decide
//! # Ok::<(), serde_json::Error>(())
//! ```

pub mod adopt;
mod allocate;
pub mod config;
pub mod decision;
pub mod effects;
mod finish;
pub mod members;
pub mod outcomes;
mod plan;
mod readiness;
mod release;
mod traffic;
mod view;

use std::collections::BTreeMap;
use std::time::Duration;

use plumb_model::spec::Mode;
use plumb_model::{AdaptivePolicySpec, FleetStatus, Phase, Timestamp};

pub use adopt::{decision_sequence, most_recent_fleet};
pub use config::HubConfig;
pub use decision::{Action, ClusterState, DecisionLine};
pub use effects::{Effect, Event, EventType, Metric};
pub use members::{MemberInput, ReportUse, STALE_AFTER};
pub use outcomes::{OutcomeCluster, OutcomeLine};

use members::StepIn;
use plan::Plan;
use view::{TakenBack, View};

/// How long a floor holds after the hub wrote it (`status.intent.expires`).
pub const INTENT_TTL: Duration = Duration::from_secs(300);

/// One step's input: plain data the driver read.
#[derive(Debug, Clone, Copy)]
pub struct StepInput<'a> {
    /// The hub's own copy of the policy's spec.
    pub spec: &'a AdaptivePolicySpec,
    /// Per member (by cluster name): its report, its intent, the hash the hub expects.
    pub members: &'a BTreeMap<String, MemberInput>,
    /// The current route weights in percent (read from the first route), when traffic is
    /// managed and they could be read.
    pub weights: Option<&'a BTreeMap<String, u32>>,
    /// The step's time.
    pub now: Timestamp,
    /// Eight hex digits from the driver for a new decision's id (no randomness in core).
    pub id_suffix: &'a str,
}

/// One step's output.
#[derive(Debug, Clone, PartialEq)]
pub struct StepOutput {
    /// The new `status.fleet` for the hub's own copy.
    pub fleet: FleetStatus,
    /// What to carry out, in order.
    pub effects: Vec<Effect>,
    /// The decision line, when the step changed something.
    pub decision: Option<DecisionLine>,
    /// Outcome lines that fell due this step (after the decision line), oldest decision
    /// first.
    pub outcomes: Vec<OutcomeLine>,
}

impl StepOutput {
    /// Records that carrying out a write failed (the driver stops at the first failed write;
    /// the next step reads what holds): the decision line is not applied and names the error,
    /// its Event turns Warning and its counter says `applied="false"`.
    pub fn write_failed(&mut self, error: &str) {
        let Some(decision) = self.decision.as_mut() else {
            return;
        };
        decision.applied = false;
        decision.error = Some(error.to_string());
        for tracked in &mut self.fleet.tracking {
            if tracked.decision_id == decision.decision_id {
                tracked.applied = false;
            }
        }
        for effect in &mut self.effects {
            match effect {
                Effect::Event(event) if event.reason == decision.action => {
                    event.type_ = EventType::Warning;
                    event.message = format!("{} (not applied: {error})", event.message);
                }
                Effect::Metric(Metric::Decision { applied, .. }) => *applied = false,
                _ => {}
            }
        }
    }
}

/// The hub's memory for one policy over one leadership term. Its clocks start from the
/// adopted `status.fleet`; what only this term knows (when it wrote each floor, what it
/// took back) starts from the intents.
#[derive(Debug, Clone)]
pub struct Hub {
    policy: String,
    identity: String,
    intent_ttl: Duration,
    fleet: FleetStatus,
    floor_written_at: BTreeMap<String, Timestamp>,
    taken_back: TakenBack,
    last_shift: Option<Timestamp>,
    last_return: Option<Timestamp>,
    no_room_said: Option<u32>,
    held_said: Vec<String>,
}

impl Hub {
    /// A hub for `policy` (`<namespace>/<name>`) run by `identity` (`<cluster>/<pod>`),
    /// carrying on from the adopted `status.fleet` (the most recent among the members').
    pub fn new(
        policy: impl Into<String>,
        identity: impl Into<String>,
        adopted: FleetStatus,
    ) -> Hub {
        Hub {
            policy: policy.into(),
            identity: identity.into(),
            intent_ttl: INTENT_TTL,
            held_said: Vec::new(),
            fleet: adopted,
            floor_written_at: BTreeMap::new(),
            taken_back: TakenBack::new(),
            last_shift: None,
            last_return: None,
            no_room_said: None,
        }
    }

    /// The same hub writing floors that hold for `ttl` instead of [`INTENT_TTL`] (the seed's
    /// 5 minutes; live tests shorten it to watch floors lapse). Renewals follow it: a held
    /// floor is rewritten once less than half of `ttl` is left.
    pub fn with_intent_ttl(mut self, ttl: Duration) -> Hub {
        self.intent_ttl = ttl;
        self
    }

    /// How long a floor this hub writes holds.
    pub fn intent_ttl(&self) -> Duration {
        self.intent_ttl
    }

    /// Records that carrying out `out`'s writes failed ([`StepOutput::write_failed`]), in
    /// the output and in the hub's memory, so the decision is followed as not applied.
    pub fn write_failed(&mut self, out: &mut StepOutput, error: &str) {
        out.write_failed(error);
        self.fleet.clone_from(&out.fleet);
    }

    /// The fleet status as of the last step.
    pub fn fleet(&self) -> &FleetStatus {
        &self.fleet
    }

    /// One step.
    pub fn step(&mut self, input: &StepInput<'_>) -> StepOutput {
        let now = input.now;
        let config = HubConfig::from_spec(input.spec);
        let mut plan = Plan::load(&config, &self.fleet, input.members, input.weights, now);
        self.seed_floor_clocks(input);
        let before = plan.states();
        let floor_written_at = self.floor_written_at.clone();
        let view = View::new(
            &config,
            input.members,
            &plan,
            &self.taken_back,
            &floor_written_at,
            now,
        );
        if config.mode == Mode::Auto {
            readiness::update_clocks(&view, &mut plan);
        }
        let cooling = self
            .fleet
            .last_step
            .is_some_and(|t| now.since(t) < config.cooldown);
        let mut no_room = None;
        if !cooling {
            if config.mode == Mode::Auto {
                readiness::follow_up(&view, &mut plan, &mut self.taken_back);
            }
            no_room = self.decide(&view, &mut plan);
        }
        finish::finish(self, input, &view, plan, before, no_room)
    }

    /// The changing part of a step: phase, allocation, traffic, release. Returns the
    /// shortage to report as unplaceable, when the message is due.
    fn decide(&mut self, view: &View<'_>, plan: &mut Plan) -> Option<u32> {
        let now = view.now;
        transition(view, plan);
        let mut no_room = None;
        if plan.phase == Phase::Escalated {
            let missing = allocate::missing(view, plan);
            let given: u32 = allocate::allocate(view, plan, missing).values().sum();
            if missing > 0 && given == 0 {
                if self.no_room_said != Some(missing) {
                    no_room = Some(missing);
                }
                self.no_room_said = Some(missing);
            } else {
                self.no_room_said = None;
            }
        } else {
            self.no_room_said = None;
        }
        let mut clocks = traffic::Clocks {
            last_shift: self.last_shift,
            last_return: self.last_return,
        };
        traffic::step(view, plan, &mut clocks);
        self.last_shift = clocks.last_shift;
        self.last_return = clocks.last_return;
        if release::due(view, plan) {
            release::release(view, plan);
        }
        if plan.phase == Phase::Recovering && !plan.any_floor() && traffic::all_steady(view, plan) {
            plan.enter(Phase::Steady, now);
        }
        no_room
    }

    /// Floors adopted from intents this term did not write: taken as written when their
    /// expiry was last set (an upper bound, so "reported since" errs on waiting).
    fn seed_floor_clocks(&mut self, input: &StepInput<'_>) {
        for (name, member) in input.members {
            if self.floor_written_at.contains_key(name) {
                continue;
            }
            if let Some(expires) = member.intent.as_ref().and_then(|i| i.expires) {
                self.floor_written_at
                    .insert(name.clone(), expires.minus(self.intent_ttl));
            }
        }
    }
}

/// The phase machine: Steady → Escalated when a member is past its escalation time;
/// Escalated → Recovering when no member is short; Recovering → Escalated on any shortage
/// (docs/plumb/design.md#phases). Recovering → Steady is decided after release.
fn transition(view: &View<'_>, plan: &mut Plan) {
    let now = view.now;
    match plan.phase {
        Phase::Steady if view.widest_step_in() >= StepIn::StaticOnly => {
            plan.enter(Phase::Escalated, now);
        }
        Phase::Escalated if !view.any_short() => plan.enter(Phase::Recovering, now),
        Phase::Recovering if view.any_short() => plan.enter(Phase::Escalated, now),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
