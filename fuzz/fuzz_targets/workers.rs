//! `workers.json` (the simulation workers alfred starts): refusals are one short line naming
//! the worker and field; an accepted file printed back reads back equal.
#![no_main]

use alfred_fuzz::assert_error_line;
use alfred_sim::parse_workers;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match parse_workers(data) {
        Ok(file) => {
            let printed = serde_json::to_vec(&file).expect("a workers file serializes");
            let again = parse_workers(&printed)
                .unwrap_or_else(|e| panic!("a printed workers file does not re-parse: {e}"));
            assert_eq!(file, again);
        }
        Err(e) => {
            assert_error_line("workers.json", &e.to_string());
            assert_error_line(
                "workers.json in a file",
                &e.in_file("/etc/alfred/workers.json"),
            );
        }
    }
});
