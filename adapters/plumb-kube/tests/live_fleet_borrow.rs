//! The seed's story end to end on three real member API servers: every member runs the whole
//! agent (member loop, local Lease, hub loop) and the scaler in-process; a cluster emulator,
//! a KEDA-protocol client and a scripted Prometheus per member stand in for the controllers,
//! KEDA and Prometheus (adapters/plumb-fleet-emulator). The first member (all traffic, one node,
//! a NodePool at its limit) stays short when the load rises; the hub borrows replicas in the
//! others (an intent written on their copies, served by their scalers as the floor, set by their
//! KEDA clients, bound and made ready by their emulators) and moves traffic to them (weights
//! read back from the HTTPRoute, summing to 100); `kubectl get adaptivepolicies -A` on a lender
//! shows its floor and the hub's phase in the seed's columns.
//!
//! Ignored in plain runs: `cargo xtask plumb-live` starts the servers and runs it.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use plumb_fleet_emulator::scenario::{Story, StoryTiming, TickView};
use support::fleet::LiveFleet;
use support::story::{intent_on, ready_in, rising_load as load, start_agent, start_scaler};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the live fleet: cargo xtask plumb-live"]
async fn live_fleet_borrows_for_a_short_member_end_to_end() {
    let logs = support::story::logs();
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
    let mut agents = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let endpoint = start_scaler(fleet.member(name).client.clone(), name).await;
        story.attach_keda(i, endpoint).await.expect("KEDA connects");
        let prometheus = story.members[i]
            .prometheus
            .serve()
            .await
            .expect("prometheus");
        agents.push(start_agent(&fleet, name, &prometheus, &log, &[]));
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
    for agent in agents {
        agent.stop().await;
    }
}
