//! The one error type of configuration loading.

/// Why an `alfredConfig` document was rejected.
///
/// Every variant but [`ConfigError::Syntax`] names the key path (`policies.nodeHealth.enabled`,
/// `maintenanceWindows[0].days[1]`, `scheduling.profiles.default-scheduler.backend`,
/// `policies.defragmentation.scoring.sizePrior["8"]`). Structural problems (syntax, unknown key,
/// duplicate key, wrong type) carry the `parse config.yaml: ` prefix of spec §3.1 whichever syntax
/// (YAML or JSON) the document used; validation problems read `<path>: <value> <problem>`, e.g.
/// `policies.defragmentation.fragmentationThreshold: 1.5 is outside [0, 1]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Not well-formed YAML or JSON (the parser's message, on one line).
    #[error("parse config.yaml: {message}")]
    Syntax {
        /// The parser's message.
        message: String,
    },
    /// A key the schema does not have.
    #[error("parse config.yaml: {path}: unknown key")]
    UnknownKey {
        /// Path of the unknown key itself.
        path: String,
    },
    /// A key that appears twice in the same mapping.
    #[error("parse config.yaml: {path}: duplicate key")]
    DuplicateKey {
        /// Path of the repeated key.
        path: String,
    },
    /// A value of the wrong type (`"yes"` for a boolean, `5` for a string, a list for a map).
    #[error("parse config.yaml: {path}: {value} is not {expected}")]
    WrongType {
        /// Path of the value.
        path: String,
        /// The value as written (strings quoted; `a list`/`a mapping` for collections).
        value: String,
        /// What the schema wants, with its article: `a boolean`, `an integer`, ….
        expected: String,
    },
    /// A required key is absent (`schemaVersion`, a window's `start`, …).
    #[error("{path}: required key is missing")]
    Missing {
        /// Path of the missing key.
        path: String,
    },
    /// A well-typed value that breaks a rule.
    #[error("{path}: {}", invalid_text(value, problem))]
    Invalid {
        /// Path of the value.
        path: String,
        /// The value (strings quoted); empty when the problem concerns the whole entry.
        value: String,
        /// The rule it breaks: `is outside [0, 1]`, `is not positive`, ….
        problem: String,
    },
}

fn invalid_text(value: &str, problem: &str) -> String {
    if value.is_empty() {
        problem.to_string()
    } else {
        format!("{value} {problem}")
    }
}

impl ConfigError {
    /// The key path the error names (empty for [`ConfigError::Syntax`]).
    pub fn path(&self) -> &str {
        match self {
            ConfigError::Syntax { .. } => "",
            ConfigError::UnknownKey { path }
            | ConfigError::DuplicateKey { path }
            | ConfigError::WrongType { path, .. }
            | ConfigError::Missing { path }
            | ConfigError::Invalid { path, .. } => path,
        }
    }

    /// True for the structural errors of the strict decode (syntax, unknown or duplicate key,
    /// wrong type), false for validation errors.
    pub fn is_parse_error(&self) -> bool {
        matches!(
            self,
            ConfigError::Syntax { .. }
                | ConfigError::UnknownKey { .. }
                | ConfigError::DuplicateKey { .. }
                | ConfigError::WrongType { .. }
        )
    }

    pub(crate) fn invalid(
        path: impl Into<String>,
        value: impl Into<String>,
        problem: impl Into<String>,
    ) -> Self {
        ConfigError::Invalid {
            path: path.into(),
            value: value.into(),
            problem: problem.into(),
        }
    }
}

/// `parent.key`, or `parent["key"]` when the key is not a plain identifier-like word.
pub(crate) fn key_path(parent: &str, key: &str) -> String {
    let plain = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    match (parent.is_empty(), plain) {
        (true, true) => key.to_string(),
        (false, true) => format!("{parent}.{key}"),
        (_, false) => format!("{parent}[{key:?}]"),
    }
}

/// `parent[index]`.
pub(crate) fn index_path(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// A string value as error messages show it: quoted, escaped.
pub(crate) fn quoted(s: &str) -> String {
    format!("{s:?}")
}
