//! The pass context the policies share ([`Ctx`]), in three parts: what the pass is given
//! ([`PassInputs`]: the normalized snapshot, the settings and `now`), lookups memoised over
//! it ([`PassCaches`]: node and pod names, the surge plans' target lists), and what it
//! derives once ([`PassAnalysis`]: alfred-score's analysis, the caller's when it is the
//! same). Also the model view (docs/design-snapshot.md#models-and-volumes) and the
//! per-workload cooldown (docs/design-policies.md#cooldown-inside-the-policies).
use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use alfred_model::Timestamp;
use alfred_model::index::{InstanceFacts, NONE, NameArena, SnapshotIndex};
use alfred_model::reason::AdvisoryReason;
use alfred_model::snapshot::{
    ClusterSnapshot, Component, Instance, Node, Pod, SpotOverride, Workload,
};
use alfred_score::{Analysis, ScoreSettings};

use crate::eligibility::advisory;
use crate::settings::PolicySettings;

/// An Instance named by its component and position, read only where the index does not
/// answer. Why: the walk's first reading of each component and Instance of a pass was a
/// cache miss per object (a sixth of a 14-day twin run), and most Instances need nothing
/// the index lacks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InstanceRef<'a> {
    component: &'a Component,
    position: usize,
}

impl<'a> InstanceRef<'a> {
    /// Instance `position` of `component`.
    pub(crate) fn new(component: &'a Component, position: usize) -> InstanceRef<'a> {
        InstanceRef {
            component,
            position,
        }
    }

    /// The Instance (a first reading); `None` only for a position the component does not
    /// have (an index that is not of this snapshot). Never inlined: inlined, its reading of
    /// the component's list was hoisted to the top of the walk's loops (a reference is always
    /// readable), so every component was read whether an Instance needed it or not.
    #[inline(never)]
    pub(crate) fn get(self) -> Option<&'a Instance> {
        self.component.instances.get(self.position)
    }
}

/// A row's source node as the walk finds it: a position in the snapshot's nodes, named by
/// the index's [`SnapshotIndex::node_names`] only when a row is kept or matched (the walk
/// sets thousands of advice rows aside a pass, and a name copied per row was an allocation
/// per row); or a name, off the index's path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NodeRef {
    Position(u32),
    Name(String),
}

impl NodeRef {
    /// The node's name (`names`: the snapshot's node names).
    pub(crate) fn name<'a>(&'a self, names: &'a NameArena) -> &'a str {
        match self {
            NodeRef::Position(p) => names.get(*p as usize).unwrap_or_default(),
            NodeRef::Name(n) => n,
        }
    }

    /// [`NodeRef::name`], owned.
    pub(crate) fn into_name(self, names: &NameArena) -> String {
        match self {
            NodeRef::Position(p) => names.get(p as usize).unwrap_or_default().to_owned(),
            NodeRef::Name(n) => n,
        }
    }
}

/// What a pass is given, read-only and passed down, never changed: the snapshot as the
/// policies read it, the settings, and the pass time.
///
/// The snapshot is normalized (a normalized copy, or the caller's snapshot itself when it
/// already is exactly what normalizing would make of it), so every lookup and every
/// iteration order is independent of the order the caller's lists came in.
///
/// `now` and `snap.observed_at` are two instants, and the policies decide at `now` alone:
/// it is the `T` of alfred-score ([`Ctx::analysis`] analyses at it), of cooldowns and of
/// ages. `observed_at` is when the objects were read (earlier than `now` in a live pass);
/// the policies carry it into the node markers and compare it with `now` once, to decide
/// whether a caller's analysis (made at `observed_at`) is the pass's own
/// ([`PassAnalysis`]). Neither is derived from the other.
pub(crate) struct PassInputs<'a> {
    /// The normalized snapshot.
    pub(crate) snap: Cow<'a, ClusterSnapshot>,
    /// The policies' settings (sanitized by the entry points).
    pub(crate) cfg: &'a PolicySettings,
    /// The pass time.
    pub(crate) now: Timestamp,
}

