//! Watches and reflector caches of everything the snapshot reads
//! (docs/design-runtime.md#observation-loop).
//!
//! One watcher per kind, cluster-wide. Pods and Nodes, the kinds that reach tens of thousands of
//! objects, are decoded straight into the slim types of [`crate::run::decode::slim`] (nothing else is ever
//! allocated) and listed by [`crate::run::watch::list_watch`]: one request (the first served from the API
//! server's watch cache), in protobuf when the server offers it, each object decoded as the
//! body streams in. The other kinds use
//! kube's watcher and keep the `modify` hook of `run::decode::strip`. Each kind tracks whether its
//! first list finished and whether its watch is currently failing: a snapshot needs Nodes,
//! Pods, InferenceServices and InferenceReplicas listed and healthy ("build snapshot: ..."
//! otherwise), so no pass acts on a cache that stopped following the API server. Models, PVCs,
//! PVs and PodGroups are optional (a missing CRD leaves them empty). A kind's first list
//! completing wakes [`Caches::wait_listed`], so a snapshot waits for no poll; at a cold start
//! the first one reads the Pods while they are listed (`run::decode::first_list`).
//!
//! The Node watcher also runs the early ticker (docs/design-policies.md#early-passes): an update
//! whose old and new objects differ as `early::warrants` says sends a non-blocking signal on a
//! channel of capacity 1.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use alfred_model::Timestamp;
use alfred_observe::{ClusterObjects, Observation, ObserveSettings};
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use tokio::sync::{Notify, mpsc};

use crate::run::decode::first_list::{FirstList, FirstPods};
use crate::run::decode::slim::{SlimNode, SlimPod};
use crate::run::decode::strip;
use crate::run::watch::config::ConfigStore;
use crate::run::watch::early;
use crate::run::watch::list_watch::{self, Encoding, ListFrom};

/// A watch is considered failing for this long after its last error.
const FAILING_FOR: Duration = Duration::from_secs(30);

/// Sync and health of one kind's watch.
pub struct WatchHealth {
    kind: &'static str,
    synced: AtomicBool,
    /// Whether the watch ever failed (an optional kind whose CRD is missing never lists).
    failed_once: AtomicBool,
    /// Milliseconds since `origin` of the last error, or -1.
    last_error_ms: AtomicI64,
    origin: Instant,
    /// Shared by every kind: woken when one finishes its first list.
    listed: Arc<Notify>,
}

impl WatchHealth {
    fn new(kind: &'static str, listed: Arc<Notify>) -> Arc<WatchHealth> {
        Arc::new(WatchHealth {
            kind,
            synced: AtomicBool::new(false),
            failed_once: AtomicBool::new(false),
            last_error_ms: AtomicI64::new(-1),
            origin: Instant::now(),
            listed,
        })
    }

    fn now_ms(&self) -> i64 {
        i64::try_from(self.origin.elapsed().as_millis()).unwrap_or(i64::MAX)
    }

    fn error(&self) {
        self.last_error_ms.store(self.now_ms(), Ordering::SeqCst);
        if !self.failed_once.swap(true, Ordering::SeqCst) {
            self.listed.notify_waiters();
        }
    }

    /// Called after the reflector applied `e` to the store, so a kind counts as listed only
    /// once its objects are readable (the store swaps the listed objects in on `InitDone`).
    fn ok<K>(&self, e: &Event<K>) {
        self.last_error_ms.store(-1, Ordering::SeqCst);
        if matches!(e, Event::InitDone) && !self.synced.swap(true, Ordering::SeqCst) {
            tracing::debug!(kind = self.kind, "first list done");
            self.listed.notify_waiters();
        }
    }

    /// `Err` naming the kind when it has not listed yet or is failing.
    pub fn check(&self) -> Result<(), String> {
        if !self.synced.load(Ordering::SeqCst) {
            return Err(format!("{} not listed yet", self.kind));
        }
        let e = self.last_error_ms.load(Ordering::SeqCst);
        let failing_ms = i64::try_from(FAILING_FOR.as_millis()).unwrap_or(i64::MAX);
        if e >= 0 && self.now_ms() - e < failing_ms {
            return Err(format!("{} watch is failing", self.kind));
        }
        Ok(())
    }

