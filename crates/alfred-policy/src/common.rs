//! What both policies share: the pass context, OMENative eligibility
//! (docs/design-policies.md#omenative-eligibility), the model view
//! (docs/design-snapshot.md#models-and-volumes), the per-workload cooldown
//! (docs/design-policies.md#cooldown-inside-the-policies) and the surge plan
//! (docs/design-policies.md#surge-plans).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use alfred_model::Timestamp;
use alfred_model::index::{InstanceFacts, NONE, SnapshotIndex};
use alfred_model::reason::{AdvisoryReason, RowReason};
use alfred_model::record::{Candidate, Policy};
use alfred_model::snapshot::{
    ClusterSnapshot, Component, ComponentKind, DeploymentMode, Instance, Node, Pod, SpotOverride,
    Workload,
};
use alfred_score::{Analysis, RepackBlock};

use crate::settings::PolicySettings;

/// One pass's read-only inputs. The snapshot is normalized (a normalized copy, or the
/// caller's snapshot itself when it already is exactly what normalizing would make of it),
/// so every lookup and every iteration order is independent of the order the caller's
/// lists came in. The pass time `now` is the `T` of alfred-score ([`Ctx::analyze`] passes
/// it); the snapshot's own `observed_at` is not read.
pub(crate) struct Ctx<'a> {
    pub snap: Cow<'a, ClusterSnapshot>,
    pub cfg: &'a PolicySettings,
    pub now: Timestamp,
    /// The surge plan's ordered target lists (docs/design-policies.md#surge-plans), built once per
    /// (pool, spot avoidance, model-allowed set) on first use.
    targets: RefCell<BTreeMap<TargetKey, Rc<TargetList>>>,
    /// Name prefixes of `snap.nodes`, for [`Ctx::node`].
    node_names: NameIndex,
    /// Name prefixes of `snap.pods`, for [`Ctx::pod`].
    pod_names: NameIndex,
    /// `snap.pods` as runs `[start, end)` of one namespace, in order.
    pod_namespaces: Vec<(usize, usize)>,
    /// alfred-score's analysis of `snap` at `now` with the policies' scoring settings, when
    /// the caller already made it ([`crate::analyze_and_propose`]); [`Ctx::analyze`]
    /// otherwise.
    pub shared: Option<&'a Analysis<'a>>,
}

/// A [`Ctx`] to be made on another thread ([`Ctx::seed`]): the context itself stays on
/// its thread (its cache of target lists is not shared).
pub(crate) struct CtxSeed<'a> {
    snap: &'a ClusterSnapshot,
    cfg: &'a PolicySettings,
    now: Timestamp,
    node_names: NameIndex,
    pod_names: NameIndex,
    pod_namespaces: Vec<(usize, usize)>,
    shared: Option<&'a Analysis<'a>>,
}

impl<'a> CtxSeed<'a> {
    /// The context.
    pub(crate) fn grow(self) -> Ctx<'a> {
        Ctx {
            snap: Cow::Borrowed(self.snap),
            cfg: self.cfg,
            now: self.now,
            targets: RefCell::default(),
            node_names: self.node_names,
            pod_names: self.pod_names,
            pod_namespaces: self.pod_namespaces,
            shared: self.shared,
        }
    }
}

/// The first 16 bytes of each name of a sorted list, as big-endian integers (zero-padded):
/// truncating and zero-padding keep the order (not strictly), so a lookup narrows the list
/// to the names sharing the searched name's prefix by integer comparisons in one small
/// array, and compares whole names (a pointer away each) only in that range. The answer is
/// the plain binary search's (the lists it serves are strictly ordered).
#[derive(Debug, Default, Clone)]
pub(crate) struct NameIndex(Vec<u128>);

impl NameIndex {
    fn new<'n>(names: impl Iterator<Item = &'n str>) -> NameIndex {
        NameIndex(names.map(prefix16).collect())
    }

    /// The range of positions within `[start, end)` whose prefix is `name`'s.
    fn range(&self, start: usize, end: usize, name: &str) -> (usize, usize) {
        let key = prefix16(name);
        let part = &self.0[start..end];
        let lo = part.partition_point(|p| *p < key);
        let hi = lo + part[lo..].partition_point(|p| *p == key);
        (start + lo, start + hi)
    }
}

fn prefix16(s: &str) -> u128 {
    let b = s.as_bytes();
    let mut a = [0u8; 16];
    let n = b.len().min(16);
    a[..n].copy_from_slice(&b[..n]);
    u128::from_be_bytes(a)
}

