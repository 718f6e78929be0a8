//! Faults on the live three-member fleet (the promises of docs/plumb/design.md's table), each on
//! top of the borrowing story of `live_fleet_borrow.rs` (whole agents, scalers, emulators,
//! KEDA clients and scripted Prometheus in-process; tests/support/story.rs): the hub agent
//! killed after its intents are written, minority and majority partitions (an API server
//! killed; the hub's own one too, its agent left running), an API server restarted, a rolling
//! upgrade of one copy's spec, a route write that times out (a slow admission webhook,
//! tests/support/webhook.rs), and one member's Prometheus unreachable. Lease clocks are the
//! test ones (4 s lease, 3 s renew deadline).
//!
//! Ignored in plain runs: `cargo xtask plumb-live` starts the servers and runs them.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use plumb_fleet_emulator::scenario::{NAMESPACE, WORKLOAD};
use serde_json::{Value, json};
use support::fleet::{LEASE_DURATION, LiveFleet};
use support::story::{Running, intent_on, logs, now, patch_spec, policy_on, sequence, time};
use support::webhook::SlowWebhook;
use utc_time::Timestamp;

/// The cluster half of a holder `<cluster>/<pod>`.
fn cluster_of(holder: &str) -> &str {
    holder.split_once('/').map_or(holder, |(c, _)| c)
}

/// The holder every one of `members`' Leases names, once they agree.
async fn agreed_holder(fleet: &LiveFleet, members: &[&str]) -> Option<String> {
    let mut holders = Vec::new();
    for m in members {
        holders.push(fleet.holder(m).await?);
    }
    holders
        .windows(2)
        .all(|w| w[0] == w[1])
        .then(|| holders[0].clone())
}

/// The newest `status.fleet` (latest `lastStep`) among the readable copies.
async fn newest_fleet_status(fleet: &LiveFleet) -> Option<Value> {
    let mut newest: Option<Value> = None;
    for name in fleet.names() {
        let Some(p) = policy_on(fleet, &name).await else {
            continue;
        };
        let status = p["status"]["fleet"].clone();
        let step = status["lastStep"].as_str().unwrap_or("").to_owned();
        if newest
            .as_ref()
            .is_none_or(|n| n["lastStep"].as_str().unwrap_or("") < step.as_str())
        {
            newest = Some(status);
        }
    }
    newest.filter(|n| !n.is_null())
}

