//! The agent's Prometheus client against a real Prometheus (Debian's package, as `.ci/run`'s
//! apiserver step unpacks it): a recorded vLLM-like load (a request counter, a time-to-first-token
//! histogram, a queue gauge) is backfilled with `promtool tsdb create-blocks-from openmetrics`,
//! Prometheus serves it, and a policy's signals are asked at a time inside the recording, so
//! real PromQL (`rate`, `histogram_quantile`, `avg`) is evaluated and read as the member report
//! reads it.
//!
//! Ignored in plain runs: it needs `ALFRED_PROMTOOL` and `ALFRED_PROMETHEUS` (the binaries'
//! paths, exported by `.ci/run`'s `ensure_prometheus`).

use std::fmt::Write as _;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use plumb_kube::agent::prometheus::Prometheus;
use plumb_kube::signals::Answer;
use plumb_model::AdaptivePolicy;
use utc_time::Timestamp;

/// Seconds between recorded samples.
const STEP: i64 = 15;
/// Recorded samples per series (10 minutes).
const SAMPLES: i64 = 41;

/// A process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The recording from `start` (Unix seconds): every 15 s, 30 requests finish (2 per second),
/// 27 of them with a first token within 0.5 s and 3 within 1 s; 3 requests wait in the queue.
fn openmetrics(start: i64) -> String {
    let mut text = String::new();
    let at = |i: i64| start + i * STEP;
    text.push_str(
        "# HELP vllm:request_success Finished requests.\n# TYPE vllm:request_success counter\n",
    );
    for i in 0..SAMPLES {
        let _ = writeln!(
            text,
            "vllm:request_success_total{{model_name=\"llm\"}} {} {}",
            30 * i,
            at(i)
        );
    }
    text.push_str("# HELP vllm:time_to_first_token_seconds Time to first token.\n# TYPE vllm:time_to_first_token_seconds histogram\n");
    for i in 0..SAMPLES {
        for (le, count) in [("0.5", 27 * i), ("1.0", 30 * i), ("+Inf", 30 * i)] {
            let _ = writeln!(
                text,
                "vllm:time_to_first_token_seconds_bucket{{model_name=\"llm\",le=\"{le}\"}} {count} {}",
                at(i)
            );
        }
        let _ = writeln!(
            text,
            "vllm:time_to_first_token_seconds_sum{{model_name=\"llm\"}} {} {}",
            10 * i,
            at(i)
        );
        let _ = writeln!(
            text,
            "vllm:time_to_first_token_seconds_count{{model_name=\"llm\"}} {} {}",
            30 * i,
            at(i)
        );
    }
    text.push_str("# HELP vllm:num_requests_waiting Waiting requests.\n# TYPE vllm:num_requests_waiting gauge\n");
    for i in 0..SAMPLES {
        let _ = writeln!(
            text,
            "vllm:num_requests_waiting{{model_name=\"llm\"}} 3 {}",
            at(i)
        );
    }
    text.push_str("# EOF\n");
    text
}

fn tool(var: &str) -> String {
    std::env::var(var)
        .unwrap_or_else(|_| panic!("{var} is not set (.ci/run's ensure_prometheus exports it)"))
}

/// Backfills the recording into `dir/data` and starts Prometheus on it; returns the process
/// and its URL once it answers.
async fn serve_recording(dir: &Path, start: i64) -> (Killed, String) {
    std::fs::create_dir_all(dir).unwrap();
    let input = dir.join("recording.om");
    std::fs::write(&input, openmetrics(start)).unwrap();
    let out = Command::new(tool("ALFRED_PROMTOOL"))
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&input)
        .arg(dir.join("data"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config = dir.join("prometheus.yml");
    std::fs::write(&config, "global:\n  scrape_interval: 1m\n").unwrap();
    let port = free_port();
    let process = Killed(
        Command::new(tool("ALFRED_PROMETHEUS"))
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("http://127.0.0.1:{port}");
    let client = Prometheus::new(&url).unwrap();
    let probe = Timestamp::from_unix_secs(start + 5 * 60);
    for _ in 0..300 {
        if let Answer::Samples(s) = client.query("vllm:num_requests_waiting", probe).await
            && !s.is_empty()
        {
            return (process, url);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("Prometheus did not serve the recording within 30 s");
}

fn one_value(answer: &Answer) -> f64 {
    match answer {
        Answer::Samples(s) if s.len() == 1 => s[0].value,
        other => panic!("not one sample: {other:?}"),
    }
}

#[tokio::test]
#[ignore = "needs Prometheus: ALFRED_PROMTOOL and ALFRED_PROMETHEUS (.ci/run)"]
async fn live_prometheus_evaluates_a_policys_signals_over_a_backfilled_recording() {
    let dir = std::env::temp_dir().join(format!("plumb-prom-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // Twenty minutes ago, on a whole minute: inside the head's reach and the retention.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let start = i64::try_from(now).unwrap() / 60 * 60 - 20 * 60;
    let (_prometheus, url) = serve_recording(&dir, start).await;
    let policy = AdaptivePolicy::from_yaml(
        r#"metadata: {name: llm, namespace: serving}
spec:
  workload: {name: llm}
  clusters: [{name: east, maxReplicas: 4}]
  signals:
    demand: sum(rate(vllm:request_success_total{model_name="llm"}[2m]))
    pressure: avg(vllm:num_requests_waiting{model_name="llm"})
    latency: histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{model_name="llm"}[2m])))
    latencySLO: 2
    saturation: vllm:num_requests_waiting
    saturationThreshold: "5"
"#,
    )
    .unwrap();
    let client = Prometheus::new(&url).unwrap();
    let at = Timestamp::from_unix_secs(start + 8 * 60);
    let answers = client.query_signals(&policy.spec, at).await;
    // rate: 30 requests per 15 s.
    let demand = one_value(&answers["demand"]);
    assert!((demand - 2.0).abs() < 1e-9, "demand {demand}");
    // histogram_quantile: rank 0.95 × 2/s = 1.9 falls halfway into the (0.5, 1] bucket,
    // which holds the rates 1.8 to 2.0.
    let latency = one_value(&answers["latency"]);
    assert!((latency - 0.75).abs() < 1e-9, "latency {latency}");
    assert_eq!(one_value(&answers["pressure"]), 3.0);
    // Each sample is read at the asked time, as the report's staleness rule needs.
    let Answer::Samples(samples) = &answers["saturation"] else {
        panic!("saturation: {:?}", answers["saturation"]);
    };
    assert_eq!(samples[0].time_ms, (start + 8 * 60) * 1000);
    // A query Prometheus refuses comes back as its error, naming the cause.
    let bad = client.query("sum(rate(", at).await;
    assert!(
        matches!(&bad, Answer::Error(e) if e.contains("parse")),
        "{bad:?}"
    );
    // Before the recording there is nothing: an empty vector, which the report refuses.
    let before = client
        .query(
            "vllm:num_requests_waiting",
            Timestamp::from_unix_secs(start - 3600),
        )
        .await;
    assert_eq!(before, Answer::Samples(vec![]));
    let _ = std::fs::remove_dir_all(&dir);
}