/// The lookup indexes of a normalized, deduplicated snapshot.
fn indexes(snap: &ClusterSnapshot) -> (NameIndex, NameIndex, Vec<(usize, usize)>) {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (i, p) in snap.pods.iter().enumerate() {
        match runs.last_mut() {
            Some(r) if snap.pods[r.0].namespace == p.namespace => r.1 = i + 1,
            _ => runs.push((i, i + 1)),
        }
    }
    (
        NameIndex::new(snap.nodes.iter().map(|n| n.name.as_str())),
        NameIndex::new(snap.pods.iter().map(|p| p.name.as_str())),
        runs,
    )
}

/// `(pool, avoid spot, model key when the model constrains the targets)`.
type TargetKey = (String, bool, Option<String>);

/// The eligible targets of one (pool, spot avoidance, allowed set) before the per-Instance
/// tests (not a source, room for the smallest print): every node `n` of the pool with GPUs,
/// not unavailable, not an avoided preemptible node, allowed by the model, in the order of
/// docs/design-policies.md#surge-plans (`freeGPUs` ascending, then name).
#[derive(Debug, PartialEq)]
pub(crate) struct TargetList {
    /// Indices in `ClusterSnapshot::nodes`.
    pub(crate) nodes: Vec<usize>,
    /// `freeGPUs` of each (ascending).
    pub(crate) free: Vec<u32>,
}

impl<'a> Ctx<'a> {
    pub fn new(snapshot: &'a ClusterSnapshot, cfg: &'a PolicySettings, now: Timestamp) -> Self {
        // A normalized snapshot (what `alfred_observe::observe` and alfred-twin produce) is
        // not copied: the copy below would equal it. Decisions are made at `now`; the
        // snapshot keeps its own `observed_at`, the time the node markers carry.
        if is_normalized(snapshot) {
            let (node_names, pod_names, pod_namespaces) = indexes(snapshot);
            return Ctx {
                snap: Cow::Borrowed(snapshot),
                cfg,
                now,
                targets: RefCell::default(),
                node_names,
                pod_names,
                pod_namespaces,
                shared: None,
            };
        }
        let mut snap = snapshot.clone();
        snap.normalize();
        // Duplicate names (which an API server cannot produce) would make lookups
        // ambiguous: keep one of each so nothing downstream can misbehave.
        snap.nodes.dedup_by(|b, a| a.name == b.name);
        snap.pods
            .dedup_by(|b, a| a.namespace == b.namespace && a.name == b.name);
        snap.workloads
            .dedup_by(|b, a| a.namespace == b.namespace && a.name == b.name);
        for w in &mut snap.workloads {
            w.components.dedup_by(|b, a| a.kind == b.kind);
            for c in &mut w.components {
                c.instances.dedup_by(|b, a| a.index == b.index);
            }
        }
        let (node_names, pod_names, pod_namespaces) = indexes(&snap);
        Ctx {
            snap: Cow::Owned(snap),
            cfg,
            now,
            targets: RefCell::default(),
            node_names,
            pod_names,
            pod_namespaces,
            shared: None,
        }
    }

