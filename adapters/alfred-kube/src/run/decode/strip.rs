//! Keep only what the snapshot builder reads, for the kinds that are not decoded slim.
//!
//! Applied by the watchers' `modify` hook before an object enters a reflector store. Each
//! function removes fields `alfred-observe` never reads, so `observe` of a stripped object
//! equals `observe` of the original (the live equality test). Pods and Nodes, the large kinds,
//! never carry those fields in the first place: they are decoded into [`crate::run::decode::slim`] types.

use kube::api::DynamicObject;
use kube::core::TypeMeta;

/// OME objects and PodGroups read as JSON: drop managed fields and (InferenceServices only)
/// the status, which alfred never reads; set `apiVersion`/`kind` (list items may lack them).
pub fn dynamic(o: &mut DynamicObject, api_version: &str, kind: &str, keep_status: bool) {
    o.metadata.managed_fields = None;
    o.types = Some(TypeMeta {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
    });
    if !keep_status && let Some(map) = o.data.as_object_mut() {
        map.remove("status");
    }
}

/// The generic PVC/PV strip: managed fields only.
pub fn managed_fields(meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) {
    meta.managed_fields = None;
}
