//! What the member loop's watches hold: per kind, the objects already decoded into the member
//! report's own small types (plumb-core's `MemberObservation` parts), keyed by
//! `namespace/name`. Only those types are kept, never the API server's full objects, so a
//! member of 50,000 pods holds what the report reads and no more (the memory target):
//! a bound pod of the common shape is read once, when it changes, into scheduler-model's
//! [`BoundPod`] (a few hundred bytes, its repeated strings shared through the store's
//! [`Interner`]), and only the others (pending, terminal, or with affinity terms) are kept
//! whole ([`StoredPod`]).
//!
//! A kind follows kube-rs's watcher events: a relist (`Init` … `InitDone`) replaces the kind
//! at once when it completes; a kind is *listed* after its first relist, or once it is known
//! to be absent (a Karpenter CRD not installed), which counts as none. The first report pass
//! waits until every kind is listed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kube::runtime::watcher::Event;
use plumb_core::member::{
    Autoscaler, Deployment, Event as KubeEvent, MemberObservation, NodeClaim, NodePool, ObservedPod,
};
use plumb_model::AdaptivePolicy;
use scheduler_model::objects::{Namespace, Node};
use scheduler_model::{BoundPod, Interner};
use serde_json::Value;

/// `namespace/name` (or `name` for a cluster-scoped object), `None` without a name.
pub fn key_of(object: &Value) -> Option<String> {
    let meta = object.get("metadata")?;
    let name = meta.get("name")?.as_str()?;
    Some(match meta.get("namespace").and_then(Value::as_str) {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_owned(),
    })
}

/// Decodes one watched object into the type kept for its kind; the error names the field.
pub trait Decode: Sized {
    /// What decoding keeps from one object to the next (the pod store's [`Interner`]).
    type Context: Default + std::fmt::Debug + Send;

    /// The object as kept, or why it cannot be read.
    fn decode(object: Value, context: &mut Self::Context) -> Result<Self, String>;

    /// Called when the kind's objects settle (a relist done, lent objects back, a pass
    /// begun): the context may drop what no object holds any more.
    fn settle(_context: &mut Self::Context) {}
}

macro_rules! decode_with_serde {
    ($($t:ty),*) => {$(
        impl Decode for $t {
            type Context = ();

            fn decode(object: Value, _: &mut ()) -> Result<Self, String> {
                serde_path_to_error::deserialize::<_, $t>(object)
                    .map_err(|e| format!("{}: {}", e.path(), e.inner()))
            }
        }
    )*};
}

decode_with_serde!(
    Deployment, Autoscaler, Namespace, NodePool, NodeClaim, KubeEvent
);

/// A node without what no conversion reads ([`Node::forget_unread`]: conditions, capacity,
/// addresses, annotations, …), most of a node's bytes.
impl Decode for Node {
    type Context = ();

    fn decode(object: Value, _: &mut ()) -> Result<Self, String> {
        let mut node: Node = serde_path_to_error::deserialize(object)
            .map_err(|e| format!("{}: {}", e.path(), e.inner()))?;
        node.forget_unread();
        Ok(node)
    }
}

impl Decode for ObservedPod {
    type Context = ();

    fn decode(object: Value, _: &mut ()) -> Result<Self, String> {
        ObservedPod::from_value(&object)
    }
}

/// A pod as the pod store keeps it: read once as occupancy when it is bound and of the common
/// shape (all the report reads of such a pod), else whole.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredPod {
    /// Bound, live, of the common shape: its load, labels and names.
    Bound(BoundPod),
    /// Any other pod (pending, terminal, with affinity terms or an unusual shape).
    Whole(Box<ObservedPod>),
}

impl Decode for StoredPod {
    type Context = Interner;

    fn decode(object: Value, interner: &mut Interner) -> Result<Self, String> {
        let pod = ObservedPod::from_value(&object)?;
        Ok(match BoundPod::read(&pod.pod, interner) {
            Some(bound) => StoredPod::Bound(bound),
            None => StoredPod::Whole(Box::new(pod)),
        })
    }

