//! The simulator's KubeSchedulerConfiguration file (YAML or JSON): refusals are one short
//! line, and loading is deterministic (the profile's identity depends on it).
#![no_main]

use alfred_fuzz::assert_error_line;
use alfred_sim::load_config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match load_config(text) {
        Ok(profile) => assert_eq!(Ok(profile), load_config(text)),
        Err(e) => assert_error_line("scheduler configuration", &e.to_string()),
    }
});
