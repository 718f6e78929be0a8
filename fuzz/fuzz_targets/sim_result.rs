//! The simulator's wire result (a worker's stdout, read by alfred): refusals are one short
//! line, and an accepted result encoded again decodes equal.
#![no_main]

use alfred_fuzz::assert_error_line;
use alfred_sim::wire::{decode_result, encode_result};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match decode_result(data) {
        Ok(result) => {
            let again = decode_result(encode_result(&result).as_bytes())
                .unwrap_or_else(|e| panic!("an encoded result does not decode: {e}"));
            assert_eq!(result, again, "result round trip changed it");
        }
        Err(e) => assert_error_line("simulation result", &e.to_string()),
    }
});
