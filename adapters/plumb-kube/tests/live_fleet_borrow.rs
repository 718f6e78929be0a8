//! The seed's story end to end on three real member API servers: every member runs the whole
//! agent (member loop, local Lease, hub loop) and the scaler in-process; a cluster emulator,
//! a KEDA-protocol client and a scripted Prometheus per member stand in for the controllers,
//! KEDA and Prometheus (adapters/plumb-fleet-emulator). The first member (all traffic, one node,
//! a NodePool at its limit) stays short when the load rises; the hub borrows replicas in the
//! others (an intent written on their copies, served by their scalers as the floor, set by their
//! KEDA clients, bound and made ready by their emulators) and moves traffic to them (weights
//! read back from the HTTPRoute, summing to 100).
//!
//! Ignored in plain runs: `cargo xtask plumb-live` starts the servers and runs it.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use plumb_fleet_emulator::scenario::{NAMESPACE, Story, StoryTiming, TickView, WORKLOAD};
use plumb_kube::cli::{Cli, Command};
use plumb_scaler::clock::SystemClock;
use plumb_scaler::floor::FloorCache;
use plumb_scaler::watch::{watch_hub_lease, watch_policies};
use support::fleet::{LiveFleet, Logs};
use tokio::sync::oneshot;

/// The fleet's load: calm at first, then more than the first member can serve.
fn load(elapsed: Duration) -> f64 {
    if elapsed < Duration::from_secs(10) {
        15.0
    } else {
        60.0
    }
}

/// Starts member `i`'s scaler in-process (its watchers on the member, gRPC on a free port);
/// returns its endpoint.
async fn start_scaler(client: kube::Client, cluster: &str) -> String {
    let cache = FloorCache::new();
    tokio::spawn(watch_policies(
        client.clone(),
        cache.clone(),
        cluster.to_owned(),
    ));
    tokio::spawn(watch_hub_lease(
        client,
        cache.clone(),
        support::fleet::NAMESPACE.to_owned(),
    ));
    let scaler = plumb_scaler::service::Scaler::new(cache, Arc::new(SystemClock));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(plumb_scaler::server::serve(
        listener,
        scaler,
        None,
        std::future::pending(),
    ));
    format!("http://{address}")
}

/// Starts member `name`'s whole agent on its own thread and runtime, as its own process
/// would run; the returned sender stops it.
fn start_agent(
    fleet: &LiveFleet,
    name: &str,
    prometheus: &str,
    log: &Path,
) -> oneshot::Sender<()> {
    let mut args = fleet.agent_args(name, log);
    args.extend(
        [
            "--prometheus-url",
            prometheus,
            "--interval",
            "2s",
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "0",
            "--test-agent-lease-duration",
            "4s",
        ]
        .map(str::to_owned),
    );
    let cli = Cli::try_parse_from(args).expect("agent flags");
    let Command::Agent(args) = cli.command else {
        panic!("not the agent command");
    };
    let config = args.config("plumb-agent-0".to_owned());
    let (stop, stopped) = oneshot::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        if let Err(e) = rt.block_on(plumb_kube::agent::run::run(config, async {
            let _ = stopped.await;
        })) {
            eprintln!("agent stopped: {e:#}");
        }
    });
    stop
}

/// The intent's replicas on `member`'s copy of the policy (0 when none).
async fn intent_on(fleet: &LiveFleet, member: &str) -> u64 {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("plumb-k8s.github.io", "v1alpha1", "AdaptivePolicy"),
        "adaptivepolicies",
    );
    let api: Api<DynamicObject> =
        Api::namespaced_with(fleet.member(member).client.clone(), NAMESPACE, &ar);
    api.get(WORKLOAD)
        .await
        .ok()
        .and_then(|p| p.data["status"]["intent"]["replicas"].as_u64())
        .unwrap_or(0)
}

/// Ready replicas of the workload in `member`.
async fn ready_in(fleet: &LiveFleet, member: &str) -> i32 {
    let api: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(fleet.member(member).client.clone(), NAMESPACE);
    api.get(WORKLOAD)
        .await
        .ok()
        .and_then(|d| d.status?.ready_replicas)
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the live fleet: cargo xtask plumb-live"]
async fn live_fleet_borrows_for_a_short_member_end_to_end() {
    let logs = Logs::capture();
    let fleet = LiveFleet::from_env().await;
    fleet.prepare().await;
    let names = fleet.names();
    let mut story = Story::new(
        names
            .iter()
            .map(|n| (n.clone(), fleet.member(n).client.clone()))
            .collect(),
    );
    story
        .install("auto", StoryTiming::default())
        .await
        .expect("story installed");
    let log = std::env::temp_dir().join(format!("plumb-live-borrow-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let mut stops = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let endpoint = start_scaler(fleet.member(name).client.clone(), name).await;
        story.attach_keda(i, endpoint).await.expect("KEDA connects");
        let prometheus = story.members[i]
            .prometheus
            .serve()
            .await
            .expect("prometheus");
        stops.push(start_agent(&fleet, name, &prometheus, &log));
    }
    let start = Instant::now();
    let mut timeline: Vec<(u64, TickView)> = Vec::new();
    let borrowed = loop {
        let elapsed = start.elapsed();
        assert!(
            elapsed < Duration::from_secs(180),
            "no borrow within 3 minutes; last ticks: {:#?}\ndecisions: {}\nlogs: {}",
            timeline.iter().rev().take(3).collect::<Vec<_>>(),
            std::fs::read_to_string(&log).unwrap_or_default(),
            logs.text()
                .lines()
                .rev()
                .take(40)
                .collect::<Vec<_>>()
                .join("\n")
        );
        let view = story.tick(elapsed, load(elapsed)).await.expect("tick");
        let sum: u32 = view.weights.values().sum();
        assert_eq!(sum, 100, "weights always sum to 100: {:?}", view.weights);
        timeline.push((elapsed.as_secs(), view.clone()));
        let mut lenders = BTreeMap::new();
        for lender in &names[1..] {
            let intent = intent_on(&fleet, lender).await;
            let served = view.keda.get(lender).map_or(0.0, |(floor, _)| *floor);
            let ready = ready_in(&fleet, lender).await;
            if intent > 0 && served > 0.0 && i64::from(ready) >= i64::try_from(intent).unwrap() {
                lenders.insert(lender.clone(), (intent, served, ready));
            }
        }
        if !lenders.is_empty() && view.weights[&names[0]] < 100 {
            break (lenders, view.weights);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let (lenders, weights) = borrowed;
    eprintln!(
        "borrowed after {:?}: {lenders:?}, weights {weights:?}",
        start.elapsed()
    );
    let decisions = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(decisions.contains("\"kind\":\"decision\""), "{decisions}");
    assert!(decisions.contains("AddCapacity"), "{decisions}");
    for stop in stops {
        let _ = stop.send(());
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
}
