//! Kubernetes quantities as exact decimals (`saturationThreshold: "50"`, `"0.9"`, `"900m"`,
//! `"1Ki"`, `"1e3"`): the one quantity field of a policy is compared with a signal value and
//! enters the spec hash, which needs one canonical decimal string per value (`"900m"` and
//! `"0.9"` hash alike).
//!
//! Only the value is kept, exactly: `mantissa × 10^exp10`, with binary suffixes multiplied
//! out. Numbers may be written as YAML/JSON numbers too (Kubernetes' int-or-string form).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The most significant digits a quantity may have (Kubernetes' own limit is far lower in
/// practice; this keeps every value inside `u128`, binary suffixes included).
const MAX_DIGITS: usize = 19;
/// The largest exponent accepted, either way (beyond it no threshold makes sense).
const MAX_EXP10: i32 = 64;

/// An exact decimal value of a quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decimal {
    negative: bool,
    /// Without trailing zeros (they move into `exp10`); 0 for zero.
    mantissa: u128,
    exp10: i32,
}

/// Parses the Kubernetes quantity grammar: optional sign, a decimal number, then optionally a
/// binary (`Ki` … `Ei`), decimal (`n u m k M G T P E`) or exponent (`e3`, `E-2`) suffix.
pub fn parse_quantity(text: &str) -> Result<Decimal, &'static str> {
    let (negative, body) = match text.as_bytes().first() {
        None => return Err("empty quantity"),
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        Some(_) => (false, text),
    };
    let end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(end);
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    if (int_part.is_empty() && frac_part.is_empty()) || frac_part.contains('.') {
        return Err("expected a number");
    }
    let digits = format!("{int_part}{frac_part}");
    let leading_trimmed = digits.trim_start_matches('0');
    let significant = leading_trimmed.trim_end_matches('0');
    if significant.len() > MAX_DIGITS {
        return Err("too many digits");
    }
    let trailing_zeros = leading_trimmed.len() - significant.len();
    let mut mantissa: u128 = significant.parse().unwrap_or(0);
    let mut exp10 = i32::try_from(trailing_zeros).map_err(|_| "too many digits")?
        - i32::try_from(frac_part.len()).map_err(|_| "too many digits")?;
    match suffix {
        "" => {}
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
            let power = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                .iter()
                .position(|s| *s == suffix)
                .map_or(0, |p| p + 1);
            for _ in 0..power {
                mantissa *= 1024;
            }
        }
        "n" => exp10 -= 9,
        "u" => exp10 -= 6,
        "m" => exp10 -= 3,
        "k" => exp10 += 3,
        "M" => exp10 += 6,
        "G" => exp10 += 9,
        "T" => exp10 += 12,
        "P" => exp10 += 15,
        "E" => exp10 += 18,
        other => exp10 += exponent(other)?,
    }
    Ok(Decimal::new(negative, mantissa, exp10))
}

fn exponent(suffix: &str) -> Result<i32, &'static str> {
    let rest = suffix
        .strip_prefix(['e', 'E'])
        .ok_or("unknown suffix (expected Ki…Ei, n, u, m, k, M, G, T, P, E or an exponent)")?;
    let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
    if digits.is_empty() || digits.len() > 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("malformed exponent");
    }
    let value: i32 = digits.parse().map_err(|_| "malformed exponent")?;
    Ok(if rest.starts_with('-') { -value } else { value })
}

