//! The defragmentation policy (docs/design-policies.md).
//!
//! Per pool, in pool-key order: score the pool (docs/design-scoring.md, alfred-score's
//! [`analyze`]); skip it unless its score or its unfixable fragmentation is above the threshold
//! (docs/design-scoring.md#threshold-cases); classify every component of every workload
//! (docs/design-policies.md#defragmentation-ladder), pricing moves on the pool's observed bins and
//! weights (docs/design-policies.md#benefit-cost-and-score); then drop executable rows outside the
//! maintenance windows unless they are emergencies (docs/design-policies.md#maintenance-windows)
//! and sort (docs/design-policies.md#defragmentation-pass).
//!
//! [`analyze`]: alfred_score::analyze

use std::cmp::Ordering;
use std::sync::Arc;

use alfred_model::Timestamp;
use alfred_model::config::Config;
use alfred_model::index::{
    COMPONENT_OMENATIVE, INSTANCE_TERMINATING, InstanceFacts, NONE, NameArena, SnapshotIndex,
};
use alfred_model::reason::{AdvisoryReason, RowReason};
use alfred_model::record::{Candidate, Policy};
use alfred_model::snapshot::{
    ClusterSnapshot, Component, ComponentKind, DeploymentMode, PendingPod, Workload,
};
use alfred_score::{
    Analysis, Bins, LadderSlots, PoolAnalysis, PoolScore, ThresholdCase, weighted_fragmentation,
};

use crate::advice_counts::SetAside;
use crate::context::{Ctx, InstanceRef, NodeRef, prefix16};
use crate::eligibility::omenative_eligibility_at;
use crate::rows::row;
use crate::settings::PolicySettings;
use crate::surge::{SurgePlan, plan_surge_at};

/// Runs the defragmentation policy on `snapshot` at `now` (the snapshot time `T`).
pub fn evaluate(snapshot: &ClusterSnapshot, config: &Config, now: Timestamp) -> Vec<Candidate> {
    evaluate_with(snapshot, &PolicySettings::from_config(config), now)
}

/// [`evaluate`] with the policies' settings given directly.
pub fn evaluate_with(
    snapshot: &ClusterSnapshot,
    settings: &PolicySettings,
    now: Timestamp,
) -> Vec<Candidate> {
    let cfg = settings.sanitized();
    let ctx = Ctx::new(snapshot, &cfg, now);
    if !ctx.inputs.cfg.defragmentation_enabled {
        return Vec::new();
    }
    run(&ctx, &ctx.analysis()).rows
}

/// The pool scores the policy decides on (alfred-score's, on the policy's normalized
/// snapshot at `now`): one per pool, in pool-key order.
pub fn pool_scores(
    snapshot: &ClusterSnapshot,
    settings: &PolicySettings,
    now: Timestamp,
) -> Vec<PoolScore> {
    let cfg = settings.sanitized();
    let ctx = Ctx::new(snapshot, &cfg, now);
    let analysis = ctx.analysis();
    ctx.inputs
        .snap
        .pools()
        .iter()
        .filter_map(|p| analysis.pool(p))
        .map(|p| p.score.clone())
        .collect()
}

/// The walk on `analysis` (alfred-score's analysis of the context's snapshot at its `now`:
/// the caller makes it once for this policy and the drain-plan search), on two threads when
/// the settings allow a helper thread ([`run_beside`]).
pub(crate) fn run(ctx: &Ctx<'_>, analysis: &Analysis<'_>) -> Walked {
    run_beside(ctx, analysis, || ()).0
}

/// What the walk gives: its rows, sorted, and the advice rows it set aside instead under
/// [`PolicySettings::count_advice`] (none otherwise).
#[derive(Debug, Default)]
pub(crate) struct Walked {
    pub(crate) rows: Vec<Candidate>,
    pub(crate) aside: Vec<SetAside>,
    /// The walked snapshot's workload keys, which `aside` names by position.
    pub(crate) keys: Arc<NameArena>,
    /// The walked snapshot's node names, which `aside` names by position.
    pub(crate) nodes: Arc<NameArena>,
}

/// [`run`] and `beside` (work that reads the same context, such as the drain-plan search)
/// at once: with a helper thread allowed and a snapshot of at least [`SPLIT_MIN_COMPONENTS`]
/// components, the helper thread builds the walk and starts on its chunks while this thread
/// runs `beside`, then takes the chunks left ([`crate::walk_chunks`]). The rows are the one-thread
/// walk's, in the same order, whichever thread walked which chunk.
pub(crate) fn run_beside<T>(
    ctx: &Ctx<'_>,
    analysis: &Analysis<'_>,
    beside: impl FnOnce() -> T,
) -> (Walked, T) {
    let split_min = if ctx.inputs.cfg.helper_threads {
        SPLIT_MIN_COMPONENTS
    } else {
        usize::MAX
    };
    run_split_on(ctx, analysis, split_min, CHUNK_VISITS, beside)
}

/// The fewest components in the snapshot for which [`run_beside`] shares the walk with
/// another thread (a component is visited once per pool it may make a row in). A visit
/// costs about 1.5 µs on the trace cluster and starting a scoped thread some tens of µs,
/// so every walk of that cluster (3,000 to 4,500 visits a pass) is shared.
const SPLIT_MIN_COMPONENTS: usize = 512;

/// The visits in one chunk of a shared walk: small enough that the two threads end within
/// a fraction of a millisecond of each other, large enough that taking a chunk costs
/// nothing next to walking it.
const CHUNK_VISITS: usize = 128;