    fn settle(interner: &mut Interner) {
        interner.prune();
    }
}

/// One AdaptivePolicy copy as the loop needs it: its `status` as read (the patch is the
/// difference from it), and the policy as parsed, or why it cannot be.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyCopy {
    /// `<namespace>/<name>`.
    pub key: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `status` exactly as read (`Null` when absent).
    pub status: Value,
    /// The copy read as an AdaptivePolicy, or the one-line reason (naming the field) it is not.
    pub parsed: Result<AdaptivePolicy, String>,
}

impl Decode for PolicyCopy {
    type Context = ();

    fn decode(object: Value, _: &mut ()) -> Result<Self, String> {
        let text = |f: &str| {
            object["metadata"][f]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("metadata.{f}: missing"))
        };
        let name = text("name")?;
        let namespace = text("namespace")?;
        let generation = object["metadata"]["generation"].as_i64();
        let status = object.get("status").cloned().unwrap_or(Value::Null);
        let parsed = AdaptivePolicy::from_value(object).map_err(|e| e.to_string());
        Ok(PolicyCopy {
            key: format!("{namespace}/{name}"),
            name,
            namespace,
            generation,
            status,
            parsed,
        })
    }
}

/// The objects of one kind.
#[derive(Debug)]
pub struct Kind<T: Decode> {
    objects: BTreeMap<String, T>,
    /// A relist in progress: its objects in arrival order (built into a map at once when it
    /// completes, which packs the map's nodes full; inserting them one by one in key order
    /// leaves them half empty, about 30 % more memory for a kind of 50,000 pods).
    relist: Option<Vec<(String, T)>>,
    listed: bool,
    /// While the objects are lent to a pass: the events that arrived meanwhile.
    waiting: Option<Vec<Event<Value>>>,
    /// While lent through [`Stores::lend`]: the objects' keys.
    lent_keys: Option<Vec<String>>,
    context: T::Context,
}

impl<T: Decode> Default for Kind<T> {
    fn default() -> Self {
        Kind {
            objects: BTreeMap::new(),
            relist: None,
            listed: false,
            waiting: None,
            lent_keys: None,
            context: T::Context::default(),
        }
    }
}

/// A kind's objects lent to a pass (see [`Kind::lend`]).
#[derive(Debug, Default)]
pub struct Lent<T> {
    keys: Vec<String>,
    /// The objects, in key order.
    pub objects: Vec<T>,
}

impl<T: Decode> Kind<T> {
    /// Applies one watch event; an object that cannot be decoded is left out (and, on an
    /// update, its previous version removed), and the error (`key: field: why`) returned.
    /// While the objects are lent, the event waits for their return.
    pub fn apply(&mut self, event: Event<Value>) -> Result<(), String> {
        if let Some(waiting) = &mut self.waiting {
            waiting.push(event);
            return Ok(());
        }
        self.apply_now(event)
    }

    /// Lends the objects to a pass without copying them (a large member's pods are most of
    /// the agent's memory); events wait until [`Kind::give_back`].
    pub fn lend(&mut self) -> Lent<T> {
        self.waiting.get_or_insert_default();
        let (keys, objects) = std::mem::take(&mut self.objects).into_iter().unzip();
        Lent { keys, objects }
    }

    /// Takes lent objects back and applies the events that waited; their errors are returned.
    pub fn give_back(&mut self, lent: Lent<T>) -> Vec<String> {
        self.objects = lent.keys.into_iter().zip(lent.objects).collect();
        let waiting = self.waiting.take().unwrap_or_default();
        let errors = waiting
            .into_iter()
            .filter_map(|event| self.apply_now(event).err())
            .collect();
        T::settle(&mut self.context);
        errors
    }

