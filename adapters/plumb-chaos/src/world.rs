//! The emulated fleet: members with their API servers ([`Store`]), clocks off true time by at
//! most [`SKEW_BOUND_MS`], workloads that run short and borrow, and one agent per member
//! (an elector over every member's Lease and, while it leads, one [`Hub`] per policy), plus
//! the faults in force. The run loop is in [`crate::campaign`].

use std::collections::BTreeMap;

use plumb_core::hub::Hub;
use plumb_core::quorum::{Elector, LeaseTiming};
use plumb_model::{FleetStatus, Intent, Report, Timestamp};

use crate::invariants::{Checker, SKEW_BOUND_MS};
use crate::rng::Rng;
use crate::store::{ApiFaults, FaultCounts, Store};

/// Where the hub stores `status.fleet` before it acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FleetCopies {
    /// On its own copy only (as Plumb's spec has it: `fleet` is on the hub's copy).
    Own,
    /// On its own copy and every copy it reaches, acknowledged by a majority of members, so
    /// any successor (which reaches a majority) reads it.
    Majority,
}

/// One policy's workload in one member.
#[derive(Debug, Clone, Default)]
pub struct Load {
    /// Replicas the autoscaler wants for the member's own traffic.
    pub want: u32,
    /// The usual `want`.
    pub base: u32,
    /// Replicas the member's registered nodes can run.
    pub capacity: u32,
    /// NodePool headroom it reports (never launched: floors there are taken back).
    pub pool_room: u32,
    /// `desiredReplicas`: the larger of `want` and the served floor.
    pub desired: u32,
    /// `readyReplicas`.
    pub ready: u32,
    /// When it last turned short.
    pub short_since: Option<Timestamp>,
    /// The floor the member's scaler serves.
    pub served: u32,
    /// A surge of demand lasts until then (campaign ms).
    pub surge_until: i64,
    /// `recentLaunchFailures`.
    pub launch_failures: u32,
}

/// A signal fault in force on one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalFault {
    /// Prometheus answers nothing: no samples.
    Missing,
    /// Samples ten minutes old.
    Stale,
    /// Absurd (finite) values.
    Spike,
}

/// The last read of a member's copy: report, intent and `resourceVersion`.
pub type Cached = (Option<Report>, Option<Intent>, u64);

/// A hub of one policy in one term, and the `status.fleet` it last stored.
#[derive(Debug, Clone)]
pub struct HubState {
    /// The core's hub.
    pub hub: Hub,
    /// What was last stored.
    pub stored: Option<FleetStatus>,
}

/// One member's agent.
#[derive(Debug, Clone)]
pub struct Agent {
    /// Restarts so far (its pod name).
    pub generation: u32,
    /// `<cluster>/plumb-<generation>`.
    pub identity: String,
    /// Its elector.
    pub elector: Elector,
    /// Its hubs, by policy, while it leads.
    pub hubs: BTreeMap<String, HubState>,
    /// Down (killed) until then (campaign ms).
    pub down_until: i64,
    /// Last reads of members' copies, by (policy, member).
    pub cache: BTreeMap<(String, String), Cached>,
}

impl Agent {
    /// A fresh agent process of `cluster`.
    pub fn new(cluster: &str, generation: u32, timing: LeaseTiming) -> Agent {
        let identity = format!("{cluster}/plumb-{generation}");
        Agent {
            generation,
            elector: Elector::new(identity.clone(), timing),
            identity,
            hubs: BTreeMap::new(),
            down_until: 0,
            cache: BTreeMap::new(),
        }
    }
}

