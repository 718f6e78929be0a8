//! Which Instances the repack may move (docs/design-scoring.md#the-repack).

use std::fmt::Write as _;

use alfred_model::ClusterSnapshot;
use alfred_model::Timestamp;
use alfred_model::reason::AdvisoryReason;
use alfred_model::snapshot::{
    Component, DeploymentMode, Instance, ModelInfo, Pod, ReplicaState, Workload,
};
use serde::{Deserialize, Serialize};

use crate::ScoreSettings;
use alfred_model::index::{
    COMPONENT_COUNTS_MATCH, COMPONENT_NOT_HELD, COMPONENT_OBSERVED, COMPONENT_REVISIONS_SETTLED,
    INSTANCE_ADMITTED_IDLE, INSTANCE_COUNTS_MATCH, INSTANCE_OBSERVED, INSTANCE_PHASE_READY,
    INSTANCE_REVISION_CURRENT, INSTANCE_TERMINATING, InstanceFacts, POD_READY, POD_TERMINATING,
    PodFinder, SnapshotIndex, component_facts, instance_facts,
};

/// Why an Instance is not movable for the repack: the first failing condition of
/// docs/design-scoring.md#the-repack, in that order (1 migration surface, 2 mode, 3 pool, 4
/// model, 5 the docs/design-policies.md#omenative-eligibility eligibility ladder, 6 the
/// per-workload cooldown of docs/design-scoring.md#the-repack).
///
/// The docs/design-policies.md#omenative-eligibility variants carry the advisory reason the
/// policies report for the same failure ([`RepackBlock::advisory_reason`]); the defragmentation
/// policy's own ladder (docs/design-policies.md#defragmentation-ladder) orders the checks
/// differently (cooldown before eligibility), which matters for the reason shown, never for
/// movability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RepackBlock {
    /// 1: `omenativeMigrationEnabled` is false (`MigrationSurfaceDisabled`).
    MigrationSurfaceDisabled,
    /// 2: the component is not OMENative (RawDeployment, MultiNode, other).
    NotOMENative,
    /// 3: the Instance has no node, a node missing from the snapshot or without GPUs, or a
    /// node outside the pool.
    OutsidePool,
    /// 4: the workload's model is missing from the snapshot or could not be resolved.
    ModelUnresolved,
    /// 4: the workload's model sits on a single-node volume.
    VolumePinned,
    /// 5 (docs/design-policies.md#omenative-eligibility steps 1, 3, 9, and 13 for a pod missing
    /// from the snapshot): `OMENativeObservationInvalid`.
    ObservationInvalid,
    /// 5 (docs/design-policies.md#omenative-eligibility steps 2, 4–7, 10–13):
    /// `OMENativeStateIneligible`.
    StateIneligible,
    /// 5 (docs/design-policies.md#omenative-eligibility step 8): executor unavailable,
    /// `migration.apiVersion` unset (`OMENativeUnavailable`).
    Unavailable,
    /// 6: the workload is inside its per-workload cooldown
    /// (docs/design-policies.md#cooldown-inside-the-policies, docs/design-scoring.md#the-repack).
    Cooldown,
}

