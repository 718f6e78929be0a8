//! The dispatch journal (`state.json` of the `alfred-dispatch-state` ConfigMap: entries,
//! backoff and drain plans): refusals are one short line naming the field, and an accepted
//! journal written back reads back equal (`print(parse(x)) == parse(x)`).
#![no_main]

use alfred_dispatch::{Journal, JournalError};
use alfred_fuzz::assert_error_line;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Journal::parse(text) {
        Ok(journal) => match journal.to_state_json() {
            Ok(printed) => {
                let again = Journal::parse(&printed).unwrap_or_else(|e| {
                    panic!("a written journal does not re-parse: {e}\n{printed}")
                });
                assert_eq!(journal, again, "journal round trip changed it\n{printed}");
            }
            // Compact output can only be shorter than what was read, which fit.
            Err(JournalError::TooLarge(n)) => {
                panic!("a journal read from {} bytes writes {n}", text.len())
            }
            Err(e) => panic!("an accepted journal cannot be written: {e}"),
        },
        Err(e) => assert_error_line("journal", &e.to_string()),
    }
});
