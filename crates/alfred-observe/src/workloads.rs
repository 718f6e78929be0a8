//! Workloads: InferenceService → components → Instances → pods (docs/design-snapshot.md#workloads),
//! annotations (docs/design-snapshot.md#workload-annotations) and migration state
//! (docs/design-snapshot.md#migration-state).

use std::collections::{BTreeMap, BTreeSet};

use alfred_model::Timestamp;
use alfred_model::config::annotations::{SpotPolicyOverride, WorkloadAnnotations};
use alfred_model::snapshot::{
    ActiveMigration, Component, ComponentKind, DeploymentMode, Instance, InstanceStatus,
    MigrationRecord, MigrationRequestObserved, MigrationState, ModelRef, OwnerRef, ReplicaState,
    Runner, SpotOverride, UnattachedReplica, Workload, WorkloadSettings,
};
use serde_json::Value;

use crate::Problems;
use crate::dynamic::Dyn;
use crate::irstatus;
use crate::nodes::GO_ZERO_UNIX_SECS;
use crate::pods::{COMPONENT_LABEL, MANAGED_BY_LABEL, PodFacts};
use crate::settings::ObserveSettings;

/// Prefix of migration-request annotation keys.
pub const MIGRATION_REQUEST_PREFIX: &str = "ome.io/migration-request-v1-";
const DEPLOYMENT_MODE_ANNOTATION: &str = "ome.io/deploymentMode";
const VALID_MODES: [&str; 4] = [
    "RawDeployment",
    "OMENative",
    "MultiNode",
    "VirtualDeployment",
];
const KINDS: [ComponentKind; 3] = [
    ComponentKind::Decoder,
    ComponentKind::Engine,
    ComponentKind::Router,
];

/// A component as the InferenceService declares it.
#[derive(Debug, Clone, Default)]
pub(crate) struct ComponentSpec {
    annotation_mode: Option<String>,
    leader_or_worker: bool,
    scheduler_name: String,
    topology_key: String,
}

/// A parsed InferenceService.
pub(crate) struct Isvc<'a> {
    pub obj: Dyn<'a>,
    spec_mode: Option<String>,
    pub declared: BTreeMap<ComponentKind, ComponentSpec>,
    pub model: Option<ModelRef>,
}

impl Isvc<'_> {
    pub(crate) fn has_engine(&self) -> bool {
        self.declared.contains_key(&ComponentKind::Engine)
    }

    /// docs/design-snapshot.md#workloads deployment mode, read from the InferenceService alone.
    pub(crate) fn mode(&self, kind: ComponentKind) -> DeploymentMode {
        if !self.has_engine() {
            return DeploymentMode::RawDeployment;
        }
        let spec = self.declared.get(&kind);
        let text = spec
            .and_then(|s| s.annotation_mode.clone())
            .or_else(|| self.spec_mode.clone())
            .or_else(|| {
                (kind != ComponentKind::Router && spec.is_some_and(|s| s.leader_or_worker))
                    .then(|| "OMENative".to_owned())
            });
        match text.as_deref() {
            Some("OMENative") => DeploymentMode::OMENative,
            Some("MultiNode") => DeploymentMode::MultiNode,
            Some("RawDeployment") | None => DeploymentMode::RawDeployment,
            Some(other) => DeploymentMode::Other(other.to_owned()),
        }
    }

    pub(crate) fn declares_omenative(&self, kind: ComponentKind) -> bool {
        self.declared.contains_key(&kind) && self.mode(kind) == DeploymentMode::OMENative
    }
}

fn valid_mode(s: Option<&str>) -> Option<String> {
    s.filter(|m| VALID_MODES.contains(m)).map(str::to_owned)
}

pub(crate) fn parse_isvc<'a>(value: &'a Value, problems: &mut Problems) -> Isvc<'a> {
    let obj = Dyn::new("InferenceService", value, problems);
    let spec_mode = valid_mode(obj.str("spec.deploymentMode", problems));
    let mut declared = BTreeMap::new();
    for kind in KINDS {
        let path = format!("spec.{}", kind.as_str());
        if obj.object(&path, problems).is_none() {
            continue;
        }
        let ann = obj.string_map(&format!("{path}.annotations"), problems);
        let present = |k: &str| obj.get(&format!("{path}.{k}")).is_some();
        declared.insert(
            kind,
            ComponentSpec {
                annotation_mode: valid_mode(
                    ann.get(DEPLOYMENT_MODE_ANNOTATION).map(String::as_str),
                ),
                leader_or_worker: present("leader") || present("worker"),
                scheduler_name: obj
                    .str(&format!("{path}.schedulerName"), problems)
                    .unwrap_or("")
                    .to_owned(),
                topology_key: obj
                    .str(&format!("{path}.topologyKey"), problems)
                    .unwrap_or("")
                    .to_owned(),
            },
        );
    }
    let model = obj
        .str("spec.model.name", problems)
        .filter(|n| !n.is_empty())
        .map(|name| {
            let kind = obj
                .str("spec.model.kind", problems)
                .filter(|k| !k.is_empty())
                .unwrap_or("ClusterBaseModel")
                .to_owned();
            let namespace = if kind == "BaseModel" {
                obj.meta.namespace.clone()
            } else {
                String::new()
            };
            ModelRef {
                kind,
                namespace,
                name: name.to_owned(),
            }
        });
    Isvc {
        obj,
        spec_mode,
        declared,
        model,
    }
}

