//! Go durations as an AdaptivePolicy's fields are read (`plumb_model::parse_go_duration`):
//! a refusal is one short line; an accepted duration fits Go's range, prints in Go's
//! canonical form, and that form reads back to the same nanoseconds.
#![no_main]

use alfred_fuzz::assert_error_line;
use libfuzzer_sys::fuzz_target;
use plumb_model::duration::GoDuration;
use plumb_model::{format_go_duration, parse_go_duration};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = parse_go_duration(text);
    assert_eq!(
        GoDuration::new(text).nanos(),
        parsed.clone(),
        "the spec's duration type and the parser disagree on {text:?}"
    );
    match parsed {
        // The refusal itself, not only the line Plumb prints: this target found an unknown unit
        // echoed whole, and plumb-model clips it now.
        Err(e) => assert_error_line("duration", &e.to_string()),
        Ok(nanos) => {
            assert!(i64::try_from(nanos).is_ok(), "{text:?} is past Go's range");
            let canonical = format_go_duration(nanos);
            assert_eq!(
                parse_go_duration(&canonical),
                Ok(nanos),
                "{text:?} prints as {canonical:?}, which does not read back"
            );
            assert_eq!(
                format_go_duration(nanos),
                canonical,
                "printing is not stable"
            );
        }
    }
});
