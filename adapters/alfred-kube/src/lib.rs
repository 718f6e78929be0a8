//! The `alfred` binary's library: the Kubernetes adapter (`alfred run`), offline replay and
//! config check. `src/main.rs` is the thin CLI over it; the live tests drive [`run`] in
//! process through [`run::run_with`] (a seam the binary never uses).
//!
//! Kubernetes types stay inside this crate; it holds no policy logic.

pub mod inputs;
pub mod replay;
pub mod run;
pub mod simulation;
pub mod table;

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
