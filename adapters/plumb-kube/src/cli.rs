//! The `plumb` command line (clap): every subcommand and flag, in one place so the docs test
//! can hold docs/plumb/configuration.md to it.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::replay::ReplayArgs;

/// `plumb`.
#[derive(Debug, Parser)]
#[command(
    name = "plumb",
    version,
    about = "Multi-cluster capacity hub for model serving"
)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// `plumb`'s subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compute the member report of a recorded member, or the hub's decision log over a
    /// recorded fleet timeline, and print it.
    Replay(ReplayArgs),
    /// AdaptivePolicy commands.
    Policy {
        /// The policy subcommand.
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Report this member and, when a majority of members elects it, act as the fleet's hub.
    Agent(AgentArgs),
    /// Serve the hub's replica floors to KEDA: the external-push scaler (gRPC).
    Scaler(ScalerArgs),
    /// Print the version.
    Version,
}

/// `plumb policy`'s subcommands.
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Validate an AdaptivePolicy (YAML or JSON): every problem on its own line.
    Check(CheckArgs),
}

/// `plumb policy check`'s arguments.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The policy file (YAML, or JSON).
    pub file: PathBuf,
    /// Print the policy with every default filled in (notices then go to standard error).
    #[arg(long)]
    pub print_effective: bool,
}

/// `plumb scaler`'s arguments (docs/plumb/scaler.md).
#[derive(Debug, clap::Args)]
pub struct ScalerArgs {
    /// Where the gRPC server listens: HOST:PORT, or :PORT for every IPv4 interface.
    #[arg(long, default_value = ":6000", value_parser = plumb_scaler::server::parse_bind_address)]
    pub grpc_bind_address: std::net::SocketAddr,
    /// Plumb's namespace, where the member's `plumb-hub` Lease is (default: the pod's
    /// namespace, else plumb-system).
    #[arg(long)]
    pub namespace: Option<String>,
    /// This member's name in the policies' `clusters[]`: the served floor is capped at its
    /// `maxReplicas` (empty: no cap).
    #[arg(long)]
    pub cluster_name: Option<String>,
    /// PEM certificate (chain) to serve TLS with; needs --tls-key-file.
    #[arg(long, requires = "tls_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// PEM private key for --tls-cert-file.
    #[arg(long, requires = "tls_cert_file")]
    pub tls_key_file: Option<PathBuf>,
    /// Address of `/metrics` (also serves `/healthz` and `/readyz`).
    #[arg(long, default_value = ":8080")]
    pub metrics_bind_address: String,
    /// Address of `/healthz` and `/readyz` (`0`: only on --metrics-bind-address).
    #[arg(long, default_value = ":8081")]
    pub health_probe_bind_address: String,
}

impl ScalerArgs {
    /// What the scaler runs with.
    pub fn config(&self) -> plumb_scaler::server::ScalerConfig {
        plumb_scaler::server::ScalerConfig {
            bind: self.grpc_bind_address,
            namespace: self.namespace.clone(),
            cluster_name: self.cluster_name.clone().unwrap_or_default(),
            tls: self.tls_cert_file.clone().zip(self.tls_key_file.clone()),
            metrics_bind: self.metrics_bind_address.clone(),
            health_probe_bind: self.health_probe_bind_address.clone(),
        }
    }
}

/// A Go duration flag (`30s`, `2m`, `1h30m`) as a [`std::time::Duration`]; zero is refused.
pub fn parse_duration_flag(text: &str) -> Result<std::time::Duration, String> {
    match plumb_model::parse_go_duration(text) {
        Ok(0) => Err(format!("{text:?} must be longer than 0s")),
        Ok(nanos) => Ok(std::time::Duration::from_nanos(nanos)),
        Err(e) => Err(format!("{text:?}: {e}")),
    }
}

