//! Kubernetes resource quantities (`"8"`, `"500m"`, `"1600Gi"`, `"2102636432Ki"`, `"1e3"`),
//! parsed exactly (no floating point) so GPU counts can be checked for integrality.

use std::fmt;

/// A parsed quantity: `sign × digits × 10^exp10 × 1024^bin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    negative: bool,
    digits: u128,
    exp10: i32,
    bin: u32,
}

/// Why a quantity string was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantityError(pub &'static str);

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

const MAX_DIGITS: usize = 36;

impl Quantity {
    /// Parses the Kubernetes quantity grammar: optional sign, decimal number, optional
    /// binary (`Ki` … `Ei`), decimal (`n u m k M G T P E`) or exponent (`e3`, `E-2`) suffix.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let s = text.trim();
        if s.is_empty() {
            return Err(QuantityError("empty quantity"));
        }
        let bytes = s.as_bytes();
        let mut at = 0;
        let mut negative = false;
        if bytes[0] == b'+' || bytes[0] == b'-' {
            negative = bytes[0] == b'-';
            at = 1;
        }
        let mut digits: u128 = 0;
        let mut ndigits = 0usize;
        let mut exp10: i32 = 0;
        let mut seen_dot = false;
        let mut any_digit = false;
        while at < bytes.len() {
            let b = bytes[at];
            if b.is_ascii_digit() {
                any_digit = true;
                if digits != 0 || b != b'0' {
                    ndigits += 1;
                }
                if ndigits > MAX_DIGITS {
                    return Err(QuantityError("too many digits"));
                }
                digits = digits * 10 + u128::from(b - b'0');
                if seen_dot {
                    exp10 -= 1;
                }
            } else if b == b'.' && !seen_dot {
                seen_dot = true;
            } else {
                break;
            }
            at += 1;
        }
        if !any_digit {
            return Err(QuantityError("expected a number"));
        }
        let suffix = &s[at..];
        let mut bin = 0u32;
        match suffix {
            "" => {}
            "Ki" => bin = 1,
            "Mi" => bin = 2,
            "Gi" => bin = 3,
            "Ti" => bin = 4,
            "Pi" => bin = 5,
            "Ei" => bin = 6,
            "n" => exp10 -= 9,
            "u" => exp10 -= 6,
            "m" => exp10 -= 3,
            "k" => exp10 += 3,
            "M" => exp10 += 6,
            "G" => exp10 += 9,
            "T" => exp10 += 12,
            "P" => exp10 += 15,
            "E" => exp10 += 18,
            _ => {
                let rest = suffix
                    .strip_prefix('e')
                    .or_else(|| suffix.strip_prefix('E'))
                    .ok_or(QuantityError("unknown suffix"))?;
                let (sign, num) = match rest.as_bytes().first() {
                    Some(b'-') => (-1, &rest[1..]),
                    Some(b'+') => (1, &rest[1..]),
                    _ => (1, rest),
                };
                if num.is_empty() || num.len() > 4 || !num.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(QuantityError("malformed exponent"));
                }
                let e: i32 = num
                    .parse()
                    .map_err(|_| QuantityError("malformed exponent"))?;
                exp10 += sign * e;
            }
        }
        Ok(Quantity {
            negative: negative && digits != 0,
            digits,
            exp10,
            bin,
        })
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// `value × 10^scale`, rounded up (towards +∞), and whether it was exact.
    /// `None` on overflow.
    pub fn scaled_ceil(&self, scale: i32) -> Option<(i128, bool)> {
        let e = self.exp10.checked_add(scale)?;
        let mut num: i128 = i128::try_from(self.digits).ok()?;
        for _ in 0..self.bin {
            num = num.checked_mul(1024)?;
        }
        let (mag, exact) = if e >= 0 {
            let mut v = num;
            for _ in 0..e {
                v = v.checked_mul(10)?;
            }
            (v, true)
        } else {
            if -e > 38 {
                // Smaller than any representable unit.
                return Some(if num == 0 {
                    (0, true)
                } else if self.negative {
                    (0, false)
                } else {
                    (1, false)
                });
            }
            let den = 10i128.checked_pow((-e) as u32)?;
            let q = num / den;
            let r = num % den;
            if r == 0 {
                (q, true)
            } else if self.negative {
                // ceil of a negative value truncates towards zero.
                (q, false)
            } else {
                (q + 1, false)
            }
        };
        Some((if self.negative { -mag } else { mag }, exact))
    }

    /// The value as a whole number, if it is one.
    pub fn as_integer(&self) -> Option<i64> {
        match self.scaled_ceil(0) {
            Some((v, true)) => i64::try_from(v).ok(),
            _ => None,
        }
    }
}

