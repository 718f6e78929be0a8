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

/// Exit status for bad input.
pub const EXIT_BAD_INPUT: u8 = 2;

/// The longest error line alfred prints, prefix included.
pub const MAX_ERROR_LINE: usize = 300;

/// An error message as one line (control characters as spaces, runs of spaces collapsed) of at
/// most [`MAX_ERROR_LINE`] − 20 characters: the messages name their field early, so a clipped
/// tail loses only the echo of a long value.
pub fn one_line(message: &str) -> String {
    let mut line = String::with_capacity(message.len().min(MAX_ERROR_LINE * 4));
    for c in message.trim().chars() {
        let c = if c.is_control() { ' ' } else { c };
        if c == ' ' && line.ends_with(' ') {
            continue;
        }
        line.push(c);
    }
    let max = MAX_ERROR_LINE - 20;
    match line.char_indices().nth(max - 1) {
        None => line,
        Some((end, _)) => format!("{}…", &line[..end]),
    }
}

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
