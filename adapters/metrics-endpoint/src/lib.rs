//! The HTTP endpoints of a Kubernetes controller: `/metrics`, `/healthz` and `/readyz`.
//!
//! `/metrics` serves what the caller's render function returns, as OpenMetrics text when the
//! scraper asks for it (`Accept: application/openmetrics-text`, as Prometheus does) and in the
//! Prometheus text format 0.0.4 otherwise (`curl`, `promtool check metrics`). `/healthz` is a
//! plain ping; `/readyz` answers 200 once the caller sets its ready flag, 503 with the caller's
//! message before.
//!
//! ```no_run
//! # async fn demo() -> Result<(), String> {
//! use std::sync::Arc;
//! use std::sync::atomic::AtomicBool;
//!
//! let endpoints = metrics_endpoint::Endpoints {
//!     render: Arc::new(|| "# EOF\n".to_owned()), // e.g. prometheus-client's encode
//!     ready: Arc::new(AtomicBool::new(true)),
//!     not_ready: "not started yet",
//! };
//! metrics_endpoint::serve(&[":8080".to_owned()], &endpoints).await?;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs, unreachable_pub)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

mod process;

pub use process::process_metrics;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

/// The OpenMetrics content type.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The Prometheus text format (0.0.4), for scrapers that do not ask for OpenMetrics
/// (`curl`, `promtool check metrics`).
pub const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What the endpoints serve.
#[derive(Clone)]
pub struct Endpoints {
    /// The metrics as OpenMetrics text, rendered on every scrape.
    pub render: Arc<dyn Fn() -> String + Send + Sync>,
    /// `/readyz` answers 200 once this is set.
    pub ready: Arc<AtomicBool>,
    /// `/readyz`'s body while not ready.
    pub not_ready: &'static str,
}

async fn metrics(State(s): State<Endpoints>, headers: HeaderMap) -> impl IntoResponse {
    let openmetrics = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    let body = (s.render)();
    if openmetrics {
        ([(header::CONTENT_TYPE, OPENMETRICS)], body)
    } else {
        (
            [(header::CONTENT_TYPE, TEXT_FORMAT)],
            openmetrics_to_text(&body),
        )
    }
}

/// OpenMetrics text → Prometheus text format 0.0.4: counter families take their samples'
/// `_total` name in `# HELP`/`# TYPE`, `# UNIT` and `# EOF` lines are dropped.
pub fn openmetrics_to_text(om: &str) -> String {
    let counters: BTreeSet<&str> = om
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(om.len());
    for line in om.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let rewritten = ["# HELP ", "# TYPE "].iter().find_map(|prefix| {
            let rest = line.strip_prefix(prefix)?;
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            counters
                .contains(name)
                .then(|| format!("{prefix}{name}_total {tail}"))
        });
        out.push_str(rewritten.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(s): State<Endpoints>) -> (StatusCode, &'static str) {
    if s.ready.load(Ordering::SeqCst) {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, s.not_ready)
    }
}

/// The router: `/metrics`, `/healthz`, `/readyz`.
pub fn router(endpoints: Endpoints) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(endpoints)
}

/// `:8080` → `0.0.0.0:8080`; any other address as it is.
pub fn bind_address(flag: &str) -> String {
    if flag.starts_with(':') {
        format!("0.0.0.0{flag}")
    } else {
        flag.to_owned()
    }
}

/// The addresses to serve on for a metrics address and a health probe address: both, or the
/// metrics address alone when the probe address is the same, empty or `0` (disabled).
pub fn addresses(metrics: &str, health_probe: &str) -> Vec<String> {
    let mut addresses = vec![metrics.to_owned()];
    if health_probe != metrics && !health_probe.is_empty() && health_probe != "0" {
        addresses.push(health_probe.to_owned());
    }
    addresses
}

/// Binds every address (see [`bind_address`]), then serves the endpoints on each in a task of
/// the caller's tokio runtime. Fails, with one line naming the address, when one cannot be
/// bound; a server that stops later logs the error.
pub async fn serve(addresses: &[String], endpoints: &Endpoints) -> Result<(), String> {
    for address in addresses {
        let listener = tokio::net::TcpListener::bind(bind_address(address))
            .await
            .map_err(|e| format!("unable to listen on {address}: {e}"))?;
        let router = router(endpoints.clone());
        tracing::info!(address = %address, "serving /metrics, /healthz, /readyz");
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::error!(error = %e, "HTTP server stopped");
            }
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_take_their_total_name_in_the_text_format() {
        let om = "# HELP a_reload Loads.\n# TYPE a_reload counter\na_reload_total{outcome=\"success\"} 1\n# HELP g A gauge.\n# TYPE g gauge\ng 1.0\n# EOF\n";
        assert_eq!(
            openmetrics_to_text(om),
            "# HELP a_reload_total Loads.\n# TYPE a_reload_total counter\na_reload_total{outcome=\"success\"} 1\n# HELP g A gauge.\n# TYPE g gauge\ng 1.0\n"
        );
    }

    #[test]
    fn addresses_serve_the_probe_port_only_when_it_differs() {
        assert_eq!(addresses(":8080", ":8081"), [":8080", ":8081"]);
        assert_eq!(addresses(":8080", ":8080"), [":8080"]);
        assert_eq!(addresses(":8080", ""), [":8080"]);
        assert_eq!(addresses(":8080", "0"), [":8080"]);
        assert_eq!(bind_address(":8080"), "0.0.0.0:8080");
        assert_eq!(bind_address("127.0.0.1:9"), "127.0.0.1:9");
    }

    #[tokio::test]
    async fn the_endpoints_answer_over_http() {
        let ready = Arc::new(AtomicBool::new(false));
        let endpoints = Endpoints {
            render: Arc::new(|| "# TYPE c counter\nc_total 1\n# EOF\n".to_owned()),
            ready: ready.clone(),
            not_ready: "warming up",
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(axum::serve(listener, router(endpoints)).into_future());
        let get = |path: &'static str| async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut s = tokio::net::TcpStream::connect(address).await.unwrap();
            let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            s.write_all(request.as_bytes()).await.unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
            out
        };
        let metrics = get("/metrics").await;
        assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
        assert!(metrics.contains(TEXT_FORMAT), "{metrics}");
        assert!(
            metrics.ends_with("# TYPE c_total counter\nc_total 1\n"),
            "{metrics}"
        );
        let not_ready = get("/readyz").await;
        assert!(not_ready.starts_with("HTTP/1.1 503"), "{not_ready}");
        assert!(not_ready.ends_with("warming up"), "{not_ready}");
        ready.store(true, Ordering::SeqCst);
        assert!(get("/readyz").await.ends_with("ok"));
        assert!(get("/healthz").await.ends_with("ok"));
    }
}
