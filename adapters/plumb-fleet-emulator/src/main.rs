//! `plumb-fleet`: a three-member Plumb fleet on this machine, for watching it work (`cargo
//! xtask plumb-fleet` builds `plumb` and runs this). Three private API servers (ports 17543,
//! 17553, 17563), each with the real `plumb agent` and `plumb scaler` processes, a cluster
//! emulator, a KEDA-protocol client and a scripted Prometheus; the load rises after 30 s
//! beyond what the first member can serve and falls after 4 minutes. The agents' decision
//! lines are printed as they come, with a status line every 5 s; Ctrl-C (or `--minutes`) stops
//! everything and the servers. Logs are in `--dir` (`<member>-agent.log`, `<member>-scaler.log`).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;
use plumb_fleet_emulator::fleet::{self, MemberServer};
use plumb_fleet_emulator::scenario::{Story, StoryTiming};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// `plumb-fleet`'s arguments.
#[derive(Debug, Parser)]
#[command(
    name = "plumb-fleet",
    about = "A three-member Plumb fleet on this machine"
)]
struct Args {
    /// Where the servers' state and the logs go.
    #[arg(long, default_value = "target/plumb-fleet")]
    dir: PathBuf,
    /// The `plumb` binary.
    #[arg(long, default_value = "target/debug/plumb")]
    plumb: PathBuf,
    /// Stop after this many minutes (0: run until Ctrl-C).
    #[arg(long, default_value_t = 0)]
    minutes: u64,
    /// The policy's mode: `auto` (floors and weights written) or `shadow` (decided, not written).
    #[arg(long, default_value = "auto")]
    mode: String,
}

/// The members and their API server ports (apart from `cargo xtask plumb-live`'s).
const MEMBERS: [(&str, u16); 3] = [("us-east", 17543), ("us-west", 17553), ("eu-west", 17563)];

/// The fleet's load in requests per second at `t`: calm, then a peak the first member cannot
/// serve alone, then calm again.
fn load(t: Duration) -> f64 {
    match t.as_secs() {
        0..30 => 15.0,
        30..270 => 60.0,
        _ => 15.0,
    }
}

/// A decision-log line as one short line for the terminal.
fn summarize(member: &str, line: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return format!("[{member}] {line}");
    };
    let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
    match v["kind"].as_str() {
        Some("decision") => format!(
            "[hub {member}] {} decision {} {} {}: {}{}",
            s("time"),
            s("decisionId"),
            s("phase"),
            s("action"),
            s("message"),
            if v["applied"] == true {
                ""
            } else {
                " (not applied)"
            }
        ),
        Some("outcome") => format!(
            "[hub {member}] {} outcome of {} after {}s: {}",
            s("time"),
            s("decisionId"),
            v["afterSeconds"],
            v["clusters"]
        ),
        _ => format!("[{member}] {line}"),
    }
}

/// Starts `plumb <args>` with its standard error to `log`; standard output piped.
fn spawn(plumb: &PathBuf, args: &[String], kubeconfig: &PathBuf, log: &PathBuf) -> Result<Child> {
    let stderr = std::fs::File::create(log)?;
    Command::new(plumb)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("POD_NAME", "plumb-0")
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", plumb.display()))
}

/// Prints each line the child writes to its standard output, summarized.
fn echo(member: String, child: &mut Child) {
    if let Some(out) = child.stdout.take() {
        tokio::spawn(async move {
            let mut lines = BufReader::new(out).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                println!("{}", summarize(&member, &line));
            }
        });
    }
}

/// SIGTERM (so the agents release their Leases), then wait a little.
async fn stop_all(children: &mut [Child]) {
    for c in children.iter() {
        if let Some(pid) = c.id() {
            let _ = std::process::Command::new("kill")
                .arg(pid.to_string())
                .status();
        }
    }
    for c in children.iter_mut() {
        let _ = tokio::time::timeout(Duration::from_secs(5), c.wait()).await;
    }
}

fn member_args(
    m: &MemberServer,
    i: usize,
    providers: &std::path::Path,
    prometheus: &str,
) -> (Vec<String>, Vec<String>) {
    let scaler = vec![
        "scaler".into(),
        "--grpc-bind-address".into(),
        format!("127.0.0.1:{}", 16600 + i),
        "--metrics-bind-address".into(),
        format!("127.0.0.1:{}", 16700 + i),
        "--health-probe-bind-address".into(),
        "0".into(),
        "--namespace".into(),
        fleet::NAMESPACE.into(),
        "--cluster-name".into(),
        m.name.clone(),
    ];
    let agent = vec![
        "agent".into(),
        "--cluster-name".into(),
        m.name.clone(),
        "--namespace".into(),
        fleet::NAMESPACE.into(),
        "--kubeconfig".into(),
        m.kubeconfig().display().to_string(),
        "--clusterprofile-provider-file".into(),
        providers.display().to_string(),
        "--prometheus-url".into(),
        prometheus.into(),
        "--interval".into(),
        "5s".into(),
        "--hub-interval".into(),
        "2s".into(),
        "--metrics-bind-address".into(),
        format!("127.0.0.1:{}", 16800 + i),
        "--health-probe-bind-address".into(),
        "0".into(),
    ];
    (scaler, agent)
}

