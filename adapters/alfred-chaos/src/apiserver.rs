//! The in-memory API server the real `alfred run` applier talks to, through the real kube
//! client (tower-test's mock service in place of the HTTP connection).
//!
//! It holds what the applier reads and writes: alfred's ConfigMaps (the journal
//! `alfred-dispatch-state`, the recommendations), the InferenceServices of the twin's
//! running tasks (uid, resourceVersion, annotations), the twin's pending Pods
//! (`status.nominatedNodeName`) and Nodes (`spec.taints`) with uids and resourceVersions,
//! Events (accepted and dropped), and the Lease holder. JSON Patches are applied with their
//! `test`s to the object as served; a failed `test` is a 422, as kube-apiserver answers. Every request can be hit by a fault drawn from the run's RNG: a 409 on a
//! write, a 500, a timeout after the write landed or before it did, a failed read, and the
//! lease moving away right after the request. Every write that lands is logged with what the
//! invariants need to judge it at that instant (who held the lease, what was in flight).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use alfred_kube::run::apply::applier::{JOURNAL_CONFIG_MAP, JOURNAL_KEY};
use alfred_kube::run::apply::leader::LeaderGate;
use alfred_model::Timestamp;
use alfred_model::plan::PlanRecord;
use alfred_twin::rng::Rng;
use http::{Request, Response};
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};

/// alfred's namespace in the campaign.
pub const ALFRED_NAMESPACE: &str = "alfred";
/// The recommendations ConfigMap.
pub const RECOMMENDATIONS: &str = "alfred-recommendations";
/// The prefix of a migration request annotation.
pub const REQUEST_PREFIX: &str = "ome.io/migration-request-v1-";

/// Per-request fault probabilities (drawn once per run from its seed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestFaults {
    /// A write answered 409 without landing.
    pub conflict: f64,
    /// A request answered 500 without landing (reads too).
    pub server_error: f64,
    /// A write that lands but is never answered (the client's timeout fires).
    pub timeout_landed: f64,
    /// A request never answered and not applied.
    pub timeout_lost: f64,
    /// The lease moves away right after a request (a leader change at that step).
    pub lease_loss: f64,
}

/// A ConfigMap as stored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredConfigMap {
    /// Its resourceVersion.
    pub rv: u64,
    /// Its data.
    pub data: BTreeMap<String, String>,
}

/// An InferenceService as stored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredIsvc {
    /// The resourceVersion the twin's snapshot gives it (changes with its migrations).
    pub twin_rv: String,
    /// Writes to it since (annotations).
    pub bumps: u64,
    /// Annotations.
    pub annotations: BTreeMap<String, String>,
}

impl StoredIsvc {
    /// The resourceVersion served (and overlaid on the snapshot alfred reads).
    pub fn rv(&self) -> String {
        format!("{}.{}", self.twin_rv, self.bumps)
    }
}

/// What the pass that is applying its effects was built on (set by the campaign before
/// applying; recorded with each request that lands).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassContext {
    /// The pass's time.
    pub now: Option<Timestamp>,
    /// When the cached snapshot the pass decided on was observed.
    pub snapshot_observed_at: Option<Timestamp>,
    /// UUIDs of the journal as the pass read it (a request for one of them is a retry).
    pub journal_uuids: BTreeSet<String>,
    /// The breaker was open at the pass's time (by the reference model).
    pub breaker_open: bool,
    /// Migrations the twin's OMENative runs (not ended): UUID → InferenceService name.
    pub running: BTreeMap<String, String>,
    /// Every migration request UUID known to have started within the last hour (alfred's
    /// landed requests and everyone's migrations).
    pub hourly: BTreeSet<String>,
    /// The configuration in force for the pass has drain plans on (defragmentation and
    /// `drainPlans.enabled`).
    pub plans_enabled: bool,
    /// The configuration in force for the pass is in execute mode.
    pub executing: bool,
    /// The plans of the journal as the pass read it.
    pub journal_plans: Vec<PlanRecord>,
    /// The migration guard read healthy for the pass.
    pub guard_healthy: bool,
    /// The snapshot the pass decided on had OMENative's executor configured.
    pub executor_available: bool,
    /// A maintenance window was open at the pass's time (or none is configured).
    pub window_open: bool,
    /// Requests of the pass that a closed window does not hold: rows marked `emergency`, and
    /// node health's (UUIDs).
    pub window_exempt: BTreeSet<String>,
    /// Requests of the pass that are drain-plan steps: UUID → the plan's node.
    pub plan_steps: BTreeMap<String, String>,
    /// Nodes no pod could use in the snapshot the pass decided on: not ready, or under a
    /// NoSchedule taint of someone else's.
    pub unusable_nodes: BTreeSet<String>,
}

