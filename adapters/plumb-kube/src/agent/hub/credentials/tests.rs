//! The provider file's checks, the choice of provider, KEP-5339's extensions, and the kube
//! config a member's access builds.

use super::*;

const FILE: &str = r#"{"providers": [
  {"name": "plumb-test", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1",
    "command": "/bin/creds", "args": ["--x"], "env": [{"name": "A", "value": "file"}],
    "provideClusterInfo": true},
   "profileSourcedCLIArgsPolicy": "Append", "profileSourcedEnvVarsPolicy": "AppendIfNotExists"},
  {"name": "other", "execConfig": {"command": "/bin/other"}}
]}"#;

fn profile(status: Value) -> Value {
    json!({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
           "metadata": {"name": "us-west", "namespace": "plumb"}, "status": status})
}

fn cluster(server: &str) -> Value {
    json!({"server": server, "certificate-authority-data": "Q0E="})
}

#[test]
fn the_files_order_picks_the_provider() {
    let file = ProviderFile::parse(FILE).unwrap();
    let p = profile(json!({"accessProviders": [
        {"name": "other", "cluster": cluster("https://b:443")},
        {"name": "plumb-test", "cluster": cluster("https://a:443")},
    ]}));
    let access = resolve(&p, &file).unwrap();
    assert_eq!(access.provider, "plumb-test");
    assert_eq!(access.cluster["server"], "https://a:443");
    assert_eq!(access.exec["command"], "/bin/creds");
    assert_eq!(access.exec["interactiveMode"], "Never");
}

#[test]
fn access_providers_win_over_the_deprecated_credential_providers() {
    let file = ProviderFile::parse(FILE).unwrap();
    let p = profile(json!({
        "credentialProviders": [{"name": "plumb-test", "cluster": cluster("https://old:443")}],
        "accessProviders": [{"name": "plumb-test", "cluster": cluster("https://new:443")}],
    }));
    assert_eq!(
        resolve(&p, &file).unwrap().cluster["server"],
        "https://new:443"
    );
    let old = profile(json!({
        "credentialProviders": [{"name": "other", "cluster": cluster("https://old:443")}],
    }));
    assert_eq!(resolve(&old, &file).unwrap().provider, "other");
}

#[test]
fn the_profiles_extensions_reach_the_plugin_as_the_policies_allow() {
    let file = ProviderFile::parse(FILE).unwrap();
    let mut c = cluster("https://a:443");
    c["extensions"] = json!([
        {"name": ADDITIONAL_ARGS_EXTENSION, "extension": ["/run/tokens.csv"]},
        {"name": ADDITIONAL_ENVS_EXTENSION, "extension": {"A": "profile", "B": "profile"}},
    ]);
    let p = profile(json!({"accessProviders": [{"name": "plumb-test", "cluster": c.clone()}]}));
    let access = resolve(&p, &file).unwrap();
    assert_eq!(access.exec["args"], json!(["--x", "/run/tokens.csv"]));
    assert_eq!(
        access.exec["env"],
        json!([{"name": "A", "value": "file"}, {"name": "B", "value": "profile"}])
    );
    // `other` sets no policy: the extensions are ignored.
    let p = profile(json!({"accessProviders": [{"name": "other", "cluster": c}]}));
    let access = resolve(&p, &file).unwrap();
    assert_eq!(access.exec.get("args"), None);
    assert_eq!(access.exec.get("env"), None);
}

#[test]
fn replace_lets_the_profile_win() {
    let mut file = ProviderFile::parse(FILE).unwrap();
    file.providers[0].profile_sourced_env_vars_policy = Some("Replace".into());
    let mut c = cluster("https://a:443");
    c["extensions"] = json!([{"name": ADDITIONAL_ENVS_EXTENSION, "extension": {"A": "profile"}}]);
    let p = profile(json!({"accessProviders": [{"name": "plumb-test", "cluster": c}]}));
    assert_eq!(
        resolve(&p, &file).unwrap().exec["env"],
        json!([{"name": "A", "value": "profile"}])
    );
}

#[test]
fn a_profile_without_usable_credentials_is_one_line_naming_it_and_the_field() {
    let file = ProviderFile::parse(FILE).unwrap();
    for (status, want) in [
        (
            json!({}),
            "ClusterProfile us-west: status.accessProviders is empty: no credentials for this member",
        ),
        (
            json!({"accessProviders": [{"name": "vault", "cluster": cluster("https://a")}]}),
            "ClusterProfile us-west: status.accessProviders names vault but the provider file has none of them",
        ),
        (
            json!({"accessProviders": [{"name": "plumb-test", "cluster": {}}]}),
            "ClusterProfile us-west: status.accessProviders[plumb-test].cluster.server: missing",
        ),
    ] {
        assert_eq!(resolve(&profile(status), &file).unwrap_err(), want);
    }
}

#[test]
fn a_bad_provider_file_names_the_field() {
    for (text, want) in [
        (
            r#"{"providers": [{"name": "a"}]}"#,
            "providers[0]: missing field `execConfig`",
        ),
        (
            r#"{"providers": [{"name": "a", "execConfig": {}}]}"#,
            "providers[0].execConfig.command: missing",
        ),
        (
            r#"{"providers": [{"name": "", "execConfig": {"command": "x"}}]}"#,
            "providers[0].name: empty",
        ),
        (
            r#"{"providers": [{"name": "a", "execConfig": {"command": "x"}, "profileSourcedCLIArgsPolicy": "Prepend"}]}"#,
            "providers[0].profileSourcedCLIArgsPolicy: \"Prepend\" is not Append or Ignore",
        ),
    ] {
        let e = ProviderFile::parse(text).unwrap_err();
        assert!(e.starts_with(want), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
    let e = ProviderFile::read(Path::new("/nonexistent/providers.json")).unwrap_err();
    assert!(
        e.starts_with("cannot read /nonexistent/providers.json: "),
        "{e}"
    );
}

#[tokio::test]
async fn the_client_config_runs_the_providers_plugin_for_the_profiles_server() {
    let file = ProviderFile::parse(FILE).unwrap();
    let p = profile(json!({"accessProviders": [{"name": "plumb-test", "cluster":
        {"server": "https://127.0.0.1:17443", "insecure-skip-tls-verify": true}}]}));
    let access = resolve(&p, &file).unwrap();
    let config = client_config(
        "us-west",
        &access,
        "plumb",
        std::time::Duration::from_secs(1),
    )
    .await
    .unwrap();
    assert_eq!(config.cluster_url.to_string(), "https://127.0.0.1:17443/");
    assert_eq!(config.default_namespace, "plumb");
    let exec = config.auth_info.exec.expect("an exec user");
    assert_eq!(exec.command.as_deref(), Some("/bin/creds"));
    assert!(exec.provide_cluster_info);
    assert_eq!(
        exec.cluster.and_then(|c| c.server).as_deref(),
        Some("https://127.0.0.1:17443")
    );
}
