//! Membership from ClusterProfiles: every profile votes, only those with credentials get a
//! client, deletions and changes, and the fleet of one without a provider file.

use super::*;
use serde_json::json;

fn offline_client() -> Client {
    let config = kube::Config::new("https://127.0.0.1:9".parse().unwrap());
    Client::try_from(config).unwrap()
}

/// A provider whose plugin is a shell printing an ExecCredential (what kube-rs runs when it
/// builds the client).
fn providers() -> ProviderFile {
    ProviderFile::parse(
        r#"{"providers": [{"name": "plumb-test", "execConfig": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/sh",
            "args": ["-c", "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}'"]}},
          {"name": "broken", "execConfig": {"command": "/bin/false"}}]}"#,
    )
    .unwrap()
}

fn profile(name: &str, provider: Option<&str>) -> Value {
    let status = match provider {
        Some(p) => json!({"accessProviders": [{"name": p, "cluster":
            {"server": "https://127.0.0.1:9", "insecure-skip-tls-verify": true}}]}),
        None => json!({}),
    };
    json!({"metadata": {"name": name, "namespace": "plumb"}, "status": status})
}

fn membership() -> Membership {
    Membership {
        own: "b".into(),
        own_client: offline_client(),
        namespace: "plumb".into(),
        providers: Some(providers()),
        timeout: Duration::from_secs(1),
        members: BTreeMap::new(),
        profiles: None,
    }
}

#[tokio::test]
async fn every_profile_votes_and_only_those_with_credentials_have_a_client() {
    let mut m = membership();
    m.update(vec![
        profile("a", Some("plumb-test")),
        profile("c", None),
        profile("d", Some("broken")),
        profile("b", Some("plumb-test")),
    ])
    .await;
    let fleet = m.fleet();
    assert_eq!(fleet.voters, ["a", "b", "c", "d"]);
    assert_eq!(fleet.clients.keys().collect::<Vec<_>>(), ["a", "b"]);
    let why = |n: &str| {
        m.members[n]
            .client
            .as_ref()
            .err()
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        why("c"),
        "ClusterProfile c: status.accessProviders is empty: no credentials for this member"
    );
    assert!(
        why("d").starts_with("ClusterProfile d: access provider broken failed: "),
        "{}",
        why("d")
    );
    assert!(!why("d").contains('\n'));
}

#[tokio::test]
async fn a_deleted_profile_leaves_and_a_changed_one_is_rebuilt() {
    let mut m = membership();
    m.update(vec![profile("a", Some("plumb-test")), profile("c", None)])
        .await;
    assert_eq!(m.fleet().voters, ["a", "b", "c"]);
    m.update(vec![profile("c", Some("plumb-test"))]).await;
    let fleet = m.fleet();
    assert_eq!(fleet.voters, ["b", "c"]);
    assert_eq!(fleet.clients.keys().collect::<Vec<_>>(), ["b", "c"]);
}

#[tokio::test]
async fn without_a_provider_file_the_fleet_is_this_member_alone() {
    let mut m = Membership::new("b", offline_client(), "plumb", None, Duration::from_secs(1));
    let fleet = m.refresh().await.expect("no list to wait for");
    assert_eq!(fleet.voters, ["b"]);
    assert_eq!(fleet.clients.keys().collect::<Vec<_>>(), ["b"]);
}

#[tokio::test]
async fn a_client_whose_plugin_failed_is_built_again_after_a_while() {
    let flag = std::env::temp_dir().join(format!("plumb-members-retry-{}", std::process::id()));
    let _ = std::fs::remove_file(&flag);
    let mut m = membership();
    m.providers = Some(
        ProviderFile::parse(&format!(
            r#"{{"providers": [{{"name": "late", "execConfig": {{"command": "/bin/sh",
              "args": ["-c", "test -e {} && echo '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"t\"}}}}'"]}}}}]}}"#,
            flag.display()
        ))
        .unwrap(),
    );
    let profiles = || vec![profile("a", Some("late"))];
    m.update(profiles()).await;
    assert!(
        !m.fleet().clients.contains_key("a"),
        "the plugin fails at first"
    );
    std::fs::write(&flag, "").unwrap();
    m.update(profiles()).await;
    assert!(
        !m.fleet().clients.contains_key("a"),
        "not tried again at once"
    );
    // The retry delay has passed.
    let a = m.members.get_mut("a").unwrap();
    assert!(
        a.retry_at
            .is_some_and(|t| t > tokio::time::Instant::now() + CLIENT_RETRY / 2)
    );
    a.retry_at = Some(tokio::time::Instant::now());
    m.update(profiles()).await;
    assert!(
        m.fleet().clients.contains_key("a"),
        "built again after the retry delay"
    );
    std::fs::remove_file(&flag).unwrap();
}
