//! Flat lookup tables derived from a [`ClusterSnapshot`]: what the hot loops (the scorer's
//! walk over every Instance) would otherwise find by string — pod keys, node names, pool
//! keys, status strings — resolved once into `u32` indices and bit flags.
//!
//! The index is a pure function of the snapshot. It is built lazily by
//! [`ClusterSnapshot::index`] (every producer — `alfred_observe::observe`, JSON
//! deserialization, test builders — gets it the same way) and cached inside the snapshot in
//! an [`IndexCache`], which is never serialized, never compared and never cloned (a clone
//! starts without one). Staleness is guarded, not assumed away: the cache records the
//! address and length of every list it was built from and is ignored when any differs, any
//! `&mut self` method of the snapshot drops it, and debug builds (every test) rebuild the
//! index on each use and panic if the cached one differs — so editing an already indexed
//! snapshot in place without [`ClusterSnapshot::invalidate_index`] is caught by the tests.
//!
//! Lookups reproduce the string semantics exactly: a duplicate node name or pod key resolves
//! to the first one in input order, an empty or unknown name to [`NONE`].

use std::cmp::Ordering;
use std::sync::{Arc, OnceLock};

mod names;
mod pod_finder;

pub use names::NameArena;
use names::NameIndex;
pub use pod_finder::PodFinder;

use crate::normalized::NormalizedCache;
use crate::snapshot::{
    ClusterSnapshot, Component, ComponentKind, DeploymentMode, Instance, Pod, Workload,
};

/// "No such node / pod / pool".
pub const NONE: u32 = u32::MAX;

/// Pod flag: the `Ready` condition is `True`.
pub const POD_READY: u8 = 1;
/// Pod flag: deletion timestamp set.
pub const POD_TERMINATING: u8 = 2;

/// Instance flag: the status row's `phase` is exactly `Ready`.
pub const INSTANCE_PHASE_READY: u8 = 1;
/// Instance flag: the status row's `runningRevision` is non-empty and equals the
/// component's InferenceReplica `currentRevision`, and `targetRevision` is empty.
pub const INSTANCE_REVISION_CURRENT: u8 = 2;
/// Instance flag: its pods are as a surge plan reads them. Every `pods` key names a bound
/// pod of the workload's namespace, with a name, on a known node; per node, the pods are as
/// many as `nodes` says (its keys resolved, in key order); their GPUs add up to
/// `totalGPUs`; at least one asks GPUs. The checks read each pod's strings, so they are
/// made once per snapshot (and carried with the workload) instead of on every walk.
pub const INSTANCE_PODS_CONSISTENT: u8 = 4;

/// Instance flag: it has a status row, and the row is valid (no `invalid`).
pub const INSTANCE_OBSERVED: u8 = 8;
/// Instance flag: the status row says admitted, with no operation under way.
pub const INSTANCE_ADMITTED_IDLE: u8 = 16;
/// Instance flag: the status row's desired pod count is positive, and its status, observed,
/// ready, serving and available counts and the Instance's pod keys all number as many.
pub const INSTANCE_COUNTS_MATCH: u8 = 32;
/// Instance flag: one of its pods is terminating (`anyTerminating`).
pub const INSTANCE_TERMINATING: u8 = 64;

/// Component flag: the InferenceReplica's `currentRevision` and `updateRevision` are
/// non-empty and equal.
pub const COMPONENT_REVISIONS_SETTLED: u8 = 1;
/// Component flag: it has an InferenceReplica whose status is fresh, and its observation is
/// valid.
pub const COMPONENT_OBSERVED: u8 = 2;
/// Component flag: the InferenceReplica is neither paused nor opted out of migration.
pub const COMPONENT_NOT_HELD: u8 = 4;
/// Component flag: the desired replica count is positive, the component has that many
/// Instances, and the replica, ready, serving, available, updated and updated-ready counts
/// all equal it.
pub const COMPONENT_COUNTS_MATCH: u8 = 8;
/// Component flag: deployment mode OMENative.
pub const COMPONENT_OMENATIVE: u8 = 16;

