//! A Kubernetes client the way `kubectl` and client-go find their cluster: a kubeconfig file
//! when one is named, else `$KUBECONFIG` or `~/.kube/config`, else the in-cluster service
//! account. Every failure is one line naming what could not be loaded.
//!
//! ```no_run
//! # async fn demo() -> Result<(), String> {
//! let client = kube_connect::connect(None).await?; // $KUBECONFIG, ~/.kube/config, in-cluster
//! # drop(client);
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs, unreachable_pub)]

use std::path::Path;

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// A client for the cluster of `kubeconfig` (its current context), or, without one, of
/// `$KUBECONFIG`, `~/.kube/config` or the in-cluster configuration, in that order.
pub async fn connect(kubeconfig: Option<&Path>) -> Result<Client, String> {
    Client::try_from(config(kubeconfig).await?)
        .map_err(|e| format!("unable to create a Kubernetes client: {e}"))
}

/// The client configuration [`connect`] uses, for a caller that adjusts it (timeouts, user
/// agent) before building its client.
pub async fn config(kubeconfig: Option<&Path>) -> Result<kube::Config, String> {
    match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .map_err(|e| format!("unable to load kubeconfig {}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .map_err(|e| format!("unable to load kubeconfig {}: {e}", path.display()))
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| format!("unable to load a kubeconfig or the in-cluster config: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_kubeconfig_is_one_line_naming_the_file() {
        let e = connect(Some(Path::new("/nonexistent/kubeconfig")))
            .await
            .err()
            .unwrap_or_default();
        assert!(
            e.starts_with("unable to load kubeconfig /nonexistent/kubeconfig: "),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }

    #[tokio::test]
    async fn a_kubeconfig_names_its_server() {
        let dir = std::env::temp_dir().join(format!("kube-connect-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("kubeconfig");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:16443', insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
        )
        .unwrap();
        let c = config(Some(&path)).await.unwrap();
        assert_eq!(c.cluster_url.to_string(), "https://127.0.0.1:16443/");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
