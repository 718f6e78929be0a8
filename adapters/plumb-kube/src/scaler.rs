//! `plumb scaler`: starts the tokio runtime and JSON logs, and runs the `plumb-scaler` crate's
//! server (the gRPC service, its cache and the watchers live there).

use std::process::ExitCode;

use crate::cli::ScalerArgs;

/// Runs the scaler until SIGTERM or Ctrl-C; exit 1 with one line when it cannot start.
pub fn main(args: &ScalerArgs) -> ExitCode {
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("plumb scaler: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(plumb_scaler::server::run(args.config())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("plumb scaler: {}", crate::one_line(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}
