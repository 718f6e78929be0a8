//! `cargo xtask apiserver`: a real Kubernetes API server (v1.20.2) for alfred's integration
//! tests, the shared `kube-test-apiserver` crate with alfred's profile: the cache folder
//! `alfred-apiserver`, the variables `ALFRED_APISERVER_*`, and `run/alfred.kubeconfig` for the
//! ServiceAccount user `system:serviceaccount:ome:ome-alfred`, so the RBAC in `deploy/` binds it
//! unchanged. The recipe, the folders and `--dir DIR --port PORT` are the crate's.

use anyhow::Result;
use kube_test_apiserver::Profile;

/// alfred's test API server.
const ALFRED: Profile = Profile {
    cache_folder: "alfred-apiserver",
    env_prefix: "ALFRED_APISERVER",
    namespace: "ome",
    service_account: "ome-alfred",
    kubeconfig_name: "alfred",
    cluster_name: "alfred-test",
};

/// `cargo xtask apiserver build|start|stop|status|restart [--dir DIR] [--port PORT]`.
pub(crate) fn main(args: &[String]) -> Result<()> {
    kube_test_apiserver::main(&ALFRED, args)
}
