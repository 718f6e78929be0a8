//! One run of the campaign: the twin's cluster and OMENative, two alfred replicas taking
//! turns at the lease, each running alfred's pass and applying its effects with the real
//! applier against the in-memory API server, faults everywhere, invariants after every step.
//!
//! What runs for real: `alfred_dispatch::Caretaker` with the core stages (what `alfred run`'s
//! `Term` drives; the seam is mirrored in `AlfredTerm` because `Term` stamps simulation
//! answers with the wall clock and the twin's clock is simulated), the
//! `alfred-kube` applier (`Applier::read_journal`, `read_node_records`, `apply_pass`, its
//! leader gate and its request timeouts) over the real kube client, the twin's scheduler
//! model for the pre-submit simulation, and the twin's engine for placement and OMENative's
//! surge migrations.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alfred_dispatch::guard::{GuardObservation, check_guard, guard_username, healthy_guard};
use alfred_dispatch::{
    DerivedUuids, DurableState, FreshObserver, Journal, JournalSlot, Reading, RequestPayload,
};
use alfred_kube::run::apply::applier::{Applier, JOURNAL_CONFIG_MAP, Outcome};
use alfred_kube::run::telemetry::metrics::Metrics;
use alfred_kube::run::watch::config::{Reload, ReloadTracker};
use alfred_model::ClusterSnapshot;
use alfred_model::config::{
    Config, DrainProtection, MaintenanceWindow, MigrationApiVersion, Mode, RuntimeOptions,
    TimeOfDay, Weekday,
};
use alfred_model::plan::DRAIN_TAINT_KEY;
use alfred_model::reason::RowReason;
use alfred_model::snapshot::{ComponentKind, MigrationRequestObserved};
use alfred_twin::alfred::{AlfredCaretaker, TwinSimulator};
use alfred_twin::arrivals::{self, Arrival};
use alfred_twin::engine::{self, Action, Caretaker, MINUTE, MigPhase, Sim, SimOptions, ts};
use alfred_twin::rng::Rng;
use alfred_twin::snapshot;
use alfred_twin::trace::{TraceNode, TraceTask};
use alfred_twin::world::{Placement, World};

use crate::apiserver::{
    self, ALFRED_NAMESPACE, ApiModel, Hung, PassContext, ProtectionChange, RECOMMENDATIONS,
    REQUEST_PREFIX, RequestFaults, StoredConfigMap, StoredIsvc, StoredNode, StoredPod, StoredTaint,
    lock,
};
use crate::invariants::{self, ReferenceBreaker, Violation};

const SERVICE_ACCOUNT: &str = "alfred-migrator";
const REPLICAS: usize = 2;
/// An operator removes a stalled entry (and its annotation) this long after it stalled,
/// once nothing runs under it (docs/design-pass.md#follow-up: alfred never cancels a request).
const OPERATOR_AFTER_MS: i64 = 60 * MINUTE;
/// An operator repairs a deleted or corrupted journal after this many passes.
const REPAIR_AFTER_PASSES: u32 = 3;

/// Pass-level fault probabilities (drawn once per run).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassFaults {
    /// The cached snapshot is not the current one: watch events delayed (the whole cache from
    /// 1–3 passes earlier, or observed up to 45 s before the pass) or dropped (some objects
    /// of 1–3 passes earlier, see `partly_stale`).
    pub stale_snapshot: f64,
    /// A fresh look (uncached reads) fails.
    pub fresh_look_fails: f64,
    /// A fresh look is slow: it completes 20–40 s after the pass started.
    pub slow_look: f64,
    /// The lease changes hands between passes.
    pub term_change: f64,
    /// The lease is lost while the pass computes (its effects are dropped).
    pub lease_lost_in_pass: f64,
    /// The journal ConfigMap is deleted.
    pub journal_deleted: f64,
    /// The journal is corrupted.
    pub journal_corrupted: f64,
    /// OMENative never acknowledges a request.
    pub never_ack: f64,
    /// OMENative picks a request up 1–8 passes late.
    pub late_ack: f64,
    /// OMENative fails a running migration (per pass).
    pub migration_fails: f64,
    /// A node fails (NotReady, cordoned, its migrations fail) — preferably one a migration
    /// runs from or to.
    pub node_fails: f64,
    /// Someone else (an operator) requests a migration.
    pub foreign_migration: f64,
    /// alfred's configuration is reloaded (between passes); a quarter of the reloads are
    /// invalid and must leave the last good configuration in force.
    pub config_reload: f64,
    /// The migration guard (the admission policy and its binding) reads broken this pass:
    /// missing, being deleted, changed or not type-checked.
    pub guard_broken: f64,
}

/// The cases drain plans must keep their promises through, drawn once per run from a stream
/// of their own (the run's other draws stay as they were) and checked by the invariants of
/// `invariants`: a maintenance window, recommend-only after execute, an executor that
/// disappears, a nomination the scheduler drops, a node the pods cannot use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanCases {
    /// A daily maintenance window (`start`, `end` minutes of the day, UTC), or none.
    pub window: Option<(u8, u8, u8, u8)>,
    /// Per pass: OMENative's executor disappears from the snapshot for 1–4 passes.
    pub executor_gone: f64,
    /// Per pass: an execute-mode configuration turns recommend-only for 1–4 passes.
    pub recommend_only: f64,
    /// Per pass: the scheduler drops a pending pod's nomination (an older scheduler does
    /// after a failed cycle).
    pub lost_nomination: f64,
    /// Per pass: a node turns unusable for pods for 2–8 passes, tainted `NoSchedule` by
    /// someone else or `Ready=False` (an active plan's node when there is one).
    pub node_unusable: f64,
}

/// The taint someone else puts on a node no pod may use.
const UNUSABLE_TAINT: &str = "example.com/gpu-unusable";

/// Everything one run counted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunReport {
    /// The run's seed.
    pub seed: u64,
    /// Passes run.
    pub passes: u32,
    /// alfred's request annotations that landed.
    pub requests: u64,
    /// Migrations OMENative completed / failed (everyone's).
    pub completed: u64,
    /// Failed.
    pub failed: u64,
    /// Requests the API server received.
    pub api_requests: u64,
    /// Writes checked.
    pub writes: u64,
    /// Faults injected, by kind.
    pub faults: BTreeMap<&'static str, u64>,
    /// Violations, with the pass they were seen in (the run stops at the first).
    pub violations: Vec<(u32, Violation)>,
    /// The drain-plan protection the run started with (`nominate`, `taint`, `none`).
    pub protection: &'static str,
    /// Drain plans that became active in the stored journal.
    pub plans_started: u64,
    /// Plans that left the active set of the stored journal (ended, or lost with it).
    pub plans_ended: u64,
    /// Nominations alfred set / cleared (writes that landed).
    pub nominations_set: u64,
    /// Cleared.
    pub nominations_cleared: u64,
    /// alfred's taint set / removed (writes that landed).
    pub taints_set: u64,
    /// Removed.
    pub taints_removed: u64,
    /// Passes after which no leftover nomination or taint was allowed, and checked.
    pub leftover_checks: u64,
    /// Valid configurations loaded between passes.
    pub config_reloads: u64,
    /// Invalid ones rejected (the last good one kept).
    pub config_rejected: u64,
}

/// The seam of `alfred run`'s `Term`, one per leadership term: the core's caretaker
/// (session, last node records, failed requests) and the specification's breaker to hold
/// it to.
struct AlfredTerm {
    caretaker: alfred_dispatch::Caretaker,
    breaker: ReferenceBreaker,
}

struct Replica {
    applier: Applier,
    term: Option<AlfredTerm>,
}

/// A fresh look (docs/design-pass.md#pre-submit-re-check steps 1 and 12): the cluster as it is now
/// (the pass's world is frozen while it runs), failing or slow as drawn.
struct Looks<'a> {
    snapshot: &'a ClusterSnapshot,
    plan: RefCell<VecDeque<Look>>,
}

#[derive(Clone, Copy)]
enum Look {
    Good,
    Fails,
    Slow(u64),
}

impl FreshObserver for Looks<'_> {
    fn observe_again(&self, now: alfred_model::Timestamp) -> Option<Arc<ClusterSnapshot>> {
        let look = self.plan.borrow_mut().pop_front().unwrap_or(Look::Good);
        match look {
            Look::Fails => None,
            Look::Good => Some(Arc::new(self.snapshot.clone())),
            Look::Slow(secs) => {
                let mut s = self.snapshot.clone();
                s.observed_at = now.plus(Duration::from_secs(secs));
                Some(Arc::new(s))
            }
        }
    }
}

