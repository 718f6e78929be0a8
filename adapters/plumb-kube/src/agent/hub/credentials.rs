//! Credentials for a member, the KEP-5339 way (docs/plumb/agent.md#credentials): the
//! access-provider file (`--clusterprofile-provider-file`, JSON `{"providers": [{"name": …,
//! "execConfig": {…}}]}`) names the exec plugins this agent can run; a ClusterProfile's
//! `status.accessProviders[]` says, per provider, where the member's API server is (`cluster`:
//! a kubeconfig `Cluster`, `server`, `certificate-authority-data`, …). The agent takes the first
//! provider of its file that the profile lists (the file's order is the agent's preference, as
//! in the reference library of sigs.k8s.io/cluster-inventory-api), and builds a kube config
//! whose user is that provider's exec plugin: kube-rs runs it and reads the `ExecCredential`
//! it prints.
//!
//! The deprecated `status.credentialProviders[]` is read too; an `accessProviders[]` entry of
//! the same name wins. Two reserved cluster extensions of KEP-5339 pass per-cluster arguments
//! and environment variables to the plugin, each only where the provider's policy allows it
//! (`profileSourcedCLIArgsPolicy: Append`, `profileSourcedEnvVarsPolicy: AppendIfNotExists` or
//! `Replace`; `Ignore` or unset drops them).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

/// KEP-5339's extension carrying extra plugin arguments (a list of strings).
pub const ADDITIONAL_ARGS_EXTENSION: &str =
    "clusterprofiles.multicluster.x-k8s.io/exec/additional-args";
/// KEP-5339's extension carrying extra plugin environment variables (a map of strings).
pub const ADDITIONAL_ENVS_EXTENSION: &str =
    "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs";

/// The access-provider file.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ProviderFile {
    /// The exec plugins, in the agent's order of preference.
    pub providers: Vec<Provider>,
}

/// One access provider: the name ClusterProfiles list it under, and how to run its plugin.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Provider {
    /// The provider's name (`status.accessProviders[].name`).
    pub name: String,
    /// The plugin, as a kubeconfig user's `exec` (`apiVersion`, `command`, `args`, `env`,
    /// `provideClusterInfo`, …).
    pub exec_config: Value,
    /// Whether a profile's additional-args extension is appended (`Append`) or not.
    #[serde(default, rename = "profileSourcedCLIArgsPolicy")]
    pub profile_sourced_cli_args_policy: Option<String>,
    /// Whether a profile's additional-envs extension is used (`AppendIfNotExists`, `Replace`).
    #[serde(default)]
    pub profile_sourced_env_vars_policy: Option<String>,
}

impl ProviderFile {
    /// Reads and checks the file; the error is one line naming the file and the field.
    pub fn read(path: &Path) -> Result<ProviderFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses and checks the file's text.
    pub fn parse(text: &str) -> Result<ProviderFile, String> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let file: ProviderFile = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            format!("{path}: {inner}")
        })?;
        for (i, p) in file.providers.iter().enumerate() {
            if p.name.is_empty() {
                return Err(format!("providers[{i}].name: empty"));
            }
            if !p.exec_config.is_object() {
                return Err(format!("providers[{i}].execConfig: not an object"));
            }
            match p.exec_config.get("command") {
                Some(Value::String(c)) if !c.is_empty() => {}
                _ => return Err(format!("providers[{i}].execConfig.command: missing")),
            }
            if let Some(policy) = &p.profile_sourced_cli_args_policy
                && !matches!(policy.as_str(), "" | "Append" | "Ignore")
            {
                return Err(format!(
                    "providers[{i}].profileSourcedCLIArgsPolicy: {policy:?} is not Append or Ignore"
                ));
            }
            if let Some(policy) = &p.profile_sourced_env_vars_policy
                && !matches!(
                    policy.as_str(),
                    "" | "AppendIfNotExists" | "Replace" | "Ignore"
                )
            {
                return Err(format!(
                    "providers[{i}].profileSourcedEnvVarsPolicy: {policy:?} is not AppendIfNotExists, Replace or Ignore"
                ));
            }
        }
        Ok(file)
    }
}

/// How to reach one member: the kubeconfig `Cluster` and `exec` user, as JSON. Two profiles
/// (or two versions of one) with equal accesses need no new client.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberAccess {
    /// The provider chosen.
    pub provider: String,
    /// The kubeconfig `Cluster` from the profile.
    pub cluster: Value,
    /// The kubeconfig user's `exec`, extensions applied.
    pub exec: Value,
}