/// The [`SnapshotIndex::component_flags`] entry of `c`: what the eligibility ladder reads of
/// a component, once per snapshot (carried with the workload) instead of from the component
/// itself in every reader of every pass.
pub fn component_facts(c: &Component) -> u8 {
    let mut flags = 0;
    if c.mode == DeploymentMode::OMENative {
        flags |= COMPONENT_OMENATIVE;
    }
    let Some(r) = c.replica.as_ref() else {
        return flags;
    };
    if !r.current_revision.is_empty() && r.current_revision == r.update_revision {
        flags |= COMPONENT_REVISIONS_SETTLED;
    }
    if r.status_fresh && c.observation_invalid.is_none() {
        flags |= COMPONENT_OBSERVED;
    }
    if !r.paused && !r.migration_never {
        flags |= COMPONENT_NOT_HELD;
    }
    let desired = r.desired_replicas;
    let counts = [
        r.replicas,
        r.ready_replicas,
        r.serving_replicas,
        r.available_replicas,
        r.updated_replicas,
        r.updated_ready_replicas,
    ];
    if desired > 0
        && i64::try_from(c.instances.len()).ok() == Some(desired)
        && counts.iter().all(|n| *n == desired)
    {
        flags |= COMPONENT_COUNTS_MATCH;
    }
    flags
}

/// The status flags of an [`InstanceFacts`] entry of `inst`, a component's Instance whose
/// InferenceReplica's `currentRevision` is `current_revision` (empty without one): all but
/// [`INSTANCE_PODS_CONSISTENT`], which reads the pods.
pub fn instance_facts(inst: &Instance, current_revision: &str) -> u8 {
    let mut flags = 0;
    if inst.any_terminating {
        flags |= INSTANCE_TERMINATING;
    }
    let Some(st) = &inst.status else {
        return flags;
    };
    if st.phase == "Ready" {
        flags |= INSTANCE_PHASE_READY;
    }
    if !st.running_revision.is_empty()
        && st.running_revision == current_revision
        && st.target_revision.is_empty()
    {
        flags |= INSTANCE_REVISION_CURRENT;
    }
    if st.invalid.is_none() {
        flags |= INSTANCE_OBSERVED;
    }
    if st.admitted && st.operation.is_none() {
        flags |= INSTANCE_ADMITTED_IDLE;
    }
    let desired = st.desired_pods;
    let live = i64::try_from(inst.pods.len()).unwrap_or(i64::MAX);
    let counts = [
        st.status_pods,
        st.observed_pods,
        live,
        st.ready_pods,
        st.serving_pods,
        st.available_pods,
    ];
    if desired > 0 && counts.iter().all(|n| *n == desired) {
        flags |= INSTANCE_COUNTS_MATCH;
    }
    flags
}

/// One bound pod (`ClusterSnapshot::pods`, same position).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodFacts {
    /// Index of `spec.nodeName` in `ClusterSnapshot::nodes`, [`NONE`] when empty or unknown.
    pub node: u32,
    /// `Pod::gpus`.
    pub gpus: u32,
    /// [`POD_READY`], [`POD_TERMINATING`].
    pub flags: u8,
}

/// One Instance, in walk order (workloads, their components, their Instances, each as
/// stored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InstanceFacts {
    /// `pods[start..end]` of [`SnapshotIndex::instance_pods`].
    pub pods: (u32, u32),
    /// `nodes[start..end]` of [`SnapshotIndex::instance_nodes`].
    pub nodes: (u32, u32),
    /// [`instance_facts`] and [`INSTANCE_PODS_CONSISTENT`].
    pub flags: u8,
    /// `Instance::total_gpus`.
    pub total_gpus: u32,
    /// `Instance::index`.
    pub index: u32,
}

