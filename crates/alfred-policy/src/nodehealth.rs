//! The node-health policy (docs/design-policies.md#node-health).
//!
//! Moves Instances off `Unhealthy` nodes (`NodeUnhealthy`) and off nodes due for
//! maintenance (`NodeMaintenance`). Unlike defragmentation it skips the threshold, the
//! benefit/cost test, the boosts, the maintenance windows and the in-policy cooldown;
//! it scores every row with the workload's `alfred.ome.io/priority`.
//!
//! It also produces one [`NodeMarker`] per node that is not `Clear` or is due for
//! maintenance: the input the reporter turns into `node.<name>` records and Node events
//! (docs/design-pass.md#node-records). The records' lifecycle is the reporter's; markers only say
//! what was observed.

use std::collections::{BTreeMap, BTreeSet};

use alfred_model::Timestamp;
use alfred_model::config::Config;
use alfred_model::reason::{AdvisoryReason, RowReason};
use alfred_model::record::{Candidate, Policy};
use alfred_model::snapshot::{
    ClusterSnapshot, DeploymentMode, HealthState, Maintenance, Node, NodeHealth, Workload,
};

use crate::context::Ctx;
use crate::eligibility::omenative_eligibility;
use crate::rows::row;
use crate::settings::PolicySettings;
use crate::surge::plan_surge;

/// The label naming an OME pod's InferenceService (in the pod's namespace).
const ISVC_LABEL: &str = "ome.io/inferenceservice";

/// What the reporter needs to keep a `node.<name>` record and emit Node events
/// (docs/design-policies.md#node-health, docs/design-pass.md#node-records): one per node whose
/// health is not `Clear` or that is due for maintenance.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeMarker {
    /// Node name.
    pub node: String,
    /// Node UID (a new UID starts the record over).
    pub uid: String,
    /// The snapshot time `T` (its `observed_at`: an observation time, never the pass's
    /// time, so a record is dated by what it saw, docs/design-pass.md#the-record).
    pub observed_at: Timestamp,
    /// Health state, trigger conditions and `suspectUntil`.
    pub health: NodeHealth,
    /// Maintenance observation (requested, sorted trigger names).
    pub maintenance: Maintenance,
    /// Sorted unique OME workloads (`ns/name`) with GPU pods on the node.
    pub workloads: Vec<String>,
    /// Some OME pod with GPUs is on the node (even one whose workload is unknown), or
    /// `workloads` is non-empty.
    pub ome_gpu_occupants_present: bool,
    /// `NodeUnhealthy`, `NodeMaintenance`, or `None` (Unknown / Suspect: no evacuation).
    pub evacuation: Option<RowReason>,
}

/// The node-health policy's output.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeHealthOutput {
    /// Findings, ranked (docs/design-policies.md#ranking-of-findings).
    pub candidates: Vec<Candidate>,
    /// Node markers, by node name.
    pub node_markers: Vec<NodeMarker>,
}

/// Runs the node-health policy on `snapshot` at `now` (the snapshot time `T`).
pub fn evaluate(snapshot: &ClusterSnapshot, config: &Config, now: Timestamp) -> NodeHealthOutput {
    evaluate_with(snapshot, &PolicySettings::from_config(config), now)
}

/// [`evaluate`] with the policies' settings given directly.
pub fn evaluate_with(
    snapshot: &ClusterSnapshot,
    settings: &PolicySettings,
    now: Timestamp,
) -> NodeHealthOutput {
    let cfg = settings.sanitized();
    let ctx = Ctx::new(snapshot, &cfg, now);
    run(&ctx)
}

pub(crate) fn run(ctx: &Ctx<'_>) -> NodeHealthOutput {
    if !ctx.inputs.cfg.node_health_enabled {
        return NodeHealthOutput::default();
    }
    let node_markers = markers(ctx);
    if ctx.inputs.cfg.signal_only {
        return NodeHealthOutput {
            candidates: Vec::new(),
            node_markers,
        };
    }
    let mut candidates = Vec::new();
    // Findings need a node with an evacuation reason: with none, every workload has none.
    let evacuating = Evacuating::of(ctx);
    if !evacuating.reasons.is_empty() {
        for w in &ctx.inputs.snap.workloads {
            findings(ctx, &evacuating, w, &mut candidates);
        }
    }
    rank(&mut candidates);
    NodeHealthOutput {
        candidates,
        node_markers,
    }
}

/// `evacuationReason(n)` (docs/design-policies.md#evacuation-sources).
fn evacuation_reason(ctx: &Ctx<'_>, node: &str) -> Option<RowReason> {
    reason_of(ctx.node(node)?)
}

fn reason_of(n: &Node) -> Option<RowReason> {
    if n.health.state == HealthState::Unhealthy {
        Some(RowReason::NodeUnhealthy)
    } else if n.maintenance.requested {
        Some(RowReason::NodeMaintenance)
    } else {
        None
    }
}

