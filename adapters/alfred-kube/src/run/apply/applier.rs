//! Applies a pass's effects to the cluster (docs/design-runtime.md#applying-effects: the request
//! of docs/design-pass.md#migration-request, the journal of docs/design-pass.md#journal, the
//! record of docs/design-pass.md#the-record, the Events of docs/metrics-and-events.md#events).
//!
//! * Every write is checked against the [`LeaderGate`] just before it is sent (again before
//!   each request of a read-modify-write and of each conflict retry): a lost lease stops
//!   writes at once (docs/design-runtime.md#leader-election); the remaining effects are skipped.
//! * `UpdateRecommendations`: GET (uncached), set/delete the keys, PUT with the read
//!   `resourceVersion`; a 409 re-reads and retries (at most [`CONFLICT_RETRIES`] times); other
//!   keys are preserved. A missing ConfigMap is logged once and skipped. Never server-side apply.
//! * `RecordEvent`: a core v1 Event (see `run::apply::events`).
//! * `RequestMigration`: GET the InferenceService (the annotation already holding the identical
//!   payload counts as done), then one JSON Patch: `test /metadata/uid`,
//!   `test /metadata/resourceVersion`, `add /metadata/annotations {}` only when absent, `add` the
//!   one annotation.
//! * `WriteJournal`: PUT of `alfred-dispatch-state` with the `resourceVersion` last read; a
//!   conflict is not retried (the next pass re-reads the journal).
//! * `NominatePod` (drain plans, `protection: nominate`, docs/design-policies.md#drain-plans): GET
//!   the Pod, then one JSON Patch of the `pods/status` subresource: `test /metadata/uid`,
//!   `test /metadata/resourceVersion`, `add /status/nominatedNodeName`. JSON Patch cannot test
//!   that a field is absent, so the absence is read and the write is conditioned on the
//!   version read: a nomination anyone sets in between fails the `test`. A Pod nominated
//!   elsewhere (by the scheduler's preemption or anyone else) is a `Conflict` and is never
//!   overwritten; already nominated to the node counts as done; a Pod gone or replaced
//!   (another uid) is `NotFound`.
//! * `ClearNomination`: GET, then `test /metadata/uid`, `test /status/nominatedNodeName` (the
//!   plan's node), `remove`. A Pod that is gone, replaced (another uid) or nominated to
//!   another node holds nothing of alfred's: done, nothing sent.
//! * `TaintNode` / `UntaintNode` (`protection: taint`, opt-in): GET the Node, then
//!   `test /metadata/uid`, `test /metadata/resourceVersion` and the whole `spec.taints` list
//!   with alfred's `alfred.ome.io/drain-plan=<plan id>:NoSchedule` added (any other value of
//!   that key replaced) or every taint of that key removed; every other taint is kept as read,
//!   and the version test makes a concurrent taint change fail the write instead of being
//!   lost. Untainting a Node that is gone or replaced is done.
//!
//! The four protection writes re-read and retry a failed version test (another writer's
//! unrelated change: a kubelet status update, the scheduler's condition) at most
//! [`CONFLICT_RETRIES`] times; what the re-read shows decides again.
//! * `Metric`: applied locally.
//!
//! A failed journal write or migration request (`Effect::is_dispatch_write`, the one stop rule)
//! stops the remaining writes of the pass (the
//! journal makes the next pass pick up from whatever landed). A failed Event or
//! recommendations write is counted and logged, and the pass goes on. A 403 is reported
//! (`alfred_effect_writes_total{outcome="forbidden"}` + an error log) and never retried.
//! Every request is bounded by [`REQUEST_TIMEOUT`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use alfred_model::effect::Effect;
use alfred_model::metric::MetricId;
use alfred_model::plan::DRAIN_TAINT_KEY;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Node, Pod, Taint};
use kube::Client;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};

use crate::run::apply::events::{self, EventMemory, EventWrite};
use crate::run::apply::leader::LeaderGate;
use crate::run::telemetry::metrics::Metrics;

