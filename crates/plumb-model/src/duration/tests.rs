//! Go durations: the grammar's edges, Go's canonical print, and print∘parse as a property.

use super::*;
use proptest::prelude::*;

#[test]
fn parses_the_forms_policies_use() {
    for (text, nanos) in [
        ("0", 0),
        ("0s", 0),
        ("30s", 30 * NANOS_PER_SEC),
        ("2m", 2 * NANOS_PER_MIN),
        ("1h30m", 90 * NANOS_PER_MIN),
        ("1.5h", 90 * NANOS_PER_MIN),
        ("300ms", 300 * NANOS_PER_MILLI),
        ("1us", 1_000),
        ("1\u{b5}s", 1_000),
        ("1\u{3bc}s", 1_000),
        ("7ns", 7),
        ("+5s", 5 * NANOS_PER_SEC),
        ("-0s", 0),
        (".5s", 500 * NANOS_PER_MILLI),
        ("1.s", NANOS_PER_SEC),
        (
            "1h1m1s1ms1us1ns",
            NANOS_PER_HOUR + NANOS_PER_MIN + NANOS_PER_SEC + 1_001_001,
        ),
        ("2562047h47m16.854775807s", MAX_NANOS),
        ("0.3333333333333333333333333333333333h", 1_199_999_999_999),
    ] {
        assert_eq!(parse_go_duration(text), Ok(nanos), "{text}");
    }
}

#[test]
fn refuses_negative_malformed_and_out_of_range() {
    for (text, err) in [
        ("", DurationError::Empty),
        ("-1s", DurationError::Negative),
        ("-1.5h", DurationError::Negative),
        ("30", DurationError::MissingUnit),
        ("1h30", DurationError::MissingUnit),
        ("1d", DurationError::UnknownUnit("d".into())),
        ("30sec", DurationError::UnknownUnit("sec".into())),
        ("1h 30m", DurationError::UnknownUnit("h ".into())),
        (".s", DurationError::Malformed),
        ("s", DurationError::Malformed),
        ("-", DurationError::Malformed),
        ("1..5s", DurationError::MissingUnit),
        ("2562047h47m16.854775808s", DurationError::Overflow),
        ("9999999999999999999999h", DurationError::Overflow),
    ] {
        assert_eq!(parse_go_duration(text), Err(err), "{text:?}");
    }
}

/// Go's own table for `Duration.String` (values and strings are facts of Go's behaviour).
#[test]
fn prints_as_go_does() {
    for (nanos, text) in [
        (0, "0s"),
        (1, "1ns"),
        (1_100, "1.1\u{b5}s"),
        (2_200 * NANOS_PER_MICRO, "2.2ms"),
        (3_300 * NANOS_PER_MILLI, "3.3s"),
        (4 * NANOS_PER_MIN + 5 * NANOS_PER_SEC, "4m5s"),
        (4 * NANOS_PER_MIN + 5_001 * NANOS_PER_MILLI, "4m5.001s"),
        (
            5 * NANOS_PER_HOUR + 6 * NANOS_PER_MIN + 7_001 * NANOS_PER_MILLI,
            "5h6m7.001s",
        ),
        (8 * NANOS_PER_MIN + 1, "8m0.000000001s"),
        (MAX_NANOS, "2562047h47m16.854775807s"),
        (90 * NANOS_PER_MIN, "1h30m0s"),
        (2 * NANOS_PER_MIN, "2m0s"),
        (300 * NANOS_PER_MILLI, "300ms"),
        (NANOS_PER_HOUR, "1h0m0s"),
    ] {
        assert_eq!(format_go_duration(nanos), text, "{nanos}");
    }
}

#[test]
fn a_spec_duration_keeps_its_spelling() {
    let d: GoDuration = serde_json::from_str("\"120s\"").unwrap();
    assert_eq!(d.text(), "120s");
    assert_eq!(d.nanos(), Ok(2 * NANOS_PER_MIN));
    assert_eq!(serde_json::to_string(&d).unwrap(), "\"120s\"");
    let bad: GoDuration = serde_json::from_str("\"2 minutes\"").unwrap();
    assert_eq!(
        bad.nanos(),
        Err(DurationError::UnknownUnit(" minutes".into()))
    );
    assert_eq!(bad.to_std(), None);
    assert!(serde_json::from_str::<GoDuration>("120").is_err());
    assert_eq!(GoDuration::from_nanos(90 * NANOS_PER_MIN).text(), "1h30m0s");
}

