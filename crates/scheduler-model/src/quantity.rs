//! Kubernetes resource quantities (`100m`, `16Gi`, `8`, `1e3`), parsed exactly.
//!
//! The scheduler works in "scheduler units": milli-cores for `cpu`, whole units (rounded up)
//! for everything else, exactly like upstream's `MilliValue()` / `Value()`.

use thiserror::Error;

/// A quantity string that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid quantity {value:?} for {field}: {why}")]
pub struct QuantityError {
    /// Field path of the quantity.
    pub field: String,
    /// The offending text.
    pub value: String,
    /// Why it was refused.
    pub why: &'static str,
}

/// Parses `text` into milli-units (value × 1000), rounding up, as an `i128`.
fn parse_milli(text: &str) -> Result<i128, &'static str> {
    let s = text.trim();
    if s.is_empty() || s != text {
        return Err("empty or padded");
    }
    let (sign, body) = match s.as_bytes()[0] {
        b'-' => (-1i128, &s[1..]),
        b'+' => (1, &s[1..]),
        _ => (1, s),
    };
    let num_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (num, suffix) = body.split_at(num_end);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return Err("no number");
    }
    let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
    // (numerator, denominator-power-of-ten) of the mantissa.
    let mut mant: i128 = 0;
    for c in int_part.chars().chain(frac_part.chars()) {
        mant = mant
            .checked_mul(10)
            .and_then(|m| m.checked_add(i128::from(c as u8 - b'0')))
            .ok_or("too large")?;
    }
    let frac_digits = i32::try_from(frac_part.len()).map_err(|_| "too long")?;
    // value = mant * 10^-frac * mult
    let (bin_pow, dec_pow): (u32, i32) = match suffix {
        "" => (0, 0),
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        other => {
            let exp = other
                .strip_prefix('e')
                .or_else(|| other.strip_prefix('E'))
                .ok_or("unknown suffix")?;
            let e: i32 = exp.parse().map_err(|_| "bad exponent")?;
            if !(-30..=30).contains(&e) {
                return Err("exponent out of range");
            }
            (0, e)
        }
    };
    // milli = mant * 2^bin * 10^(dec + 3 - frac), rounded up.
    let mut value = mant.checked_shl(bin_pow).ok_or("too large")?;
    if bin_pow > 0 && value >> bin_pow != mant {
        return Err("too large");
    }
    let p = dec_pow + 3 - frac_digits;
    if p >= 0 {
        let f = 10i128.checked_pow(p.unsigned_abs()).ok_or("too large")?;
        value = value.checked_mul(f).ok_or("too large")?;
    } else {
        let d = 10i128.checked_pow(p.unsigned_abs()).ok_or("too small")?;
        value = (value + d - 1) / d;
    }
    Ok(sign * value)
}

/// Parses a quantity into scheduler units for the resource `resource`.
/// `cpu` → milli-cores; everything else → whole units rounded up. Negative → error.
pub fn parse_resource(resource: &str, text: &str, field: &str) -> Result<i64, QuantityError> {
    parse_resource_with(resource, text, || field.to_string())
}

/// As [`parse_resource`], building the field path only on error.
pub fn parse_resource_with(
    resource: &str,
    text: &str,
    field: impl FnOnce() -> String,
) -> Result<i64, QuantityError> {
    if let Some(v) = plain_quantity(resource, text) {
        return Ok(v);
    }
    let field = std::cell::Cell::new(Some(field));
    let err = |why| QuantityError {
        field: field.take().map(|f| f()).unwrap_or_default(),
        value: text.to_string(),
        why,
    };
    let milli = parse_milli(text).map_err(err)?;
    if milli < 0 {
        return Err(err("negative"));
    }
    let units = if resource == "cpu" {
        milli
    } else {
        (milli + 999) / 1000
    };
    i64::try_from(units).map_err(|_| err("too large"))
}

