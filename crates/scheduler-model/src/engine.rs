//! The deterministic driver (docs/design-simulation.md#driver) over a snapshot with an undo log
//! for gang trials; the default profile's filter and score plugins
//! (docs/design-simulation.md#default-profile) are in `filter` and `score`; `fit` answers room
//! questions (place and keep, count the copies that fit).

use std::collections::{BTreeMap, BTreeSet};

use thiserror::Error;

use crate::config::Profile;
use crate::model::{NodeInfo, PodInfo, Res, node_info, pod_info};
use crate::objects::{Cluster, LabelSelector, Pod};
use crate::outcome::{Cause, Decision, Failure};

mod filter;
mod fit;
mod room;
mod score;

pub use fit::Checkpoint;
pub use room::{RoomCluster, occupants};

pub(crate) const MAX_NODE_SCORE: i64 = 100;

/// A structurally invalid simulation input (the worker exits 1; Alfred shows `WorkerFailed`).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum InputError {
    /// A field of the input breaks a rule the model relies on (such as a pod to place that
    /// is already bound, or two objects with one name).
    #[error("{field}: {value:?}: {why}")]
    Invalid {
        /// The field, named by its path in the input.
        field: String,
        /// The value refused.
        value: String,
        /// The rule it breaks.
        why: String,
    },
}

pub(crate) fn input_err(field: impl Into<String>, value: impl ToString, why: &str) -> InputError {
    InputError::Invalid {
        field: field.into(),
        value: value.to_string(),
        why: why.to_string(),
    }
}

/// Where one replacement pod lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodPlacement {
    /// The placed pod's namespace.
    pub namespace: String,
    /// The placed pod's name.
    pub name: String,
    /// The placed pod's UID, as given.
    pub uid: String,
    /// The node the pod lands on.
    pub node_name: String,
}

/// The outcome of one simulation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Feasible, Infeasible or Unsupported.
    pub decision: Decision,
    /// Every replacement pod, in request order, when `Feasible`; empty otherwise.
    pub placements: Vec<PodPlacement>,
    /// Why it is not `Feasible` (diagnostics only).
    pub failure: Option<Failure>,
    /// Replacement pods whose best score was shared by several nodes: pod key → tied nodes
    /// (the smallest name won), for diagnostics (docs/design-simulation.md#default-profile).
    pub ties: Vec<(String, Vec<String>)>,
}

impl Outcome {
    fn failed(f: Failure) -> Outcome {
        Outcome {
            decision: f.cause.decision(),
            placements: Vec::new(),
            failure: Some(f),
            ties: Vec::new(),
        }
    }
}

/// What to simulate: the replacement pods of a move, against a cluster copy in which the
/// source pods still occupy their nodes (surge-first).
#[derive(Debug, Clone, Copy)]
pub struct MoveInput<'a> {
    /// Complete, unbound pods to place, in request order.
    pub replacement_pods: &'a [Pod],
    /// Nodes replacement pods must not use (the source nodes).
    pub excluded_nodes: &'a BTreeSet<String>,
    /// The replacement set must be one complete gang.
    pub require_gang: bool,
}

/// Index of a resource no node offers.
const NO_RES: usize = usize::MAX;

#[derive(Debug, Clone, Default)]
struct NodeState {
    /// Allocatable per resource index.
    alloc: Vec<i64>,
    /// Requested per resource index.
    requested: Vec<i64>,
    nz_cpu: i64,
    nz_mem: i64,
    count: i64,
    ports: Vec<(String, String, i32)>,
    pods: Vec<usize>,
}

