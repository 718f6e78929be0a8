//! A bound pod read once for room questions ([`BoundPod`]): what a pod of the common shape
//! adds to its node (requests, non-zero cpu/memory, host ports) and what other pods' terms
//! read of it (namespace, name, labels), with every repeated string shared through an
//! [`Interner`]. A caller that keeps a cluster's pods between room questions (an agent
//! answering every 30 s from its watches) reads each pod once when it changes, instead of
//! every question re-reading 50,000 Kubernetes objects, and keeps a few hundred bytes per
//! pod instead of the decoded object. [`crate::RoomCluster`] answers on these exactly as on
//! the pods they were read from.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::model::{POD_GROUP_LABEL, PodInfo, Res, bound_load, pod_info};
use crate::objects::Pod;

/// A pod's labels, shared by every pod that has the same ones.
pub type Labels = Arc<BTreeMap<String, String>>;

/// A bound, live pod of the common shape (no pod or node affinity, no topology spread, no
/// init containers, overhead, resize or pod-level resources; see
/// [`crate::model::bound_load`]), as occupancy. Read with [`BoundPod::read`]. Every field is
/// shared on clone (a copy of a cluster's pods costs a few reference counts per pod).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BoundPod {
    /// The pod's namespace.
    pub namespace: Arc<str>,
    /// The pod's name.
    pub name: Arc<str>,
    /// The node it is bound to.
    pub node_name: Arc<str>,
    /// Its labels (other pods' affinity terms and spreading selectors match them).
    pub labels: Labels,
    /// The effective scheduler name.
    pub scheduler_name: Arc<str>,
    /// Its priority (0 when unset).
    pub priority: i32,
    /// `preemptionPolicy: Never`.
    pub preempt_never: bool,
    /// It has a deletion timestamp (it still holds its room while bound).
    pub terminating: bool,
    /// The effective requests, by resource name in name order, in scheduler units.
    pub requests: Arc<[(Arc<str>, i64)]>,
    /// Milli-cores for scoring (a container without a cpu request counts the default).
    pub nz_cpu: i64,
    /// Bytes of memory for scoring (a container without a memory request counts the default).
    pub nz_mem: i64,
    /// `(protocol, hostIP, port)` of each host port.
    pub host_ports: Arc<[(String, String, i32)]>,
}

impl BoundPod {
    /// Reads `pod` as occupancy: `None` for a pod that is pending or terminal, names a `/` in
    /// its namespace or name, or is not of the common shape (keep it whole: the room
    /// conversions read it as before). The values are [`pod_info`]'s for a bound pod.
    pub fn read(pod: &Pod, interner: &mut Interner) -> Option<BoundPod> {
        let meta = &pod.metadata;
        if pod.spec.node_name.is_empty()
            || pod.is_terminal()
            || meta.namespace.contains('/')
            || meta.name.contains('/')
        {
            return None;
        }
        let (mut requests, mut scratch) = (Vec::new(), Vec::new());
        bound_load(pod, &mut requests, &mut scratch)?;
        let info = pod_info(pod, &BTreeMap::new(), false).ok()?;
        if info.has_affinity_terms() {
            return None;
        }
        Some(BoundPod {
            namespace: interner.string(&meta.namespace),
            name: Arc::from(meta.name.as_str()),
            node_name: interner.string(&pod.spec.node_name),
            labels: interner.labels(&meta.labels),
            scheduler_name: interner.string(&info.scheduler),
            priority: info.priority,
            preempt_never: info.preempt_never,
            terminating: info.terminating,
            requests: info
                .requests
                .iter()
                .map(|(r, v)| (interner.string(r), *v))
                .collect(),
            nz_cpu: info.nz_cpu,
            nz_mem: info.nz_mem,
            host_ports: info.ports.into(),
        })
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The pod as the full conversion keeps a bound pod: what [`pod_info`] gives for the pod
    /// it was read from.
    pub(crate) fn info(&self) -> PodInfo {
        let requests: Res = self
            .requests
            .iter()
            .map(|(r, v)| (r.to_string(), *v))
            .collect();
        PodInfo {
            namespace: self.namespace.to_string(),
            name: self.name.to_string(),
            uid: String::new(),
            labels: BTreeMap::clone(&self.labels),
            scheduler: self.scheduler_name.to_string(),
            priority: self.priority,
            preempt_never: self.preempt_never,
            requests,
            req_v: Vec::new(),
            nz_cpu: self.nz_cpu,
            nz_mem: self.nz_mem,
            ports: self.host_ports.to_vec(),
            node_selector: BTreeMap::new(),
            required_node: None,
            preferred_node: Vec::new(),
            aff_req: Vec::new(),
            aff_pref: Vec::new(),
            anti_req: Vec::new(),
            anti_pref: Vec::new(),
            tolerations: Vec::new(),
            spread: Vec::new(),
            images: Vec::new(),
            pod_group: self.pod_group().map(str::to_owned),
            terminating: self.terminating,
            owners: Vec::new(),
        }
    }

    /// The PodGroup its `scheduling.x-k8s.io/pod-group` label names, if any.
    pub(crate) fn pod_group(&self) -> Option<&str> {
        self.labels
            .get(POD_GROUP_LABEL)
            .map(String::as_str)
            .filter(|g| !g.is_empty())
    }
}

/// Shares repeated strings and label sets between [`BoundPod`]s: a cluster's pods name a
/// few namespaces, nodes, resources and schedulers many times over, and the replicas of one
/// workload carry the same labels. Ordered sets, so nothing depends on a random hash seed.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    strings: BTreeSet<Arc<str>>,
    label_sets: BTreeSet<Labels>,
}

impl Interner {
    /// An empty interner.
    pub fn new() -> Interner {
        Interner::default()
    }

    /// The shared copy of `s`.
    pub fn string(&mut self, s: &str) -> Arc<str> {
        if let Some(kept) = self.strings.get(s) {
            return Arc::clone(kept);
        }
        let kept: Arc<str> = Arc::from(s);
        self.strings.insert(Arc::clone(&kept));
        kept
    }

    /// The shared copy of `labels`.
    pub fn labels(&mut self, labels: &BTreeMap<String, String>) -> Labels {
        if let Some(kept) = self.label_sets.get(labels) {
            return Arc::clone(kept);
        }
        let kept = Arc::new(labels.clone());
        self.label_sets.insert(Arc::clone(&kept));
        kept
    }

    /// Forgets what no pod holds any more (a caller that keeps pods across changes calls it
    /// now and then, so names of deleted pods' nodes and old label sets do not pile up).
    pub fn prune(&mut self) {
        self.strings.retain(|s| Arc::strong_count(s) > 1);
        self.label_sets.retain(|l| Arc::strong_count(l) > 1);
    }

    /// How many strings and label sets are kept (for tests and diagnostics).
    pub fn len(&self) -> (usize, usize) {
        (self.strings.len(), self.label_sets.len())
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.strings.is_empty() && self.label_sets.is_empty()
    }
}

#[cfg(test)]
mod tests;
