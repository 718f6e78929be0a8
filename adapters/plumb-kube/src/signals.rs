//! Reading the recorded signal samples of a replay folder (`signals.json`): for each signal of
//! the policy (`demand`, `pressure`, `latency`, `errorRate`, `saturation`, and `metrics.<name>`
//! for an experimental metric), the answer Prometheus gave to its instant query, as
//! `GET /api/v1/query` returns it: `{"status": "success", "data": {"resultType": "vector",
//! "result": [{"metric": {…}, "value": [<unix seconds>, "<value>"]}]}}`, or
//! `{"status": "error", "errorType": …, "error": …}`.
//!
//! Nothing here judges the samples (how many, finite or not): that is the member report's rule.
//! Values are read as Prometheus writes them, so `"NaN"` and `"+Inf"` arrive as such.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::objects::InputError;

/// One sample of an instant vector.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The series' labels.
    pub labels: BTreeMap<String, String>,
    /// When Prometheus sampled it, in Unix milliseconds.
    pub time_ms: i64,
    /// The value (NaN and infinities kept as read).
    pub value: f64,
}

/// What one signal's query returned.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The query ran: its samples, however many.
    Samples(Vec<Sample>),
    /// The query failed: Prometheus's error (or the recorder's, e.g. unreachable).
    Error(String),
}

/// The recorded answers by signal name, sorted.
pub type SignalAnswers = BTreeMap<String, Answer>;