/// A taint as stored.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StoredTaint {
    /// Key.
    pub key: String,
    /// Value.
    pub value: String,
    /// Effect.
    pub effect: String,
}

/// A pending Pod as stored (namespace `twin`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredPod {
    /// Its uid.
    pub uid: String,
    /// Its resourceVersion.
    pub rv: u64,
    /// `status.nominatedNodeName`.
    pub nominated: Option<String>,
}

/// A Node as stored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredNode {
    /// Its uid.
    pub uid: String,
    /// Its resourceVersion.
    pub rv: u64,
    /// `spec.taints`, in order.
    pub taints: Vec<StoredTaint>,
}

/// A drain-plan protection write that landed: what it changed.
#[derive(Debug, Clone, PartialEq)]
pub enum ProtectionChange {
    /// `status.nominatedNodeName` of `pod` (`namespace/name`) went from `before` to `after`.
    Nomination {
        /// The Pod.
        pod: String,
        /// Before the write.
        before: Option<String>,
        /// After it.
        after: Option<String>,
    },
    /// `spec.taints` of `node` went from `before` to `after`.
    Taints {
        /// The Node.
        node: String,
        /// Before the write.
        before: Vec<StoredTaint>,
        /// After it.
        after: Vec<StoredTaint>,
    },
}

/// A protection write that landed, with the durable state at that instant.
#[derive(Debug, Clone, PartialEq)]
pub struct LandedProtection {
    /// What changed.
    pub change: ProtectionChange,
    /// The plans of the journal stored at that instant (`None`: missing or unreadable).
    pub durable_plans: Option<Vec<PlanRecord>>,
    /// The pass context it was written under.
    pub context: PassContext,
}

/// One write that reached the server (landed or not) — what the invariants judge.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteRecord {
    /// Replica that sent it.
    pub replica: usize,
    /// The replica held the lease when the server received it.
    pub lease_held: bool,
    /// `PUT configmaps/<name>`, `PATCH inferenceservices/<name>`, ...
    pub what: String,
    /// It changed the stored state.
    pub landed: bool,
    /// A request annotation it added: (UUID, InferenceService), with the state around it.
    pub request: Option<LandedRequest>,
    /// The journal text it stored.
    pub journal: Option<String>,
    /// A nomination or taint change it made.
    pub protection: Option<LandedProtection>,
}

/// A migration request annotation that landed, with the state at that instant.
#[derive(Debug, Clone, PartialEq)]
pub struct LandedRequest {
    /// Its UUID.
    pub uuid: String,
    /// The InferenceService.
    pub isvc: String,
    /// The annotation's value.
    pub payload: String,
    /// Other unresolved requests on the same Instance (annotations, running migrations).
    pub same_instance: Vec<String>,
    /// Other requests waiting or running anywhere (annotations, running migrations).
    pub in_flight_others: Vec<String>,
    /// Requests started in the last hour, this one included.
    pub hourly: usize,
    /// The pass context it was written under.
    pub context: PassContext,
}

/// A reply the mock service sends.
enum Reply {
    Json(u16, Value),
    Hang,
}

