#![allow(dead_code)]
//! A small world for multi-pass stories: a snapshot, the durable state, the session, and
//! an applier that feeds the effects back (journal writes, request annotations).

use std::collections::BTreeMap;

use alfred_dispatch::guard::{GuardObservation, guard_username, healthy_guard};
use alfred_dispatch::journal::Journal;
use alfred_dispatch::{
    DurableState, FreshLooks, FreshObserver, JournalSlot, PassInput, PassOutput, ScriptedSimulator,
    ScriptedStages, Session, run_pass,
};
use alfred_model::config::{Config, MigrationApiVersion, Mode, RuntimeOptions, SchedulingProfile};
use alfred_model::effect::Effect;
use alfred_model::reason::{AdvisoryReason, DispatchReason, RowReason};
use alfred_model::record::{Candidate, Policy, Row};
use alfred_model::snapshot::{
    Component, ComponentKind, DeploymentMode, Instance, MigrationRecord, MigrationRequestObserved,
    Node, OwnerRef, Pod, ReplicaState, Runner, Workload,
};
use alfred_model::{ClusterSnapshot, Timestamp};

pub const T0: i64 = 1_790_000_000;

pub fn node(name: &str, total: u32, alloc: u32) -> Node {
    Node {
        name: name.into(),
        uid: format!("uid-{name}"),
        pool: Some("H100".into()),
        gpu_resource: "nvidia.com/gpu".into(),
        total_gpus: total,
        allocated_gpus: alloc,
        free_gpus: total - alloc,
        ready: true,
        ..Node::default()
    }
}

pub fn workload(name: &str, node: &str) -> (Workload, Pod) {
    let pod = Pod {
        namespace: "ns".into(),
        name: format!("{name}-0"),
        node: node.into(),
        gpus: 4,
        ready: true,
        ome: true,
        uid: format!("pod-{name}"),
        started_at: Some(Timestamp::from_unix_secs(T0 - 86_400)),
        labels: [("ome.io/inferenceservice".to_string(), name.to_string())]
            .into_iter()
            .collect(),
        ..Pod::default()
    };
    let w = Workload {
        namespace: "ns".into(),
        name: name.into(),
        uid: format!("isvc-{name}"),
        resource_version: "100".into(),
        generation: 1,
        components: vec![Component {
            kind: ComponentKind::Engine,
            mode: DeploymentMode::OMENative,
            replica: Some(ReplicaState {
                name: format!("{name}-engine"),
                uid: format!("ir-{name}"),
                status_fresh: true,
                runners: vec![Runner {
                    name: "default".into(),
                    size: 1,
                    template: serde_json::json!({"spec": {}}),
                }],
                owner: Some(OwnerRef {
                    api_version: "ome.io/v1beta1".into(),
                    kind: "InferenceService".into(),
                    name: name.into(),
                    uid: format!("isvc-{name}"),
                }),
                spec_component: "engine".into(),
                ..ReplicaState::default()
            }),
            observation_invalid: None,
            instances: vec![Instance {
                index: 0,
                pods: vec![format!("ns/{name}-0")],
                nodes: [(node.to_string(), 1)].into_iter().collect(),
                total_gpus: 4,
                ready_pods: 1,
                ..Instance::default()
            }],
            pods: vec![format!("ns/{name}-0")],
            scheduler_name: String::new(),
            topology_key: String::new(),
        }],
        ..Workload::default()
    };
    (w, pod)
}

pub fn candidate(w: &str, from: &str, hints: &[&str], score: f64) -> Candidate {
    Candidate {
        policy: Policy::Defragmentation,
        workload: format!("ns/{w}"),
        component: ComponentKind::Engine,
        instance: 0,
        mode: DeploymentMode::OMENative,
        reason: RowReason::Fragmentation,
        from_node: from.into(),
        hint_target_nodes: hints.iter().map(|s| s.to_string()).collect(),
        placement_target_nodes: vec![],
        executable: true,
        advisory_reason: None,
        surge_shaped: true,
        footprint_gpus: 4,
        benefit: 0.5,
        cost: 0.15,
        score,
        emergency: false,
        pod_gpus: vec![4],
        scheduling: None,
        plan: None,
    }
}

pub fn uuid(i: u32) -> String {
    format!("00000000-0000-4000-8000-{i:012x}")
}

/// The second look of the re-check (docs/design-pass.md#pre-submit-re-check step 12) as a test
/// scripts it: what the cluster looks like after the simulation (`None`: it cannot be observed).
pub struct ScriptedLook(pub Option<ClusterSnapshot>);

/// The adapter's observer as the harness plays it: the first call is the first fresh look,
/// every later one the scripted second look.
struct ScriptedLooks {
    first: Option<ClusterSnapshot>,
    then: Option<ClusterSnapshot>,
    calls: std::cell::Cell<usize>,
}