    /// Whether the first list finished.
    pub fn synced(&self) -> bool {
        self.synced.load(Ordering::SeqCst)
    }

    /// Whether the kind has said what it has: listed, or failed (absent) at least once.
    pub fn settled(&self) -> bool {
        self.synced() || self.failed_once.load(Ordering::SeqCst)
    }
}

/// A cache of one kind.
pub struct Cache<K: kube::Resource + 'static>
where
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    /// The reflector store.
    pub store: Store<K>,
    /// Its health.
    pub health: Arc<WatchHealth>,
}

impl<K> Cache<K>
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    fn objects(&self) -> Vec<K> {
        self.store.state().iter().map(|o| (**o).clone()).collect()
    }
}

/// Every cache.
pub struct Caches {
    /// Nodes.
    pub nodes: Cache<SlimNode>,
    /// Pods.
    pub pods: Cache<SlimPod>,
    /// PVCs.
    pub pvcs: Cache<PersistentVolumeClaim>,
    /// PVs.
    pub pvs: Cache<PersistentVolume>,
    /// InferenceServices.
    pub isvcs: Cache<DynamicObject>,
    /// InferenceReplicas.
    pub irs: Cache<DynamicObject>,
    /// ClusterBaseModels.
    pub cluster_base_models: Cache<DynamicObject>,
    /// BaseModels.
    pub base_models: Cache<DynamicObject>,
    /// PodGroups.
    pub pod_groups: Cache<DynamicObject>,
    /// Woken whenever a kind finishes its first list.
    listed: Arc<Notify>,
    /// The Pods of the first list as they stream in ([`crate::run::decode::first_list`]).
    first_pods: Arc<FirstPods>,
}

/// An OME or scheduling kind read as JSON.
struct DynKind {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    keep_status: bool,
}

impl DynKind {
    fn resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(self.group, self.version, self.kind),
            self.plural,
        )
    }
    fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }
}

const ISVC: DynKind = DynKind {
    group: "ome.io",
    version: "v1beta1",
    kind: "InferenceService",
    plural: "inferenceservices",
    keep_status: false,
};
const IR: DynKind = DynKind {
    group: "ome.io",
    version: "v1beta1",
    kind: "InferenceReplica",
    plural: "inferencereplicas",
    keep_status: true,
};
const CBM: DynKind = DynKind {
    group: "ome.io",
    version: "v1beta1",
    kind: "ClusterBaseModel",
    plural: "clusterbasemodels",
    keep_status: true,
};
const BM: DynKind = DynKind {
    group: "ome.io",
    version: "v1beta1",
    kind: "BaseModel",
    plural: "basemodels",
    keep_status: true,
};
const PG: DynKind = DynKind {
    group: "scheduling.x-k8s.io",
    version: "v1alpha1",
    kind: "PodGroup",
    plural: "podgroups",
    keep_status: true,
};

/// List page size of the small kinds (PVCs, PVs, OME objects, PodGroups).
const PAGE_SIZE: u32 = 500;

fn watcher_config(page_size: u32) -> watcher::Config {
    watcher::Config::default().page_size(page_size)
}

fn spawn_typed<K>(
    events: impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static,
    strip: fn(&mut K),
    listed: &Arc<Notify>,
    on_event: impl Fn(&Store<K>, Option<&Event<K>>) + Send + 'static,
) -> Cache<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = reflector::store();
    let kind = K::kind(&()).into_owned();
    let health = WatchHealth::new(Box::leak(kind.into_boxed_str()), listed.clone());
    let h = health.clone();
    let reader = store.clone();
    let stream = events
        .default_backoff()
        .modify(strip)
        // Before the store applies the event: `on_event` compares with the cached object.
        // (`None`: an error.)
        .inspect(move |r| on_event(&reader, r.as_ref().ok()))
        .reflect(writer)
        .inspect(move |r| match r {
            Ok(e) => h.ok(e),
            Err(err) => {
                h.error();
                tracing::warn!(kind = h.kind, error = %err, "watch failed; retrying");
            }
        });
    tokio::spawn(stream.for_each(|_| futures::future::ready(())));
    Cache { store, health }
}

