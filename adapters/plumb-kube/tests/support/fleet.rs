//! The live fleet: member API servers named in `PLUMB_LIVE_MEMBERS`
//! (`<name>=<dir>,...`, the `--dir` of each private `apiserver start`) and the access-provider
//! file in `PLUMB_LIVE_PROVIDER_FILE`, both exported by `cargo xtask plumb-live`.
//!
//! [`LiveFleet::prepare`] brings every member to the same start: its API server up, the CRDs
//! of `deploy/plumb/crds` and `fixtures/plumb/crds` established, the namespace `plumb`, no
//! `plumb-hub` Lease, and exactly one ClusterProfile per peer whose access provider points at
//! the peer's server and passes the peer's `tokens.csv` to the test exec plugin (KEP-5339's
//! additional-args extension). Agents run in-process ([`LiveFleet::start_agent`]) with the
//! hidden test clocks: lease 4 s, renew deadline 3 s, retry 500 ms.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Parser;
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use plumb_fleet_emulator::fleet::{self, MemberServer};
use plumb_kube::agent::AgentMetrics;
use plumb_kube::agent::hub::{self, HubContext};
use plumb_kube::cli::{Cli, Command};
use serde_json::Value;
use tokio::sync::watch;

/// Plumb's namespace in every member.
pub const NAMESPACE: &str = "plumb";
/// The provider name the xtask's provider file declares.
pub const PROVIDER: &str = "plumb-live";
/// The hidden test clocks the agents run with.
pub const LEASE_DURATION: Duration = Duration::from_secs(4);

/// One member cluster: its API server and an admin client.
#[derive(Clone)]
pub struct Member {
    /// Its name (the cluster name of its agent, the name of its ClusterProfile elsewhere).
    pub name: String,
    /// The server's state folder.
    pub dir: PathBuf,
    /// The kube-apiserver port.
    pub port: u16,
    /// An admin client.
    pub client: Client,
}

impl Member {
    /// Its server as the fleet module names it.
    pub fn spec(&self) -> MemberServer {
        MemberServer {
            name: self.name.clone(),
            dir: self.dir.clone(),
            port: self.port,
        }
    }

    /// The admin kubeconfig.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("admin.kubeconfig")
    }

    /// `https://127.0.0.1:<port>`.
    pub fn server(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }
}

/// The fleet of the live tests.
pub struct LiveFleet {
    /// The members, in `PLUMB_LIVE_MEMBERS`'s order.
    pub members: Vec<Member>,
    /// The access-provider file.
    pub provider_file: PathBuf,
}

async fn admin_client(kubeconfig: &Path) -> Client {
    fleet::client_of(kubeconfig)
        .await
        .unwrap_or_else(|e| panic!("{e:#}"))
}