/// `status.report.time` of `member`'s copy.
async fn report_time(fleet: &LiveFleet, member: &str) -> Option<Timestamp> {
    policy_on(fleet, member).await?["status"]["report"]["time"]
        .as_str()
        .map(time)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the live fleet: cargo xtask plumb-live"]
async fn live_fleet_a_killed_hub_s_successor_adopts_its_intents_and_status() {
    let _ = logs();
    let fleet = LiveFleet::from_env().await;
    let mut run = Running::start(&fleet, "kill", "auto", |_| vec![], |_, url| url).await;
    let lenders: Vec<String> = run.names[1..].to_vec();
    let f = &fleet;
    let lent = run
        .until(
            Duration::from_secs(90),
            "an intent on a lender",
            async |_| {
                let mut lent = Vec::new();
                for l in &lenders {
                    lent.push((l.clone(), intent_on(f, l).await));
                }
                lent.iter().any(|(_, i)| *i > 0).then_some(lent)
            },
        )
        .await;
    let hub = fleet.holder(&lenders[0]).await.expect("a hub");
    let hub_member = cluster_of(&hub).to_owned();
    let before = newest_fleet_status(&fleet).await.expect("status.fleet");
    let old_decision = before["lastDecision"]
        .as_str()
        .expect("lastDecision")
        .to_owned();
    eprintln!("killing the hub {hub} after {lent:?}; status.fleet {before}");
    run.agents
        .remove(&hub_member)
        .expect("the hub's agent")
        .kill()
        .await;
    let killed = Instant::now();
    let others: Vec<String> = run
        .names
        .iter()
        .filter(|n| **n != hub_member)
        .cloned()
        .collect();
    let successor = run
        .until(Duration::from_secs(30), "a successor hub", async |_| {
            let mut holders = Vec::new();
            for m in f.names() {
                holders.push(f.holder(&m).await?);
            }
            (holders.windows(2).all(|w| w[0] == w[1]) && holders[0] != hub)
                .then(|| holders[0].clone())
        })
        .await;
    let successor_member = cluster_of(&successor).to_owned();
    assert!(others.contains(&successor_member), "{successor}");
    eprintln!("successor {successor} after {:?}", killed.elapsed());
    // The successor renews the adopted floors under its own name, and the lenders' scalers
    // serve them.
    let name = successor.clone();
    let held: Vec<String> = lent
        .iter()
        .filter(|(_, i)| *i > 0)
        .map(|(l, _)| l.clone())
        .collect();
    run.until(
        Duration::from_secs(30),
        "the adopted floors renewed by the successor and served",
        async |view| {
            for l in &held {
                let p = policy_on(f, l).await?;
                let served = view.keda.get(l).map_or(0.0, |(floor, _)| *floor);
                if p["status"]["intent"]["hub"] != name.as_str() || served == 0.0 {
                    return None;
                }
            }
            Some(())
        },
    )
    .await;
    // The successor follows the old decision: its 60 s outcome line in the successor's log;
    // meanwhile no lender's floor doubles and the phase carries on.
    let old = old_decision.clone();
    let agent_log = run.agents[&successor_member].log.clone();
    let outcome = run
        .until(
            Duration::from_secs(90),
            "the old decision's outcome line in the successor's log",
            async |_| {
                for (l, i) in &lent {
                    let now = intent_on(f, l).await;
                    assert!(
                        *i == 0 || now < 2 * i,
                        "{l}'s intent went from {i} to {now}: a second floor for the same shortage"
                    );
                }
                let status = newest_fleet_status(f).await?;
                assert!(status["phase"].is_string(), "phase carries on: {status}");
                let text = std::fs::read_to_string(&agent_log).unwrap_or_default();
                text.lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .find(|l| l["kind"] == "outcome" && l["decisionId"] == old.as_str())
            },
        )
        .await;
    eprintln!("outcome line of {old_decision}: {outcome}");
    let after = newest_fleet_status(&fleet).await.expect("status.fleet");
    let last = after["lastDecision"].as_str().expect("lastDecision");
    assert!(
        sequence(last) >= sequence(&old_decision),
        "decision sequence went back: {old_decision} → {last}"
    );
    let successor_agent = &run.agents[&successor_member];
    for line in successor_agent.decision_lines() {
        if line["kind"] == "decision" {
            let id = line["decisionId"].as_str().expect("decisionId");
            assert!(
                sequence(id) > sequence(&old_decision),
                "the successor's decision {id} does not continue after {old_decision}"
            );
            assert_eq!(line["hub"], successor.as_str(), "{line}");
        }
    }
    run.stop().await;
}

/// Polls for `hold` that every Lease of `members` keeps naming `hub`.
async fn hub_stays(fleet: &LiveFleet, members: &[&str], hub: &str, hold: Duration) {
    let begun = Instant::now();
    while begun.elapsed() < hold {
        let holder = agreed_holder(fleet, members).await;
        assert_eq!(
            holder.as_deref(),
            Some(hub),
            "the hub changed after {:?} of the partition",
            begun.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the live fleet: cargo xtask plumb-live"]
async fn live_fleet_a_minority_partition_keeps_or_replaces_the_hub() {
    let _ = logs();
    let fleet = LiveFleet::from_env().await;
    let run = Running::start(&fleet, "minority", "auto", |_| vec![], |_, url| url).await;
    let names = fleet.names();
    let all: Vec<&str> = names.iter().map(String::as_str).collect();
    let hub = support::fleet::eventually("one hub named by every Lease", async || {
        agreed_holder(&fleet, &all).await
    })
    .await;
    let hub_member = cluster_of(&hub).to_owned();
    // A member other than the hub's cut off: the hub keeps its lock.
    let cut = names
        .iter()
        .find(|n| **n != hub_member)
        .expect("a peer")
        .clone();
    fleet.stop_apiserver(&cut).await;
    let rest: Vec<&str> = all.iter().copied().filter(|n| *n != cut).collect();
    hub_stays(&fleet, &rest, &hub, 3 * LEASE_DURATION).await;
    fleet.restart_apiserver(&cut).await;
    support::fleet::eventually("the hub named again on the restarted member", async || {
        (agreed_holder(&fleet, &all).await.as_deref() == Some(hub.as_str())).then_some(())
    })
    .await;
    // The hub's own API server stopped, its agent left running: the agent still reaches the
    // other two Leases, a majority, but it can no longer step (it lists the policies on its
    // own member), so it stops renewing and steps down at the renew deadline, and one of
    // the other two takes over once the last renewal is a lease duration old.
    fleet.stop_apiserver(&hub_member).await;
    let cut_at = Instant::now();
    let rest: Vec<&str> = all.iter().copied().filter(|n| *n != hub_member).collect();
    let successor = support::fleet::eventually("a new hub among the other two", async || {
        agreed_holder(&fleet, &rest)
            .await
            .filter(|h| cluster_of(h) != hub_member)
    })
    .await;
    let handed_over = cut_at.elapsed();
    eprintln!("hub {hub}'s own API server stopped; {successor} leads after {handed_over:?}");
    // One lease duration after the last renewal; one more when the two candidates try at
    // the same instant and split the term (each wins one Lease), after which they retry one
    // after another (plumb-core `candidates_whose_acquisitions_split_retry_one_after_another`).
    assert!(
        handed_over <= 2 * LEASE_DURATION + Duration::from_secs(3),
        "the hand-over took {handed_over:?}, more than about two lease durations"
    );
    let said = |text: &str| {
        logs()
            .text()
            .lines()
            .any(|l| l.contains(text) && l.contains(hub.as_str()))
    };
    assert!(
        said("this member's API server does not answer: no renewal"),
        "the old hub says why it stops renewing"
    );
    assert!(
        said("stopped leading the fleet"),
        "the old hub says it stepped down"
    );
    // Its server back, the old hub's agent (never stopped) does not lead again: once the
    // successor's renewal reaches the restarted member, every Lease names the successor and
    // keeps naming it.
    fleet.restart_apiserver(&hub_member).await;
    let back_at = Instant::now();
    support::fleet::eventually("the successor named on every Lease", async || {
        (agreed_holder(&fleet, &all).await.as_deref() == Some(successor.as_str())).then_some(())
    })
    .await;
    eprintln!(
        "{hub_member}'s Lease names {successor} {:?} after its server came back",
        back_at.elapsed()
    );
    hub_stays(&fleet, &all, &successor, 3 * LEASE_DURATION).await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the live fleet: cargo xtask plumb-live"]
async fn live_fleet_a_majority_partition_leaves_no_hub_and_floors_lapse() {
    let _ = logs();
    let fleet = LiveFleet::from_env().await;
    let mut run = Running::start(&fleet, "majority", "auto", |_| vec![], |_, url| url).await;
    let lenders: Vec<String> = run.names[1..].to_vec();
    let f = &fleet;
    let (lender, floor) = run
        .until(
            Duration::from_secs(90),
            "a floor served on a lender",
            async |view| {
                for l in &lenders {
                    let served = view.keda.get(l).map_or(0.0, |(floor, _)| *floor);
                    if served > 0.0 && intent_on(f, l).await > 0 {
                        return Some((l.clone(), served));
                    }
                }
                None
            },
        )
        .await;
    let weights = run.story.weights().await.expect("weights");
    let intent =
        policy_on(&fleet, &lender).await.expect("lender's copy")["status"]["intent"].clone();
    let expires = time(intent["expires"].as_str().expect("intent.expires"));
    let cut: Vec<String> = run
        .names
        .iter()
        .filter(|n| **n != lender)
        .cloned()
        .collect();
    for c in &cut {
        fleet.stop_apiserver(c).await;
    }
    let cut_at = Instant::now();
    eprintln!("{lender} alone with floor {floor}, intent {intent}; weights {weights:?}");
    // The lender's KEDA keeps asking its scaler: nobody renews the lender's Lease, so the
    // floor is fenced once that Lease expires (a lease duration, well before the intent's
    // `expires`), and it never comes back while the lender is alone.
    let i = run.names.iter().position(|n| *n == lender).expect("lender");
    let keda = run.story.members[i].keda.as_mut().expect("KEDA");
    let mut lapsed_at = None;
    while cut_at.elapsed() < 3 * LEASE_DURATION {
        let (served, _) = keda.sync(0).await.expect("the lender's scaler answers");
        assert!(
            now() <= expires || served == 0.0,
            "floor {served} served after {expires}"
        );
        match lapsed_at {
            None if served == 0.0 => lapsed_at = Some(cut_at.elapsed()),
            None => {}
            Some(_) => assert_eq!(served, 0.0, "a lapsed floor came back"),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let lapsed_at = lapsed_at.expect("the floor lapsed");
    assert!(
        lapsed_at <= LEASE_DURATION + Duration::from_secs(2),
        "the floor lapsed only {lapsed_at:?} after the cut"
    );
    eprintln!("the floor lapsed {lapsed_at:?} after the cut (intent expires {expires})");
    let need = "1 members reachable, need 2";
    support::fleet::eventually("the lone member logs that it cannot elect", async || {
        logs().text().contains(need).then_some(())
    })
    .await;
    // Traffic stays: the route's member comes back with every agent gone, weights as they were.
    for (_, agent) in std::mem::take(&mut run.agents) {
        agent.kill().await;
    }
    for c in &cut {
        fleet.restart_apiserver(c).await;
    }
    assert_eq!(run.story.weights().await.expect("weights"), weights);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the live fleet: cargo xtask plumb-live"]
async fn live_fleet_a_restarted_api_server_s_member_reports_again() {
    let _ = logs();
    let fleet = LiveFleet::from_env().await;
    let mut run = Running::start(&fleet, "restart", "auto", |_| vec![], |_, url| url).await;
    let member = run.names[2].clone();
    let f = &fleet;
    let all = run.names.clone();
    run.until(
        Duration::from_secs(60),
        "every member reported",
        async |_| {
            for m in &all {
                report_time(f, m).await?;
            }
            Some(())
        },
    )
    .await;
    let before = report_time(&fleet, &member).await.expect("a report");
    fleet.stop_apiserver(&member).await;
    let stopped = Instant::now();
    tokio::time::sleep(2 * LEASE_DURATION).await;
    fleet.restart_apiserver(&member).await;
    let restarted = now();
    eprintln!("{member} down for {:?}", stopped.elapsed());
    let m = member.clone();
    let after = run
        .until(
            Duration::from_secs(60),
            "a report after the restart",
            async |_| report_time(f, &m).await.filter(|t| *t > restarted),
        )
        .await;
    assert!(after > before, "{before} → {after}");
    // No step used a report of the member made before it went down once it reported again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for agent in run.agents.values() {
        for line in agent.decision_lines() {
            if line["kind"] != "decision" || line["time"].as_str().map(time) < Some(after) {
                continue;
            }
            if let Some(t) = line["reports"][&member]["time"].as_str().map(time) {
                assert!(
                    t > before,
                    "a step on a report from before the restart: {line}"
                );
            }
        }
    }
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the live fleet: cargo xtask plumb-live"]
async fn live_fleet_a_rolling_upgrade_puts_a_member_out_of_sync_until_all_have_it() {
    let _ = logs();
    let fleet = LiveFleet::from_env().await;
    let mut run = Running::start(&fleet, "upgrade", "auto", |_| vec![], |_, url| url).await;
    let f = &fleet;
    let all = run.names.clone();
    run.until(
        Duration::from_secs(60),
        "every member reported, in sync",
        async |_| {
            for m in &all {
                report_time(f, m).await?;
            }
            let status = newest_fleet_status(f).await?;
            status["outOfSync"]
                .as_array()
                .is_none_or(Vec::is_empty)
                .then_some(())
        },
    )
    .await;
    // The hub compares each member's report with its own copy, so the upgrade starts on a
    // member other than the hub's (started on the hub's, the other two would be out of sync).
    let all_names: Vec<&str> = all.iter().map(String::as_str).collect();
    let hub = support::fleet::eventually("one hub named by every Lease", async || {
        agreed_holder(f, &all_names).await
    })
    .await;
    let first = all
        .iter()
        .rev()
        .find(|n| n.as_str() != cluster_of(&hub))
        .expect("a member other than the hub's")
        .clone();
    patch_spec(&fleet, &first, json!({"capacity": {"step": 3}})).await;
    let one = first.clone();
    run.until(
        Duration::from_secs(30),
        "the upgraded member out of sync",
        async |_| {
            let status = newest_fleet_status(f).await?;
            (status["outOfSync"] == json!([one.as_str()])).then_some(())
        },
    )
    .await;
    for m in run.names.iter().filter(|n| **n != first) {
        patch_spec(&fleet, m, json!({"capacity": {"step": 3}})).await;
    }
    run.until(Duration::from_secs(30), "back in sync", async |_| {
        let status = newest_fleet_status(f).await?;
        status["outOfSync"]
            .as_array()
            .is_none_or(Vec::is_empty)
            .then_some(())
    })
    .await;
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the live fleet: cargo xtask plumb-live"]
async fn live_fleet_an_unreachable_prometheus_fails_one_member_s_observation() {
    let _ = logs();
    let fleet = LiveFleet::from_env().await;
    let names = fleet.names();
    let blind = names[2].clone();
    // A closed port: nothing listens on the discard port here.
    let closed = "http://127.0.0.1:9".to_owned();
    let b = blind.clone();
    let mut run = Running::start(
        &fleet,
        "prometheus",
        "auto",
        |_| vec![],
        move |name, url| if name == b { closed.clone() } else { url },
    )
    .await;
    let f = &fleet;
    let m = blind.clone();
    let ready = run
        .until(
            Duration::from_secs(60),
            "Ready False/ObservationFailed",
            async |_| {
                let p = policy_on(f, &m).await?;
                let conditions = p["status"]["conditions"].as_array()?.clone();
                conditions.into_iter().find(|c| {
                    c["type"] == "Ready"
                        && c["status"] == "False"
                        && c["reason"] == "ObservationFailed"
                })
            },
        )
        .await;
    let message = ready["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("demand"),
        "the message names the signal: {ready}"
    );
    // The fleet goes on: the others report, and the hub borrows for the short member.
    let lender = names[1].clone();
    run.until(
        Duration::from_secs(90),
        "an intent on the other lender",
        async |_| (intent_on(f, &lender).await > 0).then_some(()),
    )
    .await;
    run.stop().await;
}

/// A free loopback port (bound, then let go).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `plumb_hub_step_errors_total` summed over policies, scraped from `port`'s `/metrics`
/// (`None`: no answer).
async fn step_errors(port: u16) -> Option<f64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    tcp.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .ok()?;
    let mut text = String::new();
    tcp.read_to_string(&mut text).await.ok()?;
    Some(
        text.lines()
            .filter(|l| l.starts_with("plumb_hub_step_errors_total"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum(),
    )
}

/// Every line of these decision logs.
fn log_lines(paths: &[std::path::PathBuf]) -> Vec<Value> {
    paths
        .iter()
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The route write times out: the route's member sends HTTPRoute updates to an admission
/// webhook that answers only after the hub's 8 s request timeout (tests/support/webhook.rs).
/// The timed-out write is a decision line with `applied: false` and the error, one warning
/// line and `plumb_hub_step_errors_total`; the hub tries again at most once per timeout
/// (each try holds the step), the floors stay as they were, and once the webhook answers at
/// once the weights move (read back from the route, summing to 100 within 0–100) and the
/// timed-out decision still gets its outcome line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the live fleet: cargo xtask plumb-live"]
async fn live_fleet_a_timed_out_route_write_is_counted_and_not_retried_hot() {
    let _ = logs();
    let fleet = LiveFleet::from_env().await;
    let names = fleet.names();
    let ports: BTreeMap<String, u16> = names.iter().map(|n| (n.clone(), free_port())).collect();
    let flags = ports.clone();
    let mut run = Running::start(
        &fleet,
        "route-timeout",
        "auto",
        move |name| {
            let address: &'static str =
                Box::leak(format!("127.0.0.1:{}", flags[name]).into_boxed_str());
            vec!["--metrics-bind-address", address]
        },
        |_, url| url,
    )
    .await;
    let route_member = names[0].clone();
    let webhook = SlowWebhook::serve().await;
    webhook
        .register(&fleet.member(&route_member).client, NAMESPACE, WORKLOAD)
        .await;
    webhook.set_slow(true);
    let paths: Vec<std::path::PathBuf> = run.agents.values().map(|a| a.log.clone()).collect();
    let timed_out = |line: &Value| {
        line["kind"] == "decision"
            && line["error"]
                .as_str()
                .is_some_and(|e| e.contains("patch httproute") && e.contains("no answer within"))
    };
    let p = paths.clone();
    let decision = run
        .until(
            Duration::from_secs(180),
            "a decision whose route write timed out",
            async |_| log_lines(&p).into_iter().find(|l| timed_out(l)),
        )
        .await;
    let id = decision["decisionId"]
        .as_str()
        .expect("decisionId")
        .to_owned();
    assert_eq!(decision["applied"], false, "{decision}");
    let hub = decision["hub"].as_str().expect("hub").to_owned();
    eprintln!("timed-out route write: {decision}");
    assert!(
        logs()
            .text()
            .lines()
            .any(|l| l.contains("hub step: ") && l.contains("no answer within")),
        "the hub logs the timeout"
    );
    let f = &fleet;
    let mut lent = BTreeMap::new();
    for l in &names[1..] {
        lent.insert(l.clone(), intent_on(f, l).await);
    }
    // A while with every route write held back: no hot loop, no second floor.
    let (calls_before, slow_before) = webhook.calls();
    let window = Duration::from_secs(30);
    let begun = Instant::now();
    run.until(
        window + Duration::from_secs(10),
        "the slow window",
        async |_| {
            for (l, i) in &lent {
                let now = intent_on(f, l).await;
                assert!(
                    *i == 0 || now < 2 * i,
                    "{l}'s intent went from {i} to {now}: a second floor for the same shortage"
                );
            }
            (begun.elapsed() >= window).then_some(())
        },
    )
    .await;
    let slow = webhook.calls().1 - slow_before;
    let tries = log_lines(&paths)
        .into_iter()
        .filter(|l| timed_out(l))
        .count();
    let errors = step_errors(ports[cluster_of(&hub)])
        .await
        .expect("the hub's metrics");
    eprintln!(
        "in {:?}: {slow} route writes held by the webhook, {tries} timed-out decisions so far, plumb_hub_step_errors_total {errors}, intents {lent:?}",
        begun.elapsed()
    );
    let bound = usize::try_from(window.as_secs() / 8).unwrap_or(0) + 2;
    assert!(slow <= bound, "{slow} tries in {window:?}: a hot loop");
    assert!(errors >= 1.0, "the timeout is counted");
    // The webhook answers at once again: the weights move, and the timed-out decision is
    // followed.
    webhook.set_slow(false);
    let answered = Instant::now();
    let r = route_member.clone();
    let weights = run
        .until(
            Duration::from_secs(90),
            "the weights moved once writes answer",
            async |view| {
                (view.weights.get(&r).copied().unwrap_or(100) < 100).then(|| view.weights.clone())
            },
        )
        .await;
    assert!(weights.values().all(|w| *w <= 100), "{weights:?}");
    assert_eq!(weights.values().sum::<u32>(), 100, "{weights:?}");
    eprintln!(
        "weights {weights:?} {:?} after writes answer again ({} webhook calls in all)",
        answered.elapsed(),
        webhook.calls().0 - calls_before
    );
    let p = paths.clone();
    let outcome = run
        .until(
            Duration::from_secs(120),
            "the timed-out decision's outcome line",
            async |_| {
                log_lines(&p)
                    .into_iter()
                    .find(|l| l["kind"] == "outcome" && l["decisionId"] == id.as_str())
            },
        )
        .await;
    assert_eq!(outcome["applied"], false, "{outcome}");
    eprintln!("outcome line of {id}: {outcome}");
    webhook
        .unregister(&fleet.member(&route_member).client)
        .await;
    run.stop().await;
}
