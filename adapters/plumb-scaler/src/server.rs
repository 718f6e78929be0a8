//! Running `plumb scaler`: the gRPC server on `--grpc-bind-address` (TLS when a certificate
//! and key are given), the watchers that fill its cache, `/metrics`, `/healthz` and `/readyz`
//! (ready once the watchers have listed), and a graceful stop on SIGTERM or Ctrl-C. The command line lives in the `plumb` binary (adapters/plumb-kube); this is what it
//! calls.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::Server;

use crate::clock::SystemClock;
use crate::floor::{FloorCache, Snapshot};
use crate::service::Scaler;
use crate::watch::{watch_hub_lease, watch_policies};

/// The namespace when neither `--namespace` nor the pod's service account names one.
pub const DEFAULT_NAMESPACE: &str = "plumb-system";
/// Where a pod finds its own namespace.
const POD_NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// What `plumb scaler` runs with.
#[derive(Debug, Clone)]
pub struct ScalerConfig {
    /// Where to listen.
    pub bind: SocketAddr,
    /// Plumb's namespace, where the `plumb-hub` Lease is (none = the pod's, else
    /// `plumb-system`).
    pub namespace: Option<String>,
    /// This member's name in the policies' `clusters[]` (empty = no cap).
    pub cluster_name: String,
    /// PEM certificate chain and key for TLS (both or neither).
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Where `/metrics` (and `/healthz`, `/readyz`) are served.
    pub metrics_bind: String,
    /// Where `/healthz` and `/readyz` are served (empty or `0`: only on `metrics_bind`).
    pub health_probe_bind: String,
}

/// Reads a bind address: `HOST:PORT`, or `:PORT` for every IPv4 interface (Go's spelling, as
/// the other Kubernetes components write it).
pub fn parse_bind_address(text: &str) -> Result<SocketAddr, String> {
    let full = match text.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => text.to_owned(),
    };
    full.parse()
        .map_err(|_| format!("{text:?} is not an address (HOST:PORT or :PORT)"))
}

/// Serves the scaler on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    scaler: Scaler,
    tls: Option<tonic::transport::ServerTlsConfig>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<()> {
    serve_incoming(TcpListenerStream::new(listener), scaler, tls, shutdown).await
}

/// Serves the scaler on every connection `incoming` yields (TCP in production; in-memory
/// pipes in tests, whose readiness tokio's paused clock can follow) until `shutdown`.
pub async fn serve_incoming<IO, IE>(
    incoming: impl futures::Stream<Item = Result<IO, IE>>,
    scaler: Scaler,
    tls: Option<tonic::transport::ServerTlsConfig>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<()>
where
    IO: tokio::io::AsyncRead
        + tokio::io::AsyncWrite
        + tonic::transport::server::Connected
        + Unpin
        + Send
        + 'static,
    IE: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut builder = Server::builder();
    if let Some(tls) = tls {
        builder = builder.tls_config(tls).context("TLS configuration")?;
    }
    builder
        .add_service(scaler.into_server())
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
        .context("gRPC server")
}

/// Reads the TLS certificate and key files.
pub fn tls_config(cert: &PathBuf, key: &PathBuf) -> Result<tonic::transport::ServerTlsConfig> {
    let cert_pem =
        std::fs::read(cert).with_context(|| format!("--tls-cert-file {}", cert.display()))?;
    let key_pem =
        std::fs::read(key).with_context(|| format!("--tls-key-file {}", key.display()))?;
    Ok(tonic::transport::ServerTlsConfig::new()
        .identity(tonic::transport::Identity::from_pem(cert_pem, key_pem)))
}

/// `plumb scaler`: connects to the member's API server (in-cluster, or the kubeconfig),
/// starts the watchers and serves until SIGTERM or Ctrl-C.
pub async fn run(config: ScalerConfig) -> Result<()> {
    let namespace = config.namespace.clone().unwrap_or_else(|| {
        std::fs::read_to_string(POD_NAMESPACE_FILE)
            .map(|s| s.trim().to_owned())
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned())
    });
    let tls = match &config.tls {
        Some((cert, key)) => Some(tls_config(cert, key)?),
        None => None,
    };
    let client = kube::Client::try_default()
        .await
        .context("connecting to the cluster's API server")?;
    let cache = FloorCache::new();
    tokio::spawn(watch_policies(
        client.clone(),
        cache.clone(),
        config.cluster_name.clone(),
    ));
    tokio::spawn(watch_hub_lease(client, cache.clone(), namespace.clone()));
    let ready = Arc::new(AtomicBool::new(false));
    let endpoints = metrics_endpoint::Endpoints {
        // The process metrics; the seed's table names no metric of the scaler's own.
        render: Arc::new(|| format!("{}# EOF\n", metrics_endpoint::process_metrics())),
        ready: ready.clone(),
        not_ready: NOT_LISTED,
    };
    let addresses = metrics_endpoint::addresses(&config.metrics_bind, &config.health_probe_bind);
    metrics_endpoint::serve(&addresses, &endpoints)
        .await
        .map_err(anyhow::Error::msg)?;
    tokio::spawn(ready_once_listed(cache.subscribe(), ready));
    let listener = TcpListener::bind(config.bind)
        .await
        .with_context(|| format!("--grpc-bind-address {}", config.bind))?;
    tracing::info!(address = %config.bind, namespace, cluster = config.cluster_name, tls = config.tls.is_some(), "plumb scaler serving");
    let scaler = Scaler::new(cache, Arc::new(SystemClock));
    serve(listener, scaler, tls, stop_signal()).await
}

/// `/readyz`'s answer until the watchers have listed, and `Unavailable`'s message.
pub const NOT_LISTED: &str =
    "the scaler has not listed the AdaptivePolicies and the plumb-hub Lease yet";

/// Sets `ready` once the cache holds a complete list of the policies and the Lease, so a
/// Service sends KEDA only to replicas that can answer.
pub async fn ready_once_listed(
    mut snapshots: tokio::sync::watch::Receiver<Arc<Snapshot>>,
    ready: Arc<AtomicBool>,
) {
    loop {
        if snapshots.borrow_and_update().synced() {
            ready.store(true, Ordering::SeqCst);
            return;
        }
        if snapshots.changed().await.is_err() {
            return;
        }
    }
}

/// SIGTERM (the kubelet stopping the pod) or Ctrl-C.
async fn stop_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    () = ctrl_c => {}
                }
            }
            Err(_) => ctrl_c.await,
        }
    }
    #[cfg(not(unix))]
    ctrl_c.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_addresses_take_gos_port_only_spelling() {
        assert_eq!(
            parse_bind_address(":6000").unwrap().to_string(),
            "0.0.0.0:6000"
        );
        assert_eq!(
            parse_bind_address("127.0.0.1:7").unwrap().to_string(),
            "127.0.0.1:7"
        );
        assert_eq!(
            parse_bind_address("6000").unwrap_err(),
            "\"6000\" is not an address (HOST:PORT or :PORT)"
        );
    }

    #[tokio::test]
    async fn ready_only_once_both_watchers_listed() {
        let cache = FloorCache::new();
        let ready = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(ready_once_listed(cache.subscribe(), ready.clone()));
        cache.replace_policies(Default::default());
        tokio::task::yield_now().await;
        assert!(!ready.load(Ordering::SeqCst), "the Lease is not listed yet");
        cache.set_lease(None);
        task.await.unwrap();
        assert!(ready.load(Ordering::SeqCst));
    }
}