/// One component, in walk order ([`SnapshotIndex::component`]): what a reader needs of it
/// without reading the component, whose first reading is a cache miss per component per
/// pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ComponentFacts {
    /// [`component_facts`].
    pub flags: u8,
    /// `Component::kind`.
    pub kind: ComponentKind,
    /// How many Instances it has.
    pub instances: usize,
}

/// The flat tables of one snapshot (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SnapshotIndex {
    fingerprint: Fingerprint,
    /// Node indices in name order (ties: input order); the identity when sorted.
    pub nodes_by_name: Vec<u32>,
    /// The sorted set of pool keys of nodes with GPUs ([`ClusterSnapshot::pools`]).
    pub pools: Vec<String>,
    /// Per node: its position in [`SnapshotIndex::pools`] when it has GPUs, else [`NONE`].
    pub node_pool: Vec<u32>,
    /// Per bound pod.
    pub pods: Vec<PodFacts>,
    /// Pending pod indices ordered by `(namespace, name, pendingSince, gpusNeeded)`, ties by
    /// input order.
    pub pending_order: Vec<u32>,
    /// Per workload: where its entries start in [`SnapshotIndex::component_flags`] and
    /// [`SnapshotIndex::instances`] (what [`SnapshotIndex::carry_over`] copies).
    workload_starts: Vec<(u32, u32)>,
    /// Per component, in walk order: [`component_facts`].
    pub component_flags: Vec<u8>,
    /// Per component, in walk order: how many Instances it has (its entries in
    /// [`SnapshotIndex::instances`] follow its predecessors').
    pub component_instances: Vec<u32>,
    /// Per component, in walk order: its kind.
    pub component_kinds: Vec<ComponentKind>,
    /// Per Instance, in walk order.
    pub instances: Vec<InstanceFacts>,
    /// Pod indices of the Instances' `pods` keys, in each Instance's order ([`NONE`] for a
    /// key with no bound pod).
    pub instance_pods: Vec<u32>,
    /// Node indices of the Instances' `nodes` keys, in key order ([`NONE`] when unknown).
    pub instance_nodes: Vec<u32>,
    /// The workloads' keys, by position (shared: a pass's counted advice keeps them).
    pub workload_keys: Arc<NameArena>,
    /// The nodes' names, by position (shared, as the workloads' keys).
    pub node_names: Arc<NameArena>,
    /// Whether the pending pods are in key order (part of
    /// [`ClusterSnapshot::is_normalized`]'s answer, read with the pending order).
    pub(crate) pending_normalized: bool,
    /// [`ClusterSnapshot::is_normalized`]'s answer for the lists the index covers, once
    /// known (a cache: not compared).
    pub(crate) normalized: NormalizedCache,
}

/// Where and how long each list was when the index was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Fingerprint([(usize, usize); 4]);

impl Fingerprint {
    fn of(s: &ClusterSnapshot) -> Self {
        fn at<T>(v: &[T]) -> (usize, usize) {
            (v.as_ptr() as usize, v.len())
        }
        Fingerprint([
            at(&s.nodes),
            at(&s.pods),
            at(&s.pending_pods),
            at(&s.workloads),
        ])
    }
}

/// The lazily built [`SnapshotIndex`] of a snapshot. Not part of its value: it is skipped by
/// serde, equal to every other cache, and a clone starts empty.
#[derive(Default)]
pub struct IndexCache(OnceLock<SnapshotIndex>);

impl IndexCache {
    /// Drops the cached index.
    pub fn clear(&mut self) {
        self.0 = OnceLock::new();
    }

    /// Whether an index is cached.
    pub fn is_built(&self) -> bool {
        self.0.get().is_some()
    }
}

impl Clone for IndexCache {
    fn clone(&self) -> Self {
        IndexCache::default()
    }
}

