//! alfred's Kubernetes adapter as a library: the watch caches and the list/watch decoders
//! (`run::watch`, `run::decode`), the effect applier and its admission-policy-exact patches
//! (`run::apply::applier`), the leader gate (`run::apply::leader`), Events
//! (`run::apply::events`), the metrics registry (`run::telemetry::metrics`), the decision loop
//! (`run::decision`) and `alfred run`'s composition of them ([`run::run`]); the recorded inputs
//! of `alfred replay` ([`inputs`]) and the simulation workers ([`simulation`]).
//!
//! It builds without clap, axum or tracing-subscriber: the `alfred` binary (`adapters/alfred`)
//! owns the command line, the logs and the HTTP endpoints. What is not alfred's (the client
//! from a kubeconfig or in-cluster, Lease-based leadership, Event recording with dedupe, the
//! `/metrics` server) lives in the shared `kube-connect`, `kube-leader-lease`,
//! `kube-event-recorder` and `metrics-endpoint` crates.
//!
//! Kubernetes types stay inside the adapters; this crate holds no policy logic. It picks no
//! Kubernetes API version: the final binary enables one on k8s-openapi 0.29 (`alfred` uses
//! `v1_33`).

pub mod inputs;
pub mod run;
pub mod simulation;

pub use error_line::{EXIT_BAD_INPUT, MAX_ERROR_LINE, one_line};

/// Reads a config file as YAML (or JSON when it starts with `{`).
pub fn load_config(path: &std::path::Path) -> Result<alfred_model::config::Config, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let parsed = if text.trim_start().starts_with('{') {
        alfred_model::config::Config::from_json(&text)
    } else {
        alfred_model::config::Config::from_yaml(&text)
    };
    parsed.map_err(|e| e.in_file(&path.display().to_string()))
}
