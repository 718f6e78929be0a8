//! The command lines `deploy/plumb`'s Deployments run are ones the `plumb` binary accepts and
//! resolves as intended: every flag of `agent.yaml` and `scaler.yaml` (with the `$(VAR)`s the
//! kubelet expands filled from `cluster.yaml`, as in a pod) parses with this build's command
//! line. The manifests' own checks (pod security, RBAC, a real API server's dry run) are in
//! `adapters/plumb-scaler/tests/deploy.rs`.

use std::path::{Path, PathBuf};

use clap::Parser;
use plumb_kube::agent::DecisionLogTarget;
use plumb_kube::cli::{Cli, Command};
use serde_json::Value;

fn deploy(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/plumb")
        .join(file)
}

fn docs(file: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(deploy(file)).unwrap();
    serde_saphyr::from_multiple::<Value>(&text)
        .unwrap()
        .into_iter()
        .filter(|v| !v.is_null())
        .collect()
}

/// The container's command line as the kubelet runs it: `$(NAME)` of an env var from the
/// ConfigMap `plumb-cluster` replaced by its value there.
fn command_line(file: &str, deployment: &str) -> Vec<String> {
    let cluster = docs("cluster.yaml")
        .into_iter()
        .find(|d| d["metadata"]["name"] == "plumb-cluster")
        .expect("plumb-cluster");
    let dep = docs(file)
        .into_iter()
        .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == deployment)
        .expect("the Deployment");
    let container = &dep["spec"]["template"]["spec"]["containers"][0];
    let mut vars = Vec::new();
    for env in container["env"].as_array().into_iter().flatten() {
        let key = &env["valueFrom"]["configMapKeyRef"];
        if key.is_object() {
            let value = cluster["data"][key["key"].as_str().unwrap()]
                .as_str()
                .unwrap();
            vars.push((
                format!("$({})", env["name"].as_str().unwrap()),
                value.to_owned(),
            ));
        }
    }
    let words = container["command"].as_array().unwrap().iter();
    words
        .chain(container["args"].as_array().unwrap())
        .map(|w| {
            let mut w = w.as_str().unwrap().to_owned();
            for (var, value) in &vars {
                w = w.replace(var, value);
            }
            assert!(!w.contains("$("), "{w}: a variable the pod does not set");
            w
        })
        .collect()
}

#[test]
fn the_agent_deployment_runs_a_command_line_plumb_accepts() {
    let argv = command_line("agent.yaml", "plumb-agent");
    assert_eq!(argv[0], "/plumb");
    let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let Command::Agent(args) = cli.command else {
        panic!("{argv:?} is not `plumb agent`");
    };
    let config = args.config("plumb-agent-0".into());
    assert_eq!(config.cluster_name, "member-1");
    assert_eq!(config.interval.as_secs(), 30);
    assert_eq!(config.hub_interval.as_secs(), 10);
    assert_eq!(
        config.prometheus_url.as_deref(),
        Some("http://prometheus-operated.monitoring.svc:9090")
    );
    assert_eq!(
        config.provider_file.as_deref(),
        Some(Path::new("/etc/plumb/access-providers/providers.json"))
    );
    assert!(matches!(config.decision_log, DecisionLogTarget::Stdout));
    assert!(config.leader_elect);
    assert_eq!(config.metrics_bind, ":8080");
    assert_eq!(config.health_probe_bind, ":8081");
}

#[test]
fn the_scaler_deployment_runs_a_command_line_plumb_accepts() {
    let argv = command_line("scaler.yaml", "plumb-scaler");
    let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let Command::Scaler(args) = cli.command else {
        panic!("{argv:?} is not `plumb scaler`");
    };
    let config = args.config();
    assert_eq!(config.cluster_name, "member-1");
    assert_eq!(config.bind.port(), 6000);
    assert_eq!(config.namespace, None, "the pod's namespace");
    assert_eq!(config.tls, None);
    assert_eq!(config.metrics_bind, ":8080");
    assert_eq!(config.health_probe_bind, ":8081");
}