/// The campaign's caretaker in the twin's loop.
struct Chaos {
    rng: Rng,
    faults: PassFaults,
    config: Config,
    runtime: RuntimeOptions,
    rt: tokio::runtime::Runtime,
    model: Arc<Mutex<ApiModel>>,
    hung: Hung,
    replicas: Vec<Replica>,
    history: VecDeque<ClusterSnapshot>,
    /// alfred's landed requests: UUID → when (ms).
    alfred_requests: BTreeMap<String, i64>,
    /// Requests OMENative will pick up at the given pass (`None`: never).
    held: BTreeMap<String, Option<u32>>,
    /// Requests handed to the twin's OMENative.
    forwarded: BTreeSet<String>,
    /// Requests someone else made.
    foreign: BTreeSet<String>,
    /// Failed nodes: index → (name, recovers at (ms)).
    failed_nodes: BTreeMap<usize, (String, i64)>,
    /// Stalled journal entries: UUID → first seen stalled (ms).
    stalled_since: BTreeMap<String, i64>,
    /// The journal has been broken (deleted or corrupted) since this pass.
    journal_broken_at: Option<u32>,
    /// The last journal alfred wrote.
    last_good_journal: Option<String>,
    /// Taints of others on every Node (alfred must keep them).
    foreign_taints: Vec<StoredTaint>,
    /// Plans active in the stored journal after the last pass.
    active_plans: BTreeSet<String>,
    /// The `alfred-config` reload path of `alfred run`.
    reloads: ReloadTracker,
    /// The drain-plan cases of the run and their own random stream.
    cases: PlanCases,
    cases_rng: Rng,
    /// The executor is gone until this pass.
    executor_back_at: Option<u32>,
    /// The configuration is recommend-only until this pass (then execute again).
    execute_back_at: Option<u32>,
    /// Unusable nodes: name → (tainted, else not ready; usable again at this pass).
    unusable: BTreeMap<String, (bool, u32)>,
    /// Plans the stored journal showed ended: id → when they ended.
    ended_plans: BTreeMap<String, alfred_model::Timestamp>,
    /// alfred's landed requests that were drain-plan steps: UUID → the plan's node.
    plan_step_requests: BTreeMap<String, String>,
    report: RunReport,
}

impl Chaos {
    fn pass_faults_count(&mut self, kind: &'static str) {
        *self.report.faults.entry(kind).or_insert(0) += 1;
    }

    fn violate(&mut self, v: Violation) {
        if self.report.violations.is_empty() {
            self.report.violations.push((self.report.passes, v));
        }
    }

    fn check(&mut self, r: Result<(), Violation>) {
        if let Err(v) = r {
            self.violate(v);
        }
    }

