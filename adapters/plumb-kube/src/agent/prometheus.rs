//! The member's Prometheus, read through instant queries: `GET {url}/api/v1/query?query=…&time=…`
//! at the pass's time, each within a timeout and a body size bound, each answer read by the same
//! parser as a replay's `signals.json` ([`crate::signals::parse_answer`]).
//!
//! The client only fetches: whether an answer has exactly one finite sample is the member
//! report's rule (plumb-core), so two samples or a NaN come back as samples. A query that could
//! not be answered comes back as [`Answer::Error`] with its cause (unreachable, timed out, the
//! HTTP status, Prometheus's `status: error`, or an unparsable body); the report names the
//! signal (`signals.demand: query failed: …`). Plain `http://` only: in-cluster Prometheus
//! is reached over the cluster network.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use plumb_model::{AdaptivePolicySpec, Timestamp};

use crate::signals::{Answer, SignalAnswers, parse_answer};

/// How long one query may take, the request and the body together.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read: a signal's query answers one sample, so 1 MiB is generous.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// An instant-query client of one Prometheus.
#[derive(Clone)]
pub struct Prometheus {
    base: String,
    client: Client<HttpConnector, Empty<Bytes>>,
    timeout: Duration,
    max_body: usize,
}

impl std::fmt::Debug for Prometheus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prometheus")
            .field("base", &self.base)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Prometheus {
    /// A client of the Prometheus at `url` (`http://host:port[/prefix]`); the error says why
    /// the URL is not usable.
    pub fn new(url: &str) -> Result<Prometheus, String> {
        let base = url.trim().trim_end_matches('/').to_owned();
        let rest = base
            .strip_prefix("http://")
            .ok_or_else(|| format!("--prometheus-url {url:?}: only http:// URLs are supported"))?;
        if rest.is_empty() || rest.starts_with('/') {
            return Err(format!("--prometheus-url {url:?}: no host"));
        }
        let probe = format!("{base}/api/v1/query");
        probe
            .parse::<http::Uri>()
            .map_err(|e| format!("--prometheus-url {url:?}: {e}"))?;
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(QUERY_TIMEOUT));
        Ok(Prometheus {
            base,
            client: Client::builder(TokioExecutor::new()).build(connector),
            timeout: QUERY_TIMEOUT,
            max_body: MAX_BODY_BYTES,
        })
    }

    /// The same client with another timeout (tests use a short one).
    pub fn with_timeout(mut self, timeout: Duration) -> Prometheus {
        self.timeout = timeout;
        self
    }

    /// The same client with another body bound (tests).
    pub fn with_max_body(mut self, bytes: usize) -> Prometheus {
        self.max_body = bytes;
        self
    }

    /// The answer of one instant query at `time`.
    pub async fn query(&self, query: &str, time: Timestamp) -> Answer {
        match tokio::time::timeout(self.timeout, self.fetch(query, time)).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => Answer::Error(e),
            Err(_) => Answer::Error(format!(
                "Prometheus did not answer within {}",
                seconds(self.timeout)
            )),
        }
    }

    /// Every signal `spec` configures, queried at `time` (one after another: a pass makes a
    /// handful of queries); keyed as a replay's `signals.json` (`demand`, …, `metrics.<name>`).
    pub async fn query_signals(&self, spec: &AdaptivePolicySpec, time: Timestamp) -> SignalAnswers {
        let mut answers = SignalAnswers::new();
        for (name, query) in signal_queries(spec) {
            let answer = self.query(&query, time).await;
            if let Answer::Error(e) = &answer {
                tracing::debug!(signal = %name, error = %e, "signal query failed");
            }
            answers.insert(name, answer);
        }
        answers
    }

    async fn fetch(&self, query: &str, time: Timestamp) -> Result<Answer, String> {
        let uri = format!(
            "{}/api/v1/query?query={}&time={}",
            self.base,
            encode(query),
            prometheus_time(time)
        );
        let request = http::Request::get(&uri)
            .header(http::header::ACCEPT, "application/json")
            .body(Empty::<Bytes>::new())
            .map_err(|e| format!("cannot build the request: {e}"))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| format!("Prometheus unreachable: {}", error_chain(&e)))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), self.max_body)
            .collect()
            .await
            .map_err(|e| format!("reading Prometheus's answer (HTTP {status}): {e}"))?
            .to_bytes();
        let value: serde_json::Value = match serde_json::from_slice(&body) {
            Ok(value) => value,
            Err(_) if !status.is_success() => {
                return Err(format!("Prometheus answered HTTP {status}"));
            }
            Err(e) => return Err(format!("Prometheus's answer is not JSON: {e}")),
        };
        // Prometheus answers 400/422/503 with a JSON `status: error` body: that error says more
        // than the status line.
        match parse_answer(&value) {
            Ok(answer @ Answer::Error(_)) => Ok(answer),
            Ok(answer) if status.is_success() => Ok(answer),
            Ok(_) => Err(format!("Prometheus answered HTTP {status}")),
            Err(_) if !status.is_success() => Err(format!("Prometheus answered HTTP {status}")),
            Err(e) => Err(format!("Prometheus's answer is unparsable: {e}")),
        }
    }
}

/// `(name, PromQL)` of every signal `spec` configures, in name order.
pub fn signal_queries(spec: &AdaptivePolicySpec) -> Vec<(String, String)> {
    let Some(s) = spec.signals.as_ref() else {
        return Vec::new();
    };
    let mut queries: Vec<(String, String)> = [
        ("demand", &s.demand),
        ("errorRate", &s.error_rate),
        ("latency", &s.latency),
        ("pressure", &s.pressure),
        ("saturation", &s.saturation),
    ]
    .into_iter()
    .filter_map(|(name, q)| Some((name.to_owned(), q.clone()?)))
    .collect();
    for metric in s.metrics.iter().flatten() {
        if let (Some(name), Some(query)) = (&metric.name, &metric.query) {
            queries.push((format!("metrics.{name}"), query.clone()));
        }
    }
    queries
}

/// The error and its causes, `: `-joined (hyper's top error alone says only "client error").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// `10s`, `0.2s`: a timeout as the error prints it.
fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// The `time` parameter: Unix seconds with milliseconds (`1764590395.123`).
fn prometheus_time(time: Timestamp) -> String {
    let millis = time.unix_nanos().div_euclid(1_000_000);
    format!("{}.{:03}", millis.div_euclid(1000), millis.rem_euclid(1000))
}

/// Percent-encodes a query parameter (RFC 3986 unreserved characters pass).
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
