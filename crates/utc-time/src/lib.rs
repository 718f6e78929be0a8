//! Time as data, shared by every core crate that takes time as an input.
//!
//! The core never reads a clock: the adapter reads it once per pass and hands the
//! instant in as a [`Timestamp`]. Timestamps are UTC nanoseconds since the Unix epoch
//! and render as RFC 3339 with nanoseconds, trailing zeros trimmed (the format Go's
//! `time.RFC3339Nano` writes and Kubernetes objects carry).

#![warn(missing_docs, unreachable_pub)]

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An instant in UTC, nanosecond resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp {
    unix_nanos: i64,
}

/// A timestamp string that is not RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not an RFC 3339 timestamp: {why}")]
pub struct TimestampError {
    /// The rejected text.
    pub value: String,
    /// What is wrong with it.
    pub why: &'static str,
}

const NANOS_PER_SEC: i64 = 1_000_000_000;

impl Timestamp {
    /// The Unix epoch, also the "zero" time Kubernetes omits.
    pub const EPOCH: Timestamp = Timestamp { unix_nanos: 0 };

    /// From nanoseconds since the Unix epoch.
    pub const fn from_unix_nanos(unix_nanos: i64) -> Self {
        Self { unix_nanos }
    }

    /// From whole seconds since the Unix epoch.
    pub const fn from_unix_secs(secs: i64) -> Self {
        Self {
            unix_nanos: secs * NANOS_PER_SEC,
        }
    }

    /// Nanoseconds since the Unix epoch.
    pub const fn unix_nanos(self) -> i64 {
        self.unix_nanos
    }

    /// Whole seconds since the Unix epoch (floor).
    pub const fn unix_secs(self) -> i64 {
        self.unix_nanos.div_euclid(NANOS_PER_SEC)
    }

    /// This instant plus a duration (saturating).
    pub fn plus(self, d: Duration) -> Self {
        let n = i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
        Self {
            unix_nanos: self.unix_nanos.saturating_add(n),
        }
    }

    /// This instant minus a duration (saturating).
    pub fn minus(self, d: Duration) -> Self {
        let n = i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
        Self {
            unix_nanos: self.unix_nanos.saturating_sub(n),
        }
    }

    /// This instant plus whole minutes (saturating; negative minutes go back).
    pub fn plus_minutes(self, minutes: i64) -> Self {
        Self {
            unix_nanos: self
                .unix_nanos
                .saturating_add(minutes.saturating_mul(60 * NANOS_PER_SEC)),
        }
    }

    /// `self - earlier` as a duration; zero when `earlier` is later.
    pub fn since(self, earlier: Timestamp) -> Duration {
        let d = self.unix_nanos.saturating_sub(earlier.unix_nanos);
        if d <= 0 {
            Duration::ZERO
        } else {
            Duration::from_nanos(d as u64)
        }
    }

    /// Minutes from `earlier` to `self` as a fraction (negative when `earlier` is later).
    pub fn minutes_since(self, earlier: Timestamp) -> f64 {
        (self.unix_nanos as f64 - earlier.unix_nanos as f64) / (60.0 * NANOS_PER_SEC as f64)
    }

    /// Day of the week, 0 = Monday … 6 = Sunday.
    pub fn weekday_from_monday(self) -> u8 {
        // 1970-01-01 was a Thursday (index 3 from Monday).
        let days = self.unix_secs().div_euclid(86_400);
        ((days + 3).rem_euclid(7)) as u8
    }

    /// Minutes since midnight UTC.
    pub fn minute_of_day(self) -> u32 {
        (self.unix_secs().rem_euclid(86_400) / 60) as u32
    }

    /// RFC 3339 in UTC with nanoseconds, trailing zeros (and a bare dot) trimmed.
    pub fn to_rfc3339(self) -> String {
        self.to_string()
    }

    /// RFC 3339 in UTC with whole seconds only (`2026-11-29T07:51:28Z`).
    pub fn to_rfc3339_secs(self) -> String {
        let (y, mo, d, h, mi, s) = civil(self.unix_secs());
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
    }

    /// Parses RFC 3339 (`Z` or a numeric offset, optional fraction up to 9 digits).
    pub fn parse_rfc3339(text: &str) -> Result<Self, TimestampError> {
        parse(text).map_err(|why| TimestampError {
            value: text.to_owned(),
            why,
        })
    }
}

