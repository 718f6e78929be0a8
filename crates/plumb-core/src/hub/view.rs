//! What one step knows about the fleet, computed once: each member's usable report, its own
//! need, and how far the fleet may step in for it.

use std::collections::BTreeMap;

use plumb_model::{FleetCluster, Timestamp};

use super::config::HubConfig;
use super::members::{self, Member, MemberInput, StepIn};
use super::plan::Plan;

/// The fleet as this step sees it.
#[derive(Debug)]
pub struct View<'a> {
    /// The resolved spec.
    pub config: &'a HubConfig,
    /// Every spec member, in spec order.
    pub members: Vec<Member<'a>>,
    /// Each member's position in `members`, by name.
    index: BTreeMap<String, usize>,
    /// Each member's own need (replicas it is short of), by name.
    pub need: BTreeMap<String, u32>,
    /// How far the fleet may step in for each member, by name.
    pub step_in: BTreeMap<String, StepIn>,
    /// The step's time.
    pub now: Timestamp,
    /// When the hub last raised or lowered a floor on each member.
    pub floor_written_at: &'a BTreeMap<String, Timestamp>,
}

/// Replicas the hub took back from a member and when, so they are not read as the member's
/// own shortage until it reports again.
pub type TakenBack = BTreeMap<String, (u32, Timestamp)>;

impl<'a> View<'a> {
    /// Builds the view for `plan` as loaded.
    pub fn new(
        config: &'a HubConfig,
        inputs: &'a BTreeMap<String, MemberInput>,
        plan: &Plan,
        taken_back: &TakenBack,
        floor_written_at: &'a BTreeMap<String, Timestamp>,
        now: Timestamp,
    ) -> View<'a> {
        let members = members::members(config, inputs, now);
        let mut need = BTreeMap::new();
        let mut step_in = BTreeMap::new();
        for member in &members {
            let name = &member.config.name;
            let n = own_need(member, plan.clusters.get(name), taken_back.get(name));
            step_in.insert(name.clone(), members::step_in(config, member, n, now));
            need.insert(name.clone(), n);
        }
        let index = members
            .iter()
            .enumerate()
            .map(|(i, m)| (m.config.name.clone(), i))
            .collect();
        View {
            config,
            members,
            index,
            need,
            step_in,
            now,
            floor_written_at,
        }
    }

    /// The member called `name`.
    pub fn member(&self, name: &str) -> Option<&Member<'a>> {
        self.index.get(name).and_then(|i| self.members.get(*i))
    }

    /// Whether any member with a usable report is short, however young the shortage.
    pub fn any_short(&self) -> bool {
        self.need.values().any(|n| *n > 0)
    }

    /// The furthest the fleet may step in for any member.
    pub fn widest_step_in(&self) -> StepIn {
        self.step_in
            .values()
            .copied()
            .max()
            .unwrap_or(StepIn::NotShort)
    }

    /// Whether the member reported after the hub last wrote a floor there.
    pub fn reported_since_floor(&self, name: &str) -> bool {
        let Some(report_time) = self
            .member(name)
            .and_then(|m| m.report)
            .and_then(|r| r.time)
        else {
            return false;
        };
        self.floor_written_at
            .get(name)
            .is_none_or(|written| report_time > *written)
    }
}

/// A member's own need: its reported need less the replicas of the hub's own floor there
/// still pending (they are the fleet's help, not its shortage) and less replicas the hub
/// took back that it still shows pending until its next report
/// (docs/plumb/design.md#own-need).
fn own_need(
    member: &Member<'_>,
    cluster: Option<&FleetCluster>,
    taken_back: Option<&(u32, Timestamp)>,
) -> u32 {
    let Some(report) = member.report else {
        return 0;
    };
    let ours = cluster.map_or(0, |c| {
        c.added.min(c.floor.saturating_sub(report.ready_replicas))
    });
    let taken = taken_back
        .filter(|(_, at)| report.time.is_none_or(|t| t <= *at))
        .map_or(0, |(n, _)| *n);
    report
        .needed_replicas
        .saturating_sub(ours.saturating_add(taken))
}
