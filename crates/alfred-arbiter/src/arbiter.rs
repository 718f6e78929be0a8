//! Ordering, gates and target selection (docs/design.md#arbitration-order, docs/design.md#gates,
//! docs/design.md#target-selection, docs/design.md#cooldowns).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use alfred_model::reason::{RejectReason, RowReason};
use alfred_model::record::{Candidate, Verdict};
use alfred_model::snapshot::{Instance, Node, SpotOverride, Workload};
use alfred_model::{ClusterSnapshot, Timestamp};

use crate::breaker::Breaker;
use crate::count::{migration_starts_within, migrations_in_flight, plan_steps_within_cap};
use crate::ledger::{Ledger, find_workload};
use crate::settings::{ArbiterSettings, HOURLY_WINDOW, minutes};

/// The result of one arbitration.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Arbitration {
    /// One slot per input candidate, at its input index: `None` for advice (a
    /// non-executable candidate never reaches the arbiter and spends no budget), else the
    /// verdict.
    pub verdicts: Vec<Option<Verdict>>,
    /// Input indices of the executable candidates in arbitration order (the order the
    /// dispatcher tries admitted moves in).
    pub order: Vec<usize>,
}

impl Arbitration {
    /// Input indices of the admitted candidates, in arbitration order.
    pub fn admitted(&self) -> Vec<usize> {
        self.order
            .iter()
            .copied()
            .filter(|&i| {
                self.verdicts
                    .get(i)
                    .and_then(Option::as_ref)
                    .is_some_and(|v| v.admitted)
            })
            .collect()
    }
}

/// A score usable as a sort key: NaN ranks last.
fn rank_score(s: f64) -> f64 {
    if s.is_nan() { f64::NEG_INFINITY } else { s }
}

/// Input indices of the executable candidates in arbitration order
/// (docs/design.md#arbitration-order): class
/// descending (unhealthy 2, maintenance 1, defragmentation 0), drain-plan steps ahead of the
/// other defragmentation moves (a plan's score is in GPUs, not comparable with a
/// move's), score descending (NaN last), footprint ascending, then input order (the sort is
/// stable).
pub fn arbitration_order(candidates: &[Candidate]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..candidates.len())
        .filter(|&i| candidates[i].executable)
        .collect();
    order.sort_by(|&a, &b| {
        let (ca, cb) = (&candidates[a], &candidates[b]);
        cb.class()
            .cmp(&ca.class())
            .then_with(|| cb.plan.is_some().cmp(&ca.plan.is_some()))
            .then_with(|| rank_score(cb.score).total_cmp(&rank_score(ca.score)))
            .then_with(|| ca.footprint_gpus.cmp(&cb.footprint_gpus))
    });
    order
}

/// The nodes being evacuated this pass: the `fromNode` of every executable
/// `NodeUnhealthy` and `NodeMaintenance` candidate (docs/design.md#per-pass-state). They are never
/// targets.
pub fn evacuating_nodes(candidates: &[Candidate]) -> BTreeSet<String> {
    candidates
        .iter()
        .filter(|c| c.executable && c.class() > 0 && !c.from_node.is_empty())
        .map(|c| c.from_node.clone())
        .collect()
}

/// Arbitrates a pass's candidates (docs/design.md#arbiter): orders the executable ones, runs the
/// gates on each in turn (the first failing gate is the reason), selects targets
/// and admits at most one move per InferenceService and per target node.
///
/// * `ledger`: alfred's own requests (claims, node cooling, its part of the hourly and
///   in-flight counts), as the dispatcher persisted it;
/// * `breaker`: the in-memory circuit breaker of this leadership term;
/// * `now`: the pass's instant.
///
/// Advice gets `None` (see [`Arbitration::verdicts`]). Pure and deterministic; never
/// panics.
pub fn arbitrate(
    candidates: &[Candidate],
    snapshot: &ClusterSnapshot,
    settings: &ArbiterSettings,
    ledger: &Ledger,
    breaker: &Breaker,
    now: Timestamp,
) -> Arbitration {
    let mut pass = Pass::new(
        snapshot,
        settings,
        ledger,
        breaker,
        now,
        evacuating_nodes(candidates),
    );
    pass.protected.extend(plan_nodes(candidates));
    let order = arbitration_order(candidates);
    let mut verdicts: Vec<Option<Verdict>> = vec![None; candidates.len()];
    for &i in &order {
        verdicts[i] = Some(pass.judge(&candidates[i]));
    }
    Arbitration { verdicts, order }
}