/// The evacuating nodes of a pass and the GPU pods on them, read once: a cluster has few
/// of them, and a finding's checks then look names up in these small maps instead of
/// resolving every pod of every workload in the snapshot.
struct Evacuating<'s> {
    /// Node name → its evacuation reason, for the nodes that have one.
    reasons: BTreeMap<&'s str, RowReason>,
    /// `(namespace, name)` → node, for the pods with GPUs bound to those nodes.
    gpu_pods: BTreeMap<(&'s str, &'s str), &'s str>,
}

impl<'s> Evacuating<'s> {
    fn of(ctx: &'s Ctx<'_>) -> Self {
        let reasons: BTreeMap<&str, RowReason> = ctx
            .inputs
            .snap
            .nodes
            .iter()
            .filter_map(|n| reason_of(n).map(|r| (n.name.as_str(), r)))
            .collect();
        let gpu_pods = if reasons.is_empty() {
            BTreeMap::new()
        } else {
            pods_on(ctx, |node| reasons.contains_key(node))
        };
        Evacuating { reasons, gpu_pods }
    }

    /// The node of the GPU pod `key` (`namespace/name`) when it is on an evacuating node:
    /// [`Ctx::pod`]'s pod, when it has GPUs and [`evacuation_reason`] gives its node one.
    fn gpu_pod_node(&self, key: &str) -> Option<&'s str> {
        let (ns, name) = key.split_once('/')?;
        self.gpu_pods.get(&(ns, name)).copied()
    }
}

/// `(namespace, name)` → node of the snapshot's pods with GPUs on the nodes `on` accepts
/// (the pods [`Ctx::pod`] resolves: the context's snapshot has one pod per key).
fn pods_on<'s>(
    ctx: &'s Ctx<'_>,
    on: impl Fn(&str) -> bool,
) -> BTreeMap<(&'s str, &'s str), &'s str> {
    ctx.inputs
        .snap
        .pods
        .iter()
        .filter(|p| p.gpus > 0 && on(&p.node))
        .map(|p| ((p.namespace.as_str(), p.name.as_str()), p.node.as_str()))
        .collect()
}

/// The source among `nodes`: an Unhealthy node first, then one due for maintenance,
/// ties by name.
fn pick_source<'n>(
    evacuating: &Evacuating<'_>,
    nodes: impl Iterator<Item = &'n String>,
) -> Option<(String, RowReason)> {
    let mut best: Option<(String, RowReason)> = None;
    for n in nodes {
        let Some(&r) = evacuating.reasons.get(n.as_str()) else {
            continue;
        };
        let better = match &best {
            None => true,
            Some((bn, br)) => {
                let (rank, brank) = (class(r), class(*br));
                rank > brank || (rank == brank && n < bn)
            }
        };
        if better {
            best = Some((n.clone(), r));
        }
    }
    best
}

fn class(r: RowReason) -> u8 {
    match r {
        RowReason::NodeUnhealthy => 2,
        RowReason::NodeMaintenance => 1,
        RowReason::Fragmentation => 0,
    }
}

fn markers(ctx: &Ctx<'_>) -> Vec<NodeMarker> {
    let marked = |n: &Node| n.health.state != HealthState::Clear || n.maintenance.requested;
    // One walk over the workloads' pods and one over the bound pods, for the marked nodes
    // only: per node, the workloads with a GPU pod there (workload order, once each) and
    // whether an OME GPU pod is bound there.
    let mut on: BTreeMap<&str, (Vec<String>, bool)> = ctx
        .inputs
        .snap
        .nodes
        .iter()
        .filter(|n| marked(n))
        .map(|n| (n.name.as_str(), (Vec::new(), false)))
        .collect();
    if !on.is_empty() {
        let gpu_pods = pods_on(ctx, |node| on.contains_key(node));
        for w in &ctx.inputs.snap.workloads {
            let mut key: Option<String> = None;
            for c in &w.components {
                for k in c
                    .pods
                    .iter()
                    .chain(c.instances.iter().flat_map(|i| &i.pods))
                {
                    let node = k
                        .split_once('/')
                        .and_then(|(ns, name)| gpu_pods.get(&(ns, name)));
                    if let Some(node) = node
                        && let Some((workloads, _)) = on.get_mut(*node)
                    {
                        let key = key.get_or_insert_with(|| w.key());
                        if workloads.last() != Some(key) {
                            workloads.push(key.clone());
                        }
                    }
                }
            }
        }
        for p in &ctx.inputs.snap.pods {
            if p.ome
                && p.gpus > 0
                && let Some((workloads, ome)) = on.get_mut(p.node.as_str())
            {
                *ome = true;
                // The workload its identity label names, when the snapshot does not hold it
                // (its InferenceService is not there, or the pod joined none of its parts).
                if let Some(isvc) = p.labels.get(ISVC_LABEL).filter(|v| !v.is_empty()) {
                    let key = format!("{}/{isvc}", p.namespace);
                    if !workloads.contains(&key) {
                        workloads.push(key);
                    }
                }
            }
        }
        for (workloads, _) in on.values_mut() {
            workloads.sort();
        }
    }
    let mut out = Vec::new();
    for n in &ctx.inputs.snap.nodes {
        if !marked(n) {
            continue;
        }
        let (workloads, ome_pod) = on.remove(n.name.as_str()).unwrap_or_default();
        out.push(NodeMarker {
            node: n.name.clone(),
            uid: n.uid.clone(),
            observed_at: ctx.inputs.snap.observed_at,
            health: n.health.clone(),
            maintenance: n.maintenance.clone(),
            ome_gpu_occupants_present: ome_pod || !workloads.is_empty(),
            workloads,
            evacuation: evacuation_reason(ctx, &n.name),
        });
    }
    out
}