impl LiveFleet {
    /// The fleet `cargo xtask plumb-live` started.
    pub async fn from_env() -> LiveFleet {
        let spec = std::env::var("PLUMB_LIVE_MEMBERS")
            .expect("PLUMB_LIVE_MEMBERS is not set: run these tests with `cargo xtask plumb-live`");
        let provider_file = PathBuf::from(
            std::env::var("PLUMB_LIVE_PROVIDER_FILE").expect("PLUMB_LIVE_PROVIDER_FILE"),
        );
        let mut members = Vec::new();
        for entry in spec.split(',') {
            let (name, dir) = entry.split_once('=').expect("<name>=<dir>");
            let dir = PathBuf::from(dir);
            let text = std::fs::read_to_string(dir.join("admin.kubeconfig")).expect("kubeconfig");
            let port = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("server: https://127.0.0.1:"))
                .and_then(|p| p.parse().ok())
                .expect("the kubeconfig's server port");
            let client = admin_client(&dir.join("admin.kubeconfig")).await;
            members.push(Member {
                name: name.to_owned(),
                dir,
                port,
                client,
            });
        }
        LiveFleet {
            members,
            provider_file,
        }
    }

    /// The member called `name`.
    pub fn member(&self, name: &str) -> &Member {
        self.members
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no member {name}"))
    }

    /// The members' names.
    pub fn names(&self) -> Vec<String> {
        self.members.iter().map(|m| m.name.clone()).collect()
    }

    /// Every member up and set up as the module says.
    pub async fn prepare(&self) {
        for m in &self.members {
            if !apiserver_running(&m.dir) {
                self.restart_apiserver(&m.name).await;
            }
        }
        fleet::prepare(&self.servers())
            .await
            .unwrap_or_else(|e| panic!("preparing the fleet: {e:#}"));
    }

    /// The ClusterProfile naming `peer`, with the test provider's access.
    pub fn profile_of(&self, peer: &Member) -> Value {
        peer.spec()
            .profile()
            .unwrap_or_else(|e| panic!("{}'s profile: {e:#}", peer.name))
    }

    /// The members as the fleet module names their servers.
    pub fn servers(&self) -> Vec<MemberServer> {
        self.members.iter().map(Member::spec).collect()
    }

    /// Kills `name`'s kube-apiserver, as a crash would (SIGTERM would let it drain its watches
    /// for up to a minute); its etcd, certs and tokens stay, for a restart.
    pub async fn stop_apiserver(&self, name: &str) {
        let dir = self.member(name).dir.clone();
        let pid = std::fs::read_to_string(dir.join("kube-apiserver.pid")).expect("pid file");
        let pid = pid.trim().to_owned();
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status();
        eventually(&format!("{name}'s kube-apiserver stopped"), async || {
            (!apiserver_running(&dir)).then_some(())
        })
        .await;
    }

    /// Restarts `name`'s kube-apiserver and waits until it is ready.
    pub async fn restart_apiserver(&self, name: &str) {
        let server = self.member(name).spec();
        tokio::task::spawn_blocking(move || server.task("restart"))
            .await
            .expect("restart task")
            .unwrap_or_else(|e| panic!("restart {name}: {e:#}"));
    }

    /// `plumb agent`'s command line for member `name`, test clocks included.
    pub fn agent_args(&self, name: &str, log: &Path) -> Vec<String> {
        let m = self.member(name);
        [
            "plumb",
            "agent",
            "--cluster-name",
            name,
            "--namespace",
            NAMESPACE,
            "--kubeconfig",
            &m.kubeconfig().display().to_string(),
            "--clusterprofile-provider-file",
            &self.provider_file.display().to_string(),
            "--hub-interval",
            "1s",
            "--decision-log",
            &log.display().to_string(),
            "--test-hub-lease-duration",
            "4s",
            "--test-hub-renew-deadline",
            "3s",
            "--test-hub-retry-period",
            "500ms",
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// Starts member `name`'s hub loop in-process as pod `pod`.
    pub async fn start_agent(&self, name: &str, pod: &str) -> RunningAgent {
        let m = self.member(name);
        let log = std::env::temp_dir().join(format!(
            "plumb-live-decisions-{}-{name}-{pod}.jsonl",
            std::process::id()
        ));
        let cli = Cli::try_parse_from(self.agent_args(name, &log)).expect("agent flags");
        let Command::Agent(args) = cli.command else {
            panic!("not the agent command");
        };
        let config = args.config(pod.to_owned());
        let identity = config.identity();
        let metrics = AgentMetrics::new();
        let (reports_tx, reports_changed) = watch::channel(0u64);
        let (stop, stop_rx) = watch::channel(false);
        let (done_tx, done) = tokio::sync::oneshot::channel();
        let kubeconfig = m.kubeconfig();
        let agent_metrics = metrics.clone();
        // Each agent on its own thread and runtime, as its own process would be (and the hub
        // loop's future need not be Send).
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            let result = rt.block_on(async move {
                let ctx = HubContext {
                    config,
                    client: admin_client(&kubeconfig).await,
                    metrics: agent_metrics,
                    reports_changed,
                };
                hub::run(ctx, stop_rx).await
            });
            let _ = done_tx.send(result);
        });
        RunningAgent {
            name: name.to_owned(),
            identity,
            metrics,
            stop,
            done: Some(done),
            _reports: reports_tx,
        }
    }

    /// The holder of `name`'s `plumb-hub` Lease (`None`: none, or the server does not answer).
    pub async fn holder(&self, name: &str) -> Option<String> {
        let leases: Api<Lease> = Api::namespaced(self.member(name).client.clone(), NAMESPACE);
        let lease = leases.get_opt("plumb-hub").await.ok()??;
        lease.spec?.holder_identity.filter(|h| !h.is_empty())
    }
}

