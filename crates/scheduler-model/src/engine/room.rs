//! A cluster converted for room questions only ([`RoomCluster`]): where a full conversion
//! keeps every bound pod as a [`PodInfo`] (labels, names, terms), this one adds a bound pod of
//! the common shape to its node's totals (requests, non-zero cpu/memory, pod count, host
//! ports) and keeps only the pods with pod (anti-)affinity terms or an unusual shape whole.
//! A placement reads other pods' labels only through its own pod (anti-)affinity terms and
//! topology spread constraints, so for a pod without them the answers are the full
//! conversion's, at a fraction of the time and memory (a capacity report over 50,000 pods).
//! A pod with them is refused ([`RoomCluster::answers`] says which): convert in full then.

use std::collections::BTreeSet;
use std::hash::Hasher;
use std::sync::Arc;

use super::{Checkpoint, ClusterView, InputError, NO_RES, PreparedCluster};
use crate::bound::BoundPod;
use crate::config::Profile;
use crate::model::{PodInfo, bound_load, pod_info};
use crate::names::NameHasher;
use crate::objects::{Namespace, Node, Pod};
use crate::outcome::{Cause, Failure};

/// A cluster converted for [`RoomCluster::place`] and [`RoomCluster::count_fitting`], which
/// answer as [`PreparedCluster::place`] and [`PreparedCluster::count_fitting`] on a full
/// conversion of the same cluster do, for every pod [`RoomCluster::answers`] accepts.
#[derive(Debug, Clone)]
pub struct RoomCluster {
    cluster: PreparedCluster,
    /// Bound pods were added to their nodes' totals (not kept whole).
    compact: bool,
}