fn spawn_dynamic(client: &Client, k: DynKind, listed: &Arc<Notify>) -> Cache<DynamicObject> {
    let ar = k.resource();
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let writer = reflector::store::Writer::new(ar);
    let store = writer.as_reader();
    let health = WatchHealth::new(k.kind, listed.clone());
    let h = health.clone();
    let api_version = k.api_version();
    let kind = k.kind;
    let keep_status = k.keep_status;
    let stream = watcher::watcher(api, watcher_config(PAGE_SIZE))
        .default_backoff()
        .modify(move |o: &mut DynamicObject| strip::dynamic(o, &api_version, kind, keep_status))
        .reflect(writer)
        .inspect(move |r| match r {
            Ok(e) => h.ok(e),
            Err(err) => {
                h.error();
                tracing::warn!(kind = h.kind, error = %err, "watch failed; retrying");
            }
        });
    tokio::spawn(stream.for_each(|_| futures::future::ready(())));
    Cache { store, health }
}

impl Caches {
    /// Starts every watch. Node updates feed the early ticker.
    pub fn start(client: &Client, config: Arc<ConfigStore>, early_tx: mpsc::Sender<()>) -> Caches {
        let listed = Arc::new(Notify::new());
        let nodes = spawn_typed(
            list_watch::watcher::<SlimNode>(client.clone(), ListFrom::WatchCache),
            |_| {},
            &listed,
            move |store: &Store<SlimNode>, e: Option<&Event<SlimNode>>| {
                if let Some(Event::Apply(new)) = e
                    && let Some(old) = store.get(&ObjectRef::from_obj(new))
                {
                    let (cfg, _) = config.current();
                    if let Some(trigger) = early::warrants(&old.to_k8s(), &new.to_k8s(), &cfg) {
                        tracing::debug!(
                            node = new.metadata.name.as_deref().unwrap_or(""),
                            trigger = ?trigger,
                            "early tick"
                        );
                        let _ = early_tx.try_send(());
                    }
                }
            },
        );
        let first_pods = Arc::new(FirstPods::new());
        let pods = spawn_typed(
            list_watch::watcher::<SlimPod>(client.clone(), ListFrom::WatchCache),
            |_| {},
            &listed,
            {
                let first_pods = first_pods.clone();
                move |_: &Store<SlimPod>, e: Option<&Event<SlimPod>>| first_pods.on_event(e)
            },
        );
        let pvcs = spawn_typed(
            watcher::watcher(
                Api::<PersistentVolumeClaim>::all(client.clone()),
                watcher_config(PAGE_SIZE),
            ),
            |p| strip::managed_fields(&mut p.metadata),
            &listed,
            |_, _| {},
        );
        let pvs = spawn_typed(
            watcher::watcher(
                Api::<PersistentVolume>::all(client.clone()),
                watcher_config(PAGE_SIZE),
            ),
            |p| strip::managed_fields(&mut p.metadata),
            &listed,
            |_, _| {},
        );
        Caches {
            nodes,
            pods,
            pvcs,
            pvs,
            isvcs: spawn_dynamic(client, ISVC, &listed),
            irs: spawn_dynamic(client, IR, &listed),
            cluster_base_models: spawn_dynamic(client, CBM, &listed),
            base_models: spawn_dynamic(client, BM, &listed),
            pod_groups: spawn_dynamic(client, PG, &listed),
            listed,
            first_pods,
        }
    }

    /// The kinds a snapshot needs.
    fn required(&self) -> [&Arc<WatchHealth>; 4] {
        [
            &self.nodes.health,
            &self.pods.health,
            &self.isvcs.health,
            &self.irs.health,
        ]
    }

    /// The kinds a snapshot reads when they exist (a missing CRD or a refused list leaves
    /// them empty).
    fn optional(&self) -> [&Arc<WatchHealth>; 5] {
        [
            &self.pvcs.health,
            &self.pvs.health,
            &self.cluster_base_models.health,
            &self.base_models.health,
            &self.pod_groups.health,
        ]
    }

    /// Whether every kind a snapshot needs finished its first list and every optional kind
    /// listed or failed: a first snapshot taken before the models were listed would call
    /// every model unresolved.
    pub fn listed(&self) -> bool {
        self.required().iter().all(|h| h.synced()) && self.optional().iter().all(|h| h.settled())
    }