fn findings(ctx: &Ctx<'_>, evacuating: &Evacuating<'_>, w: &Workload, out: &mut Vec<Candidate>) {
    let priority = if w.settings.priority.is_finite() {
        w.settings.priority
    } else {
        0.5
    };
    for c in &w.components {
        let mut covered: BTreeSet<&str> = BTreeSet::new();
        for inst in &c.instances {
            if inst.total_gpus == 0 {
                continue;
            }
            let Some((from, reason)) = pick_source(evacuating, inst.nodes.keys()) else {
                continue;
            };
            let mut r = row(
                Policy::NodeHealth,
                w,
                c.kind,
                i64::from(inst.index),
                &c.mode,
                reason,
                from,
                None,
            );
            r.score = priority;
            r.footprint_gpus = inst.total_gpus;
            let advice = |mut r: Candidate, why: AdvisoryReason| {
                r.executable = false;
                r.advisory_reason = Some(why);
                r
            };
            let r = match &c.mode {
                DeploymentMode::RawDeployment => {
                    advice(r, AdvisoryReason::RawDeploymentMigrationUnsupported)
                }
                DeploymentMode::MultiNode => {
                    if !ctx.inputs.cfg.lws_recommendations_enabled {
                        continue;
                    }
                    advice(r, AdvisoryReason::LWSMigrationUnsupported)
                }
                DeploymentMode::Other(_) => continue,
                DeploymentMode::OMENative => {
                    covered.extend(inst.pods.iter().map(String::as_str));
                    if let Some(why) = ctx.model_reason(w) {
                        advice(r, why)
                    } else if !ctx.inputs.cfg.omenative_migration_enabled {
                        advice(r, AdvisoryReason::MigrationSurfaceDisabled)
                    } else if let Some(why) = omenative_eligibility(ctx, w, c, inst) {
                        advice(r, why)
                    } else if let Some(plan) = plan_surge(ctx, w, inst) {
                        r.surge_shaped = true;
                        r.placement_target_nodes = plan.placement_targets(ctx);
                        r.hint_target_nodes = plan.hints(ctx);
                        r.pod_gpus = plan.pod_gpus;
                        r
                    } else {
                        r.surge_shaped = true;
                        advice(r, AdvisoryReason::NoSurgeHeadroom)
                    }
                }
            };
            out.push(r);
        }
        // docs/design-policies.md#node-health-findings: GPU pods of this OMENative component on
        // evacuating nodes that no Instance finding covers.
        if c.mode == DeploymentMode::OMENative {
            let mut uncovered_nodes: Vec<String> = Vec::new();
            for key in &c.pods {
                if covered.contains(key.as_str()) {
                    continue;
                }
                if let Some(node) = evacuating.gpu_pod_node(key) {
                    uncovered_nodes.push(node.to_owned());
                }
            }
            if let Some((from, reason)) = pick_source(evacuating, uncovered_nodes.iter()) {
                let mut r = row(
                    Policy::NodeHealth,
                    w,
                    c.kind,
                    -1,
                    &c.mode,
                    reason,
                    from,
                    Some(AdvisoryReason::OMENativeObservationInvalid),
                );
                r.score = priority;
                out.push(r);
            }
        }
    }
}

/// docs/design-policies.md#ranking-of-findings, completed with the remaining fields so the order is
/// total.
fn rank(rows: &mut [Candidate]) {
    rows.sort_by(|a, b| {
        b.class()
            .cmp(&a.class())
            .then_with(|| b.executable.cmp(&a.executable))
            .then_with(|| b.score.total_cmp(&a.score))
            .then_with(|| a.footprint_gpus.cmp(&b.footprint_gpus))
            .then_with(|| a.workload.cmp(&b.workload))
            .then_with(|| a.component.cmp(&b.component))
            .then_with(|| a.instance.cmp(&b.instance))
            .then_with(|| a.from_node.cmp(&b.from_node))
            .then_with(|| {
                let k = |c: &Candidate| c.advisory_reason.map(|r| r.as_str()).unwrap_or("");
                k(a).cmp(k(b))
            })
    });
}