    /// The API server's InferenceServices follow the twin's running tasks; a request
    /// annotation goes when its migration ends (OMENative's clean-up) or its
    /// InferenceService does.
    fn sync_isvcs(&mut self, sim: &Sim) {
        let mut m = lock(&self.model);
        let running: BTreeMap<&str, usize> = sim
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.state == engine::TaskState::Running)
            .map(|(i, t)| (t.name.as_str(), i))
            .collect();
        m.isvcs
            .retain(|name, _| running.contains_key(name.as_str()));
        for (name, &i) in &running {
            let e = m.isvcs.entry((*name).to_owned()).or_default();
            e.twin_rv = (sim.tasks[i].migrations.len() + 1).to_string();
        }
        let ended: BTreeSet<&str> = sim
            .migrations
            .iter()
            .filter(|mig| mig.ended.is_some())
            .map(|mig| mig.uuid.as_str())
            .collect();
        for isvc in m.isvcs.values_mut() {
            let before = isvc.annotations.len();
            isvc.annotations.retain(|k, _| {
                k.strip_prefix(REQUEST_PREFIX)
                    .is_none_or(|u| !ended.contains(u))
            });
            if isvc.annotations.len() != before {
                isvc.bumps += 1;
            }
        }
    }

    /// The snapshot alfred would observe of the cluster: the twin's, with the API server's
    /// annotations and resourceVersions and the failed nodes' readiness.
    fn overlay(&self, mut snap: ClusterSnapshot) -> ClusterSnapshot {
        let m = lock(&self.model);
        for w in &mut snap.workloads {
            let Some(isvc) = m.isvcs.get(&w.name) else {
                continue;
            };
            w.resource_version = isvc.rv();
            w.migration.requests = isvc
                .annotations
                .iter()
                .filter_map(|(k, v)| {
                    let uuid = k.strip_prefix(REQUEST_PREFIX)?;
                    let p = RequestPayload::decode(v).ok()?;
                    Some(MigrationRequestObserved {
                        uuid: uuid.to_owned(),
                        component: p.component.as_str().into(),
                        instance: p.instance,
                        from_node: p.from_node.clone(),
                        hint_target_nodes: p.hint_target_nodes.clone(),
                        reason: p.reason.as_str().into(),
                        requested_at: Some(p.requested_at),
                        requested_by: "alfred".into(),
                        raw: v.clone(),
                    })
                })
                .collect();
        }
        for n in &mut snap.nodes {
            if self.failed_nodes.values().any(|(name, _)| *name == n.name) {
                n.ready = false;
            }
            match self.unusable.get(&n.name) {
                Some((true, _)) => n.taints.push(alfred_model::snapshot::Taint {
                    key: UNUSABLE_TAINT.into(),
                    value: String::new(),
                    effect: "NoSchedule".into(),
                }),
                Some((false, _)) => n.ready = false,
                None => {}
            }
        }
        if self.executor_back_at.is_some() {
            snap.executor.available = false;
        }
        snap.normalize();
        snap
    }

    /// The drain-plan cases of this pass ([`PlanCases`]): the executor goes or comes back,
    /// the configuration turns recommend-only or back to execute, a node turns unusable or
    /// usable again.
    fn plan_cases(&mut self, sim: &Sim, now: i64) {
        let pass = self.report.passes;
        if !self.config.maintenance_window_open(ts(now)) {
            self.pass_faults_count("outside_window");
        }
        if self.executor_back_at.is_some_and(|p| p <= pass) {
            self.executor_back_at = None;
        }
        if self.executor_back_at.is_none() && self.cases_rng.uniform() < self.cases.executor_gone {
            self.executor_back_at = Some(pass + 1 + self.cases_rng.index(4) as u32);
            self.pass_faults_count("executor_gone");
        }
        if self.execute_back_at.is_some_and(|p| p <= pass) {
            self.execute_back_at = None;
            self.config.mode = Mode::Execute;
        }
        if self.execute_back_at.is_none()
            && self.config.mode == Mode::Execute
            && self.cases_rng.uniform() < self.cases.recommend_only
        {
            self.config.mode = Mode::RecommendOnly;
            self.execute_back_at = Some(pass + 1 + self.cases_rng.index(4) as u32);
            self.pass_faults_count("recommend_only_after_execute");
        }
        self.unusable.retain(|_, (_, until)| *until > pass);
        if self.cases_rng.uniform() < self.cases.node_unusable && !sim.world.nodes.is_empty() {
            let plan_nodes: Vec<String> = lock(&self.model)
                .durable_plans()
                .unwrap_or_default()
                .into_iter()
                .filter(|p| p.active())
                .map(|p| p.node)
                .collect();
            let node = if plan_nodes.is_empty() {
                sim.world.nodes[self.cases_rng.index(sim.world.nodes.len())]
                    .name
                    .clone()
            } else {
                plan_nodes[self.cases_rng.index(plan_nodes.len())].clone()
            };
            let tainted = self.cases_rng.uniform() < 0.5;
            let until = pass + 2 + self.cases_rng.index(7) as u32;
            self.unusable.insert(node, (tainted, until));
            self.pass_faults_count(if tainted {
                "node_tainted_unusable"
            } else {
                "node_not_ready"
            });
        }
    }

    /// The scheduler drops a pending pod's nomination (as drawn): the snapshot shows it gone,
    /// and the API server's Pod follows.
    fn lose_a_nomination(&mut self, snap: &mut ClusterSnapshot) {
        if self.cases_rng.uniform() >= self.cases.lost_nomination {
            return;
        }
        let nominated: Vec<usize> = (0..snap.pending_pods.len())
            .filter(|&i| !snap.pending_pods[i].nominated_node.is_empty())
            .collect();
        if nominated.is_empty() {
            return;
        }
        let i = nominated[self.cases_rng.index(nominated.len())];
        snap.pending_pods[i].nominated_node.clear();
        snap.normalize();
        self.pass_faults_count("nomination_lost");
    }

    /// What the pass's record says of its requests, and what its snapshot said of the
    /// nodes, for the invariants of the drain-plan cases.
    fn pass_facts(
        &self,
        record: &alfred_model::record::LastCycle,
        cached: &ClusterSnapshot,
        now: alfred_model::Timestamp,
        context: &mut PassContext,
    ) {
        for r in record.recommendations.iter().flatten() {
            if r.request_uuid.is_empty() {
                continue;
            }
            if r.emergency || r.policy == alfred_model::record::Policy::NodeHealth {
                context.window_exempt.insert(r.request_uuid.clone());
            }
            if !r.plan_id.is_empty() {
                context
                    .plan_steps
                    .insert(r.request_uuid.clone(), r.from_node.clone());
            }
        }
        context.executor_available = cached.executor.available;
        context.window_open = self.config.maintenance_window_open(now);
        context.unusable_nodes = cached
            .nodes
            .iter()
            .filter(|n| {
                !n.ready
                    || n.taints.iter().any(|t| {
                        t.key != DRAIN_TAINT_KEY
                            && (t.effect == "NoSchedule" || t.effect == "NoExecute")
                    })
            })
            .map(|n| n.name.clone())
            .collect();
    }

    /// The on-call operator: removes stalled entries nothing acts on (and their
    /// annotation) after [`OPERATOR_AFTER_MS`], and repairs a broken journal.
    fn operator(&mut self, sim: &Sim, now: i64) {
        let mut m = lock(&self.model);
        let text = m.journal_text().map(str::to_owned);
        let journal = text.as_deref().and_then(|t| Journal::parse(t).ok());
        let broken = journal.is_none();
        match (broken, self.journal_broken_at) {
            (true, None) => self.journal_broken_at = Some(self.report.passes),
            (false, _) => self.journal_broken_at = None,
            (true, Some(at)) if self.report.passes >= at + REPAIR_AFTER_PASSES => {
                let restored = self
                    .last_good_journal
                    .clone()
                    .filter(|_| self.rng.uniform() < 0.5)
                    .unwrap_or_else(|| r#"{"version":"v1","entries":[]}"#.to_owned());
                m.admin_write_journal(&restored);
                self.journal_broken_at = None;
                // A journal restored from an earlier copy may hold as active a plan that
                // ended since: the operator's doing, not a plan resuming.
                self.ended_plans.clear();
            }
            _ => {}
        }
        let Some(mut journal) = journal else { return };
        let stalled: Vec<String> = journal
            .entries
            .iter()
            .filter(|e| e.phase == alfred_dispatch::Phase::Stalled)
            .map(|e| e.uuid.clone())
            .collect();
        self.stalled_since.retain(|u, _| stalled.contains(u));
        for u in &stalled {
            self.stalled_since.entry(u.clone()).or_insert(now);
        }
        let running = |u: &str| {
            sim.migrations
                .iter()
                .any(|x| x.uuid == u && x.ended.is_none())
        };
        let due: Vec<String> = self
            .stalled_since
            .iter()
            .filter(|(u, since)| now - **since >= OPERATOR_AFTER_MS && !running(u))
            .map(|(u, _)| u.clone())
            .collect();
        if due.is_empty() {
            return;
        }
        journal.entries.retain(|e| !due.contains(&e.uuid));
        if let Ok(text) = journal.to_state_json() {
            m.admin_write_journal(&text);
        }
        for isvc in m.isvcs.values_mut() {
            for u in &due {
                if isvc
                    .annotations
                    .remove(&format!("{REQUEST_PREFIX}{u}"))
                    .is_some()
                {
                    isvc.bumps += 1;
                }
            }
        }
        for u in &due {
            self.stalled_since.remove(u);
            self.held.remove(u);
        }
    }

    fn journal_faults(&mut self) {
        let delete = self.rng.uniform() < self.faults.journal_deleted;
        let corrupt = self.rng.uniform() < self.faults.journal_corrupted;
        let mut m = lock(&self.model);
        if delete && m.config_maps.remove(JOURNAL_CONFIG_MAP).is_some() {
            drop(m);
            self.pass_faults_count("journal_deleted");
            return;
        }
        if corrupt && let Some(text) = m.journal_text().map(str::to_owned) {
            let cut = text.len() / 2;
            let garbage = if text.is_char_boundary(cut) {
                text[..cut].to_owned()
            } else {
                "{\"version\":\"v1\"".to_owned()
            };
            m.admin_write_journal(&garbage);
            drop(m);
            self.pass_faults_count("journal_corrupted");
        }
    }

    /// Node failures, OMENative failures, late pick-ups and others' requests.
    fn world_faults(&mut self, sim: &Sim, now: i64, actions: &mut Vec<Action>) {
        let recovered: Vec<usize> = self
            .failed_nodes
            .iter()
            .filter(|(_, (_, at))| *at <= now)
            .map(|(n, _)| *n)
            .collect();
        for n in recovered {
            self.failed_nodes.remove(&n);
            actions.push(Action::Cordon {
                node: n,
                cordoned: false,
            });
        }
        let running: Vec<&engine::Migration> = sim
            .migrations
            .iter()
            .filter(|m| m.ended.is_none())
            .collect();
        if self.rng.uniform() < self.faults.node_fails && !sim.world.nodes.is_empty() {
            let node = match running.first() {
                Some(m) => m
                    .target
                    .filter(|_| self.rng.uniform() < 0.5)
                    .unwrap_or(m.from),
                None => self.rng.index(sim.world.nodes.len()),
            };
            self.pass_faults_count("node_failed");
            let until = now + (10 + self.rng.index(60) as i64) * MINUTE;
            self.failed_nodes
                .insert(node, (sim.world.nodes[node].name.clone(), until));
            actions.push(Action::Cordon {
                node,
                cordoned: true,
            });
            for m in &running {
                if m.from == node || m.target == Some(node) || m.worker_target == Some(node) {
                    actions.push(Action::FailMigration { task: m.task });
                }
            }
        }
        for m in &running {
            if self.rng.uniform() < self.faults.migration_fails {
                self.pass_faults_count("omenative_failed");
                actions.push(Action::FailMigration { task: m.task });
            }
        }
        // Held requests whose time has come.
        let due: Vec<String> = self
            .held
            .iter()
            .filter(|(_, at)| at.is_some_and(|p| p <= self.report.passes))
            .map(|(u, _)| u.clone())
            .collect();
        for u in due {
            self.held.remove(&u);
            self.forward(sim, &u, actions);
        }
        if self.rng.uniform() < self.faults.foreign_migration {
            self.foreign_request(sim, now, actions);
        }
    }

    /// Hands a landed request to the twin's OMENative (when its annotation is still there).
    fn forward(&mut self, sim: &Sim, uuid: &str, actions: &mut Vec<Action>) {
        let m = lock(&self.model);
        let key = format!("{REQUEST_PREFIX}{uuid}");
        let Some((name, payload)) = m
            .isvcs
            .iter()
            .find_map(|(n, i)| i.annotations.get(&key).map(|p| (n.clone(), p.clone())))
        else {
            return;
        };
        drop(m);
        let Some(task) = sim.task_index(&name) else {
            return;
        };
        let hints = RequestPayload::decode(&payload)
            .map(|p| {
                p.hint_target_nodes
                    .iter()
                    .filter_map(|h| sim.world.node_index(h))
                    .collect()
            })
            .unwrap_or_default();
        self.forwarded.insert(uuid.to_owned());
        actions.push(Action::Migrate {
            task,
            uuid: uuid.to_owned(),
            payload,
            hints,
        });
    }

    /// An operator's own migration request (the same annotation, a UUID alfred never
    /// journalled), which OMENative runs at once.
    fn foreign_request(&mut self, sim: &Sim, now: i64, actions: &mut Vec<Action>) {
        let candidates: Vec<usize> = (0..sim.tasks.len())
            .filter(|&i| {
                let t = &sim.tasks[i];
                t.state == engine::TaskState::Running && t.migration.is_none() && !t.gang
            })
            .collect();
        if candidates.is_empty() {
            return;
        }
        let task = candidates[self.rng.index(candidates.len())];
        let Some(node) = sim.tasks[task].node else {
            return;
        };
        let payload = RequestPayload {
            component: ComponentKind::Engine,
            instance: 0,
            from_node: sim.world.nodes[node].name.clone(),
            hint_target_nodes: Vec::new(),
            reason: RowReason::Fragmentation,
            requested_at: ts(now),
        }
        .encode();
        let Ok(payload) = payload else { return };
        let uuid = self.rng.uuid();
        let name = sim.tasks[task].name.clone();
        {
            let mut m = lock(&self.model);
            let Some(isvc) = m.isvcs.get_mut(&name) else {
                return;
            };
            isvc.annotations
                .insert(format!("{REQUEST_PREFIX}{uuid}"), payload.clone());
            isvc.bumps += 1;
        }
        self.pass_faults_count("foreign_migration");
        self.foreign.insert(uuid.clone());
        self.forwarded.insert(uuid.clone());
        actions.push(Action::Migrate {
            task,
            uuid,
            payload,
            hints: Vec::new(),
        });
    }

    /// Who holds the lease for this pass (a new term when it changes hands).
    fn leader(&mut self) -> usize {
        let mut m = lock(&self.model);
        let change = m.lease.is_none() || self.rng.uniform() < self.faults.term_change;
        if change {
            let next = self.rng.index(REPLICAS);
            if m.lease.is_some() {
                *self.report.faults.entry("term_change").or_insert(0) += 1;
            }
            for (i, r) in self.replicas.iter_mut().enumerate() {
                if i != next || m.lease != Some(next) {
                    r.term = None;
                }
            }
            m.set_lease(Some(next));
            next
        } else {
            let holder = m.lease.unwrap_or(0);
            m.gates[holder].confirm();
            holder
        }
    }

    fn cached_snapshot(
        &mut self,
        sim: &Sim,
        now: i64,
        current: &ClusterSnapshot,
    ) -> ClusterSnapshot {
        if self.rng.uniform() >= self.faults.stale_snapshot {
            return current.clone();
        }
        let draw = self.rng.uniform();
        if draw < 0.35 && !self.history.is_empty() {
            self.pass_faults_count("stale_snapshot");
            let k = self.rng.index(self.history.len());
            return self.history[k].clone();
        }
        if draw < 0.7 && !self.history.is_empty() {
            self.pass_faults_count("watch_events_dropped");
            let k = self.rng.index(self.history.len());
            let old = self.history[k].clone();
            return partly_stale(&mut self.rng, current, &old);
        }
        self.pass_faults_count("stale_snapshot");
        let lag = self.rng.index(46) as i64 * 1000;
        self.overlay(snapshot::build(sim, (now - lag).max(0), true))
    }

    /// Passes whose cached snapshot was not the current one, whole or in part.
    fn stale_passes(&self) -> u64 {
        ["stale_snapshot", "watch_events_dropped"]
            .iter()
            .filter_map(|k| self.report.faults.get(k))
            .sum()
    }

    fn run_pass(&mut self, sim: &Sim, now: i64) -> Vec<Action> {
        self.report.passes += 1;
        let mut actions = Vec::new();
        self.sync_isvcs(sim);
        self.operator(sim, now);
        self.journal_faults();
        self.world_faults(sim, now, &mut actions);
        self.sync_isvcs(sim);
        self.config_reload();
        self.plan_cases(sim, now);
        let mut current = self.overlay(snapshot::build(sim, now, true));
        self.lose_a_nomination(&mut current);
        self.sync_pods_and_nodes(&current);
        let injected_before: u64 = lock(&self.model).injected.values().sum();
        let stale_before = self.stale_passes();
        let cached = self.cached_snapshot(sim, now, &current);
        let fresh = self.stale_passes() == stale_before;
        self.history.push_front(current.clone());
        self.history.truncate(3);
        let leader = self.leader();
        let t_now = ts(now);

        // Reads, as `alfred run`'s decider does them (journal, then the node records).
        let replica = &self.replicas[leader];
        let (journal_text, journal_error, stored) = self.rt.block_on(async {
            let (text, error) = match replica.applier.read_journal().await {
                Ok(t) => (t, None),
                Err(o) => (
                    None,
                    Some(format!("read {JOURNAL_CONFIG_MAP}: {}", o.label())),
                ),
            };
            let stored = replica.applier.read_node_records(RECOMMENDATIONS).await;
            (text, error, stored)
        });
        self.drop_hung();
        let state = DurableState::from_config_maps(
            match journal_error {
                Some(error) => Err(error),
                None => Ok(journal_text.as_deref()),
            },
            &stored,
        );
        let before = match &state.journal {
            JournalSlot::Readable(j) => Some(j.clone()),
            _ => None,
        };
        let mut clean = fresh && before.is_some();
        let plan = self.draw_looks();
        let looks = Looks {
            snapshot: &current,
            plan: RefCell::new(plan),
        };
        let uuids: Vec<String> = (0..4).map(|_| self.rng.uuid()).collect();
        let guard = self.guard();
        let guard_healthy =
            check_guard(&guard, &guard_username(ALFRED_NAMESPACE, SERVICE_ACCOUNT)).is_ok();
        let runtime = &self.runtime;
        let term = self.replicas[leader]
            .term
            .get_or_insert_with(|| AlfredTerm {
                // Unused: every pass's UUIDs come from the campaign's generator.
                caretaker: alfred_dispatch::Caretaker::new(
                    runtime.clone(),
                    DerivedUuids::new([0; 32]),
                )
                .with_identity(ALFRED_NAMESPACE, "alfred-config")
                .with_dispatch_deadline(Some(alfred_kube::run::decision::pass::DISPATCH_DEADLINE)),
                breaker: ReferenceBreaker::default(),
            });
        let mut simulator = TwinSimulator::new(sim);
        let reading = Reading::new(&cached, &self.config, t_now)
            .state(state)
            .guard(&guard)
            .fresh_looks(&looks)
            .uuids(&uuids);
        let out = term.caretaker.pass(reading, &mut simulator);
        // The breaker against the specification: the outcomes this pass recorded are the
        // entries it moved to a terminal phase.
        let breaker_open_before = term.breaker.is_open(t_now);
        if let (Some(b), JournalSlot::Readable(a)) = (&before, &out.new_state.journal) {
            for e in &a.entries {
                let was_open = b.entry(&e.uuid).is_some_and(|x| !x.phase.is_terminal());
                if was_open && e.phase.is_terminal() {
                    term.breaker
                        .record(e.phase == alfred_dispatch::Phase::Completed, t_now);
                }
            }
        }
        let breaker = term.breaker.clone();
        let actual = term.caretaker.session().breaker.clone();
        self.check(invariants::breaker_as_specified(&breaker, &actual, t_now));

        // The lease can go while the pass computes: `alfred run` then drops its effects.
        if self.rng.uniform() < self.faults.lease_lost_in_pass {
            self.pass_faults_count("lease_lost_in_pass");
            lock(&self.model).set_lease(None);
        }
        let gate_open = lock(&self.model).gates[leader].is_leader();
        if gate_open {
            {
                let hourly = self.hourly(sim, now);
                let mut context = PassContext::default();
                self.pass_facts(&out.record, &cached, t_now, &mut context);
                let mut m = lock(&self.model);
                m.context = PassContext {
                    now: Some(t_now),
                    snapshot_observed_at: Some(cached.observed_at),
                    journal_uuids: before
                        .as_ref()
                        .map(|j| j.entries.iter().map(|e| e.uuid.clone()).collect())
                        .unwrap_or_default(),
                    breaker_open: breaker_open_before || breaker.is_open(t_now),
                    running: sim
                        .migrations
                        .iter()
                        .filter(|x| x.ended.is_none())
                        .map(|x| (x.uuid.clone(), sim.tasks[x.task].name.clone()))
                        .collect(),
                    hourly,
                    plans_enabled: plans_enabled(&self.config),
                    executing: self.config.mode == Mode::Execute,
                    guard_healthy,
                    journal_plans: before.as_ref().map(|j| j.plans.clone()).unwrap_or_default(),
                    ..context
                };
            }
            let replica = &self.replicas[leader];
            let report = self.rt.block_on(
                replica
                    .applier
                    .apply_pass(&out.effects, out.if_final_save_fails.as_ref()),
            );
            self.drop_hung();
            if let Some(term) = self.replicas[leader].term.as_mut() {
                let written = out.effects.iter().filter(|e| e.is_write());
                for (e, (_, o)) in written.zip(&report.writes) {
                    term.caretaker.write_done(e, *o == Outcome::Applied);
                }
            }
            clean &= report.writes.iter().all(|(_, o)| *o == Outcome::Applied);
        } else {
            clean = false;
        }
        {
            let m = lock(&self.model);
            clean &= m.lease == Some(leader) && m.injected.values().sum::<u64>() == injected_before;
        }
        self.after_writes(sim, now);
        self.check_state(sim);
        let clean = clean && self.config.mode == Mode::Execute;
        let at_work = clean && plans_enabled(&self.config) && cached.executor.available;
        self.follow_plans(clean, at_work);
        self.deliver_protection(sim, &mut actions);
        actions
    }

    /// The pass's fresh looks: good, failing or slow, as drawn.
    fn draw_looks(&mut self) -> VecDeque<Look> {
        (0..4)
            .map(|_| {
                let r = self.rng.uniform();
                if r < self.faults.fresh_look_fails {
                    Look::Fails
                } else if r < self.faults.fresh_look_fails + self.faults.slow_look {
                    Look::Slow(20 + self.rng.index(21) as u64)
                } else {
                    Look::Good
                }
            })
            .collect()
    }

    /// The guard as the pass reads it: as installed, or broken as drawn.
    fn guard(&mut self) -> GuardObservation {
        let mut g = healthy_guard(&guard_username(ALFRED_NAMESPACE, SERVICE_ACCOUNT));
        if self.rng.uniform() >= self.faults.guard_broken {
            return g;
        }
        self.pass_faults_count("guard_broken");
        match self.rng.index(5) {
            0 => g.policy = None,
            1 => g.binding = None,
            2 => {
                if let Some(p) = g.policy.as_mut() {
                    p.deleting = true;
                }
            }
            3 => {
                if let Some(p) = g.policy.as_mut() {
                    p.observed_generation = 0;
                }
            }
            _ => {
                if let Some(b) = g.binding.as_mut() {
                    b.spec =
                        serde_json::json!({"policyName": "other", "validationActions": ["Warn"]});
                }
            }
        }
        g
    }

    /// alfred's configuration changes between passes the way `alfred run` reloads
    /// `alfred-config`: a new document through the same parsing and validation, an invalid
    /// one keeping the last good configuration.
    fn config_reload(&mut self) {
        if self.rng.uniform() >= self.faults.config_reload {
            return;
        }
        let mut next = self.config.clone();
        next.max_in_flight_migrations = 1 + self.rng.index(3) as u32;
        next.max_migrations_per_hour = 1 + self.rng.index(8) as u32;
        next.per_workload_cooldown_minutes = 1 + self.rng.index(30) as u32;
        next.per_node_cooldown_minutes = 1 + self.rng.index(30) as u32;
        let plans = &mut next.policies.defragmentation.drain_plans;
        plans.protection = draw_protection(&mut self.rng);
        plans.enabled = self.rng.uniform() < 0.8;
        next.mode = if self.rng.uniform() < 0.8 {
            Mode::Execute
        } else {
            Mode::RecommendOnly
        };
        let Ok(mut doc) = serde_json::to_value(&next) else {
            return;
        };
        if self.rng.uniform() < 0.25 {
            match self.rng.index(4) {
                0 => doc["maxMigrationsPerHour"] = serde_json::json!(-1),
                1 => doc["mode"] = serde_json::json!("sideways"),
                2 => {
                    doc["policies"]["defragmentation"]["drainPlans"]["protection"] =
                        serde_json::json!("glue")
                }
                _ => doc["maxInFlightMigrations"] = serde_json::json!("three"),
            }
        }
        let text = doc.to_string();
        match self.reloads.observe(
            ALFRED_NAMESPACE,
            "alfred-config",
            "config.yaml",
            Some(&text),
        ) {
            Reload::Loaded(c) => {
                self.report.config_reloads += 1;
                self.config = *c;
            }
            Reload::Failed(_) => self.report.config_rejected += 1,
            Reload::Unchanged => {}
        }
    }

    /// The API server's pending Pods and Nodes follow the twin's (whose scheduler binds
    /// pods, drops their nominations and honours alfred's taint): a nomination or taint
    /// alfred wrote reached the twin at the end of its pass, so what differs now is the
    /// scheduler's doing. Others' taints stay on every Node.
    fn sync_pods_and_nodes(&mut self, snap: &ClusterSnapshot) {
        let mut m = lock(&self.model);
        let pending: BTreeMap<String, (&str, Option<String>)> = snap
            .pending_pods
            .iter()
            .map(|p| {
                (
                    format!("{}/{}", p.namespace, p.name),
                    (
                        p.uid.as_str(),
                        Some(p.nominated_node.clone()).filter(|n| !n.is_empty()),
                    ),
                )
            })
            .collect();
        m.pods.retain(|k, _| pending.contains_key(k));
        for (key, (uid, nominated)) in pending {
            let stale = m
                .pods
                .get(&key)
                .is_none_or(|p| p.uid != uid || p.nominated != nominated);
            if stale {
                let rv = m.bump();
                m.pods.insert(
                    key,
                    StoredPod {
                        uid: uid.to_owned(),
                        rv,
                        nominated,
                    },
                );
            }
        }
        for n in &snap.nodes {
            let ours: Vec<StoredTaint> = n
                .taints
                .iter()
                .filter(|t| t.key == DRAIN_TAINT_KEY)
                .map(|t| StoredTaint {
                    key: t.key.clone(),
                    value: t.value.clone(),
                    effect: t.effect.clone(),
                })
                .collect();
            let stored_ours: Option<Vec<StoredTaint>> = m.nodes.get(&n.name).map(|s| {
                s.taints
                    .iter()
                    .filter(|t| t.key == DRAIN_TAINT_KEY)
                    .cloned()
                    .collect()
            });
            if stored_ours.as_ref() == Some(&ours) {
                continue;
            }
            let rv = m.bump();
            let node = m.nodes.entry(n.name.clone()).or_insert_with(|| StoredNode {
                uid: n.uid.clone(),
                rv,
                taints: self.foreign_taints.clone(),
            });
            node.taints.retain(|t| t.key != DRAIN_TAINT_KEY);
            node.taints.extend(ours);
            node.rv = rv;
        }
    }

    /// Hands the nominations and taints that landed in this pass to the twin (its scheduler
    /// honours them from now on).
    fn deliver_protection(&self, sim: &Sim, actions: &mut Vec<Action>) {
        let m = lock(&self.model);
        for (key, pod) in &m.pods {
            let Some((task, incarnation)) = key
                .split_once('/')
                .and_then(|(_, name)| twin_pod_task(sim, name))
            else {
                continue;
            };
            let stored = pod
                .nominated
                .as_deref()
                .and_then(|n| sim.world.node_index(n));
            let twin = sim.tasks[task].nominated;
            if stored == twin {
                continue;
            }
            if let Some(node) = twin {
                actions.push(Action::ClearNomination {
                    task,
                    incarnation,
                    node,
                });
            }
            if let Some(node) = stored {
                actions.push(Action::Nominate {
                    task,
                    incarnation,
                    node,
                });
            }
        }
        for (name, node) in &m.nodes {
            let Some(i) = sim.world.node_index(name) else {
                continue;
            };
            let ours = node.taints.iter().find(|t| t.key == DRAIN_TAINT_KEY);
            let twin = &sim.world.nodes[i];
            let (tainted, value) = (
                ours.is_some(),
                ours.map(|t| t.value.clone()).unwrap_or_default(),
            );
            if tainted != twin.tainted || value != twin.taint_value {
                actions.push(Action::Taint {
                    node: i,
                    tainted,
                    value,
                });
            }
        }
    }

    /// Counts the plans the stored journal starts and ends; after a clean pass (the
    /// leader read its journal, decided on a fresh snapshot, kept the lease and every write
    /// landed without a fault) checks that no nomination or taint of alfred's is left that no
    /// active plan names.
    ///
    /// Always: no plan the stored journal showed ended is active again. After a clean pass
    /// with plans at work (`plans_at_work`: execute mode, plans on, an executor): every active
    /// `nominate` plan's pod is nominated, a nomination the scheduler dropped put back.
    fn follow_plans(&mut self, clean: bool, plans_at_work: bool) {
        let m = lock(&self.model);
        let plans = m.durable_plans();
        let active: BTreeSet<String> = plans
            .iter()
            .flatten()
            .filter(|p| p.active())
            .map(|p| p.id.clone())
            .collect();
        let verdict = match (&plans, clean) {
            (Some(plans), true) => {
                Some(invariants::no_leftover_protection(&m.pods, &m.nodes, plans))
            }
            _ => None,
        };
        let put_back = match (&plans, plans_at_work) {
            (Some(plans), true) => Some(invariants::lost_nominations_put_back(&m.pods, plans)),
            _ => None,
        };
        drop(m);
        if let Some(plans) = &plans {
            let resumed = invariants::ended_plans_never_resume(&self.ended_plans, plans);
            self.check(resumed);
            for p in plans.iter().filter(|p| p.phase.ended()) {
                if let Some(at) = p.ended_at {
                    let seen = self.ended_plans.entry(p.id.clone()).or_insert(at);
                    *seen = (*seen).max(at);
                }
            }
        }
        if let Some(v) = put_back {
            self.check(v);
        }
        self.report.plans_started += active.difference(&self.active_plans).count() as u64;
        self.report.plans_ended += self.active_plans.difference(&active).count() as u64;
        self.active_plans = active;
        if let Some(v) = verdict {
            self.report.leftover_checks += 1;
            self.check(v);
        }
    }

    /// Every request started in the last hour, as far as the cluster and the stored
    /// journal still hold it (docs/design-pass.md#budget-check): the journal's entries by
    /// `createdAt`, the request annotations by `requested_at`, and every migration OMENative
    /// started (anyone's) on an InferenceService that still exists (a deleted one takes its status
    /// rows with it; a deleted journal takes alfred's history with it).
    fn hourly(&self, sim: &Sim, now: i64) -> BTreeSet<String> {
        let hour = Duration::from_secs(3600);
        let t_now = ts(now);
        let inside = |t: alfred_model::Timestamp| t <= t_now && t_now.since(t) < hour;
        let m = lock(&self.model);
        let mut out: BTreeSet<String> = m
            .journal_text()
            .and_then(|t| Journal::parse(t).ok())
            .map(|j| {
                j.entries
                    .iter()
                    .filter(|e| inside(e.created_at))
                    .map(|e| e.uuid.clone())
                    .collect()
            })
            .unwrap_or_default();
        for isvc in m.isvcs.values() {
            for (k, v) in &isvc.annotations {
                let (Some(uuid), Ok(p)) =
                    (k.strip_prefix(REQUEST_PREFIX), RequestPayload::decode(v))
                else {
                    continue;
                };
                if inside(p.requested_at) {
                    out.insert(uuid.to_owned());
                }
            }
        }
        out.extend(
            sim.migrations
                .iter()
                .filter(|m| {
                    m.started.is_some_and(|s| inside(ts(s)))
                        && sim.tasks[m.task].state == engine::TaskState::Running
                })
                .map(|m| m.uuid.clone()),
        );
        out
    }

    fn drop_hung(&self) {
        lock(&self.hung).clear();
    }

    /// Judges every write the pass sent, and hands landed requests to OMENative's fate.
    fn after_writes(&mut self, sim: &Sim, now: i64) {
        let writes = std::mem::take(&mut lock(&self.model).writes);
        let (max_in_flight, per_hour) = (
            self.config.max_in_flight_migrations,
            self.config.max_migrations_per_hour,
        );
        for w in writes {
            self.report.writes += 1;
            self.check(invariants::no_write_without_lease(&w));
            if let Some(text) = &w.journal {
                self.check(invariants::journal_reads_back(text));
                self.last_good_journal = Some(text.clone());
            }
            if let Some(p) = &w.protection {
                self.check(invariants::nomination_only_where_unset(p));
                self.check(invariants::protection_names_an_active_plan(p));
                self.check(invariants::no_protection_while_plans_are_off(p));
                self.check(invariants::no_protection_write_in_recommend_only(p));
                match &p.change {
                    ProtectionChange::Nomination { after: Some(_), .. } => {
                        self.report.nominations_set += 1
                    }
                    ProtectionChange::Nomination { after: None, .. } => {
                        self.report.nominations_cleared += 1
                    }
                    ProtectionChange::Taints { before, after, .. } => {
                        let ours = |ts: &[StoredTaint]| ts.iter().any(|t| t.key == DRAIN_TAINT_KEY);
                        if ours(after) && before != after {
                            self.report.taints_set += 1;
                        } else if ours(before) && !ours(after) {
                            self.report.taints_removed += 1;
                        }
                    }
                }
            }
            let Some(r) = w.request else { continue };
            self.report.requests += 1;
            self.check(invariants::no_request_in_recommend_only(&r));
            self.check(invariants::no_request_without_a_healthy_guard(&r));
            self.check(invariants::no_request_without_an_executor(&r));
            self.check(invariants::outside_windows_only_emergencies(&r));
            self.check(invariants::no_step_for_an_unusable_node(&r));
            self.check(invariants::no_second_request_for_an_instance(&r));
            if self
                .config
                .policies
                .defragmentation
                .drain_plans
                .overlap_steps
            {
                self.check(invariants::within_caps_overlapping(
                    &r,
                    max_in_flight,
                    per_hour,
                ));
            } else {
                self.check(invariants::within_caps(&r, max_in_flight, per_hour));
            }
            self.check(invariants::built_on_a_fresh_snapshot(&r));
            self.check(invariants::no_request_while_the_breaker_is_open(&r));
            self.alfred_requests.insert(r.uuid.clone(), now);
            if let Some(node) = r.context.plan_steps.get(&r.uuid) {
                self.plan_step_requests.insert(r.uuid.clone(), node.clone());
            }
            let roll = self.rng.uniform();
            if roll < self.faults.never_ack {
                self.pass_faults_count("never_ack");
                self.held.insert(r.uuid, None);
            } else if roll < self.faults.never_ack + self.faults.late_ack {
                self.pass_faults_count("late_ack");
                let at = self.report.passes + 1 + self.rng.index(8) as u32;
                self.held.insert(r.uuid, Some(at));
            } else {
                self.held.insert(r.uuid, Some(self.report.passes + 1));
            }
        }
        let _ = sim;
    }

    /// The state invariants after the pass.
    fn check_state(&mut self, sim: &Sim) {
        let m = lock(&self.model);
        let mut unresolved: BTreeSet<String> = m
            .request_annotations()
            .into_keys()
            .filter(|u| !self.foreign.contains(u))
            .collect();
        unresolved.extend(
            sim.migrations
                .iter()
                .filter(|x| x.ended.is_none() && self.alfred_requests.contains_key(&x.uuid))
                .map(|x| x.uuid.clone()),
        );
        let journal = m.journal_text().and_then(|t| Journal::parse(t).ok());
        drop(m);
        let overlap = self
            .config
            .policies
            .defragmentation
            .drain_plans
            .overlap_steps;
        self.check(invariants::at_most_one_unresolved(
            &unresolved,
            journal.as_ref(),
            overlap.then_some(&self.plan_step_requests),
        ));
    }
}