impl fmt::Display for Timestamp {
    /// Digits written into a buffer, no formatting machinery: every record, journal and
    /// decision-log line carries timestamps, and the journal's state is written several times
    /// a pass. A year outside 0..=9999 (which no instant of an `i64` of nanoseconds has: they
    /// span 1677 to 2262) would take the general path, so no year can come out truncated.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.unix_secs();
        let nanos = self.unix_nanos.rem_euclid(NANOS_PER_SEC);
        let (y, mo, d, h, mi, s) = civil(secs);
        let Ok(year @ 0..=9999) = u32::try_from(y) else {
            write!(f, "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}")?;
            write_fraction(f, nanos)?;
            return f.write_str("Z");
        };
        // `YYYY-MM-DDTHH:MM:SS` and up to `.nnnnnnnnnZ`.
        let mut text = *b"0000-00-00T00:00:00.000000000Z";
        put_digits(&mut text[0..4], year);
        put_digits(&mut text[5..7], mo);
        put_digits(&mut text[8..10], d);
        put_digits(&mut text[11..13], h);
        put_digits(&mut text[14..16], mi);
        put_digits(&mut text[17..19], s);
        let end = if nanos == 0 {
            19
        } else {
            put_digits(&mut text[20..29], u32::try_from(nanos).unwrap_or(0));
            let mut end = 29;
            while text[end - 1] == b'0' {
                end -= 1;
            }
            end
        };
        text[end] = b'Z';
        // Only ASCII digits and separators were written.
        f.write_str(std::str::from_utf8(&text[..=end]).map_err(|_| fmt::Error)?)
    }
}

/// `value`'s last `out.len()` decimal digits into `out`, zero-padded.
fn put_digits(out: &mut [u8], mut value: u32) {
    for b in out.iter_mut().rev() {
        *b = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// `.` and the nanoseconds without trailing zeros, when there are any.
fn write_fraction(f: &mut fmt::Formatter<'_>, nanos: i64) -> fmt::Result {
    if nanos == 0 {
        return Ok(());
    }
    let frac = format!("{nanos:09}");
    write!(f, ".{}", frac.trim_end_matches('0'))
}

impl FromStr for Timestamp {
    type Err = TimestampError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse_rfc3339(s)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse_rfc3339(&text).map_err(serde::de::Error::custom)
    }
}

/// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil(secs: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        m,
        d,
        (sod / 3600) as u32,
        ((sod % 3600) / 60) as u32,
        (sod % 60) as u32,
    )
}

fn digits(s: &[u8], at: usize, n: usize) -> Result<u32, &'static str> {
    let part = s.get(at..at + n).ok_or("too short")?;
    let mut v = 0u32;
    for &b in part {
        if !b.is_ascii_digit() {
            return Err("expected a digit");
        }
        v = v * 10 + u32::from(b - b'0');
    }
    Ok(v)
}

fn expect(s: &[u8], at: usize, want: &[u8]) -> Result<(), &'static str> {
    match s.get(at) {
        Some(b) if want.contains(b) => Ok(()),
        _ => Err("unexpected separator"),
    }
}

