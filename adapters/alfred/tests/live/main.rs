//! `alfred run` against a real kube-apiserver (v1.20.2, `cargo xtask apiserver start`).
//!
//! Ignored in plain runs; run them with
//!
//! ```text
//! cargo xtask apiserver start
//! eval "$(cargo xtask apiserver status | sed 's/^/export /')"
//! cargo test -p alfred --test live -- --ignored --test-threads 1
//! ```
//!
//! (`.ci/run`'s `apiserver` step does the same with nextest.) Without
//! `ALFRED_APISERVER_KUBECONFIG` each test prints a notice and passes. alfred runs with
//! `alfred.kubeconfig`, the ServiceAccount user `system:serviceaccount:ome:ome-alfred` bound
//! only by the shipped RBAC (`deploy/rbac.yaml`); the tests set up with the admin kubeconfig.

mod drain;
mod execute;
mod harness;
mod restart;

use std::time::Duration;

use alfred_model::ClusterSnapshot;
use alfred_model::config::Config;
use alfred_observe::{ClusterObjects, ObserveSettings, observe};
use k8s_openapi::api::core::v1::Event;
use kube::Client;
use kube::api::{Api, ListParams};
use serde_json::json;

use harness::*;

/// Fast loops so the tests take seconds.
const FAST: &str = "schemaVersion: 1\nobservationLoopInterval: 1s\ndecisionLoopInterval: 2s\n";

struct Setup {
    admin: Client,
    alfred_kubeconfig: std::path::PathBuf,
    _lock: SerialLock,
}

async fn setup(config_yaml: &str, fixtures: &[&str]) -> Option<Setup> {
    let (admin_path, alfred_kubeconfig) = kubeconfigs()?;
    let lock = SerialLock::acquire();
    let admin = client(&admin_path).await;
    install_crds(&admin).await;
    install_rbac(&admin).await;
    unload_all(&admin).await;
    reset(&admin, config_yaml).await;
    for f in fixtures {
        load_fixture(&admin, f).await;
    }
    Some(Setup {
        admin,
        alfred_kubeconfig,
        _lock: lock,
    })
}