/// Lookups over [`PassInputs::snap`] that only save work: each answer is the plain form's
/// (a binary search or a filter of the snapshot), whoever builds it and whenever.
pub(crate) struct PassCaches {
    /// Name prefixes of `snap.nodes`, for [`Ctx::node`] (built with the context: nearly
    /// every pass looks nodes up).
    node_names: NameIndex,
    /// For [`Ctx::pod`], built on its first use: most passes look no pod up by name (the
    /// walk reads the snapshot's index), and building it read every pod's name and
    /// namespace.
    pods: OnceCell<PodLookup>,
    /// The surge plan's ordered target lists (docs/design-policies.md#surge-plans), built
    /// once per (pool, spot avoidance, model-allowed set) on first use.
    targets: RefCell<BTreeMap<TargetKey, Rc<TargetList>>>,
}

impl PassCaches {
    /// The caches of a snapshot whose node lookup is `node_names`, with the pod lookup when
    /// one was already built and no target list.
    fn new(node_names: NameIndex, pods: Option<PodLookup>) -> PassCaches {
        PassCaches {
            node_names,
            pods: pods.map(OnceCell::from).unwrap_or_default(),
            targets: RefCell::default(),
        }
    }
}

/// What the pass derives once from its inputs: alfred-score's analysis of `snap` at `now`
/// with the policies' scoring settings ([`Ctx::analysis`]). A caller that already made
/// exactly that analysis offers it to [`Ctx::with`], which adopts it only when it is the
/// pass's own; otherwise the pass makes it (one analysis is ~10% of a pass).
#[derive(Clone, Copy)]
pub(crate) struct PassAnalysis<'a> {
    adopted: Option<&'a Analysis<'a>>,
}

impl<'a> PassAnalysis<'a> {
    /// `offered` (an analysis of the caller's snapshot by `alfred_score::analyze`, that is
    /// at its `observed_at`, with the given scoring settings) when it is what the pass would
    /// derive: the pass reads the caller's snapshot itself (no normalizing copy), `now` is
    /// the snapshot's `observed_at`, and the policies' scoring settings are the offered
    /// ones (after repair). A snapshot observed before the pass (every live pass) is
    /// analysed again at `now`.
    fn adopt(
        offered: Option<(&'a Analysis<'a>, &ScoreSettings)>,
        snapshot: &PassSnapshot<'_>,
        cfg: &PolicySettings,
        now: Timestamp,
    ) -> PassAnalysis<'a> {
        let adopted = offered.and_then(|(analysis, scoring)| {
            (matches!(snapshot.snap, Cow::Borrowed(_))
                && now == snapshot.snap.observed_at
                && scoring.sanitized() == cfg.score_settings().sanitized())
            .then_some(analysis)
        });
        PassAnalysis { adopted }
    }
}

/// [`Ctx::analysis`]'s answer: the adopted analysis, or one made for the asker.
pub(crate) enum AnalysisRef<'c> {
    /// The caller's analysis ([`PassAnalysis`]).
    Adopted(&'c Analysis<'c>),
    /// Made by the pass.
    Own(Analysis<'c>),
}

impl<'c> std::ops::Deref for AnalysisRef<'c> {
    type Target = Analysis<'c>;

    fn deref(&self) -> &Analysis<'c> {
        match self {
            AnalysisRef::Adopted(a) => a,
            AnalysisRef::Own(a) => a,
        }
    }
}

/// One pass's context: its [`PassInputs`], the [`PassCaches`] over them and the
/// [`PassAnalysis`]. Made whole by [`Ctx::with`] (nothing is set afterwards); the policies
/// read it through `&Ctx`, so `now` and the other inputs flow from the entry point down.
pub(crate) struct Ctx<'a> {
    pub(crate) inputs: PassInputs<'a>,
    caches: PassCaches,
    analysis: PassAnalysis<'a>,
}

/// The snapshot a pass reads, made ready before its context: normalized (borrowed or a
/// normalized copy) and its node lookup. Apart from [`Ctx::with`] so that it can be made
/// while another thread analyses the caller's snapshot ([`PassSnapshot::beside`]), an
/// analysis then offered to the context.
pub(crate) struct PassSnapshot<'a> {
    snap: Cow<'a, ClusterSnapshot>,
    node_names: NameIndex,
}