    fn apply_now(&mut self, event: Event<Value>) -> Result<(), String> {
        match event {
            Event::Init => self.relist = Some(Vec::new()),
            Event::InitApply(object) => {
                let (key, decoded) = decoded(object, &mut self.context)?;
                let relist = self.relist.get_or_insert_default();
                match decoded {
                    Ok(value) => relist.push((key, value)),
                    Err(e) => return Err(format!("{key}: {e}")),
                }
            }
            Event::InitDone => {
                // A key listed twice keeps its last object, as inserting would.
                self.objects = self.relist.take().unwrap_or_default().into_iter().collect();
                self.listed = true;
                T::settle(&mut self.context);
            }
            Event::Apply(object) => {
                let (key, decoded) = decoded(object, &mut self.context)?;
                match decoded {
                    Ok(value) => drop(self.objects.insert(key, value)),
                    Err(e) => {
                        self.objects.remove(&key);
                        return Err(format!("{key}: {e}"));
                    }
                }
            }
            Event::Delete(object) => {
                if let Some(key) = key_of(&object) {
                    self.objects.remove(&key);
                }
            }
        }
        Ok(())
    }
}

impl<T: Decode> Kind<T> {
    /// The kind is not served (its CRD is not installed): none, and listed.
    pub fn mark_absent(&mut self) {
        self.objects.clear();
        self.relist = None;
        self.listed = true;
    }

    /// The kind after its decoding context dropped what no object holds any more (the pod
    /// store's interner forgets deleted pods' nodes and label sets; each pass asks).
    pub fn settled(&mut self) -> &mut Self {
        T::settle(&mut self.context);
        self
    }

    /// Whether the kind has been listed (or found absent).
    pub fn listed(&self) -> bool {
        self.listed
    }

    /// The objects, by key.
    pub fn objects(&self) -> &BTreeMap<String, T> {
        &self.objects
    }
}

impl<T: Decode + Clone> Kind<T> {
    /// A copy of the objects in key order.
    pub fn to_vec(&self) -> Vec<T> {
        self.objects.values().cloned().collect()
    }
}

fn decoded<T: Decode>(
    object: Value,
    context: &mut T::Context,
) -> Result<(String, Result<T, String>), String> {
    let key = key_of(&object).ok_or_else(|| "an object without metadata.name".to_owned())?;
    Ok((key, T::decode(object, context)))
}

/// The keys of every kind lent, kept with the store until given back.
fn lent<T: Decode>(kind: &Shared<T>) -> Vec<T> {
    let mut kind = lock(kind);
    let Lent { keys, objects } = kind.lend();
    kind.lent_keys = Some(keys);
    objects
}

fn back<T: Decode>(kind: &Shared<T>, objects: Vec<T>) -> Vec<String> {
    let mut kind = lock(kind);
    let keys = kind.lent_keys.take().unwrap_or_default();
    kind.give_back(Lent { keys, objects })
}

/// Copies stored pods into an observation: the whole ones into `pods`, the rest into
/// `bound_pods`.
trait WithPods {
    fn with_pods<'a>(self, pods: impl ExactSizeIterator<Item = &'a StoredPod>) -> Self;
}

impl WithPods for MemberObservation {
    fn with_pods<'a>(mut self, pods: impl ExactSizeIterator<Item = &'a StoredPod>) -> Self {
        self.bound_pods.reserve(pods.len());
        for p in pods {
            match p {
                StoredPod::Bound(b) => self.bound_pods.push(b.clone()),
                StoredPod::Whole(p) => self.pods.push(ObservedPod::clone(p)),
            }
        }
        self
    }
}

/// One kind shared between its watch task and the passes.
pub type Shared<T> = Arc<Mutex<Kind<T>>>;

/// Locks a kind (a poisoned lock only means a watch task panicked mid-update; the data is
/// still a consistent map).
pub fn lock<T: Decode>(kind: &Shared<T>) -> MutexGuard<'_, Kind<T>> {
    kind.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Every kind the member loop watches.