fn parse(text: &str) -> Result<Timestamp, &'static str> {
    let s = text.as_bytes();
    let year = digits(s, 0, 4)?;
    expect(s, 4, b"-")?;
    let month = digits(s, 5, 2)?;
    expect(s, 7, b"-")?;
    let day = digits(s, 8, 2)?;
    expect(s, 10, b"Tt ")?;
    let hour = digits(s, 11, 2)?;
    expect(s, 13, b":")?;
    let minute = digits(s, 14, 2)?;
    expect(s, 16, b":")?;
    let second = digits(s, 17, 2)?;
    if !(1..=12).contains(&month) {
        return Err("month out of range");
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let month_len = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if day == 0 || day > month_len[(month - 1) as usize] {
        return Err("day out of range");
    }
    if hour > 23 || minute > 59 || second > 60 {
        return Err("time of day out of range");
    }
    let mut at = 19;
    let mut nanos: i64 = 0;
    if s.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while at < s.len() && s[at].is_ascii_digit() {
            at += 1;
        }
        let frac = &s[start..at];
        if frac.is_empty() || frac.len() > 9 {
            return Err("fraction must have 1 to 9 digits");
        }
        for (i, b) in frac.iter().enumerate() {
            nanos += i64::from(b - b'0') * 10i64.pow(8 - i as u32);
        }
    }
    let offset_secs: i64 = match s.get(at) {
        Some(b'Z' | b'z') if at + 1 == s.len() => 0,
        Some(sign @ (b'+' | b'-')) if at + 6 == s.len() => {
            let oh = digits(s, at + 1, 2)?;
            expect(s, at + 3, b":")?;
            let om = digits(s, at + 4, 2)?;
            if oh > 23 || om > 59 {
                return Err("offset out of range");
            }
            let o = i64::from(oh * 3600 + om * 60);
            if *sign == b'+' { o } else { -o }
        }
        _ => return Err("missing or malformed zone (Z or ±hh:mm)"),
    };
    let days = days_from_civil(i64::from(year), month, day);
    let secs = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second.min(59)) - offset_secs;
    let total = secs
        .checked_mul(NANOS_PER_SEC)
        .and_then(|n| n.checked_add(nanos))
        .ok_or("out of range")?;
    Ok(Timestamp { unix_nanos: total })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The plain formatting the buffer-writing `Display` replaces.
    fn formatted(t: Timestamp) -> String {
        let nanos = t.unix_nanos.rem_euclid(NANOS_PER_SEC);
        let (y, mo, d, h, mi, s) = civil(t.unix_secs());
        let mut out = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}");
        if nanos != 0 {
            out.push('.');
            out.push_str(format!("{nanos:09}").trim_end_matches('0'));
        }
        out + "Z"
    }

    proptest! {
        #[test]
        fn display_writes_what_plain_formatting_writes(nanos in any::<i64>(), whole in any::<bool>()) {
            let t = Timestamp::from_unix_nanos(if whole { nanos - nanos % NANOS_PER_SEC } else { nanos });
            prop_assert_eq!(t.to_string(), formatted(t));
        }
    }

    #[test]
    fn display_of_edge_instants() {
        for (nanos, text) in [
            (0, "1970-01-01T00:00:00Z"),
            (1, "1970-01-01T00:00:00.000000001Z"),
            (-1, "1969-12-31T23:59:59.999999999Z"),
            (100_000_000, "1970-01-01T00:00:00.1Z"),
            (i64::MAX, "2262-04-11T23:47:16.854775807Z"),
            (i64::MIN, "1677-09-21T00:12:43.145224192Z"),
        ] {
            assert_eq!(Timestamp::from_unix_nanos(nanos).to_string(), text);
        }
    }

    #[test]
    fn round_trips_and_trims_trailing_zeros() {
        let t = Timestamp::parse_rfc3339("2026-11-29T07:51:28.120000000Z").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-29T07:51:28.12Z");
        let whole = Timestamp::parse_rfc3339("2026-11-29T07:51:28Z").unwrap();
        assert_eq!(whole.to_rfc3339(), "2026-11-29T07:51:28Z");
        assert_eq!(whole.unix_secs(), 1_795_938_688);
    }

    #[test]
    fn offsets_normalise_to_utc() {
        let t = Timestamp::parse_rfc3339("2026-11-29T09:51:28+02:00").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-29T07:51:28Z");
    }

    #[test]
    fn weekday_and_minute_of_day() {
        // 2026-11-29 is a Sunday.
        let t = Timestamp::parse_rfc3339("2026-11-29T01:30:00Z").unwrap();
        assert_eq!(t.weekday_from_monday(), 6);
        assert_eq!(t.minute_of_day(), 90);
        assert_eq!(Timestamp::EPOCH.weekday_from_monday(), 3);
    }

    #[test]
    fn rejects_malformed_text_with_the_value() {
        for bad in [
            "",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-11-29 07:51",
            "2026-11-29T07:51:28",
            "2026-11-29T07:51:28.Z",
        ] {
            let err = Timestamp::parse_rfc3339(bad).unwrap_err();
            assert_eq!(err.value, bad);
        }
    }

    #[test]
    fn arithmetic_saturates_and_measures() {
        let t = Timestamp::from_unix_secs(600);
        assert_eq!(t.plus_minutes(5).unix_secs(), 900);
        assert_eq!(
            t.since(Timestamp::from_unix_secs(0)),
            Duration::from_secs(600)
        );
        assert_eq!(Timestamp::EPOCH.since(t), Duration::ZERO);
        assert!((t.minutes_since(Timestamp::EPOCH) - 10.0).abs() < 1e-12);
    }
}