    /// What another thread needs to make a context equal to this one: the same snapshot
    /// (borrowed), settings, time, lookup indexes and shared analysis, and an empty cache
    /// of target lists (the cache only saves work: a list is the same whoever builds it).
    pub(crate) fn seed(&self) -> CtxSeed<'_> {
        CtxSeed {
            snap: &self.snap,
            cfg: self.cfg,
            now: self.now,
            node_names: self.node_names.clone(),
            pod_names: self.pod_names.clone(),
            pod_namespaces: self.pod_namespaces.clone(),
            shared: self.shared,
        }
    }

    /// The pool scores of docs/design-scoring.md (alfred-score) at `now`, with the bins and weights
    /// that price a move (docs/design-policies.md#benefit-cost-and-score).
    pub fn analyze(&self) -> Analysis<'_> {
        alfred_score::analyze_at(&self.snap, &self.cfg.score_settings(), self.now)
    }

    /// `snap.node(name)`, through the name index.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.node_position(name).map(|i| &self.snap.nodes[i])
    }

    /// The position in `snap.nodes` of [`Ctx::node`]'s answer. The snapshot is normalized
    /// (sorted by name, no duplicates), so positions order nodes by name and a position
    /// names exactly one node: plans and pricing compare positions instead of names.
    pub fn node_position(&self, name: &str) -> Option<usize> {
        let nodes = &self.snap.nodes;
        let (lo, hi) = self.node_names.range(0, nodes.len(), name);
        nodes[lo..hi]
            .binary_search_by(|n| n.name.as_str().cmp(name))
            .ok()
            .map(|i| lo + i)
    }

    /// `snap.pod_by_key(key)`, through the name index.
    pub fn pod(&self, key: &str) -> Option<&Pod> {
        let (ns, name) = key.split_once('/')?;
        let pods = &self.snap.pods;
        let run = self
            .pod_namespaces
            .binary_search_by(|(start, _)| pods[*start].namespace.as_str().cmp(ns))
            .ok()?;
        let (start, end) = self.pod_namespaces[run];
        let (lo, hi) = self.pod_names.range(start, end, name);
        pods[lo..hi]
            .binary_search_by(|p| p.name.as_str().cmp(name))
            .ok()
            .map(|i| &pods[lo + i])
    }

    /// The pool of a node with GPUs.
    pub fn pool_of(&self, node: &str) -> Option<&str> {
        self.node(node)
            .filter(|n| n.has_gpus())
            .and_then(|n| n.pool.as_deref())
    }

    /// GPUs held by an Instance per node (pods resolved through the snapshot).
    pub fn gpus_by_node(&self, pods: &[String]) -> BTreeMap<String, u64> {
        let mut by: BTreeMap<String, u64> = BTreeMap::new();
        for key in pods {
            if let Some(p) = self.pod(key)
                && p.gpus > 0
                && !p.node.is_empty()
            {
                *by.entry(p.node.clone()).or_default() += u64::from(p.gpus);
            }
        }
        by
    }

    /// Primary node (docs/design-policies.md#defragmentation-ladder): the node holding the most of
    /// the pods' GPUs, ties to the smallest name; falls back to the node with most pods when no pod
    /// holds GPUs.
    pub fn primary_node(&self, pods: &[String], fallback: Option<&Instance>) -> String {
        // [`Ctx::gpus_by_node`] without copying node names: (node, GPUs) in name order.
        let mut by: Vec<(&str, u64)> = Vec::with_capacity(pods.len());
        for key in pods {
            if let Some(p) = self.pod(key)
                && p.gpus > 0
                && !p.node.is_empty()
            {
                match by.binary_search_by(|(n, _)| (*n).cmp(p.node.as_str())) {
                    Ok(i) => by[i].1 += u64::from(p.gpus),
                    Err(i) => by.insert(i, (p.node.as_str(), u64::from(p.gpus))),
                }
            }
        }
        let mut best: Option<(&str, u64)> = None;
        for &(n, g) in &by {
            if best.is_none_or(|(_, bg)| g > bg) {
                best = Some((n, g));
            }
        }
        match best {
            Some((n, _)) => n.to_owned(),
            None => fallback
                .and_then(|i| i.primary_node_by_pods())
                .unwrap_or_default()
                .to_owned(),
        }
    }

    /// Primary pool of a set of pods: the pool holding most of their GPUs, ties to the
    /// smallest key (pods on unknown or pool-less nodes skipped).
    pub fn primary_pool(&self, pods: &[String]) -> Option<String> {
        let mut by: BTreeMap<&str, u64> = BTreeMap::new();
        for (node, g) in self.gpus_by_node(pods) {
            if let Some(pool) = self.pool_of(&node) {
                *by.entry(pool).or_default() += g;
            }
        }
        let mut best: Option<(&str, u64)> = None;
        for (p, g) in by {
            if best.is_none_or(|(_, bg)| g > bg) {
                best = Some((p, g));
            }
        }
        best.map(|(p, _)| p.to_owned())
    }

    /// Whether every node of the Instance is in `pool` (and it has at least one).
    #[cfg(test)]
    pub fn instance_in_pool(&self, inst: &Instance, pool: &str) -> bool {
        !inst.nodes.is_empty() && inst.nodes.keys().all(|n| self.pool_of(n) == Some(pool))
    }

    /// The pool every node of the Instance is in, if there is one (and it has a node):
    /// `instance_in_pool(inst, p)` is `instance_pool(inst) == Some(p)`, so a pass resolves
    /// it once per Instance rather than once per Instance and pool (the pass reads it from
    /// the index: [`Ctx::instance_pool_at`]; this is the by-name form it is tested against).
    #[cfg(test)]
    pub fn instance_pool(&self, inst: &Instance) -> Option<&str> {
        let mut nodes = inst.nodes.keys();
        let first = self.pool_of(nodes.next()?)?;
        nodes
            .all(|n| self.pool_of(n) == Some(first))
            .then_some(first)
    }

    /// [`Ctx::instance_pool`] read from the snapshot's index (`idx` is `self.snap`'s,
    /// `facts` the Instance's entry): the Instance's node keys are already resolved there,
    /// so no name is looked up. Same answer: the index resolves a key to the node of that
    /// name, or to none, as [`Ctx::node`] does (the names are unique).
    pub fn instance_pool_at<'s>(
        &'s self,
        idx: &SnapshotIndex,
        facts: &InstanceFacts,
    ) -> Option<&'s str> {
        let pool_of = |i: u32| -> Option<&'s str> {
            let n = self.snap.nodes.get(i as usize)?;
            n.has_gpus().then_some(())?;
            n.pool.as_deref()
        };
        let mut nodes = idx.nodes_of(facts).iter();
        let first = pool_of(*nodes.next()?)?;
        nodes.all(|&n| pool_of(n) == Some(first)).then_some(first)
    }

    /// [`Ctx::primary_node`] of an Instance's pods read from the snapshot's index (`idx` is
    /// `self.snap`'s, `facts` the Instance's entry): pods and their nodes come resolved, and
    /// node positions are name order (the snapshot is normalized, names unique), so "ties to
    /// the smallest name" is "ties to the smallest position". A GPU pod on a node the snapshot
    /// does not know (which the index cannot name) takes the by-name path.
    pub fn primary_node_at(
        &self,
        idx: &SnapshotIndex,
        facts: &InstanceFacts,
        inst: &Instance,
    ) -> String {
        // (node position, GPUs), ascending by position.
        let mut by: Vec<(u32, u64)> = Vec::new();
        for &pi in idx.pods_of(facts) {
            let Some(f) = idx.pods.get(pi as usize) else {
                continue;
            };
            if f.gpus == 0 {
                continue;
            }
            if f.node == NONE {
                if self.snap.pods[pi as usize].node.is_empty() {
                    continue;
                }
                return self.primary_node(&inst.pods, Some(inst));
            }
            match by.binary_search_by(|(n, _)| n.cmp(&f.node)) {
                Ok(i) => by[i].1 += u64::from(f.gpus),
                Err(i) => by.insert(i, (f.node, u64::from(f.gpus))),
            }
        }
        let mut best: Option<(u32, u64)> = None;
        for &(n, g) in &by {
            if best.is_none_or(|(_, bg)| g > bg) {
                best = Some((n, g));
            }
        }
        match best {
            Some((n, _)) => self.snap.nodes[n as usize].name.clone(),
            None => inst.primary_node_by_pods().unwrap_or_default().to_owned(),
        }
    }

    /// `modelAdvisoryReason(w)` (docs/design-snapshot.md#models-and-volumes).
    pub fn model_reason(&self, w: &Workload) -> Option<AdvisoryReason> {
        alfred_score::model_block(&self.snap, w).map(advisory)
    }

    /// `allowedTargets(w)`: `None` = unconstrained.
    pub fn allowed_targets(&self, w: &Workload) -> Option<&BTreeSet<String>> {
        let model = w.model.as_ref()?;
        self.snap
            .models
            .get(&model.key())
            .and_then(|m| m.allowed_nodes.as_ref())
    }

    /// `inCooldown(w)` (docs/design-policies.md#cooldown-inside-the-policies).
    pub fn in_cooldown(&self, w: &Workload) -> bool {
        alfred_score::in_cooldown(w, self.cfg.per_workload_cooldown_minutes, self.now)
    }

    /// The ordered target list of `pool` for workload `w` (built on first use).
    pub fn target_list(&self, pool: &str, w: &Workload) -> Rc<TargetList> {
        let avoid = self.avoid_spot(w);
        let allowed = self.allowed_targets(w);
        let key: TargetKey = (
            pool.to_owned(),
            avoid,
            allowed.and(w.model.as_ref()).map(|m| m.key()),
        );
        if let Some(list) = self.targets.borrow().get(&key) {
            return Rc::clone(list);
        }
        let mut nodes: Vec<usize> = (0..self.snap.nodes.len())
            .filter(|i| {
                let n = &self.snap.nodes[*i];
                n.pool.as_deref() == Some(pool)
                    && n.has_gpus()
                    && !n.unavailable()
                    && !(avoid && n.preemptible)
                    && allowed.is_none_or(|a| a.contains(&n.name))
            })
            .collect();
        let node = |i: &usize| &self.snap.nodes[*i];
        nodes.sort_by(|a, b| {
            (node(a).free_gpus, &node(a).name).cmp(&(node(b).free_gpus, &node(b).name))
        });
        let free = nodes.iter().map(|i| node(i).free_gpus).collect();
        let list = Rc::new(TargetList { nodes, free });
        self.targets.borrow_mut().insert(key, Rc::clone(&list));
        list
    }

    /// Whether a node is preemptible and avoided as a target for this workload.
    pub fn avoid_spot(&self, w: &Workload) -> bool {
        self.cfg.avoid_spot_as_target || w.settings.spot_policy == SpotOverride::Avoid
    }

    /// `spotPrefersSource(w)` (docs/design-policies.md#boosts).
    pub fn spot_prefers_source(&self, w: &Workload) -> bool {
        match w.settings.spot_policy {
            SpotOverride::Migrate => true,
            SpotOverride::Ignore => false,
            SpotOverride::Default | SpotOverride::Avoid => self.cfg.prefer_spot_as_source,
        }
    }
}