/// [`run`] with the given split bound and chunk size (the tests use every split point).
#[cfg(test)]
pub(crate) fn run_split(ctx: &Ctx<'_>, split_min_components: usize, chunk: usize) -> Walked {
    run_split_on(ctx, &ctx.analysis(), split_min_components, chunk, || ()).0
}

/// The pools the walk visits (in pool-key order, with whether their rows may execute),
/// the walk, and `beside`, walked on one thread or shared in chunks of `chunk` visits.
fn run_split_on<T>(
    ctx: &Ctx<'_>,
    analysis: &Analysis<'_>,
    split_min_components: usize,
    chunk: usize,
    beside: impl FnOnce() -> T,
) -> (Walked, T) {
    if !ctx.inputs.cfg.defragmentation_enabled {
        return (Walked::default(), beside());
    }
    // The snapshot's index (cached in it; the analysis above built it): the Instances' pods
    // and nodes resolved, in walk order.
    let idx = ctx.inputs.snap.index();
    // The pools the walk visits, in pool-key order, with whether their rows may execute.
    let pools = ctx.inputs.snap.pools();
    let visited: Vec<Visited<'_, '_>> = pools
        .iter()
        .enumerate()
        .filter_map(|(pid, pool)| {
            let eval = analysis.pool(pool)?;
            match eval.score.threshold_case {
                ThresholdCase::ExecutionOpen => Some((pid, eval, true)),
                ThresholdCase::AdvisoryOnly => Some((pid, eval, false)),
                ThresholdCase::Quiet => None,
            }
        })
        .collect();
    if visited.is_empty() {
        return (Walked::default(), beside());
    }
    // Rows outside the maintenance windows may only be emergencies
    // (docs/design-policies.md#maintenance-windows).
    let window_open = ctx.inputs.cfg.window_open(ctx.inputs.now);
    // Shared when the snapshot has enough components for the walk to be long (the visits
    // are counted only once the walk is built, which the helper thread does).
    if idx.component_flags.len() >= split_min_components.max(1) {
        let parts = WalkParts {
            idx: &idx,
            visited: &visited,
            pools: &pools,
            window_open,
        };
        let (mut walked, other) = crate::walk_chunks::shared(ctx, &parts, chunk, beside);
        walked.keys = idx.workload_keys.clone();
        walked.nodes = idx.node_names.clone();
        return (walked, other);
    }
    let walk = Walk::new(ctx, &idx, &pools);
    let lane = WalkLane {
        parts: &WalkParts {
            idx: &idx,
            visited: &visited,
            pools: &pools,
            window_open,
        },
        walk: &walk,
    };
    let total = lane.visits();
    let mut out = lane.out(ctx);
    if !out.counts_advice() {
        out.rows.reserve(lane.rows_bound(0, total));
    }
    lane.walk_visits(
        ctx,
        0,
        total,
        &mut PoolPricers::new(visited.len()),
        &mut out,
    );
    let (mut rows, aside) = out.into_parts();
    lane.keep_in_window(&mut rows, &mut Vec::<()>::new());
    sort_rows_with(&mut rows, &mut Vec::<()>::new());
    let (keys, nodes) = (idx.workload_keys.clone(), idx.node_names.clone());
    (
        Walked {
            rows,
            aside,
            keys,
            nodes,
        },
        beside(),
    )
}

/// A pool the walk visits: its position in `ClusterSnapshot::pools`, its analysis, and
/// whether its rows may execute.
pub(crate) type Visited<'v, 'a> = (usize, &'v PoolAnalysis<'a>, bool);

/// What the walk reads besides the [`Walk`] itself.
pub(crate) struct WalkParts<'l, 'v, 'a> {
    idx: &'l SnapshotIndex,
    visited: &'l [Visited<'v, 'a>],
    pools: &'l [String],
    window_open: bool,
}

impl WalkParts<'_, '_, '_> {
    /// The walk of these pools (per workload, per component: the component's index flags
    /// and, per Instance, its pool ([`Ctx::instance_pool_at`]) and its index entry; and per
    /// pool, the components that can make a row in it).
    pub(crate) fn walk(&self, ctx: &Ctx<'_>) -> Walk {
        Walk::new(ctx, self.idx, self.pools)
    }
}

/// What a thread walking some of the visits reads: shared by both threads of a shared walk.
pub(crate) struct WalkLane<'l, 'v, 'a> {
    pub(crate) parts: &'l WalkParts<'l, 'v, 'a>,
    pub(crate) walk: &'l Walk,
}

/// Each visited pool's [`Pricer`] (by position in the visited list), built when a thread's
/// walk first reaches the pool.
pub(crate) struct PoolPricers<'s>(Vec<Option<Pricer<'s>>>);

impl PoolPricers<'_> {
    pub(crate) fn new(pools: usize) -> Self {
        PoolPricers((0..pools).map(|_| None).collect())
    }
}