/// A parsed InferenceReplica.
pub(crate) struct Replica<'a> {
    pub obj: Dyn<'a>,
    pub parent: String,
    pub component: String,
}

pub(crate) fn parse_ir<'a>(value: &'a Value, problems: &mut Problems) -> Replica<'a> {
    let obj = Dyn::new("InferenceReplica", value, problems);
    let parent = obj
        .str("spec.parentRef.name", problems)
        .unwrap_or("")
        .to_owned();
    let component = obj.str("spec.component", problems).unwrap_or("").to_owned();
    if parent.is_empty() {
        obj.problem(
            problems,
            "spec.parentRef.name",
            "missing: the replica belongs to no InferenceService",
        );
    }
    if ComponentKind::parse(&component).is_none() {
        obj.problem(
            problems,
            "spec.component",
            format!("{component:?} is not engine, decoder or router; the replica is not matched"),
        );
    }
    Replica {
        obj,
        parent,
        component,
    }
}

/// Workload annotations (docs/design-snapshot.md#workload-annotations), parsed with alfred-model's
/// shared parsers; an unusable value is ignored (the default is used), kept in `settings.ignored`
/// and reported as a problem.
pub(crate) fn workload_settings(
    isvc: &Isvc<'_>,
    settings: &ObserveSettings,
    problems: &mut Problems,
) -> WorkloadSettings {
    let ann = &isvc.obj.meta.annotations;
    let parsed =
        WorkloadAnnotations::parse(|k| ann.get(k).map(String::as_str), settings.default_movable);
    let mut ignored = BTreeMap::new();
    for d in &parsed.diagnostics {
        ignored.insert(d.annotation.to_owned(), d.value.clone());
        isvc.obj.problem(
            problems,
            &format!("metadata.annotations[{}]", d.annotation),
            format!("{:?} {}; ignored, {} is used", d.value, d.problem, d.used),
        );
    }
    WorkloadSettings {
        movable: parsed.movable,
        priority: parsed.priority,
        cooldown_minutes: parsed.cooldown_minutes,
        cooldown_invalid: parsed.cooldown_invalid,
        tenant_group: parsed.tenant_group.unwrap_or_default(),
        spot_policy: match parsed.spot_policy {
            None => SpotOverride::Default,
            Some(SpotPolicyOverride::Avoid) => SpotOverride::Avoid,
            Some(SpotPolicyOverride::Migrate) => SpotOverride::Migrate,
            Some(SpotPolicyOverride::Ignore) => SpotOverride::Ignore,
        },
        ignored,
    }
}

/// Inputs for building one workload.
pub(crate) struct WorkloadInput<'a, 'b> {
    pub isvc: &'b Isvc<'a>,
    /// Pods routed to each component (indexes into `pods`).
    pub routed: BTreeMap<ComponentKind, Vec<usize>>,
    /// For each declared OMENative component, the InferenceReplicas matching it.
    pub replicas: BTreeMap<ComponentKind, Vec<&'b Replica<'a>>>,
}

