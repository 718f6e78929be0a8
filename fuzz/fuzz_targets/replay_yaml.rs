//! `alfred replay`'s YAML input (`kubectl get -o yaml`, or `---`-separated manifests): one
//! short error line for anything it refuses.
#![no_main]

use alfred_fuzz::assert_error_line;
use alfred_observe::ClusterObjects;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = ClusterObjects::from_documents(text) {
        assert_error_line("replay YAML", &e.to_string());
    }
});
