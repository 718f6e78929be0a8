//! Go-style durations (`time.ParseDuration` syntax): `90s`, `5m`, `1h30m`, `1.5h`, `500ms`.

use std::time::Duration;

/// A duration string that Go's `time.ParseDuration` would reject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{value:?} is not a valid duration ({why}; use Go syntax such as \"90s\", \"5m\", \"1h30m\")"
)]
pub struct DurationError {
    /// The rejected text.
    pub value: String,
    /// What is wrong with it.
    pub why: &'static str,
}

const NANOS_PER_UNIT: [(&str, u128); 9] = [
    ("ns", 1),
    ("us", 1_000),
    ("\u{b5}s", 1_000),
    ("\u{3bc}s", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("", 0),
];

/// Go's `time.Duration` range: at most `i64::MAX` nanoseconds either way.
const MAX_NANOS: u128 = i64::MAX as u128;

/// Parses Go duration syntax into signed nanoseconds (Go's range: ±`i64::MAX` ns).
pub(crate) fn parse_go_duration_nanos(text: &str) -> Result<i128, DurationError> {
    let err = |why: &'static str| DurationError {
        value: text.to_string(),
        why,
    };
    let mut s = text;
    let mut negative = false;
    if let Some(rest) = s.strip_prefix('-') {
        negative = true;
        s = rest;
    } else if let Some(rest) = s.strip_prefix('+') {
        s = rest;
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(err("empty"));
    }
    let mut total: u128 = 0;
    while !s.is_empty() {
        let bytes = s.as_bytes();
        if !(bytes[0] == b'.' || bytes[0].is_ascii_digit()) {
            return Err(err("expected a number"));
        }
        // Integer part.
        let int_len = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
        let mut whole: u128 = 0;
        for b in &bytes[..int_len] {
            whole = whole * 10 + u128::from(b - b'0');
            if whole > MAX_NANOS {
                return Err(err("out of range"));
            }
        }
        s = &s[int_len..];
        // Fraction part.
        let mut frac: u128 = 0;
        let mut scale: u128 = 1;
        let mut frac_len = 0;
        if let Some(rest) = s.strip_prefix('.') {
            s = rest;
            frac_len = s.bytes().take_while(u8::is_ascii_digit).count();
            for b in s[..frac_len].bytes() {
                // Digits past the precision we can hold are dropped, as Go does.
                if scale < 1_000_000_000_000_000_000 {
                    frac = frac * 10 + u128::from(b - b'0');
                    scale *= 10;
                }
            }
            s = &s[frac_len..];
        }
        if int_len == 0 && frac_len == 0 {
            return Err(err("expected a number"));
        }
        // Unit.
        let unit_len = s
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(s.len(), |(i, _)| i);
        if unit_len == 0 {
            return Err(err("missing unit"));
        }
        let unit_text = &s[..unit_len];
        s = &s[unit_len..];
        let unit = NANOS_PER_UNIT
            .iter()
            .find(|(name, n)| *n > 0 && *name == unit_text)
            .map(|(_, n)| *n)
            .ok_or_else(|| err("unknown unit"))?;
        let mut part = whole.checked_mul(unit).ok_or_else(|| err("out of range"))?;
        if part > MAX_NANOS {
            return Err(err("out of range"));
        }
        if frac > 0 {
            part += frac * unit / scale;
        }
        total += part;
        if total > MAX_NANOS + u128::from(negative) {
            return Err(err("out of range"));
        }
    }
    let total = i128::try_from(total).map_err(|_| err("out of range"))?;
    Ok(if negative { -total } else { total })
}

/// Parses a non-negative Go duration (`"5m"`, `"1h30m"`, `"0"`).
pub fn parse_go_duration(text: &str) -> Result<Duration, DurationError> {
    let nanos = parse_go_duration_nanos(text)?;
    if nanos < 0 {
        return Err(DurationError {
            value: text.to_string(),
            why: "negative",
        });
    }
    let nanos = u64::try_from(nanos).map_err(|_| DurationError {
        value: text.to_string(),
        why: "out of range",
    })?;
    Ok(Duration::from_nanos(nanos))
}

