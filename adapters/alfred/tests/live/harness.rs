//! Harness of the live tests: the test API server's kubeconfigs, CRDs, the shipped RBAC,
//! fixture loading through the real API, and `alfred run` child processes.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use serde_json::{Value, json};

/// alfred's namespace in the tests (the one `alfred.kubeconfig`'s ServiceAccount lives in).
pub const NS: &str = "ome";
/// Label put on every object a test loads.
pub const FIXTURE_LABEL: &str = "alfred-test/fixture";

/// The kubeconfigs `cargo xtask apiserver status` prints, or `None` (the test then prints a
/// notice and passes).
pub fn kubeconfigs() -> Option<(PathBuf, PathBuf)> {
    let admin = std::env::var_os("ALFRED_APISERVER_KUBECONFIG").map(PathBuf::from);
    let Some(admin) = admin else {
        eprintln!(
            "skipping: ALFRED_APISERVER_KUBECONFIG is not set. Run `cargo xtask apiserver start` and \
             export what `cargo xtask apiserver status` prints."
        );
        return None;
    };
    let alfred = std::env::var_os("ALFRED_APISERVER_ALFRED_KUBECONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| admin.with_file_name("alfred.kubeconfig"));
    Some((admin, alfred))
}

/// A client from a kubeconfig file.
pub async fn client(path: &Path) -> Client {
    let kc = kube::config::Kubeconfig::read_from(path).expect("kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .expect("kubeconfig");
    Client::try_from(cfg).expect("client")
}

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Serializes the live tests across processes (nextest runs each test in its own process):
/// they share one API server, one namespace and one Lease.
pub struct SerialLock(PathBuf);

impl SerialLock {
    /// Waits for the lock (a stale one older than 10 minutes is broken).
    pub fn acquire() -> SerialLock {
        let path = std::env::temp_dir().join("alfred-live-tests.lock");
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(_) => return SerialLock(path),
                Err(_) => {
                    let stale = std::fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age > Duration::from_secs(600));
                    if stale {
                        let _ = std::fs::remove_file(&path);
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
    }
}

impl Drop for SerialLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn yaml_docs(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("read yaml");
    serde_saphyr::from_multiple::<Value>(&text)
        .expect("yaml")
        .into_iter()
        .filter(|v| !v.is_null())
        .collect()
}

/// The API resource of a kind the tests create.
pub fn resource(api_version: &str, kind: &str) -> (ApiResource, bool) {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let (plural, namespaced) = match kind {
        "Node" => ("nodes", false),
        "Pod" => ("pods", true),
        "Namespace" => ("namespaces", false),
        "ConfigMap" => ("configmaps", true),
        "ServiceAccount" => ("serviceaccounts", true),
        "PersistentVolumeClaim" => ("persistentvolumeclaims", true),
        "PersistentVolume" => ("persistentvolumes", false),
        "InferenceService" => ("inferenceservices", true),
        "InferenceReplica" => ("inferencereplicas", true),
        "ClusterBaseModel" => ("clusterbasemodels", false),
        "BaseModel" => ("basemodels", true),
        "PodGroup" => ("podgroups", true),
        "ClusterRole" => ("clusterroles", false),
        "ClusterRoleBinding" => ("clusterrolebindings", false),
        "Role" => ("roles", true),
        "RoleBinding" => ("rolebindings", true),
        "CustomResourceDefinition" => ("customresourcedefinitions", false),
        "Lease" => ("leases", true),
        other => panic!("unknown kind {other}"),
    };
    (
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural),
        namespaced,
    )
}

fn api_for(client: &Client, obj: &Value) -> (Api<DynamicObject>, String) {
    let av = obj["apiVersion"].as_str().unwrap_or("v1");
    let kind = obj["kind"].as_str().unwrap_or("");
    let (ar, namespaced) = resource(av, kind);
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_owned();
    let api = if namespaced {
        let ns = obj["metadata"]["namespace"].as_str().unwrap_or(NS);
        Api::namespaced_with(client.clone(), ns, &ar)
    } else {
        Api::all_with(client.clone(), &ar)
    };
    (api, name)
}

/// Creates or replaces an object (status is written separately through `/status`).
pub async fn apply(client: &Client, obj: &Value) -> DynamicObject {
    let (api, name) = api_for(client, obj);
    let mut body = obj.clone();
    let status = body.as_object_mut().and_then(|m| m.remove("status"));
    let dynobj: DynamicObject = serde_json::from_value(body.clone()).expect("object");
    let created = match api.create(&PostParams::default(), &dynobj).await {
        Ok(o) => o,
        Err(kube::Error::Api(s)) if s.code == 409 => {
            let current = api.get(&name).await.expect("get existing");
            let mut replacement = dynobj.clone();
            replacement.metadata.resource_version = current.metadata.resource_version.clone();
            api.replace(&name, &PostParams::default(), &replacement)
                .await
                .unwrap_or(current)
        }
        Err(e) => panic!("create {name}: {e}"),
    };
    if let Some(status) = status
        && !status.is_null()
    {
        let kind = obj["kind"].as_str().unwrap_or("");
        let status = if kind == "InferenceReplica" {
            // The server's generation (1 after a create), not the fixture's.
            let mut s = status.clone();
            if s.get("observedGeneration").is_some() {
                s["observedGeneration"] = json!(created.metadata.generation.unwrap_or(1));
            }
            s
        } else {
            status
        };
        return api
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
            .unwrap_or_else(|e| panic!("status of {name}: {e}"));
    }
    created
}

async fn delete(client: &Client, obj: &Value) {
    let (api, name) = api_for(client, obj);
    let _ = api.delete(&name, &DeleteParams::default()).await;
}

/// Installs the CRDs of `fixtures/crds/` and waits until each is Established.
pub async fn install_crds(client: &Client) {
    let mut names = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root().join("fixtures/crds"))
        .expect("fixtures/crds")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    paths.sort();
    for p in paths {
        for doc in yaml_docs(&p) {
            names.push(doc["metadata"]["name"].as_str().unwrap_or("").to_owned());
            let (api, name) = api_for(client, &doc);
            if api.get_opt(&name).await.ok().flatten().is_none() {
                apply(client, &doc).await;
            }
        }
    }
    let (ar, _) = resource("apiextensions.k8s.io/v1", "CustomResourceDefinition");
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let deadline = Instant::now() + Duration::from_secs(30);
    for n in names {
        loop {
            let crd = api.get(&n).await.expect("crd");
            let established = crd.data["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Established" && c["status"] == "True");
            if established {
                break;
            }
            assert!(Instant::now() < deadline, "CRD {n} not established");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Namespace `ome`, the ServiceAccount and the shipped RBAC (deploy/), exactly as shipped.
pub async fn install_rbac(client: &Client) {
    for f in ["namespace.yaml", "serviceaccount.yaml", "rbac.yaml"] {
        for doc in yaml_docs(&root().join("deploy").join(f)) {
            apply(client, &doc).await;
        }
    }
}

/// Resets alfred's namespace: no Lease, fresh `alfred-config` (with `config_yaml`) and an empty
/// `alfred-recommendations`; old PolicyReloadFailed events gone.
pub async fn reset(client: &Client, config_yaml: &str) {
    let (lease_ar, _) = resource("coordination.k8s.io/v1", "Lease");
    let leases: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &lease_ar);
    let _ = leases
        .delete("alfred.ome.io", &DeleteParams::default())
        .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    for name in [
        "alfred-config",
        "alfred-recommendations",
        "other-recommendations",
    ] {
        let _ = cms.delete(name, &DeleteParams::default()).await;
    }
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), NS);
    let _ = events
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await;
    // Deletions of ConfigMaps are immediate; wait until they are gone before re-creating.
    for _ in 0..50 {
        if cms.get_opt("alfred-config").await.ok().flatten().is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    set_config(client, config_yaml).await;
    apply(
        client,
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "alfred-recommendations", "namespace": NS}}),
    )
    .await;
}

