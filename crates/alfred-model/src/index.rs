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

/// Strings by position, in one arena: the workloads' keys (`namespace/name`, by position in
/// `ClusterSnapshot::workloads`), the nodes' names (by position in `ClusterSnapshot::nodes`).
/// Why: the defragmentation walk counts thousands of advice rows a pass and names each
/// row's workload and source node by position; a key built per row read two cold strings
/// per row, about a tenth of a pass on the trace cluster, and a node name copied per row
/// was an allocation per row. Carried over like the other tables, the workloads' arena is
/// copied, not rebuilt from the workloads, and the nodes' is shared.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NameArena {
    text: String,
    /// Per position: where its string ends in `text`.
    ends: Vec<u32>,
}

impl NameArena {
    /// The string at `position`.
    pub fn get(&self, position: usize) -> Option<&str> {
        let end = *self.ends.get(position)? as usize;
        let start = match position {
            0 => 0,
            p => self.ends[p - 1] as usize,
        };
        self.text.get(start..end)
    }

    /// How many strings there are.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Appends `key` as the next string.
    pub fn push_key(&mut self, key: &str) {
        self.text.push_str(key);
        self.ends.push(self.text.len() as u32);
    }

    /// Appends `namespace/name` as the next key.
    fn push(&mut self, namespace: &str, name: &str) {
        self.text.push_str(namespace);
        self.text.push('/');
        self.text.push_str(name);
        self.ends.push(self.text.len() as u32);
    }

    /// Appends `other`'s key at `position` (an empty key when there is none).
    fn push_from(&mut self, other: &NameArena, position: usize) {
        self.text.push_str(other.get(position).unwrap_or(""));
        self.ends.push(self.text.len() as u32);
    }
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
            workload_keys: NameArena {
                text: String::with_capacity(prev.workload_keys.text.len()),
                ends: Vec::with_capacity(workloads),
            },
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
            + self.node_names.text.capacity()
            + b(&self.node_names.ends);
        let pods = b(&self.pods);
        let rest = b(&self.pending_order)
            + b(&self.workload_starts)
            + b(&self.component_flags)
            + b(&self.component_instances)
            + b(&self.component_kinds)
            + b(&self.instances)
            + b(&self.instance_pods)
            + b(&self.instance_nodes)
            + self.workload_keys.text.capacity()
            + b(&self.workload_keys.ends);
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

/// Node name → index, as an open-addressing table with a fixed hash (no `HashMap`: the
/// table is only probed, never iterated, so no output can depend on hash order). The names
/// are copied into one contiguous arena and each slot carries the name's place in it, so a
/// probe touches one table slot and one arena range rather than the node structs.
///
/// With duplicate names the first one in input order wins (Kubernetes names are unique).
struct NameIndex {
    table: Vec<Slot>,
    mask: usize,
    arena: Vec<u8>,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    /// High 32 bits of the hash.
    tag: u32,
    /// Node index + 1; 0 = empty.
    index: u32,
    /// The name's range in the arena.
    start: u32,
    len: u32,
}

impl NameIndex {
    fn new<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> Self {
        let n = names.len();
        let size = (n * 2).next_power_of_two().max(16);
        let mut index = NameIndex {
            table: vec![Slot::default(); size],
            mask: size - 1,
            arena: Vec::new(),
        };
        for (i, name) in names.enumerate() {
            let (Ok(start), Ok(len), Ok(idx)) = (
                u32::try_from(index.arena.len()),
                u32::try_from(name.len()),
                u32::try_from(i + 1),
            ) else {
                break; // beyond 4 GiB of names: not a cluster this index serves
            };
            let h = hash(name.as_bytes());
            let tag = (h >> 32) as u32;
            let mut slot = (h as usize) & index.mask;
            loop {
                let entry = index.table[slot];
                if entry.index == 0 {
                    index.arena.extend_from_slice(name.as_bytes());
                    index.table[slot] = Slot {
                        tag,
                        index: idx,
                        start,
                        len,
                    };
                    break;
                }
                if entry.tag == tag && index.name(entry) == name.as_bytes() {
                    break; // duplicate: keep the first
                }
                slot = (slot + 1) & index.mask;
            }
        }
        index
    }

    #[inline]
    fn name(&self, s: Slot) -> &[u8] {
        let start = s.start as usize;
        self.arena
            .get(start..start + s.len as usize)
            .unwrap_or_default()
    }

