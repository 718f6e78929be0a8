//! `plumb agent`'s hub election over three real member API servers: ClusterProfiles and the
//! KEP-5339 exec plugin give each agent its peers, the quorum lock runs over the members'
//! `plumb-hub` Leases. Exactly one hub with 3/3 and with 2/3 members up, none with 1/3 (each
//! agent logs `1 members reachable, need 2`), a hub again when the members return, a quick
//! hand-over when the hub's agent stops, a member without credentials counted as an
//! unreachable voter, and the operations guide's `kubectl get lease` command.
//!
//! Ignored in plain runs: `cargo xtask plumb-live` starts the servers and runs these (one at a
//! time: they stop and restart members).

mod support;

use std::time::Instant;

use support::fleet::{LEASE_DURATION, LiveFleet, Logs, RunningAgent, one_hub, profile};

async fn start_all(fleet: &LiveFleet) -> Vec<RunningAgent> {
    let mut agents = Vec::new();
    for name in fleet.names() {
        agents.push(fleet.start_agent(&name, "plumb-agent-0").await);
    }
    agents
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the live fleet: cargo xtask plumb-live"]
async fn live_fleet_elects_exactly_one_hub_with_every_member_up() {
    let _logs = Logs::capture();
    let fleet = LiveFleet::from_env().await;
    fleet.prepare().await;
    let agents = start_all(&fleet).await;
    let hub = one_hub(&fleet, &agents).await;
    for a in &agents {
        assert_eq!(
            a.fleet_members(),
            3,
            "{} counts itself and two peers",
            a.name
        );
    }
    // The Leases agree on one term.
    assert!(hub.identity.ends_with("/plumb-agent-0"));
    for name in fleet.names() {
        assert_eq!(
            fleet.holder(&name).await.as_deref(),
            Some(hub.identity.as_str())
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the live fleet: cargo xtask plumb-live"]
async fn live_fleet_keeps_one_hub_with_two_of_three_and_none_with_one() {
    let logs = Logs::capture();
    let fleet = LiveFleet::from_env().await;
    fleet.prepare().await;
    let agents = start_all(&fleet).await;
    let hub = one_hub(&fleet, &agents).await.identity.clone();
    let others: Vec<String> = agents
        .iter()
        .filter(|a| a.identity != hub)
        .map(|a| a.name.clone())
        .collect();

    // 2/3: one member that is not the hub's goes down; the hub keeps its place.
    fleet.stop_apiserver(&others[0]).await;
    support::fleet::eventually("the hub says which member it cannot read", async || {
        logs.text()
            .lines()
            .any(|l| {
                l.contains(&format!("identity={hub}"))
                    && l.contains(&format!("member={}", others[0]))
                    && l.contains("member unreachable: its plumb-hub Lease cannot be read: ")
            })
            .then_some(())
    })
    .await;
    for _ in 0..3 {
        // several renewals (the lease is 4 s): still the same single hub
        tokio::time::sleep(LEASE_DURATION).await;
        assert_eq!(one_hub(&fleet, &agents).await.identity, hub);
    }

    // 1/3: a second member down; nobody can reach a majority.
    fleet.stop_apiserver(&others[1]).await;
    support::fleet::eventually("no agent leads with 1 of 3 members up", async || {
        agents.iter().all(|a| !a.leading()).then_some(())
    })
    .await;
    support::fleet::eventually("every agent says why", async || {
        let text = logs.text();
        agents
            .iter()
            .all(|a| {
                text.lines().any(|l| {
                    l.contains(&format!("identity={}", a.identity))
                        && l.contains("no hub: 1 members reachable, need 2")
                })
            })
            .then_some(())
    })
    .await;
    // It stays so (several lease durations), and the line is logged once per change, not
    // every retry.
    tokio::time::sleep(LEASE_DURATION * 2).await;
    assert!(agents.iter().all(|a| !a.leading()));
    let text = logs.text();
    for a in &agents {
        let lines = text
            .lines()
            .filter(|l| {
                l.contains(&format!("identity={}", a.identity))
                    && l.contains("no hub: 1 members reachable, need 2")
            })
            .count();
        assert_eq!(
            lines, 1,
            "{} logged the same reason {lines} times",
            a.identity
        );
    }

    // The members return: a hub again.
    for name in &others {
        fleet.restart_apiserver(name).await;
    }
    one_hub(&fleet, &agents).await;
    support::fleet::eventually(
        "each member is reachable again, and the log says so",
        async || {
            let text = logs.text();
            others
                .iter()
                .all(|m| {
                    text.lines().any(|l| {
                        l.contains(&format!("identity={hub}"))
                            && l.contains(&format!("member={m}"))
                            && l.contains("member reachable again")
                    })
                })
                .then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the live fleet: cargo xtask plumb-live"]
async fn live_fleet_hands_over_quickly_when_the_hub_stops() {
    let logs = Logs::capture();
    let fleet = LiveFleet::from_env().await;
    fleet.prepare().await;
    let mut agents = start_all(&fleet).await;
    let old = one_hub(&fleet, &agents).await.identity.clone();
    let i = agents.iter().position(|a| a.identity == old).unwrap_or(0);
    let stopped = Instant::now();
    agents[i].stop().await;
    // Released: no Lease names the old hub any more.
    assert!(
        logs.text().contains(&format!("identity={old} members=")),
        "the release is logged"
    );
    let mut rest = agents;
    let mut old_agent = rest.remove(i);
    let new = one_hub(&fleet, &rest).await.identity.clone();
    let took = stopped.elapsed();
    eprintln!(
        "hand-over from {old} to {new} took {:.2} s",
        took.as_secs_f64()
    );
    assert_ne!(new, old);
    // Without the release, a candidate waits out a whole lease duration from the last renewal
    // it saw; with it, the next retry takes the Leases.
    assert!(
        took < LEASE_DURATION,
        "hand-over took {took:?}, not less than the lease duration"
    );
    old_agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the live fleet: cargo xtask plumb-live"]
async fn live_fleet_counts_a_member_without_credentials_as_an_unreachable_voter() {
    let logs = Logs::capture();
    let fleet = LiveFleet::from_env().await;
    fleet.prepare().await;
    // Every member also lists `ap-south`, whose profile has no access provider: a fleet of
    // four (majority 3) with three reachable.
    for m in &fleet.members {
        let mut profiles: Vec<serde_json::Value> = fleet
            .members
            .iter()
            .filter(|p| p.name != m.name)
            .map(|p| fleet.profile_of(p))
            .collect();
        profiles.push(profile("ap-south", serde_json::json!([])));
        support::fleet::set_profiles(&m.client, &profiles).await;
    }
    let agents = start_all(&fleet).await;
    one_hub(&fleet, &agents).await;
    support::fleet::eventually("four voters everywhere", async || {
        agents.iter().all(|a| a.fleet_members() == 4).then_some(())
    })
    .await;
    assert!(
        logs.text().contains(
            "ClusterProfile ap-south: status.accessProviders is empty: no credentials for this member; it counts as a voter that cannot be reached"
        ),
        "{}",
        logs.text()
    );
    // With one member down, 2 of 4 is no majority.
    let hub = one_hub(&fleet, &agents).await.identity.clone();
    let down = agents
        .iter()
        .find(|a| a.identity != hub)
        .map(|a| a.name.clone())
        .unwrap_or_default();
    fleet.stop_apiserver(&down).await;
    support::fleet::eventually("no hub with 2 of 4 reachable", async || {
        agents.iter().all(|a| !a.leading()).then_some(())
    })
    .await;
    assert!(logs.text().contains("no hub: 2 members reachable, need 3"));
    fleet.restart_apiserver(&down).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the live fleet: cargo xtask plumb-live"]
async fn live_fleet_kubectl_shows_the_hub_as_the_operations_guide_says() {
    let _logs = Logs::capture();
    let fleet = LiveFleet::from_env().await;
    fleet.prepare().await;
    let agents = start_all(&fleet).await;
    let hub = one_hub(&fleet, &agents).await.identity.clone();
    let Ok(version) = std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
    else {
        // The same GET through the client: what the command reads.
        eprintln!("kubectl not found: the Lease's holder is read through the API instead");
        for name in fleet.names() {
            assert_eq!(fleet.holder(&name).await.as_deref(), Some(hub.as_str()));
        }
        return;
    };
    assert!(version.status.success());
    for m in &fleet.members {
        // kubectl get lease plumb-hub -n plumb -o jsonpath='{.spec.holderIdentity}'
        let out = std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(m.kubeconfig())
            .args(["get", "lease", "plumb-hub", "-n", "plumb", "-o"])
            .arg("jsonpath={.spec.holderIdentity}")
            .output()
            .expect("kubectl");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), hub, "{}", m.name);
    }
}
