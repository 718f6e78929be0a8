//! `alfred`: the GPU-cluster caretaker's binary.
//!
//! Subcommands:
//! - `alfred run`: the Kubernetes adapter (watches, leader lease, decision passes,
//!   effects, metrics). See `alfred_cli::run` and the `alfred-kube` library.
//! - `alfred replay`: one decision pass over a recorded cluster, offline and
//!   deterministic. See `alfred_cli::replay`.
//! - `alfred config check`: validate an alfred config and print it with defaults.
//!
//! Exit status: 0 on success, 2 on bad input (one line naming the file, the object and
//! the field), 1 on any other failure.

use alfred_cli::{replay, run};
use alfred_kube::load_config;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "alfred",
    version,
    about = "GPU-cluster caretaker for Kubernetes (OME)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run alfred against a cluster (kubeconfig or in-cluster).
    Run(Box<run::RunArgs>),
    /// Run one decision pass over recorded Kubernetes objects and print the result.
    Replay(Box<replay::ReplayArgs>),
    /// Configuration commands.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Validate an alfred config (`config.yaml` of the alfred-config ConfigMap, YAML or JSON).
    Check {
        /// The config file.
        file: PathBuf,
        /// Print the effective configuration, every key with its value.
        #[arg(long)]
        print_effective: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run::main(*args),
        Command::Replay(args) => replay::main(*args),
        Command::Config {
            command:
                ConfigCommand::Check {
                    file,
                    print_effective,
                },
        } => config_check(&file, print_effective),
    }
}

fn config_check(file: &std::path::Path, print_effective: bool) -> ExitCode {
    match load_config(file) {
        Ok(config) => {
            if print_effective {
                print!("{}", config.to_effective_yaml());
            } else {
                println!("{}: ok", file.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}", alfred_kube::one_line(&e));
            ExitCode::from(alfred_kube::EXIT_BAD_INPUT)
        }
    }
}