    fn get(&self, name: &str) -> Option<usize> {
        let h = hash(name.as_bytes());
        let tag = (h >> 32) as u32;
        let mut slot = (h as usize) & self.mask;
        loop {
            let entry = self.table[slot];
            if entry.index == 0 {
                return None;
            }
            if entry.tag == tag
                && entry.len as usize == name.len()
                && self.name(entry) == name.as_bytes()
            {
                return Some(entry.index as usize - 1);
            }
            slot = (slot + 1) & self.mask;
        }
    }
}

/// A fixed 64-bit string hash (word-at-a-time multiply–rotate, murmur3 finaliser).
fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h: u64 = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

/// Bound pods by `namespace/name` key over their key order, galloping from the previous
/// hit: Instances list their pods roughly in pod order (workloads are sorted and pods are
/// named after them), so a lookup costs O(log distance) rather than O(log n). A duplicate
/// key resolves to its first pod in input order.
///
/// The pods are assumed sorted (as [`ClusterSnapshot::normalize`] leaves them) until a key
/// is not found: a hit is exact whatever the order, so only a miss can come from an
/// unsorted list. On the first miss the order is checked once and, when unsorted, a sorted
/// permutation is built and the lookup retried.
pub struct PodFinder<'s> {
    pods: &'s [Pod],
    /// Key order, when the pods are not sorted.
    order: Option<Vec<u32>>,
    verified: bool,
    hint: usize,
}

