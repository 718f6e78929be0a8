//! A KEDA-shaped client against `plumb scaler`'s gRPC service on loopback, in-process: the
//! calls KEDA makes for an `external-push` trigger (`StreamIsActive`, `GetMetricSpec`,
//! `GetMetrics`, `IsActive`), with the trigger metadata KEDA passes, for every kind of floor
//! (normal, capped, shadow, expired, fenced, unknown) and for bad requests.
//!
//! Time is tokio's paused clock: the scaler's clock follows it, so the 30-second re-send and
//! an intent's expiry are observed at their exact virtual instants without waiting.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use hyper_util::rt::TokioIo;
use plumb_core::quorum::LeaseRecord;
use plumb_model::AdaptivePolicy;
use plumb_scaler::clock::TokioClock;
use plumb_scaler::floor::{CachedPolicy, FloorCache, PolicyCopy, PolicyKey, Snapshot};
use plumb_scaler::proto::external_scaler_client::ExternalScalerClient;
use plumb_scaler::proto::{GetMetricsRequest, IsActiveResponse, ScaledObjectRef};
use plumb_scaler::server::{serve, serve_incoming};
use plumb_scaler::service::Scaler;
use tokio::net::TcpListener;
use tokio::time::{Instant, timeout};
use tonic::Code;
use tonic::transport::{
    Certificate, Channel, ClientTlsConfig, Endpoint, Identity, ServerTlsConfig,
};
use utc_time::Timestamp;

/// The scaler's clock at the start of every test.
const START: &str = "2026-12-07T12:00:00Z";

fn at(text: &str) -> Timestamp {
    Timestamp::parse_rfc3339(text).unwrap()
}

/// A member copy of policy `name`: auto mode, an intent of 8 replicas by hub `east/agent-0`
/// that expires at `expires`, this member (`east`) capped at `max`.
fn copy(name: &str, mode: &str, hub: &str, expires: &str, max: u32) -> (PolicyKey, CachedPolicy) {
    let yaml = format!(
        "metadata: {{name: {name}, namespace: serving}}
spec:
  mode: {mode}
  workload: {{name: {name}}}
  clusters: [{{name: east, maxReplicas: {max}}}]
status:
  intent: {{replicas: 8, expires: '{expires}', hub: {hub}}}
"
    );
    let policy = AdaptivePolicy::from_yaml(&yaml).unwrap();
    (
        PolicyKey::new("serving", name),
        CachedPolicy::Readable(PolicyCopy::from_policy(&policy, "east")),
    )
}

/// The member's `plumb-hub` Lease, held by `east/agent-0`, renewed at START for 15 minutes
/// (long, so only the intents' expiries change answers with time here).
fn hub_lease() -> LeaseRecord {
    LeaseRecord {
        holder: Some("east/agent-0".into()),
        acquire_time: Some(at(START)),
        renew_time: Some(at(START)),
        lease_duration_seconds: 900,
        transitions: 0,
    }
}

/// One policy per kind of floor.
fn fleet_snapshot() -> Snapshot {
    let later = "2026-12-07T12:05:00Z";
    Snapshot {
        policies: [
            copy("normal", "auto", "east/agent-0", later, 20),
            copy("capped", "auto", "east/agent-0", later, 5),
            copy("shadow", "shadow", "east/agent-0", later, 20),
            copy(
                "expired",
                "auto",
                "east/agent-0",
                "2026-12-07T11:59:00Z",
                20,
            ),
            copy("fenced", "auto", "west/agent-3", later, 20),
            (
                PolicyKey::new("serving", "garbled"),
                CachedPolicy::Unreadable("spec.mode: unknown variant `fast`".into()),
            ),
        ]
        .into(),
        lease: Some(hub_lease()),
        policies_synced: true,
        lease_synced: true,
    }
}

fn scaler(cache: FloorCache) -> Scaler {
    Scaler::new(cache, Arc::new(TokioClock::starting_at(at(START))))
}

/// Starts the scaler on a loopback TCP port with `cache` (and TLS when given); returns its
/// address. For tests in real time: under a paused clock, tokio may jump time ahead while a
/// loopback packet is still in the kernel.
async fn start_tcp(cache: FloorCache, tls: Option<ServerTlsConfig>) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, scaler(cache), tls, std::future::pending()));
    address
}

/// A client of the scaler on a loopback TCP port.
async fn start(cache: FloorCache) -> ExternalScalerClient<Channel> {
    let address = start_tcp(cache, None).await;
    ExternalScalerClient::connect(format!("http://{address}"))
        .await
        .unwrap()
}

/// A client of the scaler over an in-memory pipe: the same HTTP/2 and gRPC as over TCP, but
/// every byte's arrival is a tokio wake-up, so tests in paused time see it before time moves.
async fn start_in_memory(cache: FloorCache) -> ExternalScalerClient<Channel> {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let incoming = futures::stream::iter([Ok::<_, std::io::Error>(server_io)])
        .chain(futures::stream::pending());
    tokio::spawn(serve_incoming(
        incoming,
        scaler(cache),
        None,
        std::future::pending(),
    ));
    let mut client_io = Some(client_io);
    let channel = Endpoint::from_static("http://plumb-scaler.plumb:6000")
        .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
            let io = client_io.take();
            async move {
                io.map(TokioIo::new)
                    .ok_or_else(|| std::io::Error::other("the pipe is one connection"))
            }
        }))
        .await
        .unwrap();
    ExternalScalerClient::new(channel)
}

