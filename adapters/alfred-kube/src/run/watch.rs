//! Watches and reflector caches of everything the snapshot reads (alfred-engine.md §4).
//!
//! One watcher per kind, cluster-wide, with the `modify` hook of [`super::strip`] so the caches
//! hold only what the snapshot builder reads. Each kind tracks whether its first list finished
//! and whether its watch is currently failing: a snapshot needs Nodes, Pods, InferenceServices
//! and InferenceReplicas listed and healthy ("build snapshot: ..." otherwise), so no pass acts
//! on a cache that stopped following the API server. Models, PVCs, PVs and PodGroups are
//! optional (a missing CRD leaves them empty).
//!
//! The Node watcher also runs the early ticker (§5.2): an update whose old and new objects
//! differ as `early::warrants` says sends a non-blocking signal on a channel of capacity 1.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use alfred_observe::ClusterObjects;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use tokio::sync::mpsc;

use super::config::ConfigStore;
use super::{early, strip};

/// A watch is considered failing for this long after its last error.
const FAILING_FOR: Duration = Duration::from_secs(30);

/// Sync and health of one kind's watch.
pub struct WatchHealth {
    kind: &'static str,
    synced: AtomicBool,
    /// Milliseconds since `origin` of the last error, or -1.
    last_error_ms: AtomicI64,
    origin: Instant,
}

impl WatchHealth {
    fn new(kind: &'static str) -> Arc<WatchHealth> {
        Arc::new(WatchHealth {
            kind,
            synced: AtomicBool::new(false),
            last_error_ms: AtomicI64::new(-1),
            origin: Instant::now(),
        })
    }

    fn now_ms(&self) -> i64 {
        i64::try_from(self.origin.elapsed().as_millis()).unwrap_or(i64::MAX)
    }

    fn error(&self) {
        self.last_error_ms.store(self.now_ms(), Ordering::SeqCst);
    }

    fn ok<K>(&self, e: &Event<K>) {
        if matches!(e, Event::InitDone) {
            self.synced.store(true, Ordering::SeqCst);
        }
        self.last_error_ms.store(-1, Ordering::SeqCst);
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
    pub nodes: Cache<Node>,
    /// Pods.
    pub pods: Cache<Pod>,
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

fn watcher_config() -> watcher::Config {
    watcher::Config::default().page_size(500)
}

fn spawn_typed<K>(
    api: Api<K>,
    strip: fn(&mut K),
    on_event: impl Fn(&Store<K>, &Event<K>) + Send + 'static,
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
    let health = WatchHealth::new(Box::leak(kind.into_boxed_str()));
    let h = health.clone();
    let reader = store.clone();
    let stream = watcher::watcher(api, watcher_config())
        .default_backoff()
        .modify(strip)
        .inspect(move |r| match r {
            Ok(e) => {
                on_event(&reader, e);
                h.ok(e);
            }
            Err(err) => {
                h.error();
                tracing::warn!(kind = h.kind, error = %err, "watch failed; retrying");
            }
        })
        .reflect(writer);
    tokio::spawn(stream.for_each(|_| futures::future::ready(())));
    Cache { store, health }
}

fn spawn_dynamic(client: &Client, k: DynKind) -> Cache<DynamicObject> {
    let ar = k.resource();
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let writer = reflector::store::Writer::new(ar);
    let store = writer.as_reader();
    let health = WatchHealth::new(k.kind);
    let h = health.clone();
    let api_version = k.api_version();
    let kind = k.kind;
    let keep_status = k.keep_status;
    let stream = watcher::watcher(api, watcher_config())
        .default_backoff()
        .modify(move |o: &mut DynamicObject| strip::dynamic(o, &api_version, kind, keep_status))
        .inspect(move |r| match r {
            Ok(e) => h.ok(e),
            Err(err) => {
                h.error();
                tracing::warn!(kind = h.kind, error = %err, "watch failed; retrying");
            }
        })
        .reflect(writer);
    tokio::spawn(stream.for_each(|_| futures::future::ready(())));
    Cache { store, health }
}

impl Caches {
    /// Starts every watch. Node updates feed the early ticker.
    pub fn start(client: &Client, config: Arc<ConfigStore>, early_tx: mpsc::Sender<()>) -> Caches {
        let nodes = spawn_typed(Api::<Node>::all(client.clone()), strip::node, {
            move |store: &Store<Node>, e: &Event<Node>| {
                if let Event::Apply(new) = e
                    && let Some(old) = store.get(&ObjectRef::from_obj(new))
                {
                    let (cfg, _) = config.current();
                    if let Some(trigger) = early::warrants(&old, new, &cfg) {
                        tracing::debug!(
                            node = new.metadata.name.as_deref().unwrap_or(""),
                            trigger = ?trigger,
                            "early tick"
                        );
                        let _ = early_tx.try_send(());
                    }
                }
            }
        });
        let pods = spawn_typed(Api::<Pod>::all(client.clone()), strip::pod, |_, _| {});
        let pvcs = spawn_typed(
            Api::<PersistentVolumeClaim>::all(client.clone()),
            |p| strip::managed_fields(&mut p.metadata),
            |_, _| {},
        );
        let pvs = spawn_typed(
            Api::<PersistentVolume>::all(client.clone()),
            |p| strip::managed_fields(&mut p.metadata),
            |_, _| {},
        );
        Caches {
            nodes,
            pods,
            pvcs,
            pvs,
            isvcs: spawn_dynamic(client, ISVC),
            irs: spawn_dynamic(client, IR),
            cluster_base_models: spawn_dynamic(client, CBM),
            base_models: spawn_dynamic(client, BM),
            pod_groups: spawn_dynamic(client, PG),
        }
    }

    /// The objects of a snapshot, or why not (a required kind not listed or failing).
    pub fn objects(&self) -> Result<ClusterObjects, String> {
        for h in [
            &self.nodes.health,
            &self.pods.health,
            &self.isvcs.health,
            &self.irs.health,
        ] {
            h.check()?;
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
        Ok(ClusterObjects {
            nodes: self.nodes.objects(),
            pods: self.pods.objects(),
            pvcs: self.pvcs.objects(),
            pvs: self.pvs.objects(),
            inference_services: json(&self.isvcs),
            inference_replicas: json(&self.irs),
            cluster_base_models: optional(&self.cluster_base_models),
            base_models: optional(&self.base_models),
            pod_groups: optional(&self.pod_groups),
            unrecognised: Vec::new(),
        })
    }
}