impl Caretaker for Chaos {
    fn name(&self) -> String {
        "alfred-chaos".into()
    }

    fn interval_ms(&self) -> i64 {
        i64::try_from(self.config.decision_loop_interval.as_millis()).unwrap_or(60_000)
    }

    fn pass(&mut self, sim: &Sim, now: i64) -> Vec<Action> {
        if !self.report.violations.is_empty() {
            return Vec::new();
        }
        let mut actions = self.run_pass(sim, now);
        // Requests OMENative picks up in the next pass are handed over with this pass's
        // actions when due now.
        let due: Vec<String> = self
            .held
            .iter()
            .filter(|(u, at)| *at == &Some(self.report.passes + 1) && !self.forwarded.contains(*u))
            .map(|(u, _)| u.clone())
            .collect();
        for u in due {
            if self.rng.uniform() < 0.5 {
                self.held.remove(&u);
                self.forward(sim, &u, &mut actions);
            }
        }
        actions
    }

    fn finish(&mut self, sim: &Sim, _now: i64) {
        self.report.completed = sim
            .migrations
            .iter()
            .filter(|m| m.phase == MigPhase::Completed)
            .count() as u64;
        self.report.failed = sim
            .migrations
            .iter()
            .filter(|m| m.phase == MigPhase::Failed)
            .count() as u64;
    }
}