async fn play(args: &Args, members: &[MemberServer], children: &mut Vec<Child>) -> Result<()> {
    let providers = args.dir.join("providers.json");
    fleet::write_provider_file(&providers)?;
    fleet::prepare(members).await?;
    let mut clients = Vec::new();
    for m in members {
        clients.push((m.name.clone(), m.client().await?));
    }
    let mut story = Story::new(clients);
    story.install(&args.mode, StoryTiming::default()).await?;
    for (i, m) in members.iter().enumerate() {
        let prometheus = story.members[i].prometheus.serve().await?;
        let (scaler, agent) = member_args(m, i, &providers, &prometheus);
        let log = |what: &str| args.dir.join(format!("{}-{what}.log", m.name));
        children.push(spawn(
            &args.plumb,
            &scaler,
            &m.kubeconfig(),
            &log("scaler"),
        )?);
        let mut child = spawn(&args.plumb, &agent, &m.kubeconfig(), &log("agent"))?;
        echo(m.name.clone(), &mut child);
        children.push(child);
    }
    for i in 0..members.len() {
        let endpoint = format!("http://127.0.0.1:{}", 16600 + i);
        fleet::within(Duration::from_secs(30), "the scaler answers", async || {
            story.attach_keda(i, endpoint.clone()).await.ok()
        })
        .await?;
    }
    println!(
        "fleet up: {} members; load 15 rps, 60 rps from 30 s to 4.5 min (Ctrl-C stops)",
        members.len()
    );
    let start = Instant::now();
    let limit = (args.minutes > 0).then(|| Duration::from_secs(args.minutes * 60));
    let mut next_status = Duration::ZERO;
    loop {
        let t = start.elapsed();
        if limit.is_some_and(|l| t >= l) {
            return Ok(());
        }
        let view = story.tick(t, load(t)).await?;
        if t >= next_status {
            next_status = t + Duration::from_secs(5);
            let floors: Vec<String> = view
                .keda
                .iter()
                .map(|(m, (floor, replicas))| format!("{m} floor {floor} replicas {replicas}"))
                .collect();
            println!(
                "t={:>3}s load {:>4} rps | weights {:?} | {}",
                t.as_secs(),
                load(t),
                view.weights,
                floors.join(", ")
            );
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    std::fs::create_dir_all(&args.dir)?;
    let dir = std::fs::canonicalize(&args.dir)?;
    let members: Vec<MemberServer> = MEMBERS
        .iter()
        .map(|(name, port)| MemberServer {
            name: (*name).to_owned(),
            dir: dir.join(name),
            port: *port,
        })
        .collect();
    for m in &members {
        let m = m.clone();
        tokio::task::spawn_blocking(move || m.task("start")).await??;
    }
    let mut children = Vec::new();
    let result = play(
        &Args {
            dir: dir.clone(),
            ..args
        },
        &members,
        &mut children,
    )
    .await;
    stop_all(&mut children).await;
    for m in &members {
        let server = m.clone();
        if let Err(e) = tokio::task::spawn_blocking(move || server.task("stop")).await? {
            eprintln!("plumb-fleet: stopping {}: {e:#}", m.name);
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_lines_print_as_one_short_line() {
        let line = r#"{"kind":"decision","decisionId":"3-0a1b2c3d","time":"2026-12-07T12:00:00Z","phase":"Escalated","action":"AddCapacity","message":"us-west +2","applied":true}"#;
        assert_eq!(
            summarize("us-east", line),
            "[hub us-east] 2026-12-07T12:00:00Z decision 3-0a1b2c3d Escalated AddCapacity: us-west +2"
        );
        assert_eq!(summarize("us-east", "not json"), "[us-east] not json");
    }

    #[test]
    fn the_load_peaks_in_the_middle() {
        assert_eq!(load(Duration::from_secs(0)), 15.0);
        assert_eq!(load(Duration::from_secs(60)), 60.0);
        assert_eq!(load(Duration::from_secs(300)), 15.0);
    }
}
