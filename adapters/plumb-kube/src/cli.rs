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
