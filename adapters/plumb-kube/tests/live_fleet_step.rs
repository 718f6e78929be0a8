//! The hub driver against three real API servers (`plumb_kube::agent::hub::driver`): the test
//! plays the members (it writes each copy's `status.report` as the member loop would) and the
//! election (it writes the `plumb-hub` Leases naming the hub itself), and drives
//! [`HubDriver::step_all`] directly, reading back what the hub wrote.
//!
//! Ignored in plain runs: it needs three kube-apiservers. `cargo xtask plumb-live` starts them
//! and runs the `live_fleet*` tests one at a time with `PLUMB_LIVE_MEMBERS=<name>=<dir>,...`
//! (three members, each server's state folder holding its `admin.kubeconfig`); by hand:
//!
//! ```text
//! cargo xtask apiserver start --dir /tmp/pl-a --port 17543   # and b, c on 17553, 17563
//! PLUMB_LIVE_MEMBERS=a=/tmp/pl-a,b=/tmp/pl-b,c=/tmp/pl-c \
//!   cargo test -p plumb-kube --test live_fleet_step -- --ignored --test-threads 1
//! ```
//!
//! The first member is the hub. The hub steps every policy it finds, so each test starts by
//! deleting every AdaptivePolicy left on the members and deletes its own at the end; its
//! objects live in namespaces of its own (its policy's and its Leases'). The write refused by
//! RBAC is made as a user the test grants reads only (impersonated through the admin
//! kubeconfig, so no other test's grants reach it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Event;
use kube::Client;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use plumb_kube::agent::hub::MemberClients;
use plumb_kube::agent::hub::driver::{HubDriver, StepSummary};
use plumb_kube::agent::{AgentConfig, AgentMetrics, AgentTiming, DecisionLogTarget};
use serde_json::{Value, json};
use utc_time::Timestamp;

const MANAGER: &str = "plumb-live-fleet-step";
/// The user the RBAC test writes as: granted reads only.
const READ_ONLY_USER: &str = "plumb-live-read-only";

/// The members from `PLUMB_LIVE_MEMBERS` (`<name>=<state dir>`, three, the hub first) with
/// their admin kubeconfigs.
fn members_env() -> Vec<(String, PathBuf)> {
    let list = std::env::var("PLUMB_LIVE_MEMBERS").unwrap_or_default();
    let members: Vec<(String, PathBuf)> = list
        .split(',')
        .filter_map(|m| m.split_once('='))
        .map(|(name, dir)| (name.to_owned(), Path::new(dir).join("admin.kubeconfig")))
        .collect();
    assert_eq!(
        members.len(),
        3,
        "set PLUMB_LIVE_MEMBERS to three <name>=<apiserver state dir>, comma-separated"
    );
    members
}

async fn client(path: &Path) -> Client {
    kube_connect::connect(Some(path)).await.expect("kubeconfig")
}

/// A client of the server of `path` acting as `user` (the admin impersonates it).
async fn client_as(path: &Path, user: &str) -> Client {
    let mut config = kube_connect::config(Some(path)).await.expect("kubeconfig");
    config.auth_info.impersonate = Some(user.to_owned());
    Client::try_from(config).expect("client")
}

fn resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn policies() -> ApiResource {
    resource(
        "plumb-k8s.github.io/v1alpha1",
        "AdaptivePolicy",
        "adaptivepolicies",
    )
}

fn routes() -> ApiResource {
    resource("gateway.networking.k8s.io/v1", "HTTPRoute", "httproutes")
}

/// Server-side applies `object` (cluster-scoped when it has no namespace).
async fn apply(client: &Client, ar: &ApiResource, object: &Value) {
    let name = object["metadata"]["name"].as_str().expect("name");
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    };
    let params = PatchParams::apply(MANAGER).force();
    api.patch(name, &params, &Patch::Apply(object))
        .await
        .unwrap_or_else(|e| panic!("apply {name}: {e}"));
}