/// Whether `snap` is what [`Ctx::new`]'s copy would make of it (but for `observed_at`):
/// every list already in [`ClusterSnapshot::normalize`]'s order (a stable sort of a sorted
/// list changes nothing) and the lists [`Ctx::new`] deduplicates free of duplicates
/// (strictly increasing). O(size of the snapshot), no allocation.
pub(crate) fn is_normalized(snap: &ClusterSnapshot) -> bool {
    use std::cmp::Ordering;
    /// Every neighbour pair in order (`Less`; or `Equal` too when not `strict`).
    fn ordered<T>(v: &[T], cmp: impl Fn(&T, &T) -> Ordering, strict: bool) -> bool {
        v.windows(2).all(|w| match cmp(&w[0], &w[1]) {
            Ordering::Less => true,
            Ordering::Equal => !strict,
            Ordering::Greater => false,
        })
    }
    let by_name = |a: (&String, &String), b: (&String, &String)| a.cmp(&b);
    ordered(&snap.nodes, |a, b| a.name.cmp(&b.name), true)
        && ordered(
            &snap.pods,
            |a, b| by_name((&a.namespace, &a.name), (&b.namespace, &b.name)),
            true,
        )
        && ordered(
            &snap.pending_pods,
            |a, b| by_name((&a.namespace, &a.name), (&b.namespace, &b.name)),
            false,
        )
        && ordered(
            &snap.workloads,
            |a, b| by_name((&a.namespace, &a.name), (&b.namespace, &b.name)),
            true,
        )
        && ordered(
            &snap.pod_groups,
            |a, b| by_name((&a.namespace, &a.name), (&b.namespace, &b.name)),
            false,
        )
        && snap.problems.is_sorted()
        && snap.workloads.iter().all(|w| {
            ordered(&w.components, |a, b| a.kind.cmp(&b.kind), true)
                && w.components.iter().all(|c| {
                    ordered(&c.instances, |a, b| a.index.cmp(&b.index), true)
                        && c.pods.is_sorted()
                        && c.instances.iter().all(|i| i.pods.is_sorted())
                })
                && ordered(&w.migration.requests, |a, b| a.uuid.cmp(&b.uuid), false)
                && w.migration.malformed_requests.is_sorted()
                && ordered(
                    &w.migration.records,
                    |a, b| by_name((&a.uuid, &a.component), (&b.uuid, &b.component)),
                    false,
                )
                && ordered(&w.migration.active, |a, b| a.uuid.cmp(&b.uuid), false)
        })
}