/// Arbitrates one candidate alone against a (fresh) snapshot: the dispatcher's re-check
/// (docs/design.md#re-check-before-a-request). `evacuating` is the evacuation set of the pass the
/// candidate comes from ([`evacuating_nodes`] of the fresh policies' output; the
/// candidate's own source is added when it is a node-health move). For the re-check of a
/// retried journal entry pass `ledger.without(uuid)`.
///
/// The candidate is judged even if it is not executable (the caller decides).
pub fn arbitrate_one(
    candidate: &Candidate,
    evacuating: &BTreeSet<String>,
    snapshot: &ClusterSnapshot,
    settings: &ArbiterSettings,
    ledger: &Ledger,
    breaker: &Breaker,
    now: Timestamp,
) -> Verdict {
    let mut evac = evacuating.clone();
    if candidate.class() > 0 && !candidate.from_node.is_empty() {
        evac.insert(candidate.from_node.clone());
    }
    let mut pass = Pass::new(snapshot, settings, ledger, breaker, now, evac);
    pass.protected
        .extend(plan_nodes(std::slice::from_ref(candidate)));
    pass.judge(candidate)
}

/// The nodes drain plans free this pass (the `plan.node` of every plan row): never a
/// target of any move.
pub fn plan_nodes(candidates: &[Candidate]) -> BTreeSet<String> {
    candidates
        .iter()
        .filter_map(|c| c.plan.as_ref().map(|p| p.node.clone()))
        .collect()
}

/// Why target selection marked a node unusable (docs/design.md#target-selection).
#[derive(Default)]
struct Marks {
    unavailable: bool,
    evacuating: bool,
    landed: bool,
    cooling: bool,
}

impl Marks {
    fn reason(&self) -> RejectReason {
        if self.unavailable {
            RejectReason::TargetUnavailable
        } else if self.evacuating {
            RejectReason::TargetUnderEvacuation
        } else if self.landed || self.cooling {
            // The documented reasons have no NodeCooldown: a target that one of alfred's
            // own requests used within perNodeCooldownMinutes is busy (see the crate docs).
            RejectReason::TargetNodeBusy
        } else {
            RejectReason::NoCapacity
        }
    }
}

/// The per-pass state (docs/design.md#per-pass-state).
struct Pass<'a> {
    snapshot: &'a ClusterSnapshot,
    settings: &'a ArbiterSettings,
    ledger: &'a Ledger,
    now: Timestamp,
    nodes: BTreeMap<&'a str, &'a Node>,
    breaker_open: bool,
    evacuating: BTreeSet<String>,
    /// Nodes drain plans free: the ledger's active plans and this pass's plan rows.
    protected: BTreeSet<String>,
    claims: BTreeMap<String, u32>,
    landed: BTreeSet<String>,
    admitted_workloads: BTreeSet<String>,
    in_flight: usize,
    hourly: usize,
    /// When the migrations `hourly` counts started (gate 16 reads them ahead).
    hourly_starts: Vec<Timestamp>,
    admitted: usize,
}

fn cap_reached(count: usize, admitted: usize, cap: u32) -> bool {
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    count.saturating_add(admitted) >= cap
}