impl Decimal {
    fn new(negative: bool, mut mantissa: u128, mut exp10: i32) -> Self {
        if mantissa == 0 {
            return Self {
                negative: false,
                mantissa: 0,
                exp10: 0,
            };
        }
        while mantissa.is_multiple_of(10) {
            mantissa /= 10;
            exp10 += 1;
        }
        Self {
            negative,
            mantissa,
            exp10,
        }
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// Whether the exponent is within what a policy can mean (±64).
    pub fn in_range(&self) -> bool {
        let digits = i32::try_from(self.mantissa.to_string().len()).unwrap_or(i32::MAX);
        self.exp10.abs() <= MAX_EXP10 && (self.exp10 + digits).abs() <= MAX_EXP10
    }

    /// The nearest `f64` (for comparing with a signal's sample).
    pub fn to_f64(&self) -> f64 {
        let text = format!(
            "{}{}e{}",
            if self.negative { "-" } else { "" },
            self.mantissa,
            self.exp10
        );
        text.parse().unwrap_or(f64::NAN)
    }
}

/// The canonical decimal string: plain digits, no exponent, no trailing zeros after the
/// point, no point for a whole number, `-` for negatives (`0.9`, `50`, `1024`, `0.000001`).
impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            f.write_str("-")?;
        }
        let digits = self.mantissa.to_string();
        if self.exp10 >= 0 {
            return write!(
                f,
                "{digits}{}",
                "0".repeat(self.exp10.unsigned_abs() as usize)
            );
        }
        let places = self.exp10.unsigned_abs() as usize;
        if digits.len() > places {
            let (whole, frac) = digits.split_at(digits.len() - places);
            write!(f, "{whole}.{frac}")
        } else {
            write!(f, "0.{}{digits}", "0".repeat(places - digits.len()))
        }
    }
}

/// A quantity field of the spec: the text as written (kept, so the spec reads back as
/// written; a YAML or JSON number is kept as its decimal text) and what it parses to.
/// Validation reports a text that does not parse, naming its field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity {
    text: String,
    parsed: Result<Decimal, &'static str>,
}

impl Quantity {
    /// A quantity from its text.
    pub fn new(text: impl Into<String>) -> Self {
        let text = text.into();
        let parsed = parse_quantity(&text).and_then(|d| {
            if d.in_range() {
                Ok(d)
            } else {
                Err("out of range")
            }
        });
        Self { text, parsed }
    }

    /// The text as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The exact value, or why the text is not a quantity.
    pub fn value(&self) -> Result<Decimal, &'static str> {
        self.parsed
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Quantity;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Kubernetes quantity such as \"50\" or \"0.9\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Quantity, E> {
                Ok(Quantity::new(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Quantity, E> {
                Ok(Quantity::new(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Quantity, E> {
                Ok(Quantity::new(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Quantity, E> {
                Ok(Quantity::new(v.to_string()))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn canonical(text: &str) -> String {
        parse_quantity(text).unwrap().to_string()
    }

    #[test]
    fn every_spelling_of_a_value_prints_one_way() {
        for (a, b) in [
            ("0.9", "900m"),
            ("50", "50.000"),
            ("1k", "1000"),
            ("1e3", "1000"),
            ("1E-3", "1m"),
            ("1Ki", "1024"),
            ("+2", "2"),
            ("0", "-0"),
            ("000.5", ".5"),
        ] {
            assert_eq!(canonical(a), canonical(b), "{a} vs {b}");
        }
        assert_eq!(canonical("900m"), "0.9");
        assert_eq!(canonical("50"), "50");
        assert_eq!(canonical("1u"), "0.000001");
        assert_eq!(canonical("-1.50"), "-1.5");
        assert_eq!(canonical("2Mi"), "2097152");
        assert_eq!(canonical("0.0"), "0");
    }

    #[test]
    fn malformed_quantities_are_refused() {
        for bad in [
            "",
            "abc",
            "1.2.3",
            ".",
            "5x",
            "1e",
            "1e1234",
            "12345678901234567891",
        ] {
            assert!(parse_quantity(bad).is_err(), "{bad:?}");
        }
        assert!(Quantity::new("1e999").value().is_err());
        assert!(Quantity::new("1e-99").value().is_err());
    }

    #[test]
    fn numbers_are_read_as_their_text() {
        let q: Quantity = serde_json::from_str("50").unwrap();
        assert_eq!(q.text(), "50");
        let q: Quantity = serde_json::from_str("0.5").unwrap();
        assert_eq!(q.value().unwrap().to_string(), "0.5");
        assert_eq!(q.value().unwrap().to_f64(), 0.5);
    }

    proptest! {
        #[test]
        fn canonical_text_parses_back_to_the_same_value(m in 0u64..1_000_000_000, e in -20i32..20) {
            let d = Decimal::new(false, u128::from(m), e);
            let text = d.to_string();
            prop_assert_eq!(parse_quantity(&text), Ok(d));
        }

        #[test]
        fn parse_never_panics(text in "\\PC{0,24}") {
            let _ = Quantity::new(text);
        }
    }
}