impl<'s> PodFinder<'s> {
    /// A finder over `pods` (a snapshot's bound pods, in any order).
    pub fn new(pods: &'s [Pod]) -> PodFinder<'s> {
        PodFinder {
            pods,
            order: None,
            verified: false,
            hint: 0,
        }
    }

    /// The position in `pods` of the pod with this `namespace/name` key.
    pub fn position(&mut self, key: &str) -> Option<usize> {
        match self.find(key) {
            NONE => None,
            i => Some(i as usize),
        }
    }

    #[inline]
    fn at(&self, i: usize) -> usize {
        match &self.order {
            None => i,
            Some(o) => o[i] as usize,
        }
    }

    #[inline]
    fn cmp_at(&self, i: usize, ns: &str, name: &str) -> Ordering {
        cmp_pod(&self.pods[self.at(i)], ns, name)
    }

    fn find(&mut self, key: &str) -> u32 {
        match self.search(key) {
            NONE if !self.verified => {
                self.verified = true;
                let order = sorted_order(self.pods, |a, b| cmp_pod(a, &b.namespace, &b.name));
                if order.iter().enumerate().any(|(k, i)| k != *i as usize) {
                    self.order = Some(order);
                    self.hint = 0;
                    self.search(key)
                } else {
                    NONE
                }
            }
            found => found,
        }
    }

    /// First position in `[lo, hi)` whose pod is not less than the key.
    fn lower_bound(&self, mut lo: usize, mut hi: usize, ns: &str, name: &str) -> usize {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.cmp_at(mid, ns, name) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    fn search(&mut self, key: &str) -> u32 {
        let Some((ns, name)) = key.split_once('/') else {
            return NONE;
        };
        let n = self.pods.len();
        if n == 0 {
            return NONE;
        }
        let h = self.hint.min(n - 1);
        let pos = match self.cmp_at(h, ns, name) {
            // The first pod not less than the key is at or before the hint (a run of
            // duplicates may start before it).
            Ordering::Equal | Ordering::Greater => {
                let mut hi = h;
                let mut step = 1usize;
                let lo = loop {
                    if step > h {
                        break 0;
                    }
                    let probe = h - step;
                    if self.cmp_at(probe, ns, name) == Ordering::Less {
                        break probe + 1;
                    }
                    hi = probe;
                    step = step.saturating_mul(2);
                };
                self.lower_bound(lo, hi, ns, name)
            }
            Ordering::Less => {
                let mut lo = h + 1;
                let mut step = 1usize;
                let hi = loop {
                    let probe = h.saturating_add(step);
                    if probe >= n {
                        break n;
                    }
                    if self.cmp_at(probe, ns, name) != Ordering::Less {
                        break probe + 1;
                    }
                    lo = probe + 1;
                    step = step.saturating_mul(2);
                };
                self.lower_bound(lo, hi, ns, name)
            }
        };
        self.hint = pos.min(n - 1);
        if pos < n && self.cmp_at(pos, ns, name) == Ordering::Equal {
            self.at(pos) as u32
        } else {
            NONE
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::snapshot::{
        Component, ComponentKind, DeploymentMode, Instance, InstanceStatus, Node, ReplicaState,
        Workload,
    };

    fn node(name: &str, pool: Option<&str>, gpus: u32) -> Node {
        Node {
            name: name.into(),
            pool: pool.map(str::to_owned),
            total_gpus: gpus,
            ..Node::default()
        }
    }

    /// `ClusterSnapshot::pools` is the same set before the index is built (gathered from the
    /// nodes), once it is (copied from the index), and after the lists were replaced (the
    /// stale index is not read): the pools of nodes with GPUs and a pool, an empty pool key
    /// included.
    #[test]
    fn pools_are_the_same_with_and_without_an_index() {
        let mut s = ClusterSnapshot {
            nodes: vec![
                node("a", Some("H100"), 8),
                node("b", Some("A100"), 4),
                node("c", None, 8),
                node("d", Some("T4"), 0),
                node("e", Some(""), 2),
                node("f", Some("H100"), 8),
            ],
            ..ClusterSnapshot::default()
        };
        let want: Vec<String> = ["", "A100", "H100"].map(str::to_owned).to_vec();
        assert!(!s.index_cache.is_built());
        assert_eq!(s.pools(), want);
        let _ = s.index();
        assert!(s.cached_index().is_some());
        assert_eq!(s.pools(), want);
        s.nodes = vec![node("g", Some("T4"), 1)];
        assert!(s.cached_index().is_none());
        assert_eq!(s.pools(), vec!["T4".to_owned()]);
    }

    /// Lookups by key, from any hit to any other, on sorted and on unsorted pods.
    #[test]
    fn pod_finder_positions_sorted_and_unsorted() {
        let mut pods: Vec<Pod> = (0..200)
            .map(|i| pod(&format!("ns{}", i % 3), &format!("p{i:04}"), ""))
            .collect();
        pods.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        let keys: Vec<String> = pods.iter().map(Pod::key).collect();
        let mut f = PodFinder::new(&pods);
        for (i, k) in keys.iter().enumerate().rev() {
            assert_eq!(f.position(k), Some(i));
        }
        for (i, k) in keys.iter().enumerate().step_by(7) {
            assert_eq!(f.position(k), Some(i));
        }
        assert_eq!(f.position("ns9/x"), None);
        assert_eq!(f.position("nokey"), None);
        pods.reverse();
        let mut f = PodFinder::new(&pods);
        for k in &keys {
            let i = f.position(k).expect("found");
            assert_eq!(&pods[i].key(), k);
        }
        assert_eq!(f.position("ns0/zzz"), None);
    }

    fn pod(ns: &str, name: &str, node: &str) -> Pod {
        Pod {
            namespace: ns.into(),
            name: name.into(),
            node: node.into(),
            gpus: 1,
            ready: true,
            ..Pod::default()
        }
    }

    fn instance(pods: &[&str], nodes: &[&str], phase: &str, revision: &str) -> Instance {
        Instance {
            pods: pods.iter().map(|p| (*p).to_owned()).collect(),
            nodes: nodes
                .iter()
                .map(|n| ((*n).to_owned(), 1))
                .collect::<BTreeMap<_, _>>(),
            status: Some(InstanceStatus {
                phase: phase.into(),
                running_revision: revision.into(),
                ..InstanceStatus::default()
            }),
            // One GPU a pod: the index copies it.
            total_gpus: u32::try_from(pods.len()).unwrap_or(u32::MAX),
            ..Instance::default()
        }
    }

    fn snapshot() -> ClusterSnapshot {
        let mut pods: Vec<Pod> = (0..300)
            .map(|i| {
                pod(
                    &format!("ns{}", i % 4),
                    &format!("p{i:03}"),
                    &format!("n{}", i % 7),
                )
            })
            .collect();
        pods.push(pod("a-b", "x", ""));
        pods.push(pod("a", "x", "ghost"));
        ClusterSnapshot {
            nodes: (0..7)
                .map(|i| node(&format!("n{i}"), (i != 3).then_some(["B", "A"][i % 2]), 8))
                .collect(),
            pods,
            workloads: vec![Workload {
                namespace: "ns0".into(),
                name: "w".into(),
                components: vec![Component {
                    // Not the kind a component past the last reads as, and Instance
                    // indices not their positions: the index copies both.
                    kind: ComponentKind::Router,
                    mode: DeploymentMode::OMENative,
                    replica: Some(ReplicaState {
                        current_revision: "r1".into(),
                        update_revision: "r1".into(),
                        ..ReplicaState::default()
                    }),
                    observation_invalid: None,
                    instances: vec![
                        Instance {
                            index: 2,
                            ..instance(&["ns0/p000", "ns0/p004"], &["n0", "n4"], "Ready", "r1")
                        },
                        Instance {
                            index: 5,
                            ..instance(
                                &["ns1/p001", "nope/x", "bad"],
                                &["n1", "zz"],
                                "Migrating",
                                "r0",
                            )
                        },
                        Instance {
                            index: 9,
                            ..instance(&["a-b/x", "a/x"], &[], "Ready", "r1")
                        },
                    ],
                    pods: Vec::new(),
                    scheduler_name: String::new(),
                    topology_key: String::new(),
                }],
                ..Workload::default()
            }],
            ..ClusterSnapshot::default()
        }
    }

    /// The index answers exactly what the string lookups answer.
    fn check(s: &ClusterSnapshot) {
        let idx = s.index();
        assert_eq!(idx.pools, s.pools_of_nodes());
        assert_eq!(idx.workload_keys.len(), s.workloads.len());
        for (i, w) in s.workloads.iter().enumerate() {
            assert_eq!(idx.workload_keys.get(i), Some(w.key().as_str()));
        }
        assert_eq!(idx.workload_keys.get(s.workloads.len()), None);
        assert_eq!(idx.node_names.len(), s.nodes.len());
        for (i, n) in s.nodes.iter().enumerate() {
            assert_eq!(idx.node_names.get(i), Some(n.name.as_str()));
        }
        for (i, n) in s.nodes.iter().enumerate() {
            let want = n
                .has_gpus()
                .then(|| {
                    s.pools_of_nodes()
                        .iter()
                        .position(|p| Some(p) == n.pool.as_ref())
                })
                .flatten()
                .map_or(NONE, |p| p as u32);
            assert_eq!(idx.node_pool[i], want, "{}", n.name);
        }
        let names: Vec<&str> = idx
            .nodes_by_name
            .iter()
            .map(|i| s.nodes[*i as usize].name.as_str())
            .collect();
        assert!(names.windows(2).all(|w| w[0] <= w[1]));
        let node_of = |name: &str| {
            s.nodes
                .iter()
                .position(|n| n.name == name && !name.is_empty())
                .map_or(NONE, |i| i as u32)
        };
        for (p, f) in s.pods.iter().zip(&idx.pods) {
            assert_eq!(f.node, node_of(&p.node), "{}", p.key());
            assert_eq!(f.gpus, p.gpus);
        }
        let mut k = 0;
        let mut kc = 0;
        for w in &s.workloads {
            for c in &w.components {
                assert_eq!(
                    idx.component(kc),
                    ComponentFacts {
                        flags: component_facts(c),
                        kind: c.kind,
                        instances: c.instances.len(),
                    }
                );
                kc += 1;
                let current = c
                    .replica
                    .as_ref()
                    .map_or("", |r| r.current_revision.as_str());
                for inst in &c.instances {
                    let f = &idx.instances[k];
                    k += 1;
                    assert_eq!(
                        f.flags & !INSTANCE_PODS_CONSISTENT,
                        instance_facts(inst, current)
                    );
                    assert_eq!(f.total_gpus, inst.total_gpus);
                    assert_eq!(f.index, inst.index);
                    let pods: Vec<u32> = inst
                        .pods
                        .iter()
                        .map(|key| {
                            s.pods
                                .iter()
                                .position(|p| p.key() == *key)
                                .map_or(NONE, |i| i as u32)
                        })
                        .collect();
                    assert_eq!(idx.pods_of(f), pods.as_slice());
                    let nodes: Vec<u32> = inst.nodes.keys().map(|n| node_of(n)).collect();
                    assert_eq!(idx.nodes_of(f), nodes.as_slice());
                }
            }
        }
        assert_eq!(k, idx.instances.len());
        let past = idx.component(kc);
        assert_eq!(
            (past.flags, past.instances),
            (0, 0),
            "past the last component"
        );
    }

    #[test]
    fn index_matches_string_lookups_in_any_order() {
        let mut s = snapshot();
        check(&s);
        s.normalize();
        check(&s);
        let mut r = s.clone();
        r.pods.reverse();
        r.nodes.reverse();
        check(&r);
        let idx = s.index();
        let f = &idx.instances;
        let strings = INSTANCE_PHASE_READY | INSTANCE_REVISION_CURRENT;
        assert_eq!(f[0].flags & strings, strings);
        assert_eq!(f[1].flags & strings, 0);
        assert_eq!(
            idx.component_flags,
            vec![COMPONENT_REVISIONS_SETTLED | COMPONENT_NOT_HELD | COMPONENT_OMENATIVE]
        );
        assert_eq!(idx.component_instances, vec![3]);
        // `a-b/x` sorts before `a/x` as a key, after it as (namespace, name).
        let ab = idx.pods_of(&f[2]);
        assert_eq!(s.pods[ab[0] as usize].key(), "a-b/x");
        assert_eq!(s.pods[ab[1] as usize].key(), "a/x");
        assert_eq!(idx.pods[ab[0] as usize].node, NONE);
        assert_eq!(idx.pods[ab[1] as usize].node, NONE);
    }

    #[test]
    fn pods_consistent_is_set_only_when_every_check_holds() {
        let mut s = snapshot();
        s.pods.push(pod("ns0", "unbound", ""));
        s.pods.push(Pod {
            gpus: 0,
            ..pod("ns0", "cpu", "n2")
        });
        // ns0's pods on n0: p000, p028; on n4: p004.
        let with = |pods: &[&str], nodes: &[(&str, u32)], gpus: u32| Instance {
            pods: pods.iter().map(|p| (*p).to_owned()).collect(),
            nodes: nodes.iter().map(|(n, c)| ((*n).to_owned(), *c)).collect(),
            total_gpus: gpus,
            ..Instance::default()
        };
        let cases = [
            (with(&["ns0/p000", "ns0/p028"], &[("n0", 2)], 2), true),
            (
                with(&["ns0/p004", "ns0/p000"], &[("n0", 1), ("n4", 1)], 2),
                true,
            ),
            (
                with(&["ns0/p000", "ns0/cpu"], &[("n0", 1), ("n2", 1)], 1),
                true,
            ),
            (with(&["ns1/p001"], &[("n1", 1)], 1), false),
            (
                with(&["ns0/p000", "ns0/p004"], &[("n0", 1), ("n4", 2)], 2),
                false,
            ),
            (with(&["ns0/p000", "ns0/p004"], &[("n0", 2)], 2), false),
            (with(&["ns0/p000"], &[("n0", 1)], 2), false),
            (with(&["ns0/p000", "ns0/nope"], &[("n0", 1)], 1), false),
            (with(&["ns0/unbound"], &[], 1), false),
            (with(&["ns0/cpu"], &[("n2", 1)], 0), false),
            (with(&[], &[], 0), false),
        ];
        s.workloads[0].components[0].instances = cases.iter().map(|(i, _)| i.clone()).collect();
        for s in [s.clone(), {
            let mut n = s;
            n.normalize();
            n
        }] {
            let idx = s.index();
            for (k, (_, want)) in cases.iter().enumerate() {
                let set = idx.instances[k].flags & INSTANCE_PODS_CONSISTENT != 0;
                assert_eq!(set, *want, "case {k}");
            }
        }
    }

    #[test]
    fn cache_is_not_part_of_the_value() {
        let mut s = snapshot();
        s.normalize();
        assert!(!s.index_cache.is_built());
        drop(s.index());
        assert!(s.index_cache.is_built());
        let c = s.clone();
        assert!(!c.index_cache.is_built());
        assert_eq!(c, s);
        let text = serde_json::to_string(&s).expect("serializes");
        assert!(!text.contains("indexCache"));
        let back: ClusterSnapshot = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, s);
        s.normalize();
        assert!(!s.index_cache.is_built());
    }

    #[test]
    fn a_replaced_or_grown_list_is_not_served_from_the_cache() {
        let mut s = snapshot();
        s.normalize();
        drop(s.index());
        s.pods.push(pod("zz", "new", "n1"));
        let idx = s.index();
        assert!(matches!(idx, IndexRef::Fresh(_)));
        assert_eq!(idx.pods.len(), s.pods.len());
        drop(idx);
        s.invalidate_index();
        assert!(matches!(s.index(), IndexRef::Cached(_)));
    }

    /// One version of a cluster for the carry-over tests: per workload (named by `id`),
    /// its Instances' pods as `(node, ready)`, and whether one of its Instances also names
    /// a pod that does not exist.
    type Version = Vec<(u32, Vec<Vec<(u32, bool)>>, bool)>;

    /// The snapshot of a [`Version`] (lists sorted, as `normalize` leaves them): workload
    /// `ns/w<id>` with pods `ns/w<id>-i<k>-p<m>`, nodes `n0`..`n7` plus an unknown one.
    fn version_snapshot(v: &Version) -> ClusterSnapshot {
        let node_name = |n: u32| {
            if n < 8 {
                format!("n{n}")
            } else {
                "ghost".into()
            }
        };
        let mut pods = Vec::new();
        let mut workloads = Vec::new();
        for (id, instances, dangling) in v {
            let name = format!("w{id:04}");
            let mut insts = Vec::new();
            for (k, ps) in instances.iter().enumerate() {
                let mut keys = Vec::new();
                let mut nodes = BTreeMap::new();
                for (m, &(n, ready)) in ps.iter().enumerate() {
                    let pname = format!("{name}-i{k}-p{m}");
                    keys.push(format!("ns/{pname}"));
                    nodes.insert(node_name(n), 1);
                    pods.push(Pod {
                        ready,
                        ..pod("ns", &pname, &node_name(n))
                    });
                }
                if *dangling && k == 0 {
                    keys.push(format!("ns/{name}-missing"));
                }
                insts.push(Instance {
                    index: k as u32,
                    total_gpus: 2 * ps.len() as u32 + k as u32,
                    pods: keys,
                    nodes,
                    status: Some(InstanceStatus {
                        phase: if ps.len() % 2 == 0 {
                            "Ready"
                        } else {
                            "Migrating"
                        }
                        .into(),
                        running_revision: "r1".into(),
                        ..InstanceStatus::default()
                    }),
                    ..Instance::default()
                });
            }
            workloads.push(Workload {
                namespace: "ns".into(),
                name,
                components: vec![Component {
                    kind: [
                        ComponentKind::Decoder,
                        ComponentKind::Engine,
                        ComponentKind::Router,
                    ][*id as usize % 3],
                    mode: DeploymentMode::OMENative,
                    replica: Some(ReplicaState {
                        current_revision: "r1".into(),
                        update_revision: if id % 3 == 0 { "r2" } else { "r1" }.into(),
                        ..ReplicaState::default()
                    }),
                    observation_invalid: None,
                    instances: insts,
                    pods: Vec::new(),
                    scheduler_name: String::new(),
                    topology_key: String::new(),
                }],
                ..Workload::default()
            });
        }
        pods.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        ClusterSnapshot {
            nodes: (0..8)
                .map(|i| node(&format!("n{i}"), (i != 5).then_some(["A", "B"][i % 2]), 8))
                .collect(),
            pods,
            workloads,
            ..ClusterSnapshot::default()
        }
    }

    fn instances_strategy() -> impl proptest::strategy::Strategy<Value = Vec<Vec<(u32, bool)>>> {
        use proptest::prelude::*;
        proptest::collection::vec(
            proptest::collection::vec((0u32..9, any::<bool>()), 0..3),
            0..3,
        )
    }

    proptest::proptest! {
        /// Carrying an index over to a later version (workloads dropped, rebuilt with other
        /// pods, added) gives exactly the index a full build gives.
        #[test]
        fn carry_over_equals_a_full_build(
            before in proptest::collection::vec(
                (instances_strategy(), proptest::prelude::any::<bool>(), 0u8..4),
                0..12,
            ),
            added in proptest::collection::vec(
                (0u32..40, instances_strategy(), proptest::prelude::any::<bool>()),
                0..5,
            ),
            disorder in 0u8..4,
        ) {
            // Workload ids 2, 4, 6, ... before; fate 0 keeps, 1 drops, 2 rebuilds, 3 keeps.
            let old: Version = before
                .iter()
                .enumerate()
                .map(|(i, (insts, dangling, _))| (2 * i as u32 + 2, insts.clone(), *dangling))
                .collect();
            let mut new: Version = Vec::new();
            for ((id, insts, dangling), (_, _, fate)) in old.iter().zip(&before) {
                match fate {
                    1 => {}
                    2 => new.push((*id, insts.iter().rev().cloned().collect(), !dangling)),
                    _ => new.push((*id, insts.clone(), *dangling)),
                }
            }
            for (id, insts, dangling) in &added {
                // Odd ids: new workloads between the old ones.
                let id = 2 * id + 1;
                if new.iter().all(|(w, _, _)| *w != id) {
                    new.push((id, insts.clone(), *dangling));
                }
            }
            new.sort_by_key(|(id, _, _)| *id);
            let kept: Vec<u32> = old
                .iter()
                .zip(&before)
                .filter(|(_, (_, _, fate))| *fate == 0 || *fate == 3)
                .map(|((id, _, _), _)| *id)
                .collect();
            let s0 = version_snapshot(&old);
            let mut s1 = version_snapshot(&new);
            // The normalization answer is carried too: out of order where the later version
            // has two bound pods (1) or two workloads (2) swapped, or a new workload's pod
            // keys unsorted (3).
            match disorder {
                1 if s1.pods.len() >= 2 => s1.pods.swap(0, 1),
                2 if s1.workloads.len() >= 2 => s1.workloads.swap(0, 1),
                3 => {
                    let fresh = s1.workloads.iter_mut().find(|w| {
                        let id: u32 = w.name[1..].parse().unwrap_or(u32::MAX);
                        !kept.contains(&id)
                    });
                    if let Some(i) = fresh
                        .and_then(|w| w.components[0].instances.iter_mut().find(|i| i.pods.len() >= 2))
                    {
                        i.pods.reverse();
                    }
                }
                _ => {}
            }
            let prev = SnapshotIndex::build(&s0);
            proptest::prop_assert!(prev.normalized.0.set(s0.indexed_lists_normalized()).is_ok());
            let owner = |p: &Pod| p.name[1..5].parse::<u32>().unwrap_or(u32::MAX);
            let pods_from: Vec<u32> = s1
                .pods
                .iter()
                .map(|p| {
                    if kept.contains(&owner(p)) {
                        s0.pods
                            .iter()
                            .position(|q| q.name == p.name)
                            .map_or(NONE, |i| i as u32)
                    } else {
                        NONE
                    }
                })
                .collect();
            let workloads_from: Vec<u32> = s1
                .workloads
                .iter()
                .map(|w| {
                    let id: u32 = w.name[1..].parse().unwrap_or(u32::MAX);
                    if kept.contains(&id) {
                        s0.workloads
                            .iter()
                            .position(|x| x.name == w.name)
                            .map_or(NONE, |i| i as u32)
                    } else {
                        NONE
                    }
                })
                .collect();
            let carried = SnapshotIndex::carry_over(&prev, &s1, &pods_from, &workloads_from);
            proptest::prop_assert_eq!(&carried, &SnapshotIndex::build(&s1));
            if s0.indexed_lists_normalized() {
                proptest::prop_assert_eq!(
                    carried.normalized.0.get(),
                    Some(&s1.indexed_lists_normalized())
                );
            } else {
                proptest::prop_assert_eq!(carried.normalized.0.get(), None);
            }
            s1.install_index(carried);
            proptest::prop_assert_eq!(s1.known_normalized(), Some(s1.is_normalized()));
            proptest::prop_assert!(matches!(s1.index(), IndexRef::Cached(_)));
            proptest::prop_assert!(s1.take_index().is_some());
            proptest::prop_assert!(!s1.index_cache.is_built());
        }
    }

    #[test]
    fn a_taken_index_is_one_that_matches() {
        let mut s = snapshot();
        s.normalize();
        assert!(s.take_index().is_none());
        drop(s.index());
        s.pods.push(pod("zz", "new", "n1"));
        assert!(s.take_index().is_none(), "built for a shorter pod list");
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "edited in place")]
    fn an_in_place_edit_without_invalidation_is_caught_in_debug_builds() {
        let mut s = snapshot();
        s.normalize();
        drop(s.index());
        s.pods[0].node = "n6".into();
        drop(s.index());
    }
}
