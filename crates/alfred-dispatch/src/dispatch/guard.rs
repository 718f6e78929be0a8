//! The migration guard check (docs/design-pass.md#migration-guard), as a pure decision over what
//! the adapter read: the ValidatingAdmissionPolicy `ome-alfred-migration-writes` and its
//! binding (same name), both with an uncached `get`. alfred never installs or repairs them.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Name of the policy and of its binding.
pub const GUARD_NAME: &str = "ome-alfred-migration-writes";

/// The policy as read (only what the check needs).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GuardPolicyObservation {
    /// `metadata.deletionTimestamp` is set.
    #[serde(default)]
    pub deleting: bool,
    /// `spec` as the API server returned it.
    #[serde(default)]
    pub spec: Value,
    /// `metadata.generation`.
    #[serde(default)]
    pub generation: i64,
    /// `status.observedGeneration`.
    #[serde(default)]
    pub observed_generation: i64,
    /// `status.typeChecking` is present.
    #[serde(default)]
    pub type_checked: bool,
    /// `len(status.typeChecking.expressionWarnings)`.
    #[serde(default)]
    pub expression_warnings: usize,
}

/// The binding as read.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GuardBindingObservation {
    /// `metadata.deletionTimestamp` is set.
    #[serde(default)]
    pub deleting: bool,
    /// `spec` as the API server returned it.
    #[serde(default)]
    pub spec: Value,
}

/// What the adapter read this pass; `None` = not found or the read failed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GuardObservation {
    /// The policy.
    #[serde(default)]
    pub policy: Option<GuardPolicyObservation>,
    /// The binding.
    #[serde(default)]
    pub binding: Option<GuardBindingObservation>,
}

impl GuardObservation {
    /// The guard as the chart installs it for alfred's service account
    /// `system:serviceaccount:<namespace>:<service_account>`: a policy with the canonical
    /// spec, type-checked at its generation, and the canonical binding; it passes
    /// [`check_guard`] for that username.
    ///
    /// `alfred replay` runs offline and cannot read the two admission objects, so it
    /// **assumes the chart-installed guard**: a replayed execute-mode pass behaves like a
    /// pass on a cluster whose guard is present and unchanged
    /// (docs/design-pass.md#migration-guard). A live pass must never use this; it reads the
    /// objects.
    pub fn assumed_installed(namespace: &str, service_account: &str) -> GuardObservation {
        healthy_guard(&guard_username(namespace, service_account))
    }
}

/// Why the guard check failed (all mean `GuardUnavailable`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    /// The policy is missing or unreadable.
    #[error("read migration admission policy: not found")]
    PolicyMissing,
    /// Deleted or differs from the canonical guard.
    #[error("migration admission policy differs from the required guard")]
    PolicyDiffers,
    /// Not type-checked at its current generation.
    #[error("migration admission policy is not type-checked at its current generation")]
    PolicyNotTypeChecked,
    /// The binding is missing or unreadable.
    #[error("read migration admission binding: not found")]
    BindingMissing,
    /// Deleted or differs.
    #[error("migration admission binding differs from the required guard")]
    BindingDiffers,
}

/// `system:serviceaccount:<namespace>:<serviceAccount>`.
pub fn guard_username(namespace: &str, service_account: &str) -> String {
    format!("system:serviceaccount:{namespace}:{service_account}")
}

/// The canonical policy `spec` for alfred's username, as the chart installs it.
pub fn canonical_policy_spec(username: &str) -> Value {
    let preserved: Vec<String> = [
        "apiVersion",
        "kind",
        "spec",
        "status",
        "metadata.name",
        "metadata.generateName",
        "metadata.namespace",
        "metadata.uid",
        "metadata.selfLink",
        "metadata.creationTimestamp",
        "metadata.generation",
        "metadata.deletionTimestamp",
        "metadata.deletionGracePeriodSeconds",
        "metadata.labels",
        "metadata.ownerReferences",
        "metadata.finalizers",
    ]
    .iter()
    .map(|f| {
        format!(
            "has(object.{f}) == has(oldObject.{f}) && (!has(oldObject.{f}) || object.{f} == oldObject.{f})"
        )
    })
    .collect();
    let old = "(has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {})";
    let cur = "(has(object.metadata.annotations) ? object.metadata.annotations : {})";
    let quoted = serde_json::to_string(username).unwrap_or_default();
    json!({
        "failurePolicy": "Fail",
        "matchConstraints": {
            "matchPolicy": "Exact",
            "namespaceSelector": {},
            "objectSelector": {},
            "resourceRules": [{
                "operations": ["UPDATE"],
                "apiGroups": ["ome.io"],
                "apiVersions": ["v1beta1"],
                "resources": ["inferenceservices", "inferenceservices/status"],
                "scope": "Namespaced"
            }]
        },
        "matchConditions": [{
            "name": "alfred-identity",
            "expression": format!("request.userInfo.username == {quoted}")
        }],
        "validations": [
            {
                "expression": preserved.join(" && "),
                "message": "Alfred may not change workload fields or non-annotation metadata"
            },
            {
                "expression": format!("{old}.all(k, k in {cur} && {cur}[k] == {old}[k])"),
                "message": "Alfred may not remove or replace existing annotations"
            },
            {
                "expression": format!(
                    "{cur}.size() <= {old}.size() + 1 && {cur}.all(k, k in {old} || (k.matches('^ome[.]io/migration-request-v1-[0-9a-fA-F]{{8}}-[0-9a-fA-F]{{4}}-[0-9a-fA-F]{{4}}-[0-9a-fA-F]{{4}}-[0-9a-fA-F]{{12}}$') && bytes({cur}[k]).size() <= 4096))"
                ),
                "message": "Alfred may add only one bounded v1 migration request"
            }
        ]
    })
}