/// What KEDA sends for a ScaledObject `llama` in `serving` whose trigger names `policy`.
fn trigger(policy: &str) -> ScaledObjectRef {
    ScaledObjectRef {
        name: "llama".into(),
        namespace: "serving".into(),
        scaler_metadata: HashMap::from([
            ("scalerAddress".into(), "plumb-scaler.plumb:6000".into()),
            ("policy".into(), policy.into()),
        ]),
    }
}

fn metrics_request(policy: &str) -> GetMetricsRequest {
    GetMetricsRequest {
        scaled_object_ref: Some(trigger(policy)),
        metric_name: format!("plumb-floor-{policy}"),
    }
}

#[tokio::test]
async fn get_metrics_serves_the_fenced_floor_for_each_kind_of_policy() {
    let mut client = start(FloorCache::with_snapshot(fleet_snapshot())).await;
    let cases = [
        ("normal", 8, true),
        ("capped", 5, true),
        ("shadow", 0, false),
        ("expired", 0, false),
        ("fenced", 0, false),
        ("garbled", 0, false),
    ];
    for (policy, floor, active) in cases {
        let response = client.get_metrics(metrics_request(policy)).await.unwrap();
        let values = response.into_inner().metric_values;
        assert_eq!(values.len(), 1, "{policy}");
        assert_eq!(values[0].metric_name, format!("plumb-floor-{policy}"));
        assert_eq!(values[0].metric_value, floor, "{policy}");
        assert_eq!(values[0].metric_value_float, floor as f64, "{policy}");
        let is_active = client.is_active(trigger(policy)).await.unwrap();
        assert_eq!(is_active.into_inner().result, active, "{policy}");
    }
}

#[tokio::test]
async fn the_metric_spec_is_one_constant_metric_with_target_1_even_for_an_unknown_policy() {
    let mut client = start(FloorCache::with_snapshot(fleet_snapshot())).await;
    for policy in ["normal", "not-here"] {
        let specs = client.get_metric_spec(trigger(policy)).await.unwrap();
        let specs = specs.into_inner().metric_specs;
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].metric_name, format!("plumb-floor-{policy}"));
        assert_eq!(specs[0].target_size, 1);
        assert_eq!(specs[0].target_size_float, 1.0);
    }
}

#[tokio::test]
async fn an_unknown_policy_is_not_found_naming_it_and_the_scaler_keeps_serving() {
    let mut client = start(FloorCache::with_snapshot(fleet_snapshot())).await;
    let status = client
        .get_metrics(metrics_request("missing"))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    assert_eq!(
        status.message(),
        "AdaptivePolicy serving/missing: not found in this cluster"
    );
    let status = client.is_active(trigger("missing")).await.unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    let status = client
        .stream_is_active(trigger("missing"))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    let still = client.get_metrics(metrics_request("normal")).await.unwrap();
    assert_eq!(still.into_inner().metric_values[0].metric_value, 8);
}