impl PartialEq for IndexCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for IndexCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_built() {
            "IndexCache(built)"
        } else {
            "IndexCache(empty)"
        })
    }
}

/// A snapshot's index: the cached one, or one built for this use.
pub enum IndexRef<'s> {
    /// The cached index.
    Cached(&'s SnapshotIndex),
    /// Built for this use (the cache did not match the snapshot).
    Fresh(Box<SnapshotIndex>),
}

impl std::ops::Deref for IndexRef<'_> {
    type Target = SnapshotIndex;
    fn deref(&self) -> &SnapshotIndex {
        match self {
            IndexRef::Cached(i) => i,
            IndexRef::Fresh(i) => i,
        }
    }
}

impl ClusterSnapshot {
    /// The snapshot's flat index ([`SnapshotIndex`]), built on first use and cached.
    ///
    /// # Panics
    ///
    /// In debug builds only, when the cached index no longer matches the snapshot (it was
    /// edited in place after indexing without [`ClusterSnapshot::invalidate_index`]).
    pub fn index(&self) -> IndexRef<'_> {
        let fp = Fingerprint::of(self);
        let cached = self
            .index_cache
            .0
            .get_or_init(|| SnapshotIndex::build(self));
        if cached.fingerprint != fp {
            return IndexRef::Fresh(Box::new(SnapshotIndex::build(self)));
        }
        #[cfg(debug_assertions)]
        {
            let fresh = SnapshotIndex::build(self);
            assert!(
                *cached == fresh,
                "ClusterSnapshot edited in place after its index was built; \
                 call invalidate_index() after editing"
            );
        }
        IndexRef::Cached(cached)
    }

    /// The cached index when there is one and it still matches the snapshot's lists (no
    /// build: for readers that only save work with it).
    pub(crate) fn cached_index(&self) -> Option<&SnapshotIndex> {
        let fp = Fingerprint::of(self);
        self.index_cache.0.get().filter(|i| i.fingerprint == fp)
    }

    /// Drops the cached index (after editing the snapshot in place).
    pub fn invalidate_index(&mut self) {
        self.index_cache.clear();
    }

    /// Takes the cached index out, when there is one and it still matches the snapshot's
    /// lists (the start of an in-place edit that means to carry it over with
    /// [`SnapshotIndex::carry_over`]); the snapshot is left without one.
    pub fn take_index(&mut self) -> Option<SnapshotIndex> {
        let fp = Fingerprint::of(self);
        std::mem::take(&mut self.index_cache.0)
            .into_inner()
            .filter(|i| i.fingerprint == fp)
    }

    /// Caches `index` as the snapshot's index (one made by [`SnapshotIndex::carry_over`]
    /// for the snapshot as it is now); it is stamped with the snapshot's lists, so it is
    /// ignored once any is replaced or resized.
    ///
    /// # Panics
    ///
    /// In debug builds only, when `index` differs from a full [`SnapshotIndex::build`].
    pub fn install_index(&mut self, mut index: SnapshotIndex) {
        index.fingerprint = Fingerprint::of(self);
        #[cfg(debug_assertions)]
        {
            assert!(
                index == SnapshotIndex::build(self),
                "the installed index differs from a full build of the snapshot"
            );
            if let Some(&carried) = index.normalized.0.get() {
                assert_eq!(
                    carried,
                    self.indexed_lists_normalized(),
                    "the installed index's normalization answer differs from a full check"
                );
            }
        }
        self.index_cache.0 = OnceLock::from(index);
    }
}

fn cmp_pod(p: &Pod, ns: &str, name: &str) -> Ordering {
    (p.namespace.as_str(), p.name.as_str()).cmp(&(ns, name))
}

