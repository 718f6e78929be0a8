//! The manifests in `deploy/`: least privilege, pod security (decision E23), the shipped
//! configuration parses, and the migration guard is exactly the canonical one alfred checks.

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
