//! `cargo xtask proto [--check]`: regenerates `adapters/plumb-scaler/generated/externalscaler.rs`
//! from `adapters/plumb-scaler/proto/externalscaler.proto` (KEDA's external scaler protocol,
//! written for Plumb), or with `--check` only says whether the committed file is current.
//!
//! The generator (tonic-prost-build over protox, a pure-Rust protobuf parser, so no `protoc`)
//! is the plumb-scaler crate's example `gen_proto`, whose dev-dependencies keep it out of every
//! normal build and out of this crate, which stays std + anyhow + serde_json.
//! `cargo test -p plumb-scaler` runs the same check (`tests/generated_code.rs`).

use std::process::Command;

use anyhow::{Result, bail};

use crate::workspace_root;

/// Runs the generator example with `args` (`--check` or nothing).
pub fn main(args: &[String]) -> Result<()> {
    if let Some(other) = args.iter().find(|a| a.as_str() != "--check") {
        bail!("proto: unknown argument {other:?} (usage: cargo xtask proto [--check])");
    }
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .current_dir(workspace_root())
        .args([
            "run",
            "--quiet",
            "-p",
            "plumb-scaler",
            "--example",
            "gen_proto",
            "--",
        ])
        .args(args)
        .status()?;
    if !status.success() {
        bail!("proto: the generator failed ({status})");
    }
    Ok(())
}
