//! The manifests of `deploy/plumb/` (the agent's and the scaler's kustomize base, its
//! `monitoring` component and `samples/`): pod security, least-privilege RBAC per component,
//! the flags each Deployment passes, and samples that fit the scaler and the RBAC they need.
//!
//! `deploy_plumb_applies_to_a_real_api_server` (ignored in plain runs; `.ci/run`'s `apiserver`
//! step runs it) sends every rendered object to a kube-apiserver with server-side dry-run, after
//! applying for real what later objects need to exist (the namespaces, the CRDs, the
//! ServiceAccounts and the RBAC), then asks the server's own authorizer what each
//! ServiceAccount may do. It reads the admin kubeconfig from `PLUMB_SCALER_KUBECONFIG`, else
//! `ALFRED_APISERVER_KUBECONFIG` (`cargo xtask apiserver start`, then `status`):
//! `cargo test -p plumb-scaler --test deploy -- --ignored`.
//!
//! The rendering is this file's: `kubectl kustomize` is not on every CI machine, and the base
//! uses only `resources` and `components`, which [`render`] follows (any other kustomization
//! key fails the test rather than being skipped). Where `kubectl` exists, the test also compares
//! its rendering with `kubectl kustomize`'s.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn deploy() -> PathBuf {
    repo().join("deploy/plumb")
}

/// The YAML documents of one file (empty documents dropped).
fn docs(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_multiple::<Value>(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .filter(|v| !v.is_null())
        .collect()
}

/// The objects of the kustomization in `dir`: its `resources` (files, or folders with their own
/// kustomization) and its `components`, in order. Any other key is refused, so that a
/// kustomization this renderer would render wrongly fails here instead.
fn render(dir: &Path) -> Vec<Value> {
    let k = docs(&dir.join("kustomization.yaml"));
    let k = &k[0];
    for key in k.as_object().expect("a kustomization is a map").keys() {
        assert!(
            ["apiVersion", "kind", "resources", "components"].contains(&key.as_str()),
            "{}: kustomization key {key} is not understood by this test's renderer",
            dir.display()
        );
    }
    let mut out = Vec::new();
    for entry in ["resources", "components"] {
        for r in k[entry].as_array().into_iter().flatten() {
            let path = dir.join(r.as_str().expect("a path"));
            if path.is_dir() {
                out.extend(render(&path));
            } else {
                out.extend(docs(&path));
            }
        }
    }
    out
}

/// The base with the monitoring component enabled, as a user enabling it renders it.
fn render_with_monitoring() -> Vec<Value> {
    let mut out = render(&deploy());
    out.extend(render(&deploy().join("monitoring")));
    out
}

fn id(o: &Value) -> String {
    format!(
        "{} {}/{}",
        o["kind"].as_str().unwrap_or("?"),
        o["metadata"]["namespace"].as_str().unwrap_or(""),
        o["metadata"]["name"].as_str().unwrap_or("?")
    )
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

#[test]
fn the_base_holds_both_components_and_nothing_that_needs_an_optional_crd() {
    let objects = render(&deploy());
    let ids: BTreeSet<String> = objects.iter().map(id).collect();
    for want in [
        "Namespace /plumb",
        "CustomResourceDefinition /adaptivepolicies.plumb-k8s.github.io",
        "ServiceAccount plumb/plumb-agent",
        "ServiceAccount plumb/plumb-scaler",
        "Deployment plumb/plumb-agent",
        "Deployment plumb/plumb-scaler",
        "Service plumb/plumb-scaler",
        "Service plumb/plumb-agent-metrics",
        "ConfigMap plumb/plumb-cluster",
        "ConfigMap plumb/plumb-access-providers",
    ] {
        assert!(ids.contains(want), "{want} missing from {ids:?}");
    }
    assert_eq!(ids.len(), objects.len(), "an object is there twice");
    for o in &objects {
        let api = o["apiVersion"].as_str().unwrap();
        assert!(
            !api.starts_with("monitoring.coreos.com") && !api.starts_with("keda.sh"),
            "{} needs an optional CRD: it belongs in a component or the samples",
            id(o)
        );
        if let Some(ns) = o["metadata"]["namespace"].as_str() {
            assert_eq!(ns, "plumb", "{}", id(o));
        }
    }
    let monitoring: BTreeSet<String> = render(&deploy().join("monitoring"))
        .iter()
        .map(id)
        .collect();
    let want: BTreeSet<String> = [
        "ServiceMonitor plumb/plumb-agent",
        "ServiceMonitor plumb/plumb-scaler",
        "PrometheusRule plumb/plumb",
    ]
    .map(String::from)
    .into();
    assert_eq!(monitoring, want);
}

/// Where `kubectl` is installed, its kustomize renders the same objects as [`render`].
#[test]
fn this_rendering_is_kubectl_kustomizes_where_kubectl_exists() {
    for (dir, ours) in [
        (deploy(), render(&deploy())),
        (deploy().join("samples"), render(&deploy().join("samples"))),
    ] {
        let ours: BTreeSet<String> = ours.iter().map(id).collect();
        assert!(!ours.is_empty());
        let Ok(out) = std::process::Command::new("kubectl")
            .arg("kustomize")
            .arg(&dir)
            .output()
        else {
            eprintln!("kubectl not found: only this file's rendering is checked");
            return;
        };
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let theirs: BTreeSet<String> =
            serde_saphyr::from_multiple::<Value>(&String::from_utf8(out.stdout).unwrap())
                .unwrap()
                .iter()
                .filter(|v| !v.is_null())
                .map(id)
                .collect();
        assert_eq!(ours, theirs, "{}", dir.display());
    }
}

/// The restricted Pod Security Standard, two replicas, probes on the health port.
fn assert_locked_down(dep: &Value, service_account: &str) {
    assert_eq!(dep["spec"]["replicas"], 2, "{}", id(dep));
    let pod = &dep["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], service_account);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let c = &pod["containers"][0];
    let sc = &c["securityContext"];
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]));
    assert!(sc["capabilities"]["add"].is_null());
    let health = c["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "health")
        .unwrap();
    assert_eq!(health["containerPort"], 8081);
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_eq!(c[probe]["httpGet"]["port"], "health");
    }
}