/// The API server's state.
pub struct ApiModel {
    /// alfred's ConfigMaps by name.
    pub config_maps: BTreeMap<String, StoredConfigMap>,
    /// InferenceServices of namespace `twin` by name.
    pub isvcs: BTreeMap<String, StoredIsvc>,
    /// Pending Pods by `namespace/name`.
    pub pods: BTreeMap<String, StoredPod>,
    /// Nodes by name.
    pub nodes: BTreeMap<String, StoredNode>,
    /// The replica holding the Lease.
    pub lease: Option<usize>,
    /// Each replica's leader gate (closed when its lease is lost).
    pub gates: Vec<LeaderGate>,
    /// Fault rates.
    pub faults: RequestFaults,
    /// The pass applying now.
    pub context: PassContext,
    /// Every write received, in order (drained by the campaign after each pass).
    pub writes: Vec<WriteRecord>,
    /// Requests received.
    pub requests: u64,
    /// Faults injected, by kind.
    pub injected: BTreeMap<&'static str, u64>,
    rng: Rng,
    next_rv: u64,
    events: u64,
}

impl ApiModel {
    /// An empty server for `replicas` replicas, faults drawn from `seed`.
    pub fn new(replicas: usize, faults: RequestFaults, seed: u64) -> ApiModel {
        ApiModel {
            config_maps: BTreeMap::new(),
            isvcs: BTreeMap::new(),
            pods: BTreeMap::new(),
            nodes: BTreeMap::new(),
            lease: None,
            gates: (0..replicas).map(|_| LeaderGate::new()).collect(),
            faults,
            context: PassContext::default(),
            writes: Vec::new(),
            requests: 0,
            injected: BTreeMap::new(),
            rng: Rng::new(seed),
            next_rv: 100,
            events: 0,
        }
    }

    /// A new resourceVersion.
    pub fn bump(&mut self) -> u64 {
        self.next_rv += 1;
        self.next_rv
    }

    /// The journal text stored, if the ConfigMap and the key exist.
    pub fn journal_text(&self) -> Option<&str> {
        self.config_maps
            .get(JOURNAL_CONFIG_MAP)
            .and_then(|c| c.data.get(JOURNAL_KEY))
            .map(String::as_str)
    }

    /// An administrator's write of the journal (creates the ConfigMap when missing).
    pub fn admin_write_journal(&mut self, text: &str) {
        let rv = self.bump();
        let cm = self
            .config_maps
            .entry(JOURNAL_CONFIG_MAP.to_owned())
            .or_default();
        cm.rv = rv;
        cm.data.insert(JOURNAL_KEY.to_owned(), text.to_owned());
    }

    /// Moves the lease to `holder` (closing every other gate, opening the holder's).
    pub fn set_lease(&mut self, holder: Option<usize>) {
        self.lease = holder;
        for (i, g) in self.gates.iter().enumerate() {
            g.set(Some(i) == holder);
        }
    }

    fn count(&mut self, kind: &'static str) {
        *self.injected.entry(kind).or_insert(0) += 1;
    }

    /// Every request annotation stored: UUID → InferenceService.
    pub fn request_annotations(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (name, isvc) in &self.isvcs {
            for k in isvc.annotations.keys() {
                if let Some(uuid) = k.strip_prefix(REQUEST_PREFIX) {
                    out.insert(uuid.to_owned(), name.clone());
                }
            }
        }
        out
    }

    /// Serves one request from `replica`.
    fn serve(&mut self, replica: usize, method: &str, path: &str, body: &Value) -> Reply {
        self.requests += 1;
        let write = method != "GET";
        let roll = self.rng.uniform();
        let f = self.faults.clone();
        let recorded = self.writes.len();
        // Faults that stop the request before it is applied.
        let mut cut = 0.0;
        let mut before = |p: f64| {
            cut += p;
            roll < cut
        };
        let reply = if before(f.server_error) {
            self.count("server_error");
            status(500, "InternalError")
        } else if before(f.timeout_lost) {
            self.count("timeout_lost");
            Reply::Hang
        } else if write && before(f.conflict) {
            self.count("conflict");
            status(409, "Conflict")
        } else {
            let landed_then_hang = write && before(f.timeout_landed);
            let reply = self.apply(replica, method, path, body);
            if landed_then_hang {
                self.count("timeout_landed");
                Reply::Hang
            } else {
                reply
            }
        };
        if write && self.writes.len() == recorded {
            // A write that did not land is recorded too (the lease check covers every write sent).
            self.writes.push(WriteRecord {
                replica,
                lease_held: self.lease == Some(replica),
                what: what(method, path),
                landed: false,
                request: None,
                journal: None,
                protection: None,
            });
        }
        if self.lease == Some(replica) && self.rng.uniform() < f.lease_loss {
            self.count("lease_lost_mid_pass");
            self.set_lease(None);
        }
        reply
    }

