//! The manifests in `deploy/`: least privilege, pod security (docs/design-runtime.md#permissions),
//! the shipped configuration parses, and the migration guard is exactly the canonical one alfred
//! checks.

use std::path::{Path, PathBuf};

use serde_json::Value;

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

fn docs(file: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(deploy().join(file)).unwrap();
    serde_saphyr::from_multiple::<Value>(&text)
        .unwrap()
        .into_iter()
        .filter(|v| !v.is_null())
        .collect()
}

fn kind<'a>(docs: &'a [Value], k: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == k)
        .unwrap_or_else(|| panic!("no {k}"))
}

#[test]
fn the_deployment_runs_three_locked_down_replicas() {
    let d = docs("deployment.yaml");
    let dep = kind(&d, "Deployment");
    assert_eq!(dep["spec"]["replicas"], 3);
    let pod = &dep["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "ome-alfred");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let c = &pod["containers"][0];
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        c["securityContext"]["capabilities"]["drop"],
        serde_json::json!(["ALL"])
    );
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(args.contains(&"run"));
    assert!(args.contains(&"--leader-elect=true"));
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
}

#[test]
fn rbac_is_least_privilege() {
    let d = docs("rbac.yaml");
    let text = std::fs::read_to_string(deploy().join("rbac.yaml")).unwrap();
    assert!(!text.contains('*'), "no wildcards");
    let cluster = kind(&d, "ClusterRole");
    for rule in cluster["rules"].as_array().unwrap() {
        let verbs: Vec<&str> = rule["verbs"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let resources: Vec<&str> = rule["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for v in &verbs {
            match *v {
                "get" | "list" | "watch" => {}
                "patch" if resources == ["inferenceservices"] || resources == ["events"] => {}
                "create" if resources == ["events"] => {}
                other => panic!("cluster verb {other} on {resources:?}"),
            }
        }
        for forbidden in ["nodes/status", "pods/eviction", "secrets"] {
            assert!(!resources.contains(&forbidden));
        }
    }
    let role = kind(&d, "Role");
    for rule in role["rules"].as_array().unwrap() {
        let verbs: Vec<&str> = rule["verbs"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(!verbs.contains(&"delete"), "alfred never deletes");
        if rule["resources"][0] == "configmaps" && verbs.contains(&"update") {
            assert!(rule["resourceNames"].is_array(), "updates only by name");
        }
    }
}

#[test]
fn the_shipped_config_parses() {
    let d = docs("configmaps.yaml");
    let cm = d
        .iter()
        .find(|d| d["metadata"]["name"] == "alfred-config")
        .unwrap();
    let text = cm["data"]["config.yaml"].as_str().unwrap();
    alfred_model::config::Config::from_yaml(text).unwrap();
    assert!(
        d.iter()
            .any(|d| d["metadata"]["name"] == "alfred-recommendations")
    );
}

#[test]
fn the_migration_guard_is_the_canonical_one() {
    let d = docs("execute/migration-guard.yaml");
    let username = alfred_dispatch::guard::guard_username("ome", "ome-alfred");
    let policy = kind(&d, "ValidatingAdmissionPolicy");
    assert_eq!(policy["metadata"]["name"], "ome-alfred-migration-writes");
    assert_eq!(
        policy["spec"],
        alfred_dispatch::guard::canonical_policy_spec(&username)
    );
    let binding = kind(&d, "ValidatingAdmissionPolicyBinding");
    assert_eq!(binding["metadata"]["name"], "ome-alfred-migration-writes");
    assert_eq!(
        binding["spec"],
        alfred_dispatch::guard::canonical_binding_spec()
    );
    let journal = docs("execute/dispatch-state.yaml");
    assert_eq!(
        journal[0]["data"]["state.json"],
        r#"{"version":"v1","entries":[]}"#
    );
}

/// Every rule of a role as (apiGroups, resources, verbs, resourceNames).
fn rules(role: &Value) -> Vec<(Value, Value, Value, Value)> {
    role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["apiGroups"].clone(),
                r["resources"].clone(),
                r["verbs"].clone(),
                r["resourceNames"].clone(),
            )
        })
        .collect()
}

fn bound_to_alfred(docs: &[Value], role: &str) {
    let binding = kind(docs, "ClusterRoleBinding");
    assert_eq!(binding["metadata"]["name"], role);
    assert_eq!(
        binding["roleRef"],
        serde_json::json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role})
    );
    assert_eq!(
        binding["subjects"],
        serde_json::json!([{"kind": "ServiceAccount", "name": "ome-alfred", "namespace": "ome"}])
    );
}