/// The shared OMENative eligibility (docs/design-policies.md#omenative-eligibility, alfred-score's)
/// as the reason to report; `None` = eligible.
pub(crate) fn omenative_eligibility(
    ctx: &Ctx<'_>,
    w: &Workload,
    c: &Component,
    inst: &Instance,
) -> Option<AdvisoryReason> {
    alfred_score::omenative_eligibility(&ctx.snap, w, c, inst).map(advisory)
}

/// [`omenative_eligibility`] read from the snapshot's index (`idx` is `ctx.snap`'s;
/// `component_flags` and `facts` the component's and the Instance's entries).
pub(crate) fn omenative_eligibility_at(
    ctx: &Ctx<'_>,
    idx: &SnapshotIndex,
    w: &Workload,
    c: &Component,
    component_flags: u8,
    inst: &Instance,
    facts: &InstanceFacts,
) -> Option<AdvisoryReason> {
    alfred_score::omenative_eligibility_indexed(&ctx.snap, idx, w, c, component_flags, inst, facts)
        .map(advisory)
}

/// The advisory reason of a block (every block the policies see has one).
fn advisory(block: RepackBlock) -> AdvisoryReason {
    block
        .advisory_reason()
        .unwrap_or(AdvisoryReason::OMENativeStateIneligible)
}

/// A surge plan (docs/design-policies.md#surge-plans). Nodes are positions in `ctx.snap.nodes`
/// ([`Ctx::node_position`]), not names: pricing reads the bins by position, and nothing is copied
/// per move.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SurgePlan {
    /// (source node, target node, gpus) per GPU pod.
    pub moves: Vec<(usize, usize, u32)>,
    /// The first three eligible targets.
    pub hints: Vec<String>,
    /// Every source node of the Instance (ascending, hence in name order).
    pub sources: Vec<usize>,
    /// GPUs per GPU pod, largest first.
    pub pod_gpus: Vec<u32>,
    /// The ordered list the targets come from.
    targets: Rc<TargetList>,
    /// The first position in `targets` with room for the smallest print.
    start: usize,
}