    /// Applies a request that no fault stopped.
    fn apply(&mut self, replica: usize, method: &str, path: &str, body: &Value) -> Reply {
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match (method, parts.as_slice()) {
            ("GET", ["api", "v1", "namespaces", _, "configmaps", name]) => {
                match self.config_maps.get(*name) {
                    Some(cm) => Reply::Json(200, config_map_json(name, cm)),
                    None => status(404, "NotFound"),
                }
            }
            ("PUT", ["api", "v1", "namespaces", _, "configmaps", name]) => {
                let sent_rv = body
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let Some(current) = self.config_maps.get(*name) else {
                    return status(404, "NotFound");
                };
                if sent_rv != current.rv.to_string() {
                    return status(409, "Conflict");
                }
                let data: BTreeMap<String, String> = body
                    .get("data")
                    .and_then(|d| serde_json::from_value(d.clone()).ok())
                    .unwrap_or_default();
                let rv = self.bump();
                let journal = (*name == JOURNAL_CONFIG_MAP)
                    .then(|| data.get(JOURNAL_KEY).cloned())
                    .flatten();
                let cm = StoredConfigMap { rv, data };
                let reply = config_map_json(name, &cm);
                self.config_maps.insert((*name).to_owned(), cm);
                self.writes.push(WriteRecord {
                    replica,
                    lease_held: self.lease == Some(replica),
                    what: what(method, path),
                    landed: true,
                    request: None,
                    journal,
                    protection: None,
                });
                Reply::Json(200, reply)
            }
            (
                "GET",
                [
                    "apis",
                    "ome.io",
                    "v1beta1",
                    "namespaces",
                    ns,
                    "inferenceservices",
                    name,
                ],
            ) => match self.isvcs.get(*name) {
                Some(i) => Reply::Json(200, isvc_json(ns, name, i)),
                None => status(404, "NotFound"),
            },
            (
                "PATCH",
                [
                    "apis",
                    "ome.io",
                    "v1beta1",
                    "namespaces",
                    ns,
                    "inferenceservices",
                    name,
                ],
            ) => self.patch_isvc(replica, ns, name, body, &what(method, path)),
            ("POST", ["api", "v1", "namespaces", _, "events"])
            | ("PATCH", ["api", "v1", "namespaces", _, "events", _]) => {
                self.events += 1;
                self.writes.push(WriteRecord {
                    replica,
                    lease_held: self.lease == Some(replica),
                    what: what(method, path),
                    landed: true,
                    request: None,
                    journal: None,
                    protection: None,
                });
                let mut ev = body.clone();
                if ev.is_object() {
                    ev["metadata"]["name"] = json!(format!("ev-{}", self.events));
                    ev["metadata"]["resourceVersion"] = json!("1");
                }
                Reply::Json(201, ev)
            }
            ("GET", ["api", "v1", "namespaces", ns, "pods", name]) => {
                match self.pods.get(&format!("{ns}/{name}")) {
                    Some(p) => Reply::Json(200, pod_json(ns, name, p)),
                    None => status(404, "NotFound"),
                }
            }
            ("PATCH", ["api", "v1", "namespaces", ns, "pods", name, "status"]) => {
                self.patch_pod(replica, ns, name, body, &what(method, path))
            }
            ("GET", ["api", "v1", "nodes", name]) => match self.nodes.get(*name) {
                Some(n) => Reply::Json(200, node_json(name, n)),
                None => status(404, "NotFound"),
            },
            ("PATCH", ["api", "v1", "nodes", name]) => {
                self.patch_node(replica, name, body, &what(method, path))
            }
            _ => status(404, "NotFound"),
        }
    }