impl FreshObserver for ScriptedLooks {
    fn observe_again(&self, _: Timestamp) -> Option<std::sync::Arc<ClusterSnapshot>> {
        let n = self.calls.get();
        self.calls.set(n + 1);
        let s = if n == 0 { &self.first } else { &self.then };
        s.clone().map(std::sync::Arc::new)
    }
}

pub struct World {
    pub snap: ClusterSnapshot,
    pub fresh: Option<ClusterSnapshot>,
    pub fresh_same: bool,
    /// With `fresh_same`: hand the re-check an equal copy of the pass's snapshot instead of
    /// the very object (as `replay` and the twin do), so the re-check runs the policies again
    /// rather than reading the pass's own proposal.
    pub fresh_copy: bool,
    /// `None`: the cluster is frozen during the pass ([`FreshLooks::Frozen`]); else the
    /// adapter observes on demand ([`FreshLooks::Observe`]) and the second look sees this.
    pub second_look: Option<ScriptedLook>,
    /// How many times the last pass observed the cluster on demand.
    pub observations: usize,
    pub config: Config,
    pub runtime: RuntimeOptions,
    pub state: DurableState,
    pub session: Session,
    pub stages: ScriptedStages,
    pub sim: ScriptedSimulator,
    pub guard: GuardObservation,
    pub now: Timestamp,
    pub next_uuid: u32,
    pub config_changed: bool,
    pub deadline: Option<Timestamp>,
    pub no_uuids: bool,
}

impl World {
    /// Execute mode, w1 on node a and w2 on node d (independent sources, so the real
    /// arbiter's node cooling after w1's request does not hold w2 back), targets b and c.
    pub fn execute() -> World {
        let mut config = Config::builtin();
        config.mode = Mode::Execute;
        config.scheduling.profiles.insert(
            "default-scheduler".into(),
            SchedulingProfile {
                backend: "model".into(),
                scheduler_version: "v1.35.4".into(),
                configuration_id: "sha256:x".into(),
                gang_scheduling: false,
            },
        );
        let runtime = RuntimeOptions {
            migration_api_version: Some(MigrationApiVersion::V1),
            migration_service_account: "ome-alfred".into(),
            simulation_configured: true,
            ..RuntimeOptions::default()
        };
        let (w1, p1) = workload("w1", "a");
        let (w2, p2) = workload("w2", "d");
        let mut snap = ClusterSnapshot {
            observed_at: Timestamp::from_unix_secs(T0 - 5),
            nodes: vec![
                node("a", 8, 8),
                node("b", 8, 4),
                node("c", 8, 0),
                node("d", 8, 8),
            ],
            pods: vec![p1, p2],
            workloads: vec![w1, w2],
            ..ClusterSnapshot::default()
        };
        snap.executor.available = true;
        snap.normalize();
        World {
            snap,
            fresh: None,
            fresh_same: true,
            fresh_copy: false,
            second_look: None,
            observations: 0,
            config,
            guard: healthy_guard(&guard_username("ome", "ome-alfred")),
            runtime,
            state: DurableState::default(),
            session: Session::default(),
            stages: ScriptedStages {
                candidates: vec![
                    candidate("w1", "a", &["b", "c"], 0.5),
                    candidate("w2", "d", &["c", "b"], 0.3),
                ],
                fresh_candidates: None,
                node_markers: None,
            },
            sim: ScriptedSimulator::default(),
            now: Timestamp::from_unix_secs(T0),
            next_uuid: 1,
            config_changed: false,
            deadline: None,
            no_uuids: false,
        }
    }

    pub fn journal(&self) -> Journal {
        match &self.state.journal {
            JournalSlot::Readable(j) => j.clone(),
            other => panic!("journal not readable: {other:?}"),
        }
    }