impl SurgePlan {
    /// `placementTargets` of docs/design-policies.md#surge-plans: every eligible target in order,
    /// fullest first (built on demand: only executable rows carry it).
    pub fn placement_targets(&self, ctx: &Ctx<'_>) -> Vec<String> {
        self.target_names(ctx).map(str::to_owned).collect()
    }

    fn target_names<'c>(&'c self, ctx: &'c Ctx<'_>) -> impl Iterator<Item = &'c str> + 'c {
        self.targets.nodes[self.start..]
            .iter()
            .filter(|i| self.sources.binary_search(i).is_err())
            .map(|i| ctx.snap.nodes[*i].name.as_str())
    }

    /// [`SurgePlan::moves`] with node names, as docs/design-policies.md#surge-plans writes them.
    #[cfg(test)]
    pub fn named_moves(&self, ctx: &Ctx<'_>) -> Vec<(String, String, u32)> {
        let name = |i: usize| ctx.snap.nodes[i].name.clone();
        self.moves
            .iter()
            .map(|(from, to, gpus)| (name(*from), name(*to), *gpus))
            .collect()
    }

    /// [`SurgePlan::sources`] by name.
    #[cfg(test)]
    pub fn source_names(&self, ctx: &Ctx<'_>) -> Vec<String> {
        self.sources
            .iter()
            .map(|i| ctx.snap.nodes[*i].name.clone())
            .collect()
    }
}

/// Whether `n` may receive a replacement of workload `w` (the target filter of
/// docs/design-policies.md#surge-plans, less the room and source tests).
#[cfg(test)]
pub(crate) fn eligible_target(ctx: &Ctx<'_>, w: &Workload, n: &Node) -> bool {
    n.has_gpus()
        && !n.unavailable()
        && !(ctx.avoid_spot(w) && n.preemptible)
        && ctx
            .allowed_targets(w)
            .is_none_or(|allowed| allowed.contains(&n.name))
}

/// The validated prints of docs/design-policies.md#surge-plans `(pod key, node position, gpus)`
/// (GPU pods only), the sources (node positions, ascending) and the pool; `None` =
/// `NoSurgeHeadroom`.
#[allow(clippy::type_complexity)]
fn surge_prints<'c, 'i>(
    ctx: &'c Ctx<'_>,
    w: &Workload,
    inst: &'i Instance,
) -> Option<(Vec<(&'i str, usize, u32)>, Vec<usize>, &'c str)> {
    if ctx.model_reason(w).is_some() {
        return None;
    }
    // Validate the prints: every pod resolves to a bound pod of this namespace on a known node,
    // the GPU total and per-node pod counts agree with the Instance.
    let mut prints: Vec<(&'i str, usize, u32)> = Vec::new();
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    let mut total: u64 = 0;
    for key in &inst.pods {
        let p = ctx.pod(key)?;
        if p.namespace != w.namespace || p.name.is_empty() || p.node.is_empty() {
            return None;
        }
        let node = ctx.node_position(&p.node)?;
        *counts.entry(p.node.as_str()).or_default() += 1;
        total += u64::from(p.gpus);
        if p.gpus > 0 {
            prints.push((key.as_str(), node, p.gpus));
        }
    }
    if prints.is_empty()
        || total != u64::from(inst.total_gpus)
        || !counts
            .iter()
            .map(|(n, c)| (*n, *c))
            .eq(inst.nodes.iter().map(|(n, c)| (n.as_str(), *c)))
    {
        return None;
    }
    // Every key is a counted node, found above.
    let sources: Vec<usize> = inst
        .nodes
        .keys()
        .map(|k| ctx.node_position(k))
        .collect::<Option<_>>()?;
    let mut pool: Option<&str> = None;
    for (_, node, _) in &prints {
        let n = &ctx.snap.nodes[*node];
        let p = n.pool.as_deref().filter(|_| n.has_gpus())?;
        if pool.is_some_and(|q| q != p) {
            return None;
        }
        pool = Some(p);
    }
    let pool = pool?;
    prints.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(b.0)));
    Some((prints, sources, pool))
}