impl RepackBlock {
    /// A stable name for the block (the advisory reason where the policy has one).
    pub fn as_str(self) -> &'static str {
        match self {
            RepackBlock::MigrationSurfaceDisabled => "MigrationSurfaceDisabled",
            RepackBlock::NotOMENative => "NotOMENative",
            RepackBlock::OutsidePool => "OutsidePool",
            RepackBlock::ModelUnresolved => "ModelUnresolved",
            RepackBlock::VolumePinned => "VolumePinned",
            RepackBlock::ObservationInvalid => "OMENativeObservationInvalid",
            RepackBlock::StateIneligible => "OMENativeStateIneligible",
            RepackBlock::Unavailable => "OMENativeUnavailable",
            RepackBlock::Cooldown => "Cooldown",
        }
    }

    /// The advisory reason the policies report for this block: the
    /// docs/design-policies.md#omenative-eligibility reasons, the model reasons of
    /// docs/design-snapshot.md#models-and-volumes, `MigrationSurfaceDisabled`, and
    /// `OMENativeStateIneligible` for the cooldown (docs/design-policies.md#defragmentation-ladder
    /// step 3). `None` for the blocks that make no row of their own (not OMENative, outside the
    /// pool).
    pub fn advisory_reason(self) -> Option<AdvisoryReason> {
        Some(match self {
            RepackBlock::MigrationSurfaceDisabled => AdvisoryReason::MigrationSurfaceDisabled,
            RepackBlock::NotOMENative | RepackBlock::OutsidePool => return None,
            RepackBlock::ModelUnresolved => AdvisoryReason::ModelUnresolved,
            RepackBlock::VolumePinned => AdvisoryReason::VolumePinned,
            RepackBlock::ObservationInvalid => AdvisoryReason::OMENativeObservationInvalid,
            RepackBlock::StateIneligible | RepackBlock::Cooldown => {
                AdvisoryReason::OMENativeStateIneligible
            }
            RepackBlock::Unavailable => AdvisoryReason::OMENativeUnavailable,
        })
    }
}

/// Whether an Instance is **movable for repack** in `pool` (docs/design-scoring.md#the-repack): all
/// of
///
/// 1. `omenativeMigrationEnabled`;
/// 2. its component's mode is OMENative;
/// 3. its `nodesSet` is non-empty and every node in it is a GPU node of `pool`;
/// 4. `modelAdvisoryReason` is empty (docs/design-snapshot.md#models-and-volumes);
/// 5. the shared OMENative eligibility of docs/design-policies.md#omenative-eligibility passes —
///    which fails every Instance when the executor is unavailable (`migration.apiVersion` unset),
///    so nothing moves and the score stays 0 (docs/design-scoring.md#scores-without-an-executor);
/// 6. the workload is outside its per-workload cooldown at `now`
///    (docs/design-policies.md#cooldown-inside-the-policies, docs/design-scoring.md#the-repack).
///
/// Surge headroom is not part of the test. Node lookups use [`ClusterSnapshot::node`], so
/// `snapshot.nodes` must be sorted by name (as [`ClusterSnapshot::normalize`] leaves it);
/// pod lookups accept any order.
pub fn repack_movable(
    snapshot: &ClusterSnapshot,
    workload: &Workload,
    component: &Component,
    instance: &Instance,
    pool: &str,
    settings: &ScoreSettings,
    now: Timestamp,
) -> bool {
    repack_block(snapshot, workload, component, instance, pool, settings, now).is_none()
}

/// The first docs/design-scoring.md#the-repack condition an Instance fails, `None` when it is
/// movable for repack in `pool` (see [`repack_movable`]).
pub fn repack_block(
    snapshot: &ClusterSnapshot,
    workload: &Workload,
    component: &Component,
    instance: &Instance,
    pool: &str,
    settings: &ScoreSettings,
    now: Timestamp,
) -> Option<RepackBlock> {
    if !settings.omenative_migration_enabled {
        return Some(RepackBlock::MigrationSurfaceDisabled);
    }
    if component.mode != DeploymentMode::OMENative {
        return Some(RepackBlock::NotOMENative);
    }
    let in_pool = !instance.nodes.is_empty()
        && instance.nodes.keys().all(|name| {
            snapshot
                .node(name)
                .is_some_and(|n| n.has_gpus() && n.pool.as_deref() == Some(pool))
        });
    if !in_pool {
        return Some(RepackBlock::OutsidePool);
    }
    if let Some(block) = model_block(snapshot, workload) {
        return Some(block);
    }
    if let Some(block) = omenative_eligibility(snapshot, workload, component, instance) {
        return Some(block);
    }
    if in_cooldown(workload, settings.per_workload_cooldown_minutes, now) {
        return Some(RepackBlock::Cooldown);
    }
    None
}