/// A ClusterProfile named `name` with these access providers.
pub fn profile(name: &str, access_providers: Value) -> Value {
    fleet::cluster_profile(name, access_providers)
}

/// Makes `profiles` the only ClusterProfiles of the member.
pub async fn set_profiles(client: &Client, profiles: &[Value]) {
    fleet::set_profiles(client, profiles)
        .await
        .unwrap_or_else(|e| panic!("setting the ClusterProfiles: {e:#}"));
}

/// Whether the kube-apiserver of the state folder `dir` runs (its pid file names a live,
/// non-zombie process).
fn apiserver_running(dir: &Path) -> bool {
    let Ok(pid) = std::fs::read_to_string(dir.join("kube-apiserver.pid")) else {
        return false;
    };
    std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).is_ok_and(|stat| {
        !stat
            .rsplit_once(") ")
            .is_some_and(|(_, r)| r.starts_with('Z'))
    })
}

/// An agent's hub loop running in this process.
pub struct RunningAgent {
    /// Its member.
    pub name: String,
    /// `<cluster>/<pod>`.
    pub identity: String,
    /// Its metrics.
    pub metrics: AgentMetrics,
    stop: watch::Sender<bool>,
    done: Option<tokio::sync::oneshot::Receiver<anyhow::Result<()>>>,
    _reports: watch::Sender<u64>,
}

impl RunningAgent {
    /// Whether its `plumb_hub_leading` is 1.
    pub fn leading(&self) -> bool {
        self.metrics.hub_leading.get() == 1
    }

    /// Its `plumb_fleet_members`.
    pub fn fleet_members(&self) -> i64 {
        self.metrics.fleet_members.get()
    }

    /// Stops it gracefully (it releases its Leases) and waits until it has.
    pub async fn stop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(done) = self.done.take() {
            done.await.expect("agent thread").expect("agent run");
        }
    }
}

impl Drop for RunningAgent {
    /// A dropped agent stops (its thread releases and ends on its own).
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// The one leading agent, once exactly one leads and every Lease that answers names it.
pub async fn one_hub<'a>(fleet: &LiveFleet, agents: &'a [RunningAgent]) -> &'a RunningAgent {
    eventually(
        "exactly one hub, named by every answering Lease",
        async || {
            let leading: Vec<&RunningAgent> = agents.iter().filter(|a| a.leading()).collect();
            let [hub] = leading.as_slice() else {
                return None;
            };
            for m in &fleet.members {
                if apiserver_running(&m.dir)
                    && fleet.holder(&m.name).await.as_deref() != Some(hub.identity.as_str())
                {
                    return None;
                }
            }
            Some(*hub)
        },
    )
    .await
}

/// Polls `f` every 100 ms until it gives `Some`; panics naming `what` after 60 s.
pub async fn eventually<T>(what: &str, mut f: impl AsyncFnMut() -> Option<T>) -> T {
    for _ in 0..600 {
        if let Some(t) = f().await {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("not within 60 s: {what}");
}

/// Everything the process logs (tracing, INFO and up), also echoed to stderr.
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    /// Installs the process's subscriber writing here; call once per test process.
    pub fn capture() -> Logs {
        let logs = Logs::default();
        let writer = logs.clone();
        let _ = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .try_init();
        logs
    }

    /// The text so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("logs")).into_owned()
    }
}

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("logs").extend_from_slice(buf);
        std::io::stderr().write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