/// Builds one workload.
pub(crate) fn build_workload(
    input: &WorkloadInput<'_, '_>,
    pods: &[PodFacts],
    settings: &ObserveSettings,
    problems: &mut Problems,
) -> Workload {
    let isvc = input.isvc;
    let meta = &isvc.obj.meta;
    let kinds: BTreeSet<ComponentKind> = isvc
        .declared
        .keys()
        .copied()
        .chain(input.routed.keys().copied())
        .collect();
    let mut components = Vec::new();
    let mut component_rows: BTreeMap<ComponentKind, Option<&Value>> = BTreeMap::new();
    let empty = Vec::new();
    for kind in kinds {
        let mode = isvc.mode(kind);
        let routed = input.routed.get(&kind).unwrap_or(&empty);
        let mut routed_sorted: Vec<usize> = routed.clone();
        routed_sorted.sort_by(|a, b| pods[*a].pod.name.cmp(&pods[*b].pod.name));
        routed_sorted.dedup();
        let spec = isvc.declared.get(&kind);
        let mut component = Component {
            kind,
            mode: mode.clone(),
            replica: None,
            observation_invalid: None,
            instances: Vec::new(),
            pods: routed_sorted.iter().map(|i| pods[*i].pod.key()).collect(),
            scheduler_name: spec.map(|s| s.scheduler_name.clone()).unwrap_or_default(),
            topology_key: spec.map(|s| s.topology_key.clone()).unwrap_or_default(),
        };
        component.pods.sort();
        match &mode {
            DeploymentMode::RawDeployment => {
                let scheduled: Vec<usize> = routed_sorted
                    .iter()
                    .copied()
                    .filter(|i| !pods[*i].pod.node.is_empty())
                    .collect();
                for (position, pi) in scheduled.iter().enumerate() {
                    let mut inst = Instance {
                        index: u32::try_from(position).unwrap_or(u32::MAX),
                        ..Instance::default()
                    };
                    add_pod(&mut inst, &pods[*pi]);
                    components_finish(&mut inst);
                    component.instances.push(inst);
                }
            }
            DeploymentMode::MultiNode => {
                let mut inst = Instance::default();
                for pi in routed_sorted
                    .iter()
                    .filter(|i| !pods[**i].pod.node.is_empty())
                {
                    add_pod(&mut inst, &pods[*pi]);
                }
                if !inst.pods.is_empty() {
                    components_finish(&mut inst);
                    component.instances.push(inst);
                }
            }
            DeploymentMode::OMENative => {
                let candidates = input.replicas.get(&kind).map(Vec::as_slice).unwrap_or(&[]);
                let rows_value = omenative_component(
                    isvc,
                    kind,
                    candidates,
                    &routed_sorted,
                    pods,
                    &mut component,
                    problems,
                );
                component_rows.insert(kind, rows_value);
            }
            DeploymentMode::Other(_) => {}
        }
        if component.scheduler_name.is_empty()
            && let Some(first) = routed_sorted.first()
        {
            component.scheduler_name = pods[*first].pod.scheduling.scheduler_name.clone();
        }
        components.push(component);
    }

    let mut workload = Workload {
        namespace: meta.namespace.clone(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        generation: meta.generation,
        settings: workload_settings(isvc, settings, problems),
        model: isvc.model.clone(),
        components,
        migration: MigrationState::default(),
    };
    workload.migration = migration_state(&workload, input, &component_rows, problems);
    workload
}

fn add_pod(inst: &mut Instance, f: &PodFacts) {
    inst.pods.push(f.pod.key());
    if !f.pod.node.is_empty() {
        *inst.nodes.entry(f.pod.node.clone()).or_insert(0) += 1;
    }
    inst.total_gpus = inst.total_gpus.saturating_add(f.pod.gpus);
    if f.pod.ready {
        inst.ready_pods += 1;
    }
    if f.pod.terminating {
        inst.any_terminating = true;
    }
}

fn components_finish(inst: &mut Instance) {
    inst.pods.sort();
}

/// The identity labels of an OMENative pod.
struct Identity {
    index: i64,
    incarnation: i64,
    runner: String,
    ordinal: i64,
}

fn pod_identity(f: &PodFacts, kind: ComponentKind, ir_uid: &str) -> Result<Identity, String> {
    let p = &f.pod;
    let owned = p.controller.as_ref().is_some_and(|o| {
        o.api_version == "ome.io/v1beta1" && o.kind == "InferenceReplica" && o.uid == ir_uid
    });
    if !owned || f.controller_conflict {
        return Err(format!(
            "pod {} is not controlled by the component's InferenceReplica",
            p.key()
        ));
    }
    let label = |k: &str| p.labels.get(k).map(String::as_str).unwrap_or("");
    if label(MANAGED_BY_LABEL) != "OMENative" {
        return Err(format!(
            "pod {}: label {MANAGED_BY_LABEL} is {:?}",
            p.key(),
            label(MANAGED_BY_LABEL)
        ));
    }
    if label(COMPONENT_LABEL) != kind.as_str() {
        return Err(format!(
            "pod {}: label {COMPONENT_LABEL} is {:?}",
            p.key(),
            label(COMPONENT_LABEL)
        ));
    }
    let bad = |k: &str| format!("pod {}: label {k} is {:?}", p.key(), label(k));
    let index = parse_go_int(label("ome.io/instance-index"), 32)
        .filter(|v| *v >= 0)
        .ok_or_else(|| bad("ome.io/instance-index"))?;
    let incarnation = parse_go_int(label("ome.io/instance-incarnation"), 64)
        .filter(|v| *v >= 1)
        .ok_or_else(|| bad("ome.io/instance-incarnation"))?;
    let runner = label("ome.io/runner");
    if !matches!(runner, "default" | "leader" | "worker") {
        return Err(bad("ome.io/runner"));
    }
    let ordinal = parse_go_int(label("ome.io/pod-ordinal"), 32)
        .filter(|v| *v >= 0)
        .ok_or_else(|| bad("ome.io/pod-ordinal"))?;
    Ok(Identity {
        index,
        incarnation,
        runner: runner.to_owned(),
        ordinal,
    })
}

/// Fills an OMENative component from its InferenceReplica; returns the IR's status (for
/// migration rows) when exactly one IR matched.
fn omenative_component<'v>(
    isvc: &Isvc<'_>,
    kind: ComponentKind,
    candidates: &[&Replica<'v>],
    routed: &[usize],
    pods: &[PodFacts],
    component: &mut Component,
    problems: &mut Problems,
) -> Option<&'v Value> {
    let meta = &isvc.obj.meta;
    let mut invalid: Option<String> = None;
    let ir = match candidates {
        [] => {
            note(
                &mut invalid,
                format!(
                    "no InferenceReplica for {}/{} component {}",
                    meta.namespace,
                    meta.name,
                    kind.as_str()
                ),
            );
            component.observation_invalid = invalid;
            return None;
        }
        [one] => *one,
        many => {
            note(
                &mut invalid,
                format!(
                    "{} InferenceReplicas claim {}/{} component {}",
                    many.len(),
                    meta.namespace,
                    meta.name,
                    kind.as_str()
                ),
            );
            component.observation_invalid = invalid;
            return None;
        }
    };
    let irm = &ir.obj.meta;
    let owned = matches!(irm.controllers.as_slice(), [(api, k, name, uid)]
        if api == "ome.io/v1beta1" && k == "InferenceService" && *name == meta.name && *uid == meta.uid);
    if !owned {
        note(
            &mut invalid,
            format!(
                "InferenceReplica {} is not controlled by InferenceService {} (uid {})",
                irm.name, meta.name, meta.uid
            ),
        );
    }
    let observed = ir
        .obj
        .int("status.observedGeneration", problems)
        .unwrap_or(0);
    let fresh = observed == irm.generation;
    if !fresh {
        note(
            &mut invalid,
            format!(
                "InferenceReplica {} is stale: status.observedGeneration {observed} != metadata.generation {}",
                irm.name, irm.generation
            ),
        );
    }

    let (runners, layout) = runner_layout(ir, problems);
    if layout.is_none() {
        note(
            &mut invalid,
            format!("InferenceReplica {}: runner layout is invalid", irm.name),
        );
    }
    if component.scheduler_name.is_empty() {
        let main = runners
            .iter()
            .find(|r| r.name == "leader")
            .or_else(|| runners.first());
        if let Some(name) = main
            .and_then(|r| r.template.pointer("/spec/schedulerName"))
            .and_then(Value::as_str)
        {
            component.scheduler_name = name.to_owned();
        }
    }
    if component.topology_key.is_empty() {
        component.topology_key = ir
            .obj
            .str("spec.topologyKey", problems)
            .unwrap_or("")
            .to_owned();
    }

    let status = ir.obj.get("status");
    component.replica = Some(replica_state(ir, owned && fresh, runners, problems));

    // Rows.
    let rows = match status {
        None => Vec::new(),
        Some(s) => match irstatus::decode(s) {
            Ok(rows) => rows,
            Err(e) => {
                ir.obj.problem(problems, "status", e.clone());
                note(&mut invalid, format!("InferenceReplica {}: {e}", irm.name));
                Vec::new()
            }
        },
    };
    let row_index: BTreeMap<i64, usize> =
        rows.iter().enumerate().map(|(i, r)| (r.index, i)).collect();
    let mut joined: Vec<Vec<(usize, Identity)>> = (0..rows.len()).map(|_| Vec::new()).collect();
    for &pi in routed {
        match pod_identity(&pods[pi], kind, &irm.uid) {
            Ok(id) => match row_index.get(&id.index) {
                Some(&ri) => joined[ri].push((pi, id)),
                None => note(
                    &mut invalid,
                    format!(
                        "pod {} names Instance {} which has no status row",
                        pods[pi].pod.key(),
                        id.index
                    ),
                ),
            },
            Err(e) => note(&mut invalid, e),
        }
    }

    for (row, members) in rows.iter().zip(joined) {
        component
            .instances
            .push(instance(row, &members, pods, layout));
    }
    component.instances.sort_by_key(|i| i.index);
    component.observation_invalid = invalid;
    status
}

