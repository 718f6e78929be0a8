//! The driver's requests, each bounded by [`REQUEST_TIMEOUT`] and its error one line naming
//! what failed: the members' copies of the policies, the `plumb-hub` Lease holder, status
//! merge patches, and the HTTPRoutes (read, JSON Patch).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use serde_json::Value;

/// The longest one request may take: a member that hangs must not hold the hub loop past its
/// interval.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(8);

/// The AdaptivePolicy resource.
pub fn policies() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            plumb_model::policy::GROUP,
            plumb_model::policy::VERSION,
            plumb_model::policy::KIND,
        ),
        plumb_model::policy::PLURAL,
    )
}

/// Gateway API's HTTPRoute (`gateway.networking.k8s.io/v1`).
pub fn httproutes() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("gateway.networking.k8s.io", "v1", "HTTPRoute"),
        "httproutes",
    )
}

async fn timed<T>(
    what: &str,
    request: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, String> {
    match tokio::time::timeout(REQUEST_TIMEOUT, request).await {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(e)) => Err(crate::one_line(&format!("{what}: {e}"))),
        Err(_) => Err(format!(
            "{what}: no answer within {}s",
            REQUEST_TIMEOUT.as_secs()
        )),
    }
}

/// Every AdaptivePolicy of one member (all namespaces), by `<namespace>/<name>`, as JSON.
pub async fn list_copies(client: &Client) -> Result<BTreeMap<String, Value>, String> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &policies());
    let list = timed("list adaptivepolicies", api.list(&ListParams::default())).await?;
    let mut out = BTreeMap::new();
    for object in list.items {
        let key = format!(
            "{}/{}",
            object.metadata.namespace.as_deref().unwrap_or_default(),
            object.metadata.name.as_deref().unwrap_or_default()
        );
        let mut value = serde_json::to_value(&object).map_err(|e| format!("{key}: {e}"))?;
        if let Some(map) = value.as_object_mut() {
            map.entry("apiVersion")
                .or_insert_with(|| plumb_model::policy::API_VERSION.into());
            map.entry("kind")
                .or_insert_with(|| plumb_model::policy::KIND.into());
        }
        out.insert(key, value);
    }
    Ok(out)
}

/// The holder of the member's `plumb-hub` Lease in `namespace` (none: no Lease or no holder).
pub async fn lease_holder(client: &Client, namespace: &str) -> Result<Option<String>, String> {
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let lease = timed(
        "get lease plumb-hub",
        api.get_opt(crate::agent::config::HUB_LEASE),
    )
    .await?;
    Ok(lease.and_then(|l| l.spec).and_then(|s| s.holder_identity))
}

/// Merge-patches the status subresource of the policy `namespace/name` with `body`.
pub async fn patch_status(
    client: &Client,
    namespace: &str,
    name: &str,
    body: &Value,
) -> Result<(), String> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &policies());
    timed(
        &format!("patch adaptivepolicies/status {namespace}/{name}"),
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(body)),
    )
    .await
    .map(drop)
}

/// Reads the HTTPRoute `namespace/name` as JSON.
pub async fn get_route(client: &Client, namespace: &str, name: &str) -> Result<Value, String> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &httproutes());
    let route = timed(&format!("get httproute {namespace}/{name}"), api.get(name)).await?;
    serde_json::to_value(route).map_err(|e| format!("httproute {namespace}/{name}: {e}"))
}

/// Applies the JSON Patch `ops` to the HTTPRoute `namespace/name`.
pub async fn patch_route(
    client: &Client,
    namespace: &str,
    name: &str,
    ops: Vec<Value>,
) -> Result<(), String> {
    let what = format!("patch httproute {namespace}/{name}");
    let patch: json_patch::Patch =
        serde_json::from_value(Value::Array(ops)).map_err(|e| format!("{what}: {e}"))?;
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &httproutes());
    timed(
        &what,
        api.patch(name, &PatchParams::default(), &Patch::<()>::Json(patch)),
    )
    .await
    .map(drop)
}
