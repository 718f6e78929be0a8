//! A recorded member's signal answers (`signals.json`: per signal, Prometheus's answer to its
//! instant query, `GET /api/v1/query`) as `plumb replay` reads them: every refusal is one short
//! line naming the signal, an answer reads the same twice, and every sample's time is within
//! the bound the reader keeps (|seconds| < 1e11).
#![no_main]

use alfred_fuzz::assert_error_line;
use libfuzzer_sys::fuzz_target;
use plumb_kube::signals::{Answer, parse_signals};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_signals(text) {
        Err(e) => assert_error_line("signals", &plumb_kube::one_line(&e)),
        Ok(answers) => {
            // NaN samples are kept as read, so compare as printed
            let again = parse_signals(text).map(|a| format!("{a:?}"));
            assert_eq!(again, Ok(format!("{answers:?}")), "a second read differs");
            for (name, answer) in &answers {
                if let Answer::Samples(samples) = answer {
                    for s in samples {
                        assert!(
                            s.time_ms.unsigned_abs() <= 100_000_000_000_000,
                            "{name}: sample time {} ms out of bounds",
                            s.time_ms
                        );
                    }
                }
            }
        }
    }
});