    /// Whether every kind but Pods is as [`Caches::listed`] requires: the first snapshot
    /// can start and read the Pods as their list streams in.
    fn listed_but_pods(&self) -> bool {
        self.required()
            .iter()
            .filter(|h| !Arc::ptr_eq(h, &self.pods.health))
            .all(|h| h.synced())
            && self.optional().iter().all(|h| h.settled())
    }

    /// Returns once every kind but Pods is listed (at once if so), woken as
    /// [`Caches::wait_listed`] is.
    pub async fn wait_listed_but_pods(&self) {
        self.wait_for(Caches::listed_but_pods).await;
    }

    /// The objects of the first snapshot with the Pods still to come from their first list,
    /// or `None` when that list is already over, was handed out, or another kind is not
    /// ready ([`Caches::objects`] says why when the snapshot is built the usual way).
    pub fn first_objects(&self) -> Option<(CachedObjects, std::sync::mpsc::Receiver<SlimPod>)> {
        if !self.listed_but_pods() || self.first_pods.state() != FirstList::Listing {
            return None;
        }
        let objects = self.objects_but_pods().ok()?;
        let pods = self.first_pods.take_receiver()?;
        Some((objects, pods))
    }

    /// Where the first Pod list stands.
    pub fn first_list_state(&self) -> FirstList {
        self.first_pods.state()
    }

    /// Whether the first Pod list ended complete and every kind a snapshot needs is listed
    /// and healthy now: the check a snapshot built from [`Caches::first_objects`] must pass
    /// before it is published.
    pub fn first_list_complete(&self) -> Result<(), String> {
        match self.first_pods.state() {
            FirstList::Complete => {}
            FirstList::Listing => return Err("the first Pod list is not over".into()),
            FirstList::Broken => return Err("the first Pod list failed".into()),
        }
        for h in self.required() {
            h.check()?;
        }
        Ok(())
    }

    /// Returns once [`Caches::listed`] holds (at once if it does). Woken by each kind's
    /// `InitDone` or first failure, so the first snapshot does not wait for a poll.
    pub async fn wait_listed(&self) {
        self.wait_for(Caches::listed).await;
    }

    /// Returns once `ready` holds, checked again each time a kind finishes its first list.
    async fn wait_for(&self, ready: fn(&Caches) -> bool) {
        loop {
            // Created before the check: `notify_waiters` reaches a `Notified` from its creation.
            let woken = self.listed.notified();
            if ready(self) {
                return;
            }
            woken.await;
        }
    }

    /// The objects of a snapshot, or why not (a required kind not listed or failing). Nodes and
    /// Pods stay the cached slim objects (shared, not copied) until [`CachedObjects::observe`]
    /// converts them one at a time.
    pub fn objects(&self) -> Result<CachedObjects, String> {
        self.pods.health.check()?;
        let mut objects = self.objects_but_pods()?;
        objects.pods = sorted_by_key(self.pods.store.state(), |p| &p.metadata);
        Ok(objects)
    }

    /// [`Caches::objects`] without the Pods (an empty list) and without their check.
    fn objects_but_pods(&self) -> Result<CachedObjects, String> {
        for h in self.required() {
            if !Arc::ptr_eq(h, &self.pods.health) {
                h.check()?;
            }
        }
        if let Some(h) = self.optional().into_iter().find(|h| !h.settled()) {
            return Err(format!("{} not listed yet", h.kind));
        }
        let json = |c: &Cache<DynamicObject>| -> Vec<serde_json::Value> {
            c.store
                .state()
                .iter()
                .filter_map(|o| serde_json::to_value(&**o).ok())
                .collect()
        };
        let optional = |c: &Cache<DynamicObject>| {
            if c.health.synced() {
                json(c)
            } else {
                Vec::new()
            }
        };
        Ok(CachedObjects {
            others: ClusterObjects {
                nodes: Vec::new(),
                pods: Vec::new(),
                pvcs: self.pvcs.objects(),
                pvs: self.pvs.objects(),
                inference_services: json(&self.isvcs),
                inference_replicas: json(&self.irs),
                cluster_base_models: optional(&self.cluster_base_models),
                base_models: optional(&self.base_models),
                pod_groups: optional(&self.pod_groups),
                unrecognised: Vec::new(),
            },
            nodes: sorted_by_key(self.nodes.store.state(), |n| &n.metadata),
            pods: Vec::new(),
        })
    }
}

