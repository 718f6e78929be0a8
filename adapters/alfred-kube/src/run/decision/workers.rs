//! Simulation workers (docs/design-runtime.md#simulation-workers): `workers.json` is loaded and
//! every worker is probed with `--print-profile` before alfred reports ready; any failure stops
//! alfred at startup with `unable to configure recommendation simulation: <cause>`.
//!
//! The loading and probing rules are the crate's [`WorkerPool::load`] (shared with
//! `alfred replay --simulation-workers`); here it runs on a blocking thread.

use std::path::PathBuf;
use std::time::Duration;

use crate::simulation::WorkerPool;

/// Loads `workers.json` and probes every worker (30 s for the whole probe).
pub async fn load_and_probe(
    path: &str,
    simulation_timeout: Duration,
) -> Result<WorkerPool, String> {
    let path = PathBuf::from(path);
    tokio::task::spawn_blocking(move || WorkerPool::load(&path, simulation_timeout))
        .await
        .map_err(|e| format!("probe task failed: {e}"))?
}