/// The names a signal may have in `signals.json` (besides `metrics.<name>`).
pub const SIGNAL_NAMES: [&str; 5] = ["demand", "errorRate", "latency", "pressure", "saturation"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Response {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    #[allow(dead_code)] // read so a recorded answer with warnings is accepted
    warnings: Option<Vec<String>>,
    #[serde(default)]
    #[allow(dead_code)] // Prometheus 3 adds info-level annotations beside the warnings
    infos: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<VectorSample>,
}

#[derive(Deserialize)]
struct VectorSample {
    #[serde(default)]
    metric: BTreeMap<String, String>,
    value: (Value, String),
}

/// Reads the folder's `signals.json`; a folder without one has no answers (every configured
/// signal then counts as unread).
pub fn read_signals(dir: &Path) -> Result<SignalAnswers, InputError> {
    let path = dir.join(crate::objects::SIGNALS_FILE);
    if !path.exists() {
        return Ok(SignalAnswers::new());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| InputError {
        path: path.clone(),
        message: format!("cannot read: {e}"),
    })?;
    parse_signals(&text).map_err(|message| InputError { path, message })
}

/// Parses the text of a `signals.json`; the error names the signal and the field.
pub fn parse_signals(text: &str) -> Result<SignalAnswers, String> {
    let raw: BTreeMap<String, Value> =
        serde_json::from_str(text).map_err(|e| format!("not a JSON object of answers: {e}"))?;
    let mut answers = SignalAnswers::new();
    for (name, value) in raw {
        let known = SIGNAL_NAMES.contains(&name.as_str())
            || name.strip_prefix("metrics.").is_some_and(|m| !m.is_empty());
        if !known {
            return Err(format!(
                "{name}: not a signal (one of {}, or metrics.<name>)",
                SIGNAL_NAMES.join(", ")
            ));
        }
        let answer = parse_answer(&value).map_err(|e| format!("{name}.{e}"))?;
        answers.insert(name, answer);
    }
    Ok(answers)
}

/// Reads one answer of `GET /api/v1/query` (also what the agent's Prometheus client parses
/// a response body with); the error names the field.
pub fn parse_answer(value: &Value) -> Result<Answer, String> {
    let response: Response = serde_path_to_error::deserialize(value)
        .map_err(|e| format!("{}: {}", e.path(), e.inner()))?;
    match response.status.as_str() {
        "error" => {
            let error = response.error.unwrap_or_default();
            Ok(Answer::Error(match response.error_type {
                Some(kind) if !kind.is_empty() => format!("{kind}: {error}"),
                _ => error,
            }))
        }
        "success" => {
            let data = response
                .data
                .ok_or_else(|| "data: missing in a successful answer".to_owned())?;
            if data.result_type != "vector" {
                return Err(format!(
                    "data.resultType: {:?}; an instant query of a signal answers a vector",
                    data.result_type
                ));
            }
            data.result
                .into_iter()
                .enumerate()
                .map(|(i, s)| sample(s).map_err(|e| format!("data.result[{i}].value{e}")))
                .collect::<Result<_, _>>()
                .map(Answer::Samples)
        }
        other => Err(format!(
            "status: {other:?}; expected \"success\" or \"error\""
        )),
    }
}

fn sample(raw: VectorSample) -> Result<Sample, String> {
    let seconds = raw
        .value
        .0
        .as_f64()
        .filter(|s| s.is_finite() && s.abs() < 1e11)
        .ok_or_else(|| format!("[0]: {} is not a time in Unix seconds", raw.value.0))?;
    let value = prometheus_float(&raw.value.1)
        .ok_or_else(|| format!("[1]: {:?} is not a number", raw.value.1))?;
    #[allow(clippy::cast_possible_truncation)] // bounded above: |seconds| < 1e11
    let time_ms = (seconds * 1000.0).round() as i64;
    Ok(Sample {
        labels: raw.metric,
        time_ms,
        value,
    })
}

/// A sample value as Prometheus prints it (`1.5`, `NaN`, `+Inf`, `-Inf`).
fn prometheus_float(text: &str) -> Option<f64> {
    match text {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ if text
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) =>
        {
            text.parse().ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_keep_every_sample_and_errors() {
        let answers = parse_signals(
            r#"{"demand": {"status": "success", "data": {"resultType": "vector", "result": [
                  {"metric": {"model_name": "a"}, "value": [1764590395, "34"]},
                  {"metric": {}, "value": [1764590395.5, "NaN"]}]}},
                "latency": {"status": "error", "errorType": "timeout", "error": "query timed out"}}"#,
        )
        .unwrap();
        let Answer::Samples(samples) = &answers["demand"] else {
            panic!("{answers:?}")
        };
        assert_eq!(samples.len(), 2);
        assert_eq!(samples[0].value, 34.0);
        assert_eq!(samples[0].time_ms, 1_764_590_395_000);
        assert_eq!(samples[0].labels["model_name"], "a");
        assert!(samples[1].value.is_nan());
        assert_eq!(samples[1].time_ms, 1_764_590_395_500);
        assert_eq!(
            answers["latency"],
            Answer::Error("timeout: query timed out".to_owned())
        );
    }

    #[test]
    fn bad_answers_name_the_signal_and_field() {
        let err = |t: &str| parse_signals(t).unwrap_err();
        assert!(err(r#"{"demnd": {}}"#).starts_with("demnd: not a signal"));
        assert_eq!(
            err(
                r#"{"demand": {"status": "success", "data": {"resultType": "vector",
                 "result": [{"value": [1, "many"]}]}}}"#
            ),
            "demand.data.result[0].value[1]: \"many\" is not a number"
        );
        assert!(
            err(r#"{"pressure": {"status": "success", "data": {"resultType": "matrix", "result": []}}}"#)
                .starts_with("pressure.data.resultType: \"matrix\"")
        );
        assert!(err(r#"{"pressure": {"status": "ok"}}"#).starts_with("pressure.status"));
        assert!(
            err(r#"{"pressure": {"status": "success", "extra": 1}}"#).starts_with("pressure.extra"),
            "{}",
            err(r#"{"pressure": {"status": "success", "extra": 1}}"#)
        );
        assert!(err(r#"{"metrics.": {}}"#).starts_with("metrics.: not a signal"));
        assert!(err("[1]").starts_with("not a JSON object"));
    }

    #[test]
    fn prometheus_values_are_read_as_written() {
        assert_eq!(prometheus_float("+Inf"), Some(f64::INFINITY));
        assert_eq!(prometheus_float("-Inf"), Some(f64::NEG_INFINITY));
        assert_eq!(prometheus_float("1e3"), Some(1000.0));
        assert_eq!(prometheus_float("infinity"), None);
        assert_eq!(prometheus_float(""), None);
    }
}