fn leader_series(a: &Alfred) -> String {
    format!("alfred_leader_status{{pod=\"{}\"}}", a.pod)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn the_snapshot_from_real_watches_equals_the_offline_observe_of_the_same_objects() {
    let Some(s) = setup(FAST, &["ten-node-spread.json", "deployment-modes.json"]).await else {
        return;
    };
    let alfred = Alfred::start(&s.alfred_kubeconfig, "alfred-snap", &[]);
    let config = Config::from_yaml(FAST).unwrap();
    let settings = ObserveSettings::from_config(&config, false);
    eventually(Duration::from_secs(60), "a live snapshot equal to the offline one", async || {
        let text = std::fs::read_to_string(&alfred.dump).ok()?;
        let live: ClusterSnapshot = serde_json::from_str(&text).ok()?;
        if live.nodes.len() < 16 {
            return None;
        }
        let objects =
            ClusterObjects::from_list_json(&read_back(&s.admin).await.to_string()).unwrap();
        let offline = observe(&objects, &settings, live.observed_at).snapshot;
        if offline == live {
            Some(())
        } else {
            eprintln!(
                "not equal yet: live {} nodes / {} workloads / {} problems, offline {} / {} / {}",
                live.nodes.len(),
                live.workloads.len(),
                live.problems.len(),
                offline.nodes.len(),
                offline.workloads.len(),
                offline.problems.len()
            );
            None
        }
    })
    .await;
    // The execute-mode re-check's uncached read (with alfred's own RBAC-bound identity) sees
    // the same cluster as the watches and the offline observe.
    let as_alfred = client(&s.alfred_kubeconfig).await;
    let fresh = alfred_kube::run::watch::caches::read_uncached(&as_alfred)
        .await
        .expect("uncached read");
    let objects = ClusterObjects::from_list_json(&read_back(&s.admin).await.to_string()).unwrap();
    let t = alfred_model::Timestamp::from_unix_secs(1_800_000_000);
    // The watchers and the re-check read Pods and Nodes as protobuf: the same objects read
    // as JSON are equal, field for field (affinity, tolerations, owners, conditions).
    {
        use alfred_kube::run::decode::slim::{SlimNode, SlimPod};
        use alfred_kube::run::watch::list_watch::{Encoding, ListFrom, list_all};
        let pods = |e| list_all::<SlimPod>(&as_alfred, ListFrom::Etcd, e);
        let (pb, json) = (
            pods(Encoding::PreferProtobuf).await,
            pods(Encoding::Json).await,
        );
        let (pb, json) = (pb.expect("protobuf pods"), json.expect("json pods"));
        assert!(pb.len() > 10, "{} pods", pb.len());
        assert_eq!(pb, json);
        let nodes = |e| list_all::<SlimNode>(&as_alfred, ListFrom::Etcd, e);
        let (pb, json) = (
            nodes(Encoding::PreferProtobuf).await,
            nodes(Encoding::Json).await,
        );
        let (pb, json) = (pb.expect("protobuf nodes"), json.expect("json nodes"));
        assert!(pb.len() >= 16, "{} nodes", pb.len());
        assert_eq!(pb, json);
    }
    assert_eq!(
        fresh.observe(&settings, t).snapshot,
        observe(&objects, &settings, t).snapshot
    );
    // Every replica publishes the cluster gauges.
    let m = alfred.metrics();
    assert!(
        m.contains("alfred_gpu_capacity{node=\"gpu-h100-01\",status=\"total\"} 8"),
        "{m}"
    );
    assert!(m.contains("alfred_cluster_fragmentation_score"), "{m}");
    assert_eq!(sample(&m, "alfred_omenative_unavailable"), Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn two_processes_elect_exactly_one_leader_that_alone_writes_and_fails_over() {
    let Some(s) = setup(FAST, &["ten-node-spread.json"]).await else {
        return;
    };
    let mut a = Alfred::start(&s.alfred_kubeconfig, "alfred-a", &[]);
    let mut b = Alfred::start(&s.alfred_kubeconfig, "alfred-b", &[]);
    let (leader, follower) = eventually(Duration::from_secs(60), "one leader", async || {
        let la = a.sample(&leader_series(&a))?;
        let lb = b.sample(&leader_series(&b))?;
        match (la, lb) {
            (1.0, 0.0) => Some(("a", "b")),
            (0.0, 1.0) => Some(("b", "a")),
            _ => None,
        }
    })
    .await;
    let (l, f) = if leader == "a" { (&a, &b) } else { (&b, &a) };
    let writes =
        "alfred_effect_writes_total{effect=\"update_recommendations\",outcome=\"applied\"}";
    eventually(Duration::from_secs(30), "the leader's record", async || {
        let data = config_map_data(&s.admin, "alfred-recommendations").await;
        data.get("last-cycle.json").cloned()
    })
    .await;
    eventually(
        Duration::from_secs(10),
        "the leader's write counter",
        async || l.sample(writes).filter(|v| *v >= 1.0),
    )
    .await;
    // Steady state: the leader keeps writing, the follower never does (a start-up flap may
    // have let it write while it briefly held the lease, so compare increments).
    let follower_before = f.sample(writes).unwrap_or(0.0);
    counter_grows_explained(
        Duration::from_secs(60),
        "two more leader writes",
        2.0,
        || explain_leadership(&[l, f], writes),
        || l.sample(writes),
    )
    .await;
    assert_eq!(
        f.sample(writes).unwrap_or(0.0),
        follower_before,
        "the follower wrote: {}",
        f.metrics()
    );
    assert_eq!(f.sample(&leader_series(f)), Some(0.0));
    let lease: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(s.admin.clone(), NS);
    let holder = lease
        .get("alfred.ome.io")
        .await
        .unwrap()
        .spec
        .unwrap()
        .holder_identity
        .unwrap();
    assert!(holder.starts_with(&format!("{}_", l.pod)), "{holder}");

    // Kill the leader: the other one takes over once the lease lapses (15 s) and writes.
    let _ = follower;
    if leader == "a" {
        a.kill();
    } else {
        b.kill();
    }
    let survivor = if leader == "a" { &b } else { &a };
    eventually(
        Duration::from_secs(45),
        "the survivor to lead",
        async || {
            survivor
                .sample(&leader_series(survivor))
                .filter(|v| *v == 1.0)
        },
    )
    .await;
    eventually(
        Duration::from_secs(15),
        "the survivor's first write",
        async || survivor.sample(writes).filter(|v| *v >= 1.0),
    )
    .await;
}

/// Each process's leader gauge, write counter and last log lines: what a leadership test
/// prints when it times out.
fn explain_leadership(processes: &[&Alfred], writes: &str) -> String {
    processes
        .iter()
        .map(|p| {
            let log = p.log();
            let tail: Vec<&str> = log.lines().rev().take(15).collect();
            format!(
                "{}: leader {:?}, writes {:?}; last log lines (newest first):\n  {}",
                p.pod,
                p.sample(&leader_series(p)),
                p.sample(writes),
                tail.join("\n  ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn recommend_only_writes_the_record_and_no_annotation() {
    let Some(s) = setup(FAST, &["ten-node-spread.json"]).await else {
        return;
    };
    let alfred = Alfred::start(&s.alfred_kubeconfig, "alfred-ro", &[]);
    let record = eventually(Duration::from_secs(60), "last-cycle.json", async || {
        config_map_data(&s.admin, "alfred-recommendations")
            .await
            .get("last-cycle.json")
            .cloned()
    })
    .await;
    let record: serde_json::Value = serde_json::from_str(&record).unwrap();
    assert_eq!(record["mode"], "recommend-only");
    // A few more passes.
    counter_grows(Duration::from_secs(60), "two more passes", 2.0, || {
        alfred.sample("alfred_decision_loop_duration_seconds_count")
    })
    .await;
    let (ar, _) = resource("ome.io/v1beta1", "InferenceService");
    let isvcs: Api<kube::api::DynamicObject> = Api::all_with(s.admin.clone(), &ar);
    for i in isvcs.list(&ListParams::default()).await.unwrap().items {
        for k in i.metadata.annotations.unwrap_or_default().keys() {
            assert!(
                !k.starts_with("ome.io/migration-request-v1-"),
                "recommend-only wrote {k}"
            );
        }
    }
    assert!(alfred.log().contains("decision pass"), "{}", alfred.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn an_invalid_config_is_rejected_with_an_event_and_the_last_good_one_stays() {
    let Some(s) = setup(FAST, &[]).await else {
        return;
    };
    let alfred = Alfred::start(&s.alfred_kubeconfig, "alfred-cfg", &[]);
    let ok = "alfred_policy_reload_total{outcome=\"success\"}";
    let failed = "alfred_policy_reload_total{outcome=\"failure\"}";
    eventually(Duration::from_secs(30), "the first load", async || {
        alfred.sample(ok).filter(|v| *v == 1.0)
    })
    .await;
    set_config(&s.admin, "schemaVersion: 1\nmode: sideways\n").await;
    eventually(Duration::from_secs(30), "the rejection", async || {
        alfred.sample(failed).filter(|v| *v == 1.0)
    })
    .await;
    let events: Api<Event> = Api::namespaced(s.admin.clone(), NS);
    let cm: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(s.admin.clone(), NS);
    let uid = cm.get("alfred-config").await.unwrap().metadata.uid;
    let ev = eventually(Duration::from_secs(10), "PolicyReloadFailed", async || {
        events
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("PolicyReloadFailed"))
    })
    .await;
    assert_eq!(ev.type_.as_deref(), Some("Warning"));
    assert_eq!(ev.involved_object.name.as_deref(), Some("alfred-config"));
    assert_eq!(ev.involved_object.uid, uid);
    assert_eq!(
        ev.source.and_then(|s| s.component).as_deref(),
        Some("alfred")
    );
    assert!(
        ev.message
            .unwrap_or_default()
            .starts_with("alfred-config rejected, keeping last-known-good: "),
    );
    // The last good configuration (1 s observations) still runs.
    counter_grows(
        Duration::from_secs(60),
        "two more observation passes",
        2.0,
        || alfred.sample("alfred_observation_loop_duration_seconds_count"),
    )
    .await;
    assert_eq!(alfred.sample(ok), Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn a_recommendations_write_racing_another_writer_is_retried_and_keeps_its_keys() {
    let Some(s) = setup(FAST, &["ten-node-spread.json"]).await else {
        return;
    };
    let alfred = Alfred::start(&s.alfred_kubeconfig, "alfred-race", &[]);
    // Another writer updates its own key in a tight loop.
    let admin = s.admin.clone();
    let racer = tokio::spawn(async move {
        let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(admin, NS);
        for i in 0..400u32 {
            if let Ok(mut cm) = cms.get("alfred-recommendations").await {
                cm.data
                    .get_or_insert_with(Default::default)
                    .insert("someone-else".into(), i.to_string());
                let _ = cms
                    .replace("alfred-recommendations", &Default::default(), &cm)
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    eventually(Duration::from_secs(60), "several applied writes", async || {
        alfred
            .sample("alfred_effect_writes_total{effect=\"update_recommendations\",outcome=\"applied\"}")
            .filter(|v| *v >= 3.0)
    })
    .await;
    racer.abort();
    let data = config_map_data(&s.admin, "alfred-recommendations").await;
    assert!(data.contains_key("last-cycle.json"));
    assert!(data.contains_key("someone-else"));
    eprintln!(
        "conflicts seen and retried: {}",
        alfred
            .log()
            .matches("recommendations write conflict")
            .count()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn a_write_outside_the_shipped_rbac_is_refused_reported_and_not_retried_in_a_loop() {
    // The record goes to a ConfigMap the Role does not let alfred update.
    let cfg = format!("{FAST}recommendationsConfigMapName: other-recommendations\n");
    let Some(s) = setup(&cfg, &["ten-node-spread.json"]).await else {
        return;
    };
    harness::apply(
        &s.admin,
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "other-recommendations", "namespace": NS}}),
    )
    .await;
    let alfred = Alfred::start(&s.alfred_kubeconfig, "alfred-rbac", &[]);
    let forbidden =
        "alfred_effect_writes_total{effect=\"update_recommendations\",outcome=\"forbidden\"}";
    eventually(Duration::from_secs(60), "a refused write", async || {
        alfred.sample(forbidden).filter(|v| *v >= 1.0)
    })
    .await;
    let passes = counter_grows(Duration::from_secs(60), "three more passes", 3.0, || {
        alfred.sample("alfred_decision_loop_duration_seconds_count")
    })
    .await;
    let refused = alfred.sample(forbidden).unwrap_or(0.0);
    // At most one attempt per pass: never a retry loop.
    assert!(
        refused <= passes + 1.0,
        "{refused} refusals in {passes} passes"
    );
    assert!(
        alfred
            .log()
            .contains("write refused by the API server (RBAC); not retried")
    );
    assert!(
        !config_map_data(&s.admin, "other-recommendations")
            .await
            .contains_key("last-cycle.json")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn metrics_pass_promtool_and_a_prometheus_server_scrapes_the_documented_series() {
    let Some(s) = setup(FAST, &["ten-node-spread.json"]).await else {
        return;
    };
    let alfred = Alfred::start(&s.alfred_kubeconfig, "alfred-prom", &[]);
    eventually(Duration::from_secs(60), "the cluster gauges", async || {
        alfred
            .sample("alfred_gpu_capacity{node=\"gpu-h100-01\",status=\"total\"}")
            .filter(|v| *v == 8.0)
    })
    .await;
    if let Some(promtool) = tool("ALFRED_PROMTOOL", "promtool") {
        let text = alfred.metrics();
        let mut child = std::process::Command::new(promtool)
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let report = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // The one finding is the documented metric name `alfred_pending_pod_count`
        // (docs/metrics-and-events.md#metrics), which promtool's lint dislikes for its `_count`
        // suffix.
        for line in report.lines().filter(|l| !l.trim().is_empty()) {
            assert!(
                line.starts_with("alfred_pending_pod_count "),
                "promtool: {report}\n{text}"
            );
        }
    }
    if let Some(prometheus) = tool("ALFRED_PROMETHEUS", "prometheus") {
        let dir = std::env::temp_dir().join(format!("alfred-prom-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: alfred\n    static_configs:\n      - targets: ['127.0.0.1:{}']\n",
                alfred.port
            ),
        )
        .unwrap();
        let web = free_port();
        let prom = Killed(
            std::process::Command::new(prometheus)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.join("data").display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{web}"))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        );
        for query in [
            "alfred_leader_status",
            "alfred_fragmentation_observed",
            "alfred_gpu_capacity",
            "alfred_policy_reload_total",
        ] {
            eventually(Duration::from_secs(60), query, async || {
                let body = http_get(web, &format!("/api/v1/query?query={query}"));
                let v: serde_json::Value = serde_json::from_str(&body).ok()?;
                let n = v["data"]["result"].as_array()?.len();
                (n > 0).then_some(())
            })
            .await;
        }
        // Passed: Prometheus stopped, its folder goes (a failure keeps it).
        drop(prom);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn a_node_condition_change_triggers_an_early_pass() {
    // Regular passes an hour apart: only an early tick can run a second one.
    let cfg = "schemaVersion: 1\nobservationLoopInterval: 1s\ndecisionLoopInterval: 1h\n";
    let Some(s) = setup(cfg, &["ten-node-spread.json"]).await else {
        return;
    };
    let alfred = Alfred::start(&s.alfred_kubeconfig, "alfred-early", &[]);
    let passes = |a: &Alfred| a.sample("alfred_decision_loop_duration_seconds_count");
    eventually(Duration::from_secs(60), "the first pass", async || {
        passes(&alfred).filter(|v| *v >= 1.0)
    })
    .await;
    let before = passes(&alfred).unwrap();
    // A heartbeat-only change does not fire.
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(s.admin.clone());
    let node = nodes.get("gpu-h100-03").await.unwrap();
    let mut conditions = node.status.unwrap().conditions.unwrap_or_default();
    for c in &mut conditions {
        c.message = Some("heartbeat".into());
    }
    nodes
        .patch_status(
            "gpu-h100-03",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"status": {"conditions": conditions}})),
        )
        .await
        .unwrap();
    // Observed (three more observation passes), and still no decision pass.
    counter_grows(
        Duration::from_secs(60),
        "three more observation passes",
        3.0,
        || alfred.sample("alfred_observation_loop_duration_seconds_count"),
    )
    .await;
    assert_eq!(passes(&alfred), Some(before));
    // GPUs fail: GpuUnhealthy=True.
    conditions.retain(|c| c.type_ != "GpuUnhealthy");
    conditions.push(k8s_openapi::api::core::v1::NodeCondition {
        type_: "GpuUnhealthy".into(),
        status: "True".into(),
        last_transition_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::now(),
        )),
        ..Default::default()
    });
    nodes
        .patch_status(
            "gpu-h100-03",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"status": {"conditions": conditions}})),
        )
        .await
        .unwrap();
    eventually(Duration::from_secs(20), "an early pass", async || {
        passes(&alfred).filter(|v| *v > before)
    })
    .await;
    // Its node record lands in the recommendations ConfigMap.
    eventually(Duration::from_secs(10), "node.gpu-h100-03", async || {
        config_map_data(&s.admin, "alfred-recommendations")
            .await
            .get("node.gpu-h100-03")
            .cloned()
    })
    .await;
}

/// docs/design-pass.md#node-records on a real API server: with `policies.nodeHealth.enabled: false`
/// the recommendations ConfigMap holds no `node.*` key (those an earlier leader left are removed,
/// readable or not) and no Node Event is written, though `gpu-h100-01` is Unhealthy. Switched
/// on, the record and `NodeRepairNeeded` appear (so the check can see them); off again, the
/// key goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn with_node_health_disabled_no_node_record_or_node_event_is_written() {
    let off = format!("{FAST}policies:\n  nodeHealth:\n    enabled: false\n");
    let Some(s) = setup(&off, &["gpu-unhealthy.json"]).await else {
        return;
    };
    // Node Events live in `default`; earlier tests' go first.
    let node_events: Api<Event> = Api::namespaced(s.admin.clone(), "default");
    let about_nodes = ListParams::default().fields("involvedObject.kind=Node");
    let _ = node_events
        .delete_collection(&kube::api::DeleteParams::default(), &about_nodes)
        .await;
    let alfreds_node_events = async || -> Vec<String> {
        node_events
            .list(&about_nodes)
            .await
            .map(|l| l.items)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| e.source.as_ref().and_then(|s| s.component.as_deref()) == Some("alfred"))
            .filter_map(|e| e.reason)
            .collect()
    };
    let node_keys = async || -> Vec<String> {
        config_map_data(&s.admin, "alfred-recommendations")
            .await
            .into_keys()
            .filter(|k| k.starts_with("node.") || k.starts_with("node-hash."))
            .collect()
    };
    // Keys an earlier leader (node health on) left: a record, and one no longer readable.
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(s.admin.clone(), NS);
    cms.patch(
        "alfred-recommendations",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"data": {
            "node.gpu-h100-01": json!({"nodeUID": "old", "state": "Unhealthy",
                "maintenance": {"requested": false}, "workloads": [],
                "omeGpuOccupantsPresent": false,
                "observedAt": "2026-01-01T00:00:00Z",
                "signaledAt": "2026-01-01T00:00:00Z"}).to_string(),
            "node.gpu-h100-09": "{not a record",
        }})),
    )
    .await
    .unwrap();
    let alfred = Alfred::start(&s.alfred_kubeconfig, "alfred-nh-off", &[]);
    more_records(&s.admin, 3, Duration::from_secs(90)).await;
    assert_eq!(node_keys().await, Vec::<String>::new());
    assert_eq!(alfreds_node_events().await, Vec::<String>::new());
    assert!(
        alfred
            .sample(
                "alfred_nodehealth_signals_total{node=\"gpu-h100-01\",reason=\"NodeRepairNeeded\"}"
            )
            .is_none(),
        "{}",
        alfred.metrics()
    );

    set_config(&s.admin, FAST).await;
    eventually(Duration::from_secs(60), "node.gpu-h100-01", async || {
        node_keys()
            .await
            .contains(&"node.gpu-h100-01".to_owned())
            .then_some(())
    })
    .await;
    eventually(Duration::from_secs(30), "NodeRepairNeeded", async || {
        alfreds_node_events()
            .await
            .contains(&"NodeRepairNeeded".to_owned())
            .then_some(())
    })
    .await;

    set_config(&s.admin, &off).await;
    eventually(
        Duration::from_secs(60),
        "the node keys removed",
        async || node_keys().await.is_empty().then_some(()),
    )
    .await;
    let events_then = alfreds_node_events().await;
    more_records(&s.admin, 2, Duration::from_secs(60)).await;
    assert_eq!(node_keys().await, Vec::<String>::new());
    assert_eq!(alfreds_node_events().await, events_then);
}