/// Polls `f` every 100 ms until it gives `Some`; panics naming `what` after 30 s.
async fn eventually<T>(what: &str, mut f: impl AsyncFnMut() -> Option<T>) -> T {
    for _ in 0..300 {
        if let Some(t) = f().await {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("not within 30 s: {what}");
}

/// Plumb's CRDs (as shipped and the fixtures'), established, and the namespace `plumb`: the
/// live fleet's own set-up (`plumb_fleet_emulator::fleet::install`).
async fn install_crds(client: &Client) {
    plumb_fleet_emulator::fleet::install(client)
        .await
        .unwrap_or_else(|e| panic!("installing the CRDs: {e:#}"));
}

fn now() -> Timestamp {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    Timestamp::from_unix_nanos(i64::try_from(d.as_nanos()).unwrap())
}

/// One test's fleet: the members by role (`a` the hub and the short member, `b` the donor,
/// `c` the third) with their admin clients and real names, the policy's namespace and the
/// Leases' namespace (both the test's own).
struct Fleet {
    clients: BTreeMap<&'static str, Client>,
    names: BTreeMap<&'static str, String>,
    paths: BTreeMap<&'static str, PathBuf>,
    namespace: String,
    lease_namespace: String,
    dir: PathBuf,
}

const ROLES: [&str; 3] = ["a", "b", "c"];

impl Fleet {
    /// Clients, a clean slate (no AdaptivePolicy left on any member), the CRDs, the test's
    /// namespaces, and every `plumb-hub` Lease naming the hub.
    async fn new(test: &str) -> Fleet {
        let mut fleet = Fleet {
            clients: BTreeMap::new(),
            names: BTreeMap::new(),
            paths: BTreeMap::new(),
            namespace: format!("{test}-{}", std::process::id()),
            lease_namespace: format!("plumb-{test}-{}", std::process::id()),
            dir: std::env::temp_dir().join(format!("{test}-{}", std::process::id())),
        };
        for (role, (name, path)) in ROLES.iter().zip(members_env()) {
            fleet.clients.insert(role, client(&path).await);
            fleet.names.insert(role, name);
            fleet.paths.insert(role, path);
        }
        let _ = std::fs::remove_dir_all(&fleet.dir);
        std::fs::create_dir_all(&fleet.dir).unwrap();
        for role in ROLES {
            let client = &fleet.clients[role];
            install_crds(client).await;
            let all: Api<DynamicObject> = Api::all_with(client.clone(), &policies());
            for left in all
                .list(&ListParams::default())
                .await
                .expect("list policies")
                .items
            {
                let api: Api<DynamicObject> = Api::namespaced_with(
                    client.clone(),
                    left.metadata.namespace.as_deref().unwrap_or_default(),
                    &policies(),
                );
                let _ = api
                    .delete(
                        left.metadata.name.as_deref().unwrap_or_default(),
                        &Default::default(),
                    )
                    .await;
            }
            for ns in [&fleet.namespace, &fleet.lease_namespace] {
                apply(
                    client,
                    &resource("v1", "Namespace", "namespaces"),
                    &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
                )
                .await;
            }
            fleet.hold_lease(role, &fleet.hub()).await;
        }
        fleet
    }

    /// The hub's identity.
    fn hub(&self) -> String {
        format!("{}/hub-0", self.names["a"])
    }

    /// The real name of the member playing `role`.
    fn name(&self, role: &str) -> String {
        self.names[role].clone()
    }

    /// The policy's spec in `mode`, its route in `route_role`'s cluster.
    fn spec(&self, mode: &str, route_role: &str) -> Value {
        json!({
            "mode": mode,
            "workload": {"name": "llm"},
            "clusters": [
                {"name": self.name("a"), "maxReplicas": 10, "weight": 100, "backend": {"name": "llm-a"}},
                {"name": self.name("b"), "maxReplicas": 10, "weight": 0, "backend": {"name": "llm-b"}},
                {"name": self.name("c"), "maxReplicas": 10, "weight": 0, "backend": {"name": "llm-c"}}
            ],
            "traffic": {"routes": [{"cluster": self.name(route_role), "name": "llm"}]},
            "escalation": {"after": "2m", "cooldown": "1m"}
        })
    }

    /// The policy with `spec` on every member, and its route (all traffic on `a`) in
    /// `route_role`'s cluster.
    async fn install(&self, spec: &Value, route_role: &str) {
        for role in ROLES {
            self.set_policy(role, spec).await;
        }
        let route = json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "llm", "namespace": self.namespace},
            "spec": {"parentRefs": [{"name": "gateway"}], "rules": [{"backendRefs": [
                {"name": "llm-a", "port": 8000, "weight": 100},
                {"name": "llm-b", "port": 8000, "weight": 0},
                {"name": "llm-c", "port": 8000, "weight": 0}
            ]}]}
        });
        self.api(route_role, &routes())
            .create(
                &PostParams::default(),
                &serde_json::from_value(route).unwrap(),
            )
            .await
            .expect("create route");
    }

    /// Deletes the test's policies, so the next test's hub does not step them.
    async fn clean_up(&self) {
        for role in ROLES {
            let _ = self
                .api(role, &policies())
                .delete("llm", &Default::default())
                .await;
        }
    }

    fn api(&self, role: &str, ar: &ApiResource) -> Api<DynamicObject> {
        Api::namespaced_with(self.clients[role].clone(), &self.namespace, ar)
    }

    /// Applies the policy with `spec` on `role`'s member.
    async fn set_policy(&self, role: &str, spec: &Value) {
        let policy = json!({
            "apiVersion": "plumb-k8s.github.io/v1alpha1", "kind": "AdaptivePolicy",
            "metadata": {"name": "llm", "namespace": self.namespace},
            "spec": spec
        });
        apply(&self.clients[role], &policies(), &policy).await;
    }

    /// `role`'s `plumb-hub` Lease naming `holder`.
    async fn hold_lease(&self, role: &str, holder: &str) {
        let api: Api<Lease> = Api::namespaced(self.clients[role].clone(), &self.lease_namespace);
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "plumb-hub", "namespace": self.lease_namespace},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                     "renewTime": k8s_openapi::jiff::Timestamp::now().to_string()}
        });
        let lease: Lease = serde_json::from_value(lease).unwrap();
        api.patch(
            "plumb-hub",
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&lease),
        )
        .await
        .expect("lease");
    }

    /// Writes `role`'s `status.report` as its member loop would, with the hash it computes
    /// from its own copy.
    async fn report(&self, role: &str, report: Value) {
        let copy = self.copy(role).await;
        let policy = plumb_model::AdaptivePolicy::from_value(copy).expect("copy parses");
        let hash =
            plumb_model::member_spec_hash(&policy.spec, Some(&self.namespace), &self.name(role));
        let mut report = report;
        report["specHash"] = json!(hash);
        self.api(role, &policies())
            .patch_status(
                "llm",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"report": report}})),
            )
            .await
            .expect("status.report");
    }

    /// The three reports of a shortage in `a` (4 replicas since 10 minutes) that `b` can
    /// cover from its existing nodes; `c` has no room.
    async fn shortage(&self, at: Timestamp) {
        let time = at.minus(Duration::from_secs(5)).to_rfc3339();
        let since = at.minus(Duration::from_secs(600)).to_rfc3339();
        self.report(
            "a",
            json!({"time": time, "desiredReplicas": 6, "readyReplicas": 2,
            "unschedulableReplicas": 4, "neededReplicas": 4, "shortSince": since}),
        )
        .await;
        self.report(
            "b",
            json!({"time": time, "desiredReplicas": 2, "readyReplicas": 2, "staticRoom": 8}),
        )
        .await;
        self.report(
            "c",
            json!({"time": time, "desiredReplicas": 2, "readyReplicas": 2}),
        )
        .await;
    }

    async fn copy(&self, role: &str) -> Value {
        let copy = self
            .api(role, &policies())
            .get("llm")
            .await
            .expect("policy copy");
        serde_json::to_value(copy).unwrap()
    }

    async fn route(&self, role: &str) -> Value {
        let route = self.api(role, &routes()).get("llm").await.expect("route");
        serde_json::to_value(route).unwrap()
    }

    /// The policy's key (`<namespace>/llm`).
    fn policy(&self) -> String {
        format!("{}/llm", self.namespace)
    }

    /// The errors of this test's policy in a summary.
    fn errors(&self, summary: &StepSummary) -> Vec<String> {
        let prefix = format!("{}: ", self.policy());
        summary
            .errors
            .iter()
            .filter(|e| e.starts_with(&prefix))
            .cloned()
            .collect()
    }

    fn config(&self) -> AgentConfig {
        AgentConfig {
            cluster_name: self.name("a"),
            namespace: self.lease_namespace.clone(),
            pod_name: "hub-0".into(),
            interval: Duration::from_secs(30),
            hub_interval: Duration::from_secs(10),
            prometheus_url: None,
            provider_file: None,
            decision_log: DecisionLogTarget::File(self.dir.join("decisions.jsonl")),
            leader_elect: false,
            metrics_bind: "127.0.0.1:0".into(),
            health_probe_bind: "127.0.0.1:0".into(),
            kubeconfig: None,
            timing: AgentTiming::default(),
        }
    }

    /// The driver's clients, by real member name.
    fn members(&self) -> MemberClients {
        ROLES
            .iter()
            .map(|r| (self.name(r), self.clients[r].clone()))
            .collect()
    }

    /// The decision log's lines about this test's policy so far.
    fn log(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join("decisions.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
            .filter(|l| l["policy"] == self.policy())
            .collect()
    }

    /// The Events on `role`'s copy of the policy: (type, reason, message).
    async fn events(&self, role: &str) -> Vec<(String, String, String)> {
        let api: Api<Event> = Api::namespaced(self.clients[role].clone(), &self.namespace);
        let mut events: Vec<_> = api
            .list(&ListParams::default())
            .await
            .expect("events")
            .items
            .into_iter()
            .filter(|e| e.involved_object.name.as_deref() == Some("llm"))
            .map(|e| {
                (
                    e.type_.unwrap_or_default(),
                    e.reason.unwrap_or_default(),
                    e.message.unwrap_or_default(),
                )
            })
            .collect();
        events.sort();
        events
    }
}