/// A resource amount in alfred's integer units: CPU in millicores, everything else in base
/// units rounded up (Kubernetes `MilliValue` / `Value`).
pub fn resource_units(resource: &str, text: &str) -> Result<i64, QuantityError> {
    let q = Quantity::parse(text)?;
    let scale = if resource == "cpu" { 3 } else { 0 };
    let (v, _) = q
        .scaled_ceil(scale)
        .ok_or(QuantityError("value out of range"))?;
    i64::try_from(v).map_err(|_| QuantityError("value out of range"))
}

/// A device count (GPUs): must be a non-negative whole number. A whole number too large
/// for a count is out of range, not a fraction.
pub fn device_count(text: &str) -> Result<u32, QuantityError> {
    const OUT_OF_RANGE: QuantityError = QuantityError("device count out of range");
    let q = Quantity::parse(text)?;
    if q.is_negative() {
        return Err(QuantityError("a device count cannot be negative"));
    }
    match q.scaled_ceil(0) {
        None => Err(OUT_OF_RANGE),
        Some((_, false)) => Err(QuantityError("a device count must be a whole number")),
        Some((v, true)) => u32::try_from(v).map_err(|_| OUT_OF_RANGE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_shapes() {
        assert_eq!(resource_units("cpu", "96").unwrap(), 96_000);
        assert_eq!(resource_units("cpu", "500m").unwrap(), 500);
        assert_eq!(resource_units("cpu", "0.1").unwrap(), 100);
        assert_eq!(resource_units("cpu", "1u").unwrap(), 1, "rounds up");
        assert_eq!(
            resource_units("memory", "1600Gi").unwrap(),
            1600 * 1024 * 1024 * 1024
        );
        assert_eq!(
            resource_units("memory", "2102636432Ki").unwrap(),
            2_102_636_432 * 1024
        );
        assert_eq!(resource_units("memory", "1e3").unwrap(), 1000);
        assert_eq!(resource_units("memory", "1.5k").unwrap(), 1500);
        assert_eq!(resource_units("memory", "128974848").unwrap(), 128_974_848);
    }

    #[test]
    fn device_counts_must_be_whole_and_non_negative() {
        assert_eq!(device_count("8").unwrap(), 8);
        assert_eq!(device_count("+2").unwrap(), 2);
        assert_eq!(device_count("2000m").unwrap(), 2);
        assert_eq!(device_count("0").unwrap(), 0);
        assert!(device_count("-1").is_err());
        assert!(device_count("1.5").is_err());
        assert!(device_count("500m").is_err());
        assert!(device_count("eight").is_err());
        assert!(device_count("").is_err());
        assert!(device_count("8x").is_err());
    }

    /// A whole number too large for a count says so; a fraction, however large or small,
    /// is not whole.
    #[test]
    fn oversized_device_counts_are_out_of_range_not_fractions() {
        let out = QuantityError("device count out of range");
        let fraction = QuantityError("a device count must be a whole number");
        assert_eq!(device_count("99999999999999999999"), Err(out.clone()));
        assert_eq!(device_count("4294967296"), Err(out.clone()));
        assert_eq!(device_count("1e40"), Err(out.clone()));
        assert_eq!(device_count("4Ei"), Err(out));
        assert_eq!(device_count("4294967295").unwrap(), u32::MAX);
        assert_eq!(device_count("1.5"), Err(fraction.clone()));
        assert_eq!(
            device_count("99999999999999999999.5"),
            Err(fraction.clone())
        );
        assert_eq!(device_count("1e-50"), Err(fraction));
    }
}