/// A drain-plan policy: alfred's identity only, fail closed, denying, on exactly `resources`
/// of the core group, UPDATE only.
fn policy_guards(docs: &[Value], name: &str, resources: &[&str]) -> Vec<String> {
    let policy = kind(docs, "ValidatingAdmissionPolicy");
    assert_eq!(policy["apiVersion"], "admissionregistration.k8s.io/v1");
    assert_eq!(policy["metadata"]["name"], name);
    let spec = &policy["spec"];
    assert_eq!(spec["failurePolicy"], "Fail");
    assert_eq!(
        spec["matchConditions"],
        serde_json::json!([{"name": "alfred-identity",
            "expression": "request.userInfo.username == \"system:serviceaccount:ome:ome-alfred\""}])
    );
    let rules = spec["matchConstraints"]["resourceRules"]
        .as_array()
        .unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["operations"], serde_json::json!(["UPDATE"]));
    assert_eq!(rules[0]["apiGroups"], serde_json::json!([""]));
    assert_eq!(rules[0]["apiVersions"], serde_json::json!(["v1"]));
    assert_eq!(rules[0]["resources"], serde_json::json!(resources));
    let binding = kind(docs, "ValidatingAdmissionPolicyBinding");
    assert_eq!(binding["metadata"]["name"], name);
    assert_eq!(
        binding["spec"],
        serde_json::json!({"policyName": name, "validationActions": ["Deny"]})
    );
    spec["validations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["expression"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_nomination_grant_is_patch_on_pods_status_narrowed_by_its_policy() {
    let d = docs("execute/drain-plans.yaml");
    let role = kind(&d, "ClusterRole");
    assert_eq!(role["metadata"]["name"], "ome-alfred-drain-plans");
    assert_eq!(
        rules(role),
        vec![(
            serde_json::json!([""]),
            serde_json::json!(["pods/status"]),
            serde_json::json!(["patch"]),
            Value::Null
        )]
    );
    bound_to_alfred(&d, "ome-alfred-drain-plans");
    let checks = policy_guards(&d, "ome-alfred-drain-plan-nominations", &["pods/status"]);
    let all = checks.join("\n");
    assert!(all.contains("object.spec == oldObject.spec"));
    for field in [
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "uid",
    ] {
        assert!(
            all.contains(&format!(
                "object.metadata.{field} == oldObject.metadata.{field}"
            )),
            "{field}"
        );
    }
    // Every status field is compared, except the one alfred writes.
    for field in [
        "phase",
        "conditions",
        "message",
        "reason",
        "hostIP",
        "hostIPs",
        "podIP",
        "podIPs",
        "startTime",
        "initContainerStatuses",
        "containerStatuses",
        "ephemeralContainerStatuses",
        "qosClass",
        "resize",
        "resourceClaimStatuses",
        "observedGeneration",
        "extendedResourceClaimStatus",
        "allocatedResources",
        "resources",
    ] {
        assert!(
            all.contains(&format!(
                "object.status.{field} == oldObject.status.{field}"
            )),
            "{field}"
        );
    }
    assert!(!all.contains("object.status.nominatedNodeName == oldObject.status.nominatedNodeName"));
    let kustomization = docs("execute/kustomization.yaml");
    assert!(
        kustomization[0]["resources"]
            .as_array()
            .unwrap()
            .contains(&Value::from("drain-plans.yaml"))
    );
}

#[test]
fn the_taint_grant_is_opt_in_patch_on_nodes_narrowed_to_alfred_s_key() {
    let d = docs("execute-taint/drain-taint.yaml");
    let role = kind(&d, "ClusterRole");
    assert_eq!(role["metadata"]["name"], "ome-alfred-drain-taint");
    assert_eq!(
        rules(role),
        vec![(
            serde_json::json!([""]),
            serde_json::json!(["nodes"]),
            serde_json::json!(["patch"]),
            Value::Null
        )]
    );
    bound_to_alfred(&d, "ome-alfred-drain-taint");
    let checks = policy_guards(
        &d,
        "ome-alfred-drain-plan-taints",
        &["nodes", "nodes/status"],
    );
    let all = checks.join("\n");
    assert!(all.contains(&format!("'{}'", alfred_model::plan::DRAIN_TAINT_KEY)));
    for field in ["unschedulable", "podCIDR", "providerID"] {
        assert!(
            all.contains(&format!("object.spec.{field} == oldObject.spec.{field}")),
            "{field}"
        );
    }
    assert!(all.contains("object.status == oldObject.status"));
    assert!(all.contains("'NoSchedule'"));
    // Opt-in: its own component, not part of execute/ or the base.
    let component = docs("execute-taint/kustomization.yaml");
    assert_eq!(component[0]["kind"], "Component");
    assert_eq!(
        component[0]["resources"],
        serde_json::json!(["drain-taint.yaml"])
    );
    for f in ["execute/kustomization.yaml", "kustomization.yaml"] {
        let k = &docs(f)[0];
        assert!(
            !k["resources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r.as_str().unwrap().contains("taint")),
            "{f}"
        );
        assert!(
            k["components"].is_null(),
            "{f}: execute stays off by default"
        );
    }
}

/// The base grants no drain-plan write: pods/status and nodes stay read-only without the
/// components.
#[test]
fn the_base_rbac_grants_no_drain_plan_write() {
    let d = docs("rbac.yaml");
    for role in d.iter().filter(|d| d["kind"] == "ClusterRole") {
        for (_, resources, verbs, _) in rules(role) {
            let resources = resources.as_array().unwrap();
            if resources.iter().any(|r| r == "pods/status" || r == "nodes") {
                assert_eq!(verbs, serde_json::json!(["get", "list", "watch"]));
            }
        }
    }
}
