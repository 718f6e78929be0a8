//! Execute mode end to end against the real API server: alfred in process through
//! `alfred_cli::run::run_with` (the 1.20 server has no ValidatingAdmissionPolicy API, so the
//! harness supplies the shipped guard as the API would show it), the in-process simulator,
//! `--migration-api-version v1`, and a test-side OMENative emulator that acknowledges and
//! completes each request by writing `InferenceReplica.status.migrations[]` (see
//! docs/design-snapshot.md#migration-state) and removing the annotation.
//!
//! Fixture: `fixtures/clusters/execute-move-pays.json` (the first example of
//! docs/design-scoring.md#worked-examples; written by `tests/live/execute_fixture.py`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alfred_cli::run::{RunArgs, run_with};
use alfred_kube::run::Harness;
use alfred_kube::run::apply::applier::{Outcome, WriteHook};
use alfred_kube::run::decision::decide::GuardSource;
use alfred_model::effect::Effect;
use futures::future::BoxFuture;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use super::harness::*;

/// Execute mode, fast loops, the in-process model's profile for `default-scheduler`, and at
/// most one request an hour (so a completed move is not followed by the next one).
pub const EXECUTE: &str = "schemaVersion: 1
observationLoopInterval: 1s
decisionLoopInterval: 2s
mode: execute
omenativeMigrationEnabled: true
maxMigrationsPerHour: 1
scheduling:
  profiles:
    default-scheduler:
      backend: kube-v135
      schedulerVersion: v1.35.4
      configurationID: sha256:0000000000000000000000000000000000000000000000000000000000000000
";

/// The fixture where a move pays.
pub const FIXTURE: &str = "execute-move-pays.json";
const REQUEST_PREFIX: &str = "ome.io/migration-request-v1-";

/// The shipped guard (`deploy/execute/migration-guard.yaml`) as a ≥ 1.30 API server would show
/// it once type-checked: generation 1, observed, no warnings.
pub struct ShippedGuard(Value, Value);

impl ShippedGuard {
    pub fn new() -> Arc<ShippedGuard> {
        let text =
            std::fs::read_to_string(root().join("deploy/execute/migration-guard.yaml")).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
        let mut policy = docs[0].clone();
        policy["metadata"]["generation"] = json!(1);
        policy["status"] = json!({"observedGeneration": 1, "typeChecking": {}});
        Arc::new(ShippedGuard(policy, docs[1].clone()))
    }
}

impl GuardSource for ShippedGuard {
    fn read(&self) -> BoxFuture<'_, (Option<Value>, Option<Value>)> {
        Box::pin(async { (Some(self.0.clone()), Some(self.1.clone())) })
    }
}

