//! `GetMetrics` from the scaler's cache (target: at most 1 ms at p99; benches/RESULTS.md).
//!
//! `cargo bench -p plumb-scaler --bench get_metrics` measures, with 1,000 policies cached:
//! - `handler`: the answer itself (parse the trigger metadata, look the policy up in the
//!   snapshot, fence, build the response), as the service computes it;
//! - `grpc_loopback`: a whole unary call by a tonic client over loopback TCP, HTTP/2 and
//!   protobuf both ways, on a single-threaded runtime shared by client and server.
//!
//! Criterion reports means; after it the bench times 20,000 single loopback calls one by one
//! and prints p50, p99 and the maximum, the figure the target is about (200 under
//! `--test`, as `cargo xtask bench-smoke` runs it).

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use plumb_core::quorum::LeaseRecord;
use plumb_model::AdaptivePolicy;
use plumb_scaler::clock::{Clock, SystemClock};
use plumb_scaler::floor::{CachedPolicy, FloorCache, PolicyCopy, PolicyKey, Snapshot};
use plumb_scaler::proto::external_scaler_client::ExternalScalerClient;
use plumb_scaler::proto::{GetMetricsRequest, ScaledObjectRef};
use plumb_scaler::request::policy_of_metrics_request;
use plumb_scaler::server::serve;
use plumb_scaler::service::Scaler;
use tokio::runtime::Runtime;
use tonic::transport::Channel;

const POLICIES: usize = 1_000;

/// 1,000 auto-mode policies with live intents by the Lease's holder; the Lease renewed
/// far ahead, so every answer runs every fencing check and serves a floor.
fn cache() -> FloorCache {
    let now = SystemClock.now();
    let expires = now.plus(Duration::from_secs(3_600));
    let policies = (0..POLICIES)
        .map(|i| {
            let yaml = format!(
                "metadata: {{name: model-{i}, namespace: serving}}
spec:
  mode: auto
  workload: {{name: model-{i}}}
  clusters: [{{name: east, maxReplicas: 40}}]
status:
  intent: {{replicas: {r}, expires: '{expires}', hub: east/agent-0}}
",
                r = i % 30 + 1
            );
            let policy = AdaptivePolicy::from_yaml(&yaml).expect("policy");
            (
                PolicyKey::new("serving", format!("model-{i}")),
                CachedPolicy::Readable(PolicyCopy::from_policy(&policy, "east")),
            )
        })
        .collect();
    FloorCache::with_snapshot(Snapshot {
        policies,
        lease: Some(LeaseRecord {
            holder: Some("east/agent-0".into()),
            acquire_time: Some(now),
            renew_time: Some(now),
            lease_duration_seconds: 3_600,
            transitions: 0,
        }),
        policies_synced: true,
        lease_synced: true,
    })
}

fn request(i: usize) -> GetMetricsRequest {
    GetMetricsRequest {
        scaled_object_ref: Some(ScaledObjectRef {
            name: format!("model-{i}"),
            namespace: "serving".into(),
            scaler_metadata: HashMap::from([
                ("scalerAddress".into(), "plumb-scaler.plumb:6000".into()),
                ("policy".into(), format!("model-{i}")),
            ]),
        }),
        metric_name: format!("plumb-floor-model-{i}"),
    }
}

/// A runtime running the scaler on loopback, and a client connected to it.
fn loopback(scaler: Scaler) -> (Runtime, ExternalScalerClient<Channel>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(serve(listener, scaler, None, std::future::pending()));
        ExternalScalerClient::connect(format!("http://{address}"))
            .await
            .expect("connect")
    });
    (runtime, client)
}

fn bench(c: &mut Criterion) {
    let scaler = Scaler::new(cache(), Arc::new(SystemClock));
    let requests: Vec<GetMetricsRequest> = (0..POLICIES).map(request).collect();
    let mut group = c.benchmark_group("get_metrics");
    let mut i = 0;
    group.bench_function("handler", |b| {
        b.iter(|| {
            i = (i + 7) % POLICIES;
            let key = policy_of_metrics_request(&requests[i]).expect("valid");
            black_box(scaler.metrics(&key).expect("known"))
        });
    });
    let (runtime, mut client) = loopback(scaler.clone());
    group.bench_function("grpc_loopback", |b| {
        b.iter(|| {
            i = (i + 7) % POLICIES;
            let response = runtime.block_on(client.get_metrics(requests[i].clone()));
            black_box(response.expect("answer"))
        });
    });
    group.finish();
}

/// Times `calls` loopback calls one by one; prints p50, p99 and the maximum.
fn percentiles(calls: usize) {
    let scaler = Scaler::new(cache(), Arc::new(SystemClock));
    let (runtime, mut client) = loopback(scaler);
    let requests: Vec<GetMetricsRequest> = (0..POLICIES).map(request).collect();
    let mut took: Vec<Duration> = (0..calls)
        .map(|n| {
            let started = Instant::now();
            let response = runtime.block_on(client.get_metrics(requests[n % POLICIES].clone()));
            black_box(response.expect("answer"));
            started.elapsed()
        })
        .collect();
    took.sort();
    let at = |q: f64| took[((took.len() as f64 * q) as usize).min(took.len() - 1)];
    println!(
        "get_metrics over loopback, {calls} calls one by one: p50 {:?}, p99 {:?}, max {:?}",
        at(0.50),
        at(0.99),
        took[took.len() - 1]
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    let smoke = std::env::args().any(|a| a == "--test");
    percentiles(if smoke { 200 } else { 20_000 });
}
