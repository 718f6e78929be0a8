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