/// Formats a duration in compact Go syntax that [`parse_go_duration`] reads back exactly:
/// `5m`, `30s`, `1h30m`, `1m30.5s`, `500ms`, `0s`.
pub fn format_go_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_string();
    }
    if nanos < 1_000_000_000 {
        let (unit, per) = if nanos.is_multiple_of(1_000_000) {
            ("ms", 1_000_000)
        } else if nanos.is_multiple_of(1_000) {
            ("us", 1_000)
        } else {
            ("ns", 1)
        };
        return format!("{}{unit}", nanos / per);
    }
    let mut out = String::new();
    let hours = nanos / 3_600_000_000_000;
    let minutes = (nanos / 60_000_000_000) % 60;
    let sub_minute = nanos % 60_000_000_000;
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    if sub_minute > 0 {
        let secs = sub_minute / 1_000_000_000;
        let frac = sub_minute % 1_000_000_000;
        if frac == 0 {
            out.push_str(&format!("{secs}s"));
        } else {
            let digits = format!("{frac:09}");
            out.push_str(&format!("{secs}.{}s", digits.trim_end_matches('0')));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_syntax() {
        let cases: [(&str, i128); 14] = [
            ("0", 0),
            ("5m", 300_000_000_000),
            ("30s", 30_000_000_000),
            ("1h30m", 5_400_000_000_000),
            ("1.5h", 5_400_000_000_000),
            ("90s", 90_000_000_000),
            ("500ms", 500_000_000),
            ("1us", 1_000),
            ("1\u{b5}s", 1_000),
            ("1\u{3bc}s", 1_000),
            ("7ns", 7),
            ("-5m", -300_000_000_000),
            ("+1s", 1_000_000_000),
            (".5s", 500_000_000),
        ];
        for (text, want) in cases {
            assert_eq!(parse_go_duration_nanos(text), Ok(want), "{text}");
        }
        assert_eq!(parse_go_duration_nanos("1.s"), Ok(1_000_000_000));
        assert_eq!(
            parse_go_duration_nanos("2562047h47m16.854775807s"),
            Ok(i128::from(i64::MAX))
        );
        assert_eq!(
            parse_go_duration_nanos("-2562047h47m16.854775808s"),
            Ok(i128::from(i64::MIN))
        );
    }

    #[test]
    fn rejects_what_go_rejects() {
        for text in [
            "",
            "5",
            "m",
            "5 m",
            "5min",
            "1h 30m",
            ".s",
            "-",
            "+",
            "1..5s",
            "2562048h",
            "9999999999999999999999h",
            " 5m",
            "5m ",
            "0.0.0s",
            "1e3s",
        ] {
            assert!(parse_go_duration_nanos(text).is_err(), "{text:?} accepted");
        }
        assert!(parse_go_duration("-1s").is_err());
        let e = parse_go_duration("5 minutes").unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"5 minutes\" is not a valid duration (unknown unit; use Go syntax such as \"90s\", \"5m\", \"1h30m\")"
        );
    }

    #[test]
    fn formats_compactly_and_round_trips() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_secs(300), "5m"),
            (Duration::from_secs(30), "30s"),
            (Duration::from_secs(5400), "1h30m"),
            (Duration::from_secs(3600), "1h"),
            (Duration::from_millis(90_500), "1m30.5s"),
            (Duration::from_millis(500), "500ms"),
            (Duration::from_nanos(1_500), "1500ns"),
            (Duration::from_micros(3), "3us"),
            (Duration::from_secs(3601), "1h1s"),
        ];
        for (d, want) in cases {
            assert_eq!(format_go_duration(d), want);
            assert_eq!(parse_go_duration(want), Ok(d));
        }
    }
}