impl<'a> Pass<'a> {
    fn new(
        snapshot: &'a ClusterSnapshot,
        settings: &'a ArbiterSettings,
        ledger: &'a Ledger,
        breaker: &Breaker,
        now: Timestamp,
        evacuating: BTreeSet<String>,
    ) -> Self {
        // By name, the first of equal names kept. A snapshot's nodes usually come sorted by
        // name without repeats (normalized): the map is then built from them in order, in
        // one pass, instead of by one search per node.
        let nodes = if snapshot.nodes.windows(2).all(|w| w[0].name < w[1].name) {
            snapshot
                .nodes
                .iter()
                .map(|n| (n.name.as_str(), n))
                .collect()
        } else {
            let mut nodes = BTreeMap::new();
            for n in &snapshot.nodes {
                nodes.entry(n.name.as_str()).or_insert(n);
            }
            nodes
        };
        let hourly_starts =
            migration_starts_within(snapshot, &ledger.created_at(), now, HOURLY_WINDOW);
        Pass {
            snapshot,
            settings,
            ledger,
            now,
            nodes,
            breaker_open: breaker.is_open(now),
            evacuating,
            protected: ledger.protected_nodes().clone(),
            claims: ledger.claims(snapshot),
            landed: BTreeSet::new(),
            admitted_workloads: BTreeSet::new(),
            in_flight: migrations_in_flight(snapshot, &ledger.live_identities(snapshot)),
            hourly: hourly_starts.len(),
            hourly_starts,
            admitted: 0,
        }
    }

    fn reject(reason: RejectReason) -> Verdict {
        Verdict {
            admitted: false,
            reject_reason: Some(reason),
            ..Verdict::default()
        }
    }

    fn younger_than(&self, at: Timestamp, window: Duration) -> bool {
        self.now.since(at) < window
    }

    fn judge(&mut self, c: &Candidate) -> Verdict {
        match self.gates(c) {
            Ok((placement, cooldown_overridden)) => {
                self.admitted += 1;
                self.admitted_workloads.insert(c.workload.clone());
                for (node, gpus) in &placement {
                    self.landed.insert(node.clone());
                    let e = self.claims.entry(node.clone()).or_insert(0);
                    *e = e.saturating_add(*gpus);
                }
                Verdict {
                    admitted: true,
                    reject_reason: None,
                    target: placement
                        .first()
                        .map(|(n, _)| n.clone())
                        .unwrap_or_default(),
                    placement,
                    cooldown_overridden,
                    ..Verdict::default()
                }
            }
            Err(reason) => Self::reject(reason),
        }
    }