/// Picks the provider and builds the access of the ClusterProfile `profile` (its JSON). The
/// error names the profile and the field.
pub fn resolve(profile: &Value, file: &ProviderFile) -> Result<MemberAccess, String> {
    let name = profile["metadata"]["name"].as_str().unwrap_or("?");
    let mut listed: BTreeMap<&str, &Value> = BTreeMap::new();
    for field in ["credentialProviders", "accessProviders"] {
        for entry in profile["status"][field].as_array().into_iter().flatten() {
            if let Some(n) = entry["name"].as_str() {
                listed.insert(n, entry);
            }
        }
    }
    if listed.is_empty() {
        return Err(format!(
            "ClusterProfile {name}: status.accessProviders is empty: no credentials for this member"
        ));
    }
    let Some((provider, entry)) = file
        .providers
        .iter()
        .find_map(|p| listed.get(p.name.as_str()).map(|e| (p, *e)))
    else {
        let names: Vec<&str> = listed.keys().copied().collect();
        return Err(format!(
            "ClusterProfile {name}: status.accessProviders names {} but the provider file has none of them",
            names.join(", ")
        ));
    };
    let cluster = entry.get("cluster").cloned().unwrap_or(Value::Null);
    match cluster.get("server").and_then(Value::as_str) {
        Some(s) if !s.is_empty() => {}
        _ => {
            return Err(format!(
                "ClusterProfile {name}: status.accessProviders[{}].cluster.server: missing",
                provider.name
            ));
        }
    }
    let mut exec = provider.exec_config.clone();
    exec["interactiveMode"] = json!("Never");
    apply_extensions(&mut exec, &cluster, provider)
        .map_err(|e| format!("ClusterProfile {name}: {e}"))?;
    Ok(MemberAccess {
        provider: provider.name.clone(),
        cluster,
        exec,
    })
}

/// Applies KEP-5339's additional-args and additional-envs extensions of `cluster` to `exec`
/// as the provider's policies allow.
fn apply_extensions(exec: &mut Value, cluster: &Value, provider: &Provider) -> Result<(), String> {
    for ext in cluster["extensions"].as_array().into_iter().flatten() {
        let data = &ext["extension"];
        match ext["name"].as_str() {
            Some(ADDITIONAL_ARGS_EXTENSION)
                if provider.profile_sourced_cli_args_policy.as_deref() == Some("Append") =>
            {
                let extra: Vec<String> = serde_json::from_value(data.clone())
                    .map_err(|e| format!("cluster.extensions[{ADDITIONAL_ARGS_EXTENSION}]: {e}"))?;
                let args = exec["args"].as_array().cloned().unwrap_or_default();
                exec["args"] = Value::Array(
                    args.into_iter()
                        .chain(extra.into_iter().map(Value::String))
                        .collect(),
                );
            }
            Some(ADDITIONAL_ENVS_EXTENSION) => {
                let replace = match provider.profile_sourced_env_vars_policy.as_deref() {
                    Some("AppendIfNotExists") => false,
                    Some("Replace") => true,
                    _ => continue,
                };
                let extra: BTreeMap<String, String> = serde_json::from_value(data.clone())
                    .map_err(|e| format!("cluster.extensions[{ADDITIONAL_ENVS_EXTENSION}]: {e}"))?;
                merge_env(exec, extra, replace);
            }
            _ => {}
        }
    }
    Ok(())
}

/// Merges `extra` into `exec.env` (`[{name, value}]`): the provider's value wins unless
/// `replace`.
fn merge_env(exec: &mut Value, extra: BTreeMap<String, String>, replace: bool) {
    let mut env: BTreeMap<String, String> = extra;
    for e in exec["env"].as_array().into_iter().flatten() {
        if let (Some(n), Some(v)) = (e["name"].as_str(), e["value"].as_str())
            && (!replace || !env.contains_key(n))
        {
            env.insert(n.to_owned(), v.to_owned());
        }
    }
    exec["env"] = Value::Array(
        env.into_iter()
            .map(|(name, value)| json!({"name": name, "value": value}))
            .collect(),
    );
}

/// The kube-rs configuration of `access` (namespace `namespace`). Only connecting has a
/// timeout (`timeout`): callers bound each request themselves, and a read timeout would cut
/// the long-lived watches a hub step may open.
pub async fn client_config(
    member: &str,
    access: &MemberAccess,
    namespace: &str,
    timeout: std::time::Duration,
) -> Result<kube::Config, String> {
    let kubeconfig = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": member, "cluster": access.cluster}],
        "users": [{"name": access.provider, "user": {"exec": access.exec}}],
        "contexts": [{"name": member, "context": {
            "cluster": member, "user": access.provider, "namespace": namespace}}],
        "current-context": member,
    });
    let kubeconfig: kube::config::Kubeconfig = serde_json::from_value(kubeconfig)
        .map_err(|e| format!("ClusterProfile {member}: not a kubeconfig cluster or exec: {e}"))?;
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .map_err(|e| format!("ClusterProfile {member}: {e}"))?;
    config.connect_timeout = Some(timeout);
    Ok(config)
}

#[cfg(test)]
mod tests;