fn rule_weights(route: &Value) -> Vec<u64> {
    route["spec"]["rules"][0]["backendRefs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["weight"].as_u64().unwrap_or(1))
        .collect()
}

fn kinds(log: &[Value]) -> Vec<&str> {
    log.iter()
        .map(|l| l["kind"].as_str().unwrap_or("?"))
        .collect()
}

#[tokio::test]
#[ignore = "needs three kube-apiservers: cargo xtask plumb-live"]
async fn live_fleet_step_a_shortage_borrows_from_a_donor_and_moves_weights() {
    let fleet = Fleet::new("fleet-borrow").await;
    fleet.install(&fleet.spec("auto", "a"), "a").await;
    let t0 = now();
    fleet.shortage(t0).await;
    let metrics = AgentMetrics::new();
    let mut driver = HubDriver::new(&fleet.config(), metrics.clone());
    let summary = driver.step_all(&fleet.members(), t0).await;
    assert_eq!(fleet.errors(&summary), Vec::<String>::new(), "{summary:?}");

    let log = fleet.log();
    assert_eq!(kinds(&log), ["decision"]);
    let decision = &log[0];
    assert_eq!(decision["applied"], true, "{decision}");
    assert_eq!(decision["hub"], fleet.hub().as_str());
    let id = decision["decisionId"].as_str().unwrap();
    assert!(id.starts_with("1-") && id.len() == 10, "{id}");

    let b = fleet.copy("b").await;
    let intent = &b["status"]["intent"];
    assert_eq!(intent["hub"], fleet.hub().as_str(), "{b}");
    assert_eq!(intent["decisionId"], id);
    assert!(intent["replicas"].as_u64().unwrap() > 2, "{intent}");
    assert_eq!(
        b["status"]["report"]["staticRoom"], 8,
        "the member's field is untouched"
    );
    assert!(fleet.copy("c").await["status"].get("intent").is_none());
    let own = fleet.copy("a").await;
    assert_eq!(own["status"]["fleet"]["phase"], "Escalated", "{own}");
    assert_eq!(own["status"]["fleet"]["lastDecision"], id);

    let weights = rule_weights(&fleet.route("a").await);
    assert_eq!(weights.iter().sum::<u64>(), 100, "{weights:?}");
    assert!(weights[1] > 0, "b gained traffic: {weights:?}");

    let action = decision["action"].as_str().unwrap();
    let events = fleet.events("a").await;
    assert!(
        events.iter().any(|(t, r, _)| t == "Normal" && r == action),
        "{events:?}"
    );
    let text = metrics.render();
    let policy = fleet.policy();
    assert!(
        text.contains(&format!(
            "plumb_hub_decisions_total{{policy=\"{policy}\",action=\"{action}\",source=\"rule\",applied=\"true\"}} 1"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("plumb_fleet_escalated{{policy=\"{policy}\"}} 1")),
        "{text}"
    );
    fleet.clean_up().await;
}

#[tokio::test]
#[ignore = "needs three kube-apiservers: cargo xtask plumb-live"]
async fn live_fleet_step_shadow_mode_writes_no_intent_and_no_route_weight() {
    let fleet = Fleet::new("fleet-shadow").await;
    fleet.install(&fleet.spec("shadow", "b"), "b").await;
    let t0 = now();
    fleet.shortage(t0).await;
    let route_before = fleet.route("b").await;
    let mut driver = HubDriver::new(&fleet.config(), AgentMetrics::new());
    let summary = driver.step_all(&fleet.members(), t0).await;
    assert_eq!(fleet.errors(&summary), Vec::<String>::new(), "{summary:?}");
    let log = fleet.log();
    assert_eq!(kinds(&log), ["decision"], "shadow decides");
    assert_eq!(log[0]["applied"], false, "{}", log[0]);
    assert_eq!(log[0]["mode"], "shadow");
    let route_after = fleet.route("b").await;
    assert_eq!(
        route_after["metadata"]["resourceVersion"], route_before["metadata"]["resourceVersion"],
        "the route is not written"
    );
    for role in ROLES {
        let copy = fleet.copy(role).await;
        assert!(copy["status"].get("intent").is_none(), "{role}: {copy}");
    }
    assert_eq!(
        fleet.copy("a").await["status"]["fleet"]["phase"],
        "Escalated"
    );
    let events = fleet.events("a").await;
    assert!(
        events
            .iter()
            .any(|(_, _, m)| m.ends_with("(shadow: nothing applied)")),
        "{events:?}"
    );
    fleet.clean_up().await;
}

#[tokio::test]
#[ignore = "needs three kube-apiservers: cargo xtask plumb-live"]
async fn live_fleet_step_a_copy_differing_in_a_hashed_field_is_out_of_sync() {
    let fleet = Fleet::new("fleet-sync").await;
    fleet.install(&fleet.spec("auto", "a"), "a").await;
    let mut differing = fleet.spec("auto", "a");
    differing["capacity"] = json!({"step": 3});
    fleet.set_policy("c", &differing).await;
    let t0 = now();
    fleet.shortage(t0).await;
    let metrics = AgentMetrics::new();
    let mut driver = HubDriver::new(&fleet.config(), metrics.clone());
    let summary = driver.step_all(&fleet.members(), t0).await;
    assert_eq!(fleet.errors(&summary), Vec::<String>::new(), "{summary:?}");
    let c = fleet.name("c");
    let own = fleet.copy("a").await;
    assert_eq!(own["status"]["fleet"]["outOfSync"], json!([c]), "{own}");
    let log = fleet.log();
    assert_eq!(log[0]["outOfSync"], json!([c]));
    assert_eq!(log[0]["reports"][&c], Value::Null);
    let text = metrics.render();
    assert!(
        text.contains(&format!(
            "plumb_fleet_members_out_of_sync{{policy=\"{}\"}} 1",
            fleet.policy()
        )),
        "{text}"
    );
    let events = fleet.events("a").await;
    assert!(
        events.iter().any(|(t, r, m)| t == "Warning"
            && r == "MembersOutOfSync"
            && m.ends_with(&format!(": {c}"))),
        "{events:?}"
    );
    fleet.clean_up().await;
}

#[tokio::test]
#[ignore = "needs three kube-apiservers: cargo xtask plumb-live"]
async fn live_fleet_step_a_route_write_without_the_route_cluster_s_lease_is_refused() {
    let fleet = Fleet::new("fleet-fence").await;
    fleet.install(&fleet.spec("auto", "c"), "c").await;
    fleet.hold_lease("c", "elsewhere/hub-9").await;
    let t0 = now();
    fleet.shortage(t0).await;
    let route_before = fleet.route("c").await;
    let metrics = AgentMetrics::new();
    let mut driver = HubDriver::new(&fleet.config(), metrics.clone());
    let summary = driver.step_all(&fleet.members(), t0).await;
    let refusal = format!("{}: does not hold the hub lease", fleet.name("c"));
    assert!(
        fleet.errors(&summary).iter().any(|e| e.contains(&refusal)),
        "{summary:?}"
    );
    let route_after = fleet.route("c").await;
    assert_eq!(
        route_after["metadata"]["resourceVersion"],
        route_before["metadata"]["resourceVersion"]
    );
    let log = fleet.log();
    let decision = log
        .iter()
        .find(|l| l["kind"] == "decision")
        .expect("a decision line");
    assert_eq!(decision["applied"], false);
    assert!(
        decision["error"]
            .as_str()
            .unwrap_or_default()
            .contains("does not hold the hub lease"),
        "{decision}"
    );
    let text = metrics.render();
    assert!(
        text.contains(&format!(
            "plumb_hub_step_errors_total{{policy=\"{}\"}} 1",
            fleet.policy()
        )),
        "{text}"
    );
    // the intent went to b before the route; c's copy is fenced too, status.fleet stands on
    // a and b (a majority)
    assert!(
        fleet.copy("b").await["status"]["intent"]["replicas"]
            .as_u64()
            .is_some()
    );
    assert!(fleet.copy("c").await["status"].get("fleet").is_none());
    assert_eq!(
        fleet.copy("b").await["status"]["fleet"]["phase"],
        "Escalated"
    );
    fleet.clean_up().await;
}

#[tokio::test]
#[ignore = "needs three kube-apiservers: cargo xtask plumb-live"]
async fn live_fleet_step_a_write_refused_by_rbac_is_recorded_and_not_retried() {
    let fleet = Fleet::new("fleet-rbac").await;
    fleet.install(&fleet.spec("auto", "a"), "a").await;
    // b is reached as a user that may read the policies and the Lease, and write nothing
    let admin_b = fleet.clients["b"].clone();
    let role = format!("{}-read", fleet.namespace);
    let rbac = "rbac.authorization.k8s.io/v1";
    apply(&admin_b, &resource(rbac, "ClusterRole", "clusterroles"), &json!({
        "apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": role},
        "rules": [
            {"apiGroups": ["plumb-k8s.github.io"], "resources": ["adaptivepolicies"], "verbs": ["get", "list"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get"]}
        ]
    })).await;
    apply(&admin_b, &resource(rbac, "ClusterRoleBinding", "clusterrolebindings"), &json!({
        "apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": role},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": READ_ONLY_USER}]
    })).await;
    let restricted = client_as(&fleet.paths["b"], READ_ONLY_USER).await;
    let probe: Api<DynamicObject> =
        Api::namespaced_with(restricted.clone(), &fleet.namespace, &policies());
    eventually("the read grant in force", async || {
        probe.get("llm").await.ok()
    })
    .await;

    let t0 = now();
    fleet.shortage(t0).await;
    let metrics = AgentMetrics::new();
    let mut driver = HubDriver::new(&fleet.config(), metrics.clone());
    let mut members = fleet.members();
    members.insert(fleet.name("b"), restricted);
    let summary = driver.step_all(&members, t0).await;
    let b = fleet.name("b");
    assert!(
        fleet
            .errors(&summary)
            .iter()
            .any(|e| e.contains(&format!("{b}: status.intent: ")) && e.contains("forbidden")),
        "{summary:?}"
    );
    let decision = fleet
        .log()
        .into_iter()
        .find(|l| l["kind"] == "decision")
        .expect("decision");
    assert_eq!(decision["applied"], false);
    assert!(
        decision["error"]
            .as_str()
            .unwrap_or_default()
            .contains("forbidden"),
        "{decision}"
    );
    assert!(fleet.copy("b").await["status"].get("intent").is_none());
    let counted = format!(
        "plumb_hub_step_errors_total{{policy=\"{}\"}} 1",
        fleet.policy()
    );
    assert!(metrics.render().contains(&counted), "{}", metrics.render());

    // The next steps (within the cooldown) try the intent no more and decide nothing new.
    // status.fleet changes once more (b's floor is read back as 0 from its intent), and b's
    // copy refuses that write too (counted); then nothing is written at all.
    let mut errors = Vec::new();
    let mut writes = Vec::new();
    for seconds in [2, 4, 6] {
        let again = driver
            .step_all(&members, t0.plus(Duration::from_secs(seconds)))
            .await;
        errors.push(fleet.errors(&again));
        writes.push(again.writes);
    }
    assert!(
        !errors.iter().flatten().any(|e| e.contains("status.intent")),
        "{errors:?}"
    );
    assert_eq!(errors[2], Vec::<String>::new(), "{errors:?}");
    assert_eq!(writes[2], 0, "{writes:?}");
    assert_eq!(kinds(&fleet.log()), ["decision"]);
    assert!(fleet.copy("b").await["status"].get("intent").is_none());
    fleet.clean_up().await;
}

#[tokio::test]
#[ignore = "needs three kube-apiservers: cargo xtask plumb-live"]
async fn live_fleet_step_a_restarted_hub_adopts_and_adds_no_second_floor() {
    let fleet = Fleet::new("fleet-restart").await;
    // one step covers the whole shortage: any later floor would be a second one
    let mut spec = fleet.spec("auto", "a");
    spec["capacity"] = json!({"step": 4});
    fleet.install(&spec, "a").await;
    let t0 = now();
    fleet.shortage(t0).await;
    let mut first = HubDriver::new(&fleet.config(), AgentMetrics::new());
    let summary = first.step_all(&fleet.members(), t0).await;
    assert_eq!(kinds(&fleet.log()), ["decision"], "{summary:?}");
    let intent = fleet.copy("b").await["status"]["intent"].clone();
    let fleet_status = fleet.copy("a").await["status"]["fleet"].clone();
    drop(first);

    // the restarted agent, 70 s on (past the cooldown), the shortage still reported
    let t1 = t0.plus(Duration::from_secs(70));
    fleet.shortage(t1).await;
    let mut second = HubDriver::new(&fleet.config(), AgentMetrics::new());
    let summary = second.step_all(&fleet.members(), t1).await;
    assert_eq!(fleet.errors(&summary), Vec::<String>::new(), "{summary:?}");
    let b = fleet.copy("b").await;
    assert_eq!(b["status"]["intent"]["replicas"], intent["replicas"], "{b}");
    assert_eq!(
        b["status"]["intent"]["decisionId"], intent["decisionId"],
        "no second floor"
    );
    let own = fleet.copy("a").await;
    assert_eq!(
        own["status"]["fleet"]["phaseSince"], fleet_status["phaseSince"],
        "adopted"
    );
    let adds = fleet
        .log()
        .iter()
        .filter(|l| {
            l["kind"] == "decision"
                && l["action"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("AddCapacity")
        })
        .count();
    assert_eq!(adds, 1, "{:?}", fleet.log());
    fleet.clean_up().await;
}