impl WalkLane<'_, '_, '_> {
    /// How many pools the walk visits.
    pub(crate) fn pools_visited(&self) -> usize {
        self.parts.visited.len()
    }

    /// The visits of the walk, summed over the visited pools.
    pub(crate) fn visits(&self) -> usize {
        self.parts
            .visited
            .iter()
            .map(|(pid, _, _)| self.walk.visits[*pid].len())
            .sum()
    }

    /// The most rows visits `[from, to)` can make.
    pub(crate) fn rows_bound(&self, from: usize, to: usize) -> usize {
        self.walk.rows_bound(self.parts.visited, from, to)
    }

    /// Where this lane's rows go, as `ctx`'s settings say.
    pub(crate) fn out(&self, ctx: &Ctx<'_>) -> WalkOut {
        WalkOut::new(
            ctx.inputs.cfg.count_advice,
            self.parts.idx.node_names.clone(),
        )
    }

    /// Appends the rows of visits `[from, to)` of the walk, counted across the visited
    /// pools in order (each pool's visits in walk order), in that order.
    pub(crate) fn walk_visits<'c>(
        &self,
        ctx: &'c Ctx<'_>,
        from: usize,
        to: usize,
        pricers: &mut PoolPricers<'c>,
        out: &mut WalkOut,
    ) {
        // Visits before this pool's.
        let mut base = 0;
        for (k, &(pid, eval, exec)) in self.parts.visited.iter().enumerate() {
            let visits = &self.walk.visits[pid];
            let (lo, hi) = (
                from.max(base) - base,
                to.min(base + visits.len()).saturating_sub(base),
            );
            base += visits.len();
            if lo >= hi {
                continue;
            }
            let pricer = pricers.0[k].get_or_insert_with(|| Pricer::new(ctx, eval));
            for &(wi, ci) in &visits[lo..hi] {
                let w = &ctx.inputs.snap.workloads[wi];
                component(
                    ctx,
                    self.parts.idx,
                    eval,
                    pricer,
                    (pid, exec),
                    w,
                    &w.components[ci],
                    &self.walk.component(wi, ci),
                    out,
                );
            }
        }
    }

    /// Outside the maintenance windows, drops the rows that are executable and not
    /// emergencies, and the entries of `companion` (empty, or one per row) beside them.
    pub(crate) fn keep_in_window<S>(&self, rows: &mut Vec<Candidate>, companion: &mut Vec<S>) {
        if self.parts.window_open {
            return;
        }
        let keep = |r: &Candidate| !r.executable || r.emergency;
        if !companion.is_empty() {
            let mut flags = rows.iter().map(keep);
            companion.retain(|_| flags.next().unwrap_or(true));
        }
        rows.retain(keep);
    }
}

/// [`sort_rows_with`] without a companion.
#[cfg(test)]
pub(crate) fn sort_rows(rows: &mut Vec<Candidate>) {
    sort_rows_with(rows, &mut Vec::<()>::new());
}

/// The final sort of docs/design-policies.md#defragmentation-pass, completed with the remaining row
/// fields so it is total.
///
/// A pass sorts thousands of rows of a few hundred bytes each: the sort orders their
/// positions (each compared first by a copy of its score, its footprint and its workload's
/// first bytes, then by the rows' other fields), then moves every row once into its place.
/// A stable sort of the positions by the rows' order is the very permutation a stable sort
/// of the rows makes.
///
/// `companion` (empty, or one entry per row) is put in the rows' new order.
pub(crate) fn sort_rows_with<S>(rows: &mut Vec<Candidate>, companion: &mut Vec<S>) {
    // The workload's first bytes as a number decide most ties of score and footprint
    // without comparing the names ([`prefix16`] keeps their order).
    let keys: Vec<(f64, u32, u128)> = rows
        .iter()
        .map(|r| (r.score, r.footprint_gpus, prefix16(&r.workload)))
        .collect();
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| {
        let ((sa, fa, wa), (sb, fb, wb)) = (keys[a], keys[b]);
        sb.total_cmp(&sa)
            .then_with(|| fa.cmp(&fb))
            .then_with(|| wa.cmp(&wb))
            .then_with(|| row_order(&rows[a], &rows[b]))
    });
    if order.iter().enumerate().all(|(k, &i)| k == i) {
        return;
    }
    let mut slots: Vec<Option<Candidate>> = rows.drain(..).map(Some).collect();
    rows.extend(order.iter().filter_map(|&i| slots[i].take()));
    if !companion.is_empty() {
        let mut slots: Vec<Option<S>> = companion.drain(..).map(Some).collect();
        companion.extend(order.iter().filter_map(|&i| slots[i].take()));
    }
}

/// The order of [`sort_rows_with`] in full.
pub(crate) fn row_order(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| a.footprint_gpus.cmp(&b.footprint_gpus))
        .then_with(|| a.workload.cmp(&b.workload))
        .then_with(|| a.component.cmp(&b.component))
        .then_with(|| a.instance.cmp(&b.instance))
        .then_with(|| a.from_node.cmp(&b.from_node))
        .then_with(|| reason_key(a).cmp(&reason_key(b)))
}

fn reason_key(c: &Candidate) -> (&'static str, bool) {
    (
        c.advisory_reason.map(|r| r.as_str()).unwrap_or(""),
        c.executable,
    )
}

/// Every pod of a component: the routed ones and the Instances' (sorted, unique).
pub(crate) fn component_pods(c: &Component) -> Vec<String> {
    let mut pods: Vec<String> = c.pods.clone();
    for i in &c.instances {
        pods.extend(i.pods.iter().cloned());
    }
    pods.sort();
    pods.dedup();
    pods
}

/// A component as the walk reads it: its [`SnapshotIndex::component_flags`] entry and,
/// per Instance, its pool ([`Ctx::instance_pool_at`]) and its [`SnapshotIndex::instances`]
/// entry.
///
/// [`SnapshotIndex::component_flags`]: alfred_model::index::SnapshotIndex::component_flags
/// [`SnapshotIndex::instances`]: alfred_model::index::SnapshotIndex::instances
struct ComponentWalk<'w> {
    /// The workload's position in the snapshot.
    workload: u32,
    flags: u8,
    kind: ComponentKind,
    instances: &'w [(Option<usize>, InstanceFacts)],
}

