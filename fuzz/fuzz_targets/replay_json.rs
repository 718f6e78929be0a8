//! `alfred replay`'s JSON input (`kubectl get -o json`: a List of mixed kinds or one object),
//! read by the streaming reader: one short error line, and a reading that does not depend on
//! how the List is laid out (the whole-text reader agrees with the multi-document one).
#![no_main]

use alfred_fuzz::assert_error_line;
use alfred_observe::ClusterObjects;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match ClusterObjects::from_list_json(text) {
        Ok(objects) => {
            let counts = |o: &ClusterObjects| (o.nodes.len(), o.pods.len(), o.unrecognised.len());
            if text.trim_start().starts_with(['{', '[']) {
                let again = ClusterObjects::from_documents(text).unwrap_or_else(|e| {
                    panic!("from_documents refuses what from_list_json read: {e}")
                });
                assert_eq!(counts(&objects), counts(&again));
            }
        }
        Err(e) => assert_error_line("replay JSON", &e.to_string()),
    }
});