impl RoomCluster {
    /// Converts the occupancy of a cluster for `scheduler`: of `pods`, those [`occupants`]
    /// keeps (bound, not terminal, on one of `nodes`, the first of each namespace/name), and
    /// the pods of `bound` on one of `nodes` (read once by the caller; a namespace/name of
    /// `pods` comes first). Compact, unless a kept pod has a `/` in its namespace or name, or
    /// two kept pods share a namespace/name (which only the full conversion tells apart): then
    /// in full, as [`RoomCluster::full`] over the same pods, errors included.
    pub fn from_occupancy<'a, I>(
        nodes: &'a [Node],
        namespaces: &'a [Namespace],
        pods: I,
        bound: &[BoundPod],
        scheduler: &str,
    ) -> Result<RoomCluster, InputError>
    where
        I: IntoIterator<Item = &'a Pod> + Clone,
    {
        if let Some(compact) = Self::compact(nodes, namespaces, pods.clone(), bound, scheduler)? {
            return Ok(RoomCluster {
                cluster: compact,
                compact: true,
            });
        }
        let kept = occupants(nodes, pods);
        Self::full(view(nodes, namespaces, &kept), bound, scheduler)
    }

    /// Converts the cluster in full, as [`PreparedCluster::from_view`], then adds the pods of
    /// `bound` on its nodes whose namespace/name no pod of the view has: it answers for every
    /// pod.
    pub fn full(
        cluster: ClusterView<'_>,
        bound: &[BoundPod],
        scheduler: &str,
    ) -> Result<RoomCluster, InputError> {
        let mut cluster = PreparedCluster::from_view(cluster, scheduler)?;
        // In key order, as the view's pods were added.
        let mut sorted: Vec<&BoundPod> = bound.iter().collect();
        sorted.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        for pod in sorted {
            cluster.add_bound(pod);
        }
        Ok(RoomCluster {
            cluster,
            compact: false,
        })
    }

    /// The compact conversion of the occupants of `pods`, in one pass over them; `None` when
    /// a kept pod has a `/` in a name part, or two kept pods the same namespace/name (or
    /// names hashing alike, or two nodes): the full conversion tells those apart.
    fn compact<'a, I>(
        nodes: &'a [Node],
        namespaces: &'a [Namespace],
        pods: I,
        bound: &[BoundPod],
        scheduler: &str,
    ) -> Result<Option<PreparedCluster>, InputError>
    where
        I: IntoIterator<Item = &'a Pod>,
    {
        let mut prepared = PreparedCluster::from_view(view(nodes, namespaces, &[]), scheduler)?;
        let Some(node_of) = NodeNames::new(nodes, &prepared.node_index) else {
            return Ok(None);
        };
        let mut kept: Vec<u64> = Vec::with_capacity(bound.len());
        add_bound_loads(&mut prepared, &node_of, bound, &mut kept);
        let mut failures: Vec<(String, Failure)> = Vec::new();
        let (mut requests, mut scratch) = (Vec::new(), Vec::new());
        for p in pods {
            if p.spec.node_name.is_empty() || p.is_terminal() {
                continue;
            }
            let Some(n) = node_of.get(&p.spec.node_name) else {
                continue;
            };
            let (ns, name) = (p.metadata.namespace.as_str(), p.metadata.name.as_str());
            if ns.contains('/') || name.contains('/') {
                return Ok(None);
            }
            kept.push(name_hash(ns, name));
            match bound_load(p, &mut requests, &mut scratch) {
                Some(load) => {
                    for &(r, v) in &requests {
                        let i = prepared.res(r);
                        if i != NO_RES {
                            prepared.state[n].requested[i] += v;
                        }
                    }
                    let s = &mut prepared.state[n];
                    s.nz_cpu += load.nz_cpu;
                    s.nz_mem += load.nz_mem;
                    s.count += 1;
                    s.ports.extend(load.ports);
                }
                None => match pod_info(p, &prepared.ns_labels, false) {
                    Ok(info) => {
                        prepared.add_pod(info, n);
                    }
                    Err(f) => failures.push((p.key(), f)),
                },
            }
        }
        // Two kept pods of one namespace/name (or names hashing alike): the full conversion
        // keeps the first of each, which a sum cannot take back.
        kept.sort_unstable();
        if kept.windows(2).any(|w| w[0] == w[1]) {
            return Ok(None);
        }
        // The full conversion keeps the first failure in key order.
        if let Some((_, f)) = failures.into_iter().min_by(|a, b| a.0.cmp(&b.0)) {
            prepared.unsupported.get_or_insert(f);
        }
        Ok(Some(prepared))
    }

    /// Whether this conversion answers for `pod` as a full one would: always for a full
    /// conversion; for a compact one, unless the pod has pod (anti-)affinity terms or topology
    /// spread constraints (which read the labels of pods it did not keep). A pod the model
    /// cannot hold is answered (with the same error).
    pub fn answers(&self, profile: &Profile, pod: &Pod) -> bool {
        !self.compact
            || match self.cluster.fit_info(pod) {
                Err(_) => true,
                Ok(info) => !self.reads_other_pods(&info, profile),
            }
    }

    /// Whether the conversion is compact (for diagnostics and tests).
    pub fn is_compact(&self) -> bool {
        self.compact
    }

    fn reads_other_pods(&self, info: &PodInfo, profile: &Profile) -> bool {
        info.has_affinity_terms() || !self.cluster.constraints_for(info, profile).is_empty()
    }

    /// The error for a pod a compact conversion cannot answer for.
    fn refuse(&self, profile: &Profile, pod: &Pod) -> Result<(), Failure> {
        if self.answers(profile, pod) {
            return Ok(());
        }
        Err(Failure::new(
            Cause::UnknownSchedulingField,
            format!(
                "pod {} has pod (anti-)affinity terms or topology spread constraints, which a \
                 compact room conversion cannot answer for: convert the cluster in full",
                pod.key()
            ),
        ))
    }

    /// [`PreparedCluster::place`]; `Err` also for a pod this conversion does not answer for.
    pub fn place(&mut self, profile: &Profile, pod: &Pod) -> Result<Option<String>, Failure> {
        self.refuse(profile, pod)?;
        self.cluster.place(profile, pod)
    }

    /// [`PreparedCluster::place_copies`]; `Err` also for a pod this conversion does not
    /// answer for.
    pub fn place_copies(
        &mut self,
        profile: &Profile,
        pod: &Pod,
        copies: u32,
    ) -> Result<Vec<Option<String>>, Failure> {
        self.refuse(profile, pod)?;
        self.cluster.place_copies(profile, pod, copies)
    }

    /// [`PreparedCluster::count_fitting`]; `Err` also for a pod this conversion does not
    /// answer for.
    pub fn count_fitting(
        &mut self,
        profile: &Profile,
        pod: &Pod,
        nodes: &BTreeSet<String>,
        limit: u32,
    ) -> Result<u32, Failure> {
        self.refuse(profile, pod)?;
        self.cluster.count_fitting(profile, pod, nodes, limit)
    }

    /// [`PreparedCluster::checkpoint`].
    pub fn checkpoint(&self) -> Checkpoint {
        self.cluster.checkpoint()
    }

    /// [`PreparedCluster::rollback_to`].
    pub fn rollback_to(&mut self, checkpoint: Checkpoint) {
        self.cluster.rollback_to(checkpoint);
    }
}