/// Found by the fuzz target `plumb_duration`: an unknown unit was echoed whole, so a long one
/// made a message of any length. The unit is clipped, and so is the spelling a policy's problem
/// echoes beside its field.
#[test]
fn a_long_unknown_unit_is_echoed_clipped_on_one_short_line() {
    assert_eq!(
        parse_go_duration("1milliseconds"),
        Err(DurationError::UnknownUnit("milliseconds".into()))
    );
    let long = format!("1{}", "\u{7}x\ny".repeat(2_000));
    let err = parse_go_duration(&long).unwrap_err();
    assert_eq!(
        err,
        DurationError::UnknownUnit(format!("{}…", "\u{7}x\ny".repeat(4)))
    );
    let message = err.to_string();
    assert!(!message.contains('\n'), "{message:?}");
    assert!(message.chars().count() < 120, "{message:?}");

    let policy = format!(
        "apiVersion: plumb-k8s.github.io/v1alpha1\nkind: AdaptivePolicy\nmetadata: {{name: p}}\n\
         spec:\n  workload: {{name: w}}\n  clusters: [{{name: a}}]\n  escalation: {{after: \"1{}\"}}\n",
        "s".repeat(5_000)
    );
    let (_, checked) = crate::validate::check_document(&policy);
    let problem = checked
        .problems
        .iter()
        .find(|p| p.path == "spec.escalation.after")
        .expect("the field is named");
    let line = problem.to_string();
    assert!(!line.contains('\n'), "{line:?}");
    assert!(
        line.chars().count() < 200,
        "{} characters: {line:?}",
        line.chars().count()
    );
    assert!(
        line.contains(&format!("\"1{}…\"", "s".repeat(39))),
        "{line}"
    );
}

/// An independent reading of Go's canonical form: split the string into its unit parts and
/// check that each part is in range and no part is written that Go leaves out.
fn canonical_shape(nanos: u64, text: &str) -> bool {
    if nanos == 0 {
        return text == "0s";
    }
    if nanos < NANOS_PER_SEC {
        let unit = if nanos < 1_000 {
            "ns"
        } else if nanos < NANOS_PER_MILLI {
            "\u{b5}s"
        } else {
            "ms"
        };
        let Some(number) = text.strip_suffix(unit) else {
            return false;
        };
        return !number.ends_with('0') || !number.contains('.');
    }
    let (hours, rest) = text
        .split_once('h')
        .map_or((None, text), |(h, r)| (Some(h), r));
    let (minutes, rest) = rest
        .split_once('m')
        .map_or((None, rest), |(m, r)| (Some(m), r));
    let Some(seconds) = rest.strip_suffix('s') else {
        return false;
    };
    let in_range =
        |part: Option<&str>, max: u64| part.is_none_or(|p| p.parse::<u64>().is_ok_and(|v| v < max));
    let no_trailing_zero = !seconds.contains('.') || !seconds.ends_with('0');
    let minutes_when_hours = hours.is_none() || minutes.is_some();
    let hours_only_when_needed = hours.is_none_or(|h| h != "0");
    let minutes_only_when_needed = hours.is_some() || minutes.is_none_or(|m| m != "0");
    minutes_when_hours
        && hours_only_when_needed
        && minutes_only_when_needed
        && in_range(minutes, 60)
        && seconds
            .split('.')
            .next()
            .is_some_and(|s| s.parse::<u64>().is_ok_and(|v| v < 60))
        && no_trailing_zero
}

proptest! {
    #[test]
    fn print_then_parse_is_the_identity(nanos in 0..=MAX_NANOS) {
        let text = format_go_duration(nanos);
        prop_assert_eq!(parse_go_duration(&text), Ok(nanos));
        prop_assert!(canonical_shape(nanos, &text), "{} printed as {}", nanos, text);
    }

    #[test]
    fn small_values_round_trip_at_every_unit(nanos in prop_oneof![0..2_000u64, 0..2_000_000u64, 0..200 * NANOS_PER_SEC]) {
        let text = format_go_duration(nanos);
        prop_assert_eq!(parse_go_duration(&text), Ok(nanos));
        prop_assert!(canonical_shape(nanos, &text), "{} printed as {}", nanos, text);
    }

    #[test]
    fn parse_never_panics(text in "\\PC{0,24}") {
        let _ = parse_go_duration(&text);
    }

    #[test]
    fn components_add_up(h in 0u64..1000, m in 0u64..1000, s in 0u64..1000, ms in 0u64..1000) {
        let text = format!("{h}h{m}m{s}s{ms}ms");
        let expected = h * NANOS_PER_HOUR + m * NANOS_PER_MIN + s * NANOS_PER_SEC + ms * NANOS_PER_MILLI;
        prop_assert_eq!(parse_go_duration(&text), Ok(expected));
    }
}