    fn patch_isvc(
        &mut self,
        replica: usize,
        ns: &str,
        name: &str,
        body: &Value,
        what: &str,
    ) -> Reply {
        let Some(isvc) = self.isvcs.get(name) else {
            return status(404, "NotFound");
        };
        let mut added = Vec::new();
        for op in body.as_array().into_iter().flatten() {
            let path = op.get("path").and_then(Value::as_str).unwrap_or_default();
            let value = op.get("value");
            match op.get("op").and_then(Value::as_str) {
                Some("test") => {
                    let have = match path {
                        "/metadata/uid" => json!(isvc_uid(name)),
                        "/metadata/resourceVersion" => json!(isvc.rv()),
                        _ => Value::Null,
                    };
                    if value != Some(&have) {
                        return status(422, "Invalid");
                    }
                }
                Some("add") if path == "/metadata/annotations" => {}
                Some("add") => match path.strip_prefix("/metadata/annotations/") {
                    Some(key) => added.push((
                        key.replace("~1", "/").replace("~0", "~"),
                        value.and_then(Value::as_str).unwrap_or_default().to_owned(),
                    )),
                    None => return status(422, "Invalid"),
                },
                _ => return status(422, "Invalid"),
            }
        }
        let others = self.request_annotations();
        let ctx = self.context.clone();
        let mut request = None;
        for (key, payload) in &added {
            if let Some(uuid) = key.strip_prefix(REQUEST_PREFIX) {
                let mut same: Vec<String> = others
                    .iter()
                    .filter(|(u, n)| *n == name && *u != uuid)
                    .map(|(u, _)| u.clone())
                    .collect();
                same.extend(
                    ctx.running
                        .iter()
                        .filter(|(u, n)| *n == name && *u != uuid)
                        .map(|(u, _)| u.clone()),
                );
                let in_flight: BTreeSet<String> = others
                    .keys()
                    .chain(ctx.running.keys())
                    .filter(|u| *u != uuid)
                    .cloned()
                    .collect();
                let mut hourly = ctx.hourly.clone();
                hourly.insert(uuid.to_owned());
                request = Some(LandedRequest {
                    uuid: uuid.to_owned(),
                    isvc: name.to_owned(),
                    payload: payload.clone(),
                    same_instance: same,
                    in_flight_others: in_flight.into_iter().collect(),
                    hourly: hourly.len(),
                    context: ctx.clone(),
                });
            }
        }
        let isvc = self.isvcs.get_mut(name).expect("checked above");
        for (k, v) in added {
            isvc.annotations.insert(k, v);
        }
        isvc.bumps += 1;
        let reply = isvc_json(ns, name, isvc);
        self.writes.push(WriteRecord {
            replica,
            lease_held: self.lease == Some(replica),
            what: what.to_owned(),
            landed: true,
            request,
            journal: None,
            protection: None,
        });
        Reply::Json(200, reply)
    }

    /// The plans of the journal stored now (`None`: missing or unreadable).
    pub fn durable_plans(&self) -> Option<Vec<PlanRecord>> {
        let text = self.journal_text()?;
        alfred_dispatch::Journal::parse(text).ok().map(|j| j.plans)
    }