/// The defragmentation walk's view of the snapshot, built once per pass (flat: one list of
/// components and one of Instances for the whole snapshot, not two allocations per
/// workload).
pub(crate) struct Walk {
    /// Per workload: the position in `components` of its first component.
    workload_starts: Vec<usize>,
    /// Per component, in walk order: its index flags, its kind and its Instances' range in
    /// `instances`.
    components: Vec<(u8, ComponentKind, usize, usize)>,
    /// Per Instance, in walk order: its pool ([`Ctx::instance_pool_at`]) as a position in
    /// `ClusterSnapshot::pools` (the walk compares positions, not names, once per Instance
    /// per visited pool) and its index entry.
    instances: Vec<(Option<usize>, InstanceFacts)>,
    /// Per pool (positions in `ClusterSnapshot::pools`): `(workload, component)` positions,
    /// in walk order, of the components [`component`] can make a row for in that pool —
    /// every LWS component and every OMENative one with a model reason (their rows follow
    /// the component's primary pool), otherwise the RawDeployment and OMENative components
    /// with an Instance in the pool. The others would make no row there: skipping them
    /// changes nothing but the cost (a pass used to visit every Instance once per pool).
    visits: Vec<Vec<(usize, usize)>>,
}

impl Walk {
    fn new(ctx: &Ctx<'_>, idx: &SnapshotIndex, pools: &[String]) -> Walk {
        // An Instance's pool is its position in `idx.pools`, which is `pools`.
        debug_assert_eq!(pools, idx.pools.as_slice());
        let no_facts = InstanceFacts::default();
        let mut visits: Vec<Vec<(usize, usize)>> = vec![Vec::new(); pools.len()];
        let (mut next_component, mut next_instance) = (0usize, 0usize);
        let mut workload_starts = Vec::with_capacity(ctx.inputs.snap.workloads.len());
        let mut components = Vec::with_capacity(idx.component_flags.len());
        let mut instances = Vec::with_capacity(idx.instances.len());
        for (wi, w) in ctx.inputs.snap.workloads.iter().enumerate() {
            workload_starts.push(components.len());
            // Components and Instances from the index (an OMENative component's mode too):
            // the objects are read for the other modes only.
            for ci in 0..w.components.len() {
                let component = idx.component(next_component);
                let (flags, count) = (component.flags, component.instances);
                next_component += 1;
                let first = instances.len();
                instances.extend((0..count).map(|_| {
                    let facts = idx
                        .instances
                        .get(next_instance)
                        .copied()
                        .unwrap_or(no_facts);
                    next_instance += 1;
                    (ctx.instance_pool_at(idx, &facts), facts)
                }));
                components.push((flags, component.kind, first, instances.len()));
                let every_pool = if flags & COMPONENT_OMENATIVE != 0 {
                    ctx.model_reason(w).is_some()
                } else {
                    match &w.components[ci].mode {
                        DeploymentMode::MultiNode => true,
                        DeploymentMode::OMENative => ctx.model_reason(w).is_some(),
                        DeploymentMode::RawDeployment => false,
                        DeploymentMode::Other(_) => continue,
                    }
                };
                if every_pool {
                    for v in &mut visits {
                        v.push((wi, ci));
                    }
                } else {
                    for pid in instances[first..].iter().filter_map(|(p, _)| *p) {
                        if visits[pid].last() != Some(&(wi, ci)) {
                            visits[pid].push((wi, ci));
                        }
                    }
                }
            }
        }
        Walk {
            workload_starts,
            components,
            instances,
            visits,
        }
    }