#[test]
fn both_deployments_run_two_locked_down_replicas_with_the_documented_flags() {
    let objects = render(&deploy());
    let agent = find(&objects, "Deployment", "plumb-agent");
    assert_locked_down(agent, "plumb-agent");
    assert_eq!(
        strings(&agent["spec"]["template"]["spec"]["containers"][0]["args"]),
        [
            "agent",
            "--cluster-name=$(PLUMB_CLUSTER_NAME)",
            "--interval=30s",
            "--hub-interval=10s",
            "--prometheus-url=$(PLUMB_PROMETHEUS_URL)",
            "--clusterprofile-provider-file=/etc/plumb/access-providers/providers.json",
            "--decision-log=-",
            "--leader-elect=true",
            "--metrics-bind-address=:8080",
            "--health-probe-bind-address=:8081",
        ]
    );
    let scaler = find(&objects, "Deployment", "plumb-scaler");
    assert_locked_down(scaler, "plumb-scaler");
    assert_eq!(
        strings(&scaler["spec"]["template"]["spec"]["containers"][0]["args"]),
        [
            "scaler",
            "--cluster-name=$(PLUMB_CLUSTER_NAME)",
            "--grpc-bind-address=:6000",
            "--metrics-bind-address=:8080",
            "--health-probe-bind-address=:8081",
        ]
    );
    // The variables the flags expand come from plumb-cluster's keys.
    let cluster = find(&objects, "ConfigMap", "plumb-cluster");
    for dep in [agent, scaler] {
        for env in dep["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .unwrap()
        {
            let key = &env["valueFrom"]["configMapKeyRef"];
            if key.is_object() {
                assert_eq!(key["name"], "plumb-cluster");
                assert!(cluster["data"][key["key"].as_str().unwrap()].is_string());
            }
        }
    }
    // The mounted providers file is valid JSON with a providers list.
    let providers = find(&objects, "ConfigMap", "plumb-access-providers");
    let file: Value =
        serde_json::from_str(providers["data"]["providers.json"].as_str().unwrap()).unwrap();
    assert!(file["providers"].is_array());
}

#[test]
fn the_scaler_service_serves_grpc_on_6000() {
    let objects = render(&deploy());
    let svc = find(&objects, "Service", "plumb-scaler");
    assert_eq!(svc["metadata"]["namespace"], "plumb");
    let grpc = svc["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "grpc")
        .unwrap();
    assert_eq!(grpc["port"], 6000);
    assert_eq!(grpc["targetPort"], "grpc");
    let dep = find(&objects, "Deployment", "plumb-scaler");
    let pod = &dep["spec"]["template"];
    for (k, v) in svc["spec"]["selector"].as_object().unwrap() {
        assert_eq!(&pod["metadata"]["labels"][k], v);
    }
    let port = pod["spec"]["containers"][0]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "grpc")
        .unwrap();
    assert_eq!(port["containerPort"], 6000);
}

/// `(apiGroups, resources, resourceNames, verbs)` of one rule of a (Cluster)Role.
type Rule<'a> = (Vec<&'a str>, Vec<&'a str>, Vec<&'a str>, Vec<&'a str>);

/// Every rule of a (Cluster)Role.
fn rules(role: &Value) -> Vec<Rule<'_>> {
    role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                strings(&r["apiGroups"]),
                strings(&r["resources"]),
                strings(&r["resourceNames"]),
                strings(&r["verbs"]),
            )
        })
        .collect()
}