/// `inCooldown(w)` of docs/design-policies.md#cooldown-inside-the-policies: the workload's newest
/// finished migration ended less than its cooldown ago. The cooldown is the
/// `alfred.ome.io/cooldown-minutes` override when set (0 ⇒ never in cooldown), else
/// `per_workload_cooldown_minutes`.
pub fn in_cooldown(
    workload: &Workload,
    per_workload_cooldown_minutes: u32,
    now: Timestamp,
) -> bool {
    let Some(last) = workload.migration.last_migration else {
        return false;
    };
    let minutes = workload
        .settings
        .cooldown_minutes
        .unwrap_or(per_workload_cooldown_minutes);
    if minutes == 0 {
        return false;
    }
    let elapsed = i128::from(now.unix_nanos()) - i128::from(last.unix_nanos());
    elapsed < i128::from(minutes) * 60_000_000_000
}

/// `modelAdvisoryReason(w)` of docs/design-snapshot.md#models-and-volumes as a block:
/// `ModelUnresolved` when the model is not in the snapshot or has a resolve error, `VolumePinned`
/// when pinned, `None` otherwise (also without a model).
pub fn model_block(snapshot: &ClusterSnapshot, workload: &Workload) -> Option<RepackBlock> {
    let model = workload.model.as_ref()?;
    model_info_block(snapshot.models.get(&model.key()))
}

pub(crate) fn model_info_block(info: Option<&ModelInfo>) -> Option<RepackBlock> {
    match info {
        None => Some(RepackBlock::ModelUnresolved),
        Some(i) if i.resolve_error.is_some() => Some(RepackBlock::ModelUnresolved),
        Some(i) if i.volume_pinned => Some(RepackBlock::VolumePinned),
        Some(_) => None,
    }
}

/// Writes `ModelRef::key` into a reused buffer (no allocation per workload in the hot path).
pub(crate) fn model_key_into(workload: &Workload, buf: &mut String) -> bool {
    let Some(m) = workload.model.as_ref() else {
        return false;
    };
    buf.clear();
    let _ = if m.namespace.is_empty() {
        write!(buf, "{}/{}", m.kind, m.name)
    } else {
        write!(buf, "{}/{}/{}", m.kind, m.namespace, m.name)
    };
    true
}

/// The shared OMENative eligibility check of docs/design-policies.md#omenative-eligibility
/// (`OMENativeEligibility`), used by the repack (docs/design-scoring.md#the-repack) and by both
/// policies: the first failing step's block, `None` when the Instance may move. Map it to the
/// reported reason with [`RepackBlock::advisory_reason`].
///
/// Steps in the documented order: 2 (workload state), 3–7 (component), 8 (executor,
/// `snapshot.executor.available`), 9–13 (Instance); the "missing inputs" of step 1 — no
/// Instance status row, a pod of the Instance missing from `snapshot.pods` — are reported
/// where the missing input is read (steps 9 and 13), so a steady Instance without the
/// executor says `Unavailable`. Step 13 reads each pod's `ready` and `terminating` flags
/// (and the Instance's `any_terminating`). Pods are found by key in any list order.
pub fn omenative_eligibility(
    snapshot: &ClusterSnapshot,
    workload: &Workload,
    component: &Component,
    instance: &Instance,
) -> Option<RepackBlock> {
    let mut finder = PodFinder::new(&snapshot.pods);
    workload_state_block(workload)
        .or_else(|| component_block(component))
        .or_else(|| (!snapshot.executor.available).then_some(RepackBlock::Unavailable))
        .or_else(|| {
            instance_block(component, instance, |key| {
                finder.position(key).map(|i| &snapshot.pods[i])
            })
        })
}