/// The store's objects (in hash order) sorted by namespace and name, the order
/// `alfred_observe` puts its records in: sorting the shared pointers here leaves it an
/// already sorted run to check instead of ~25,000 large records to move around.
fn sorted_by_key<K>(
    mut objects: Vec<Arc<K>>,
    meta: impl Fn(&K) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Vec<Arc<K>> {
    objects.sort_unstable_by(|a, b| {
        let (a, b) = (meta(a), meta(b));
        (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name))
    });
    objects
}

/// Every object a snapshot needs, read from the API server itself, not from the caches
/// (docs/design-pass.md#pre-submit-re-check step 1: the execute-mode re-check's fresh observation).
/// Lists without a `resourceVersion` are served from etcd with a quorum read, so the result is as
/// new as the server knows, never older than a watch event already seen. The same types and
/// strips as the watches, so a fresh snapshot differs from a cached one only where the
/// cluster does. A required kind that cannot be listed fails the read (the re-check then
/// says `ObservationUnavailable`); an optional one (models, PodGroups) that cannot be listed
/// counts as empty, as an unlisted cache does.
pub async fn read_uncached(client: &Client) -> Result<CachedObjects, String> {
    let (nodes, pods, pvcs, pvs, isvcs, irs, cbms, bms, pgs) = futures::join!(
        list_watch::list_all::<SlimNode>(client, ListFrom::Etcd, Encoding::PreferProtobuf),
        list_watch::list_all::<SlimPod>(client, ListFrom::Etcd, Encoding::PreferProtobuf),
        list_typed(
            Api::<PersistentVolumeClaim>::all(client.clone()),
            PAGE_SIZE,
            |p| strip::managed_fields(&mut p.metadata)
        ),
        list_typed(
            Api::<PersistentVolume>::all(client.clone()),
            PAGE_SIZE,
            |p| strip::managed_fields(&mut p.metadata)
        ),
        list_dynamic(client, ISVC),
        list_dynamic(client, IR),
        list_dynamic(client, CBM),
        list_dynamic(client, BM),
        list_dynamic(client, PG),
    );
    let optional = |r: Result<Vec<serde_json::Value>, String>| r.unwrap_or_default();
    Ok(CachedObjects {
        others: ClusterObjects {
            nodes: Vec::new(),
            pods: Vec::new(),
            pvcs: pvcs.unwrap_or_default(),
            pvs: pvs.unwrap_or_default(),
            inference_services: isvcs?,
            inference_replicas: irs?,
            cluster_base_models: optional(cbms),
            base_models: optional(bms),
            pod_groups: optional(pgs),
            unrecognised: Vec::new(),
        },
        nodes: sorted_by_key(
            nodes
                .map_err(|e| format!("list Node: {e}"))?
                .into_iter()
                .map(Arc::new)
                .collect(),
            |n| &n.metadata,
        ),
        pods: sorted_by_key(
            pods.map_err(|e| format!("list Pod: {e}"))?
                .into_iter()
                .map(Arc::new)
                .collect(),
            |p| &p.metadata,
        ),
    })
}

/// Every object of a kind, page by page, each passed through `strip`.
async fn list_typed<K>(api: Api<K>, page_size: u32, strip: fn(&mut K)) -> Result<Vec<K>, String>
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    let mut out = Vec::new();
    let mut params = ListParams::default().limit(page_size);
    loop {
        let page = api
            .list(&params)
            .await
            .map_err(|e| format!("list {}: {e}", K::kind(&())))?;
        out.extend(page.items.into_iter().map(|mut o| {
            strip(&mut o);
            o
        }));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(out),
        }
    }
}