/// Conflict retries of the recommendations read-modify-write.
pub const CONFLICT_RETRIES: usize = 5;
/// Bound on every API request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The journal ConfigMap (fixed name) and its key.
pub const JOURNAL_CONFIG_MAP: &str = "alfred-dispatch-state";
/// The journal key.
pub const JOURNAL_KEY: &str = "state.json";

/// How one write ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The server accepted it (or it was already in place).
    Applied,
    /// A precondition failed (409, or 422 from a JSON Patch `test`).
    Conflict,
    /// RBAC refused it (403).
    Forbidden,
    /// The object is missing (404).
    NotFound,
    /// Anything else: 5xx, timeouts, transport errors.
    Error(String),
    /// Not sent: this process is not the leader, or an earlier write failed.
    Skipped,
}

impl Outcome {
    /// The metric label.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::Conflict => "conflict",
            Outcome::Forbidden => "forbidden",
            Outcome::NotFound => "not_found",
            Outcome::Error(_) => "error",
            Outcome::Skipped => "skipped",
        }
    }
}

/// The label of an effect.
pub fn effect_label(e: &Effect) -> &'static str {
    match e {
        Effect::UpdateRecommendations { .. } => "update_recommendations",
        Effect::RecordEvent(_) => "record_event",
        Effect::RequestMigration { .. } => "request_migration",
        Effect::WriteJournal { .. } => "write_journal",
        Effect::NominatePod { .. } => "nominate_pod",
        Effect::ClearNomination { .. } => "clear_nomination",
        Effect::TaintNode { .. } => "taint_node",
        Effect::UntaintNode { .. } => "untaint_node",
        Effect::Metric(_) => "metric",
    }
}

fn classify(e: &kube::Error) -> Outcome {
    match e {
        kube::Error::Api(s) => match s.code {
            409 | 422 => Outcome::Conflict,
            403 => Outcome::Forbidden,
            404 => Outcome::NotFound,
            _ => Outcome::Error(format!("{} {}: {}", s.code, s.reason, s.message)),
        },
        other => Outcome::Error(other.to_string()),
    }
}

async fn bounded<T>(
    f: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, Outcome> {
    match tokio::time::timeout(REQUEST_TIMEOUT, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(classify(&e)),
        Err(_) => Err(Outcome::Error("request timed out".to_owned())),
    }
}

/// The InferenceService API resource.
pub fn isvc_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("ome.io", "v1beta1", "InferenceService"),
        "inferenceservices",
    )
}

/// Escapes a JSON Pointer token: `~` → `~0` first, then `/` → `~1`.
pub fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// The JSON Patch of a migration request (docs/design-pass.md#migration-request).
pub fn migration_patch(
    uid: &str,
    resource_version: &str,
    has_annotations: bool,
    annotation: &str,
    payload: &str,
) -> Value {
    let mut ops = vec![
        json!({"op": "test", "path": "/metadata/uid", "value": uid}),
        json!({"op": "test", "path": "/metadata/resourceVersion", "value": resource_version}),
    ];
    if !has_annotations {
        ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": {}}));
    }
    ops.push(json!({
        "op": "add",
        "path": format!("/metadata/annotations/{}", escape_pointer(annotation)),
        "value": payload,
    }));
    Value::Array(ops)
}

/// The `pods/status` JSON Patch of a nomination: conditioned on the uid and the version in
/// which the field was read unset (JSON Patch has no test for absence).
pub fn nominate_patch(uid: &str, resource_version: &str, has_status: bool, node: &str) -> Value {
    let mut ops = vec![
        json!({"op": "test", "path": "/metadata/uid", "value": uid}),
        json!({"op": "test", "path": "/metadata/resourceVersion", "value": resource_version}),
    ];
    if !has_status {
        ops.push(json!({"op": "add", "path": "/status", "value": {}}));
    }
    ops.push(json!({"op": "add", "path": "/status/nominatedNodeName", "value": node}));
    Value::Array(ops)
}

