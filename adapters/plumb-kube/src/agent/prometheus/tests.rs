//! The client against a scripted fake Prometheus (axum on a loopback port): what each kind of
//! answer becomes. No wall-clock assertions: the timeout case only checks the error's text.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::routing::get;

use super::*;

/// What the fake answers to a query text: a status and a body, or never.
#[derive(Clone)]
enum Script {
    Answer(StatusCode, &'static str),
    Never,
}

#[derive(Clone, Default)]
struct Fake {
    scripts: Arc<BTreeMap<&'static str, Script>>,
    seen: Arc<Mutex<Vec<String>>>,
}

async fn answer(State(fake): State<Fake>, RawQuery(raw): RawQuery) -> (StatusCode, String) {
    let raw = raw.unwrap_or_default();
    fake.seen.lock().unwrap().push(raw.clone());
    let query = raw
        .split('&')
        .find_map(|p| p.strip_prefix("query="))
        .map(decode)
        .unwrap_or_default();
    match fake.scripts.get(query.as_str()) {
        Some(Script::Answer(status, body)) => (*status, (*body).to_owned()),
        Some(Script::Never) => std::future::pending().await,
        None => (StatusCode::NOT_FOUND, "no script".to_owned()),
    }
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            out.push(u8::from_str_radix(&text[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// Serves `scripts` on a loopback port; returns the base URL and the query strings seen.
async fn serve(scripts: Vec<(&'static str, Script)>) -> (String, Arc<Mutex<Vec<String>>>) {
    let fake = Fake {
        scripts: Arc::new(scripts.into_iter().collect()),
        seen: Arc::default(),
    };
    let seen = fake.seen.clone();
    let app = Router::new()
        .route("/prom/api/v1/query", get(answer))
        .with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}/prom/"), seen)
}

const ONE: &str = r#"{"status":"success","data":{"resultType":"vector","result":[
    {"metric":{"model_name":"llama"},"value":[1764590395.5,"34.5"]}]}}"#;
const TWO: &str = r#"{"status":"success","data":{"resultType":"vector","result":[
    {"metric":{"pod":"a"},"value":[1764590395,"1"]},{"metric":{"pod":"b"},"value":[1764590395,"2"]}]}}"#;
const NAN: &str = r#"{"status":"success","data":{"resultType":"vector","result":[
    {"metric":{},"value":[1764590395,"NaN"]}]}}"#;
const BAD_DATA: &str =
    r#"{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected"}"#;

fn at() -> Timestamp {
    Timestamp::from_unix_nanos(1_764_590_395_123_456_789)
}

fn samples(answer: &Answer) -> Vec<f64> {
    match answer {
        Answer::Samples(s) => s.iter().map(|s| s.value).collect(),
        Answer::Error(e) => panic!("expected samples, got the error {e}"),
    }
}

fn error(answer: &Answer) -> &str {
    match answer {
        Answer::Error(e) => e,
        Answer::Samples(s) => panic!("expected an error, got {s:?}"),
    }
}

#[tokio::test]
async fn one_sample_is_read_with_its_time_and_the_query_carries_the_pass_time() {
    let (url, seen) = serve(vec![(
        "sum(rate(x{a=\"b c\"}[1m]))",
        Script::Answer(StatusCode::OK, ONE),
    )])
    .await;
    let prometheus = Prometheus::new(&url).unwrap();
    let answer = prometheus.query("sum(rate(x{a=\"b c\"}[1m]))", at()).await;
    let Answer::Samples(s) = &answer else {
        panic!("{answer:?}")
    };
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].value, 34.5);
    assert_eq!(s[0].time_ms, 1_764_590_395_500);
    assert_eq!(s[0].labels["model_name"], "llama");
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        ["query=sum%28rate%28x%7Ba%3D%22b%20c%22%7D%5B1m%5D%29%29&time=1764590395.123"]
    );
}

#[tokio::test]
async fn two_samples_and_nan_come_back_as_samples_for_the_report_to_judge() {
    let (url, _) = serve(vec![
        ("two", Script::Answer(StatusCode::OK, TWO)),
        ("nan", Script::Answer(StatusCode::OK, NAN)),
    ])
    .await;
    let prometheus = Prometheus::new(&url).unwrap();
    assert_eq!(samples(&prometheus.query("two", at()).await), [1.0, 2.0]);
    let nan = samples(&prometheus.query("nan", at()).await);
    assert_eq!(nan.len(), 1);
    assert!(nan[0].is_nan());
}

