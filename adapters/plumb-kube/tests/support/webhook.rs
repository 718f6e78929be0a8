//! A slow validating admission webhook, the real-world cause of a write that times out: a
//! `ValidatingWebhookConfiguration` on one member's API server sends every HTTPRoute UPDATE
//! (a PATCH is one) to a handler served here, over https on loopback with a self-signed
//! certificate made by `openssl` (the same tool the API servers' recipe uses for its keys).
//! While [`SlowWebhook::set_slow`] is on, the handler answers only after [`SLOW_FOR`] (longer
//! than the hub's per-request timeout) or as soon as slowness is turned off; it always allows.
//! `failurePolicy: Ignore` with the API server's 10 s webhook timeout: the write the hub gave
//! up on may still land afterwards, the ambiguous case.
//!
//! The handler speaks just enough HTTP/1.1 for the API server's webhook client: no ALPN (so
//! no HTTP/2), one request per connection, `Connection: close`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    RuleWithOperations, ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The configuration's name.
pub const NAME: &str = "plumb-live-slow-httproutes";
/// How long a slow answer takes at most: more than the hub's 8 s request timeout.
pub const SLOW_FOR: Duration = Duration::from_secs(12);

/// The handler's switch and its counters.
#[derive(Default)]
struct State {
    slow: AtomicBool,
    calls: AtomicUsize,
    slow_calls: AtomicUsize,
}

/// The webhook server (its task stops on drop) and the PEM of its certificate.
pub struct SlowWebhook {
    state: Arc<State>,
    port: u16,
    cert_pem: Vec<u8>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SlowWebhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `openssl` with `args`, panicking with its output when it fails.
fn openssl(args: &[&str], dir: &Path) {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A self-signed certificate for `IP:127.0.0.1` in `dir`: (PEM, DER, PKCS#8 key DER).
fn certificate(dir: &Path) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    std::fs::create_dir_all(dir).expect("cert dir");
    openssl(
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "key.pem",
            "-out",
            "cert.pem",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        dir,
    );
    openssl(
        &[
            "x509", "-in", "cert.pem", "-outform", "DER", "-out", "cert.der",
        ],
        dir,
    );
    openssl(
        &[
            "pkcs8", "-topk8", "-nocrypt", "-in", "key.pem", "-outform", "DER", "-out", "key.der",
        ],
        dir,
    );
    let read = |f: &str| std::fs::read(dir.join(f)).expect("cert file");
    (read("cert.pem"), read("cert.der"), read("key.der"))
}

impl SlowWebhook {
    /// Serves the handler on a free loopback port (not slow yet).
    pub async fn serve() -> SlowWebhook {
        let dir = std::env::temp_dir().join(format!("plumb-live-webhook-{}", std::process::id()));
        let (cert_pem, cert_der, key_der) = certificate(&dir);
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(cert_der)],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key_der)),
            )
            .expect("TLS config");
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let state = Arc::new(State::default());
        let served = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let acceptor = acceptor.clone();
                let state = served.clone();
                tokio::spawn(async move {
                    if let Ok(tls) = acceptor.accept(tcp).await {
                        let _ = handle(tls, &state).await;
                    }
                });
            }
        });
        SlowWebhook {
            state,
            port,
            cert_pem,
            task,
        }
    }

    /// Turns slowness on or off; turning it off releases the answers held back.
    pub fn set_slow(&self, slow: bool) {
        self.state.slow.store(slow, Ordering::SeqCst);
    }

    /// Reviews received so far, and how many of them were answered slowly.
    pub fn calls(&self) -> (usize, usize) {
        (
            self.state.calls.load(Ordering::SeqCst),
            self.state.slow_calls.load(Ordering::SeqCst),
        )
    }

    /// Registers the webhook on the API server of `client` for HTTPRoute UPDATEs, and waits
    /// until the server calls it (a no-op update of `route` in `namespace` reaches it).
    pub async fn register(&self, client: &kube::Client, namespace: &str, route: &str) {
        let config = ValidatingWebhookConfiguration {
            metadata: ObjectMeta {
                name: Some(NAME.to_owned()),
                ..ObjectMeta::default()
            },
            webhooks: Some(vec![ValidatingWebhook {
                name: "slow-httproutes.plumb-live.test".to_owned(),
                client_config: WebhookClientConfig {
                    url: Some(format!("https://127.0.0.1:{}/validate", self.port)),
                    ca_bundle: Some(ByteString(self.cert_pem.clone())),
                    ..WebhookClientConfig::default()
                },
                rules: Some(vec![RuleWithOperations {
                    api_groups: Some(vec!["gateway.networking.k8s.io".to_owned()]),
                    api_versions: Some(vec!["*".to_owned()]),
                    operations: Some(vec!["UPDATE".to_owned()]),
                    resources: Some(vec!["httproutes".to_owned()]),
                    scope: Some("Namespaced".to_owned()),
                }]),
                failure_policy: Some("Ignore".to_owned()),
                side_effects: "None".to_owned(),
                admission_review_versions: vec!["v1".to_owned()],
                timeout_seconds: Some(10),
                ..ValidatingWebhook::default()
            }]),
        };
        let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        let _ = api.delete(NAME, &DeleteParams::default()).await;
        api.create(&PostParams::default(), &config)
            .await
            .unwrap_or_else(|e| panic!("creating the webhook configuration: {e}"));
        // The server picks the configuration up within a moment: touch the route (an
        // annotation) until a review arrives.
        let routes: Api<kube::api::DynamicObject> = Api::namespaced_with(
            client.clone(),
            namespace,
            &kube::api::ApiResource::from_gvk_with_plural(
                &kube::api::GroupVersionKind::gvk("gateway.networking.k8s.io", "v1", "HTTPRoute"),
                "httproutes",
            ),
        );
        let begun = Instant::now();
        for i in 0.. {
            let patch =
                json!({"metadata": {"annotations": {"plumb-live/webhook-probe": i.to_string()}}});
            let _ = routes
                .patch(
                    route,
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(&patch),
                )
                .await;
            if self.calls().0 > 0 {
                break;
            }
            assert!(
                begun.elapsed() < Duration::from_secs(30),
                "the webhook was never called"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Removes the configuration from the API server of `client`.
    pub async fn unregister(&self, client: &kube::Client) {
        let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        let _ = api.delete(NAME, &DeleteParams::default()).await;
    }
}

/// One request: read it, hold the answer while slow (at most [`SLOW_FOR`]), allow it.
async fn handle(
    mut tls: tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
    state: &State,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let (head_end, length) = loop {
        let n = tls.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (end + 4, length);
        }
    };
    while buf.len() < head_end + length {
        let n = tls.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let review: Value =
        serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or_default();
    state.calls.fetch_add(1, Ordering::SeqCst);
    if state.slow.load(Ordering::SeqCst) {
        state.slow_calls.fetch_add(1, Ordering::SeqCst);
        let begun = Instant::now();
        while state.slow.load(Ordering::SeqCst) && begun.elapsed() < SLOW_FOR {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let body = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], "allowed": true},
    })
    .to_string();
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    tls.write_all(response.as_bytes()).await?;
    tls.shutdown().await
}
