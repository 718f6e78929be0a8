//! Workload annotations (`alfred.ome.io/*`): any value is either used or reported in one short
//! diagnostic line naming the annotation, and parsing is deterministic.
#![no_main]

use alfred_fuzz::assert_error_line;
use alfred_model::config::annotations::{
    COOLDOWN_MINUTES, MOVABLE, PRIORITY, SPOT_POLICY, TENANT_GROUP, WorkloadAnnotations,
};
use libfuzzer_sys::fuzz_target;

const KEYS: [&str; 5] = [
    MOVABLE,
    PRIORITY,
    COOLDOWN_MINUTES,
    TENANT_GROUP,
    SPOT_POLICY,
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // One value per line, in the order of KEYS; a missing line is an absent annotation.
    let values: Vec<&str> = text.split('\n').collect();
    let get = |key: &str| {
        let i = KEYS.iter().position(|k| *k == key)?;
        values.get(i).copied().filter(|v| *v != "<absent>")
    };
    for default_movable in [false, true] {
        let parsed = WorkloadAnnotations::parse(get, default_movable);
        assert_eq!(parsed, WorkloadAnnotations::parse(get, default_movable));
        assert!(
            (0.0..=1.0).contains(&parsed.priority),
            "priority {}",
            parsed.priority
        );
        for diagnostic in &parsed.diagnostics {
            let line = diagnostic.to_string();
            assert_error_line("workload annotation", &line);
            assert!(line.starts_with(diagnostic.annotation), "{line}");
        }
    }
});