    /// Component `ci` of workload `wi`.
    fn component(&self, wi: usize, ci: usize) -> ComponentWalk<'_> {
        let (flags, kind, lo, hi) = self.components[self.workload_starts[wi] + ci];
        ComponentWalk {
            workload: wi as u32,
            flags,
            kind,
            instances: &self.instances[lo..hi],
        }
    }

    /// The most rows visits `[from, to)` (counted as [`WalkLane::walk_visits`] counts them) can make:
    /// one per Instance of each visited component, at least one per component.
    fn rows_bound(
        &self,
        visited: &[(usize, &PoolAnalysis<'_>, bool)],
        from: usize,
        to: usize,
    ) -> usize {
        let mut base = 0;
        let mut bound = 0;
        for &(pid, _, _) in visited {
            let visits = &self.visits[pid];
            let (lo, hi) = (
                from.max(base) - base,
                to.min(base + visits.len()).saturating_sub(base),
            );
            base += visits.len();
            for &(wi, ci) in visits.get(lo..hi).unwrap_or_default() {
                let (_, _, first, last) = self.components[self.workload_starts[wi] + ci];
                bound += (last - first).max(1);
            }
        }
        bound
    }
}

/// `cw`: the index entries and pools of `c` and its Instances; `pool_id`: the position of
/// `eval`'s pool in `ClusterSnapshot::pools`.
///
/// An OMENative component (most of them) is walked from the index: `c` and its Instances
/// are read only where the index does not answer (a row for a model reason, which names the
/// component's primary node; an Instance whose pods the index could not vouch for).
#[allow(clippy::too_many_arguments)]
fn component(
    ctx: &Ctx<'_>,
    idx: &SnapshotIndex,
    eval: &PoolAnalysis<'_>,
    pricer: &Pricer<'_>,
    (pool_id, exec): (usize, bool),
    w: &Workload,
    c: &Component,
    cw: &ComponentWalk<'_>,
    out: &mut WalkOut,
) {
    debug_assert_eq!(c.instances.len(), cw.instances.len());
    // The index's flag first: an OMENative component's mode is not read.
    if cw.flags & COMPONENT_OMENATIVE == 0 && c.mode != DeploymentMode::OMENative {
        return other_component(ctx, idx, eval, pool_id, w, c, cw, out);
    }
    if let Some(why) = ctx.model_reason(w) {
        let pods = component_pods(c);
        if ctx.primary_pool(&pods).as_deref() == Some(eval.score.pool.as_str()) {
            let from = NodeRef::Name(ctx.primary_node(&pods, c.instances.first()));
            out.advise(w, (cw.workload, cw.kind, &OMENATIVE), -1, from, why, |_| {});
        }
        return;
    }
    for (position, (in_pool, facts)) in cw.instances.iter().enumerate() {
        // From the index: an Instance of another pool is passed over unread.
        if facts.total_gpus == 0 || *in_pool != Some(pool_id) {
            continue;
        }
        let at = IndexAt {
            idx,
            workload: cw.workload,
            kind: cw.kind,
            component_flags: cw.flags,
            facts,
        };
        omenative_instance(
            ctx,
            &at,
            eval,
            pricer,
            exec,
            w,
            InstanceRef::new(c, position),
            out,
        );
    }
}

/// [`component`] for an LWS or a RawDeployment component (advice only; other modes make no
/// row).
#[allow(clippy::too_many_arguments)]
fn other_component(
    ctx: &Ctx<'_>,
    idx: &SnapshotIndex,
    eval: &PoolAnalysis<'_>,
    pool_id: usize,
    w: &Workload,
    c: &Component,
    cw: &ComponentWalk<'_>,
    out: &mut WalkOut,
) {
    let pool = eval.score.pool.as_str();
    let busy = !w.settings.movable || !w.migration.active.is_empty() || ctx.in_cooldown(w);
    match &c.mode {
        DeploymentMode::MultiNode => {
            let pods = component_pods(c);
            if busy
                || !ctx.inputs.cfg.lws_recommendations_enabled
                || ctx.primary_pool(&pods).as_deref() != Some(pool)
            {
                return;
            }
            let from = NodeRef::Name(ctx.primary_node(&pods, c.instances.first()));
            out.advise(
                w,
                (cw.workload, cw.kind, &c.mode),
                -1,
                from,
                AdvisoryReason::LWSMigrationUnsupported,
                |_| {},
            );
        }
        DeploymentMode::RawDeployment => {
            if busy {
                return;
            }
            for (position, (in_pool, facts)) in cw.instances.iter().enumerate() {
                if facts.total_gpus == 0
                    || facts.flags & INSTANCE_TERMINATING != 0
                    || *in_pool != Some(pool_id)
                {
                    continue;
                }
                let from = ctx.primary_node_at(idx, facts, InstanceRef::new(c, position));
                out.advise(
                    w,
                    (cw.workload, cw.kind, &c.mode),
                    i64::from(facts.index),
                    from,
                    AdvisoryReason::RawDeploymentMigrationUnsupported,
                    |_| {},
                );
            }
        }
        DeploymentMode::OMENative | DeploymentMode::Other(_) => {}
    }
}

/// The deployment mode of the OMENative components [`component`] walks (their rows name
/// it without reading the component).
static OMENATIVE: DeploymentMode = DeploymentMode::OMENative;

/// Where an Instance sits in the snapshot's index: the index, its component's kind and
/// flags and its own entry.
struct IndexAt<'i> {
    idx: &'i SnapshotIndex,
    /// The workload's position in the snapshot.
    workload: u32,
    kind: ComponentKind,
    component_flags: u8,
    facts: &'i InstanceFacts,
}

/// The OMENative ladder of docs/design-policies.md#defragmentation-ladder for one Instance (steps
/// 2–8), its row put in `out`. No row only when the fail-closed guard of
/// docs/design-policies.md#benefit-cost-and-score drops the candidate. The component is
/// not read, and the Instance only where the index does not answer (see [`component`]).
#[allow(clippy::too_many_arguments)]
fn omenative_instance(
    ctx: &Ctx<'_>,
    at: &IndexAt<'_>,
    eval: &PoolAnalysis<'_>,
    pricer: &Pricer<'_>,
    exec: bool,
    w: &Workload,
    inst: InstanceRef<'_>,
    out: &mut WalkOut,
) {
    let from = ctx.primary_node_at(at.idx, at.facts, inst);
    let index = i64::from(at.facts.index);
    let (owner, footprint) = ((at.workload, at.kind, &OMENATIVE), at.facts.total_gpus);
    if !ctx.inputs.cfg.omenative_migration_enabled {
        return out.advise(
            w,
            owner,
            index,
            from,
            AdvisoryReason::MigrationSurfaceDisabled,
            |_| {},
        );
    }
    if ctx.in_cooldown(w) {
        return out.advise(
            w,
            owner,
            index,
            from,
            AdvisoryReason::OMENativeStateIneligible,
            |_| {},
        );
    }
    if let Some(why) = omenative_eligibility_at(ctx, at.idx, w, at.component_flags, at.facts) {
        return out.advise(w, owner, index, from, why, |_| {});
    }
    if !exec {
        return out.advise(
            w,
            owner,
            index,
            from,
            AdvisoryReason::NonExecutableObservedFragmentation,
            |_| {},
        );
    }
    let Some(plan) = plan_surge_at(ctx, at.idx, at.facts, w, inst) else {
        return out.advise(
            w,
            owner,
            index,
            from,
            AdvisoryReason::NoSurgeHeadroom,
            |r| {
                r.footprint_gpus = footprint;
            },
        );
    };
    let Some(priced) = price(ctx, eval, pricer, w, &plan) else {
        return;
    };
    let cost = ctx.inputs.cfg.move_cost();
    let score = priced.benefit - cost;
    if score.partial_cmp(&0.0) != Some(Ordering::Greater) {
        return out.advise(
            w,
            owner,
            index,
            from,
            AdvisoryReason::NonExecutableObservedFragmentation,
            |r| {
                r.benefit = priced.benefit;
                r.cost = cost;
                r.score = if score.is_nan() { 0.0 } else { score };
            },
        );
    }
    let mut r = row(
        Policy::Defragmentation,
        w,
        at.kind,
        index,
        &OMENATIVE,
        RowReason::Fragmentation,
        from.into_name(&at.idx.node_names),
        None,
    );
    r.benefit = priced.benefit;
    r.cost = cost;
    let mut boosted = score;
    if priced.emergency {
        boosted *= 2.0;
    }
    let source_preemptible = ctx.node(&r.from_node).is_some_and(|n| n.preemptible);
    if source_preemptible && ctx.spot_prefers_source(w) {
        boosted *= 1.25;
    }
    r.score = boosted;
    r.emergency = priced.emergency;
    r.surge_shaped = true;
    r.footprint_gpus = footprint;
    r.placement_target_nodes = plan.placement_targets(ctx);
    r.hint_target_nodes = plan.hints(ctx);
    r.pod_gpus = plan.pod_gpus;
    out.rows.push(r);
}

