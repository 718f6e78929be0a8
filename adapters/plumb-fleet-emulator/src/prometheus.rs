//! A scripted Prometheus for the live fleet: `GET /api/v1/query?query=Q` answers an instant
//! vector of one sample whose value the test (or the load script of `cargo xtask plumb-fleet`)
//! set for `Q`, or an error answer for a query it marked failing, or an empty vector for a
//! query it never set. The sample's time is the request's `time` parameter when given (as
//! Prometheus evaluates at it), else now.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Query, State};
use axum::routing::get;
use serde_json::{Value, json};

/// What one query answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Scripted {
    /// One sample with this value (NaN allowed: Prometheus writes `"NaN"`).
    Value(f64),
    /// Several samples (a query not scoped to one model).
    Values(Vec<f64>),
    /// `status: error` with this message.
    Error(String),
}

/// The script, shared with the server.
#[derive(Debug, Clone, Default)]
pub struct FakePrometheus {
    answers: Arc<Mutex<BTreeMap<String, Scripted>>>,
}

impl FakePrometheus {
    /// An empty script: every query answers an empty vector.
    pub fn new() -> FakePrometheus {
        FakePrometheus::default()
    }

    /// From now on `query` answers `answer`.
    pub fn set(&self, query: &str, answer: Scripted) {
        self.lock().insert(query.to_owned(), answer);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Scripted>> {
        // A panicking test thread must not wedge the others' answers.
        self.answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The answer body for `query` at `time` (Unix seconds).
    pub fn answer(&self, query: &str, time: f64) -> Value {
        let sample = |v: f64| {
            let text = if v.is_nan() {
                "NaN".to_owned()
            } else if v.is_infinite() {
                if v > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
            } else {
                v.to_string()
            };
            json!({"metric": {}, "value": [time, text]})
        };
        match self.lock().get(query).cloned() {
            None => json!({"status": "success", "data": {"resultType": "vector", "result": []}}),
            Some(Scripted::Value(v)) => json!({"status": "success",
                "data": {"resultType": "vector", "result": [sample(v)]}}),
            Some(Scripted::Values(vs)) => json!({"status": "success",
                "data": {"resultType": "vector", "result": vs.into_iter().map(sample).collect::<Vec<_>>()}}),
            Some(Scripted::Error(e)) => {
                json!({"status": "error", "errorType": "execution", "error": e})
            }
        }
    }

    /// Serves the script on `127.0.0.1` (a free port); returns the base URL for
    /// `--prometheus-url`. The server runs until the runtime stops.
    pub async fn serve(&self) -> std::io::Result<String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address: SocketAddr = listener.local_addr()?;
        let router = Router::new()
            .route("/api/v1/query", get(query))
            .with_state(self.clone());
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::error!(error = %e, "the fake Prometheus stopped");
            }
        });
        Ok(format!("http://{address}"))
    }
}

async fn query(
    State(script): State<FakePrometheus>,
    Query(params): Query<BTreeMap<String, String>>,
) -> axum::Json<Value> {
    let q = params.get("query").map(String::as_str).unwrap_or_default();
    let time = params
        .get("time")
        .and_then(|t| t.parse::<f64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64()
        });
    axum::Json(script.answer(q, time))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_script_entry_answers_as_prometheus_would() {
        let p = FakePrometheus::new();
        p.set("demand", Scripted::Value(42.5));
        p.set("nan", Scripted::Value(f64::NAN));
        p.set("two", Scripted::Values(vec![1.0, 2.0]));
        p.set("bad", Scripted::Error("boom".into()));
        assert_eq!(
            p.answer("demand", 100.0)["data"]["result"][0]["value"],
            json!([100.0, "42.5"])
        );
        assert_eq!(p.answer("nan", 1.0)["data"]["result"][0]["value"][1], "NaN");
        assert_eq!(
            p.answer("two", 1.0)["data"]["result"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        assert_eq!(p.answer("bad", 1.0)["status"], "error");
        assert_eq!(p.answer("unset", 1.0)["data"]["result"], json!([]));
    }

    #[tokio::test]
    async fn it_answers_over_http_at_the_asked_time() {
        let p = FakePrometheus::new();
        p.set("up", Scripted::Value(1.0));
        let url = p.serve().await.unwrap();
        let address = url.trim_start_matches("http://");
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(address).await.unwrap();
        s.write_all(
            b"GET /api/v1/query?query=up&time=1700000000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        assert!(out.contains(r#""value":[1700000000.0,"1"]"#), "{out}");
    }
}