/// The pods a room question starts from: of `pods`, the bound ones that are not terminal and
/// whose node is one of `nodes`, each namespace/name once (the first), in their order.
/// Pending pods are left out: a room question places whatever should go first itself.
pub fn occupants<'a, I>(nodes: &[Node], pods: I) -> Vec<&'a Pod>
where
    I: IntoIterator<Item = &'a Pod>,
{
    let names: BTreeSet<&str> = nodes.iter().map(|n| n.metadata.name.as_str()).collect();
    let mut seen: BTreeSet<(&str, &str)> = BTreeSet::new();
    pods.into_iter()
        .filter(|p| {
            !p.spec.node_name.is_empty()
                && !p.is_terminal()
                && names.contains(p.spec.node_name.as_str())
                && seen.insert((p.metadata.namespace.as_str(), p.metadata.name.as_str()))
        })
        .collect()
}

/// The known nodes' indexes by name: an open-addressing table of name hashes whose names
/// sit side by side in one string, so a lookup reads a few cache lines, not the scattered
/// node objects (it is the conversion's most frequent question, once per pod).
struct NodeNames {
    /// (hash, start and end of the name in `names`, node index + 1; 0: an empty slot).
    slots: Vec<(u64, usize, usize, usize)>,
    names: String,
}

impl NodeNames {
    /// The table of `nodes` by their index in `index`; `None` when two names hash alike.
    fn new(nodes: &[Node], index: &std::collections::BTreeMap<String, usize>) -> Option<NodeNames> {
        let size = (nodes.len() * 2).next_power_of_two().max(2);
        let mut table = NodeNames {
            slots: vec![(0, 0, 0, 0); size],
            names: String::new(),
        };
        for n in nodes {
            let Some(&i) = index.get(&n.metadata.name) else {
                continue;
            };
            let h = name_hash(&n.metadata.name, "");
            let mut at = table.slot(h);
            while table.slots[at].3 != 0 {
                if table.slots[at].0 == h {
                    return None;
                }
                at = (at + 1) & (size - 1);
            }
            let start = table.names.len();
            table.names.push_str(&n.metadata.name);
            table.slots[at] = (h, start, table.names.len(), i + 1);
        }
        Some(table)
    }

    fn slot(&self, h: u64) -> usize {
        usize::try_from(h).unwrap_or(0) & (self.slots.len() - 1)
    }

    /// The index of the node named `name`, if it is one of them.
    fn get(&self, name: &str) -> Option<usize> {
        let h = name_hash(name, "");
        let mut at = self.slot(h);
        loop {
            let (sh, start, end, i) = self.slots[at];
            if i == 0 {
                return None;
            }
            if sh == h {
                // Hashes are unique among the nodes: only this one can be `name`.
                return (&self.names[start..end] == name).then_some(i - 1);
            }
            at = (at + 1) & (self.slots.len() - 1);
        }
    }
}

/// Adds each pod of `bound` on a known node to its node's totals, and its name hash to
/// `kept`. Resource names are shared strings, so each is resolved once per distinct string.
fn add_bound_loads(
    prepared: &mut PreparedCluster,
    node_of: &NodeNames,
    bound: &[BoundPod],
    kept: &mut Vec<u64>,
) {
    // (name, index): a handful of distinct names, compared by pointer first.
    let mut resolved: Vec<(&Arc<str>, usize)> = Vec::new();
    for pod in bound {
        let Some(n) = node_of.get(&pod.node_name) else {
            continue;
        };
        kept.push(name_hash(&pod.namespace, &pod.name));
        for (r, v) in pod.requests.iter() {
            let found = resolved
                .iter()
                .find(|(name, _)| Arc::ptr_eq(name, r) || name[..] == r[..]);
            let i = match found {
                Some(&(_, i)) => i,
                None => {
                    let i = prepared.res(r);
                    resolved.push((r, i));
                    i
                }
            };
            if i != NO_RES {
                prepared.state[n].requested[i] += v;
            }
        }
        let s = &mut prepared.state[n];
        s.nz_cpu += pod.nz_cpu;
        s.nz_mem += pod.nz_mem;
        s.count += 1;
        s.ports.extend(pod.host_ports.iter().cloned());
    }
}

/// A view of `nodes`, `namespaces` and `pods`, without selector objects or PodGroups.
fn view<'v>(
    nodes: &'v [Node],
    namespaces: &'v [Namespace],
    pods: &'v [&'v Pod],
) -> ClusterView<'v> {
    ClusterView {
        nodes,
        pods,
        namespaces,
        selector_objects: &[],
        pod_groups: &[],
    }
}

/// The hash of a namespace/name pair (the parts apart).
fn name_hash(namespace: &str, name: &str) -> u64 {
    let mut h = NameHasher::default();
    h.write(namespace.as_bytes());
    h.write_u8(0xff);
    h.write(name.as_bytes());
    h.finish()
}