    /// The gates in order (docs/design.md#gates); `Ok((placement, cooldownOverridden))` on
    /// admission.
    fn gates(&self, c: &Candidate) -> Result<(Vec<(String, u32)>, bool), RejectReason> {
        let health = c.reason == RowReason::NodeUnhealthy;
        // 1
        if self.breaker_open {
            return Err(RejectReason::CircuitBreakerOpen);
        }
        // 2
        let (w, inst) = self.locate(c).ok_or(RejectReason::InstanceGone)?;
        // 3
        if !w.settings.movable {
            return Err(RejectReason::NotMovable);
        }
        // 4
        if !w.migration.malformed_requests.is_empty() {
            return Err(RejectReason::MalformedRequestPending);
        }
        // 5
        if !w.migration.valid {
            return Err(RejectReason::MigrationStateInvalid);
        }
        // 6
        let pods: Vec<_> = inst
            .pods
            .iter()
            .filter_map(|k| self.snapshot.pod_by_key(k).or_else(|| self.find_pod(k)))
            .collect();
        if inst.any_terminating || pods.iter().any(|p| p.terminating) {
            return Err(RejectReason::InstanceTerminating);
        }
        // 7
        if !w.migration.active.is_empty()
            || self.admitted_workloads.contains(&c.workload)
            || self.ledger.workload_busy(self.snapshot, &c.workload)
        {
            return Err(RejectReason::WorkloadBusy);
        }
        // 8: the workload's cooldown (health: the floor), and — for every move but a
        // health evacuation — the source node's cooldown after one of alfred's own
        // requests used it (reported as Cooldown: the documented reasons have no
        // NodeCooldown).
        let floor = self.settings.health_cooldown_floor();
        let standard = minutes(
            w.settings
                .cooldown_minutes
                .unwrap_or(self.settings.per_workload_cooldown_minutes),
        );
        let last = w
            .migration
            .last_migration
            .max(self.ledger.last_end(&c.workload));
        let mut overridden = false;
        if let Some(last) = last {
            if health {
                if self.younger_than(last, floor) {
                    return Err(RejectReason::Cooldown);
                }
                overridden = self.younger_than(last, standard);
            } else if self.younger_than(last, standard) {
                return Err(RejectReason::Cooldown);
            }
        }
        if !health
            && !c.from_node.is_empty()
            && self.source_cooling(c, self.settings.per_node_cooldown())
        {
            return Err(RejectReason::Cooldown);
        }
        // 9
        let placement_window = if health {
            floor
        } else {
            self.settings.recent_placement_cooldown()
        };
        if pods.iter().any(|p| {
            p.started_at
                .or(p.created_at)
                .is_some_and(|t| self.younger_than(t, placement_window))
        }) {
            return Err(RejectReason::PlacementCooldown);
        }
        // 10–13
        let placement = self.select_targets(c, w)?;
        // 14
        if cap_reached(
            self.in_flight,
            self.admitted,
            self.settings.max_in_flight_migrations,
        ) {
            return Err(RejectReason::InFlightCap);
        }
        // 15
        if cap_reached(
            self.hourly,
            self.admitted,
            self.settings.max_migrations_per_hour,
        ) {
            return Err(RejectReason::HourlyCap);
        }
        // 16 (docs/design.md#drain-plans-and-the-budget): a plan starts only when the hourly budget
        // left covers all its steps,
        // each step at the pass it is due (`plan_steps_within_cap`).
        if let Some(p) = c.plan.as_ref().filter(|p| p.starts_plan) {
            let covered = plan_steps_within_cap(
                &self.hourly_starts,
                self.now,
                HOURLY_WINDOW,
                self.settings.decision_loop_interval,
                self.settings.max_migrations_per_hour,
                self.admitted,
                p.steps,
            );
            if covered < p.steps {
                return Err(RejectReason::PlanBudgetInsufficient);
            }
        }
        Ok((placement, overridden))
    }

    /// The source node's cooldown (docs/design.md#drain-plans-and-the-budget for plan steps): a
    /// started plan's own node is exempt
    /// between the plan's steps; a new plan's node is held back only by requests that landed
    /// on it (the ones that left it are the drain the plan goes on with: a plan overtaken by
    /// its pod hands its half-emptied node to the next plan without a pause); every other
    /// move waits out every use of its source.
    fn source_cooling(&self, c: &Candidate, window: std::time::Duration) -> bool {
        match c.plan.as_ref().filter(|p| p.node == c.from_node) {
            Some(p) if !p.starts_plan => false,
            Some(_) => self.ledger.node_received(&c.from_node, self.now, window),
            None => self.ledger.node_cooling(&c.from_node, self.now, window),
        }
    }

