//! The Azure LLM inference traces of 2023 (`../shared/data/azure-llm-2023`, CC BY 4.0): each
//! row is one request's arrival time and its context and generated tokens. Read in place,
//! never copied into the repository.

use std::path::{Path, PathBuf};

/// The trace folder relative to the repository root.
pub const DEFAULT_DATA: &str = "../shared/data/azure-llm-2023";
/// The environment variable that overrides the folder.
pub const DATA_ENV: &str = "PLUMB_TWIN_DATA";

/// One request of a trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceRequest {
    /// Seconds since the trace's first request.
    pub offset: f64,
    /// Prompt tokens.
    pub context_tokens: u32,
    /// Output tokens.
    pub generated_tokens: u32,
}

/// One trace, its requests in time order.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// `conv` or `code`.
    pub name: String,
    /// The requests.
    pub requests: Vec<TraceRequest>,
    /// Seconds from the first request to one mean gap after the last (the loop length).
    pub duration: f64,
}

impl Trace {
    /// Mean arrivals per second.
    pub fn mean_rate(&self) -> f64 {
        self.requests.len() as f64 / self.duration
    }

    /// Parses the CSV text (`TIMESTAMP,ContextTokens,GeneratedTokens`); the error names the
    /// line and the field.
    pub fn parse(name: &str, text: &str) -> Result<Trace, String> {
        let mut requests = Vec::new();
        let mut first = None;
        for (n, line) in text.lines().enumerate().skip(1) {
            if line.trim().is_empty() {
                continue;
            }
            let mut fields = line.split(',');
            let (Some(ts), Some(ctx), Some(generated)) =
                (fields.next(), fields.next(), fields.next())
            else {
                return Err(format!("{name}: line {}: expected 3 fields", n + 1));
            };
            let t = seconds_of_day(ts)
                .ok_or_else(|| format!("{name}: line {}: TIMESTAMP {ts:?}", n + 1))?;
            let first = *first.get_or_insert(t);
            let parse = |field: &str, what: &str| {
                field
                    .trim()
                    .parse::<u32>()
                    .map_err(|_| format!("{name}: line {}: {what} {field:?}", n + 1))
            };
            requests.push(TraceRequest {
                offset: t - first,
                context_tokens: parse(ctx, "ContextTokens")?,
                generated_tokens: parse(generated, "GeneratedTokens")?,
            });
        }
        requests.sort_by(|a, b| a.offset.total_cmp(&b.offset));
        let last = requests.last().map_or(0.0, |r| r.offset);
        if requests.len() < 2 || last <= 0.0 {
            return Err(format!("{name}: fewer than two requests"));
        }
        let duration = last + last / (requests.len() - 1) as f64;
        Ok(Trace {
            name: name.to_owned(),
            requests,
            duration,
        })
    }
}

/// `YYYY-MM-DD HH:MM:SS[.fffffff]` → seconds since midnight (the traces span one hour of
/// one day).
fn seconds_of_day(ts: &str) -> Option<f64> {
    let time = ts.trim().split(' ').nth(1)?;
    let mut parts = time.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}

/// Both traces.
#[derive(Debug, Clone, PartialEq)]
pub struct Traces {
    /// The conversation trace (19,366 requests).
    pub conv: Trace,
    /// The coding trace (8,819 requests).
    pub code: Trace,
}

/// Where the traces are: `$PLUMB_TWIN_DATA`, else `../shared/data/azure-llm-2023` from the
/// repository root.
pub fn data_dir(repo_root: &Path) -> PathBuf {
    match std::env::var_os(DATA_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repo_root.join(DEFAULT_DATA),
    }
}

/// Reads both traces from `dir`; `Ok(None)` when the folder or a file is absent (the caller
/// skips with a message), `Err` when a file is there but unreadable or malformed.
pub fn load(dir: &Path) -> Result<Option<Traces>, String> {
    let read = |file: &str, name: &str| -> Result<Option<Trace>, String> {
        let path = dir.join(file);
        if !path.is_file() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        Trace::parse(name, &text).map(Some)
    };
    let conv = read("AzureLLMInferenceTrace_conv.csv", "conv")?;
    let code = read("AzureLLMInferenceTrace_code.csv", "code")?;
    Ok(conv.zip(code).map(|(conv, code)| Traces { conv, code }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rows_relative_to_the_first_request() {
        let text = "TIMESTAMP,ContextTokens,GeneratedTokens\n\
                    2023-11-16 18:15:46.5000000,374,44\n\
                    2023-11-16 18:15:48.5000000,396,109\n";
        let t = Trace::parse("conv", text).unwrap();
        assert_eq!(t.requests.len(), 2);
        assert_eq!(t.requests[1].offset, 2.0);
        assert_eq!(t.requests[1].generated_tokens, 109);
        assert_eq!(t.duration, 4.0);
        assert_eq!(t.mean_rate(), 0.5);
    }

    #[test]
    fn a_bad_field_is_named() {
        let text = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,x,1\n";
        assert_eq!(
            Trace::parse("conv", text).unwrap_err(),
            "conv: line 2: ContextTokens \"x\""
        );
    }

    #[test]
    fn an_absent_folder_is_none() {
        assert_eq!(load(Path::new("/nonexistent/plumb-twin")).unwrap(), None);
    }
}