/// [`omenative_eligibility`] read from the snapshot's index ([`ClusterSnapshot::index`]):
/// `component_flags` is the component's [`SnapshotIndex::component_flags`] entry and
/// `facts` the Instance's [`SnapshotIndex::instances`] entry (both in walk order). Same
/// answer, without reading the component, the Instance or its pods' strings: the walk and
/// the drain-plan search ask it of every Instance of every pass, and on a large cluster most
/// of a first reading of those objects is waiting for memory.
///
/// [`SnapshotIndex::component_flags`]: alfred_model::index::SnapshotIndex::component_flags
/// [`SnapshotIndex::instances`]: alfred_model::index::SnapshotIndex::instances
pub fn omenative_eligibility_indexed(
    snapshot: &ClusterSnapshot,
    index: &SnapshotIndex,
    workload: &Workload,
    component_flags: u8,
    facts: &InstanceFacts,
) -> Option<RepackBlock> {
    workload_state_block(workload)
        .or_else(|| component_block_of(component_flags))
        .or_else(|| (!snapshot.executor.available).then_some(RepackBlock::Unavailable))
        .or_else(|| {
            instance_block_of(
                facts.flags,
                index.pods_of(facts).iter().map(|p| {
                    index
                        .pods
                        .get(*p as usize)
                        .map(|f| f.flags & POD_READY != 0 && f.flags & POD_TERMINATING == 0)
                }),
            )
        })
}

/// docs/design-policies.md#omenative-eligibility step 2: movable, valid migration state, no
/// malformed request, nothing in flight.
pub(crate) fn workload_state_block(w: &Workload) -> Option<RepackBlock> {
    let m = &w.migration;
    if !w.settings.movable || !m.valid || !m.malformed_requests.is_empty() || !m.active.is_empty() {
        return Some(RepackBlock::StateIneligible);
    }
    None
}

/// docs/design-policies.md#omenative-eligibility steps 3–7 (component level).
pub(crate) fn component_block(c: &Component) -> Option<RepackBlock> {
    component_block_of(component_facts(c))
}

/// [`component_block`] from the component's facts ([`component_facts`], e.g. the
/// snapshot's index entry): every reader of a component asks the same bits.
pub(crate) fn component_block_of(flags: u8) -> Option<RepackBlock> {
    if flags & COMPONENT_OBSERVED == 0 {
        return Some(RepackBlock::ObservationInvalid);
    }
    let ready = COMPONENT_NOT_HELD | COMPONENT_COUNTS_MATCH | COMPONENT_REVISIONS_SETTLED;
    if flags & ready != ready {
        return Some(RepackBlock::StateIneligible);
    }
    None
}

/// docs/design-policies.md#omenative-eligibility steps 9–13 (Instance level, with the missing
/// inputs of step 1); the executor (step 8) is checked by the caller. `pod` finds a bound pod by
/// `namespace/name`.
pub(crate) fn instance_block<'p>(
    c: &Component,
    i: &Instance,
    mut pod: impl FnMut(&str) -> Option<&'p Pod>,
) -> Option<RepackBlock> {
    let current = c
        .replica
        .as_ref()
        .map(|r: &ReplicaState| r.current_revision.as_str())
        .unwrap_or("");
    instance_block_of(
        instance_facts(i, current),
        i.pods
            .iter()
            .map(|key| pod(key).map(|p| p.ready && !p.terminating)),
    )
}

/// [`instance_block`] from the Instance's status flags ([`instance_facts`], e.g. the
/// snapshot's index entry) and, per pod of the Instance, in order, `None` when missing from
/// the snapshot, else whether it is Ready and not terminating.
pub(crate) fn instance_block_of(
    flags: u8,
    pods: impl Iterator<Item = Option<bool>>,
) -> Option<RepackBlock> {
    if flags & INSTANCE_OBSERVED == 0 {
        return Some(RepackBlock::ObservationInvalid);
    }
    // Steps 10–12 (admitted and idle, `Ready`, the pod counts, the revision) and 13's
    // `anyTerminating`.
    let ready = INSTANCE_ADMITTED_IDLE
        | INSTANCE_PHASE_READY
        | INSTANCE_COUNTS_MATCH
        | INSTANCE_REVISION_CURRENT;
    if flags & ready != ready || flags & INSTANCE_TERMINATING != 0 {
        return Some(RepackBlock::StateIneligible);
    }
    // 13. every pod Ready and not terminating; a pod missing from the snapshot is a missing
    // input (step 1).
    for ok in pods {
        match ok {
            Some(true) => {}
            Some(false) => return Some(RepackBlock::StateIneligible),
            None => return Some(RepackBlock::ObservationInvalid),
        }
    }
    None
}