/// Indices of `items` sorted by `cmp`, ties by index; the identity when already sorted.
fn sorted_order<T>(items: &[T], cmp: impl Fn(&T, &T) -> Ordering) -> Vec<u32> {
    let mut order: Vec<u32> = (0..items.len() as u32).collect();
    if !items
        .windows(2)
        .all(|w| cmp(&w[0], &w[1]) != Ordering::Greater)
    {
        order.sort_by(|a, b| cmp(&items[*a as usize], &items[*b as usize]).then(a.cmp(b)));
    }
    order
}

/// The node tables of an index and the name lookup the other tables are resolved with.
struct NodeTables {
    nodes_by_name: Vec<u32>,
    names: NameIndex,
    pools: Vec<String>,
    node_pool: Vec<u32>,
}

impl NodeTables {
    fn of(nodes: &[crate::snapshot::Node]) -> NodeTables {
        let nodes_by_name = sorted_order(nodes, |a, b| a.name.cmp(&b.name));
        let names = NameIndex::new(nodes.iter().map(|n| n.name.as_str()));
        let mut pools: Vec<String> = Vec::new();
        for n in nodes.iter().filter(|n| n.has_gpus()) {
            let p = n.pool.as_deref().unwrap_or("");
            if pools.last().map(String::as_str) != Some(p)
                && let Err(pos) = pools.binary_search_by(|x| x.as_str().cmp(p))
            {
                pools.insert(pos, p.to_owned());
            }
        }
        let node_pool = nodes
            .iter()
            .map(|n| {
                if n.has_gpus() {
                    let p = n.pool.as_deref().unwrap_or("");
                    pools
                        .binary_search_by(|x| x.as_str().cmp(p))
                        .map(|i| i as u32)
                        .unwrap_or(NONE)
                } else {
                    NONE
                }
            })
            .collect();
        NodeTables {
            nodes_by_name,
            names,
            pools,
            node_pool,
        }
    }

    fn node_of(&self, name: &str) -> u32 {
        self.names.get(name).map_or(NONE, |i| i as u32)
    }
}

/// The facts of one bound pod whose node resolved to `node`.
fn pod_facts(p: &Pod, node: u32) -> PodFacts {
    PodFacts {
        node,
        gpus: p.gpus,
        flags: if p.ready { POD_READY } else { 0 }
            | if p.terminating { POD_TERMINATING } else { 0 },
    }
}

/// [`INSTANCE_PODS_CONSISTENT`] for Instance `inst` of `w`, whose pod keys resolved to
/// `pods_ix` and node keys to `nodes_ix` (each at least as long as the Instance's lists).
fn pods_consistent(
    w: &Workload,
    inst: &crate::snapshot::Instance,
    pods_ix: &[u32],
    nodes_ix: &[u32],
    pods: &[Pod],
    facts: &[PodFacts],
) -> bool {
    // (node, pods), ascending by node.
    let mut counts: Vec<(u32, u32)> = Vec::with_capacity(2);
    let mut total: u64 = 0;
    let mut asks_gpus = false;
    for &pi in pods_ix.iter().take(inst.pods.len()) {
        let (Some(p), Some(f)) = (pods.get(pi as usize), facts.get(pi as usize)) else {
            return false;
        };
        if p.namespace != w.namespace || p.name.is_empty() || p.node.is_empty() || f.node == NONE {
            return false;
        }
        match counts.binary_search_by(|(n, _)| n.cmp(&f.node)) {
            Ok(i) => counts[i].1 += 1,
            Err(i) => counts.insert(i, (f.node, 1)),
        }
        total += u64::from(p.gpus);
        asks_gpus |= p.gpus > 0;
    }
    asks_gpus
        && pods_ix.len() >= inst.pods.len()
        && total == u64::from(inst.total_gpus)
        && counts.iter().copied().eq(nodes_ix
            .iter()
            .take(inst.nodes.len())
            .copied()
            .zip(inst.nodes.values().copied()))
}

