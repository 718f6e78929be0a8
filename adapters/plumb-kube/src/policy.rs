//! `plumb policy check FILE`: reads an AdaptivePolicy (YAML, or JSON when the text starts with
//! `{`), reports every problem on its own line naming the file and the field path, and says
//! which accepted fields this build ignores. With `--print-effective`, prints the policy with
//! every default filled in.

use std::path::Path;

use plumb_model::AdaptivePolicy;
use plumb_model::validate::Checked;

/// What a check found: the lines to print and whether the policy is valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutcome {
    /// Whether the policy has no problem (exit 0).
    pub valid: bool,
    /// Standard output: `FILE: ok`, the notices, or the effective policy.
    pub stdout: String,
    /// Standard error: one line per problem, `FILE: <field path>: <rule>`.
    pub stderr: String,
}

/// Reads a policy document's text: JSON when it starts with `{` (serde_json names the line
/// and column of a syntax error), else YAML. A document that cannot be read is one problem
/// naming the field (or `document` for a syntax error).
pub fn check_text(text: &str) -> (Option<AdaptivePolicy>, Checked) {
    if !text.trim_start().starts_with('{') {
        return plumb_model::validate::check_document(text);
    }
    match AdaptivePolicy::from_json(text) {
        Ok(policy) => {
            let checked = policy.spec.check();
            (Some(policy), checked)
        }
        Err(e) => {
            let path = if e.path.is_empty() {
                "document".to_owned()
            } else {
                e.path
            };
            let checked = Checked {
                problems: vec![plumb_model::validate::Problem {
                    path,
                    rule: e.message,
                }],
                notices: Vec::new(),
            };
            (None, checked)
        }
    }
}

/// Checks the policy file at `path`.
pub fn check_file(path: &Path, print_effective: bool) -> CheckOutcome {
    let name = path.display();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            return CheckOutcome {
                valid: false,
                stdout: String::new(),
                stderr: format!(
                    "{}\n",
                    crate::one_line(&format!("{name}: cannot read: {e}"))
                ),
            };
        }
    };
    let (policy, checked) = check_text(&text);
    let mut stderr = String::new();
    for problem in &checked.problems {
        stderr.push_str(&crate::one_line(&format!("{name}: {problem}")));
        stderr.push('\n');
    }
    let mut stdout = String::new();
    match policy {
        Some(policy) if checked.is_valid() => {
            if print_effective {
                stdout.push_str(&effective_yaml(&policy));
            } else {
                stdout.push_str(&format!("{name}: ok\n"));
            }
            // Notices go to standard error with --print-effective, so the output stays YAML.
            let notices = if print_effective {
                &mut stderr
            } else {
                &mut stdout
            };
            for notice in &checked.notices {
                notices.push_str(&crate::one_line(&format!("{name}: notice: {notice}")));
                notices.push('\n');
            }
        }
        _ => {}
    }
    CheckOutcome {
        valid: checked.is_valid(),
        stdout,
        stderr,
    }
}

/// The policy with its spec's defaults filled in, as YAML (JSON, which is YAML too, should
/// the YAML writer refuse a value).
pub fn effective_yaml(policy: &AdaptivePolicy) -> String {
    let mut effective = policy.clone();
    effective.spec = policy.spec.effective(policy.metadata.namespace.as_deref());
    serde_saphyr::to_string(&effective)
        .unwrap_or_else(|_| serde_json::to_string_pretty(&effective).unwrap_or_default() + "\n")
}
