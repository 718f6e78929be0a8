//! The `alfred` command line over the `alfred-kube` library: the flags of every subcommand,
//! `alfred run`'s logging and HTTP endpoints (`run`), `alfred replay` and its tables
//! (`replay`, `table`). `src/main.rs` is the binary; the live tests drive [`run::run_with`]
//! in process.
//!
//! Everything here is the command line's: a program that embeds alfred's Kubernetes adapter
//! uses `alfred-kube` (and the shared `kube-*` and `metrics-endpoint` crates) without clap,
//! axum or tracing-subscriber.

pub mod replay;
pub mod run;
pub mod table;