/// A cluster converted once, against which many moves can be simulated.
#[derive(Debug, Clone)]
pub struct PreparedCluster {
    /// Resource names offered by some node, indexed.
    res_index: BTreeMap<String, usize>,
    nodes: Vec<NodeInfo>,
    node_index: BTreeMap<String, usize>,
    pods: Vec<PodInfo>,
    pod_node: Vec<Option<usize>>,
    state: Vec<NodeState>,
    ns_labels: BTreeMap<String, BTreeMap<String, String>>,
    /// (kind, namespace, name, selector) of Services/RCs/RSs/StatefulSets.
    selectors: Vec<(String, String, String, LabelSelector)>,
    pod_groups: BTreeMap<String, crate::objects::PodGroup>,
    /// Pending same-scheduler standalone pods (competitors), raw.
    competitors: Vec<Pod>,
    /// Why every simulation against this cluster is Unsupported, if anything.
    unsupported: Option<Failure>,
    /// Keys and UIDs of existing pods.
    pod_keys: BTreeSet<String>,
    pod_group_members: BTreeMap<String, usize>,
    /// The nominated pending pods not placed yet in the simulation under way, whose requests
    /// kube-scheduler holds on their nominated node against pods of equal or lower priority.
    /// Empty between simulations.
    held: Vec<Held>,
    /// Per node, the class of its taints: nodes with equal taints share one, so a cycle
    /// decides whether the pod tolerates them once per class.
    taint_class: Vec<usize>,
    /// How many taint classes there are.
    taint_classes: usize,
}

/// A nominated pending pod's reservation on its nominated node.
#[derive(Debug, Clone)]
struct Held {
    node: usize,
    key: String,
    priority: i32,
    req_v: Vec<(usize, i64)>,
}

/// Per-node filter failures of one cycle.
type NodeFailures = Vec<(usize, NodeFail)>;

#[derive(Debug, Clone)]
enum NodeFail {
    /// Resolvable by preemption.
    Unschedulable,
    Unresolvable,
}

struct Constraint {
    max_skew: i64,
    key: String,
    hard: bool,
    selector: LabelSelector,
    min_domains: i64,
    honor_affinity: bool,
    honor_taints: bool,
    explicit: bool,
}

/// A filter plugin the model evaluates (resolved once per cycle from the profile's names).
#[derive(Debug, Clone, Copy)]
enum Filter {
    NodeUnschedulable,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    NodeResourcesFit,
    PodTopologySpread,
    InterPodAffinity,
    /// Volume and DRA filters (no-ops for supported pods), NodeName, OMEGangPack (enforced by
    /// the gang driver).
    Other,
}

impl Filter {
    fn of(name: &str) -> Filter {
        match name {
            "NodeUnschedulable" => Filter::NodeUnschedulable,
            "TaintToleration" => Filter::TaintToleration,
            "NodeAffinity" => Filter::NodeAffinity,
            "NodePorts" => Filter::NodePorts,
            "NodeResourcesFit" => Filter::NodeResourcesFit,
            "PodTopologySpread" => Filter::PodTopologySpread,
            "InterPodAffinity" => Filter::InterPodAffinity,
            _ => Filter::Other,
        }
    }
}

/// Per-cycle precomputation (PreFilter).
struct Cycle {
    filters: Vec<Filter>,
    constraints: Vec<Constraint>,
    /// Per hard constraint: counts per domain value, and min.
    spread_counts: Vec<(BTreeMap<String, i64>, i64, bool)>,
    forbidden: BTreeSet<(String, String)>,
    aff_counts: Vec<BTreeMap<String, i64>>,
    aff_any: bool,
    anti_counts: Vec<BTreeSet<String>>,
    /// Per taint class, whether the pod tolerates its hard taints, once asked.
    tolerated: Vec<std::cell::Cell<Option<bool>>>,
}

/// The cluster's nodes as the model holds them.
struct PreparedNodes {
    nodes: Vec<NodeInfo>,
    node_index: BTreeMap<String, usize>,
    /// The first node the model cannot hold.
    unsupported: Option<Failure>,
}

/// A cluster by reference, for callers that hold its objects elsewhere and would otherwise
/// copy every pod into a [`Cluster`] only to convert it: the same parts, pods as references.
#[derive(Debug, Clone, Copy)]
pub struct ClusterView<'a> {
    /// The nodes.
    pub nodes: &'a [crate::objects::Node],
    /// Bound and pending pods, borrowed one by one, so a caller can pass a filtered view of its own
    /// list without copying pods.
    pub pods: &'a [&'a Pod],
    /// The namespaces, for `namespaceSelector`s.
    pub namespaces: &'a [crate::objects::Namespace],
    /// Services and controllers, for default topology spreading.
    pub selector_objects: &'a [crate::objects::SelectorObject],
    /// PodGroups, for gang scheduling.
    pub pod_groups: &'a [crate::objects::PodGroup],
}