/// Where a walking thread puts its rows: all of them, or under
/// [`PolicySettings::count_advice`] only those that can be decided on, the advice set aside
/// as it is made, never built as a row (a row is a few hundred bytes and three allocations,
/// and a pass on the trace cluster makes thousands of advice rows).
pub(crate) struct WalkOut {
    pub(crate) rows: Vec<Candidate>,
    /// `Some` under `count_advice`.
    aside: Option<Vec<SetAside>>,
    /// The walked snapshot's node names (a kept row names its source node).
    node_names: Arc<NameArena>,
}

impl WalkOut {
    pub(crate) fn new(count_advice: bool, node_names: Arc<NameArena>) -> WalkOut {
        WalkOut {
            rows: Vec::new(),
            aside: count_advice.then(Vec::new),
            node_names,
        }
    }

    /// Whether advice is set aside rather than kept as rows.
    pub(crate) fn counts_advice(&self) -> bool {
        self.aside.is_some()
    }

    /// An advice row of Instance `instance` of the component of `w` of kind `kind` and
    /// deployment mode `mode` on `from`, for `why` (`workload`: `w`'s position in the
    /// snapshot), with `fill` setting the fields besides (kept rows only: a count reads
    /// none of them).
    fn advise(
        &mut self,
        w: &Workload,
        (workload, kind, mode): (u32, ComponentKind, &DeploymentMode),
        instance: i64,
        from: NodeRef,
        why: AdvisoryReason,
        fill: impl FnOnce(&mut Candidate),
    ) {
        match &mut self.aside {
            Some(aside) => aside.push(SetAside::fragmentation(workload, kind, instance, from, why)),
            None => {
                let mut r = row(
                    Policy::Defragmentation,
                    w,
                    kind,
                    instance,
                    mode,
                    RowReason::Fragmentation,
                    from.into_name(&self.node_names),
                    Some(why),
                );
                fill(&mut r);
                self.rows.push(r);
            }
        }
    }

    /// The rows and the advice set aside.
    pub(crate) fn into_parts(self) -> (Vec<Candidate>, Vec<SetAside>) {
        (self.rows, self.aside.unwrap_or_default())
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Priced {
    pub(crate) benefit: f64,
    pub(crate) emergency: bool,
}

/// What pricing needs of a pool's observed bins, computed once per pool: the slot counts
/// per ladder size, `TotalFree`, and the bins by free GPUs (largest first) for the
/// emergency test, and the pending pods that test reads (the pool's, old enough, asking
/// GPUs: the parts of the test that do not depend on the candidate); and each node's bin,
/// so a plan's nodes (positions) find their bins without a search by name.
pub(crate) struct Pricer<'s> {
    /// Per node of `ctx.inputs.snap.nodes`: its position in the pool's bins, [`NONE`] when none.
    bin_of: Vec<u32>,
    slots: LadderSlots,
    total_free: u64,
    /// `slots`' weighted fragmentation against `total_free`: every move's "before" when
    /// no docs/design-policies.md#boosts bin is added.
    fragmentation_before: f64,
    by_free_desc: Vec<usize>,
    emergency_pods: Vec<&'s PendingPod>,
}

impl<'s> Pricer<'s> {
    pub(crate) fn new(ctx: &'s Ctx<'_>, eval: &PoolAnalysis<'_>) -> Self {
        let free = eval.bins.free();
        let mut by_free_desc: Vec<usize> = (0..free.len()).collect();
        by_free_desc.sort_by(|a, b| free[*b].cmp(&free[*a]).then(a.cmp(b)));
        let pool = eval.score.pool.as_str();
        let age = f64::from(ctx.inputs.cfg.emergency_pending_age_minutes);
        // A bin's node is its position in the snapshot the analysis read; that is `ctx.inputs.snap`
        // (the pass shares its analysis only when so), and a bin whose position names
        // another node is resolved by name, as `Bins::position` would.
        let nodes = &ctx.inputs.snap.nodes;
        let mut bin_of = vec![NONE; nodes.len()];
        for (pos, bin) in eval.bins.iter().enumerate() {
            let node = if nodes.get(bin.node).is_some_and(|n| n.name == bin.name) {
                Some(bin.node)
            } else {
                ctx.node_position(bin.name)
            };
            if let (Some(slot), Ok(pos)) =
                (node.and_then(|i| bin_of.get_mut(i)), u32::try_from(pos))
                && *slot == NONE
            {
                *slot = pos;
            }
        }
        let slots = LadderSlots::new(&eval.bins, &eval.weights);
        let total_free = eval.bins.total_free();
        Pricer {
            bin_of,
            fragmentation_before: slots.weighted_fragmentation(&eval.weights, total_free),
            slots,
            total_free,
            by_free_desc,
            emergency_pods: ctx
                .inputs
                .snap
                .pending_pods
                .iter()
                .filter(|p| {
                    p.gpus_needed > 0
                        && p.counts_in(pool)
                        && ctx.inputs.now.minutes_since(p.pending_since) > age
                })
                .collect(),
        }
    }
}

/// A bin a plan touches: one of the pool's bins (by position) or a docs/design-policies.md#boosts
/// extra one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BinRef {
    Pool(usize),
    Extra(usize),
}

