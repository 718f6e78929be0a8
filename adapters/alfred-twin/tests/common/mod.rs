//! Helpers shared by the twin's integration tests.
#![allow(dead_code)]

use alfred_twin::arrivals::{Arrival, Mode};
use alfred_twin::engine::{MINUTE, SimOptions};
use alfred_twin::trace::{TraceNode, TraceTask};

pub fn nodes(count: usize, gpus: u32) -> Vec<TraceNode> {
    (0..count)
        .map(|i| TraceNode {
            name: format!("n{i}"),
            cpu_milli: 64_000,
            memory_mib: 262_144,
            gpus,
            model: "G".into(),
        })
        .collect()
}

pub fn task(gpus: u32) -> TraceTask {
    TraceTask {
        name: format!("g{gpus}"),
        cpu_milli: 1000,
        memory_mib: 1024,
        gpus,
        gpu_spec: vec![],
        creation: None,
        deletion: None,
    }
}

pub fn arrival(at_min: i64, task: usize, life_min: Option<i64>) -> Arrival {
    Arrival {
        at: at_min * MINUTE,
        task,
        lifetime: life_min.map(|l| l * MINUTE),
        gang: false,
    }
}

pub fn gang_arrival(at_min: i64, task: usize, life_min: Option<i64>) -> Arrival {
    Arrival {
        gang: true,
        ..arrival(at_min, task, life_min)
    }
}

pub fn opts(hours: i64) -> SimOptions {
    SimOptions {
        horizon_ms: hours * 60 * MINUTE,
        mode: Mode::Churn,
        warmup_ms: 0,
        sample_every_ms: 10 * MINUTE,
        score_every_ms: 0,
        ack_delay_ms: 10_000,
        ready_ms: 3 * MINUTE,
        cpu_mem: true,
    }
}

pub fn shared_data(file: &str) -> Option<std::path::PathBuf> {
    let rel = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/alibaba-gpu-v2023")
        .join(file);
    if rel.exists() {
        return Some(rel);
    }
    let abs = std::path::Path::new("/work/shared/data/alibaba-gpu-v2023").join(file);
    abs.exists().then_some(abs)
}

/// Whether `CI` (as CI services set it) asks for a CI run: set, and not empty, `0` or `false`.
pub fn is_ci(ci: Option<&str>) -> bool {
    ci.is_some_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false"))
}

/// Called by a test whose trace data is missing: outside CI it prints a notice and the test
/// returns (a clone without `../shared` still passes); in CI it fails, so a CI machine that
/// lost the data cannot pass without running the trace tests.
pub fn skip_unless_ci(what: &str) {
    let ci = std::env::var("CI").ok();
    assert!(
        !is_ci(ci.as_deref()),
        "CI={} but the trace data is missing: {what}; CI must run this test, not skip it",
        ci.unwrap_or_default()
    );
    println!("NOTICE: {what}; test skipped (CI is not set)");
}