/// Keeps the first reason a component's observation is invalid.
fn note(invalid: &mut Option<String>, why: String) {
    if invalid.is_none() {
        *invalid = Some(why);
    }
}

/// The InferenceReplica's runners and the layout they form, if valid (one `default` runner
/// of size 1, or a `leader` of size 1 with workers).
fn runner_layout(ir: &Replica<'_>, problems: &mut Problems) -> (Vec<Runner>, Option<Layout>) {
    let mut runners = Vec::new();
    for (i, r) in ir
        .obj
        .array("spec.runners", problems)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = r
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let size = match r.get("size") {
            None | Some(Value::Null) => None,
            Some(v) => v.as_i64(),
        };
        let size_ok = size.and_then(|s| u32::try_from(s).ok());
        if size_ok.is_none() {
            ir.obj.problem(
                problems,
                &format!("spec.runners[{i}].size"),
                format!(
                    "{} is not a non-negative integer",
                    r.get("size").unwrap_or(&Value::Null)
                ),
            );
        }
        runners.push(Runner {
            name,
            size: size_ok.unwrap_or(0),
            template: r.get("template").cloned().unwrap_or(Value::Null),
        });
    }
    let layout = match runners.as_slice() {
        [r] if r.name == "default" && r.size == 1 => Some(Layout::Single),
        [a, b] => {
            let (leader, worker) = if a.name == "leader" { (a, b) } else { (b, a) };
            (leader.name == "leader"
                && leader.size == 1
                && worker.name == "worker"
                && worker.size >= 1
                && worker.size < i32::MAX as u32)
                .then_some(Layout::Multi(worker.size))
        }
        _ => None,
    };
    (runners, layout)
}