/// The workload tables under construction: per component, per Instance, and where each
/// workload's entries start.
#[derive(Default)]
struct WorkloadTables {
    workload_starts: Vec<(u32, u32)>,
    workload_keys: NameArena,
    component_flags: Vec<u8>,
    component_instances: Vec<u32>,
    component_kinds: Vec<ComponentKind>,
    instances: Vec<InstanceFacts>,
    instance_pods: Vec<u32>,
    instance_nodes: Vec<u32>,
}

impl WorkloadTables {
    fn with_capacity(prev: &SnapshotIndex, workloads: usize) -> WorkloadTables {
        WorkloadTables {
            workload_starts: Vec::with_capacity(workloads),
            workload_keys: NameArena::with_capacity(prev.workload_keys.text_len(), workloads),
            component_flags: Vec::with_capacity(prev.component_flags.len()),
            component_instances: Vec::with_capacity(prev.component_instances.len()),
            component_kinds: Vec::with_capacity(prev.component_kinds.len()),
            instances: Vec::with_capacity(prev.instances.len()),
            instance_pods: Vec::with_capacity(prev.instance_pods.len()),
            instance_nodes: Vec::with_capacity(prev.instance_nodes.len()),
        }
    }

    fn start_workload(&mut self) {
        self.workload_starts.push((
            self.component_flags.len() as u32,
            self.instances.len() as u32,
        ));
    }

    /// Resolves one workload's components and Instances.
    fn push(
        &mut self,
        w: &Workload,
        nodes: &NodeTables,
        pod_facts: &[PodFacts],
        finder: &mut PodFinder<'_>,
    ) {
        self.start_workload();
        self.workload_keys.push(&w.namespace, &w.name);
        for c in &w.components {
            let current = c
                .replica
                .as_ref()
                .map(|r| r.current_revision.as_str())
                .unwrap_or("");
            self.component_flags.push(component_facts(c));
            self.component_instances
                .push(u32::try_from(c.instances.len()).unwrap_or(u32::MAX));
            self.component_kinds.push(c.kind);
            for inst in &c.instances {
                let p0 = self.instance_pods.len() as u32;
                self.instance_pods
                    .extend(inst.pods.iter().map(|k| finder.find(k)));
                let n0 = self.instance_nodes.len() as u32;
                self.instance_nodes
                    .extend(inst.nodes.keys().map(|k| nodes.node_of(k)));
                let mut flags = instance_facts(inst, current);
                if pods_consistent(
                    w,
                    inst,
                    &self.instance_pods[p0 as usize..],
                    &self.instance_nodes[n0 as usize..],
                    finder.pods,
                    pod_facts,
                ) {
                    flags |= INSTANCE_PODS_CONSISTENT;
                }
                self.instances.push(InstanceFacts {
                    pods: (p0, self.instance_pods.len() as u32),
                    nodes: (n0, self.instance_nodes.len() as u32),
                    flags,
                    total_gpus: inst.total_gpus,
                    index: inst.index,
                });
            }
        }
    }

    /// Copies workload `old` of `prev`'s tables, its pod indices renumbered by `pod_to`
    /// (earlier pod position → position now).
    fn carry(&mut self, prev: &SnapshotIndex, old: usize, pod_to: &[u32]) {
        self.start_workload();
        self.workload_keys.push_from(&prev.workload_keys, old);
        let (c0, i0) = prev.workload_starts[old];
        let (c1, i1) = prev.workload_starts.get(old + 1).copied().unwrap_or((
            prev.component_flags.len() as u32,
            prev.instances.len() as u32,
        ));
        self.component_flags
            .extend_from_slice(&prev.component_flags[c0 as usize..c1 as usize]);
        self.component_instances
            .extend_from_slice(&prev.component_instances[c0 as usize..c1 as usize]);
        self.component_kinds
            .extend_from_slice(&prev.component_kinds[c0 as usize..c1 as usize]);
        for f in &prev.instances[i0 as usize..i1 as usize] {
            let p0 = self.instance_pods.len() as u32;
            self.instance_pods.extend(
                prev.pods_of(f)
                    .iter()
                    .map(|&p| pod_to.get(p as usize).copied().unwrap_or(NONE)),
            );
            let n0 = self.instance_nodes.len() as u32;
            self.instance_nodes.extend_from_slice(prev.nodes_of(f));
            self.instances.push(InstanceFacts {
                pods: (p0, self.instance_pods.len() as u32),
                nodes: (n0, self.instance_nodes.len() as u32),
                ..*f
            });
        }
    }
}