/// The preemptible sources that docs/design-policies.md#boosts counts as bins (before and after the
/// move): `(node position, free, cap)`, in source order.
fn extra_bins(
    ctx: &Ctx<'_>,
    eval: &PoolAnalysis<'_>,
    pricer: &Pricer<'_>,
    plan: &SurgePlan,
) -> Vec<(usize, u32, u32)> {
    let is_bin = |i: usize| pricer.bin_of.get(i).is_some_and(|b| *b != NONE);
    preemptible_sources(ctx, eval, plan, is_bin)
        .into_iter()
        .map(|(i, n)| (i, n.free_gpus.min(n.total_gpus), n.total_gpus))
        .collect()
}

/// The plan's sources that docs/design-policies.md#boosts adds as bins: preemptible, available
/// nodes of the pool with GPUs that are not bins already (`is_bin`, by node position), with their
/// index in the snapshot, in source order.
fn preemptible_sources<'c>(
    ctx: &'c Ctx<'_>,
    eval: &PoolAnalysis<'_>,
    plan: &SurgePlan,
    is_bin: impl Fn(usize) -> bool,
) -> Vec<(usize, &'c alfred_model::snapshot::Node)> {
    let pool = eval.score.pool.as_str();
    let nodes = &ctx.inputs.snap.nodes;
    plan.sources
        .iter()
        .filter_map(|&i| {
            if is_bin(i) {
                return None;
            }
            let n = nodes.get(i)?;
            (n.preemptible && n.has_gpus() && n.pool.as_deref() == Some(pool) && !n.unavailable())
                .then_some((i, n))
        })
        .collect()
}

/// Benefit (docs/design-policies.md#benefit-cost-and-score) and the emergency test
/// (docs/design-policies.md#boosts) of a plan, on the pool's observed bins with the observed
/// weights and `TotalFree`; `None` when a target is not a bin with room (the fail-closed guard).
///
/// docs/design-policies.md#boosts: preemptible sources that are not bins (under `avoidAsTarget`)
/// but are GPU nodes of the pool that can take work are counted as bins before and after the move,
/// with `TotalFree` taken over those bins, so the GPUs the move frees there count; they
/// remain out of the pool score and out of the targets.
///
/// Incremental: the slot counts of the bins after the move are the pool's, less the old
/// contributions of the bins the plan touches plus their new ones; the weighted
/// fragmentation is then computed from those counts exactly as
/// [`weighted_fragmentation`] computes it (so the result is bit-for-bit the one of
/// [`price_by_clone`]). A docs/design-policies.md#boosts bin larger than every pool bin changes
/// `maxCap`, hence every count: that (rare) case is priced by [`price_by_clone`].
pub(crate) fn price(
    ctx: &Ctx<'_>,
    eval: &PoolAnalysis<'_>,
    pricer: &Pricer<'_>,
    w: &Workload,
    plan: &SurgePlan,
) -> Option<Priced> {
    let extra = extra_bins(ctx, eval, pricer, plan);
    if extra
        .iter()
        .any(|(_, _, cap)| *cap > pricer.slots.max_cap())
    {
        return price_by_clone(ctx, eval, w, plan);
    }
    // The counts before the move: the pool's, plus the docs/design-policies.md#boosts bins
    // when there are any (rare: the pool's own are priced once, in the pricer).
    let with_extra;
    let (before, denominator, fragmentation_before) = if extra.is_empty() {
        (
            &pricer.slots,
            pricer.total_free,
            pricer.fragmentation_before,
        )
    } else {
        let mut counts = pricer.slots.clone();
        let mut denominator = pricer.total_free;
        for (_, free, cap) in &extra {
            counts.add(*free, *cap);
            denominator += u64::from(*free);
        }
        let fragmentation = counts.weighted_fragmentation(&eval.weights, denominator);
        with_extra = counts;
        (&with_extra, denominator, fragmentation)
    };
    let lookup = |node: usize| -> Option<(BinRef, u32, u32)> {
        if let Some(&pos) = pricer.bin_of.get(node)
            && pos != NONE
        {
            let pos = pos as usize;
            let bin = eval.bins.get(pos)?;
            return Some((BinRef::Pool(pos), bin.free, bin.cap));
        }
        let i = extra.iter().position(|(n, _, _)| *n == node)?;
        Some((BinRef::Extra(i), extra[i].1, extra[i].2))
    };
    // Touched bins: (bin, free before, free now, cap).
    let mut touched: Vec<(BinRef, u32, u32, u32)> = Vec::new();
    let slot_of =
        |bin: (BinRef, u32, u32), touched: &mut Vec<(BinRef, u32, u32, u32)>| match touched
            .iter()
            .position(|t| t.0 == bin.0)
        {
            Some(k) => k,
            None => {
                touched.push((bin.0, bin.1, bin.1, bin.2));
                touched.len() - 1
            }
        };
    for (_, target, gpus) in &plan.moves {
        let bin = lookup(*target)?;
        let k = slot_of(bin, &mut touched);
        if touched[k].2 < *gpus {
            return None;
        }
        touched[k].2 -= gpus;
    }
    for (source, _, gpus) in &plan.moves {
        if let Some(bin) = lookup(*source) {
            let k = slot_of(bin, &mut touched);
            touched[k].2 = touched[k].2.saturating_add(*gpus).min(touched[k].3);
        }
    }
    let updates = touched.iter().map(|(_, old, new, cap)| (*old, *new, *cap));
    let benefit = fragmentation_before
        - before.weighted_fragmentation_after(updates, &eval.weights, denominator);
    // Largest free bin before and after the move.
    let free = eval.bins.free();
    let pool_max = pricer.by_free_desc.first().map_or(0, |p| free[*p]);
    let extra_max = extra.iter().map(|e| e.1).max().unwrap_or(0);
    let max_before = pool_max.max(extra_max);
    let untouched_pool_max = pricer
        .by_free_desc
        .iter()
        .find(|p| !touched.iter().any(|t| t.0 == BinRef::Pool(**p)))
        .map_or(0, |p| free[*p]);
    let untouched_extra_max = (0..extra.len())
        .filter(|i| !touched.iter().any(|t| t.0 == BinRef::Extra(*i)))
        .map(|i| extra[i].1)
        .max()
        .unwrap_or(0);
    let touched_max = touched.iter().map(|t| t.2).max().unwrap_or(0);
    let max_after = untouched_pool_max.max(untouched_extra_max).max(touched_max);
    // [`emergency`] on the pool's pods prefiltered by the pricer (no pod can pass when the
    // largest free bin does not grow).
    let emergency = max_after > max_before
        && pricer.emergency_pods.iter().any(|p| {
            tenant_compatible(ctx, w, p) && max_before < p.gpus_needed && max_after >= p.gpus_needed
        });
    Some(Priced { benefit, emergency })
}