/// Writes `alfred-config`'s `config.yaml`.
pub async fn set_config(client: &Client, config_yaml: &str) {
    apply(
        client,
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "alfred-config", "namespace": NS},
                "data": {"config.yaml": config_yaml}}),
    )
    .await;
}

/// Removes every object a previous test loaded.
pub async fn unload_all(client: &Client) {
    let kinds = [
        ("v1", "Pod"),
        ("ome.io/v1beta1", "InferenceService"),
        ("ome.io/v1beta1", "InferenceReplica"),
        ("ome.io/v1beta1", "BaseModel"),
        ("ome.io/v1beta1", "ClusterBaseModel"),
        ("scheduling.x-k8s.io/v1alpha1", "PodGroup"),
        ("v1", "PersistentVolumeClaim"),
        ("v1", "PersistentVolume"),
        ("v1", "Node"),
    ];
    let lp = ListParams::default().labels(FIXTURE_LABEL);
    for (av, kind) in kinds {
        let (ar, _) = resource(av, kind);
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        let Ok(list) = api.list(&lp).await else {
            continue;
        };
        for o in list.items {
            let v = json!({"apiVersion": av, "kind": kind, "metadata": {
                "name": o.metadata.name, "namespace": o.metadata.namespace}});
            // No controller manager runs: drop finalizers (pv/pvc-protection) or the object
            // stays Terminating forever.
            {
                let (api, name) = api_for(client, &v);
                let _ = api
                    .patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
                    )
                    .await;
            }
            if kind == "Pod" {
                let (api, name) = api_for(client, &v);
                let _ = api
                    .delete(&name, &DeleteParams::default().grace_period(0))
                    .await;
            } else {
                delete(client, &v).await;
            }
        }
    }
    // Pods without a kubelet disappear at once with grace period 0; wait for the list to empty.
    let pods: Api<DynamicObject> = Api::all_with(client.clone(), &resource("v1", "Pod").0);
    for _ in 0..100 {
        if pods
            .list(&lp)
            .await
            .map(|l| l.items.is_empty())
            .unwrap_or(true)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Loads a `fixtures/clusters/*.json` List through the API: server-set metadata dropped,
/// namespaces created, objects created, then their status written through `/status`.
pub async fn load_fixture(client: &Client, file: &str) -> usize {
    let text =
        std::fs::read_to_string(root().join("fixtures/clusters").join(file)).expect("fixture");
    let list: Value = serde_json::from_str(&text).expect("fixture json");
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let mut namespaces = std::collections::BTreeSet::new();
    for i in &items {
        if let Some(ns) = i["metadata"]["namespace"].as_str() {
            namespaces.insert(ns.to_owned());
        }
    }
    for ns in namespaces {
        apply(
            client,
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await;
    }
    let order = |k: &str| match k {
        "Node" => 0,
        "PersistentVolume" => 1,
        "PersistentVolumeClaim" => 2,
        "ClusterBaseModel" | "BaseModel" => 3,
        "InferenceService" => 4,
        "InferenceReplica" => 5,
        "PodGroup" => 6,
        _ => 7,
    };
    let mut items = items;
    items.sort_by_key(|i| order(i["kind"].as_str().unwrap_or("")));
    for mut i in items.iter().cloned() {
        if let Some(meta) = i["metadata"].as_object_mut() {
            for k in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "generation",
                "managedFields",
                "selfLink",
            ] {
                meta.remove(k);
            }
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            labels[FIXTURE_LABEL] = json!(file.trim_end_matches(".json"));
        }
        apply(client, &i).await;
    }
    items.len()
}

/// Every object alfred reads, listed through the API (what `kubectl get … -A -o json` prints).
pub async fn read_back(client: &Client) -> Value {
    let kinds = [
        ("v1", "Node"),
        ("v1", "Pod"),
        ("v1", "PersistentVolumeClaim"),
        ("v1", "PersistentVolume"),
        ("ome.io/v1beta1", "InferenceService"),
        ("ome.io/v1beta1", "InferenceReplica"),
        ("ome.io/v1beta1", "ClusterBaseModel"),
        ("ome.io/v1beta1", "BaseModel"),
        ("scheduling.x-k8s.io/v1alpha1", "PodGroup"),
    ];
    let mut items = Vec::new();
    for (av, kind) in kinds {
        let (ar, _) = resource(av, kind);
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        for mut o in api.list(&ListParams::default()).await.expect("list").items {
            o.types = Some(kube::core::TypeMeta {
                api_version: av.to_owned(),
                kind: kind.to_owned(),
            });
            items.push(serde_json::to_value(&o).expect("json"));
        }
    }
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// A free loopback port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port")
}

/// An `alfred run` child process (killed on drop).
pub struct Alfred {
    child: Option<Child>,
    /// Its pod name (the `alfred_leader_status` label).
    pub pod: String,
    /// Its metrics port.
    pub port: u16,
    /// Its snapshot dump.
    pub dump: PathBuf,
    /// Its log file (stderr).
    pub log: PathBuf,
}

impl Alfred {
    /// Starts `alfred run --kubeconfig <kubeconfig> --namespace ome` plus `extra`.
    pub fn start(kubeconfig: &Path, pod: &str, extra: &[&str]) -> Alfred {
        let port = free_port();
        let health = free_port();
        let dir = std::env::temp_dir().join(format!("alfred-live-{}-{pod}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp dir");
        let dump = dir.join("snapshot.json");
        let _ = std::fs::remove_file(&dump);
        let log = dir.join("alfred.log");
        let child = Command::new(env!("CARGO_BIN_EXE_alfred"))
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--namespace", NS])
            .arg(format!("--metrics-bind-address=127.0.0.1:{port}"))
            .arg(format!("--health-probe-bind-address=127.0.0.1:{health}"))
            .arg("--dump-snapshot")
            .arg(&dump)
            .args(extra)
            .env("POD_NAME", pod)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("spawn alfred");
        Alfred {
            child: Some(child),
            pod: pod.to_owned(),
            port,
            dump,
            log,
        }
    }

    /// `/metrics`, or "" when it does not answer.
    pub fn metrics(&self) -> String {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return String::new();
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n");
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out.split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default()
    }

    /// A sample's value (`name{labels}` exactly as exposed), if present.
    pub fn sample(&self, series: &str) -> Option<f64> {
        sample(&self.metrics(), series)
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills it now.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Alfred {
    /// Stops the process; its folder (log, snapshot dump) is removed when the test passed and
    /// kept, for the log, when it failed.
    fn drop(&mut self) {
        self.kill();
        if !std::thread::panicking()
            && let Some(dir) = self.log.parent()
        {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A sample's value in OpenMetrics text.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let (name, value) = l.rsplit_once(' ')?;
        (name == series).then(|| value.parse().ok())?
    })
}

/// Polls `f` every 250 ms until it returns `Some`, or panics after `timeout` with `what`.
pub async fn eventually<T>(timeout: Duration, what: &str, f: impl AsyncFnMut() -> Option<T>) -> T {
    eventually_explained(timeout, what, String::new, f).await
}

/// [`eventually`], whose panic adds what `explain` says at the timeout (the processes' state
/// then, which a bare "timed out" leaves to guesswork).
pub async fn eventually_explained<T>(
    timeout: Duration,
    what: &str,
    explain: impl FnOnce() -> String,
    mut f: impl AsyncFnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        if Instant::now() >= deadline {
            panic!("timed out waiting for {what}\n{}", explain());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until the counter `read` returns has grown by `by` from its value now (absent = 0),
/// or panics after `timeout` with `what`. "A few more loops ran" is observed this way rather
/// than assumed after a fixed sleep: on a shared machine a loop may take several seconds.
pub async fn counter_grows(
    timeout: Duration,
    what: &str,
    by: f64,
    read: impl Fn() -> Option<f64>,
) -> f64 {
    counter_grows_explained(timeout, what, by, String::new, read).await
}

/// [`counter_grows`] with [`eventually_explained`]'s `explain`.
pub async fn counter_grows_explained(
    timeout: Duration,
    what: &str,
    by: f64,
    explain: impl FnOnce() -> String,
    read: impl Fn() -> Option<f64>,
) -> f64 {
    let start = read().unwrap_or(0.0);
    eventually_explained(timeout, what, explain, async || {
        read().filter(|v| *v >= start + by)
    })
    .await
}

/// The `timestamp` of the decision record (`last-cycle.json` of `alfred-recommendations`).
pub async fn record_timestamp(client: &Client) -> Option<String> {
    let data = config_map_data(client, "alfred-recommendations").await;
    let record: Value = serde_json::from_str(data.get("last-cycle.json")?).ok()?;
    record["timestamp"].as_str().map(str::to_owned)
}

/// Waits until the leader, whoever it is, has written `n` more decision records (a new
/// record timestamp each), or panics after `timeout`.
pub async fn more_records(client: &Client, n: usize, timeout: Duration) {
    let mut last = record_timestamp(client).await;
    let mut seen = 0;
    eventually(timeout, &format!("{n} more decision records"), async || {
        let now = record_timestamp(client).await;
        if now.is_some() && now != last {
            seen += 1;
            last = now;
        }
        (seen >= n).then_some(())
    })
    .await;
}

/// `data` of a ConfigMap in alfred's namespace.
pub async fn config_map_data(client: &Client, name: &str) -> BTreeMap<String, String> {
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    cms.get_opt(name)
        .await
        .ok()
        .flatten()
        .and_then(|c| c.data)
        .unwrap_or_default()
}

/// A tool from `$<env>` or `$PATH` (promtool, prometheus), or `None` with a notice.
pub fn tool(env: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        return Some(PathBuf::from(p));
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        eprintln!(
            "skipping the {name} part: set {env} or put {name} on PATH (Debian package prometheus)"
        );
    }
    found
}

/// A plain HTTP GET on loopback; the body.
pub fn http_get(port: u16, path_and_query: &str) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = write!(
        s,
        "GET {path_and_query} HTTP/1.0\r\nHost: localhost\r\n\r\n"
    );
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default()
}

/// A child process killed on drop.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