/// The canonical binding `spec`.
pub fn canonical_binding_spec() -> Value {
    json!({"policyName": GUARD_NAME, "validationActions": ["Deny"]})
}

/// Passes only when both objects exist, are not being deleted, equal the canonical specs
/// (JSON equality: member order irrelevant), and the policy is type-checked without
/// warnings at its current generation (≥ 1).
pub fn check_guard(obs: &GuardObservation, username: &str) -> Result<(), GuardError> {
    let p = obs.policy.as_ref().ok_or(GuardError::PolicyMissing)?;
    if p.deleting || p.spec != canonical_policy_spec(username) {
        return Err(GuardError::PolicyDiffers);
    }
    if p.generation < 1
        || p.observed_generation != p.generation
        || !p.type_checked
        || p.expression_warnings != 0
    {
        return Err(GuardError::PolicyNotTypeChecked);
    }
    let b = obs.binding.as_ref().ok_or(GuardError::BindingMissing)?;
    if b.deleting || b.spec != canonical_binding_spec() {
        return Err(GuardError::BindingDiffers);
    }
    Ok(())
}

/// A guard observation that passes for `username` (tests, `replay`).
pub fn healthy_guard(username: &str) -> GuardObservation {
    GuardObservation {
        policy: Some(GuardPolicyObservation {
            deleting: false,
            spec: canonical_policy_spec(username),
            generation: 1,
            observed_generation: 1,
            type_checked: true,
            expression_warnings: 0,
        }),
        binding: Some(GuardBindingObservation {
            deleting: false,
            spec: canonical_binding_spec(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn healthy_passes_and_each_defect_fails() {
        let u = guard_username("ome", "ome-alfred");
        assert_eq!(u, "system:serviceaccount:ome:ome-alfred");
        let ok = healthy_guard(&u);
        assert_eq!(check_guard(&ok, &u), Ok(()));
        let assumed = GuardObservation::assumed_installed("ome", "ome-alfred");
        assert_eq!(assumed, ok);
        assert_eq!(check_guard(&assumed, &u), Ok(()));
        assert_eq!(
            check_guard(&ok, "system:serviceaccount:ome:other"),
            Err(GuardError::PolicyDiffers)
        );
        let mut g = ok.clone();
        g.policy = None;
        assert_eq!(check_guard(&g, &u), Err(GuardError::PolicyMissing));
        let mut g = ok.clone();
        if let Some(p) = g.policy.as_mut() {
            p.observed_generation = 0;
        }
        assert_eq!(check_guard(&g, &u), Err(GuardError::PolicyNotTypeChecked));
        let mut g = ok.clone();
        if let Some(p) = g.policy.as_mut() {
            p.expression_warnings = 1;
        }
        assert_eq!(check_guard(&g, &u), Err(GuardError::PolicyNotTypeChecked));
        let mut g = ok.clone();
        if let Some(p) = g.policy.as_mut() {
            p.spec["failurePolicy"] = json!("Ignore");
        }
        assert_eq!(check_guard(&g, &u), Err(GuardError::PolicyDiffers));
        let mut g = ok.clone();
        if let Some(b) = g.binding.as_mut() {
            b.spec = json!({"policyName": GUARD_NAME, "validationActions": ["Warn"]});
        }
        assert_eq!(check_guard(&g, &u), Err(GuardError::BindingDiffers));
        let mut g = ok;
        g.binding = None;
        assert_eq!(check_guard(&g, &u), Err(GuardError::BindingMissing));
    }
}