/// [`surge_prints`] read from the snapshot's index (`idx` is `ctx.snap`'s, `facts` the
/// Instance's entry): the pods and their nodes come resolved, so nothing is looked up by
/// name, and node positions are name order (normalized snapshot, unique names), so the
/// per-node pod counts compare with the Instance's `nodes` by position. Same answer.
#[allow(clippy::type_complexity)]
fn surge_prints_at<'c, 'i>(
    ctx: &'c Ctx<'_>,
    idx: &SnapshotIndex,
    facts: &InstanceFacts,
    w: &Workload,
    inst: &'i Instance,
) -> Option<(Vec<(&'i str, usize, u32)>, Vec<usize>, &'c str)> {
    let pod_ix = idx.pods_of(facts);
    if pod_ix.len() != inst.pods.len() {
        return surge_prints(ctx, w, inst);
    }
    if ctx.model_reason(w).is_some() {
        return None;
    }
    let snap: &'c ClusterSnapshot = &ctx.snap;
    let mut prints: Vec<(&'i str, usize, u32)> = Vec::with_capacity(pod_ix.len());
    // (node position, pods), ascending.
    let mut counts: Vec<(u32, u32)> = Vec::with_capacity(2);
    let mut total: u64 = 0;
    let mut pool: Option<&'c str> = None;
    for (key, &pi) in inst.pods.iter().zip(pod_ix) {
        let p = snap.pods.get(pi as usize)?;
        if p.namespace != w.namespace || p.name.is_empty() || p.node.is_empty() {
            return None;
        }
        let node = idx.pods.get(pi as usize)?.node;
        let n = snap.nodes.get(node as usize)?;
        match counts.binary_search_by(|(x, _)| x.cmp(&node)) {
            Ok(i) => counts[i].1 += 1,
            Err(i) => counts.insert(i, (node, 1)),
        }
        total += u64::from(p.gpus);
        if p.gpus > 0 {
            // [`Ctx::pool_of`]. Every `None` here is also `surge_prints`'s answer: it checks
            // the same things, only later.
            if !n.has_gpus() {
                return None;
            }
            let q = n.pool.as_deref()?;
            if pool.is_some_and(|x| x != q) {
                return None;
            }
            pool = Some(q);
            prints.push((key.as_str(), node as usize, p.gpus));
        }
    }
    if prints.is_empty()
        || total != u64::from(inst.total_gpus)
        || !counts.iter().copied().eq(idx
            .nodes_of(facts)
            .iter()
            .copied()
            .zip(inst.nodes.values().copied()))
    {
        return None;
    }
    // The Instance's `nodes` keys, resolved: equal to the counted nodes, checked above.
    let sources: Vec<usize> = idx.nodes_of(facts).iter().map(|n| *n as usize).collect();
    let pool = pool?;
    prints.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(b.0)));
    Some((prints, sources, pool))
}

/// [`plan_surge`] with the prints read from the snapshot's index ([`surge_prints_at`]):
/// the defragmentation walk's form.
pub(crate) fn plan_surge_at(
    ctx: &Ctx<'_>,
    idx: &SnapshotIndex,
    facts: &InstanceFacts,
    w: &Workload,
    inst: &Instance,
) -> Option<SurgePlan> {
    plan_from_prints(ctx, w, surge_prints_at(ctx, idx, facts, w, inst)?)
}

/// `planSurge(w, inst)`; `None` = `NoSurgeHeadroom`.
///
/// The targets come from the pool's ordered list ([`Ctx::target_list`], built once): the
/// first fit of a print is the earlier of the first already-used target with room left and
/// the first unused target at or after the first position with `freeGPUs ≥ gpus` (a binary
/// search; the list is in `freeGPUs` order), skipping sources. So a plan costs
/// O(log n + prints · (prints + sources)), and the exhaustive `placementTargets` are only
/// listed for the rows that carry them ([`SurgePlan::placement_targets`]).
pub(crate) fn plan_surge(ctx: &Ctx<'_>, w: &Workload, inst: &Instance) -> Option<SurgePlan> {
    plan_from_prints(ctx, w, surge_prints(ctx, w, inst)?)
}