fn scaled(rng: &mut Rng, max: f64) -> f64 {
    if max == 0.0 {
        return 0.0;
    }
    // A quarter of the runs leave each fault out; the others draw its rate up to `max`.
    if rng.uniform() < 0.25 {
        0.0
    } else {
        rng.uniform() * max
    }
}

/// Runs one campaign run of `passes` decision passes from `seed`; `calm`: no faults at all
/// (the baseline of how much the same runs dispatch).
pub fn run(seed: u64, passes: u32, calm: bool) -> RunReport {
    let mut rng = Rng::new(seed);
    let k = if calm { 0.0 } else { 1.0 };
    let (request_faults, faults) = fault_rates(&mut rng, k);
    let (nodes, trace) = cluster_and_trace(&mut rng);
    let interval_ms = (30 + rng.index(91) as i64) * 1000;
    let horizon = i64::from(passes) * interval_ms + interval_ms / 2;
    let arrivals = arrivals(&mut rng, horizon, nodes.len() as u32 * 8);
    let placement = if rng.uniform() < 0.7 {
        Placement::Spread
    } else {
        Placement::parse("binpack").unwrap_or(Placement::Spread)
    };
    let mut config = campaign_config(&mut rng, seed, placement, interval_ms);
    let mut cases_rng = Rng::new(seed ^ 0x9E37_79B9_7F4A_7C15);
    let cases = plan_cases(&mut cases_rng, k, horizon);
    if let Some((h0, m0, h1, m1)) = cases.window
        && let (Some(start), Some(end)) = (TimeOfDay::new(h0, m0), TimeOfDay::new(h1, m1))
    {
        config.maintenance_windows = vec![MaintenanceWindow {
            days: Weekday::ALL.iter().copied().collect(),
            start,
            end,
        }];
    }
    let protection = protection_name(config.policies.defragmentation.drain_plans.protection);
    let foreign_taints = if rng.uniform() < 0.5 {
        vec![StoredTaint {
            key: "example.com/gpu-firmware".into(),
            value: "pending".into(),
            effect: "PreferNoSchedule".into(),
        }]
    } else {
        Vec::new()
    };
    let runtime = RuntimeOptions {
        migration_api_version: Some(MigrationApiVersion::V1),
        migration_service_account: SERVICE_ACCOUNT.into(),
        simulation_configured: true,
        ..RuntimeOptions::default()
    };
    let opts = sim_options(&mut rng, horizon);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread tokio runtime");
    let (model, hung, replicas) = api_server(&rt, request_faults, seed);
    let _ = StoredIsvc::default();
    let mut chaos = Chaos {
        rng,
        faults,
        config,
        runtime,
        rt,
        model: model.clone(),
        hung,
        replicas,
        history: VecDeque::new(),
        alfred_requests: BTreeMap::new(),
        held: BTreeMap::new(),
        forwarded: BTreeSet::new(),
        foreign: BTreeSet::new(),
        failed_nodes: BTreeMap::new(),
        stalled_since: BTreeMap::new(),
        journal_broken_at: None,
        last_good_journal: None,
        foreign_taints,
        active_plans: BTreeSet::new(),
        reloads: ReloadTracker::default(),
        cases,
        cases_rng,
        executor_back_at: None,
        execute_back_at: None,
        unusable: BTreeMap::new(),
        ended_plans: BTreeMap::new(),
        plan_step_requests: BTreeMap::new(),
        report: RunReport {
            seed,
            protection,
            ..RunReport::default()
        },
    };
    engine::run(
        &arrivals,
        &trace,
        World::new(&nodes, placement),
        &opts,
        &mut chaos,
        &mut |_| {},
    );
    let m = lock(&model);
    chaos.report.api_requests = m.requests;
    for (k, v) in &m.injected {
        *chaos.report.faults.entry(k).or_insert(0) += v;
    }
    chaos.report.clone()
}

