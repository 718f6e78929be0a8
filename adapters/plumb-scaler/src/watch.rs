//! The watchers that feed the [`FloorCache`]: every AdaptivePolicy in the member (all
//! namespaces, read as dynamic objects and parsed by plumb-model) and the member's own
//! `plumb-hub` Lease in Plumb's namespace. kube-rs's watcher lists, then watches, and relists
//! after a gap; a relist replaces the cache's copies at once when it completes.
//!
//! A copy that cannot be read as an AdaptivePolicy stays in the cache as unreadable (it serves
//! 0 and the scaler logs why); it never stops the watcher.

use std::collections::BTreeMap;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch_stream};
use kube::{Api, Client};
use plumb_core::quorum::LeaseRecord;
use plumb_model::AdaptivePolicy;
use plumb_model::policy::{GROUP, KIND, PLURAL, VERSION};
use serde_json::Value;
use utc_time::Timestamp;

use crate::floor::{CachedPolicy, FloorCache, PolicyCopy, PolicyKey};

/// The member's hub Lease's name.
pub const HUB_LEASE: &str = "plumb-hub";

/// Applies policy watch events to the cache, buffering a relist until it completes.
#[derive(Debug)]
pub struct PolicyFeed {
    cache: FloorCache,
    cluster: String,
    relist: Option<BTreeMap<PolicyKey, CachedPolicy>>,
}

impl PolicyFeed {
    /// A feed into `cache` for the member `cluster` (`--cluster-name`, empty = no cap).
    pub fn new(cache: FloorCache, cluster: impl Into<String>) -> Self {
        PolicyFeed {
            cache,
            cluster: cluster.into(),
            relist: None,
        }
    }

    /// Applies one event (objects as JSON, as the API server sent them).
    pub fn apply(&mut self, event: Event<Value>) {
        match event {
            Event::Init => self.relist = Some(BTreeMap::new()),
            Event::InitApply(object) => {
                if let Some((key, policy)) = self.entry(&object) {
                    self.relist.get_or_insert_default().insert(key, policy);
                }
            }
            Event::InitDone => self
                .cache
                .replace_policies(self.relist.take().unwrap_or_default()),
            Event::Apply(object) => {
                if let Some((key, policy)) = self.entry(&object) {
                    self.cache.put_policy(key, policy);
                }
            }
            Event::Delete(object) => {
                if let Some(key) = key_of(&object) {
                    self.cache.remove_policy(&key);
                }
            }
        }
    }

    fn entry(&self, object: &Value) -> Option<(PolicyKey, CachedPolicy)> {
        let key = key_of(object)?;
        let policy = match AdaptivePolicy::from_value(object.clone()) {
            Ok(policy) => CachedPolicy::Readable(PolicyCopy::from_policy(&policy, &self.cluster)),
            Err(e) => {
                tracing::warn!(policy = %key, error = %e, "AdaptivePolicy copy cannot be read; serving 0 for it");
                CachedPolicy::Unreadable(e.to_string())
            }
        };
        Some((key, policy))
    }
}

/// `metadata.namespace/metadata.name` of an object.
fn key_of(object: &Value) -> Option<PolicyKey> {
    let meta = object.get("metadata")?;
    let namespace = meta.get("namespace")?.as_str()?;
    let name = meta.get("name")?.as_str()?;
    Some(PolicyKey::new(namespace, name))
}

/// What fencing reads of a Lease.
pub fn lease_record(lease: &Lease) -> LeaseRecord {
    let spec = lease.spec.clone().unwrap_or_default();
    let time = |t: Option<MicroTime>| {
        t.map(|t| Timestamp::from_unix_nanos(i64::try_from(t.0.as_nanosecond()).unwrap_or(0)))
    };
    LeaseRecord {
        holder: spec.holder_identity,
        acquire_time: time(spec.acquire_time),
        renew_time: time(spec.renew_time),
        lease_duration_seconds: u32::try_from(spec.lease_duration_seconds.unwrap_or(0))
            .unwrap_or(0),
        transitions: u32::try_from(spec.lease_transitions.unwrap_or(0)).unwrap_or(0),
    }
}

/// Applies one Lease watch event to the cache (the watch selects the one `plumb-hub` Lease).
pub fn apply_lease_event(
    cache: &FloorCache,
    relist: &mut Option<Option<Lease>>,
    event: Event<Lease>,
) {
    match event {
        Event::Init => *relist = Some(None),
        Event::InitApply(lease) => *relist = Some(Some(lease)),
        Event::InitDone => cache.set_lease(relist.take().flatten().as_ref().map(lease_record)),
        Event::Apply(lease) => cache.set_lease(Some(lease_record(&lease))),
        Event::Delete(_) => cache.set_lease(None),
    }
}

/// Watches every AdaptivePolicy into `cache` until the stream ends (it retries with backoff).
pub async fn watch_policies(client: Client, cache: FloorCache, cluster: String) {
    let gvk = GroupVersionKind::gvk(GROUP, VERSION, KIND);
    let resource = ApiResource::from_gvk_with_plural(&gvk, PLURAL);
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let mut feed = PolicyFeed::new(cache, cluster);
    let mut events = watch_stream(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    loop {
        match events.try_next().await {
            Ok(Some(event)) => feed.apply(json_event(event)),
            Ok(None) => return,
            Err(e) => tracing::warn!(error = %e, "AdaptivePolicy watch failed; retrying"),
        }
    }
}

/// Watches the member's `plumb-hub` Lease in `namespace` into `cache`.
pub async fn watch_hub_lease(client: Client, cache: FloorCache, namespace: String) {
    let api: Api<Lease> = Api::namespaced(client, &namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={HUB_LEASE}"));
    let mut events = watch_stream(api, config).default_backoff().boxed();
    let mut relist = None;
    loop {
        match events.try_next().await {
            Ok(Some(event)) => apply_lease_event(&cache, &mut relist, event),
            Ok(None) => return,
            Err(e) => tracing::warn!(error = %e, "plumb-hub Lease watch failed; retrying"),
        }
    }
}

/// The event with its object as JSON, the form plumb-model reads.
fn json_event(event: Event<DynamicObject>) -> Event<Value> {
    let json = |o: DynamicObject| serde_json::to_value(o).unwrap_or(Value::Null);
    match event {
        Event::Apply(o) => Event::Apply(json(o)),
        Event::Delete(o) => Event::Delete(json(o)),
        Event::Init => Event::Init,
        Event::InitApply(o) => Event::InitApply(json(o)),
        Event::InitDone => Event::InitDone,
    }
}

#[cfg(test)]
mod tests;