    /// The plan whose own earlier steps do not cool this move's targets: a started plan's,
    /// with `overlapSteps` (docs/design-policies.md#overlapping-steps); `None` otherwise.
    fn overlapping_plan<'c>(&self, c: &'c Candidate) -> Option<&'c str> {
        c.plan
            .as_ref()
            .filter(|p| self.settings.overlap_plan_steps && !p.starts_plan)
            .map(|p| p.plan_id.as_str())
    }

    fn find_pod(&self, key: &str) -> Option<&'a alfred_model::snapshot::Pod> {
        let (ns, name) = key.split_once('/')?;
        self.snapshot
            .pods
            .iter()
            .find(|p| p.namespace == ns && p.name == name)
    }

    fn locate(&self, c: &Candidate) -> Option<(&'a Workload, &'a Instance)> {
        let w = find_workload(self.snapshot, &c.workload)?;
        let comp = w.components.iter().find(|k| k.kind == c.component)?;
        let index = u32::try_from(c.instance).ok()?;
        let inst = comp.instances.iter().find(|i| i.index == index)?;
        Some((w, inst))
    }

    /// Whether nothing may land on `node` for workload `w`: unavailable as a target
    /// (health, maintenance, cordon, scale-down), not ready, preemptible while avoided,
    /// outside the model's allowed nodes, or the move's own source.
    fn excluded(&self, node: &Node, w: &Workload, c: &Candidate) -> bool {
        let avoid_spot = w.settings.spot_policy == SpotOverride::Avoid
            || self.settings.avoid_preemptible_targets;
        let model_forbids = w
            .model
            .as_ref()
            .and_then(|m| self.snapshot.models.get(&m.key()))
            .and_then(|info| info.allowed_nodes.as_ref())
            .is_some_and(|allowed| !allowed.contains(&node.name));
        node.unavailable()
            || !node.ready
            || (node.preemptible && avoid_spot)
            || model_forbids
            || node.name == c.from_node
    }

    /// Whether `gpus` more fit on a node (docs/design.md#target-selection), recording why a node was
    /// refused.
    fn fits(&self, name: &str, gpus: u32, w: &Workload, c: &Candidate, marks: &mut Marks) -> bool {
        let Some(node) = self.nodes.get(name) else {
            return false;
        };
        if self.excluded(node, w, c) {
            marks.unavailable = true;
            return false;
        }
        if self.evacuating.contains(name) {
            marks.evacuating = true;
            return false;
        }
        if self.protected.contains(name) {
            // A node a drain plan frees is reserved for its pod.
            marks.landed = true;
            return false;
        }
        if self.landed.contains(name) {
            marks.landed = true;
            return false;
        }
        if self.ledger.node_cooling_outside(
            name,
            self.now,
            self.settings.per_node_cooldown(),
            self.overlapping_plan(c),
        ) {
            marks.cooling = true;
            return false;
        }
        let claimed = self.claims.get(name).copied().unwrap_or(0);
        node.free_gpus.saturating_sub(claimed) >= gpus
    }

    /// Target selection (docs/design.md#target-selection): the placement as `(node, GPUs)` in order
    /// of first use.
    fn select_targets(
        &self,
        c: &Candidate,
        w: &Workload,
    ) -> Result<Vec<(String, u32)>, RejectReason> {
        let targets = if c.placement_target_nodes.is_empty() {
            &c.hint_target_nodes
        } else {
            &c.placement_target_nodes
        };
        if !c.surge_shaped {
            let mut marks = Marks::default();
            return Ok(targets
                .iter()
                .find(|t| self.fits(t, c.footprint_gpus, w, c, &mut marks))
                .map(|t| vec![(t.clone(), c.footprint_gpus)])
                .unwrap_or_default());
        }
        let mut items: Vec<u32> = c.pod_gpus.iter().copied().filter(|g| *g > 0).collect();
        items.sort_by(|a, b| b.cmp(a));
        if items.is_empty() && c.footprint_gpus > 0 {
            items.push(c.footprint_gpus);
        }
        let mut placement: Vec<(String, u32)> = Vec::new();
        for gpus in items {
            let mut marks = Marks::default();
            let mut chosen = None;
            for t in targets {
                let already = placement
                    .iter()
                    .find(|(n, _)| n == t)
                    .map_or(0, |(_, g)| *g);
                if self.fits(t, gpus.saturating_add(already), w, c, &mut marks) {
                    chosen = Some(t);
                    break;
                }
            }
            let t = chosen.ok_or_else(|| marks.reason())?;
            match placement.iter_mut().find(|(n, _)| n == t) {
                Some((_, g)) => *g = g.saturating_add(gpus),
                None => placement.push((t.clone(), gpus)),
            }
        }
        Ok(placement)
    }
}