/// The run's fault rates (all zero when `k` is 0): the API server's per request, and the
/// pass-level ones.
fn fault_rates(rng: &mut Rng, k: f64) -> (RequestFaults, PassFaults) {
    let request_faults = RequestFaults {
        conflict: scaled(rng, k * 0.15),
        server_error: scaled(rng, k * 0.08),
        timeout_landed: scaled(rng, k * 0.05),
        timeout_lost: scaled(rng, k * 0.05),
        lease_loss: scaled(rng, k * 0.03),
    };
    let faults = PassFaults {
        stale_snapshot: scaled(rng, k * 0.4),
        fresh_look_fails: scaled(rng, k * 0.15),
        slow_look: scaled(rng, k * 0.1),
        term_change: scaled(rng, k * 0.1),
        lease_lost_in_pass: scaled(rng, k * 0.05),
        journal_deleted: scaled(rng, k * 0.02),
        journal_corrupted: scaled(rng, k * 0.02),
        never_ack: scaled(rng, k * 0.15),
        late_ack: scaled(rng, k * 0.4),
        migration_fails: scaled(rng, k * 0.15),
        node_fails: scaled(rng, k * 0.03),
        foreign_migration: scaled(rng, k * 0.05),
        config_reload: scaled(rng, k * 0.05),
        guard_broken: scaled(rng, k * 0.05),
    };
    (request_faults, faults)
}