/// The InferenceReplica as the component records it; `status_fresh`: owned by the
/// InferenceService and observed at its generation.
fn replica_state(
    ir: &Replica<'_>,
    status_fresh: bool,
    runners: Vec<Runner>,
    problems: &mut Problems,
) -> ReplicaState {
    let irm = &ir.obj.meta;
    let int = |path: &str, problems: &mut Problems| ir.obj.int(path, problems).unwrap_or(0);
    let str_ =
        |path: &str, problems: &mut Problems| ir.obj.str(path, problems).unwrap_or("").to_owned();
    ReplicaState {
        name: irm.name.clone(),
        uid: irm.uid.clone(),
        resource_version: irm.resource_version.clone(),
        generation: irm.generation,
        status_fresh,
        paused: ir.obj.bool("spec.paused", problems).unwrap_or(false),
        migration_never: ir.obj.str("spec.lifecycle.migrationPolicy.mode", problems)
            == Some("Never"),
        desired_replicas: ir.obj.int("spec.replicas", problems).unwrap_or(1),
        replicas: int("status.replicas", problems),
        ready_replicas: int("status.readyReplicas", problems),
        serving_replicas: int("status.servingReplicas", problems),
        available_replicas: int("status.availableReplicas", problems),
        updated_replicas: int("status.updatedReplicas", problems),
        updated_ready_replicas: int("status.updatedReadyReplicas", problems),
        current_revision: str_("status.currentRevision", problems),
        update_revision: str_("status.updateRevision", problems),
        runners,
        owner: match irm.controllers.as_slice() {
            [(api_version, kind, name, uid)] => Some(OwnerRef {
                api_version: api_version.clone(),
                kind: kind.clone(),
                name: name.clone(),
                uid: uid.clone(),
            }),
            _ => None,
        },
        spec_component: ir.component.clone(),
    }
}

/// One Instance from its status row and the pods joined to it, with why it is invalid (two
/// pods with one identity, a pod of another incarnation, or a steady Instance whose pods
/// differ from the layout).
fn instance(
    row: &irstatus::Row,
    members: &[(usize, Identity)],
    pods: &[PodFacts],
    layout: Option<Layout>,
) -> Instance {
    let desired_pods = layout.map_or(0, |l| l.desired());
    let mut inst = Instance {
        index: u32::try_from(row.index).unwrap_or(u32::MAX),
        ..Instance::default()
    };
    for (pi, _) in members {
        add_pod(&mut inst, &pods[*pi]);
    }
    components_finish(&mut inst);
    let observed_pods = members.len() as i64;
    let ready = members.iter().filter(|(pi, _)| pods[*pi].pod.ready).count() as i64;
    let steady = row.phase == "Ready" && row.operation.is_none();
    let mut why: Option<String> = None;
    let mut seen = BTreeSet::new();
    for (pi, id) in members {
        let p = &pods[*pi].pod;
        if !seen.insert((id.incarnation, id.runner.clone(), id.ordinal)) {
            why.get_or_insert(format!(
                "two pods claim incarnation {} {} ordinal {}",
                id.incarnation, id.runner, id.ordinal
            ));
        }
        if id.incarnation != row.incarnation && (steady || !p.terminating) {
            why.get_or_insert(format!(
                "pod {} has incarnation {} but the row has {}",
                p.key(),
                id.incarnation,
                row.incarnation
            ));
        }
    }
    if steady
        && why.is_none()
        && let Some(layout) = layout
    {
        let want = layout.members(row.active_ordinal);
        let have: BTreeSet<(String, i64)> = members
            .iter()
            .map(|(_, id)| (id.runner.clone(), id.ordinal))
            .collect();
        if have != want || members.len() != want.len() {
            why = Some(format!(
                "steady Instance {} does not have exactly the layout's pods",
                row.index
            ));
        } else if inst.any_terminating {
            why = Some(format!(
                "steady Instance {} has a terminating pod",
                row.index
            ));
        } else if [row.pod_count, observed_pods, ready, row.serving_pod_count]
            .iter()
            .any(|c| *c != desired_pods)
        {
            why = Some(format!(
                "steady Instance {}: podCount {}, observed {observed_pods}, ready {ready}, serving {} != desired {desired_pods}",
                row.index, row.pod_count, row.serving_pod_count
            ));
        }
    }
    inst.status = Some(InstanceStatus {
        incarnation: row.incarnation,
        phase: row.phase.clone(),
        running_revision: row.running_revision.clone(),
        target_revision: row.target_revision.clone(),
        admitted: row.admitted,
        active_ordinal: u32::try_from(row.active_ordinal).unwrap_or(0),
        status_pods: row.pod_count,
        observed_pods,
        serving_pods: row.serving_pod_count,
        available_pods: row.available_pod_count,
        ready_pods: ready,
        desired_pods,
        operation: row.operation.clone(),
        invalid: why,
    });
    inst
}