/// The common forms (up to 15 digits with no suffix or `m`, `Ki`, `Mi`, `Gi`, `Ti`) in
/// scheduler units without the general parser's 128-bit arithmetic, which dominates
/// converting many pods: the same value, or `None` for any other form and for a value out of
/// range (the general parser then answers, or says why not).
fn plain_quantity(resource: &str, text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let digits = bytes.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || digits > 15 {
        return None;
    }
    let mant = bytes[..digits]
        .iter()
        .fold(0i64, |m, c| m * 10 + i64::from(c - b'0'));
    let shift = match &text[digits..] {
        "m" if resource == "cpu" => return Some(mant),
        // Milli-units rounded up to whole units.
        "m" => return Some((mant + 999) / 1000),
        "" => 0,
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        "Ti" => 40,
        _ => return None,
    };
    let units = mant.checked_mul(1i64 << shift)?;
    if resource == "cpu" {
        units.checked_mul(1000)
    } else {
        Some(units)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_forms() {
        assert_eq!(parse_resource("cpu", "100m", "f"), Ok(100));
        assert_eq!(parse_resource("cpu", "2", "f"), Ok(2000));
        assert_eq!(parse_resource("cpu", "1.5", "f"), Ok(1500));
        assert_eq!(parse_resource("memory", "1Gi", "f"), Ok(1 << 30));
        assert_eq!(parse_resource("memory", "1G", "f"), Ok(1_000_000_000));
        assert_eq!(parse_resource("memory", "1e3", "f"), Ok(1000));
        assert_eq!(parse_resource("nvidia.com/gpu", "8", "f"), Ok(8));
        assert_eq!(parse_resource("memory", "1m", "f"), Ok(1), "rounds up");
        assert_eq!(parse_resource("cpu", "1u", "f"), Ok(1), "rounds up");
    }

    /// The general parser alone, for comparing the common forms' shortcut with it.
    fn general(resource: &str, text: &str) -> Option<i64> {
        let milli = parse_milli(text).ok()?;
        if milli < 0 {
            return None;
        }
        let units = if resource == "cpu" {
            milli
        } else {
            (milli + 999) / 1000
        };
        i64::try_from(units).ok()
    }

    #[test]
    fn the_common_forms_shortcut_gives_the_general_parsers_value() {
        let mut numbers: Vec<String> = (0..2000).map(|n| n.to_string()).collect();
        numbers.extend(
            [
                "007",
                "0000",
                "999999999999999",
                "1000000000000000",
                "9223372",
                "8796093",
            ]
            .map(String::from),
        );
        numbers.extend((0..16).map(|k| "9".repeat(k + 1)));
        numbers.extend((0..16).map(|k| format!("1{}", "0".repeat(k))));
        let suffixes = [
            "", "m", "Ki", "Mi", "Gi", "Ti", "Pi", "k", "M", "G", "e3", "u", " ", "i",
        ];
        for resource in ["cpu", "memory", "nvidia.com/gpu"] {
            for n in &numbers {
                for suffix in suffixes {
                    let text = format!("{n}{suffix}");
                    if let Some(v) = plain_quantity(resource, &text) {
                        assert_eq!(Some(v), general(resource, &text), "{resource} {text}");
                    }
                    assert_eq!(
                        parse_resource(resource, &text, "f").ok(),
                        general(resource, &text),
                        "{resource} {text}"
                    );
                }
            }
        }
        assert_eq!(plain_quantity("memory", "32Gi"), Some(32 << 30));
        assert_eq!(plain_quantity("cpu", "250m"), Some(250));
        assert_eq!(plain_quantity("memory", "1m"), Some(1));
        assert_eq!(
            plain_quantity("cpu", "1.5"),
            None,
            "the general parser reads it"
        );
        assert_eq!(plain_quantity("cpu", "+1"), None);
    }

    #[test]
    fn refuses_bad_forms() {
        for bad in ["", " 1", "abc", "1Zi", "-1", "1..2", "1e99"] {
            let e = parse_resource("cpu", bad, "spec.x").unwrap_err();
            assert_eq!(e.field, "spec.x");
            assert_eq!(e.value, bad);
        }
    }
}