/// What `deploy/execute` adds: the journal ConfigMap (initial content) and the Role's update
/// permission on it (the overlay's `/rules/1/resourceNames` patch).
pub async fn install_execute(admin: &Client) {
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(admin.clone(), NS);
    let _ = cms
        .delete("alfred-dispatch-state", &Default::default())
        .await;
    for _ in 0..50 {
        if cms
            .get_opt("alfred-dispatch-state")
            .await
            .ok()
            .flatten()
            .is_none()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let text = std::fs::read_to_string(root().join("deploy/execute/dispatch-state.yaml")).unwrap();
    let doc: Value = serde_saphyr::from_str(&text).unwrap();
    apply(admin, &doc).await;
    let text = std::fs::read_to_string(root().join("deploy/rbac.yaml")).unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
    let mut role = docs
        .into_iter()
        .find(|d| d["kind"] == "Role" && d["metadata"]["name"] == "ome-alfred")
        .expect("the Role");
    assert_eq!(
        role["rules"][1]["resourceNames"],
        json!(["alfred-config", "alfred-recommendations"])
    );
    role["rules"][1]["resourceNames"] = json!([
        "alfred-config",
        "alfred-recommendations",
        "alfred-dispatch-state"
    ]);
    apply(admin, &role).await;
    // The drain plans' nomination grant (its policy needs a newer server).
    let text = std::fs::read_to_string(root().join("deploy/execute/drain-plans.yaml")).unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
    for doc in docs.iter().filter(|d| {
        matches!(
            d["kind"].as_str(),
            Some("ClusterRole" | "ClusterRoleBinding")
        )
    }) {
        apply(admin, doc).await;
    }
}

/// The drain plans of the journal.
pub async fn journal_plans(admin: &Client) -> Vec<Value> {
    let data = config_map_data(admin, "alfred-dispatch-state").await;
    data.get("state.json")
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .and_then(|v| v["plans"].as_array().cloned())
        .unwrap_or_default()
}

/// An `alfred run` inside the test process, on its own runtime; [`InProcess::kill`] drops that
/// runtime at once (no lease release, no further write), which is what a SIGKILL does.
pub struct InProcess {
    rt: Option<tokio::runtime::Runtime>,
    pub pod: String,
    pub port: u16,
    pub exit: Arc<Mutex<Option<Result<(), String>>>>,
}

#[derive(clap::Parser)]
struct Cli {
    #[command(flatten)]
    args: RunArgs,
}

impl InProcess {
    pub fn start(kubeconfig: &Path, pod: &str, extra: &[&str], mut harness: Harness) -> InProcess {
        use clap::Parser;
        let port = free_port();
        let health = free_port();
        let mut argv: Vec<String> = vec![
            "alfred-run".into(),
            "--kubeconfig".into(),
            kubeconfig.display().to_string(),
            "--namespace".into(),
            NS.into(),
            format!("--metrics-bind-address=127.0.0.1:{port}"),
            format!("--health-probe-bind-address=127.0.0.1:{health}"),
        ];
        argv.extend(extra.iter().map(|s| s.to_string()));
        let args = Cli::try_parse_from(argv).expect("flags").args;
        harness.pod = Some(pod.to_owned());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let exit = Arc::new(Mutex::new(None));
        let e = exit.clone();
        rt.spawn(async move {
            let r = run_with(args, harness).await;
            if let Err(err) = &r {
                eprintln!("in-process alfred stopped: {err}");
            }
            *e.lock().unwrap() = Some(r);
        });
        InProcess {
            rt: Some(rt),
            pod: pod.to_owned(),
            port,
            exit,
        }
    }

    pub fn metrics(&self) -> String {
        http_get(self.port, "/metrics")
    }

    pub fn leading(&self) -> bool {
        sample(
            &self.metrics(),
            &format!("alfred_leader_status{{pod=\"{}\"}}", self.pod),
        ) == Some(1.0)
    }

    pub fn kill(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `--migration-api-version v1` with the ServiceAccount the guard names.
pub const V1: &[&str] = &[
    "--migration-api-version",
    "v1",
    "--migration-service-account",
    "ome-alfred",
];

/// The test harness of execute mode: shipped guard, in-process model, optional write hook.
pub fn execute_harness(on_write: Option<WriteHook>) -> Harness {
    let guard: Arc<dyn GuardSource> = ShippedGuard::new();
    Harness {
        guard: Some(guard),
        simulate_in_process: true,
        on_write,
        ..Harness::default()
    }
}

/// The journal's entries (`state.json` of `alfred-dispatch-state`).
pub async fn journal(admin: &Client) -> Vec<Value> {
    let data = config_map_data(admin, "alfred-dispatch-state").await;
    data.get("state.json")
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .and_then(|v| v["entries"].as_array().cloned())
        .unwrap_or_default()
}

/// The rows of the last decision record for `workload`.
pub async fn rows(admin: &Client, workload: &str) -> Vec<Value> {
    let data = config_map_data(admin, "alfred-recommendations").await;
    data.get("last-cycle.json")
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .and_then(|v| v["recommendations"].as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r["workload"] == workload)
        .collect()
}

fn rfc3339(t: jiff::Timestamp) -> String {
    t.round(jiff::Unit::Second)
        .unwrap_or(t)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The OMENative controller's part, as far as alfred can see it: every request annotation
/// becomes an `Accepted` row in `status.migrations` of `<isvc>-<component>` and the annotation
/// is removed; [`Emulator::complete`] turns a row `Completed`.
#[derive(Clone)]
pub struct Emulator {
    admin: Client,
    /// Every request annotation ever seen: key → (namespace/name, payload).
    pub seen: Arc<Mutex<BTreeMap<String, (String, String)>>>,
}

fn isvcs(admin: &Client) -> Api<DynamicObject> {
    let (ar, _) = resource("ome.io/v1beta1", "InferenceService");
    Api::all_with(admin.clone(), &ar)
}

fn irs(admin: &Client, ns: &str) -> Api<DynamicObject> {
    let (ar, _) = resource("ome.io/v1beta1", "InferenceReplica");
    Api::namespaced_with(admin.clone(), ns, &ar)
}

impl Emulator {
    /// Starts acknowledging requests in the background (until the test's runtime ends).
    pub fn start(admin: &Client) -> Emulator {
        let e = Emulator {
            admin: admin.clone(),
            seen: Arc::default(),
        };
        let this = e.clone();
        tokio::spawn(async move {
            loop {
                this.accept_once().await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        e
    }

    async fn accept_once(&self) {
        let Ok(list) = isvcs(&self.admin).list(&ListParams::default()).await else {
            return;
        };
        for isvc in list.items {
            let ns = isvc.metadata.namespace.clone().unwrap_or_default();
            let name = isvc.metadata.name.clone().unwrap_or_default();
            let requests: Vec<(String, String)> = isvc
                .metadata
                .annotations
                .clone()
                .unwrap_or_default()
                .into_iter()
                .filter(|(k, _)| k.starts_with(REQUEST_PREFIX))
                .collect();
            for (key, payload) in requests {
                self.seen
                    .lock()
                    .unwrap()
                    .insert(key.clone(), (format!("{ns}/{name}"), payload.clone()));
                let uuid = key.trim_start_matches(REQUEST_PREFIX).to_owned();
                let p: Value = serde_json::from_str(&payload).expect("payload JSON");
                let ir_name = format!("{name}-{}", p["component"].as_str().unwrap());
                let api = irs(&self.admin, &ns);
                let ir = api.get(&ir_name).await.expect("the InferenceReplica");
                let mut migrations = ir.data["status"]["migrations"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if !migrations.iter().any(|m| m["requestUUID"] == uuid.as_str()) {
                    let now = jiff::Timestamp::now();
                    migrations.push(json!({
                        "requestUUID": uuid,
                        "trigger": "Manual",
                        "sourceInstance": p["instance"],
                        "fromNode": p["from_node"],
                        "hintTargetNodes": p["hint_target_nodes"],
                        "phase": "Accepted",
                        "reason": p["reason"],
                        "message": "waiting for a surge index",
                        "startedAt": rfc3339(now),
                        "deadline": rfc3339(now + jiff::SignedDuration::from_mins(45)),
                    }));
                    api.patch_status(
                        &ir_name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"status": {"migrations": migrations}})),
                    )
                    .await
                    .expect("status.migrations");
                }
                // Taken: the controller removes the annotation (never "done").
                let patch: json_patch::Patch = serde_json::from_value(json!([
                    {"op": "test", "path": format!("/metadata/annotations/{}", key.replace('~', "~0").replace('/', "~1")), "value": payload},
                    {"op": "remove", "path": format!("/metadata/annotations/{}", key.replace('~', "~0").replace('/', "~1"))},
                ]))
                .unwrap();
                let _ = isvcs_ns(&self.admin, &ns)
                    .patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
                    .await;
            }
        }
    }

    /// Turns the row of `uuid` in `ns/ir_name` `Completed`.
    pub async fn complete(&self, ns: &str, ir_name: &str, uuid: &str) {
        let api = irs(&self.admin, ns);
        let ir = api.get(ir_name).await.expect("the InferenceReplica");
        let mut migrations = ir.data["status"]["migrations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let now = rfc3339(jiff::Timestamp::now());
        for m in &mut migrations {
            if m["requestUUID"] == uuid {
                m["phase"] = json!("Completed");
                m["message"] = json!("migrated to instance=1");
                m["surgeInstance"] = json!(1);
                m["allocatedAt"] = m["startedAt"].clone();
                m["completedAt"] = json!(now);
            }
        }
        api.patch_status(
            ir_name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"migrations": migrations}})),
        )
        .await
        .expect("status.migrations");
    }

    /// The request annotations seen so far.
    pub fn requests(&self) -> BTreeMap<String, (String, String)> {
        self.seen.lock().unwrap().clone()
    }
}

fn isvcs_ns(admin: &Client, ns: &str) -> Api<DynamicObject> {
    let (ar, _) = resource("ome.io/v1beta1", "InferenceService");
    Api::namespaced_with(admin.clone(), ns, &ar)
}

/// Request annotations on the InferenceServices right now.
pub async fn live_requests(admin: &Client) -> BTreeSet<String> {
    isvcs(admin)
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .flat_map(|i| i.metadata.annotations.unwrap_or_default().into_keys())
        .filter(|k| k.starts_with(REQUEST_PREFIX))
        .collect()
}

async fn setup_execute(config: &str) -> Option<super::Setup> {
    let s = super::setup(config, &[FIXTURE]).await?;
    install_execute(&s.admin).await;
    untaint_not_ready(&s.admin).await;
    fix_owner_uids(&s.admin).await;
    Some(s)
}

/// The fixtures' owner references carry the recorded UIDs; the server gave the owners new
/// ones. Point the InferenceReplicas at their InferenceServices and the pods at their
/// InferenceReplicas again (what the controllers that created them would have written).
pub async fn fix_owner_uids(admin: &Client) {
    for (kind, owner_kind) in [
        ("InferenceReplica", "InferenceService"),
        ("Pod", "InferenceReplica"),
    ] {
        let av = if kind == "Pod" {
            "v1"
        } else {
            "ome.io/v1beta1"
        };
        let (ar, _) = resource(av, kind);
        let (owner_ar, _) = resource("ome.io/v1beta1", owner_kind);
        let api: Api<DynamicObject> = Api::all_with(admin.clone(), &ar);
        let list = api
            .list(&ListParams::default().labels(FIXTURE_LABEL))
            .await
            .expect("list");
        for o in list.items {
            let ns = o.metadata.namespace.clone().unwrap_or_default();
            let mut refs = o.metadata.owner_references.clone().unwrap_or_default();
            let mut changed = false;
            for r in refs.iter_mut().filter(|r| r.kind == owner_kind) {
                let owners: Api<DynamicObject> =
                    Api::namespaced_with(admin.clone(), &ns, &owner_ar);
                if let Ok(owner) = owners.get(&r.name).await {
                    let uid = owner.metadata.uid.unwrap_or_default();
                    changed |= r.uid != uid;
                    r.uid = uid;
                }
            }
            if changed {
                Api::<DynamicObject>::namespaced_with(admin.clone(), &ns, &ar)
                    .patch(
                        o.metadata.name.as_deref().unwrap_or(""),
                        &PatchParams::default(),
                        &Patch::Merge(json!({"metadata": {"ownerReferences": refs}})),
                    )
                    .await
                    .expect("owner references");
            }
        }
    }
}

/// The 1.20 server taints every new Node `node.kubernetes.io/not-ready:NoSchedule` and no node
/// lifecycle controller runs to lift it (the nodes are `Ready=True`): lift it as that
/// controller would, or no node is a target.
pub async fn untaint_not_ready(admin: &Client) {
    let (ar, _) = resource("v1", "Node");
    let api: Api<DynamicObject> = Api::all_with(admin.clone(), &ar);
    let nodes = api
        .list(&ListParams::default().labels(FIXTURE_LABEL))
        .await
        .expect("nodes");
    for n in nodes.items {
        let taints: Vec<Value> = n.data["spec"]["taints"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|t| t["key"] != "node.kubernetes.io/not-ready")
            .collect();
        api.patch(
            n.metadata.name.as_deref().unwrap_or(""),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": taints}})),
        )
        .await
        .expect("untaint");
    }
}

/// Waits for the journal's one entry to reach `phase`; returns it.
async fn entry_in(admin: &Client, phase: &str, timeout: Duration) -> Value {
    eventually(timeout, &format!("a journal entry {phase}"), async || {
        let j = journal(admin).await;
        assert!(j.len() <= 1, "more than one journal entry: {j:#?}");
        j.into_iter().find(|e| e["phase"] == phase)
    })
    .await
}

/// Follows one request from `submitted` to `completed` with the emulator, checking the record
/// rows on the way; returns the request's UUID.
async fn follow_to_completion(admin: &Client, emulator: &Emulator, timeout: Duration) -> String {
    let acked = entry_in(admin, "acknowledged", timeout).await;
    let uuid = acked["uuid"].as_str().unwrap().to_owned();
    assert_eq!(acked["reason"], "UUIDStatusObserved");
    eventually(Duration::from_secs(20), "an acknowledged row", async || {
        rows(admin, "chat/alpha")
            .await
            .into_iter()
            .find(|r| r["dispatchStatus"] == "acknowledged" && r["requestUUID"] == uuid)
    })
    .await;
    // The annotation is gone (taken), and alfred did not write another one.
    assert!(live_requests(admin).await.is_empty());
    emulator.complete("chat", "alpha-engine", &uuid).await;
    let done = entry_in(admin, "completed", Duration::from_secs(20)).await;
    assert_eq!(done["uuid"], uuid);
    assert_eq!(done["reason"], "TerminalStatusObserved");
    assert!(done["completedAt"].is_string() && done["acknowledgedAt"].is_string());
    eventually(Duration::from_secs(20), "a completed row", async || {
        rows(admin, "chat/alpha")
            .await
            .into_iter()
            .find(|r| r["dispatchStatus"] == "completed" && r["requestUUID"] == uuid)
    })
    .await;
    uuid
}

/// A few more passes: no second request, one journal entry.
async fn assert_no_more_requests(admin: &Client, emulator: &Emulator, uuid: &str) {
    more_records(admin, 3, Duration::from_secs(60)).await;
    let seen = emulator.requests();
    assert_eq!(
        seen.keys().cloned().collect::<Vec<_>>(),
        vec![format!("{REQUEST_PREFIX}{uuid}")],
        "requests seen: {seen:#?}"
    );
    assert!(live_requests(admin).await.is_empty());
    let j = journal(admin).await;
    assert_eq!(j.len(), 1, "{j:#?}");
    assert_eq!(j[0]["uuid"], uuid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn execute_mode_submits_one_request_that_the_emulator_acknowledges_and_completes() {
    let Some(s) = setup_execute(EXECUTE).await else {
        return;
    };
    let emulator = Emulator::start(&s.admin);
    // The watch of the ISVC alfred will annotate, to catch the patch itself.
    let (uid, rv_before) = {
        let o = isvcs_ns(&s.admin, "chat").get("alpha").await.unwrap();
        (
            o.metadata.uid.unwrap(),
            o.metadata.resource_version.unwrap(),
        )
    };
    let alfred = InProcess::start(
        &s.alfred_kubeconfig,
        "alfred-exec",
        V1,
        execute_harness(None),
    );
    let submitted = entry_in(&s.admin, "submitted", Duration::from_secs(90)).await;
    // Possibly already acknowledged by the time we look; the submitted entry was written.
    assert_eq!(
        submitted["workload"],
        json!({"Namespace": "chat", "Name": "alpha"})
    );
    assert_eq!(submitted["workloadUID"], uid.as_str());
    assert_eq!(submitted["reason"], "RequestSubmitted");
    let uuid = submitted["uuid"].as_str().unwrap().to_owned();
    let key = format!("{REQUEST_PREFIX}{uuid}");
    let seen = eventually(
        Duration::from_secs(10),
        "the emulator to see it",
        async || emulator.requests().get(&key).cloned(),
    )
    .await;
    assert_eq!(seen.0, "chat/alpha");
    assert_eq!(seen.1, submitted["payload"].as_str().unwrap());
    let p: Value = serde_json::from_str(&seen.1).unwrap();
    assert_eq!(p["from_node"], "gpu-h100-01");
    assert_eq!(p["requested_by"], "alfred");
    // Written as the JSON Patch testing uid and resourceVersion: the write counter, and the
    // patch was applied to the version alfred read (no other write in between).
    let m = alfred.metrics();
    assert_eq!(
        sample(
            &m,
            "alfred_effect_writes_total{effect=\"request_migration\",outcome=\"applied\"}"
        ),
        Some(1.0),
        "{m}"
    );
    let _ = rv_before;
    let followed = follow_to_completion(&s.admin, &emulator, Duration::from_secs(30)).await;
    assert_eq!(followed, uuid);
    assert_no_more_requests(&s.admin, &emulator, &uuid).await;
    assert!(alfred.exit.lock().unwrap().is_none(), "alfred stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn execute_mode_recommend_only_with_v1_writes_no_annotation() {
    let config = EXECUTE.replace("mode: execute", "mode: recommend-only");
    let Some(s) = setup_execute(&config).await else {
        return;
    };
    let emulator = Emulator::start(&s.admin);
    let _alfred = InProcess::start(
        &s.alfred_kubeconfig,
        "alfred-ro-v1",
        V1,
        execute_harness(None),
    );
    // The same move, predicted feasible, stays advice.
    let row = eventually(Duration::from_secs(60), "an advisory row", async || {
        rows(&s.admin, "chat/alpha")
            .await
            .into_iter()
            .find(|r| r["outcome"] == "advisory")
    })
    .await;
    assert_eq!(row["advisoryReason"], "SimulationRecommendOnly", "{row:#}");
    assert_eq!(row["scheduling"]["status"], "Feasible", "{row:#}");
    assert!(row.get("dispatchStatus").is_none(), "{row:#}");
    more_records(&s.admin, 2, Duration::from_secs(60)).await;
    assert!(emulator.requests().is_empty());
    assert!(journal(&s.admin).await.is_empty());
}

/// Two replicas; the hook freezes the leader right after the write `when` picks, the test kills
/// it, and the survivor resumes from the journal: one request UUID, one journal entry. Returns
/// that UUID.
async fn kill_the_leader_mid_dispatch(when: fn(&Effect) -> bool) -> Option<(String, Client)> {
    let s = setup_execute(EXECUTE).await?;
    let frozen: Arc<Mutex<Option<String>>> = Arc::default();
    let hook_for = |pod: &str| -> WriteHook {
        let frozen = frozen.clone();
        let pod = pod.to_owned();
        Arc::new(move |e: &Effect, o: &Outcome| {
            let mut f = frozen.lock().unwrap();
            if f.is_none() && *o == Outcome::Applied && when(e) {
                *f = Some(pod.clone());
                return true;
            }
            false
        })
    };
    let mut a = InProcess::start(
        &s.alfred_kubeconfig,
        "alfred-a",
        V1,
        execute_harness(Some(hook_for("alfred-a"))),
    );
    let mut b = InProcess::start(
        &s.alfred_kubeconfig,
        "alfred-b",
        V1,
        execute_harness(Some(hook_for("alfred-b"))),
    );
    let victim = eventually(
        Duration::from_secs(90),
        "the leader to freeze",
        async || frozen.lock().unwrap().clone(),
    )
    .await;
    let (dead, survivor) = if victim == "alfred-a" {
        (&mut a, &b)
    } else {
        (&mut b, &a)
    };
    dead.kill();
    let at_kill = journal(&s.admin).await;
    assert_eq!(at_kill.len(), 1, "{at_kill:#?}");
    let uuid = at_kill[0]["uuid"].as_str().unwrap().to_owned();
    eprintln!(
        "killed {victim} with the entry {} and requests {:?}",
        at_kill[0]["phase"],
        live_requests(&s.admin).await
    );
    // Only now does the OMENative side wake up (so the survivor's view is the journal).
    let emulator = Emulator::start(&s.admin);
    eventually(
        Duration::from_secs(45),
        "the survivor to lead",
        async || survivor.leading().then_some(()),
    )
    .await;
    let followed = follow_to_completion(&s.admin, &emulator, Duration::from_secs(60)).await;
    assert_eq!(followed, uuid, "the survivor made a new request");
    assert_no_more_requests(&s.admin, &emulator, &uuid).await;
    Some((uuid, s.admin.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn a_leader_killed_after_journaling_prepared_is_resumed_by_the_other_without_a_duplicate() {
    kill_the_leader_mid_dispatch(|e| {
        matches!(e, Effect::WriteJournal { state_json } if state_json.contains("\"phase\":\"prepared\""))
    })
    .await;
}

/// The fixture's move is the one step of a drain plan freeing its node for the pending
/// 8-GPU pod: the leader is frozen right after it nominated the pod, and the survivor
/// carries the same plan on (same id, the same step UUID) without a second request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn a_drain_plan_is_picked_up_by_a_new_leader_without_a_duplicate_request() {
    let Some((uuid, admin)) =
        kill_the_leader_mid_dispatch(|e| matches!(e, Effect::NominatePod { .. })).await
    else {
        return;
    };
    let plans = journal_plans(&admin).await;
    assert_eq!(plans.len(), 1, "{plans:#?}");
    let plan = &plans[0];
    let steps: Vec<&str> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["requestUUID"].as_str())
        .collect();
    assert_eq!(steps, vec![uuid.as_str()], "{plan:#}");
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(admin.clone(), "chat");
    let pod = pods.get("big-0").await.unwrap();
    assert_eq!(
        pod.status.and_then(|s| s.nominated_node_name).as_deref(),
        plan["node"].as_str(),
        "{plan:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the test API server: cargo xtask apiserver start"]
async fn a_leader_killed_right_after_the_request_is_followed_by_the_other_without_a_duplicate() {
    kill_the_leader_mid_dispatch(|e| matches!(e, Effect::RequestMigration { .. })).await;
}