/// A [`Ctx`] to be made on another thread ([`Ctx::seed`]): the context itself stays on
/// its thread (its cache of target lists is not shared).
pub(crate) struct CtxSeed<'a> {
    inputs: PassInputs<'a>,
    node_names: NameIndex,
    /// The pod lookup, when the seeding context had built it.
    pods: Option<PodLookup>,
    analysis: PassAnalysis<'a>,
}

impl<'a> CtxSeed<'a> {
    /// The context.
    pub(crate) fn grow(self) -> Ctx<'a> {
        Ctx {
            inputs: self.inputs,
            caches: PassCaches::new(self.node_names, self.pods),
            analysis: self.analysis,
        }
    }
}

/// A normalized snapshot's pod names as [`NameIndex`] and its pods as runs `[start, end)`
/// of one namespace, in order.
#[derive(Debug, Clone)]
struct PodLookup {
    names: NameIndex,
    namespaces: Vec<(usize, usize)>,
}

impl PodLookup {
    fn of(pods: &[Pod]) -> PodLookup {
        let mut namespaces: Vec<(usize, usize)> = Vec::new();
        for (i, p) in pods.iter().enumerate() {
            match namespaces.last_mut() {
                Some(r) if pods[r.0].namespace == p.namespace => r.1 = i + 1,
                _ => namespaces.push((i, i + 1)),
            }
        }
        PodLookup {
            names: NameIndex::new(pods.iter().map(|p| p.name.as_str())),
            namespaces,
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

/// The first 16 bytes of `s` as a big-endian integer, zero-padded: of two strings, the one
/// with the smaller prefix is the smaller (equal prefixes decide nothing).
pub(crate) fn prefix16(s: &str) -> u128 {
    let b = s.as_bytes();
    let mut a = [0u8; 16];
    let n = b.len().min(16);
    a[..n].copy_from_slice(&b[..n]);
    u128::from_be_bytes(a)
}

/// The node lookup of a normalized, deduplicated snapshot (its pod lookup is built on
/// first use).
fn node_lookup(snap: &ClusterSnapshot) -> NameIndex {
    NameIndex::new(snap.nodes.iter().map(|n| n.name.as_str()))
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

impl<'a> PassSnapshot<'a> {
    /// `snapshot` as a pass reads it. A normalized snapshot (what `alfred_observe::observe`
    /// and alfred-twin produce) is not copied: the copy would equal it.
    pub(crate) fn of(snapshot: &'a ClusterSnapshot) -> Self {
        if snapshot.is_normalized() {
            return PassSnapshot {
                snap: Cow::Borrowed(snapshot),
                node_names: node_lookup(snapshot),
            };
        }
        PassSnapshot::normalized_copy(snapshot)
    }

    /// [`PassSnapshot::of`] and `other` at once: another thread runs `other` and then
    /// checks the second half of the workloads' order while this one checks the rest and
    /// builds the node lookup. On a large cluster the check is a few hundred thousand
    /// string comparisons, and `other` (the pass's analysis) is shorter than the check.
    pub(crate) fn beside<T: Send>(
        snapshot: &'a ClusterSnapshot,
        other: impl FnOnce() -> T + Send,
    ) -> (Self, T) {
        let half = snapshot.workloads.len() / 2;
        // Known when a producer carried the snapshot's index over from its last pass.
        let known = snapshot.known_normalized();
        let (mine, theirs, node_names, other) = std::thread::scope(|scope| {
            let helper = scope.spawn(|| {
                let other = other();
                let theirs = known.is_some()
                    || snapshot.workloads[half..]
                        .iter()
                        .all(Workload::is_normalized);
                (other, theirs)
            });
            let mine = known.unwrap_or_else(|| {
                snapshot.lists_normalized()
                    && snapshot.workloads[..half]
                        .iter()
                        .all(Workload::is_normalized)
            });
            // Built ahead of the other half's answer: the node lookup of a normalized snapshot.
            let node_names = mine.then(|| node_lookup(snapshot));
            let (other, theirs) = helper
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (mine, theirs, node_names, other)
        });
        let prepared = match node_names {
            Some(node_names) if mine && theirs => PassSnapshot {
                snap: Cow::Borrowed(snapshot),
                node_names,
            },
            _ => PassSnapshot::normalized_copy(snapshot),
        };
        (prepared, other)
    }

    /// A normalized, deduplicated copy of `snapshot`.
    fn normalized_copy(snapshot: &ClusterSnapshot) -> Self {
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
        let node_names = node_lookup(&snap);
        PassSnapshot {
            snap: Cow::Owned(snap),
            node_names,
        }
    }
}

impl<'a> Ctx<'a> {
    /// The context of a pass over `snapshot` with `cfg` at `now` that makes its own
    /// analysis: [`Ctx::with`] of [`PassSnapshot::of`], nothing offered.
    pub(crate) fn new(
        snapshot: &'a ClusterSnapshot,
        cfg: &'a PolicySettings,
        now: Timestamp,
    ) -> Self {
        Ctx::with(PassSnapshot::of(snapshot), cfg, now, None)
    }

    /// The context of a pass over `snapshot` with `cfg` at `now`, adopting `offered` (an
    /// analysis the caller made of its snapshot, and the scoring settings it made it with)
    /// when it is the pass's own ([`PassAnalysis`]). The one constructor of a pass's
    /// context: the inputs, empty caches and the analysis, all at once ([`CtxSeed::grow`]
    /// only copies a context made here, for another thread).
    pub(crate) fn with(
        snapshot: PassSnapshot<'a>,
        cfg: &'a PolicySettings,
        now: Timestamp,
        offered: Option<(&'a Analysis<'a>, &ScoreSettings)>,
    ) -> Self {
        let analysis = PassAnalysis::adopt(offered, &snapshot, cfg, now);
        let PassSnapshot { snap, node_names } = snapshot;
        Ctx {
            inputs: PassInputs { snap, cfg, now },
            caches: PassCaches::new(node_names, None),
            analysis,
        }
    }

    /// What another thread needs to make a context equal to this one: the same snapshot
    /// (borrowed), settings, time, lookups and adopted analysis, and an empty cache
    /// of target lists (the cache only saves work: a list is the same whoever builds it).
    pub(crate) fn seed(&self) -> CtxSeed<'_> {
        CtxSeed {
            inputs: PassInputs {
                snap: Cow::Borrowed(&self.inputs.snap),
                cfg: self.inputs.cfg,
                now: self.inputs.now,
            },
            node_names: self.caches.node_names.clone(),
            pods: self.caches.pods.get().cloned(),
            analysis: self.analysis,
        }
    }

    /// The pool scores of docs/design-scoring.md (alfred-score) of `snap` at `now`, with
    /// the bins and weights that price a move (docs/design-policies.md#benefit-cost-and-score):
    /// the adopted analysis, or one made now (a pass asks once and hands it down).
    pub(crate) fn analysis(&self) -> AnalysisRef<'_> {
        match self.analysis.adopted {
            Some(a) => AnalysisRef::Adopted(a),
            None => AnalysisRef::Own(alfred_score::analyze_at(
                &self.inputs.snap,
                &self.inputs.cfg.score_settings(),
                self.inputs.now,
            )),
        }
    }

    /// `snap.node(name)`, through the name index.
    pub(crate) fn node(&self, name: &str) -> Option<&Node> {
        self.node_position(name).map(|i| &self.inputs.snap.nodes[i])
    }

    /// The position in `snap.nodes` of [`Ctx::node`]'s answer. The snapshot is normalized
    /// (sorted by name, no duplicates), so positions order nodes by name and a position
    /// names exactly one node: plans and pricing compare positions instead of names.
    pub(crate) fn node_position(&self, name: &str) -> Option<usize> {
        let nodes = &self.inputs.snap.nodes;
        let (lo, hi) = self.caches.node_names.range(0, nodes.len(), name);
        nodes[lo..hi]
            .binary_search_by(|n| n.name.as_str().cmp(name))
            .ok()
            .map(|i| lo + i)
    }

    /// `snap.pod_by_key(key)`, through the name index.
    pub(crate) fn pod(&self, key: &str) -> Option<&Pod> {
        let (ns, name) = key.split_once('/')?;
        let pods = &self.inputs.snap.pods;
        let lookup = self.caches.pods.get_or_init(|| PodLookup::of(pods));
        let run = lookup
            .namespaces
            .binary_search_by(|(start, _)| pods[*start].namespace.as_str().cmp(ns))
            .ok()?;
        let (start, end) = lookup.namespaces[run];
        let (lo, hi) = lookup.names.range(start, end, name);
        pods[lo..hi]
            .binary_search_by(|p| p.name.as_str().cmp(name))
            .ok()
            .map(|i| &pods[lo + i])
    }

    /// The pool of a node with GPUs.
    pub(crate) fn pool_of(&self, node: &str) -> Option<&str> {
        self.node(node)
            .filter(|n| n.has_gpus())
            .and_then(|n| n.pool.as_deref())
    }

    /// GPUs held by an Instance per node (pods resolved through the snapshot).
    pub(crate) fn gpus_by_node(&self, pods: &[String]) -> BTreeMap<String, u64> {
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
    pub(crate) fn primary_node(&self, pods: &[String], fallback: Option<&Instance>) -> String {
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
    pub(crate) fn primary_pool(&self, pods: &[String]) -> Option<String> {
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
    pub(crate) fn instance_in_pool(&self, inst: &Instance, pool: &str) -> bool {
        !inst.nodes.is_empty() && inst.nodes.keys().all(|n| self.pool_of(n) == Some(pool))
    }

    /// The pool every node of the Instance is in, if there is one (and it has a node):
    /// `instance_in_pool(inst, p)` is `instance_pool(inst) == Some(p)`, so a pass resolves
    /// it once per Instance rather than once per Instance and pool (the pass reads it from
    /// the index: [`Ctx::instance_pool_at`]; this is the by-name form it is tested against).
    #[cfg(test)]
    pub(crate) fn instance_pool(&self, inst: &Instance) -> Option<&str> {
        let mut nodes = inst.nodes.keys();
        let first = self.pool_of(nodes.next()?)?;
        nodes
            .all(|n| self.pool_of(n) == Some(first))
            .then_some(first)
    }

    /// The pool every node of the Instance is in (the answer of the by-name form the tests
    /// hold it to), read from the snapshot's index (`idx` is `self.inputs.snap`'s, `facts` the
    /// Instance's entry), as a position in `idx.pools`: the Instance's node keys and each
    /// node's pool are resolved there, so neither a node nor a pool name is read (a walk
    /// resolves one per Instance per pass). Same answer: the index resolves a key to
    /// the node of that name, or to none, as [`Ctx::node`] does (the names are unique), and
    /// `idx.pools` is [`ClusterSnapshot::pools`], the pools of the nodes that
    /// [`Node::has_gpus`], with each such node's position in `idx.node_pool`.
    pub(crate) fn instance_pool_at(
        &self,
        idx: &SnapshotIndex,
        facts: &InstanceFacts,
    ) -> Option<usize> {
        let pool_of = |n: u32| {
            idx.node_pool
                .get(n as usize)
                .copied()
                .filter(|&p| p != NONE)
        };
        let mut nodes = idx.nodes_of(facts).iter();
        let first = pool_of(*nodes.next()?)?;
        nodes
            .all(|&n| pool_of(n) == Some(first))
            .then_some(first as usize)
    }

    /// [`Ctx::primary_node`] of an Instance's pods read from the snapshot's index (`idx` is
    /// `self.inputs.snap`'s, `facts` the Instance's entry): pods and their nodes come resolved, and
    /// node positions are name order (the snapshot is normalized, names unique), so "ties to
    /// the smallest name" is "ties to the smallest position". A GPU pod on a node the snapshot
    /// does not know (which the index cannot name) takes the by-name path. `inst` is read
    /// only by that path and for an Instance without GPU pods. A node of the snapshot comes
    /// as its position.
    pub(crate) fn primary_node_at(
        &self,
        idx: &SnapshotIndex,
        facts: &InstanceFacts,
        inst: InstanceRef<'_>,
    ) -> NodeRef {
        let by_pods = || {
            NodeRef::Name(
                inst.get()
                    .and_then(Instance::primary_node_by_pods)
                    .unwrap_or_default()
                    .to_owned(),
            )
        };
        // The common Instance: every GPU pod on one known node, which is then the primary
        // node (no per-node tally to build, one per Instance per pass otherwise).
        let mut only: Option<u32> = None;
        let mut one_node = true;
        for &pi in idx.pods_of(facts) {
            let Some(f) = idx.pods.get(pi as usize).filter(|f| f.gpus > 0) else {
                continue;
            };
            if f.node == NONE || only.is_some_and(|n| n != f.node) {
                one_node = false;
                break;
            }
            only = Some(f.node);
        }
        if one_node {
            return match only {
                Some(n) => NodeRef::Position(n),
                None => by_pods(),
            };
        }
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
                if self.inputs.snap.pods[pi as usize].node.is_empty() {
                    continue;
                }
                return NodeRef::Name(
                    inst.get()
                        .map(|i| self.primary_node(&i.pods, Some(i)))
                        .unwrap_or_default(),
                );
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
            Some((n, _)) => NodeRef::Position(n),
            None => by_pods(),
        }
    }

    /// `modelAdvisoryReason(w)` (docs/design-snapshot.md#models-and-volumes).
    pub(crate) fn model_reason(&self, w: &Workload) -> Option<AdvisoryReason> {
        alfred_score::model_block(&self.inputs.snap, w).map(advisory)
    }

    /// `allowedTargets(w)`: `None` = unconstrained.
    pub(crate) fn allowed_targets(&self, w: &Workload) -> Option<&BTreeSet<String>> {
        let model = w.model.as_ref()?;
        self.inputs
            .snap
            .models
            .get(&model.key())
            .and_then(|m| m.allowed_nodes.as_ref())
    }

    /// `inCooldown(w)` (docs/design-policies.md#cooldown-inside-the-policies).
    pub(crate) fn in_cooldown(&self, w: &Workload) -> bool {
        alfred_score::in_cooldown(
            w,
            self.inputs.cfg.per_workload_cooldown_minutes,
            self.inputs.now,
        )
    }

    /// The ordered target list of `pool` for workload `w` (built on first use).
    pub(crate) fn target_list(&self, pool: &str, w: &Workload) -> Rc<TargetList> {
        let avoid = self.avoid_spot(w);
        let allowed = self.allowed_targets(w);
        let key: TargetKey = (
            pool.to_owned(),
            avoid,
            allowed.and(w.model.as_ref()).map(|m| m.key()),
        );
        if let Some(list) = self.caches.targets.borrow().get(&key) {
            return Rc::clone(list);
        }
        let mut nodes: Vec<usize> = (0..self.inputs.snap.nodes.len())
            .filter(|i| {
                let n = &self.inputs.snap.nodes[*i];
                n.pool.as_deref() == Some(pool)
                    && n.has_gpus()
                    && !n.unavailable()
                    && !(avoid && n.preemptible)
                    && allowed.is_none_or(|a| a.contains(&n.name))
            })
            .collect();
        let node = |i: &usize| &self.inputs.snap.nodes[*i];
        nodes.sort_by(|a, b| {
            (node(a).free_gpus, &node(a).name).cmp(&(node(b).free_gpus, &node(b).name))
        });
        let free = nodes.iter().map(|i| node(i).free_gpus).collect();
        let list = Rc::new(TargetList { nodes, free });
        self.caches
            .targets
            .borrow_mut()
            .insert(key, Rc::clone(&list));
        list
    }

    /// Whether a node is preemptible and avoided as a target for this workload.
    pub(crate) fn avoid_spot(&self, w: &Workload) -> bool {
        self.inputs.cfg.avoid_spot_as_target || w.settings.spot_policy == SpotOverride::Avoid
    }

    /// `spotPrefersSource(w)` (docs/design-policies.md#boosts).
    pub(crate) fn spot_prefers_source(&self, w: &Workload) -> bool {
        match w.settings.spot_policy {
            SpotOverride::Migrate => true,
            SpotOverride::Ignore => false,
            SpotOverride::Default | SpotOverride::Avoid => self.inputs.cfg.prefer_spot_as_source,
        }
    }
}
