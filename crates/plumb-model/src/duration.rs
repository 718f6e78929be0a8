//! Go durations (`0s`, `30s`, `2m`, `1h30m`, `1.5h`, `300ms`): the syntax every duration of an
//! `AdaptivePolicy` is written in, because the same policy is read by Kubernetes tooling that
//! speaks Go's `time.ParseDuration`.
//!
//! Parsing is exact: a fraction is converted to whole nanoseconds by integer arithmetic,
//! truncated (Go converts the fraction through a float, which can differ by a nanosecond on
//! contrived inputs with many fraction digits). Negative durations, values beyond Go's range
//! (about 2,562,047 hours) and anything outside the grammar are refused. The spec keeps the
//! user's spelling ([`GoDuration`]); Plumb's own messages print the canonical form Go's
//! `Duration.String` gives ([`format_go_duration`]: `1h30m0s`, `2m0s`, `300ms`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

const NANOS_PER_MICRO: u64 = 1_000;
const NANOS_PER_MILLI: u64 = 1_000_000;
const NANOS_PER_SEC: u64 = 1_000_000_000;
const NANOS_PER_MIN: u64 = 60 * NANOS_PER_SEC;
const NANOS_PER_HOUR: u64 = 60 * NANOS_PER_MIN;
/// Go's largest duration, `1<<63 - 1` nanoseconds.
const MAX_NANOS: u64 = i64::MAX as u64;

/// Why a duration string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// The empty string.
    #[error("empty duration")]
    Empty,
    /// A duration below zero (`-30s`).
    #[error("negative duration")]
    Negative,
    /// A number without its unit (`30`; only `0` may stand alone).
    #[error("missing unit (ns, us, ms, s, m or h)")]
    MissingUnit,
    /// A unit Go does not know (`30sec`, `1d`), as the message echoes it: its first
    /// [`UNIT_ECHO_CHARS`] characters, and `…` when it is longer.
    #[error("unknown unit {0:?} (ns, us, ms, s, m or h)")]
    UnknownUnit(String),
    /// Anything else outside the grammar (`1..5s`, `s`, `1h 30m`).
    #[error("not a Go duration (e.g. 30s, 2m, 1h30m)")]
    Malformed,
    /// Beyond Go's range of about 2,562,047 hours.
    #[error("duration out of range")]
    Overflow,
}

/// The most characters of an unknown unit [`DurationError::UnknownUnit`] keeps (a real unit has
/// at most two; `milliseconds` still shows whole), so that a refusal stays one short line
/// however long the text.
pub const UNIT_ECHO_CHARS: usize = 16;

/// The first `max` characters of `text`, and `…` when it is longer: how a refusal echoes what
/// it refuses.
pub(crate) fn clipped(text: &str, max: usize) -> String {
    let mut chars = text.chars();
    let mut out: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        out.push('…');
    }
    out
}

/// Parses a Go duration into whole nanoseconds (see the module doc for what is refused).
pub fn parse_go_duration(text: &str) -> Result<u64, DurationError> {
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    let (negative, body) = match text.as_bytes()[0] {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if body == "0" {
        return Ok(0);
    }
    if body.is_empty() {
        return Err(DurationError::Malformed);
    }
    let mut rest = body;
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let (nanos, after) = component(rest)?;
        total = total
            .checked_add(nanos)
            .filter(|t| *t <= MAX_NANOS)
            .ok_or(DurationError::Overflow)?;
        rest = after;
    }
    if negative && total > 0 {
        return Err(DurationError::Negative);
    }
    Ok(total)
}

/// One `<number><unit>` component at the start of `text`: its nanoseconds and the rest.
fn component(text: &str) -> Result<(u64, &str), DurationError> {
    let int_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (int_digits, rest) = text.split_at(int_end);
    let (frac_digits, rest) = match rest.strip_prefix('.') {
        Some(after) => {
            let end = after
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len());
            after.split_at(end)
        }
        None => ("", rest),
    };
    if int_digits.is_empty() && frac_digits.is_empty() {
        return Err(DurationError::Malformed);
    }
    let unit_end = rest
        .find(|c: char| c.is_ascii_digit() || c == '.')
        .unwrap_or(rest.len());
    let (unit_text, rest) = rest.split_at(unit_end);
    if unit_text.is_empty() {
        return Err(DurationError::MissingUnit);
    }
    let unit = unit_nanos(unit_text)?;
    let mut whole: u64 = 0;
    for d in int_digits.bytes() {
        whole = whole
            .checked_mul(10)
            .and_then(|w| w.checked_add(u64::from(d - b'0')))
            .filter(|w| *w <= MAX_NANOS)
            .ok_or(DurationError::Overflow)?;
    }
    let nanos = whole
        .checked_mul(unit)
        .and_then(|n| n.checked_add(fraction_nanos(frac_digits, unit)))
        .filter(|n| *n <= MAX_NANOS)
        .ok_or(DurationError::Overflow)?;
    Ok((nanos, rest))
}