/// [`price`] the way docs/design-policies.md#benefit-cost-and-score writes it: apply the plan to a
/// copy of the pool's bins (with the docs/design-policies.md#boosts bins inserted) and recompute
/// the weighted fragmentation over every bin. Used when a docs/design-policies.md#boosts bin
/// changes `maxCap`, and as the reference the incremental form is tested against.
pub(crate) fn price_by_clone(
    ctx: &Ctx<'_>,
    eval: &PoolAnalysis<'_>,
    w: &Workload,
    plan: &SurgePlan,
) -> Option<Priced> {
    let pool = eval.score.pool.as_str();
    let mut before = eval.bins.clone();
    let nodes = &ctx.inputs.snap.nodes;
    let is_bin = |i: usize| eval.bins.position(&nodes[i].name).is_some();
    for (i, n) in preemptible_sources(ctx, eval, plan, is_bin) {
        before.insert(n, i);
    }
    let denominator = before.total_free();
    let mut after = before.clone();
    for (_, target, gpus) in &plan.moves {
        if !after.take(&nodes[*target].name, *gpus) {
            return None;
        }
    }
    for (source, _, gpus) in &plan.moves {
        after.release(&nodes[*source].name, *gpus);
    }
    let benefit = weighted_fragmentation(&before, &eval.weights, denominator)
        - weighted_fragmentation(&after, &eval.weights, denominator);
    let emergency = emergency(ctx, pool, w, max_free(&before), max_free(&after));
    Some(Priced { benefit, emergency })
}

fn max_free(bins: &Bins<'_>) -> u32 {
    bins.free().iter().copied().max().unwrap_or(0)
}

fn emergency(ctx: &Ctx<'_>, pool: &str, w: &Workload, max_before: u32, max_after: u32) -> bool {
    let age = f64::from(ctx.inputs.cfg.emergency_pending_age_minutes);
    ctx.inputs.snap.pending_pods.iter().any(|p| {
        let g = p.gpus_needed;
        g > 0
            && p.counts_in(pool)
            && ctx.inputs.now.minutes_since(p.pending_since) > age
            && tenant_compatible(ctx, w, p)
            && max_before < g
            && max_after >= g
    })
}

/// Whether pending pod `p` may make a move of `w`'s an emergency
/// (docs/design-policies.md#boosts): the same namespace, or, with
/// `allowCrossTenantOptimization`, the same tenant group through the pod's InferenceService.
pub(crate) fn tenant_compatible(
    ctx: &Ctx<'_>,
    w: &Workload,
    p: &alfred_model::snapshot::PendingPod,
) -> bool {
    if p.namespace == w.namespace {
        return true;
    }
    if !ctx.inputs.cfg.allow_cross_tenant_optimization || w.settings.tenant_group.is_empty() {
        return false;
    }
    let Some(isvc) = p.isvc.as_deref().filter(|s| !s.is_empty()) else {
        return false;
    };
    let (ns, name) = isvc.split_once('/').unwrap_or((p.namespace.as_str(), isvc));
    ctx.inputs
        .snap
        .workload(ns, name)
        .is_some_and(|o| o.settings.tenant_group == w.settings.tenant_group)
}
