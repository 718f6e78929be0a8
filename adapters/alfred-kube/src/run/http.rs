//! `/metrics` (OpenMetrics text), `/healthz` and `/readyz`.
//!
//! `/readyz` answers 200 only once the simulation workers passed their startup probe (at once
//! when none are configured); `/healthz` is a plain ping.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use super::metrics::Metrics;

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

async fn metrics(State(s): State<HttpState>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, OPENMETRICS)], s.metrics.render())
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