fn unit_nanos(unit: &str) -> Result<u64, DurationError> {
    Ok(match unit {
        "ns" => 1,
        // `µ` is U+00B5 (micro sign), `μ` U+03BC (Greek mu); Go accepts both.
        "us" | "\u{b5}s" | "\u{3bc}s" => NANOS_PER_MICRO,
        "ms" => NANOS_PER_MILLI,
        "s" => NANOS_PER_SEC,
        "m" => NANOS_PER_MIN,
        "h" => NANOS_PER_HOUR,
        other => return Err(DurationError::UnknownUnit(clipped(other, UNIT_ECHO_CHARS))),
    })
}

/// `floor(0.<digits> × unit)`, exactly, for any number of digits: Horner's rule from the last
/// digit, flooring at each step (`⌊(a + ⌊x⌋)/10⌋ = ⌊(a + x)/10⌋` for an integer `a`).
fn fraction_nanos(digits: &str, unit: u64) -> u64 {
    let unit = u128::from(unit);
    let mut carry: u128 = 0;
    for d in digits.bytes().rev() {
        carry = (u128::from(d - b'0') * unit + carry) / 10;
    }
    // carry < unit ≤ an hour in nanoseconds, so it fits.
    u64::try_from(carry).unwrap_or(u64::MAX)
}

/// Go's canonical form of a duration (`Duration.String`): `0s`; below a second one unit
/// (`ns`, `µs`, `ms`) with a trimmed fraction (`1.5ms`); from a second up hours and minutes
/// as needed and seconds with a trimmed fraction (`1h30m0s`, `2m0s`, `1.5s`).
pub fn format_go_duration(nanos: u64) -> String {
    if nanos == 0 {
        return "0s".to_owned();
    }
    if nanos < NANOS_PER_MICRO {
        return format!("{nanos}ns");
    }
    if nanos < NANOS_PER_MILLI {
        return format!("{}\u{b5}s", decimal(nanos, 3));
    }
    if nanos < NANOS_PER_SEC {
        return format!("{}ms", decimal(nanos, 6));
    }
    let hours = nanos / NANOS_PER_HOUR;
    let minutes = nanos % NANOS_PER_HOUR / NANOS_PER_MIN;
    let seconds = decimal(nanos % NANOS_PER_MIN, 9);
    match (hours, minutes) {
        (0, 0) => format!("{seconds}s"),
        (0, m) => format!("{m}m{seconds}s"),
        (h, m) => format!("{h}h{m}m{seconds}s"),
    }
}

/// `value / 10^places` with the fraction's trailing zeros (and a bare point) dropped.
fn decimal(value: u64, places: u32) -> String {
    let scale = 10u64.pow(places);
    let whole = value / scale;
    let frac = value % scale;
    if frac == 0 {
        return whole.to_string();
    }
    let digits = format!("{frac:0width$}", width = places as usize);
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// A duration field of the spec: the text the user wrote (kept, so the spec reads back as
/// written) and what it parses to. Any string deserializes; validation reports one that does
/// not parse, naming its field, together with every other problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoDuration {
    text: String,
    parsed: Result<u64, DurationError>,
}

impl GoDuration {
    /// A duration from its text (parsed now; see [`GoDuration::nanos`]).
    pub fn new(text: impl Into<String>) -> Self {
        let text = text.into();
        let parsed = parse_go_duration(&text);
        Self { text, parsed }
    }

    /// A duration of whole nanoseconds, written in Go's canonical form.
    pub fn from_nanos(nanos: u64) -> Self {
        Self::new(format_go_duration(nanos.min(MAX_NANOS)))
    }

    /// The text as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The value in nanoseconds, or why the text is not a valid duration.
    pub fn nanos(&self) -> Result<u64, DurationError> {
        self.parsed.clone()
    }

    /// The value as a [`std::time::Duration`], `None` when the text is invalid.
    pub fn to_std(&self) -> Option<std::time::Duration> {
        self.parsed
            .as_ref()
            .ok()
            .map(|n| std::time::Duration::from_nanos(*n))
    }
}

impl fmt::Display for GoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for GoDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = GoDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Go duration string such as \"30s\" or \"2m\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<GoDuration, E> {
                Ok(GoDuration::new(v))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests;