/// `plumb agent`'s arguments (docs/plumb/configuration.md).
#[derive(Debug, clap::Args)]
pub struct AgentArgs {
    /// This member's name: as the policies' `clusters[]` name it, and the first half of the
    /// Leases' holder `<cluster>/<pod>`.
    #[arg(long)]
    pub cluster_name: String,
    /// Plumb's namespace: the `plumb-agent` and `plumb-hub` Leases and the ClusterProfiles
    /// (default: the pod's namespace, else plumb-system).
    #[arg(long)]
    pub namespace: Option<String>,
    /// How often the member reports (Go duration).
    #[arg(long, default_value = "30s", value_parser = parse_duration_flag)]
    pub interval: std::time::Duration,
    /// How often the hub plans at least; it plans sooner when a member's report changes.
    #[arg(long, default_value = "10s", value_parser = parse_duration_flag)]
    pub hub_interval: std::time::Duration,
    /// The member's own Prometheus (e.g. `http://prometheus.monitoring:9090`); without it every
    /// configured signal fails and the Ready condition says so.
    #[arg(long)]
    pub prometheus_url: Option<String>,
    /// The access-provider file (JSON `{"providers": [...]}`, KEP-5339 exec plugins) that
    /// turns ClusterProfiles into credentials; without it the fleet is this member alone.
    #[arg(long)]
    pub clusterprofile_provider_file: Option<PathBuf>,
    /// Where decision and outcome lines go: `-` for standard output, else a file appended to.
    #[arg(long, default_value = "-")]
    pub decision_log: String,
    /// Elect one of the agent's replicas with the `plumb-agent` Lease.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// Address of `/metrics` (also serves `/healthz` and `/readyz`).
    #[arg(long, default_value = ":8080")]
    pub metrics_bind_address: String,
    /// Address of `/healthz` and `/readyz` (`0`: only on --metrics-bind-address).
    #[arg(long, default_value = ":8081")]
    pub health_probe_bind_address: String,
    /// The member's kubeconfig (default: in-cluster, else KUBECONFIG, else ~/.kube/config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Test only: the hub Lease's duration (the seed's 15 s).
    #[arg(long, hide = true, value_parser = parse_duration_flag)]
    pub test_hub_lease_duration: Option<std::time::Duration>,
    /// Test only: the hub's renew deadline (the seed's 10 s).
    #[arg(long, hide = true, value_parser = parse_duration_flag)]
    pub test_hub_renew_deadline: Option<std::time::Duration>,
    /// Test only: the election's retry period (the seed's 2 s).
    #[arg(long, hide = true, value_parser = parse_duration_flag)]
    pub test_hub_retry_period: Option<std::time::Duration>,
    /// Test only: how long a written floor holds (the seed's 5 min).
    #[arg(long, hide = true, value_parser = parse_duration_flag)]
    pub test_intent_expiry: Option<std::time::Duration>,
    /// Test only: the local `plumb-agent` Lease's duration (15 s).
    #[arg(long, hide = true, value_parser = parse_duration_flag)]
    pub test_agent_lease_duration: Option<std::time::Duration>,
}

impl AgentArgs {
    /// What the agent runs with; `pod_name` is this process's pod (the downward API's
    /// `POD_NAME`, else the host name).
    pub fn config(&self, pod_name: String) -> crate::agent::AgentConfig {
        use crate::agent::{AgentConfig, AgentTiming, DecisionLogTarget};
        let mut timing = AgentTiming::default();
        if let Some(d) = self.test_hub_lease_duration {
            timing.hub_lease.duration = d;
        }
        if let Some(d) = self.test_hub_renew_deadline {
            timing.hub_lease.renew_deadline = d;
        }
        if let Some(d) = self.test_hub_retry_period {
            timing.hub_lease.retry_period = d;
        }
        if let Some(d) = self.test_intent_expiry {
            timing.intent_ttl = d;
        }
        if let Some(d) = self.test_agent_lease_duration {
            timing.agent_lease_duration = d;
        }
        AgentConfig {
            cluster_name: self.cluster_name.clone(),
            namespace: AgentConfig::resolve_namespace(self.namespace.as_deref()),
            pod_name,
            interval: self.interval,
            hub_interval: self.hub_interval,
            prometheus_url: self.prometheus_url.clone(),
            provider_file: self.clusterprofile_provider_file.clone(),
            decision_log: DecisionLogTarget::from_flag(&self.decision_log),
            leader_elect: self.leader_elect,
            metrics_bind: self.metrics_bind_address.clone(),
            health_probe_bind: self.health_probe_bind_address.clone(),
            kubeconfig: self.kubeconfig.clone(),
            timing,
        }
    }
}