/// [`plan_surge`] from the validated prints, sources and pool.
#[allow(clippy::type_complexity)]
fn plan_from_prints(
    ctx: &Ctx<'_>,
    w: &Workload,
    (prints, sources, pool): (Vec<(&str, usize, u32)>, Vec<usize>, &str),
) -> Option<SurgePlan> {
    let minimum = prints.iter().map(|p| p.2).min()?;
    let targets = ctx.target_list(pool, w);
    let is_source = |pos: usize| sources.binary_search(&targets.nodes[pos]).is_ok();
    let start = targets.free.partition_point(|f| *f < minimum);
    // Used targets `(position, free GPUs left)`, in position order.
    let mut used: Vec<(usize, u32)> = Vec::new();
    let mut moves = Vec::with_capacity(prints.len());
    for (_, from, gpus) in &prints {
        let reused = used.iter().position(|(_, f)| *f >= *gpus);
        let mut fresh = targets.free.partition_point(|f| *f < *gpus).max(start);
        while fresh < targets.nodes.len()
            && (is_source(fresh) || used.iter().any(|(p, _)| *p == fresh))
        {
            fresh += 1;
        }
        let fresh = (fresh < targets.nodes.len()).then_some(fresh);
        let pos = match (reused, fresh) {
            (Some(k), Some(f)) if used[k].0 > f => {
                let at = used.partition_point(|(p, _)| *p < f);
                used.insert(at, (f, targets.free[f] - gpus));
                f
            }
            (Some(k), _) => {
                used[k].1 -= gpus;
                used[k].0
            }
            (None, Some(f)) => {
                let at = used.partition_point(|(p, _)| *p < f);
                used.insert(at, (f, targets.free[f] - gpus));
                f
            }
            (None, None) => return None,
        };
        moves.push((*from, targets.nodes[pos], *gpus));
    }
    let mut plan = SurgePlan {
        moves,
        hints: Vec::new(),
        sources,
        pod_gpus: prints.iter().map(|p| p.2).collect(),
        targets,
        start,
    };
    plan.hints = plan.target_names(ctx).take(3).map(str::to_owned).collect();
    Some(plan)
}

/// The surge plan as docs/design-policies.md#surge-plans writes it (filter and sort every node per
/// Instance): the reference [`plan_surge`] is checked against, as
/// `(moves, placementTargets, hints, sources, podGPUs)`.
#[cfg(test)]
#[allow(clippy::type_complexity)]
pub(crate) fn plan_surge_reference(
    ctx: &Ctx<'_>,
    w: &Workload,
    inst: &Instance,
) -> Option<(
    Vec<(String, String, u32)>,
    Vec<String>,
    Vec<String>,
    Vec<String>,
    Vec<u32>,
)> {
    let (prints, sources, pool) = surge_prints(ctx, w, inst)?;
    let name = |i: usize| ctx.snap.nodes[i].name.clone();
    let prints: Vec<(&str, String, u32)> = prints
        .into_iter()
        .map(|(k, n, g)| (k, name(n), g))
        .collect();
    let sources: Vec<String> = sources.into_iter().map(name).collect();
    let minimum = prints.iter().map(|p| p.2).min()?;
    let mut targets: Vec<&Node> = ctx
        .snap
        .nodes
        .iter()
        .filter(|n| n.pool.as_deref() == Some(pool))
        .filter(|n| !sources.contains(&n.name))
        .filter(|n| eligible_target(ctx, w, n))
        .filter(|n| n.free_gpus >= minimum)
        .collect();
    targets.sort_by(|a, b| (a.free_gpus, &a.name).cmp(&(b.free_gpus, &b.name)));
    let mut free: Vec<u32> = targets.iter().map(|n| n.free_gpus).collect();
    let mut moves = Vec::new();
    for (_, from, gpus) in &prints {
        let slot = free.iter().position(|f| *f >= *gpus)?;
        free[slot] -= gpus;
        moves.push((from.clone(), targets[slot].name.clone(), *gpus));
    }
    let placement_targets: Vec<String> = targets.iter().map(|n| n.name.clone()).collect();
    let hints = placement_targets.iter().take(3).cloned().collect();
    Some((
        moves,
        placement_targets,
        hints,
        sources,
        prints.iter().map(|p| p.2).collect(),
    ))
}

/// A candidate with every optional field empty: advice with `advisory` unless `None`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn row(
    policy: Policy,
    w: &Workload,
    kind: ComponentKind,
    instance: i64,
    mode: &DeploymentMode,
    reason: RowReason,
    from_node: String,
    advisory: Option<AdvisoryReason>,
) -> Candidate {
    // `w.key()` (`namespace/name`) pushed into one exact allocation instead of through
    // `format!`: one per advice row, thousands a pass. Same text.
    let mut workload = String::with_capacity(w.namespace.len() + 1 + w.name.len());
    workload.push_str(&w.namespace);
    workload.push('/');
    workload.push_str(&w.name);
    Candidate {
        policy,
        workload,
        component: kind,
        instance,
        mode: mode.clone(),
        reason,
        from_node,
        hint_target_nodes: Vec::new(),
        placement_target_nodes: Vec::new(),
        executable: advisory.is_none(),
        advisory_reason: advisory,
        surge_shaped: false,
        footprint_gpus: 0,
        benefit: 0.0,
        cost: 0.0,
        score: 0.0,
        emergency: false,
        pod_gpus: Vec::new(),
        scheduling: None,
        plan: None,
    }
}