    /// A JSON Patch of `pods/<name>/status`: applied to the Pod as served, `test`s and all.
    fn patch_pod(
        &mut self,
        replica: usize,
        ns: &str,
        name: &str,
        body: &Value,
        what: &str,
    ) -> Reply {
        let key = format!("{ns}/{name}");
        let Some(pod) = self.pods.get(&key) else {
            return status(404, "NotFound");
        };
        let mut doc = pod_json(ns, name, pod);
        if let Err(r) = json_patch_apply(&mut doc, body) {
            return r;
        }
        let after = doc
            .pointer("/status/nominatedNodeName")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let before = pod.nominated.clone();
        let rv = self.bump();
        let pod = self.pods.get_mut(&key).expect("checked above");
        pod.nominated = after.clone();
        pod.rv = rv;
        let reply = pod_json(ns, name, pod);
        self.log_protection_write(
            replica,
            what,
            ProtectionChange::Nomination {
                pod: key,
                before,
                after,
            },
        );
        Reply::Json(200, reply)
    }

    /// A JSON Patch of a Node: applied to the Node as served, `test`s and all.
    fn patch_node(&mut self, replica: usize, name: &str, body: &Value, what: &str) -> Reply {
        let Some(node) = self.nodes.get(name) else {
            return status(404, "NotFound");
        };
        let mut doc = node_json(name, node);
        if let Err(r) = json_patch_apply(&mut doc, body) {
            return r;
        }
        let after: Vec<StoredTaint> = doc
            .pointer("/spec/taints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|t| StoredTaint {
                key: str_at(t, "key"),
                value: str_at(t, "value"),
                effect: str_at(t, "effect"),
            })
            .collect();
        let before = node.taints.clone();
        let rv = self.bump();
        let node = self.nodes.get_mut(name).expect("checked above");
        node.taints = after.clone();
        node.rv = rv;
        let reply = node_json(name, node);
        self.log_protection_write(
            replica,
            what,
            ProtectionChange::Taints {
                node: name.to_owned(),
                before,
                after,
            },
        );
        Reply::Json(200, reply)
    }

    /// Logs a nomination or taint write that landed, with what the invariants judge it by.
    fn log_protection_write(&mut self, replica: usize, what: &str, change: ProtectionChange) {
        let protection = self.landed_protection(change);
        self.writes.push(WriteRecord {
            replica,
            lease_held: self.lease == Some(replica),
            what: what.to_owned(),
            landed: true,
            request: None,
            journal: None,
            protection: Some(protection),
        });
    }

    fn landed_protection(&self, change: ProtectionChange) -> LandedProtection {
        LandedProtection {
            change,
            durable_plans: self.durable_plans(),
            context: self.context.clone(),
        }
    }
}

/// Applies a JSON Patch document to `doc`: a malformed patch is a 400, a failed `test` (or
/// an op on a missing path) a 422, as kube-apiserver answers.
fn json_patch_apply(doc: &mut Value, body: &Value) -> Result<(), Reply> {
    let patch: json_patch::Patch =
        serde_json::from_value(body.clone()).map_err(|_| status(400, "BadRequest"))?;
    json_patch::patch(doc, &patch).map_err(|_| status(422, "Invalid"))
}

fn str_at(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn what(method: &str, path: &str) -> String {
    let parts: Vec<&str> = path.split('/').collect();
    let n = parts.len();
    let tail = if n >= 2 {
        format!("{}/{}", parts[n - 2], parts[n - 1])
    } else {
        path.to_owned()
    };
    format!("{method} {tail}")
}

/// The uid of a twin InferenceService (as the twin's snapshot names it).
pub fn isvc_uid(name: &str) -> String {
    format!("uid-isvc-{name}")
}

fn status(code: u16, reason: &str) -> Reply {
    Reply::Json(
        code,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("chaos {code}"), "reason": reason, "code": code}),
    )
}

fn config_map_json(name: &str, cm: &StoredConfigMap) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ALFRED_NAMESPACE, "uid": format!("uid-cm-{name}"),
                     "resourceVersion": cm.rv.to_string()},
        "data": cm.data,
    })
}

fn isvc_json(ns: &str, name: &str, i: &StoredIsvc) -> Value {
    let mut meta = json!({"name": name, "namespace": ns, "uid": isvc_uid(name),
                          "resourceVersion": i.rv(), "generation": 1});
    if !i.annotations.is_empty() {
        meta["annotations"] = json!(i.annotations);
    }
    json!({"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": meta})
}

