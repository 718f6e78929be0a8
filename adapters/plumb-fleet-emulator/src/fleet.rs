//! A fleet of member API servers on one machine, as the live tests and `cargo xtask
//! plumb-fleet` use it: private kube-apiserver + etcd instances (the shared
//! `kube-test-apiserver` recipe), each brought to the same start: the CRDs of
//! `deploy/plumb/crds` and `fixtures/plumb/crds` established, the namespace `plumb`, no
//! `plumb-hub` Lease, and exactly one ClusterProfile per peer whose access provider points at
//! the peer's server and passes the peer's `tokens.csv` to the test exec plugin
//! (`fixtures/plumb/exec-plugin/token-from-csv.sh`, through KEP-5339's additional-args
//! extension). The access-provider file names that plugin.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::ByteString;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use kube::{Api, Client};
use serde_json::{Value, json};

/// Plumb's namespace in every member.
pub const NAMESPACE: &str = "plumb";
/// The access provider's name in the provider file and the ClusterProfiles.
pub const PROVIDER: &str = "plumb-live";
/// The field manager of the set-up's writes.
const MANAGER: &str = "plumb-live-test";

/// The member servers' profile: the shared recipe's binaries (alfred's cache folder, so nothing
/// is built twice), kubeconfigs for Plumb's namespace.
pub const PROFILE: kube_test_apiserver::Profile = kube_test_apiserver::Profile {
    cache_folder: "alfred-apiserver",
    env_prefix: "PLUMB_LIVE_APISERVER",
    namespace: "plumb",
    service_account: "plumb-agent",
    kubeconfig_name: "plumb-agent",
    cluster_name: "plumb-member",
};

/// The repository's root (this crate is `adapters/plumb-fleet-emulator`).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One member: its name, server state folder and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberServer {
    /// The member's name (its agent's `--cluster-name`, its ClusterProfile's name elsewhere).
    pub name: String,
    /// The server's state folder (`--dir`).
    pub dir: PathBuf,
    /// The kube-apiserver port (etcd on the next two).
    pub port: u16,
}

impl MemberServer {
    /// The admin kubeconfig.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("admin.kubeconfig")
    }

    /// `https://127.0.0.1:<port>`.
    pub fn server(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// `apiserver <task> --dir DIR --port PORT` (start, stop, restart, status).
    pub fn task(&self, task: &str) -> Result<()> {
        kube_test_apiserver::main(
            &PROFILE,
            &[
                task.to_owned(),
                "--dir".to_owned(),
                self.dir.display().to_string(),
                "--port".to_owned(),
                self.port.to_string(),
            ],
        )
    }

    /// An admin client.
    pub async fn client(&self) -> Result<Client> {
        client_of(&self.kubeconfig()).await
    }

    /// The ClusterProfile other members use to reach this one.
    pub fn profile(&self) -> Result<Value> {
        let ca_path = self.dir.join("certs/apiserver.crt");
        let ca =
            std::fs::read(&ca_path).with_context(|| format!("reading {}", ca_path.display()))?;
        Ok(cluster_profile(
            &self.name,
            json!([{"name": PROVIDER, "cluster": {
                "server": self.server(),
                "certificate-authority-data": serde_json::to_value(ByteString(ca))?,
                "extensions": [{
                    "name": "clusterprofiles.multicluster.x-k8s.io/exec/additional-args",
                    "extension": [self.dir.join("tokens.csv").display().to_string()],
                }],
            }}]),
        ))
    }
}

/// A client of the kubeconfig at `path` (its current context).
pub async fn client_of(path: &Path) -> Result<Client> {
    let kc = kube::config::Kubeconfig::read_from(path)
        .with_context(|| format!("reading {}", path.display()))?;
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
    Ok(Client::try_from(config)?)
}

/// A ClusterProfile named `name` with these access providers.
pub fn cluster_profile(name: &str, access_providers: Value) -> Value {
    json!({
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"clusterManager": {"name": "plumb-live"}},
        "status": {"accessProviders": access_providers},
    })
}