    /// Runs a pass and applies its effects to the world.
    pub fn pass(&mut self) -> PassOutput {
        let uuids: Vec<String> = if self.no_uuids {
            vec![]
        } else {
            (0..3).map(|k| uuid(self.next_uuid + k)).collect()
        };
        // The pass's own snapshot object, unless a copy or an on-demand look is asked for.
        let own = self.fresh_same && !self.fresh_copy && self.second_look.is_none();
        let owned = if own {
            None
        } else if self.fresh_same {
            Some(self.snap.clone())
        } else {
            self.fresh.clone()
        };
        let fresh: Option<&ClusterSnapshot> = if own {
            Some(&self.snap)
        } else {
            owned.as_ref()
        };
        let prev = self.state.node_records.clone();
        let looks = self.second_look.as_ref().map(|second| ScriptedLooks {
            first: fresh.cloned(),
            then: second.0.clone(),
            calls: std::cell::Cell::new(0),
        });
        let input = PassInput {
            snapshot: &self.snap,
            fresh: match &looks {
                None => FreshLooks::Frozen(fresh),
                Some(looks) => FreshLooks::Observe(looks),
            },
            config: &self.config,
            runtime: &self.runtime,
            namespace: "ome",
            config_map_name: "alfred-config",
            state: &self.state,
            previous_node_records: &prev,
            guard: &self.guard,
            uuids: &uuids,
            config_changed: self.config_changed,
            deadline: self.deadline,
            now: self.now,
        };
        let out = run_pass(&input, &self.stages, &self.session, &mut self.sim);
        self.observations = looks.as_ref().map_or(0, |l| l.calls.get());
        self.next_uuid += out.uuids_used as u32;
        // Apply: journal writes and annotations.
        for e in &out.effects {
            if let Effect::RequestMigration {
                name,
                uuid,
                payload,
                ..
            } = e
            {
                let w = self
                    .snap
                    .workloads
                    .iter_mut()
                    .find(|w| &w.name == name)
                    .expect("workload");
                let p = alfred_dispatch::RequestPayload::decode(payload).expect("payload");
                w.migration.requests.push(MigrationRequestObserved {
                    uuid: uuid.clone(),
                    component: "engine".into(),
                    instance: p.instance,
                    from_node: p.from_node.clone(),
                    hint_target_nodes: p.hint_target_nodes.clone(),
                    reason: p.reason.as_str().into(),
                    requested_at: Some(p.requested_at),
                    requested_by: "alfred".into(),
                    raw: payload.clone(),
                });
                w.migration
                    .active
                    .push(alfred_model::snapshot::ActiveMigration {
                        uuid: uuid.clone(),
                        component: "engine".into(),
                        instance: p.instance,
                        phase: "Requested".into(),
                        started_at: Some(p.requested_at),
                    });
            }
        }
        self.state = out.new_state.clone();
        self.session = out.session.clone();
        out
    }

    /// OMENative takes the request: annotation removed, status row with `phase`.
    pub fn omenative(
        &mut self,
        uuid: &str,
        phase: &str,
        started: Timestamp,
        done: Option<Timestamp>,
    ) {
        for w in &mut self.snap.workloads {
            if w.migration.requests.iter().any(|r| r.uuid == uuid)
                || w.migration.records.iter().any(|r| r.uuid == uuid)
            {
                w.migration.requests.retain(|r| r.uuid != uuid);
                w.migration.records.retain(|r| r.uuid != uuid);
                w.migration.active.retain(|r| r.uuid != uuid);
                w.migration.records.push(MigrationRecord {
                    uuid: uuid.into(),
                    component: "engine".into(),
                    source_instance: 0,
                    trigger: "Manual".into(),
                    phase: phase.into(),
                    started_at: Some(started),
                    completed_at: done,
                    message: String::new(),
                    from_node: "a".into(),
                    deadline: Some(started.plus_minutes(30)),
                });
                if done.is_none() {
                    w.migration
                        .active
                        .push(alfred_model::snapshot::ActiveMigration {
                            uuid: uuid.into(),
                            component: "engine".into(),
                            instance: 0,
                            phase: phase.into(),
                            started_at: Some(started),
                        });
                } else {
                    w.migration.last_migration = done;
                }
            }
        }
    }

    /// Moves workload `w`'s only pod (and its Instance) to `node`.
    pub fn place(&mut self, w: &str, node: &str) {
        for p in &mut self.snap.pods {
            if p.name == format!("{w}-0") {
                p.node = node.into();
            }
        }
        for wl in &mut self.snap.workloads {
            if wl.name == w {
                wl.components[0].instances[0].nodes = [(node.to_string(), 1)].into_iter().collect();
            }
        }
        self.snap.normalize();
    }

    pub fn advance_minutes(&mut self, m: i64) {
        self.now = self.now.plus_minutes(m);
        self.snap.observed_at = self.now.minus(std::time::Duration::from_secs(5));
    }
}

pub fn row<'a>(out: &'a PassOutput, w: &str) -> &'a Row {
    out.record
        .recommendations
        .as_ref()
        .and_then(|r| r.iter().find(|x| x.workload == format!("ns/{w}")))
        .unwrap_or_else(|| panic!("no row for {w}: {:?}", out.record))
}

pub fn reason(out: &PassOutput, w: &str) -> Option<DispatchReason> {
    row(out, w).dispatch_reason
}

pub fn writes(out: &PassOutput) -> Vec<&'static str> {
    out.effects
        .iter()
        .filter_map(|e| match e {
            Effect::WriteJournal { .. } => Some("journal"),
            Effect::RequestMigration { .. } => Some("request"),
            _ => None,
        })
        .collect()
}

pub fn requests(out: &PassOutput) -> usize {
    out.effects
        .iter()
        .filter(|e| matches!(e, Effect::RequestMigration { .. }))
        .count()
}

pub fn advisory(c: &mut Candidate) {
    c.executable = false;
    c.advisory_reason = Some(AdvisoryReason::OMENativeUnavailable);
}

pub fn _unused(_: BTreeMap<String, String>) {}