#[derive(Debug, Clone, Copy)]
enum Layout {
    Single,
    Multi(u32),
}

impl Layout {
    fn desired(self) -> i64 {
        match self {
            Layout::Single => 1,
            Layout::Multi(w) => i64::from(w) + 1,
        }
    }

    fn members(self, active_ordinal: i64) -> BTreeSet<(String, i64)> {
        match self {
            Layout::Single => [("default".to_owned(), active_ordinal)].into(),
            Layout::Multi(w) => std::iter::once(("leader".to_owned(), 0))
                .chain((0..i64::from(w)).map(|o| ("worker".to_owned(), o)))
                .collect(),
        }
    }
}

/// One `status.migrations[]` row as read, with why it is invalid (the checks that need no
/// Instance: identity, times, trigger and phase); `at` names the row in messages.
pub(crate) fn parse_row(m: &Value, component: &str, at: &str) -> (MigrationRecord, Option<String>) {
    let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let mut why: Option<String> = None;
    let started_at = parse_time(m.get("startedAt")).unwrap_or_else(|e| {
        why.get_or_insert(format!("{at}.startedAt: {e}"));
        None
    });
    let completed_at = parse_time(m.get("completedAt")).unwrap_or_else(|e| {
        why.get_or_insert(format!("{at}.completedAt: {e}"));
        None
    });
    let source = match m.get("sourceInstance") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_i64().unwrap_or(-1),
    };
    let record = MigrationRecord {
        uuid: s("requestUUID"),
        component: component.to_owned(),
        source_instance: source,
        trigger: s("trigger"),
        phase: s("phase"),
        started_at,
        completed_at,
        message: s("message"),
        from_node: s("fromNode"),
        deadline: parse_time(m.get("deadline")).unwrap_or(None),
    };
    if record.uuid.is_empty() {
        why.get_or_insert(format!("{at}: empty requestUUID"));
    }
    if record.source_instance < 0 {
        why.get_or_insert(format!(
            "{at}: sourceInstance {} is negative or not an integer",
            record.source_instance
        ));
    }
    match (started_at, completed_at) {
        (None, _) => {
            why.get_or_insert(format!("{at}: startedAt is not set"));
        }
        (Some(s), Some(e)) if e < s => {
            why.get_or_insert(format!("{at}: completedAt before startedAt"));
        }
        _ => {}
    }
    let phase_ok = match record.trigger.as_str() {
        "Manual" => MANUAL_PHASES.contains(&record.phase.as_str()),
        "Auto" => record.phase == "Relocated",
        _ => false,
    };
    if !phase_ok {
        why.get_or_insert(format!(
            "{at}: trigger {:?} with phase {:?}",
            record.trigger, record.phase
        ));
    }
    (record, why)
}