/// The run's drain-plan cases (none when `k` is 0): each rate left out in a quarter of the
/// runs, a maintenance window in one run of three, open for a stretch of the run's first
/// day (`horizon` ms from midnight UTC).
fn plan_cases(rng: &mut Rng, k: f64, horizon: i64) -> PlanCases {
    let minutes = (horizon / MINUTE).clamp(4, 1439);
    let window = (k > 0.0 && rng.uniform() < 1.0 / 3.0).then(|| {
        let start = rng.index((minutes / 2) as usize) as i64;
        let end = (start + minutes / 4 + rng.index((minutes / 4) as usize + 1) as i64)
            .clamp(start + 1, 1439);
        let hm = |m: i64| ((m / 60) as u8, (m % 60) as u8);
        let ((h0, m0), (h1, m1)) = (hm(start), hm(end));
        (h0, m0, h1, m1)
    });
    PlanCases {
        window,
        executor_gone: scaled(rng, k * 0.03),
        recommend_only: scaled(rng, k * 0.04),
        lost_nomination: scaled(rng, k * 0.1),
        node_unusable: scaled(rng, k * 0.05),
    }
}

/// A few 8-GPU nodes and one task per gang size 1, 2, 4 and 8.
fn cluster_and_trace(rng: &mut Rng) -> (Vec<TraceNode>, Vec<TraceTask>) {
    let node_count = 4 + rng.index(5);
    let nodes: Vec<TraceNode> = (0..node_count)
        .map(|i| TraceNode {
            name: format!("n{i:02}"),
            cpu_milli: 64_000,
            memory_mib: 262_144,
            gpus: 8,
            model: "G".into(),
        })
        .collect();
    let trace: Vec<TraceTask> = [1, 2, 4, 8]
        .into_iter()
        .map(|gpus| TraceTask {
            name: format!("g{gpus}"),
            cpu_milli: 1000,
            memory_mib: 1024,
            gpus,
            gpu_spec: vec![],
            creation: None,
            deletion: None,
        })
        .collect();
    (nodes, trace)
}

/// Mean GPUs of an arrival (the mix below).
const MEAN_ARRIVAL_GPUS: f64 = 0.4 + 0.2 * 2.0 + 0.15 * 4.0 + 0.25 * 8.0;
/// Mean lifetime of an arrival that departs, in minutes.
const MEAN_LIFETIME_MINUTES: f64 = 91.0;

/// Arrivals until `horizon`, mostly small tasks, most with an exponential lifetime, offering
/// 60–110 % of the cluster's `gpus`: a busy, fragmented cluster where large pods wait for a
/// node and drain plans have room to move the small ones out of the way (a cluster far
/// beyond its capacity leaves no room to move anything).
fn arrivals(rng: &mut Rng, horizon: i64, gpus: u32) -> Vec<Arrival> {
    let mut arrivals = Vec::new();
    let mut at = 0i64;
    let load = 0.8 + rng.uniform() * 0.5;
    let mean_gap =
        MEAN_ARRIVAL_GPUS * MEAN_LIFETIME_MINUTES / (f64::from(gpus) * load) * MINUTE as f64;
    // The cluster starts about as busy as the arrivals keep it (one every second until
    // the offered GPUs reach the load), instead of filling up over the first hours.
    let mut offered = 0.0;
    let mut warm = true;
    while at < horizon {
        let r = rng.uniform();
        let task = if r < 0.4 {
            0
        } else if r < 0.6 {
            1
        } else if r < 0.75 {
            2
        } else {
            3
        };
        let lifetime =
            (rng.uniform() < 0.95).then(|| (rng.exp(90.0) * MINUTE as f64) as i64 + MINUTE);
        arrivals.push(Arrival {
            at,
            task,
            lifetime,
            gang: false,
        });
        if warm {
            offered += f64::from(1u32 << task);
            warm = offered < f64::from(gpus) * load;
            at += 1000;
        } else {
            at += (rng.exp(mean_gap)) as i64 + 1;
        }
    }
    arrivals
}

