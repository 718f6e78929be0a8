//! `alfred replay --state FILE` (journal and node records): the file written back reads back
//! to the same state, and the reason a journal is unreadable is one short line.
#![no_main]

use alfred_dispatch::{DurableState, JournalSlot};
use alfred_fuzz::assert_error_line;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let state = DurableState::from_text(text);
    if let JournalSlot::Unreadable { error, .. } = &state.journal {
        assert_error_line("state file", error);
    }
    let printed = state.to_text();
    let again = DurableState::from_text(&printed);
    assert_eq!(state, again, "state round trip changed it\n{printed}");
});