/// The `pods/status` JSON Patch that removes alfred's nomination, only while it is still
/// alfred's (the field equals the plan's node).
pub fn clear_nomination_patch(uid: &str, node: &str) -> Value {
    json!([
        {"op": "test", "path": "/metadata/uid", "value": uid},
        {"op": "test", "path": "/status/nominatedNodeName", "value": node},
        {"op": "remove", "path": "/status/nominatedNodeName"},
    ])
}

/// The taint of `protection: taint` for `plan_id`.
pub fn drain_taint(plan_id: &str) -> Taint {
    Taint {
        key: DRAIN_TAINT_KEY.to_owned(),
        value: Some(plan_id.to_owned()),
        effect: "NoSchedule".to_owned(),
        time_added: None,
    }
}

/// The Node's taints with alfred's taint for `plan_id` (any other taint of alfred's key
/// replaced, every other taint kept in place), or `None` when exactly that is already there.
pub fn with_drain_taint(current: &[Taint], plan_id: &str) -> Option<Vec<Taint>> {
    let ours = drain_taint(plan_id);
    let mine: Vec<&Taint> = current
        .iter()
        .filter(|t| t.key == DRAIN_TAINT_KEY)
        .collect();
    if mine.len() == 1 && mine[0].value == ours.value && mine[0].effect == ours.effect {
        return None;
    }
    let mut out: Vec<Taint> = current
        .iter()
        .filter(|t| t.key != DRAIN_TAINT_KEY)
        .cloned()
        .collect();
    out.push(ours);
    Some(out)
}

/// The Node's taints without any of alfred's key, or `None` when there is none.
pub fn without_drain_taint(current: &[Taint]) -> Option<Vec<Taint>> {
    if current.iter().all(|t| t.key != DRAIN_TAINT_KEY) {
        return None;
    }
    Some(
        current
            .iter()
            .filter(|t| t.key != DRAIN_TAINT_KEY)
            .cloned()
            .collect(),
    )
}

/// The Node JSON Patch that sets `spec.taints` to `taints` (removes the list when empty),
/// conditioned on the uid and the version the taints were read in.
pub fn taints_patch(uid: &str, resource_version: &str, taints: &[Taint]) -> Value {
    let mut ops = vec![
        json!({"op": "test", "path": "/metadata/uid", "value": uid}),
        json!({"op": "test", "path": "/metadata/resourceVersion", "value": resource_version}),
    ];
    if taints.is_empty() {
        ops.push(json!({"op": "remove", "path": "/spec/taints"}));
    } else {
        ops.push(json!({"op": "add", "path": "/spec/taints", "value": taints}));
    }
    Value::Array(ops)
}

/// What a protection write decides from the object it read.
enum Step {
    /// Nothing to send: this outcome.
    Done(Outcome),
    /// Send this JSON Patch.
    Patch(Value),
}

/// The result of applying one pass's effects, in order (fed back to the next pass).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApplyReport {
    /// (effect label, outcome) for every write.
    pub writes: Vec<(&'static str, Outcome)>,
}

/// A test hook called after every write with the effect and its outcome ([`crate::run::Harness`]
/// only). `true` freezes this process right there, as if it had been killed between two
/// writes: nothing after that write is sent (the test then stops the process).
pub type WriteHook = Arc<dyn Fn(&Effect, &Outcome) -> bool + Send + Sync>;

/// Applies effects for this process.
pub struct Applier {
    client: Client,
    namespace: String,
    gate: LeaderGate,
    metrics: Arc<Metrics>,
    events: Mutex<EventMemory>,
    journal: Mutex<Option<ConfigMap>>,
    missing_recommendations_logged: Mutex<bool>,
    hook: Option<WriteHook>,
}

impl Applier {
    /// An applier writing in `namespace` (alfred's) while `gate` is open.
    pub fn new(
        client: Client,
        namespace: &str,
        gate: LeaderGate,
        metrics: Arc<Metrics>,
    ) -> Applier {
        Applier {
            client,
            namespace: namespace.to_owned(),
            gate,
            metrics,
            events: Mutex::new(events::memory()),
            journal: Mutex::new(None),
            missing_recommendations_logged: Mutex::new(false),
            hook: None,
        }
    }