/// The migration rows of an InferenceReplica no workload reads them through; `None` when it
/// has none.
pub(crate) fn unattached_replica(ir: &Replica<'_>) -> Option<UnattachedReplica> {
    let migrations = ir.obj.value.pointer("/status/migrations")?;
    let meta = &ir.obj.meta;
    let mut invalid: Option<String> = None;
    let mut records = Vec::new();
    match migrations {
        Value::Null => return None,
        Value::Array(list) if list.is_empty() => return None,
        Value::Array(list) => {
            for (i, m) in list.iter().enumerate() {
                let (record, why) = parse_row(m, &ir.component, &format!("status.migrations[{i}]"));
                if let Some(w) = why {
                    invalid.get_or_insert(w);
                }
                records.push(record);
            }
        }
        other => {
            invalid = Some(format!("status.migrations: {other} is not an array"));
        }
    }
    let refs = ir
        .obj
        .value
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let owner_ref = |r: &Value| {
        let f = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        OwnerRef {
            api_version: f("apiVersion"),
            kind: f("kind"),
            name: f("name"),
            uid: f("uid"),
        }
    };
    let owner = refs
        .iter()
        .find(|r| r.get("kind").and_then(Value::as_str) == Some("InferenceService"))
        .map(owner_ref);
    let controller = refs
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .map(owner_ref);
    Some(UnattachedReplica {
        namespace: meta.namespace.clone(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        component: ir.component.clone(),
        owner,
        controller,
        records,
        invalid,
    })
}

const MANUAL_PHASES: [&str; 6] = [
    "Accepted",
    "SurgePending",
    "SurgeReady",
    "Draining",
    "Completed",
    "Failed",
];

/// Parses one request annotation (docs/design-snapshot.md#migration-state).
fn parse_request(
    uuid: &str,
    text: &str,
    workload: &Workload,
) -> Result<MigrationRequestObserved, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let obj = v.as_object().ok_or("not a JSON object")?;
    let string = |k: &str, required: bool| -> Result<String, String> {
        match obj.get(k) {
            None if !required => Ok(String::new()),
            None => Err(format!("{k} is missing")),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!("{k}: {other} is not a string")),
        }
    };
    let schema = string("schemaVersion", true)?;
    if schema != "v1" {
        return Err(format!("schemaVersion {schema:?} is not \"v1\""));
    }
    let component = string("component", true)?;
    let kind = ComponentKind::parse(&component)
        .ok_or_else(|| format!("component {component:?} is not engine, decoder or router"))?;
    let instance = match obj.get("instance") {
        Some(Value::Number(n)) => n
            .as_i64()
            .filter(|i| (0..=i64::from(i32::MAX)).contains(i))
            .ok_or_else(|| format!("instance {n} is not an index >= 0"))?,
        Some(other) => return Err(format!("instance: {other} is not an integer")),
        None => return Err("instance is missing".into()),
    };
    let exists = workload
        .component(kind)
        .is_some_and(|c| c.instances.iter().any(|i| i64::from(i.index) == instance));
    if !exists {
        return Err(format!("{component} has no Instance {instance}"));
    }
    let from_node = string("from_node", true)?;
    if from_node.is_empty() {
        return Err("from_node is empty".into());
    }
    let hint_target_nodes = match obj.get("hint_target_nodes") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|h| {
                h.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("hint_target_nodes: {h} is not a string"))
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("hint_target_nodes: {other} is not an array")),
    };
    let requested_at = match obj.get("requested_at") {
        None => None,
        Some(Value::String(s)) => {
            Some(Timestamp::parse_rfc3339(s).map_err(|e| format!("requested_at: {e}"))?)
        }
        Some(other) => return Err(format!("requested_at: {other} is not a string")),
    };
    Ok(MigrationRequestObserved {
        uuid: uuid.to_owned(),
        component,
        instance,
        from_node,
        hint_target_nodes,
        reason: string("reason", false)?,
        requested_at,
        requested_by: string("requested_by", false)?,
        raw: text.to_owned(),
    })
}

