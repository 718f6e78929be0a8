//! The borrowing story on the live fleet (`live_fleet_borrow.rs`, `live_fleet_faults.rs`):
//! every member runs the whole agent ([`plumb_kube::agent::run::run`]) on its own thread and
//! runtime, as its own process would, and the scaler in-process; the story's emulators, KEDA
//! clients and scripted Prometheus stand in for the rest (adapters/plumb-fleet-emulator).
//!
//! An agent can be stopped gracefully ([`Agent::stop`]: it releases its Leases) or killed
//! ([`Agent::kill`]: its future and runtime are dropped mid-flight, nothing is released), as
//! a crashed process would be.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clap::Parser;
use futures::future::Either;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use plumb_fleet_emulator::scenario::{NAMESPACE, Story, StoryTiming, TickView, WORKLOAD};
use plumb_kube::cli::{Cli, Command};
use plumb_scaler::clock::SystemClock;
use plumb_scaler::floor::FloorCache;
use plumb_scaler::watch::{watch_hub_lease, watch_policies};
use serde_json::Value;
use tokio::sync::oneshot;

use super::fleet::{LiveFleet, Logs};

/// The process's captured logs (one subscriber per process, shared by its tests).
pub fn logs() -> Logs {
    static LOGS: OnceLock<Logs> = OnceLock::new();
    LOGS.get_or_init(Logs::capture).clone()
}

/// Starts member `cluster`'s scaler in-process (its watchers on the member, gRPC on a free
/// port); returns its endpoint.
pub async fn start_scaler(client: kube::Client, cluster: &str) -> String {
    let cache = FloorCache::new();
    tokio::spawn(watch_policies(
        client.clone(),
        cache.clone(),
        cluster.to_owned(),
    ));
    tokio::spawn(watch_hub_lease(
        client,
        cache.clone(),
        super::fleet::NAMESPACE.to_owned(),
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

/// One member's whole agent running on its own thread and runtime.
pub struct Agent {
    /// Its member.
    pub name: String,
    /// Its decision log.
    pub log: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    kill: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Agent {
    /// Stops it gracefully (it releases its Leases) and waits until its thread ended.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.join().await;
    }

    /// Kills it: its run is dropped where it stands and its runtime shut down without
    /// waiting, so no Lease is released and no write is finished.
    pub async fn kill(mut self) {
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
        self.join().await;
    }

    async fn join(&mut self) {
        if let Some(thread) = self.thread.take() {
            tokio::task::spawn_blocking(move || thread.join())
                .await
                .expect("join task")
                .expect("agent thread");
        }
    }

    /// Its decision log's lines so far.
    pub fn decision_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// Starts member `name`'s whole agent with the story's flags (reports every 2 s, hub step
/// every second, the test Lease clocks, metrics on a free port unless `extra` sets
/// `--metrics-bind-address`) plus `extra`; its decisions go to `log`.
pub fn start_agent(
    fleet: &LiveFleet,
    name: &str,
    prometheus: &str,
    log: &Path,
    extra: &[&str],
) -> Agent {
    let mut args = fleet.agent_args(name, log);
    args.extend(
        [
            "--prometheus-url",
            prometheus,
            "--interval",
            "2s",
            "--health-probe-bind-address",
            "0",
            "--test-agent-lease-duration",
            "4s",
        ]
        .map(str::to_owned),
    );
    // Metrics on a free port unless `extra` names one (a test that scrapes them).
    if !extra.contains(&"--metrics-bind-address") {
        args.extend(["--metrics-bind-address", "127.0.0.1:0"].map(str::to_owned));
    }
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let cli = Cli::try_parse_from(args).expect("agent flags");
    let Command::Agent(args) = cli.command else {
        panic!("not the agent command");
    };
    let config = args.config("plumb-agent-0".to_owned());
    let (stop, stopped) = oneshot::channel::<()>();
    let (kill, killed) = oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let outcome = rt.block_on(async move {
            let run = std::pin::pin!(plumb_kube::agent::run::run(config, async {
                let _ = stopped.await;
            }));
            match futures::future::select(run, killed).await {
                Either::Left((result, _)) => Some(result),
                Either::Right(_) => None,
            }
        });
        rt.shutdown_background();
        if let Some(Err(e)) = outcome {
            eprintln!("agent stopped: {e:#}");
        }
    });
    Agent {
        name: name.to_owned(),
        log: log.to_owned(),
        stop: Some(stop),
        kill: Some(kill),
        thread: Some(thread),
    }
}

fn policies(fleet: &LiveFleet, member: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("plumb-k8s.github.io", "v1alpha1", "AdaptivePolicy"),
        "adaptivepolicies",
    );
    Api::namespaced_with(fleet.member(member).client.clone(), NAMESPACE, &ar)
}

/// `member`'s copy of the story's policy (`None`: unreadable).
pub async fn policy_on(fleet: &LiveFleet, member: &str) -> Option<Value> {
    policies(fleet, member)
        .get(WORKLOAD)
        .await
        .ok()
        .map(|p| p.data)
}

/// Merge-patches `member`'s copy's spec with `spec`.
pub async fn patch_spec(fleet: &LiveFleet, member: &str, spec: Value) {
    policies(fleet, member)
        .patch(
            WORKLOAD,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "spec": spec })),
        )
        .await
        .unwrap_or_else(|e| panic!("patch {member}'s copy: {e}"));
}

