//! `/metrics` (OpenMetrics text), `/healthz` and `/readyz`.
//!
//! `/readyz` answers 200 only once the simulation workers passed their startup probe (at once
//! when none are configured); `/healthz` is a plain ping.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::run::telemetry::metrics::Metrics;

/// Shared state of the endpoints.
#[derive(Clone)]
pub struct HttpState {
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Set once the workers are probed.
    pub ready: Arc<AtomicBool>,
}

/// The OpenMetrics content type.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The Prometheus text format (0.0.4), for scrapers that do not ask for OpenMetrics
/// (`curl`, `promtool check metrics`).
pub const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

async fn metrics(State(s): State<HttpState>, headers: HeaderMap) -> impl IntoResponse {
    let openmetrics = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    let body = s.metrics.render();
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
    let counters: std::collections::BTreeSet<&str> = om
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

async fn readyz(State(s): State<HttpState>) -> (StatusCode, &'static str) {
    if s.ready.load(Ordering::SeqCst) {
        (StatusCode::OK, "ok")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "simulation workers not probed yet",
        )
    }
}

/// The router: `/metrics`, `/healthz`, `/readyz`.
pub fn router(state: HttpState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(state)
}

/// `:8080` → `0.0.0.0:8080`.
pub fn bind_address(flag: &str) -> String {
    if flag.starts_with(':') {
        format!("0.0.0.0{flag}")
    } else {
        flag.to_owned()
    }
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
}