/// One member cluster.
#[derive(Debug, Clone)]
pub struct Member {
    /// Its cluster name.
    pub name: String,
    /// Its clock's offset from true time, within `±SKEW_BOUND_MS`.
    pub skew_ms: i64,
    /// Its API server.
    pub store: Store,
    /// Its agent.
    pub agent: Agent,
    /// Workloads by policy.
    pub loads: BTreeMap<String, Load>,
    /// Its API server is stopped until then.
    pub api_down_until: i64,
    /// Its reports are delayed (not written) until then.
    pub reports_paused_until: i64,
    /// A signal fault and until when.
    pub signal_fault: Option<(SignalFault, i64)>,
}

/// Counters a run reports.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// Hub steps run.
    pub hub_steps: u64,
    /// Decision lines logged.
    pub decisions: u64,
    /// Outcome lines logged.
    pub outcome_lines: u64,
    /// Steps discarded because `status.fleet` could not be stored.
    pub discarded_steps: u64,
    /// New hubs that waited because they read fewer than a majority of copies.
    pub adoptions_waited: u64,
    /// Writes that failed and were recorded on the decision (`write_failed`).
    pub failed_writes: u64,
    /// Hub agents killed mid-step.
    pub crashes: u64,
    /// Partitions started.
    pub partitions: u64,
    /// Terms committed.
    pub terms: u64,
    /// Intents and weights that landed.
    pub writes: u64,
    /// Floors served above 0, summed over scaler checks.
    pub served_checks: u64,
}

/// The whole emulated fleet at one instant.
#[derive(Debug)]
pub struct World {
    /// Draws for the fleet and its load.
    pub rng: Rng,
    /// Draws for the faults (a stream of their own).
    pub fault_rng: Rng,
    /// True time, ms since the run began.
    pub t: i64,
    /// True time's origin.
    pub base: Timestamp,
    /// The members, by index.
    pub members: Vec<Member>,
    /// The partition in force: each member's side, and until when.
    pub partition: Option<(Vec<bool>, i64)>,
    /// Policy keys still present.
    pub policies: Vec<String>,
    /// API fault rates in force.
    pub api: ApiFaults,
    /// The rates drawn for the run (restored after calm stretches).
    pub api_drawn: ApiFaults,
    /// Injected faults by kind.
    pub faults: FaultCounts,
    /// The invariants.
    pub checker: Checker,
    /// Counters.
    pub counters: Counters,
    /// Whether the next hub step with writes is cut short by killing its agent.
    pub crash_next_step: bool,
    /// Where `status.fleet` is stored.
    pub fleet_copies: FleetCopies,
    /// The election's timing.
    pub timing: LeaseTiming,
}

impl World {
    /// Member `i`'s clock.
    pub fn clock(&self, i: usize) -> Timestamp {
        let ms = self.t + self.members.get(i).map_or(0, |m| m.skew_ms);
        Timestamp::from_unix_nanos(self.base.unix_nanos() + ms * 1_000_000)
    }

    /// The index of the member named `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.members.iter().position(|m| m.name == name)
    }

    /// Whether `from`'s agent reaches `to`'s API server.
    pub fn reach(&self, from: usize, to: usize) -> bool {
        let up = self
            .members
            .get(to)
            .is_some_and(|m| m.api_down_until <= self.t);
        let same_side = self
            .partition
            .as_ref()
            .is_none_or(|(side, _)| side.get(from) == side.get(to));
        up && same_side
    }

    /// Whether member `i`'s agent runs.
    pub fn agent_up(&self, i: usize) -> bool {
        self.members
            .get(i)
            .is_some_and(|m| m.agent.down_until <= self.t)
    }

    /// The agents that lead now, each by its own clock.
    pub fn leaders(&self) -> Vec<String> {
        (0..self.members.len())
            .filter(|&i| self.agent_up(i))
            .filter(|&i| self.members[i].agent.elector.is_leading(self.clock(i)))
            .map(|i| self.members[i].agent.identity.clone())
            .collect()
    }
}

/// Draws a member's clock skew within the bound.
pub fn draw_skew(rng: &mut Rng) -> i64 {
    rng.range_i64(-SKEW_BOUND_MS, SKEW_BOUND_MS)
}