fn pending_order(pending: &[crate::snapshot::PendingPod]) -> Vec<u32> {
    sorted_order(pending, |x, y| {
        (&x.namespace, &x.name, x.pending_since, x.gpus_needed).cmp(&(
            &y.namespace,
            &y.name,
            y.pending_since,
            y.gpus_needed,
        ))
    })
}

impl SnapshotIndex {
    /// Builds the index of a snapshot (any list order).
    pub fn build(s: &ClusterSnapshot) -> Self {
        let nodes = NodeTables::of(&s.nodes);
        let pods = &s.pods;
        // Pods of one Instance usually share a node: try the previous pod's node first.
        let mut last: (&str, u32) = ("", NONE);
        let pod_facts: Vec<PodFacts> = pods
            .iter()
            .map(|p| {
                let node = if p.node.is_empty() {
                    NONE
                } else if p.node == last.0 {
                    last.1
                } else {
                    let i = nodes.node_of(&p.node);
                    last = (p.node.as_str(), i);
                    i
                };
                pod_facts(p, node)
            })
            .collect();
        let mut finder = PodFinder::new(pods);
        let mut tables = WorkloadTables::default();
        for w in &s.workloads {
            tables.push(w, &nodes, &pod_facts, &mut finder);
        }
        let mut node_names = NameArena::default();
        for n in &s.nodes {
            node_names.push_key(&n.name);
        }
        SnapshotIndex::assemble(s, nodes, Arc::new(node_names), pod_facts, tables)
    }

    fn assemble(
        s: &ClusterSnapshot,
        nodes: NodeTables,
        node_names: Arc<NameArena>,
        pods: Vec<PodFacts>,
        tables: WorkloadTables,
    ) -> SnapshotIndex {
        SnapshotIndex {
            fingerprint: Fingerprint::of(s),
            nodes_by_name: nodes.nodes_by_name,
            pools: nodes.pools,
            node_pool: nodes.node_pool,
            pods,
            pending_order: pending_order(&s.pending_pods),
            pending_normalized: s.pending_normalized(),
            workload_starts: tables.workload_starts,
            workload_keys: Arc::new(tables.workload_keys),
            node_names,
            component_flags: tables.component_flags,
            component_instances: tables.component_instances,
            component_kinds: tables.component_kinds,
            instances: tables.instances,
            instance_pods: tables.instance_pods,
            instance_nodes: tables.instance_nodes,
            normalized: NormalizedCache::default(),
        }
    }