/// The intent's replicas on `member`'s copy of the policy (0 when none).
pub async fn intent_on(fleet: &LiveFleet, member: &str) -> u64 {
    policy_on(fleet, member)
        .await
        .and_then(|p| p["status"]["intent"]["replicas"].as_u64())
        .unwrap_or(0)
}

/// Ready replicas of the workload in `member`.
pub async fn ready_in(fleet: &LiveFleet, member: &str) -> i32 {
    let api: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(fleet.member(member).client.clone(), NAMESPACE);
    api.get(WORKLOAD)
        .await
        .ok()
        .and_then(|d| d.status?.ready_replicas)
        .unwrap_or(0)
}

/// The sequence of a decision id `<sequence>-<hash>`.
pub fn sequence(decision_id: &str) -> u64 {
    decision_id
        .split_once('-')
        .and_then(|(s, _)| s.parse().ok())
        .unwrap_or_else(|| panic!("decision id {decision_id:?} is not <sequence>-<hash>"))
}

/// The story playing on the live fleet: every member's scaler, KEDA client, Prometheus and
/// whole agent started.
pub struct Running {
    /// The story (emulators, KEDA clients, Prometheus scripts).
    pub story: Story,
    /// The members' names, the short one first.
    pub names: Vec<String>,
    /// Each member's agent (absent once stopped or killed).
    pub agents: BTreeMap<String, Agent>,
    /// Each member's Prometheus URL.
    pub prometheus: BTreeMap<String, String>,
    /// When the story started.
    pub start: Instant,
    /// The fleet's load over time.
    pub load: fn(Duration) -> f64,
    tag: String,
}

/// The borrowing story's load: calm at first, then more than the first member can serve.
pub fn rising_load(elapsed: Duration) -> f64 {
    if elapsed < Duration::from_secs(10) {
        15.0
    } else {
        60.0
    }
}

impl Running {
    /// Installs the story (policy in `mode`) and starts every member; `agent_flags(name)`
    /// gives each agent's extra flags and `prometheus(name)` may replace its Prometheus URL.
    pub async fn start(
        fleet: &LiveFleet,
        tag: &str,
        mode: &str,
        agent_flags: impl Fn(&str) -> Vec<&'static str>,
        prometheus: impl Fn(&str, String) -> String,
    ) -> Running {
        fleet.prepare().await;
        let names = fleet.names();
        let mut story = Story::new(
            names
                .iter()
                .map(|n| (n.clone(), fleet.member(n).client.clone()))
                .collect(),
        );
        story
            .install(mode, StoryTiming::default())
            .await
            .expect("story installed");
        let mut running = Running {
            story,
            names: names.clone(),
            agents: BTreeMap::new(),
            prometheus: BTreeMap::new(),
            start: Instant::now(),
            load: rising_load,
            tag: tag.to_owned(),
        };
        for (i, name) in names.iter().enumerate() {
            let endpoint = start_scaler(fleet.member(name).client.clone(), name).await;
            running
                .story
                .attach_keda(i, endpoint)
                .await
                .expect("KEDA connects");
            let url = running.story.members[i]
                .prometheus
                .serve()
                .await
                .expect("prometheus");
            let url = prometheus(name, url);
            running.prometheus.insert(name.clone(), url);
            running.start_agent(fleet, name, &agent_flags(name));
        }
        running.start = Instant::now();
        running
    }

    /// Starts (again) member `name`'s agent with `extra` flags; its log is its own file.
    pub fn start_agent(&mut self, fleet: &LiveFleet, name: &str, extra: &[&str]) {
        let log = std::env::temp_dir().join(format!(
            "plumb-live-{}-{}-{name}.jsonl",
            self.tag,
            std::process::id()
        ));
        let _ = std::fs::remove_file(&log);
        let agent = start_agent(fleet, name, &self.prometheus[name], &log, extra);
        self.agents.insert(name.to_owned(), agent);
    }

    /// One story tick now; the weights sum to 100 at every tick.
    pub async fn tick(&mut self) -> TickView {
        let elapsed = self.start.elapsed();
        let view = self
            .story
            .tick(elapsed, (self.load)(elapsed))
            .await
            .expect("tick");
        let sum: u32 = view.weights.values().sum();
        assert_eq!(sum, 100, "weights always sum to 100: {:?}", view.weights);
        view
    }

    /// Ticks every second until `f` gives `Some`; panics naming `what` (with the last log
    /// lines) after `limit`.
    pub async fn until<T>(
        &mut self,
        limit: Duration,
        what: &str,
        mut f: impl AsyncFnMut(&TickView) -> Option<T>,
    ) -> T {
        let begun = Instant::now();
        loop {
            let view = self.tick().await;
            if let Some(t) = f(&view).await {
                return t;
            }
            assert!(
                begun.elapsed() < limit,
                "not within {limit:?}: {what}; last view {view:#?}\nlogs:\n{}",
                logs()
                    .text()
                    .lines()
                    .rev()
                    .take(40)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Every agent still running stopped gracefully.
    pub async fn stop(mut self) {
        for (_, agent) in std::mem::take(&mut self.agents) {
            agent.stop().await;
        }
    }
}

/// Now, by this machine's clock.
pub fn now() -> utc_time::Timestamp {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    utc_time::Timestamp::from_unix_nanos(i64::try_from(nanos).expect("nanos"))
}

/// An RFC 3339 time the agents wrote.
pub fn time(text: &str) -> utc_time::Timestamp {
    utc_time::Timestamp::parse_rfc3339(text).unwrap_or_else(|e| panic!("{text:?}: {e:?}"))
}