/// Writes the access-provider file (one provider, [`PROVIDER`], whose plugin reads the admin
/// token from the `tokens.csv` each ClusterProfile passes) to `path`.
pub fn write_provider_file(path: &Path) -> Result<()> {
    let plugin = repo().join("fixtures/plumb/exec-plugin/token-from-csv.sh");
    let file = json!({"providers": [{
        "name": PROVIDER,
        "execConfig": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": plugin.display().to_string(),
            "args": [],
            "provideClusterInfo": true,
        },
        "profileSourcedCLIArgsPolicy": "Append",
    }]});
    std::fs::write(path, serde_json::to_string_pretty(&file)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))
}

fn resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// Polls `f` every 100 ms until it gives `Some`, for at most `limit`.
pub async fn within<T>(
    limit: Duration,
    what: &str,
    mut f: impl AsyncFnMut() -> Option<T>,
) -> Result<T> {
    let rounds = (limit.as_millis() / 100).max(1);
    for _ in 0..rounds {
        if let Some(t) = f().await {
            return Ok(t);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("not within {limit:?}: {what}")
}

/// The CRDs of `deploy/plumb/crds` and `fixtures/plumb/crds`, established, and the namespace.
pub async fn install(client: &Client) -> Result<()> {
    let crds = resource(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    );
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &crds);
    let pp = PatchParams::apply(MANAGER).force();
    for dir in ["deploy/plumb/crds", "fixtures/plumb/crds"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
            .with_context(|| format!("reading {dir}"))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file)?;
            let crd: Value = serde_saphyr::from_str(&text)
                .with_context(|| format!("reading {}", file.display()))?;
            let name = crd["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            api.patch(&name, &pp, &Patch::Apply(&crd))
                .await
                .with_context(|| format!("applying {}", file.display()))?;
            within(
                Duration::from_secs(30),
                &format!("{name} established"),
                async || {
                    let crd = api.get(&name).await.ok()?;
                    crd.data["status"]["conditions"]
                        .as_array()?
                        .iter()
                        .any(|c| c["type"] == "Established" && c["status"] == "True")
                        .then_some(())
                },
            )
            .await?;
        }
    }
    let namespaces: Api<DynamicObject> =
        Api::all_with(client.clone(), &resource("v1", "Namespace", "namespaces"));
    namespaces
        .patch(
            NAMESPACE,
            &pp,
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": NAMESPACE}})),
        )
        .await
        .context("the namespace plumb")?;
    Ok(())
}

/// Makes `profiles` the only ClusterProfiles of the member: creates or updates each (its
/// status through the status subresource), deletes the others.
pub async fn set_profiles(client: &Client, profiles: &[Value]) -> Result<()> {
    let ar = resource(
        "multicluster.x-k8s.io/v1alpha1",
        "ClusterProfile",
        "clusterprofiles",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &ar);
    let keep: Vec<&str> = profiles
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    for existing in api.list(&ListParams::default()).await?.items {
        let name = existing.metadata.name.clone().unwrap_or_default();
        if !keep.contains(&name.as_str()) {
            api.delete(&name, &DeleteParams::default())
                .await
                .with_context(|| format!("deleting ClusterProfile {name}"))?;
        }
    }
    for p in profiles {
        let name = p["metadata"]["name"].as_str().unwrap_or_default();
        let mut object = p.clone();
        let status = object
            .as_object_mut()
            .and_then(|o| o.remove("status"))
            .unwrap_or(Value::Null);
        let pp = PatchParams::apply(MANAGER).force();
        api.patch(name, &pp, &Patch::Apply(&object))
            .await
            .with_context(|| format!("applying ClusterProfile {name}"))?;
        api.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )
        .await
        .with_context(|| format!("ClusterProfile {name}'s status"))?;
    }
    Ok(())
}

/// Brings every member to the start the module doc describes (servers must be running).
pub async fn prepare(members: &[MemberServer]) -> Result<()> {
    for m in members {
        let client = m.client().await?;
        install(&client).await?;
        let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
        if let Err(e) = leases.delete("plumb-hub", &DeleteParams::default()).await
            && !matches!(&e, kube::Error::Api(s) if s.code == 404)
        {
            return Err(e.into());
        }
        let peers = members
            .iter()
            .filter(|p| p.name != m.name)
            .map(MemberServer::profile)
            .collect::<Result<Vec<_>>>()?;
        set_profiles(&client, &peers).await?;
    }
    Ok(())
}