/// The caretaker's configuration with the run's drawn budgets and short cooldowns.
fn campaign_config(rng: &mut Rng, seed: u64, placement: Placement, interval_ms: i64) -> Config {
    let mut config = AlfredCaretaker::new(Config::default(), seed, placement)
        .config()
        .clone();
    config.recommendations_config_map_enabled = true;
    config.recommendations_config_map_name = RECOMMENDATIONS.into();
    config.decision_loop_interval = Duration::from_millis(interval_ms as u64);
    config.max_in_flight_migrations = 1 + rng.index(3) as u32;
    config.max_migrations_per_hour = 1 + rng.index(8) as u32;
    // Short cooldowns, so that a run of a few hours dispatches often enough to matter.
    config.recent_placement_cooldown_minutes = 1 + rng.index(10) as u32;
    config.per_workload_cooldown_minutes = 1 + rng.index(30) as u32;
    config.per_node_cooldown_minutes = 1 + rng.index(30) as u32;
    config.emergency_pending_age_minutes = 1 + rng.index(10) as u32;
    config.policies.defragmentation.drain_plans.protection = draw_protection(rng);
    // Plans for lone pods after a short wait, so that runs of a few hours see plans.
    config
        .policies
        .defragmentation
        .drain_plans
        .lone_pod_wait_minutes = 1 + rng.index(30) as u32;
    // The plans' throughput opt-in, on in one run of three: drawn from the seed, not the
    // stream, so a run drawn without it replays as it did before the key existed.
    config.policies.defragmentation.drain_plans.overlap_steps = overlap_drawn(seed);
    config
}

/// Whether a run of `seed` has `drainPlans.overlapSteps` on (one seed in three).
fn overlap_drawn(seed: u64) -> bool {
    (seed >> 3).is_multiple_of(3)
}

/// The drain-plan protection of a run or a reload: nominate, taint or none.
fn draw_protection(rng: &mut Rng) -> DrainProtection {
    match rng.index(5) {
        0 | 1 => DrainProtection::Nominate,
        2 | 3 => DrainProtection::Taint,
        _ => DrainProtection::None,
    }
}

fn protection_name(p: DrainProtection) -> &'static str {
    match p {
        DrainProtection::Nominate => "nominate",
        DrainProtection::Taint => "taint",
        DrainProtection::None => "none",
    }
}

/// Drain plans may run under `config` (defragmentation and `drainPlans.enabled` on).
fn plans_enabled(config: &Config) -> bool {
    let d = &config.policies.defragmentation;
    d.enabled && d.drain_plans.enabled
}

/// The task and incarnation of a twin pod name (`t<id>-engine-<incarnation>`).
fn twin_pod_task(sim: &Sim, name: &str) -> Option<(usize, u32)> {
    let (task, inc) = name.split_once("-engine-")?;
    let inc: u32 = inc.split('-').next()?.parse().ok()?;
    Some((sim.task_index(task)?, inc))
}

/// The simulation's options with the run's drawn ack and readiness delays.
fn sim_options(rng: &mut Rng, horizon: i64) -> SimOptions {
    SimOptions {
        horizon_ms: horizon,
        mode: arrivals::Mode::Churn,
        warmup_ms: 0,
        sample_every_ms: 60 * MINUTE,
        score_every_ms: 0,
        ack_delay_ms: (2 + rng.index(60) as i64) * 1000,
        ready_ms: (1 + rng.index(20) as i64) * MINUTE,
        cpu_mem: true,
    }
}

/// The in-memory API server with an empty journal and recommendations ConfigMap, and one
/// applier per replica talking to it.
fn api_server(
    rt: &tokio::runtime::Runtime,
    request_faults: RequestFaults,
    seed: u64,
) -> (Arc<Mutex<ApiModel>>, Hung, Vec<Replica>) {
    let mut model = ApiModel::new(REPLICAS, request_faults, seed ^ 0x5EED_0A91);
    let journal = r#"{"version":"v1","entries":[]}"#;
    model.admin_write_journal(journal);
    let rv = model.bump();
    model.config_maps.insert(
        RECOMMENDATIONS.into(),
        StoredConfigMap {
            rv,
            data: BTreeMap::new(),
        },
    );
    let gates = model.gates.clone();
    let model = Arc::new(Mutex::new(model));
    let hung: Hung = Arc::default();
    let replicas = {
        let _guard = rt.enter();
        (0..REPLICAS)
            .map(|i| Replica {
                applier: Applier::new(
                    apiserver::client(model.clone(), i, hung.clone()),
                    ALFRED_NAMESPACE,
                    gates[i].clone(),
                    Arc::new(Metrics::new()),
                ),
                term: None,
            })
            .collect()
    };
    (model, hung, replicas)
}

/// The cache after some watch events were dropped: each node, workload and pod is the
/// current one or, for about one in three, the version of `old`; a pod created since
/// may be missing and one deleted since may linger. The cache does not know: its
/// observation time is the current one, so only the re-check's fresh look can tell.
fn partly_stale(
    rng: &mut Rng,
    current: &ClusterSnapshot,
    old: &ClusterSnapshot,
) -> ClusterSnapshot {
    let mut s = current.clone();
    for node in &mut s.nodes {
        if rng.uniform() < 0.33
            && let Some(o) = old.nodes.iter().find(|n| n.name == node.name)
        {
            *node = o.clone();
        }
    }
    for w in &mut s.workloads {
        if rng.uniform() < 0.33
            && let Some(o) = old.workloads.iter().find(|o| o.key() == w.key())
        {
            *w = o.clone();
        }
    }
    let mut pods = Vec::with_capacity(s.pods.len());
    for p in &s.pods {
        let before = old.pods.iter().find(|o| o.key() == p.key());
        if rng.uniform() < 0.33 {
            // A missed update (the old version) or a missed creation (not there).
            if let Some(o) = before {
                pods.push(o.clone());
            }
        } else {
            pods.push(p.clone());
        }
    }
    for o in &old.pods {
        let deleted_since = !s.pods.iter().any(|p| p.key() == o.key());
        if deleted_since && rng.uniform() < 0.33 {
            pods.push(o.clone());
        }
    }
    s.pods = pods;
    s.normalize();
    s
}

#[cfg(test)]
mod tests {
    use alfred_model::snapshot::{Node, Pod};

    use super::*;

    fn snap(nodes: &[(&str, u32)], pods: &[(&str, &str)], at: i64) -> ClusterSnapshot {
        let mut s = ClusterSnapshot {
            observed_at: ts(at),
            nodes: nodes
                .iter()
                .map(|(name, free)| Node {
                    name: (*name).into(),
                    free_gpus: *free,
                    ..Node::default()
                })
                .collect(),
            pods: pods
                .iter()
                .map(|(name, node)| Pod {
                    namespace: "twin".into(),
                    name: (*name).into(),
                    node: (*node).into(),
                    ..Pod::default()
                })
                .collect(),
            ..ClusterSnapshot::default()
        };
        s.normalize();
        s
    }

    #[test]
    fn one_run_in_three_draws_overlapping_plan_steps_from_its_seed() {
        let on = (0..3000u64).filter(|s| overlap_drawn(*s)).count();
        assert!((900..=1100).contains(&on), "{on}");
        // CI's replayed seed keeps its configuration.
        assert!(!overlap_drawn(7257));
        let mut rng = Rng::new(1);
        let config = campaign_config(&mut rng, 0, Placement::Spread, 60_000);
        assert!(config.policies.defragmentation.drain_plans.overlap_steps);
    }

    #[test]
    fn a_partly_stale_cache_mixes_old_and_current_objects_at_the_current_time() {
        // Old: n1 had 2 free, pod a on n1 and pod gone (deleted since). Current: n1 has 6
        // free, pod a moved to n2, pod new was created.
        let old = snap(&[("n1", 2), ("n2", 8)], &[("a", "n1"), ("gone", "n1")], 0);
        let current = snap(
            &[("n1", 6), ("n2", 4)],
            &[("a", "n2"), ("new", "n2")],
            60_000,
        );
        let (mut stale_node, mut moved_back, mut missing, mut lingering) = (0, 0, 0, 0);
        for seed in 0..200 {
            let mixed = partly_stale(&mut Rng::new(seed), &current, &old);
            assert_eq!(mixed.observed_at, current.observed_at);
            let n1 = mixed.node("n1").map(|n| n.free_gpus);
            assert!(n1 == Some(6) || n1 == Some(2), "{n1:?}");
            stale_node += usize::from(n1 == Some(2));
            let a = mixed
                .pods
                .iter()
                .find(|p| p.name == "a")
                .map(|p| p.node.clone());
            assert!(a.as_deref() == Some("n2") || a.as_deref() == Some("n1"));
            moved_back += usize::from(a.as_deref() == Some("n1"));
            missing += usize::from(!mixed.pods.iter().any(|p| p.name == "new"));
            lingering += usize::from(mixed.pods.iter().any(|p| p.name == "gone"));
            let keys: Vec<String> = mixed.pods.iter().map(Pod::key).collect();
            let mut sorted = keys.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(keys, sorted, "normalized, no pod twice");
        }
        for (what, n) in [
            ("old node", stale_node),
            ("old pod version", moved_back),
            ("missed creation", missing),
            ("missed deletion", lingering),
        ] {
            assert!((30..=110).contains(&n), "{what}: {n} of 200");
        }
    }
}