impl PreparedCluster {
    /// Converts the cluster for `scheduler` (the profile's scheduler name).
    pub fn new(cluster: &Cluster, scheduler: &str) -> Result<PreparedCluster, InputError> {
        let pods: Vec<&Pod> = cluster.pods.iter().collect();
        Self::from_view(
            ClusterView {
                nodes: &cluster.nodes,
                pods: &pods,
                namespaces: &cluster.namespaces,
                selector_objects: &cluster.selector_objects,
                pod_groups: &cluster.pod_groups,
            },
            scheduler,
        )
    }

    /// Converts a cluster given by reference for `scheduler`: the same as [`Self::new`] over a
    /// [`Cluster`] of the same objects.
    pub fn from_view(
        cluster: ClusterView<'_>,
        scheduler: &str,
    ) -> Result<PreparedCluster, InputError> {
        let mut ns_labels = BTreeMap::new();
        for ns in cluster.namespaces {
            ns_labels.insert(ns.metadata.name.clone(), ns.metadata.labels.clone());
        }
        let PreparedNodes {
            nodes,
            node_index,
            unsupported,
        } = Self::prepared_nodes(cluster.nodes)?;
        let mut pg = BTreeMap::new();
        for g in cluster.pod_groups {
            pg.insert(
                format!("{}/{}", g.metadata.namespace, g.metadata.name),
                g.clone(),
            );
        }
        let mut selectors = Vec::new();
        for o in cluster.selector_objects {
            if let Some(s) = &o.selector {
                selectors.push((
                    o.kind.clone(),
                    o.metadata.namespace.clone(),
                    o.metadata.name.clone(),
                    s.clone(),
                ));
            }
        }
        let mut res_index = BTreeMap::new();
        for n in &nodes {
            for r in n.alloc.keys() {
                if !res_index.contains_key(r) {
                    res_index.insert(r.clone(), res_index.len());
                }
            }
        }
        let state = nodes
            .iter()
            .map(|n| {
                let mut alloc = vec![0; res_index.len()];
                for (r, v) in &n.alloc {
                    alloc[res_index[r]] = *v;
                }
                NodeState {
                    requested: vec![0; alloc.len()],
                    alloc,
                    ..Default::default()
                }
            })
            .collect();
        let mut prepared = PreparedCluster {
            res_index,
            state,
            nodes,
            node_index,
            pods: Vec::new(),
            pod_node: Vec::new(),
            ns_labels,
            selectors,
            pod_groups: pg,
            competitors: Vec::new(),
            unsupported,
            pod_keys: BTreeSet::new(),
            pod_group_members: BTreeMap::new(),
            held: Vec::new(),
            taint_class: Vec::new(),
            taint_classes: 0,
        };
        prepared.classify_taints();
        prepared.add_pods(cluster.pods, scheduler)?;
        Ok(prepared)
    }