/// Every verb that is not a read, as `verb group/resource[names]`.
fn writes(role: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (groups, resources, names, verbs) in rules(role) {
        for v in verbs {
            if ["get", "list", "watch"].contains(&v) {
                continue;
            }
            for g in &groups {
                for r in &resources {
                    out.insert(format!("{v} {g}/{r}{names:?}"));
                }
            }
        }
    }
    out
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn rbac_is_least_privilege_per_component() {
    for f in ["rbac-agent.yaml", "rbac-scaler.yaml", "rbac-peer.yaml"] {
        let text = std::fs::read_to_string(deploy().join(f)).unwrap();
        assert!(!text.contains('*'), "{f}: no wildcards");
        assert!(!text.contains("secrets"), "{f}: no Secret access");
    }
    let objects = render(&deploy());
    assert_eq!(
        writes(find(&objects, "ClusterRole", "plumb-agent")),
        set(&[
            "create /events[]",
            "patch /events[]",
            "patch plumb-k8s.github.io/adaptivepolicies/status[]",
        ])
    );
    assert_eq!(
        writes(find(&objects, "Role", "plumb-agent")),
        set(&[
            "create coordination.k8s.io/leases[]",
            "patch coordination.k8s.io/leases[\"plumb-agent\", \"plumb-hub\"]",
            "update coordination.k8s.io/leases[\"plumb-agent\", \"plumb-hub\"]",
        ])
    );
    // The scaler writes nothing, reads the policies and only the plumb-hub Lease.
    assert!(writes(find(&objects, "ClusterRole", "plumb-scaler")).is_empty());
    let scaler_role = find(&objects, "Role", "plumb-scaler");
    assert!(writes(scaler_role).is_empty());
    assert_eq!(
        rules(scaler_role),
        [(
            vec!["coordination.k8s.io"],
            vec!["leases"],
            vec!["plumb-hub"],
            vec!["get", "list", "watch"]
        )]
    );
    // Another member's hub: status and its vote, nothing else.
    assert_eq!(
        writes(find(&objects, "ClusterRole", "plumb-peer")),
        set(&["patch plumb-k8s.github.io/adaptivepolicies/status[]"])
    );
    assert_eq!(
        writes(find(&objects, "Role", "plumb-peer")),
        set(&[
            "create coordination.k8s.io/leases[]",
            "update coordination.k8s.io/leases[\"plumb-hub\"]",
        ])
    );
    // Each binding binds its own role to its own ServiceAccount in plumb.
    for o in objects
        .iter()
        .filter(|o| o["kind"].as_str().unwrap().ends_with("Binding"))
    {
        let name = o["metadata"]["name"].as_str().unwrap();
        assert_eq!(o["roleRef"]["name"], name, "{}", id(o));
        assert_eq!(
            o["subjects"],
            json!([{"kind": "ServiceAccount", "name": name, "namespace": "plumb"}]),
            "{}",
            id(o)
        );
    }
}

#[test]
fn the_samples_fit_the_scaler_and_name_only_the_listed_routes() {
    let samples = render(&deploy().join("samples"));
    let policy = find(&samples, "AdaptivePolicy", "llama-70b");
    let text = std::fs::read_to_string(deploy().join("samples/adaptivepolicy.yaml")).unwrap();
    let (_, checked) = plumb_model::validate::check_document(&text);
    assert!(checked.is_valid(), "{:?}", checked.problems);
    let ns = policy["metadata"]["namespace"].as_str().unwrap();

    let so = find(&samples, "ScaledObject", "llama-70b");
    let trigger = so["spec"]["triggers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "external-push")
        .expect("an external-push trigger");
    let meta = trigger["metadata"].as_object().unwrap();
    let keys: BTreeSet<&str> = meta.keys().map(String::as_str).collect();
    assert_eq!(keys, ["policy", "policyNamespace", "scalerAddress"].into());
    assert_eq!(meta["scalerAddress"], "plumb-scaler.plumb.svc:6000");
    assert_eq!(meta["policy"], policy["metadata"]["name"]);
    assert_eq!(meta["policyNamespace"], ns);
    let max = so["spec"]["maxReplicaCount"].as_i64().unwrap();
    for c in policy["spec"]["clusters"].as_array().unwrap() {
        assert!(max >= c["maxReplicas"].as_i64().unwrap(), "maxReplicaCount");
    }

    // The route Role names exactly the routes the policy lists in its namespace.
    let listed: BTreeSet<&str> = policy["spec"]["traffic"]["routes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["namespace"] == ns)
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    let role = find(&samples, "Role", "plumb-routes");
    assert_eq!(role["metadata"]["namespace"], ns);
    let rules = rules(role);
    assert_eq!(rules.len(), 1);
    let (groups, resources, names, verbs) = &rules[0];
    assert_eq!(groups, &["gateway.networking.k8s.io"]);
    assert_eq!(resources, &["httproutes"]);
    assert_eq!(names.iter().copied().collect::<BTreeSet<_>>(), listed);
    assert_eq!(verbs, &["get", "patch"]);
}

#[test]
fn the_service_monitors_select_the_metrics_services() {
    let objects = render_with_monitoring();
    for name in ["plumb-agent", "plumb-scaler"] {
        let sm = find(&objects, "ServiceMonitor", name);
        let selector = sm["spec"]["selector"]["matchLabels"].as_object().unwrap();
        let services: Vec<&Value> = objects
            .iter()
            .filter(|o| o["kind"] == "Service")
            .filter(|o| {
                selector
                    .iter()
                    .all(|(k, v)| &o["metadata"]["labels"][k] == v)
            })
            .collect();
        assert_eq!(services.len(), 1, "{name}: one Service");
        let port = sm["spec"]["endpoints"][0]["port"].as_str().unwrap();
        assert!(
            services[0]["spec"]["ports"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == port && p["port"] == 8080),
            "{name}: port {port}"
        );
    }
}

// ---- against a real API server ----

async fn client() -> Client {
    let path = std::env::var("PLUMB_SCALER_KUBECONFIG")
        .or_else(|_| std::env::var("ALFRED_APISERVER_KUBECONFIG"))
        .expect(
            "set PLUMB_SCALER_KUBECONFIG to an admin kubeconfig (cargo xtask apiserver status)",
        );
    let kubeconfig = kube::config::Kubeconfig::read_from(path).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("kubeconfig config");
    Client::try_from(config).expect("client")
}

/// The plural of the kinds these manifests hold (the API server's, not a guess).
fn plural(kind: &str) -> String {
    match kind {
        "AdaptivePolicy" => "adaptivepolicies".into(),
        "Service"
        | "Namespace"
        | "Role"
        | "ClusterRole"
        | "Deployment"
        | "ConfigMap"
        | "ServiceAccount"
        | "RoleBinding"
        | "ClusterRoleBinding"
        | "CustomResourceDefinition"
        | "ServiceMonitor"
        | "PrometheusRule"
        | "ScaledObject" => {
            format!("{}s", kind.to_lowercase())
        }
        other => panic!("no plural known for {other}"),
    }
}

fn api_for(client: &Client, o: &Value) -> (Api<DynamicObject>, String) {
    let api_version = o["apiVersion"].as_str().unwrap();
    let kind = o["kind"].as_str().unwrap();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, kind),
        &plural(kind),
    );
    let name = o["metadata"]["name"].as_str().unwrap().to_owned();
    let api = match o["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    (api, name)
}

/// Server-side apply of `o`, for real or as a dry run; the server's refusal as an error.
async fn apply(client: &Client, o: &Value, dry_run: bool) -> Result<(), String> {
    let (api, name) = api_for(client, o);
    let mut params = PatchParams::apply("plumb-deploy-check").force();
    if dry_run {
        params = params.dry_run();
    }
    api.patch(&name, &params, &Patch::Apply(o))
        .await
        .map(drop)
        .map_err(|e| format!("{}: {e}", id(o)))
}

/// What must exist before the rest can be checked, so applied for real.
fn applied_for_real(o: &Value) -> bool {
    [
        "Namespace",
        "CustomResourceDefinition",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
    ]
    .contains(&o["kind"].as_str().unwrap())
}

async fn wait_established(client: &Client, crd: &Value) {
    let (api, name) = api_for(client, crd);
    for _ in 0..300 {
        let got = api.get(&name).await.expect("the CRD");
        if got.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{} not established within 30 s", id(crd));
}

/// What the server's authorizer answers for `verb` on `group/resource[/subresource]` `name` in
/// `namespace` by ServiceAccount `sa` of plumb.
async fn allowed(client: &Client, sa: &str, verb: &str, target: (&str, &str, &str, &str)) -> bool {
    let (group, resource, namespace, name) = target;
    let (resource, subresource) = match resource.split_once('/') {
        Some((r, s)) => (r, Some(s.to_owned())),
        None => (resource, None),
    };
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(format!("system:serviceaccount:plumb:{sa}")),
            groups: Some(vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:plumb".into(),
                "system:authenticated".into(),
            ]),
            resource_attributes: Some(ResourceAttributes {
                group: Some(group.into()),
                resource: Some(resource.into()),
                subresource,
                namespace: (!namespace.is_empty()).then(|| namespace.into()),
                name: (!name.is_empty()).then(|| name.into()),
                verb: Some(verb.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let api: Api<SubjectAccessReview> = Api::all(client.clone());
    let answer = api
        .create(&PostParams::default(), &review)
        .await
        .expect("SubjectAccessReview");
    answer.status.expect("an answer").allowed
}

/// Everything of the base, the monitoring component and the samples, checked by the server.
async fn apply_all(client: &Client) {
    let mut crds: Vec<Value> =
        docs(&deploy().join("crds/adaptivepolicies.plumb-k8s.github.io.yaml"));
    for f in [
        "scaledobjects.keda.sh.yaml",
        "servicemonitors.monitoring.coreos.com.yaml",
        "prometheusrules.monitoring.coreos.com.yaml",
    ] {
        crds.extend(docs(&repo().join("fixtures/plumb/crds").join(f)));
    }
    let serving = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "serving"}});
    crds.push(serving);
    for o in &crds {
        apply(client, o, false).await.unwrap();
    }
    for crd in crds
        .iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition")
    {
        wait_established(client, crd).await;
    }
    let mut objects = render_with_monitoring();
    objects.extend(render(&deploy().join("samples")));
    // Namespaces and CRDs first, as kubectl orders them.
    objects.sort_by_key(|o| {
        !["Namespace", "CustomResourceDefinition"].contains(&o["kind"].as_str().unwrap())
    });
    let mut refused = Vec::new();
    for o in &objects {
        if let Err(e) = apply(client, o, !applied_for_real(o)).await {
            refused.push(e);
        }
    }
    assert!(refused.is_empty(), "refused:\n{}", refused.join("\n"));
}

/// What the server's authorizer must answer with the shipped RBAC (the base and the samples'
/// route grant): `ServiceAccount verb group resource namespace name allowed`, `-` for none.
const AUTHORIZATIONS: &[&str] = &[
    "plumb-agent  patch  plumb-k8s.github.io adaptivepolicies/status serving llama-70b yes",
    "plumb-agent  patch  plumb-k8s.github.io adaptivepolicies        serving llama-70b no",
    "plumb-agent  update plumb-k8s.github.io adaptivepolicies        serving llama-70b no",
    "plumb-agent  list   plumb-k8s.github.io adaptivepolicies        -       -         yes",
    "plumb-agent  list   core                pods                    -       -         yes",
    "plumb-agent  patch  core                pods                    serving x         no",
    "plumb-agent  patch  apps                deployments             serving llama-70b no",
    "plumb-agent  update karpenter.sh        nodepools               -       gpu       no",
    "plumb-agent  create core                events                  serving -         yes",
    "plumb-agent  update coordination.k8s.io leases                  plumb   plumb-hub yes",
    "plumb-agent  update coordination.k8s.io leases                  plumb   plumb-agent yes",
    "plumb-agent  update coordination.k8s.io leases                  plumb   other     no",
    "plumb-agent  update coordination.k8s.io leases                  serving plumb-hub no",
    "plumb-agent  list   multicluster.x-k8s.io clusterprofiles       plumb   -         yes",
    "plumb-agent  list   multicluster.x-k8s.io clusterprofiles       serving -         no",
    "plumb-agent  get    core                secrets                 plumb   x         no",
    "plumb-agent  patch  gateway.networking.k8s.io httproutes        serving llama     yes",
    "plumb-agent  patch  gateway.networking.k8s.io httproutes        serving other     no",
    "plumb-agent  list   gateway.networking.k8s.io httproutes        serving -         no",
    "plumb-scaler watch  plumb-k8s.github.io adaptivepolicies        -       -         yes",
    "plumb-scaler watch  coordination.k8s.io leases                  plumb   plumb-hub yes",
    "plumb-scaler get    coordination.k8s.io leases                  plumb   plumb-agent no",
    "plumb-scaler patch  plumb-k8s.github.io adaptivepolicies/status serving llama-70b no",
    "plumb-scaler create core                events                  serving -         no",
    "plumb-peer   patch  plumb-k8s.github.io adaptivepolicies/status serving llama-70b yes",
    "plumb-peer   update coordination.k8s.io leases                  plumb   plumb-hub yes",
    "plumb-peer   update coordination.k8s.io leases                  plumb   plumb-agent no",
    "plumb-peer   patch  gateway.networking.k8s.io httproutes        serving llama     yes",
    "plumb-peer   create core                events                  serving -         no",
];

#[tokio::test]
#[ignore = "needs a kube-apiserver: cargo xtask apiserver start; see the module doc"]
async fn deploy_plumb_applies_to_a_real_api_server() {
    let client = client().await;
    apply_all(&client).await;

    // The dry run is a real check: a trigger value that is not a string is refused.
    let mut broken = find(
        &render(&deploy().join("samples")),
        "ScaledObject",
        "llama-70b",
    )
    .clone();
    broken["spec"]["triggers"][0]["metadata"]["policy"] = json!(7);
    assert!(apply(&client, &broken, true).await.is_err());

    // The authorizer, with the shipped RBAC: what each component may and may not do.
    let mut wrong = Vec::new();
    for case in AUTHORIZATIONS {
        let f: Vec<&str> = case
            .split_whitespace()
            .map(|w| match w {
                "-" | "core" => "",
                w => w,
            })
            .collect();
        let [sa, verb, group, resource, namespace, name, want] = f[..] else {
            panic!("case {case:?}: seven words");
        };
        let want = want == "yes";
        if allowed(&client, sa, verb, (group, resource, namespace, name)).await != want {
            wrong.push(format!("{case}: want allowed={want}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
