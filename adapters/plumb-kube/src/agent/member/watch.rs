//! The member loop's watches: one kube-rs watcher per kind, read as dynamic objects and
//! decoded at once into the kind's small type ([`super::store`]). A kind the API server does
//! not serve (a Karpenter CRD not installed: the list answers 404) counts as none, is logged
//! once, and keeps being retried with the watcher's backoff, so a CRD installed later is
//! picked up. Other watch errors are logged and retried the same way; they never stop the loop.

use futures::{StreamExt, TryStreamExt};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};
use plumb_model::policy::{GROUP, KIND, PLURAL, VERSION};
use serde_json::Value;
use tokio::task::JoinHandle;

use super::store::{Decode, Shared, Stores, lock};
use crate::objects::KARPENTER_API_VERSION;

/// The pods the report reads: finished ones hold no room and are never the workload's.
const UNFINISHED_PODS: &str = "status.phase!=Succeeded,status.phase!=Failed";
/// Only Events on NodeClaims are read (Karpenter's launch failures).
const NODECLAIM_EVENTS: &str = "involvedObject.kind=NodeClaim";

fn resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// Starts every watch into `stores`; the handles are aborted when the loop stops.
pub fn spawn(client: &Client, stores: &Stores) -> Vec<JoinHandle<()>> {
    let all = watcher::Config::default;
    let karpenter = |kind, plural| resource(KARPENTER_API_VERSION, kind, plural);
    let policies = resource(&format!("{GROUP}/{VERSION}"), KIND, PLURAL);
    vec![
        follow(
            client,
            resource("apps/v1", "Deployment", "deployments"),
            all(),
            &stores.deployments,
        ),
        follow(
            client,
            resource(
                "autoscaling/v2",
                "HorizontalPodAutoscaler",
                "horizontalpodautoscalers",
            ),
            all(),
            &stores.autoscalers,
        ),
        follow(
            client,
            resource("v1", "Pod", "pods"),
            all().fields(UNFINISHED_PODS),
            &stores.pods,
        ),
        follow(
            client,
            resource("v1", "Node", "nodes"),
            all(),
            &stores.nodes,
        ),
        follow(
            client,
            resource("v1", "Namespace", "namespaces"),
            all(),
            &stores.namespaces,
        ),
        follow(
            client,
            karpenter("NodePool", "nodepools"),
            all(),
            &stores.node_pools,
        ),
        follow(
            client,
            karpenter("NodeClaim", "nodeclaims"),
            all(),
            &stores.node_claims,
        ),
        follow(
            client,
            resource("v1", "Event", "events"),
            all().fields(NODECLAIM_EVENTS),
            &stores.events,
        ),
        follow(client, policies, all(), &stores.policies),
    ]
}

fn follow<T: Decode + Send + 'static>(
    client: &Client,
    resource: ApiResource,
    config: watcher::Config,
    kind: &Shared<T>,
) -> JoinHandle<()> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let kind = kind.clone();
    tokio::spawn(async move {
        let name = resource.kind.clone();
        let mut events = watcher::watcher(api, config).default_backoff().boxed();
        let mut absent_logged = false;
        loop {
            match events.try_next().await {
                Ok(Some(event)) => {
                    if let Err(e) = lock(&kind).apply(json_event(event)) {
                        tracing::warn!(kind = %name, error = %crate::one_line(&e), "object left out of the report: cannot be read");
                    }
                }
                Ok(None) => return,
                Err(watcher::Error::InitialListFailed(kube::Error::Api(status)))
                    if status.is_not_found() =>
                {
                    lock(&kind).mark_absent();
                    if !absent_logged {
                        tracing::info!(kind = %name, api_version = %resource.api_version, "not served by this API server (CRD not installed): counted as none");
                        absent_logged = true;
                    }
                }
                Err(e) => {
                    tracing::warn!(kind = %name, error = %e, "watch failed; retrying");
                }
            }
        }
    })
}

/// The event with its object as JSON, the form the decoders read.
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