#[tokio::test]
async fn bad_requests_are_invalid_arguments_naming_the_field() {
    let mut client = start(FloorCache::with_snapshot(fleet_snapshot())).await;
    let mut no_policy = trigger("normal");
    no_policy.scaler_metadata.remove("policy");
    let mut bad_name = trigger("Normal_1");
    bad_name.name = "x".into();
    let wrong_metric = GetMetricsRequest {
        metric_name: "plumb-floor-other".into(),
        ..metrics_request("normal")
    };
    let no_object = GetMetricsRequest {
        scaled_object_ref: None,
        metric_name: "plumb-floor-normal".into(),
    };
    let expected = [
        client
            .get_metrics(GetMetricsRequest {
                scaled_object_ref: Some(no_policy.clone()),
                metric_name: String::new(),
            })
            .await,
        client.get_metrics(wrong_metric).await,
        client.get_metrics(no_object).await,
    ];
    let messages: Vec<String> = expected
        .into_iter()
        .map(|r| {
            let status = r.unwrap_err();
            assert_eq!(status.code(), Code::InvalidArgument);
            status.message().to_owned()
        })
        .collect();
    assert_eq!(
        messages,
        [
            "scalerMetadata.policy: required (the AdaptivePolicy's name) in the trigger of ScaledObject serving/llama",
            "metricName: \"plumb-floor-other\" is not the metric of policy serving/normal (plumb-floor-normal)",
            "scaledObjectRef: required",
        ]
    );
    for status in [
        client.is_active(bad_name.clone()).await.unwrap_err(),
        client.get_metric_spec(bad_name.clone()).await.unwrap_err(),
        client.stream_is_active(no_policy).await.unwrap_err(),
    ] {
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn before_the_first_list_answers_are_unavailable_and_a_stream_waits_for_it() {
    let cache = FloorCache::new();
    let mut client = start_in_memory(cache.clone()).await;
    let status = client
        .get_metrics(metrics_request("normal"))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    let mut stream = client
        .stream_is_active(trigger("normal"))
        .await
        .unwrap()
        .into_inner();
    let nothing = timeout(Duration::from_secs(120), stream.message()).await;
    assert!(
        nothing.is_err(),
        "no answer before the watchers listed: {nothing:?}"
    );
    let snapshot = fleet_snapshot();
    cache.update(|s| *s = snapshot);
    let first = stream.message().await.unwrap();
    assert_eq!(first, Some(IsActiveResponse { result: true }));
}

/// The next message of the stream and the virtual seconds it took.
async fn next_push(stream: &mut tonic::Streaming<IsActiveResponse>) -> (bool, u64) {
    let asked = Instant::now();
    let message = stream
        .message()
        .await
        .unwrap()
        .expect("the stream stays open");
    (message.result, asked.elapsed().as_secs())
}

#[tokio::test(start_paused = true)]
async fn stream_is_active_pushes_at_once_on_a_change_and_resends_every_30_seconds() {
    let cache = FloorCache::with_snapshot(fleet_snapshot());
    let mut client = start_in_memory(cache.clone()).await;
    let mut stream = client
        .stream_is_active(trigger("normal"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        next_push(&mut stream).await,
        (true, 0),
        "the answer when the stream opens"
    );

    // Unchanged: silent for 30 s, then re-sent.
    let quiet = timeout(Duration::from_secs(29), stream.message()).await;
    assert!(quiet.is_err(), "nothing before the re-send: {quiet:?}");
    assert_eq!(
        next_push(&mut stream).await,
        (true, 1),
        "re-sent 30 s after the last push"
    );

    // A copy switched to shadow: pushed at once.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (key, shadow) = copy(
        "normal",
        "shadow",
        "east/agent-0",
        "2026-12-07T12:05:00Z",
        20,
    );
    cache.put_policy(key.clone(), shadow);
    assert_eq!(next_push(&mut stream).await, (false, 0));
    assert_eq!(
        next_push(&mut stream).await,
        (false, 30),
        "false is re-sent too"
    );

    // Back to auto with an intent expiring 10 s from now (START + 65 s + 10 s): true at once,
    // then false when the intent expires, not at the next re-send.
    let (_, auto) = copy("normal", "auto", "east/agent-0", "2026-12-07T12:01:15Z", 20);
    cache.put_policy(key.clone(), auto);
    assert_eq!(next_push(&mut stream).await, (true, 0));
    assert_eq!(
        next_push(&mut stream).await,
        (false, 10),
        "pushed when the intent expired"
    );

    // A hub change fences the floor: the Lease now names another holder.
    let (_, renewed) = copy("normal", "auto", "east/agent-0", "2026-12-07T12:05:00Z", 20);
    cache.put_policy(key.clone(), renewed);
    assert_eq!(next_push(&mut stream).await, (true, 0));
    cache.update(|s| s.lease.as_mut().unwrap().holder = Some("west/agent-3".into()));
    assert_eq!(next_push(&mut stream).await, (false, 0));

    // The policy deleted: false (already false, so only the re-send comes, 30 s later).
    cache.remove_policy(&key);
    assert_eq!(next_push(&mut stream).await, (false, 30));
}

#[tokio::test(start_paused = true)]
async fn a_reconnected_stream_gets_the_current_answer_at_once() {
    let cache = FloorCache::with_snapshot(fleet_snapshot());
    let mut client = start_in_memory(cache.clone()).await;
    let mut stream = client
        .stream_is_active(trigger("normal"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(next_push(&mut stream).await, (true, 0));
    drop(stream);
    cache.update(|s| s.lease = None);
    let mut again = client
        .stream_is_active(trigger("normal"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(next_push(&mut again).await, (false, 0));
}

#[tokio::test]
async fn with_tls_a_client_trusting_the_ca_gets_the_floor() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let read = |name: &str| std::fs::read(data.join(name)).unwrap();
    let identity = Identity::from_pem(read("test-cert.pem"), read("test-key.pem"));
    let tls = ServerTlsConfig::new().identity(identity);
    let address = start_tcp(FloorCache::with_snapshot(fleet_snapshot()), Some(tls)).await;
    let client_tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read("test-ca.pem")))
        .domain_name("plumb-scaler.plumb.svc");
    let channel = Endpoint::from_shared(format!("https://{address}"))
        .unwrap()
        .tls_config(client_tls)
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = ExternalScalerClient::new(channel);
    let response = client.get_metrics(metrics_request("normal")).await.unwrap();
    assert_eq!(response.into_inner().metric_values[0].metric_value, 8);

    let plain = ExternalScalerClient::connect(format!("http://{address}")).await;
    let refused = match plain {
        Err(_) => true,
        Ok(mut c) => c.get_metrics(metrics_request("normal")).await.is_err(),
    };
    assert!(
        refused,
        "a plaintext client gets no answer from a TLS server"
    );
}