fn pod_json(ns: &str, name: &str, p: &StoredPod) -> Value {
    let mut status = json!({"phase": "Pending"});
    if let Some(n) = &p.nominated {
        status["nominatedNodeName"] = json!(n);
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": p.uid, "resourceVersion": p.rv.to_string()},
        "status": status,
    })
}

fn node_json(name: &str, n: &StoredNode) -> Value {
    let mut spec = json!({});
    if !n.taints.is_empty() {
        let taints: Vec<Value> = n
            .taints
            .iter()
            .map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect}))
            .collect();
        spec["taints"] = json!(taints);
    }
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": n.uid, "resourceVersion": n.rv.to_string()},
        "spec": spec,
    })
}

/// Requests left unanswered (their client times out); dropped at the end of the pass.
pub type Hung = Arc<Mutex<Vec<tower_test::mock::SendResponse<Response<Body>>>>>;

/// A kube client for `replica` whose requests `model` serves. Call inside the campaign's
/// tokio runtime.
pub fn client(model: Arc<Mutex<ApiModel>>, replica: usize, hung: Hung) -> Client {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    tokio::spawn(async move {
        while let Some((req, send)) = handle.next_request().await {
            let (parts, body) = req.into_parts();
            let bytes = body.collect_bytes().await.unwrap_or_default();
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let reply = lock(&model).serve(replica, parts.method.as_str(), parts.uri.path(), &body);
            match reply {
                Reply::Json(code, v) => {
                    let mut response =
                        Response::new(Body::from(serde_json::to_vec(&v).unwrap_or_default()));
                    *response.status_mut() =
                        http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::OK);
                    response.headers_mut().insert(
                        http::header::CONTENT_TYPE,
                        http::HeaderValue::from_static("application/json"),
                    );
                    send.send_response(response);
                }
                Reply::Hang => lock(&hung).push(send),
            }
        }
    });
    Client::new(service, "default")
}