    /// The index of `s`, a later version of the snapshot `prev` indexes, reusing what did
    /// not change: the equal of [`SnapshotIndex::build`]`(s)` at a fraction of the cost
    /// when few entries changed (a simulator that edits its snapshot between passes
    /// rebuilt every pod's and Instance's lookups, all by string, on every pass).
    ///
    /// `pods_from[i]` is the position in the earlier list of `s.pods[i]` when it is
    /// unchanged, else [`NONE`]; `workloads_from` likewise for `s.workloads`. What the
    /// caller vouches for (nothing here can check it without the earlier snapshot): the
    /// nodes' names and order are unchanged; a carried pod has the same namespace, name,
    /// node, GPUs, readiness and termination as before; a carried workload is unchanged
    /// and each of its pod keys names the same pod as before (a carried one), or none when
    /// it named none. Everything else is resolved afresh, as [`SnapshotIndex::build`]
    /// does. Debug builds check the result against a full build when it is installed
    /// ([`ClusterSnapshot::install_index`]) and on every use.
    pub fn carry_over(
        prev: &SnapshotIndex,
        s: &ClusterSnapshot,
        pods_from: &[u32],
        workloads_from: &[u32],
    ) -> SnapshotIndex {
        let nodes = NodeTables::of(&s.nodes);
        let mut pod_to = vec![NONE; prev.pods.len()];
        let pod_facts: Vec<PodFacts> = s
            .pods
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let old = pods_from.get(i).copied().unwrap_or(NONE);
                match prev.pods.get(old as usize) {
                    Some(f) => {
                        pod_to[old as usize] = i as u32;
                        *f
                    }
                    None if p.node.is_empty() => pod_facts(p, NONE),
                    None => pod_facts(p, nodes.node_of(&p.node)),
                }
            })
            .collect();
        let mut finder = PodFinder::new(&s.pods);
        let mut tables = WorkloadTables::with_capacity(prev, s.workloads.len());
        for (i, w) in s.workloads.iter().enumerate() {
            let old = workloads_from.get(i).copied().unwrap_or(NONE) as usize;
            if old < prev.workload_starts.len() {
                tables.carry(prev, old, &pod_to);
            } else {
                tables.push(w, &nodes, &pod_facts, &mut finder);
            }
        }
        let normalized = NormalizedCache::carried(&prev.normalized, s, pods_from, workloads_from);
        // The node names are as before (the caller vouches for it).
        debug_assert!(
            prev.node_names.len() == s.nodes.len()
                && (0..s.nodes.len())
                    .all(|i| prev.node_names.get(i) == Some(s.nodes[i].name.as_str())),
            "carry_over: the nodes' names or order changed"
        );
        SnapshotIndex {
            normalized,
            ..SnapshotIndex::assemble(s, nodes, prev.node_names.clone(), pod_facts, tables)
        }
    }

    /// Heap bytes of the tables, split as `(per-node tables, per-pod tables, the rest)`:
    /// node order, pools and names; pod facts; pending order, component and Instance tables.
    pub fn heap_bytes(&self) -> (usize, usize, usize) {
        fn b<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        let nodes = b(&self.nodes_by_name)
            + b(&self.node_pool)
            + b(&self.pools)
            + self.pools.iter().map(String::capacity).sum::<usize>()
            + self.node_names.heap_bytes();
        let pods = b(&self.pods);
        let rest = b(&self.pending_order)
            + b(&self.workload_starts)
            + b(&self.component_flags)
            + b(&self.component_instances)
            + b(&self.component_kinds)
            + b(&self.instances)
            + b(&self.instance_pods)
            + b(&self.instance_nodes)
            + self.workload_keys.heap_bytes();
        (nodes, pods, rest)
    }

    /// The pod indices of an Instance.
    pub fn pods_of(&self, i: &InstanceFacts) -> &[u32] {
        self.instance_pods
            .get(i.pods.0 as usize..i.pods.1 as usize)
            .unwrap_or_default()
    }

    /// The node indices of an Instance's `nodes` keys.
    pub fn nodes_of(&self, i: &InstanceFacts) -> &[u32] {
        self.instance_nodes
            .get(i.nodes.0 as usize..i.nodes.1 as usize)
            .unwrap_or_default()
    }

    /// Component `k` (in walk order); past the last component, one with no flags and no
    /// Instances.
    pub fn component(&self, k: usize) -> ComponentFacts {
        ComponentFacts {
            flags: self.component_flags.get(k).copied().unwrap_or(0),
            kind: self
                .component_kinds
                .get(k)
                .copied()
                .unwrap_or(ComponentKind::Engine),
            instances: self.component_instances.get(k).copied().unwrap_or(0) as usize,
        }
    }
}

#[cfg(test)]
mod tests;
