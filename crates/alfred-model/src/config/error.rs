//! The one error type of configuration loading.

use std::borrow::Cow;
use std::fmt;

/// Why an `alfredConfig` document was rejected.
///
/// Every variant but [`ConfigError::Syntax`] names the key path (`policies.nodeHealth.enabled`,
/// `maintenanceWindows[0].days[1]`, `scheduling.profiles.default-scheduler.backend`,
/// `policies.defragmentation.scoring.sizePrior["8"]`). Structural problems (syntax, unknown key,
/// duplicate key, wrong type) carry the `parse config.yaml: ` prefix of
/// docs/design-runtime.md#configuration-loading whichever syntax (YAML or JSON) the document used;
/// validation problems read `<path>: <value> <problem>`, e.g.
/// `policies.defragmentation.fragmentationThreshold: 1.5 is outside [0, 1]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// Not well-formed YAML or JSON (the parser's message, on one line).
    Syntax {
        /// The parser's message.
        message: String,
    },
    /// A key the schema does not have.
    UnknownKey {
        /// Path of the unknown key itself.
        path: String,
    },
    /// A key that appears twice in the same mapping.
    DuplicateKey {
        /// Path of the repeated key.
        path: String,
    },
    /// A value of the wrong type (`"yes"` for a boolean, `5` for a string, a list for a map).
    WrongType {
        /// Path of the value.
        path: String,
        /// The value as written (strings quoted; `a list`/`a mapping` for collections).
        value: String,
        /// What the schema wants, with its article: `a boolean`, `an integer`, ….
        expected: String,
    },
    /// A required key is absent (`schemaVersion`, a window's `start`, …).
    Missing {
        /// Path of the missing key.
        path: String,
    },
    /// A well-typed value that breaks a rule.
    Invalid {
        /// Path of the value.
        path: String,
        /// The value (strings quoted); empty when the problem concerns the whole entry.
        value: String,
        /// The rule it breaks: `is outside [0, 1]`, `is not positive`, ….
        problem: String,
    },
}

impl fmt::Display for ConfigError {
    /// One line of at most [`MAX_LINE_CHARS`] characters: the parts that echo the input
    /// (keys, values, the parser's message) are clipped each, and the whole line once more
    /// (found by the fuzz targets: paths through several long keys made 310 characters).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            ConfigError::Syntax { message } => format!("parse config.yaml: {message}"),
            ConfigError::UnknownKey { path } => {
                format!("parse config.yaml: {}: unknown key", shown_path(path))
            }
            ConfigError::DuplicateKey { path } => {
                format!("parse config.yaml: {}: duplicate key", shown_path(path))
            }
            ConfigError::WrongType {
                path,
                value,
                expected,
            } => format!(
                "parse config.yaml: {}: {value} is not {expected}",
                shown_path(path)
            ),
            ConfigError::Missing { path } => {
                format!("{}: required key is missing", shown_path(path))
            }
            ConfigError::Invalid {
                path,
                value,
                problem,
            } => format!("{}: {}", shown_path(path), invalid_text(value, problem)),
        };
        match text.char_indices().nth(MAX_LINE_CHARS - 1) {
            Some((end, _)) if text[end..].chars().count() > 1 => {
                write!(f, "{}…", &text[..end])
            }
            _ => f.write_str(&text),
        }
    }
}

impl std::error::Error for ConfigError {}

/// The longest message a [`ConfigError`] displays, leaving room in a 300-character line for
/// the file name [`ConfigError::in_file`] puts in front.
pub const MAX_LINE_CHARS: usize = 240;

/// The document root has the empty path; messages call it `(document root)`. A path through
/// several long keys (each already clipped) is cut in its middle, keeping its start and the
/// key at fault, so the whole line stays under 300 characters.
fn shown_path(path: &str) -> Cow<'_, str> {
    const HEAD: usize = 50;
    const TAIL: usize = 110;
    if path.is_empty() {
        return Cow::Borrowed("(document root)");
    }
    let chars = path.chars().count();
    if chars <= HEAD + TAIL {
        return Cow::Borrowed(path);
    }
    let head: String = path.chars().take(HEAD).collect();
    let tail: String = path.chars().skip(chars - TAIL).collect();
    Cow::Owned(format!("{head}…{tail}"))
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

    /// The message for a config read from the file `name` (`alfred config check FILE`,
    /// `alfred replay --config FILE`): `parse <name>: …` for the structural errors, `<name>: …`
    /// for the others, so the file named is the one the user gave.
    pub fn in_file(&self, name: &str) -> String {
        let text = self.to_string();
        match text.strip_prefix("parse config.yaml: ") {
            Some(rest) => format!("parse {name}: {rest}"),
            None => format!("{name}: {text}"),
        }
    }

    pub(crate) fn invalid(
        path: impl Into<String>,
        value: impl Into<String>,
        problem: impl Into<String>,
    ) -> Self {
        let value = value.into();
        // Values arrive quoted (clipped) or as numbers; a number's text can still be long.
        let value = match value.char_indices().nth(2 * MAX_SHOWN_CHARS) {
            None => value,
            Some((end, _)) => format!("{}… ({} bytes)", &value[..end], value.len()),
        };
        ConfigError::Invalid {
            path: path.into(),
            value,
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
        (_, false) => format!("{parent}[{}]", quoted(key)),
    }
}

/// `parent[index]`.
pub(crate) fn index_path(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// The longest part of a string value (or key) an error message echoes, in characters.
pub(crate) const MAX_SHOWN_CHARS: usize = 100;

/// A string value as error messages show it: quoted, escaped, and clipped to
/// [`MAX_SHOWN_CHARS`] characters of escaped text (then followed by its length) so a huge
/// value never makes a huge error line. The clip counts the escapes (a control character
/// shows as up to 10 characters, `\u{10ffff}`): a value of control characters clipped
/// before escaping made lines of 600 characters (found by the fuzz targets).
pub(crate) fn quoted(s: &str) -> String {
    let mut shown = String::with_capacity(s.len().min(MAX_SHOWN_CHARS) + 2);
    let mut count = 0;
    for (i, c) in s.char_indices() {
        let one = format!("{:?}", &s[i..i + c.len_utf8()]);
        let escaped = &one[1..one.len() - 1];
        let width = escaped.chars().count();
        if count + width > MAX_SHOWN_CHARS {
            return format!("\"{shown}\"… ({} bytes)", s.len());
        }
        count += width;
        shown.push_str(escaped);
    }
    format!("\"{shown}\"")
}