/// [`list_typed`] for a kind read as JSON, stripped as its watch strips it.
async fn list_dynamic(client: &Client, k: DynKind) -> Result<Vec<serde_json::Value>, String> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &k.resource());
    let mut out = Vec::new();
    let mut params = ListParams::default().limit(PAGE_SIZE);
    let api_version = k.api_version();
    loop {
        let page = api
            .list(&params)
            .await
            .map_err(|e| format!("list {}: {e}", k.kind))?;
        for mut o in page.items {
            strip::dynamic(&mut o, &api_version, k.kind, k.keep_status);
            if let Ok(v) = serde_json::to_value(&o) {
                out.push(v);
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(out),
        }
    }
}

/// What one snapshot is built from: the caches' slim Nodes and Pods and every other kind as
/// `alfred_observe` reads it.
pub struct CachedObjects {
    /// Everything but Nodes and Pods (those two lists are empty).
    others: ClusterObjects,
    nodes: Vec<Arc<SlimNode>>,
    pods: Vec<Arc<SlimPod>>,
}

impl CachedObjects {
    /// Objects as the caches hold them, sorted as [`Caches::objects`] sorts them (for
    /// embedding and benchmarks: `alfred run` builds them from its caches).
    pub fn new(
        others: ClusterObjects,
        nodes: Vec<Arc<SlimNode>>,
        pods: Vec<Arc<SlimPod>>,
    ) -> CachedObjects {
        CachedObjects {
            others,
            nodes: sorted_by_key(nodes, |n| &n.metadata),
            pods: sorted_by_key(pods, |p| &p.metadata),
        }
    }

    /// [`CachedObjects::observe`] with the Pods read from `pods` as they arrive (the first
    /// snapshot, [`Caches::first_objects`]); returns when the channel closes.
    pub fn observe_arriving(
        &self,
        pods: &std::sync::mpsc::Receiver<SlimPod>,
        settings: &ObserveSettings,
        now: Timestamp,
    ) -> Observation {
        alfred_observe::observe_streamed(
            &self.others,
            self.nodes.iter().map(|n| n.to_k8s()),
            pods.iter().map(|p| p.to_observed()),
            settings,
            now,
        )
    }

    /// `alfred_observe::observe` of these objects; each Node and Pod is converted just before
    /// it is read and dropped right after, so the converted set never exists as a whole.
    pub fn observe(&self, settings: &ObserveSettings, now: Timestamp) -> Observation {
        alfred_observe::observe_streamed(
            &self.others,
            self.nodes.iter().map(|n| n.to_k8s()),
            self.pods.iter().map(|p| p.to_observed()),
            settings,
            now,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slim<K: serde::de::DeserializeOwned>(v: serde_json::Value) -> K {
        serde_json::from_value(v).expect("a slim object")
    }

    /// The first snapshot reads the Pods in the order the list delivers them, not sorted, and
    /// must come out as the snapshot of the same Pods in the cache.
    #[test]
    fn pods_read_as_they_arrive_observe_as_the_same_pods_from_the_cache() {
        let nodes: Vec<Arc<SlimNode>> = (0..6)
            .map(|i| {
                Arc::new(slim(json!({"metadata": {"name": format!("n{i}")},
                    "status": {"allocatable": {"nvidia.com/gpu": "8"},
                               "conditions": [{"type": "Ready", "status": "True"}]}})))
            })
            .collect();
        let pods: Vec<SlimPod> = (0..40)
            .map(|i| {
                slim(json!({"metadata": {"name": format!("p{:02}", (i * 7) % 40), "namespace": if i % 3 == 0 { "a" } else { "b" }},
                    "spec": {"nodeName": format!("n{}", i % 6),
                             "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]},
                    "status": {"phase": "Running"}}))
            })
            .collect();
        let settings = ObserveSettings::default();
        let now = Timestamp::from_unix_secs(1_767_229_200);
        let cached = CachedObjects::new(
            ClusterObjects::default(),
            nodes.clone(),
            pods.iter().cloned().map(Arc::new).collect(),
        );
        let (tx, arriving) = std::sync::mpsc::channel();
        for p in pods.into_iter().rev() {
            tx.send(p).expect("open");
        }
        drop(tx);
        let first = CachedObjects::new(ClusterObjects::default(), nodes, Vec::new());
        let streamed = first.observe_arriving(&arriving, &settings, now);
        assert_eq!(streamed, cached.observe(&settings, now));
        assert_eq!(streamed.snapshot.pods.len(), 40);
    }
}