/// Locks a mutex, poisoned or not.
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alfred_kube::run::apply::applier::{Applier, Outcome};
    use alfred_kube::run::telemetry::metrics::Metrics;
    use alfred_model::effect::Effect;
    use alfred_model::plan::DRAIN_TAINT_KEY;

    const POD: &str = "twin/t3-engine-0";

    fn model() -> Arc<Mutex<ApiModel>> {
        let mut m = ApiModel::new(1, RequestFaults::default(), 7);
        m.set_lease(Some(0));
        m.pods.insert(
            POD.into(),
            StoredPod {
                uid: "uid-p".into(),
                rv: 5,
                nominated: None,
            },
        );
        m.nodes.insert(
            "n01".into(),
            StoredNode {
                uid: "uid-n01".into(),
                rv: 6,
                taints: vec![StoredTaint {
                    key: "example.com/gpu".into(),
                    value: "bad".into(),
                    effect: "PreferNoSchedule".into(),
                }],
            },
        );
        Arc::new(Mutex::new(m))
    }

    /// Applies `effects` in turn with the real applier; their outcomes.
    fn apply(model: &Arc<Mutex<ApiModel>>, effects: &[Effect]) -> Vec<Outcome> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime");
        let gate = lock(model).gates[0].clone();
        rt.block_on(async {
            let applier = Applier::new(
                client(model.clone(), 0, Hung::default()),
                ALFRED_NAMESPACE,
                gate,
                Arc::new(Metrics::new()),
            );
            let mut out = Vec::new();
            for e in effects {
                out.push(applier.apply_one(e).await);
            }
            out
        })
    }

    fn nominate(node: &str) -> Effect {
        Effect::NominatePod {
            namespace: "twin".into(),
            name: "t3-engine-0".into(),
            uid: "uid-p".into(),
            node: node.into(),
            plan_id: "dp-1".into(),
        }
    }

    #[test]
    fn the_applier_nominates_clears_and_never_overwrites_a_nomination() {
        let m = model();
        let clear = Effect::ClearNomination {
            namespace: "twin".into(),
            name: "t3-engine-0".into(),
            uid: "uid-p".into(),
            node: "n01".into(),
            plan_id: "dp-1".into(),
        };
        assert_eq!(apply(&m, &[nominate("n01")]), vec![Outcome::Applied]);
        let rv = {
            let g = lock(&m);
            assert_eq!(g.pods[POD].nominated.as_deref(), Some("n01"));
            g.pods[POD].rv
        };
        assert!(rv > 5, "the write bumps the resourceVersion");
        // Nominated elsewhere: never overwritten, nothing sent; clearing leaves it too.
        lock(&m).pods.get_mut(POD).expect("pod").nominated = Some("n02".into());
        assert_eq!(apply(&m, &[nominate("n01")]), vec![Outcome::Conflict]);
        assert_eq!(
            apply(&m, std::slice::from_ref(&clear)),
            vec![Outcome::Applied]
        );
        assert_eq!(lock(&m).pods[POD].nominated.as_deref(), Some("n02"));
        lock(&m).pods.get_mut(POD).expect("pod").nominated = Some("n01".into());
        assert_eq!(apply(&m, &[clear]), vec![Outcome::Applied]);
        assert_eq!(lock(&m).pods[POD].nominated, None);
        let writes = std::mem::take(&mut lock(&m).writes);
        assert_eq!(writes.iter().filter(|w| w.protection.is_some()).count(), 2);
    }

    #[test]
    fn a_failed_json_patch_test_is_a_422_and_changes_nothing() {
        let m = model();
        let stale = json!([
            {"op": "test", "path": "/metadata/uid", "value": "uid-p"},
            {"op": "test", "path": "/metadata/resourceVersion", "value": "4"},
            {"op": "add", "path": "/status/nominatedNodeName", "value": "n01"},
        ]);
        let mut g = lock(&m);
        let Reply::Json(code, _) = g.serve(
            0,
            "PATCH",
            "/api/v1/namespaces/twin/pods/t3-engine-0/status",
            &stale,
        ) else {
            panic!("an answer");
        };
        assert_eq!(code, 422);
        assert_eq!(g.pods[POD].nominated, None);
        let Reply::Json(code, _) =
            g.serve(0, "GET", "/api/v1/namespaces/twin/pods/gone", &Value::Null)
        else {
            panic!("an answer");
        };
        assert_eq!(code, 404);
    }

    #[test]
    fn the_applier_taints_and_untaints_keeping_other_taints() {
        let m = model();
        let taint = Effect::TaintNode {
            node: "n01".into(),
            uid: "uid-n01".into(),
            plan_id: "dp-1".into(),
        };
        let untaint = Effect::UntaintNode {
            node: "n01".into(),
            uid: "uid-n01".into(),
            plan_id: "dp-1".into(),
        };
        assert_eq!(apply(&m, &[taint]), vec![Outcome::Applied]);
        let taints = lock(&m).nodes["n01"].taints.clone();
        assert_eq!(taints.len(), 2);
        assert_eq!(taints[0].key, "example.com/gpu");
        assert_eq!(
            (
                taints[1].key.as_str(),
                taints[1].value.as_str(),
                taints[1].effect.as_str()
            ),
            (DRAIN_TAINT_KEY, "dp-1", "NoSchedule")
        );
        assert_eq!(apply(&m, &[untaint]), vec![Outcome::Applied]);
        let taints = lock(&m).nodes["n01"].taints.clone();
        assert_eq!(taints.len(), 1);
        assert_eq!(taints[0].key, "example.com/gpu");
    }

    #[test]
    fn a_protection_write_without_the_lease_is_not_sent() {
        let m = model();
        lock(&m).set_lease(None);
        assert_ne!(apply(&m, &[nominate("n01")]), vec![Outcome::Applied]);
        let g = lock(&m);
        assert_eq!(g.pods[POD].nominated, None);
        assert!(g.writes.is_empty(), "{:?}", g.writes);
    }
}