/// Migration state (docs/design-snapshot.md#migration-state).
fn migration_state(
    workload: &Workload,
    input: &WorkloadInput<'_, '_>,
    statuses: &BTreeMap<ComponentKind, Option<&Value>>,
    problems: &mut Problems,
) -> MigrationState {
    let isvc = input.isvc;
    let mut state = MigrationState {
        valid: true,
        ..MigrationState::default()
    };
    let mut invalid: Vec<String> = Vec::new();

    // Request annotations.
    let mut malformed: BTreeMap<String, String> = BTreeMap::new();
    for (key, text) in &isvc.obj.meta.annotations {
        let Some(uuid) = key.strip_prefix(MIGRATION_REQUEST_PREFIX) else {
            continue;
        };
        if uuid.is_empty() {
            isvc.obj.problem(
                problems,
                &format!("metadata.annotations[{key}]"),
                "a migration request key without a UUID; ignored",
            );
            continue;
        }
        match parse_request(uuid, text, workload) {
            Ok(r) => state.requests.push(r),
            Err(why) => {
                malformed.insert(uuid.to_owned(), why);
            }
        }
    }

    // IR status rows.
    let mut uuid_count: BTreeMap<String, usize> = BTreeMap::new();
    let mut rows: Vec<(MigrationRecord, Option<String>)> = Vec::new();
    for c in &workload.components {
        if c.mode != DeploymentMode::OMENative {
            continue;
        }
        let status = match statuses.get(&c.kind) {
            Some(Some(s)) => *s,
            Some(None) if c.replica.is_some() => continue, // IR without status: no rows
            _ => {
                invalid.push(format!(
                    "component {} has no single InferenceReplica",
                    c.kind.as_str()
                ));
                continue;
            }
        };
        let list = match status.get("migrations") {
            None | Some(Value::Null) => continue,
            Some(Value::Array(l)) => l,
            Some(other) => {
                invalid.push(format!(
                    "status.migrations of {}: {other} is not an array",
                    c.kind.as_str()
                ));
                continue;
            }
        };
        for (i, m) in list.iter().enumerate() {
            let at = format!("{} status.migrations[{i}]", c.kind.as_str());
            let (record, mut why) = parse_row(m, c.kind.as_str(), &at);
            let terminal = record.is_terminal();
            let completed_at = record.completed_at;
            if !terminal {
                if completed_at.is_some() {
                    why.get_or_insert(format!("{at}: a non-terminal row has completedAt"));
                }
                let source_ok = c.observation_invalid.is_none()
                    && c.instances.iter().any(|inst| {
                        i64::from(inst.index) == record.source_instance
                            && inst.status.as_ref().is_some_and(|s| s.invalid.is_none())
                    });
                if !source_ok {
                    why.get_or_insert(format!(
                        "{at}: source Instance {} is not a current, valid Instance",
                        record.source_instance
                    ));
                }
            }
            *uuid_count.entry(record.uuid.clone()).or_insert(0) += 1;
            rows.push((record, why));
        }
    }
    for (record, why) in &mut rows {
        if uuid_count.get(&record.uuid).copied().unwrap_or(0) > 1 && !record.uuid.is_empty() {
            why.get_or_insert(format!(
                "requestUUID {} appears more than once",
                record.uuid
            ));
        }
    }

    // Supersession and activity.
    let row_uuids: BTreeSet<&str> = rows.iter().map(|(r, _)| r.uuid.as_str()).collect();
    let mut active: BTreeMap<String, ActiveMigration> = BTreeMap::new();
    for (record, why) in &rows {
        if let Some(w) = why {
            invalid.push(w.clone());
            continue;
        }
        if record.is_terminal() {
            let t = record.completed_at.or(record.started_at);
            if t > state.last_migration {
                state.last_migration = t;
            }
        } else {
            active.insert(
                record.uuid.clone(),
                ActiveMigration {
                    uuid: record.uuid.clone(),
                    component: record.component.clone(),
                    instance: record.source_instance,
                    phase: record.phase.clone(),
                    started_at: record.started_at,
                },
            );
        }
    }
    for r in &state.requests {
        if row_uuids.contains(r.uuid.as_str()) {
            continue;
        }
        active
            .entry(r.uuid.clone())
            .or_insert_with(|| ActiveMigration {
                uuid: r.uuid.clone(),
                component: r.component.clone(),
                instance: r.instance,
                phase: "Requested".into(),
                started_at: r.requested_at,
            });
    }
    malformed.retain(|uuid, _| !row_uuids.contains(uuid.as_str()));
    for (uuid, why) in &malformed {
        invalid.push(format!("malformed migration request {uuid}: {why}"));
    }
    state.malformed_requests = malformed.into_keys().collect();
    state.records = rows.into_iter().map(|(r, _)| r).collect();
    state.active = active.into_values().collect();
    if !invalid.is_empty() {
        state.valid = false;
        state.invalid_reason = Some(invalid.join("; "));
    }
    state
}

/// A time string from a dynamic object: `None` when absent, null or zero; an error naming the
/// value when it is not RFC 3339.
pub(crate) fn parse_time(v: Option<&serde_json::Value>) -> Result<Option<Timestamp>, String> {
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) if s.is_empty() => Ok(None),
        Some(serde_json::Value::String(s)) => match Timestamp::parse_rfc3339(s) {
            Ok(t) if t.unix_secs() <= GO_ZERO_UNIX_SECS => Ok(None),
            Ok(t) => Ok(Some(t)),
            Err(e) => Err(e.to_string()),
        },
        Some(other) => Err(format!("expected an RFC 3339 string, got {other}")),
    }
}

/// Go `strconv.ParseInt(s, 10, bits)`: optional sign, decimal digits only.
pub(crate) fn parse_go_int(s: &str, bits: u32) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: i64 = s.strip_prefix('+').unwrap_or(s).parse().ok()?;
    let max = if bits >= 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = if bits >= 64 {
        i64::MIN
    } else {
        -(1i64 << (bits - 1))
    };
    (min..=max).contains(&v).then_some(v)
}