#[derive(Debug, Clone, Default)]
pub struct Stores {
    /// `apps/v1` Deployments.
    pub deployments: Shared<Deployment>,
    /// `autoscaling/v2` HorizontalPodAutoscalers.
    pub autoscalers: Shared<Autoscaler>,
    /// Pods that are not finished.
    pub pods: Shared<StoredPod>,
    /// Nodes.
    pub nodes: Shared<Node>,
    /// Namespaces.
    pub namespaces: Shared<Namespace>,
    /// Karpenter NodePools (none without the CRD).
    pub node_pools: Shared<NodePool>,
    /// Karpenter NodeClaims (none without the CRD).
    pub node_claims: Shared<NodeClaim>,
    /// Events on NodeClaims.
    pub events: Shared<KubeEvent>,
    /// Every AdaptivePolicy copy.
    pub policies: Shared<PolicyCopy>,
}

impl Stores {
    /// Whether every kind has been listed (or found absent).
    pub fn listed(&self) -> bool {
        lock(&self.deployments).listed()
            && lock(&self.autoscalers).listed()
            && lock(&self.pods).listed()
            && lock(&self.nodes).listed()
            && lock(&self.namespaces).listed()
            && lock(&self.node_pools).listed()
            && lock(&self.node_claims).listed()
            && lock(&self.events).listed()
            && lock(&self.policies).listed()
    }

    /// The cluster's objects lent to a pass as the report reads them (`namespace` and
    /// `promised` are filled per policy by `observe::report_in`); give them back with
    /// [`Stores::give_back`]. The pods are copied instead: a pod read once shares its data
    /// with its copy (a few reference counts), and the few kept whole are cloned; every other
    /// kind is moved out and back, so a pass needs no second copy of the cluster.
    pub fn lend(&self) -> MemberObservation {
        MemberObservation {
            namespace: String::new(),
            deployments: lent(&self.deployments),
            autoscalers: lent(&self.autoscalers),
            pods: Vec::new(),
            bound_pods: Vec::new(),
            nodes: lent(&self.nodes),
            namespaces: lent(&self.namespaces),
            node_pools: lent(&self.node_pools),
            node_claims: lent(&self.node_claims),
            events: lent(&self.events),
            promised: Vec::new(),
        }
        .with_pods(lock(&self.pods).settled().objects().values())
    }

    /// Takes back what [`Stores::lend`] lent and applies the watch events that waited (the
    /// pods, a copy, are dropped).
    pub fn give_back(&self, observation: MemberObservation) {
        let errors = [
            back(&self.deployments, observation.deployments),
            back(&self.autoscalers, observation.autoscalers),
            back(&self.nodes, observation.nodes),
            back(&self.namespaces, observation.namespaces),
            back(&self.node_pools, observation.node_pools),
            back(&self.node_claims, observation.node_claims),
            back(&self.events, observation.events),
        ];
        for e in errors.iter().flatten() {
            tracing::warn!(error = %crate::one_line(e), "object left out of the report: cannot be read");
        }
    }

    /// A copy of what the cluster holds now, as the report reads it (tests and measurements;
    /// the passes borrow through [`Stores::lend`]).
    pub fn observation(&self) -> MemberObservation {
        MemberObservation {
            namespace: String::new(),
            deployments: lock(&self.deployments).to_vec(),
            autoscalers: lock(&self.autoscalers).to_vec(),
            pods: Vec::new(),
            bound_pods: Vec::new(),
            nodes: lock(&self.nodes).to_vec(),
            namespaces: lock(&self.namespaces).to_vec(),
            node_pools: lock(&self.node_pools).to_vec(),
            node_claims: lock(&self.node_claims).to_vec(),
            events: lock(&self.events).to_vec(),
            promised: Vec::new(),
        }
        .with_pods(lock(&self.pods).objects().values())
    }

    /// Every policy copy, in key order.
    pub fn policies(&self) -> Vec<PolicyCopy> {
        lock(&self.policies).to_vec()
    }
}

#[cfg(test)]
mod tests;