#[tokio::test]
async fn prometheus_errors_keep_their_type_and_text_whatever_the_http_status() {
    let (url, _) = serve(vec![
        ("bad400", Script::Answer(StatusCode::BAD_REQUEST, BAD_DATA)),
        ("bad200", Script::Answer(StatusCode::OK, BAD_DATA)),
        (
            "down",
            Script::Answer(StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
        ),
        ("html", Script::Answer(StatusCode::OK, "<html>")),
        (
            "shape",
            Script::Answer(
                StatusCode::OK,
                r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#,
            ),
        ),
        ("oddok", Script::Answer(StatusCode::BAD_GATEWAY, ONE)),
    ])
    .await;
    let prometheus = Prometheus::new(&url).unwrap();
    for q in ["bad400", "bad200"] {
        assert_eq!(
            error(&prometheus.query(q, at()).await),
            "bad_data: 1:5: parse error: unexpected"
        );
    }
    assert_eq!(
        error(&prometheus.query("down", at()).await),
        "Prometheus answered HTTP 503 Service Unavailable"
    );
    assert_eq!(
        error(&prometheus.query("oddok", at()).await),
        "Prometheus answered HTTP 502 Bad Gateway"
    );
    assert!(
        error(&prometheus.query("html", at()).await)
            .starts_with("Prometheus's answer is not JSON: "),
    );
    assert!(
        error(&prometheus.query("shape", at()).await)
            .starts_with("Prometheus's answer is unparsable: data.resultType: \"matrix\""),
    );
}

#[tokio::test]
async fn an_unreachable_prometheus_says_so() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let prometheus = Prometheus::new(&format!("http://{address}")).unwrap();
    let e = prometheus.query("up", at()).await;
    assert!(error(&e).starts_with("Prometheus unreachable: "), "{e:?}");
    assert!(error(&e).contains("onnect"), "the cause is kept: {e:?}");
}

#[tokio::test]
async fn a_prometheus_that_never_answers_times_out() {
    let (url, _) = serve(vec![("slow", Script::Never)]).await;
    let prometheus = Prometheus::new(&url)
        .unwrap()
        .with_timeout(Duration::from_millis(200));
    assert_eq!(
        error(&prometheus.query("slow", at()).await),
        "Prometheus did not answer within 0.2s"
    );
}

#[tokio::test]
async fn an_answer_over_the_size_bound_is_refused() {
    let (url, _) = serve(vec![("big", Script::Answer(StatusCode::OK, TWO))]).await;
    let prometheus = Prometheus::new(&url).unwrap().with_max_body(32);
    let e = prometheus.query("big", at()).await;
    assert!(
        error(&e).starts_with("reading Prometheus's answer (HTTP 200 OK): "),
        "{e:?}"
    );
}

#[tokio::test]
async fn every_configured_signal_is_queried_under_its_replay_name() {
    let (url, _) = serve(vec![
        ("d", Script::Answer(StatusCode::OK, ONE)),
        ("p", Script::Answer(StatusCode::OK, TWO)),
        ("m", Script::Answer(StatusCode::OK, NAN)),
    ])
    .await;
    let spec: AdaptivePolicySpec = serde_json::from_str(
        r#"{"signals": {"demand": "d", "pressure": "p", "metrics": [{"name": "queue", "query": "m"}]}}"#,
    )
    .unwrap();
    let answers = Prometheus::new(&url)
        .unwrap()
        .query_signals(&spec, at())
        .await;
    assert_eq!(
        answers.keys().collect::<Vec<_>>(),
        ["demand", "metrics.queue", "pressure"]
    );
    assert_eq!(samples(&answers["pressure"]), [1.0, 2.0]);
}

#[test]
fn only_http_urls_with_a_host_are_taken() {
    assert!(Prometheus::new("http://prometheus.monitoring:9090").is_ok());
    assert_eq!(
        Prometheus::new("https://p:9090").unwrap_err(),
        "--prometheus-url \"https://p:9090\": only http:// URLs are supported"
    );
    assert!(
        Prometheus::new("http:///x")
            .unwrap_err()
            .ends_with("no host")
    );
    assert!(Prometheus::new("http://a b").is_err());
}

#[test]
fn the_time_parameter_has_milliseconds() {
    assert_eq!(prometheus_time(Timestamp::from_unix_secs(5)), "5.000");
    assert_eq!(prometheus_time(at()), "1764590395.123");
}
