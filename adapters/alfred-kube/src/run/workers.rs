//! Simulation workers (alfred-engine.md §10.2): `workers.json` is loaded and every worker is
//! probed with `--print-profile` before alfred reports ready; any failure stops alfred at
//! startup with `unable to configure recommendation simulation: <cause>`.

use std::process::Stdio;
use std::time::Duration;

use alfred_sim::workers::{WorkersFile, check_probe, go_duration_ms, parse_workers, probe_args};
use tokio::io::AsyncReadExt;

/// The whole probe's budget.
pub const PROBE_BUDGET: Duration = Duration::from_secs(30);

/// Loads `workers.json` and probes every worker within [`PROBE_BUDGET`].
pub async fn load_and_probe(
    path: &str,
    simulation_timeout: Duration,
) -> Result<WorkersFile, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("read {path}: {e}"))?;
    let file = parse_workers(&bytes).map_err(|e| e.to_string())?;
    let timeout = go_duration_ms(u64::try_from(simulation_timeout.as_millis()).unwrap_or(u64::MAX));
    let probe = async {
        for (i, w) in file.workers.iter().enumerate() {
            check_executable(&w.binary_path).map_err(|e| format!("worker {i}: {e}"))?;
            let mut child = tokio::process::Command::new(&w.binary_path)
                .args(probe_args(w, &timeout))
                .env_clear()
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| format!("probe worker {i}: {e}"))?;
            let mut out = Vec::new();
            if let Some(mut stdout) = child.stdout.take() {
                stdout
                    .read_to_end(&mut out)
                    .await
                    .map_err(|e| format!("probe worker {i}: {e}"))?;
            }
            let status = child
                .wait()
                .await
                .map_err(|e| format!("probe worker {i}: {e}"))?;
            check_probe(w, status.success(), &out).map_err(|e| format!("probe worker {i}: {e}"))?;
        }
        Ok::<(), String>(())
    };
    match tokio::time::timeout(PROBE_BUDGET, probe).await {
        Ok(Ok(())) => Ok(file),
        Ok(Err(e)) => Err(e),
        Err(_) => Err("probing the simulation workers took longer than 30s".to_owned()),
    }
}

fn check_executable(path: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| format!("{path}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{path} is not a regular file"));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err("worker binary is not executable".to_owned());
    }
    Ok(())
}
