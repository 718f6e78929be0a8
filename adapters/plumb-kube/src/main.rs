//! `plumb`: the multi-cluster capacity hub's binary.
//!
//! Subcommands:
//! - `plumb replay DIR --cluster NAME --now TIME`: the member report of a recorded member,
//!   offline and deterministic (see the `replay` module).
//! - `plumb replay DIR [--format json]` on a fleet folder (`fleet.json`): the hub's decision
//!   log over the recorded timeline (see the `fleet` module).
//! - `plumb policy check FILE`: validate an AdaptivePolicy; `--print-effective` prints it with
//!   defaults.
//! - `plumb scaler`: the KEDA external-push scaler serving this member's floors over gRPC
//!   (the `plumb-scaler` crate); runs until SIGTERM or Ctrl-C, exits 1 when it cannot start.
//! - `plumb agent`: reports this member into its AdaptivePolicies and, when a majority of
//!   members elects it, is the fleet's hub; runs until SIGTERM or Ctrl-C, exits 1 when it
//!   cannot start.
//! - `plumb version`.
//!
//! Exit status: 0 on success, 2 on bad input (one line naming the file and the field).

use std::process::ExitCode;

use clap::Parser;
use plumb_kube::cli::{Cli, Command, PolicyCommand};

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Replay(args) => plumb_kube::replay::main(&args),
        Command::Policy {
            command: PolicyCommand::Check(args),
        } => {
            let outcome = plumb_kube::policy::check_file(&args.file, args.print_effective);
            print!("{}", outcome.stdout);
            eprint!("{}", outcome.stderr);
            if outcome.valid {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(plumb_kube::EXIT_BAD_INPUT)
            }
        }
        Command::Agent(args) => plumb_kube::agent::run::main(&args),
        Command::Scaler(args) => plumb_kube::scaler::main(&args),
        Command::Version => {
            println!("plumb {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
    }
}
