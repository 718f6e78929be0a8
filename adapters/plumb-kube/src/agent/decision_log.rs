//! The decision log (`--decision-log`, docs/plumb/decision-log.md): one JSON object a line,
//! exactly the serde form of plumb-core's line types (`kind: decision`, `kind: outcome`),
//! to standard output or appended to a file, flushed after every line so a line is never
//! half-written when the agent stops.

use std::fs::{File, OpenOptions};
use std::io::Write as _;

use serde::Serialize;

use crate::agent::DecisionLogTarget;

/// Where the hub's lines go. A file is opened (append, created if missing) at the first
/// line and kept open; a failed open is tried again at the next line.
#[derive(Debug)]
pub struct DecisionLog {
    target: DecisionLogTarget,
    file: Option<File>,
}

/// One line of the log: `line`'s JSON and a newline.
pub fn render<T: Serialize>(line: &T) -> Result<String, String> {
    let mut text = serde_json::to_string(line).map_err(|e| format!("decision log: {e}"))?;
    text.push('\n');
    Ok(text)
}

impl DecisionLog {
    /// A log writing to `target`.
    pub fn new(target: DecisionLogTarget) -> DecisionLog {
        DecisionLog { target, file: None }
    }

    /// Writes and flushes one line; the error is one line naming the target.
    pub fn write<T: Serialize>(&mut self, line: &T) -> Result<(), String> {
        let text = render(line)?;
        match &self.target {
            DecisionLogTarget::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())
                    .and_then(|()| out.flush())
                    .map_err(|e| format!("decision log (stdout): {e}"))
            }
            DecisionLogTarget::File(path) => {
                let file = match &mut self.file {
                    Some(file) => file,
                    None => self.file.insert(
                        OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(path)
                            .map_err(|e| format!("decision log {}: {e}", path.display()))?,
                    ),
                };
                let written = file.write_all(text.as_bytes()).and_then(|()| file.flush());
                if let Err(e) = written {
                    self.file = None;
                    return Err(format!("decision log {}: {e}", path.display()));
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_appended_one_json_object_each() {
        let dir = std::env::temp_dir().join(format!("plumb-decision-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("decisions.jsonl");
        std::fs::write(&path, "{\"kind\":\"earlier\"}\n").unwrap();
        let mut log = DecisionLog::new(DecisionLogTarget::File(path.clone()));
        log.write(&serde_json::json!({"kind": "decision", "decisionId": "1-0000abcd"}))
            .unwrap();
        log.write(&serde_json::json!({"kind": "outcome"})).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "{\"kind\":\"earlier\"}\n{\"kind\":\"decision\",\"decisionId\":\"1-0000abcd\"}\n{\"kind\":\"outcome\"}\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_that_cannot_be_opened_is_one_line_naming_it() {
        let mut log = DecisionLog::new(DecisionLogTarget::File("/nonexistent/dir/d.jsonl".into()));
        let e = log.write(&serde_json::json!({})).unwrap_err();
        assert!(
            e.starts_with("decision log /nonexistent/dir/d.jsonl: "),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }
}
