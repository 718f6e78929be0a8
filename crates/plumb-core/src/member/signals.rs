//! Reading the signals: a configured signal counts only when its query returned exactly one
//! finite sample; anything else (no sample, several, NaN or ±Inf, a failed query, no result at
//! all) leaves that signal out of the report and becomes one error naming it, so `Ready` turns
//! False while the rest of the report still counts.

use std::collections::BTreeMap;

use plumb_model::Sample;
use plumb_model::spec::Signals;

use super::observation::{QueryResult, SignalSamples};

/// The signals read, and one error per configured signal that could not be.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadSignals {
    /// `demand`.
    pub demand: Option<Sample>,
    /// `pressure`.
    pub pressure: Option<Sample>,
    /// `latency`.
    pub latency: Option<Sample>,
    /// `errorRate`.
    pub error_rate: Option<Sample>,
    /// `saturation`.
    pub saturation: Option<Sample>,
    /// `metrics[]` read, by name.
    pub metrics: BTreeMap<String, Sample>,
    /// `signals.<name>: <why>` for each configured signal not read, in field order.
    pub errors: Vec<String>,
}

/// Reads every signal `signals` configures from `samples`; unconfigured answers are ignored.
pub fn read_signals(signals: Option<&Signals>, samples: &SignalSamples) -> ReadSignals {
    let mut out = ReadSignals::default();
    let Some(s) = signals else {
        return out;
    };
    let mut one = |field: &str, configured: bool, result: Option<&QueryResult>| {
        if !configured {
            return None;
        }
        match single_sample(result) {
            Ok(sample) => Some(sample),
            Err(why) => {
                out.errors.push(format!("signals.{field}: {why}"));
                None
            }
        }
    };
    let demand = one("demand", s.demand.is_some(), samples.demand.as_ref());
    let pressure = one("pressure", s.pressure.is_some(), samples.pressure.as_ref());
    let latency = one("latency", s.latency.is_some(), samples.latency.as_ref());
    let error_rate = one(
        "errorRate",
        s.error_rate.is_some(),
        samples.error_rate.as_ref(),
    );
    let saturation = one(
        "saturation",
        s.saturation.is_some(),
        samples.saturation.as_ref(),
    );
    let mut metrics = BTreeMap::new();
    for m in s.metrics.as_deref().unwrap_or_default() {
        let Some(name) = m.name.as_deref() else {
            continue;
        };
        if let Some(sample) = one(&format!("metrics[{name}]"), true, samples.metrics.get(name)) {
            metrics.insert(name.to_owned(), sample);
        }
    }
    out.demand = demand;
    out.pressure = pressure;
    out.latency = latency;
    out.error_rate = error_rate;
    out.saturation = saturation;
    out.metrics = metrics;
    out
}

/// The one finite sample of a query result, or why there is none.
pub fn single_sample(result: Option<&QueryResult>) -> Result<Sample, String> {
    match result {
        None => Err("no query result".to_owned()),
        Some(QueryResult::Error(e)) => Err(format!("query failed: {e}")),
        Some(QueryResult::Samples(samples)) => match samples.as_slice() {
            [] => Err("query returned no sample".to_owned()),
            [s] if s.value.is_finite() => Ok(Sample {
                value: s.value,
                time: s.time,
            }),
            [s] => Err(format!("query returned {}", s.value)),
            many => Err(format!(
                "query returned {} samples, expected exactly one",
                many.len()
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use plumb_model::Timestamp;

    use super::*;
    use crate::member::observation::RawSample;

    fn t() -> Timestamp {
        "2026-12-01T12:00:00Z".parse().expect("time")
    }

    fn samples(values: &[f64]) -> QueryResult {
        QueryResult::Samples(
            values
                .iter()
                .map(|&value| RawSample { value, time: t() })
                .collect(),
        )
    }

    #[test]
    fn exactly_one_finite_sample_is_read_and_anything_else_is_an_error() {
        assert_eq!(
            single_sample(Some(&samples(&[3.5]))),
            Ok(Sample {
                value: 3.5,
                time: t()
            })
        );
        assert_eq!(
            single_sample(Some(&samples(&[1.0, 2.0]))),
            Err("query returned 2 samples, expected exactly one".to_owned())
        );
        assert_eq!(
            single_sample(Some(&samples(&[]))),
            Err("query returned no sample".to_owned())
        );
        assert_eq!(
            single_sample(Some(&samples(&[f64::NAN]))),
            Err("query returned NaN".to_owned())
        );
        assert_eq!(
            single_sample(Some(&samples(&[f64::INFINITY]))),
            Err("query returned inf".to_owned())
        );
        assert_eq!(
            single_sample(Some(&QueryResult::Error("connection refused".into()))),
            Err("query failed: connection refused".to_owned())
        );
        assert_eq!(single_sample(None), Err("no query result".to_owned()));
    }

    #[test]
    fn only_configured_signals_are_read_and_each_failure_names_its_signal() {
        let signals = Signals {
            demand: Some("d".into()),
            pressure: Some("p".into()),
            ..Signals::default()
        };
        let answers = SignalSamples {
            demand: Some(samples(&[10.0])),
            pressure: Some(samples(&[1.0, 2.0])),
            latency: Some(samples(&[9.0])),
            ..SignalSamples::default()
        };
        let read = read_signals(Some(&signals), &answers);
        assert_eq!(read.demand.map(|s| s.value), Some(10.0));
        assert_eq!(read.pressure, None);
        assert_eq!(read.latency, None, "latency is not configured");
        assert_eq!(
            read.errors,
            vec!["signals.pressure: query returned 2 samples, expected exactly one"]
        );
        assert_eq!(read_signals(None, &answers), ReadSignals::default());
    }
}