    /// Gives every node the class of its taints (equal taints, one class). Nodes usually
    /// share a few taint sets: each is compared with the last few classes found, and a set
    /// none of them equals opens a class of its own (equal sets may then hold two classes,
    /// which only costs a second evaluation).
    fn classify_taints(&mut self) {
        const RECENT: usize = 16;
        let mut recent: Vec<(usize, usize)> = Vec::with_capacity(RECENT);
        let mut classes = 0;
        self.taint_class = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                if let Some(&(_, c)) = recent
                    .iter()
                    .find(|&&(j, _)| self.nodes[j].taints == n.taints)
                {
                    return c;
                }
                let c = classes;
                classes += 1;
                if recent.len() == RECENT {
                    recent.remove(0);
                }
                recent.push((i, c));
                c
            })
            .collect();
        self.taint_classes = classes;
    }

    /// The nodes sorted by name with their index; a node the model cannot hold stays as an
    /// unschedulable placeholder and its failure is returned (the first one).
    fn prepared_nodes(all: &[crate::objects::Node]) -> Result<PreparedNodes, InputError> {
        let mut unsupported = None;
        let mut nodes = Vec::new();
        let mut sorted: Vec<&crate::objects::Node> = all.iter().collect();
        sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        // In name order an empty name comes first and a duplicate next to its twin: the
        // first such problem is the one a node-by-node pass would meet first.
        if sorted.first().is_some_and(|n| n.metadata.name.is_empty()) {
            return Err(input_err("node.metadata.name", "", "must be set"));
        }
        if let Some(w) = sorted
            .windows(2)
            .find(|w| w[0].metadata.name == w[1].metadata.name)
        {
            return Err(input_err(
                "node.metadata.name",
                &w[1].metadata.name,
                "duplicate node",
            ));
        }
        // Built from names in order (a bulk build, not one search per insert).
        let node_index: BTreeMap<String, usize> = sorted
            .iter()
            .enumerate()
            .map(|(i, n)| (n.metadata.name.clone(), i))
            .collect();
        for n in sorted {
            match node_info(n) {
                Ok(ni) => nodes.push(ni),
                Err(f) => {
                    unsupported.get_or_insert(f);
                    nodes.push(NodeInfo {
                        name: n.metadata.name.clone(),
                        labels: Default::default(),
                        taints: Vec::new(),
                        unschedulable: true,
                        alloc: Res::new(),
                        max_pods: 0,
                        images: Default::default(),
                    });
                }
            }
        }
        Ok(PreparedNodes {
            nodes,
            node_index,
            unsupported,
        })
    }

    /// Places the bound pods on their nodes and queues the pending ones of `scheduler` as
    /// competitors (highest priority, then oldest, first); a pending pod the model cannot
    /// schedule marks the cluster unsupported.
    fn add_pods(&mut self, all: &[&Pod], scheduler: &str) -> Result<(), InputError> {
        let mut pods: Vec<&Pod> = all.to_vec();
        pods.sort_by_cached_key(|p| p.key());
        for p in pods {
            if !self.pod_keys.insert(p.key()) {
                return Err(input_err("pod", p.key(), "duplicate pod"));
            }
            if p.is_terminal() {
                continue;
            }
            if let Some(g) = p.metadata.labels.get(crate::model::POD_GROUP_LABEL)
                && !g.is_empty()
            {
                *self
                    .pod_group_members
                    .entry(format!("{}/{}", p.metadata.namespace, g))
                    .or_insert(0) += 1;
            }
            if p.spec.node_name.is_empty() {
                if p.metadata.deletion_timestamp.is_some() {
                    continue;
                }
                let gang_member = p
                    .metadata
                    .labels
                    .get(crate::model::POD_GROUP_LABEL)
                    .is_some_and(|g| !g.is_empty());
                if p.effective_scheduler() != scheduler || gang_member {
                    self.unsupported.get_or_insert(Failure::new(
                        if gang_member {
                            Cause::ForeignGangState
                        } else {
                            Cause::PendingDemandUnsupported
                        },
                        format!("pending pod {} cannot be modelled", p.key()),
                    ));
                    continue;
                }
                self.competitors.push(p.clone());
                continue;
            }
            let Some(&n) = self.node_index.get(&p.spec.node_name) else {
                return Err(input_err(
                    format!("pod {} spec.nodeName", p.key()),
                    &p.spec.node_name,
                    "names no supplied Node",
                ));
            };
            match pod_info(p, &self.ns_labels, false) {
                Ok(info) => {
                    self.add_pod(info, n);
                }
                Err(f) => {
                    self.unsupported.get_or_insert(f);
                }
            }
        }
        self.competitors.sort_by(|a, b| {
            b.spec
                .priority
                .unwrap_or(0)
                .cmp(&a.spec.priority.unwrap_or(0))
                .then_with(|| {
                    a.metadata
                        .creation_timestamp
                        .cmp(&b.metadata.creation_timestamp)
                })
                .then_with(|| a.key().cmp(&b.key()))
        });
        Ok(())
    }

    /// Adds a bound pod read with [`crate::BoundPod::read`] as [`Self::add_pods`] adds the pod
    /// it was read from, unless a pod of its namespace/name is already kept (`false` then) or
    /// its node is not one of the cluster's (left out, as occupancy leaves such pods out).
    pub(crate) fn add_bound(&mut self, pod: &crate::BoundPod) -> bool {
        let Some(&n) = self.node_index.get(&*pod.node_name) else {
            return true;
        };
        if !self.pod_keys.insert(pod.key()) {
            return false;
        }
        if let Some(g) = pod.pod_group() {
            *self
                .pod_group_members
                .entry(format!("{}/{g}", pod.namespace))
                .or_insert(0) += 1;
        }
        self.add_pod(pod.info(), n);
        true
    }

    /// Resolves a pod's requests against the resource table.
    fn index(&self, p: &mut PodInfo) {
        p.req_v = p
            .requests
            .iter()
            .map(|(r, v)| (self.res_index.get(r).copied().unwrap_or(NO_RES), *v))
            .collect();
    }

    fn res(&self, name: &str) -> usize {
        self.res_index.get(name).copied().unwrap_or(NO_RES)
    }

    fn add_pod(&mut self, mut info: PodInfo, n: usize) -> usize {
        if info.req_v.len() != info.requests.len() {
            self.index(&mut info);
        }
        let id = self.pods.len();
        let s = &mut self.state[n];
        for (i, v) in &info.req_v {
            if *i != NO_RES {
                s.requested[*i] += v;
            }
        }
        s.nz_cpu += info.nz_cpu;
        s.nz_mem += info.nz_mem;
        s.count += 1;
        s.ports.extend(info.ports.iter().cloned());
        s.pods.push(id);
        self.pods.push(info);
        self.pod_node.push(Some(n));
        id
    }

    fn remove_last_pod(&mut self) {
        let Some(info) = self.pods.pop() else { return };
        let id = self.pods.len();
        if let Some(Some(n)) = self.pod_node.pop() {
            let s = &mut self.state[n];
            for (i, v) in &info.req_v {
                if *i != NO_RES {
                    s.requested[*i] -= v;
                }
            }
            s.nz_cpu -= info.nz_cpu;
            s.nz_mem -= info.nz_mem;
            s.count -= 1;
            let keep = s.ports.len() - info.ports.len();
            s.ports.truncate(keep);
            if s.pods.last() == Some(&id) {
                s.pods.pop();
            }
        }
    }

    fn rollback(&mut self, len: usize) {
        while self.pods.len() > len {
            self.remove_last_pod();
        }
    }

    /// The node names, sorted.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(|n| n.name.as_str())
    }

    // ----- one scheduling cycle ------------------------------------------------------------

    /// Filters `candidates` (all nodes when `None`), scores the feasible ones and returns the
    /// chosen node with the tied set; `Err` carries the per-node failures.
    fn schedule_one(
        &self,
        p: &PodInfo,
        candidates: Option<&[usize]>,
        excluded: &BTreeSet<usize>,
        profile: &Profile,
        allow_packing: bool,
    ) -> Result<(usize, Vec<usize>), NodeFailures> {
        let cy = self.pre_filter(p, profile);
        let all: Vec<usize>;
        let candidates = match candidates {
            Some(c) => c,
            None => {
                all = (0..self.nodes.len()).collect();
                &all
            }
        };
        let mut feasible = Vec::new();
        let mut fails = Vec::new();
        for &n in candidates {
            match self.filter(p, n, &cy, profile) {
                Ok(()) if excluded.contains(&n) => fails.push((n, NodeFail::Unresolvable)),
                Ok(()) => feasible.push(n),
                Err(f) => fails.push((n, f)),
            }
        }
        if feasible.is_empty() {
            return Err(fails);
        }
        let packing = if allow_packing {
            self.packing_score(p, &feasible, profile)
        } else {
            None
        };
        let totals = self.score(p, &feasible, &cy, profile, packing.as_ref());
        let best = totals.iter().copied().max().unwrap_or(0);
        let tied: Vec<usize> = feasible
            .iter()
            .zip(&totals)
            .filter(|(_, t)| **t == best)
            .map(|(n, _)| *n)
            .collect();
        // Nodes are indexed in name order, so the smallest index is the smallest name.
        let chosen = tied.iter().copied().min().unwrap_or(feasible[0]);
        Ok((chosen, tied))
    }

    fn preemption_may_apply(
        &self,
        p: &PodInfo,
        fails: &[(usize, NodeFail)],
        profile: &Profile,
    ) -> bool {
        profile.preemption
            && !p.preempt_never
            && fails.iter().any(|(n, f)| {
                matches!(f, NodeFail::Unschedulable)
                    && self.state[*n]
                        .pods
                        .iter()
                        .any(|&q| self.pods[q].priority < p.priority)
            })
    }

    /// Simulates one move. The prepared cluster is left unchanged.
    pub fn simulate(
        &mut self,
        profile: &Profile,
        input: &MoveInput<'_>,
        expired: &mut dyn FnMut() -> bool,
    ) -> Result<Outcome, InputError> {
        let base = self.pods.len();
        let out = self.simulate_inner(profile, input, expired);
        self.rollback(base);
        self.held.clear();
        out
    }

    /// Simulates one move as if `pod_groups` were part of the cluster too: the answer is the
    /// one [`PreparedCluster::new`] over the cluster with `pod_groups` appended would give
    /// (a PodGroup with the namespace/name of one already there replaces it, as a later one
    /// does in [`PreparedCluster::new`]). For in-process callers that prepare one cluster and
    /// reuse it for many moves, some of which bring a PodGroup of their own (a replacement
    /// gang whose PodGroup does not exist yet). PodGroups only feed the gang lookup, so
    /// nothing else of the prepared cluster depends on them. The prepared cluster is left
    /// unchanged, its PodGroups included.
    pub fn simulate_with_pod_groups(
        &mut self,
        profile: &Profile,
        input: &MoveInput<'_>,
        pod_groups: &[crate::objects::PodGroup],
        expired: &mut dyn FnMut() -> bool,
    ) -> Result<Outcome, InputError> {
        let mut displaced = Vec::with_capacity(pod_groups.len());
        for g in pod_groups {
            let key = format!("{}/{}", g.metadata.namespace, g.metadata.name);
            let before = self.pod_groups.insert(key.clone(), g.clone());
            displaced.push((key, before));
        }
        let out = self.simulate(profile, input, expired);
        // Undo in reverse, so a key given twice gets its original value (or none) back.
        for (key, before) in displaced.into_iter().rev() {
            match before {
                Some(g) => {
                    self.pod_groups.insert(key, g);
                }
                None => {
                    self.pod_groups.remove(&key);
                }
            }
        }
        out
    }

    fn simulate_inner(
        &mut self,
        profile: &Profile,
        input: &MoveInput<'_>,
        expired: &mut dyn FnMut() -> bool,
    ) -> Result<Outcome, InputError> {
        if input.replacement_pods.is_empty() {
            return Err(input_err(
                "replacementPods",
                "[]",
                "at least one pod is required",
            ));
        }
        let excluded = self.checked_move_input(profile, input)?;
        if let Some(f) = &self.unsupported {
            return Ok(Outcome::failed(f.clone()));
        }
        let mut infos = Vec::new();
        for p in input.replacement_pods {
            match pod_info(p, &self.ns_labels, true) {
                Ok(mut i) => {
                    self.index(&mut i);
                    infos.push(i);
                }
                Err(f) => return Ok(Outcome::failed(f)),
            }
        }
        let gang_mode = profile.gang_scheduling && infos.iter().any(|i| i.pod_group.is_some());
        if gang_mode && infos.iter().any(|i| i.pod_group.is_none()) {
            return Ok(Outcome::failed(Failure::new(
                Cause::MixedReplacementGroups,
                "replacement pods mix gang members and standalone pods",
            )));
        }
        if input.require_gang && !gang_mode {
            return Err(input_err(
                "requireGang",
                true,
                "replacement pods form no gang",
            ));
        }
        if let Some(failed) = self.place_competitors(profile, expired) {
            return Ok(failed);
        }
        if gang_mode {
            return Ok(crate::gang::place_gang(
                self, profile, infos, &excluded, expired,
            ));
        }
        Ok(self.place_standalone(profile, &infos, &excluded, expired))
    }

    /// Structural checks of a move's input; the excluded nodes' indexes.
    fn checked_move_input(
        &self,
        profile: &Profile,
        input: &MoveInput<'_>,
    ) -> Result<BTreeSet<usize>, InputError> {
        let mut excluded = BTreeSet::new();
        for e in input.excluded_nodes {
            let Some(&i) = self.node_index.get(e) else {
                return Err(input_err("excludedNodes", e, "names no supplied Node"));
            };
            excluded.insert(i);
        }
        let mut keys = BTreeSet::new();
        for (i, p) in input.replacement_pods.iter().enumerate() {
            let field = format!("replacementPods[{i}]");
            if p.metadata.name.is_empty() || p.metadata.namespace.is_empty() {
                return Err(input_err(field, p.key(), "namespace and name are required"));
            }
            if !p.spec.node_name.is_empty() {
                return Err(input_err(
                    format!("{field}.spec.nodeName"),
                    &p.spec.node_name,
                    "must be empty",
                ));
            }
            if p.metadata.deletion_timestamp.is_some() || p.is_terminal() {
                return Err(input_err(
                    field,
                    p.key(),
                    "must not be deleting or terminal",
                ));
            }
            if p.effective_scheduler() != profile.scheduler_name {
                return Err(input_err(
                    format!("{field}.spec.schedulerName"),
                    p.effective_scheduler(),
                    "must equal the profile's schedulerName",
                ));
            }
            if !keys.insert(p.key()) || self.pod_keys.contains(&p.key()) {
                return Err(input_err(field, p.key(), "duplicate pod name"));
            }
        }
        if input.require_gang && !profile.gang_scheduling {
            return Err(input_err(
                "requireGang",
                true,
                "the profile does not simulate gangs",
            ));
        }
        Ok(excluded)
    }

    /// Places the pending competitors ahead of the replacements; the failed outcome when the
    /// deadline passes or a competitor cannot be modelled.
    fn place_competitors(
        &mut self,
        profile: &Profile,
        expired: &mut dyn FnMut() -> bool,
    ) -> Option<Outcome> {
        // Competitors first (docs/design-simulation.md#cluster-model). A nominated competitor holds
        // its requests on its nominated node until it is placed, and is tried there first.
        let mut queue = Vec::with_capacity(self.competitors.len());
        for c in &self.competitors {
            let info = match pod_info(c, &self.ns_labels, true) {
                Ok(mut i) => {
                    self.index(&mut i);
                    i
                }
                Err(f) => return Some(Outcome::failed(f)),
            };
            let nominated = self.node_index.get(&c.status.nominated_node_name).copied();
            queue.push((info, nominated));
        }
        self.held = queue
            .iter()
            .filter_map(|(info, nominated)| {
                nominated.map(|node| Held {
                    node,
                    key: info.key(),
                    priority: info.priority,
                    req_v: info.req_v.clone(),
                })
            })
            .collect();
        for (info, nominated) in queue {
            if expired() {
                return Some(Outcome::failed(Failure::new(
                    Cause::DeadlineExceeded,
                    "deadline",
                )));
            }
            let none = BTreeSet::new();
            let on_nominated = nominated.and_then(|n| {
                self.schedule_one(&info, Some(&[n]), &none, profile, true)
                    .ok()
                    .map(|(n, _)| n)
            });
            let chosen = on_nominated.or_else(|| {
                self.schedule_one(&info, None, &none, profile, true)
                    .ok()
                    .map(|(n, _)| n)
            });
            if let Some(n) = chosen {
                let key = info.key();
                self.held.retain(|h| h.key != key);
                self.add_pod(info, n);
            }
        }
        None
    }

    /// Places standalone replacements one by one; the outcome of the move.
    fn place_standalone(
        &mut self,
        profile: &Profile,
        infos: &[PodInfo],
        excluded: &BTreeSet<usize>,
        expired: &mut dyn FnMut() -> bool,
    ) -> Outcome {
        // Standalone replacements: priority descending, request order otherwise.
        let mut order: Vec<usize> = (0..infos.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(infos[i].priority));
        let mut placed: Vec<Option<usize>> = vec![None; infos.len()];
        let mut ties = Vec::new();
        for i in order {
            if expired() {
                return Outcome::failed(Failure::new(Cause::DeadlineExceeded, "deadline"));
            }
            let p = &infos[i];
            match self.schedule_one(p, None, excluded, profile, true) {
                Ok((n, tied)) => {
                    if tied.len() > 1 {
                        ties.push((
                            p.key(),
                            tied.iter().map(|&t| self.nodes[t].name.clone()).collect(),
                        ));
                    }
                    placed[i] = Some(n);
                    self.add_pod(p.clone(), n);
                }
                Err(fails) => {
                    let cause = if self.preemption_may_apply(p, &fails, profile) {
                        Cause::PreemptionMayApply
                    } else {
                        Cause::NoNodeFits
                    };
                    return Outcome::failed(Failure::new(
                        cause,
                        format!("no node fits pod {}", p.key()),
                    ));
                }
            }
        }
        self.feasible(infos, &placed, ties)
    }

    pub(crate) fn feasible(
        &self,
        infos: &[PodInfo],
        placed: &[Option<usize>],
        ties: Vec<(String, Vec<String>)>,
    ) -> Outcome {
        Outcome {
            decision: Decision::Feasible,
            placements: infos
                .iter()
                .zip(placed)
                .map(|(p, n)| PodPlacement {
                    namespace: p.namespace.clone(),
                    name: p.name.clone(),
                    uid: p.uid.clone(),
                    node_name: n.map(|n| self.nodes[n].name.clone()).unwrap_or_default(),
                })
                .collect(),
            failure: None,
            ties,
        }
    }

    // ----- crate-internal access for the gang model ------------------------------------------

    pub(crate) fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }
    pub(crate) fn pod_group(&self, key: &str) -> Option<&crate::objects::PodGroup> {
        self.pod_groups.get(key)
    }
    pub(crate) fn pod_group_member_count(&self, key: &str) -> usize {
        self.pod_group_members.get(key).copied().unwrap_or(0)
    }
    pub(crate) fn fits_member(&self, p: &PodInfo, n: usize) -> bool {
        self.member_fits(p, n)
    }
    /// How many copies of a pod's requests fit the node's free resources and pod slots.
    pub(crate) fn copies_fitting(&self, p: &PodInfo, n: usize) -> i64 {
        let s = &self.state[n];
        let held = self.held_against(p, n);
        let mut c = self.nodes[n].max_pods - s.count - held.as_ref().map_or(0, |(c, _)| *c);
        for &(i, req) in &p.req_v {
            if req > 0 {
                let free = self.free_of(n, i, held.as_ref());
                c = c.min(free / req);
            }
        }
        c.max(0)
    }
    pub(crate) fn pods_len(&self) -> usize {
        self.pods.len()
    }
    pub(crate) fn assume(&mut self, p: PodInfo, n: usize) {
        self.add_pod(p, n);
    }
    pub(crate) fn undo_to(&mut self, len: usize) {
        self.rollback(len);
    }
    pub(crate) fn cycle(
        &self,
        p: &PodInfo,
        candidates: &[usize],
        excluded: &BTreeSet<usize>,
        profile: &Profile,
    ) -> Option<(usize, Vec<usize>)> {
        self.schedule_one(p, Some(candidates), excluded, profile, false)
            .ok()
    }
    pub(crate) fn node_name(&self, n: usize) -> &str {
        &self.nodes[n].name
    }
}

/// Extended resources (domain-prefixed, not `kubernetes.io/`).
fn is_extended(r: &str) -> bool {
    r.contains('/') && !r.starts_with("kubernetes.io/") && !r.starts_with("requests.")
}
