//! The `alfred-config` document in JSON: every error is one short line, and an accepted
//! configuration printed as JSON reads back to the same value.
#![no_main]

use alfred_fuzz::assert_error_line;
use alfred_model::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Config::from_json(text) {
        Ok(config) => {
            let json = config.to_effective_json();
            let again = Config::from_json(&json)
                .unwrap_or_else(|e| panic!("printed JSON does not re-parse: {e}\n{json}"));
            assert_eq!(config, again, "JSON round trip changed the config\n{json}");
        }
        Err(e) => {
            assert_error_line("config (JSON)", &e.to_string());
            assert_error_line(
                "config (JSON) in a file",
                &e.in_file("/etc/alfred/config.json"),
            );
        }
    }
});
