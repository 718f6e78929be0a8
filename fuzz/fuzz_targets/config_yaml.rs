//! The `alfred-config` document in YAML: every error is one short line, and an accepted
//! configuration printed as YAML and as JSON reads back to the same value.
#![no_main]

use alfred_fuzz::assert_error_line;
use alfred_model::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Config::from_yaml(text) {
        Ok(config) => {
            let yaml = config.to_effective_yaml();
            let again = Config::from_yaml(&yaml)
                .unwrap_or_else(|e| panic!("printed YAML does not re-parse: {e}\n{yaml}"));
            assert_eq!(config, again, "YAML round trip changed the config\n{yaml}");
            // The JSON form through the YAML reader: serde_json may land one ulp off on
            // 17-digit numbers (see `Config::from_json`), the YAML reader does not.
            let json = config.to_effective_json();
            let again = Config::from_yaml(&json)
                .unwrap_or_else(|e| panic!("printed JSON does not re-parse: {e}\n{json}"));
            assert_eq!(config, again, "JSON round trip changed the config\n{json}");
        }
        Err(e) => {
            assert_error_line("config (YAML)", &e.to_string());
            assert_error_line(
                "config (YAML) in a file",
                &e.in_file("/etc/alfred/config.yaml"),
            );
        }
    }
});