    /// The same applier with a test hook after every write.
    pub fn with_hook(mut self, hook: Option<WriteHook>) -> Applier {
        self.hook = hook;
        self
    }

    /// `Some(Skipped)` once the lease is gone: checked again right before every request that
    /// writes, since a write's own reads and conflict retries take time in which the lease
    /// can be lost (the chaos campaign caught a recommendations retry sent without it).
    fn lease_lost(&self) -> Option<Outcome> {
        (!self.gate.is_leader()).then_some(Outcome::Skipped)
    }

    fn count(&self, effect: &'static str, outcome: &Outcome) {
        self.metrics.inc(
            MetricId::EffectWrites,
            &[("effect", effect), ("outcome", outcome.label())],
            1,
        );
        match outcome {
            Outcome::Applied | Outcome::Skipped => {}
            Outcome::Forbidden => tracing::error!(
                effect,
                outcome = outcome.label(),
                "write refused by the API server (RBAC); not retried"
            ),
            Outcome::Error(e) => {
                tracing::warn!(effect, outcome = outcome.label(), error = %e, "write failed")
            }
            other => tracing::warn!(effect, outcome = other.label(), "write failed"),
        }
    }

    /// Reads the journal (`alfred-dispatch-state`, key `state.json`) uncached and remembers its
    /// `resourceVersion` for the next journal write. `Ok(None)`: the ConfigMap or the key is
    /// missing.
    pub async fn read_journal(&self) -> Result<Option<String>, Outcome> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        match bounded(api.get(JOURNAL_CONFIG_MAP)).await {
            Ok(cm) => {
                let text = cm.data.as_ref().and_then(|d| d.get(JOURNAL_KEY)).cloned();
                *lock(&self.journal) = Some(cm);
                Ok(text)
            }
            Err(Outcome::NotFound) => {
                *lock(&self.journal) = None;
                Ok(None)
            }
            Err(o) => {
                *lock(&self.journal) = None;
                Err(o)
            }
        }
    }

    /// The `node.*` records stored in the recommendations ConfigMap (uncached read; empty
    /// when it is missing or unreadable).
    pub async fn read_node_records(
        &self,
        name: &str,
    ) -> std::collections::BTreeMap<String, String> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        match bounded(api.get(name)).await {
            Ok(cm) => cm
                .data
                .unwrap_or_default()
                .into_iter()
                .filter(|(k, _)| k.starts_with("node.") || k.starts_with("node-hash."))
                .collect(),
            Err(o) => {
                if o != Outcome::NotFound {
                    tracing::warn!(outcome = o.label(), "cannot read the stored node records");
                }
                Default::default()
            }
        }
    }

    /// Applies `effects` in order.
    pub async fn apply_all(&self, effects: &[Effect]) -> ApplyReport {
        self.apply_pass(effects, None).await
    }

    /// [`Self::apply_all`] for a pass that may have another ending: when the journal save
    /// after the migration request (`contingency.save_index`) fails, the request stands
    /// and the rest of the pass is `contingency.then` (the record saying
    /// `SubmissionJournalUncertain`), applied instead of stopping.
    pub async fn apply_pass(
        &self,
        effects: &[Effect],
        contingency: Option<&alfred_dispatch::Contingency>,
    ) -> ApplyReport {
        let mut report = ApplyReport::default();
        let mut stopped = false;
        for (i, e) in effects.iter().enumerate() {
            let failed = self.apply_in_turn(e, &mut stopped, &mut report).await;
            if failed && let Some(c) = contingency.filter(|c| c.save_index == i) {
                tracing::warn!(
                    "journal save after the migration request failed; \
                     reporting SubmissionJournalUncertain"
                );
                stopped = false;
                for e in &c.then {
                    self.apply_in_turn(e, &mut stopped, &mut report).await;
                }
                return report;
            }
        }
        report
    }

    /// Applies `e` unless writes have stopped; returns whether a dispatch write (journal
    /// or request) failed, which stops the rest.
    async fn apply_in_turn(
        &self,
        e: &Effect,
        stopped: &mut bool,
        report: &mut ApplyReport,
    ) -> bool {
        if let Effect::Metric(m) = e {
            if let Err(why) = self.metrics.apply(m) {
                tracing::warn!(error = %why, "metric effect ignored");
            }
            return false;
        }
        let label = effect_label(e);
        if *stopped || !self.gate.is_leader() {
            if !*stopped {
                tracing::warn!("not the leader (lease lost); stopping writes");
            }
            *stopped = true;
            self.count(label, &Outcome::Skipped);
            report.writes.push((label, Outcome::Skipped));
            return false;
        }
        let outcome = self.apply_one(e).await;
        self.count(label, &outcome);
        if let Some(hook) = &self.hook
            && hook(e, &outcome)
        {
            tracing::warn!(effect = label, "test hook: frozen after this write");
            std::future::pending::<()>().await;
        }
        // The stop rule (`Effect::is_dispatch_write`): only a failed journal or request write
        // stops the rest of the pass.
        let failed = e.is_dispatch_write() && outcome != Outcome::Applied;
        if failed {
            tracing::warn!(
                effect = label,
                "dispatch write failed; the rest of this pass's writes are skipped"
            );
            *stopped = true;
        }
        report.writes.push((label, outcome));
        failed
    }

    /// Applies one write (no gate check; [`Self::apply_all`] does it).
    pub async fn apply_one(&self, e: &Effect) -> Outcome {
        match e {
            Effect::UpdateRecommendations {
                config_map,
                set,
                delete,
            } => self.update_recommendations(config_map, set, delete).await,
            Effect::RecordEvent(ev) => {
                let r = events::reference(ev);
                self.record_event(&r, events::type_str(ev.event_type), &ev.reason, &ev.message)
                    .await
            }
            Effect::RequestMigration {
                namespace,
                name,
                uid,
                resource_version,
                annotation,
                payload,
                uuid: _,
            } => {
                self.request_migration(namespace, name, uid, resource_version, annotation, payload)
                    .await
            }
            Effect::WriteJournal { state_json } => self.write_journal(state_json).await,
            Effect::NominatePod {
                namespace,
                name,
                uid,
                node,
                plan_id: _,
            } => self.nominate_pod(namespace, name, uid, node).await,
            Effect::ClearNomination {
                namespace,
                name,
                uid,
                node,
                plan_id: _,
            } => self.clear_nomination(namespace, name, uid, node).await,
            Effect::TaintNode { node, uid, plan_id } => {
                self.set_drain_taint(node, uid, Some(plan_id)).await
            }
            Effect::UntaintNode {
                node,
                uid,
                plan_id: _,
            } => self.set_drain_taint(node, uid, None).await,
            Effect::Metric(_) => Outcome::Applied,
        }
    }

    async fn update_recommendations(
        &self,
        name: &str,
        set: &std::collections::BTreeMap<String, String>,
        delete: &[String],
    ) -> Outcome {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        for attempt in 0..=CONFLICT_RETRIES {
            let mut cm = match bounded(api.get(name)).await {
                Ok(cm) => {
                    *lock(&self.missing_recommendations_logged) = false;
                    cm
                }
                Err(Outcome::NotFound) => {
                    let mut logged = lock(&self.missing_recommendations_logged);
                    if !*logged {
                        tracing::warn!(
                            configmap = name,
                            "recommendations ConfigMap missing; record disabled (the chart pre-creates it)"
                        );
                        *logged = true;
                    }
                    return Outcome::NotFound;
                }
                Err(o) => return o,
            };
            let data = cm.data.get_or_insert_with(Default::default);
            for k in delete {
                data.remove(k);
            }
            for (k, v) in set {
                data.insert(k.clone(), v.clone());
            }
            cm.metadata.managed_fields = None;
            if let Some(o) = self.lease_lost() {
                return o;
            }
            match bounded(api.replace(name, &PostParams::default(), &cm)).await {
                Ok(_) => return Outcome::Applied,
                Err(Outcome::Conflict) if attempt < CONFLICT_RETRIES => {
                    tracing::info!(
                        configmap = name,
                        attempt,
                        "recommendations write conflict; re-reading"
                    );
                    continue;
                }
                Err(o) => return o,
            }
        }
        Outcome::Conflict
    }

    /// Records one Event (every replica may call this for its own `PolicyReloadFailed`; the
    /// leader gate is the caller's business).
    pub async fn record_event(
        &self,
        involved: &k8s_openapi::api::core::v1::ObjectReference,
        event_type: &str,
        reason: &str,
        message: &str,
    ) -> Outcome {
        let now = jiff::Timestamp::now();
        let write = lock(&self.events).plan(involved, event_type, reason, message, now);
        let outcome = match &write {
            EventWrite::Create(ev) => {
                let api: Api<Event> = Api::namespaced(
                    self.client.clone(),
                    ev.metadata.namespace.as_deref().unwrap_or("default"),
                );
                bounded(api.create(&PostParams::default(), ev))
                    .await
                    .map(|_| ())
            }
            EventWrite::Repeat {
                namespace,
                name,
                patch,
            } => {
                let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
                let r = bounded(api.patch(name, &PatchParams::default(), &Patch::Merge(patch)))
                    .await
                    .map(|_| ());
                if r == Err(Outcome::NotFound) {
                    // The Event expired on the server: start over with a new one.
                    lock(&self.events).forget(involved, event_type, reason, message);
                    return Box::pin(self.record_event(involved, event_type, reason, message))
                        .await;
                }
                r
            }
        };
        match outcome {
            Ok(()) => {
                lock(&self.events).remember(involved, event_type, reason, message, &write);
                Outcome::Applied
            }
            Err(o) => o,
        }
    }

    async fn request_migration(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        resource_version: &str,
        annotation: &str,
        payload: &str,
    ) -> Outcome {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &isvc_resource());
        let current = match bounded(api.get(name)).await {
            Ok(o) => o,
            Err(o) => return o,
        };
        let annotations = current.metadata.annotations.as_ref();
        if let Some(existing) = annotations.and_then(|a| a.get(annotation)) {
            if existing == payload {
                return Outcome::Applied;
            }
            tracing::error!(
                isvc = %format!("{namespace}/{name}"),
                annotation,
                "the request annotation exists with a different payload"
            );
            return Outcome::Conflict;
        }
        let patch = migration_patch(
            uid,
            resource_version,
            annotations.is_some(),
            annotation,
            payload,
        );
        let patch: json_patch::Patch = match serde_json::from_value(patch) {
            Ok(p) => p,
            Err(e) => return Outcome::Error(format!("cannot build the JSON Patch: {e}")),
        };
        if let Some(o) = self.lease_lost() {
            return o;
        }
        match bounded(api.patch(name, &PatchParams::default(), &Patch::<()>::Json(patch))).await {
            Ok(_) => Outcome::Applied,
            Err(o) => o,
        }
    }

    /// Reads a Pod and patches its status with what `decide` makes of it; a failed
    /// condition re-reads (bounded).
    async fn patch_pod_status(
        &self,
        namespace: &str,
        name: &str,
        decide: impl Fn(Option<&Pod>) -> Step,
    ) -> Outcome {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        for attempt in 0..=CONFLICT_RETRIES {
            let current = match bounded(api.get(name)).await {
                Ok(p) => Some(p),
                Err(Outcome::NotFound) => None,
                Err(o) => return o,
            };
            let patch = match decide(current.as_ref()) {
                Step::Done(o) => return o,
                Step::Patch(p) => p,
            };
            let patch: json_patch::Patch = match serde_json::from_value(patch) {
                Ok(p) => p,
                Err(e) => return Outcome::Error(format!("cannot build the JSON Patch: {e}")),
            };
            if let Some(o) = self.lease_lost() {
                return o;
            }
            match bounded(api.patch_status(
                name,
                &PatchParams::default(),
                &Patch::<()>::Json(patch),
            ))
            .await
            {
                Ok(_) => return Outcome::Applied,
                Err(Outcome::Conflict) if attempt < CONFLICT_RETRIES => {
                    tracing::info!(pod = %format!("{namespace}/{name}"), attempt, "pod changed meanwhile; re-reading");
                }
                Err(o) => return o,
            }
        }
        Outcome::Conflict
    }

    async fn nominate_pod(&self, namespace: &str, name: &str, uid: &str, node: &str) -> Outcome {
        self.patch_pod_status(namespace, name, |pod| {
            let Some(pod) = pod else {
                return Step::Done(Outcome::NotFound);
            };
            if pod.metadata.uid.as_deref() != Some(uid) {
                return Step::Done(Outcome::NotFound);
            }
            let status = pod.status.as_ref();
            match status.and_then(|s| s.nominated_node_name.as_deref()) {
                Some(n) if n == node => Step::Done(Outcome::Applied),
                Some(other) if !other.is_empty() => {
                    tracing::warn!(
                        pod = %format!("{namespace}/{name}"),
                        nominated = other,
                        node,
                        "the pod is nominated to another node; alfred never overwrites a nomination"
                    );
                    Step::Done(Outcome::Conflict)
                }
                _ => Step::Patch(nominate_patch(
                    uid,
                    pod.metadata.resource_version.as_deref().unwrap_or_default(),
                    status.is_some(),
                    node,
                )),
            }
        })
        .await
    }

    async fn clear_nomination(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        node: &str,
    ) -> Outcome {
        self.patch_pod_status(namespace, name, |pod| {
            let nominated = pod
                .filter(|p| p.metadata.uid.as_deref() == Some(uid))
                .and_then(|p| p.status.as_ref())
                .and_then(|s| s.nominated_node_name.as_deref());
            if nominated == Some(node) {
                Step::Patch(clear_nomination_patch(uid, node))
            } else {
                Step::Done(Outcome::Applied)
            }
        })
        .await
    }

    /// Adds alfred's taint for `plan_id` (`Some`) or removes every taint of its key (`None`).
    async fn set_drain_taint(&self, name: &str, uid: &str, plan_id: Option<&str>) -> Outcome {
        let api: Api<Node> = Api::all(self.client.clone());
        for attempt in 0..=CONFLICT_RETRIES {
            let node = match bounded(api.get(name)).await {
                Ok(n) => Some(n),
                Err(Outcome::NotFound) => None,
                Err(o) => return o,
            };
            let Some(node) = node.filter(|n| n.metadata.uid.as_deref() == Some(uid)) else {
                // Gone or replaced: nothing of alfred's is left on it, and nothing to taint.
                return if plan_id.is_some() {
                    Outcome::NotFound
                } else {
                    Outcome::Applied
                };
            };
            let current = node
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_deref())
                .unwrap_or_default();
            let wanted = match plan_id {
                Some(id) => with_drain_taint(current, id),
                None => without_drain_taint(current),
            };
            let Some(wanted) = wanted else {
                return Outcome::Applied;
            };
            let patch = taints_patch(
                uid,
                node.metadata
                    .resource_version
                    .as_deref()
                    .unwrap_or_default(),
                &wanted,
            );
            let patch: json_patch::Patch = match serde_json::from_value(patch) {
                Ok(p) => p,
                Err(e) => return Outcome::Error(format!("cannot build the JSON Patch: {e}")),
            };
            if let Some(o) = self.lease_lost() {
                return o;
            }
            match bounded(api.patch(name, &PatchParams::default(), &Patch::<()>::Json(patch))).await
            {
                Ok(_) => return Outcome::Applied,
                Err(Outcome::Conflict) if attempt < CONFLICT_RETRIES => {
                    tracing::info!(node = name, attempt, "node changed meanwhile; re-reading");
                }
                Err(o) => return o,
            }
        }
        Outcome::Conflict
    }

    async fn write_journal(&self, state_json: &str) -> Outcome {
        let Some(mut cm) = lock(&self.journal).clone() else {
            return Outcome::NotFound;
        };
        cm.data
            .get_or_insert_with(Default::default)
            .insert(JOURNAL_KEY.to_owned(), state_json.to_owned());
        cm.metadata.managed_fields = None;
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        if let Some(o) = self.lease_lost() {
            return o;
        }
        match bounded(api.replace(JOURNAL_CONFIG_MAP, &PostParams::default(), &cm)).await {
            Ok(written) => {
                *lock(&self.journal) = Some(written);
                Outcome::Applied
            }
            Err(o) => {
                // Forget the version: the next pass re-reads before writing again.
                *lock(&self.journal) = None;
                o
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_escaping_and_the_documented_patch() {
        assert_eq!(escape_pointer("a~b/c"), "a~0b~1c");
        let p = migration_patch(
            "8c1d6f52-3b7e-4f0a-9d24-61e5a0c7b913",
            "48213377",
            true,
            "ome.io/migration-request-v1-6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f",
            "{}",
        );
        assert_eq!(
            p[2]["path"],
            "/metadata/annotations/ome.io~1migration-request-v1-6f1c2d3e-8a4b-4c5d-9e6f-0a1b2c3d4e5f"
        );
        assert_eq!(p.as_array().unwrap().len(), 3);
        let p = migration_patch("u", "1", false, "k", "v");
        assert_eq!(
            p[2],
            json!({"op": "add", "path": "/metadata/annotations", "value": {}})
        );
    }

    #[test]
    fn a_nomination_is_conditioned_on_the_version_it_was_read_unset_in() {
        assert_eq!(
            nominate_patch("u1", "77", true, "g2-017"),
            json!([
                {"op": "test", "path": "/metadata/uid", "value": "u1"},
                {"op": "test", "path": "/metadata/resourceVersion", "value": "77"},
                {"op": "add", "path": "/status/nominatedNodeName", "value": "g2-017"},
            ])
        );
        assert_eq!(
            nominate_patch("u1", "77", false, "n")[2],
            json!({"op": "add", "path": "/status", "value": {}})
        );
        assert_eq!(
            clear_nomination_patch("u1", "g2-017"),
            json!([
                {"op": "test", "path": "/metadata/uid", "value": "u1"},
                {"op": "test", "path": "/status/nominatedNodeName", "value": "g2-017"},
                {"op": "remove", "path": "/status/nominatedNodeName"},
            ])
        );
    }

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: Some(value.into()),
            effect: effect.into(),
            time_added: None,
        }
    }

    #[test]
    fn the_drain_taint_is_added_once_and_removed_keeping_every_other_taint() {
        let other = taint("gpu", "bad", "NoExecute");
        let stale = taint(DRAIN_TAINT_KEY, "dp-000000000001", "NoSchedule");
        let ours = taint(DRAIN_TAINT_KEY, "dp-0123456789ab", "NoSchedule");
        assert_eq!(
            with_drain_taint(std::slice::from_ref(&other), "dp-0123456789ab"),
            Some(vec![other.clone(), ours.clone()])
        );
        assert_eq!(
            with_drain_taint(&[other.clone(), ours.clone()], "dp-0123456789ab"),
            None,
            "already in place"
        );
        assert_eq!(
            with_drain_taint(&[stale.clone(), other.clone()], "dp-0123456789ab"),
            Some(vec![other.clone(), ours.clone()]),
            "another plan's value is replaced"
        );
        assert_eq!(
            without_drain_taint(&[stale, other.clone(), ours]),
            Some(vec![other.clone()])
        );
        assert_eq!(without_drain_taint(std::slice::from_ref(&other)), None);
        assert_eq!(
            taints_patch("nu", "9", &[])[2],
            json!({"op": "remove", "path": "/spec/taints"})
        );
        assert_eq!(
            taints_patch("nu", "9", &[other])[2],
            json!({"op": "add", "path": "/spec/taints", "value": [{"key": "gpu", "value": "bad", "effect": "NoExecute"}]})
        );
        assert_eq!(
            taints_patch("nu", "9", &[])[1],
            json!({"op": "test", "path": "/metadata/resourceVersion", "value": "9"})
        );
    }
}
