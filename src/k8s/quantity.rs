//! Reads a Kubernetes resource quantity as a whole number of devices.
//!
//! The API server canonicalises quantities before admission, so a GPU count of `1.5` arrives as
//! `"1500m"` and `1000` may arrive as `"1k"`: the whole grammar is read, exactly, and anything that
//! is not a non-negative whole number is an error rather than a guess.

use crate::json::tape::Tape;

/// Why a quantity is not a device count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// Not a quantity at all (`"eight"`, `true`, an object).
    NotAQuantity,
    /// A quantity, but negative or with a fractional part.
    NotWhole,
    /// Larger than any device count can be.
    TooLarge,
}

impl Problem {
    pub fn describe(self) -> &'static str {
        match self {
            Problem::NotAQuantity => "is not a Kubernetes quantity",
            Problem::NotWhole => "is not a whole, non-negative number",
            Problem::TooLarge => "is too large",
        }
    }
}

/// The whole number that a quantity's JSON text (a string or a number) stands for.
pub fn whole(json: &str) -> Result<u64, Problem> {
    let Ok(tape) = crate::json::lenient::read::<Tape<'_>>(json) else {
        return Err(Problem::NotAQuantity);
    };
    let value = tape.root();
    if let Some(s) = value.as_str() {
        return parse(s);
    }
    let n = value.as_number().ok_or(Problem::NotAQuantity)?;
    if let Some(u) = n.as_u64() {
        Ok(u)
    } else if n.as_i64().is_some() {
        Err(Problem::NotWhole)
    } else {
        let f = n.as_f64().ok_or(Problem::NotAQuantity)?;
        if f < 0.0 || f.fract() != 0.0 {
            Err(Problem::NotWhole)
        } else if f >= u64::MAX as f64 {
            Err(Problem::TooLarge)
        } else {
            Ok(f as u64)
        }
    }
}

/// Whether `s` is a non-negative Kubernetes quantity (`100m`, `2`, `1.5Gi`), whole or not.
pub fn is_quantity(s: &str) -> bool {
    !s.starts_with('-') && !matches!(parse(s), Err(Problem::NotAQuantity))
}

/// Parses `<sign><digits>[.<digits>]<suffix>` where the suffix is a binary SI suffix (`Ki`…`Ei`),
/// a decimal SI suffix (`n`, `u`, `m`, `k`, `M`…`E`) or a decimal exponent (`e3`, `E-2`).
pub fn parse(s: &str) -> Result<u64, Problem> {
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let number_len = rest
        .bytes()
        .position(|b| !(b.is_ascii_digit() || b == b'.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_len);
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    if (int_part.is_empty() && frac_part.is_empty()) || frac_part.contains('.') {
        return Err(Problem::NotAQuantity);
    }
    let (mut exp10, binary_power) = suffix_scale(suffix)?;

    // The digits as one integer, with the decimal point folded into the exponent.
    let mut mantissa: u128 = 0;
    for b in int_part.bytes().chain(frac_part.bytes()) {
        mantissa = mantissa
            .checked_mul(10)
            .and_then(|m| m.checked_add(u128::from(b - b'0')))
            .ok_or(Problem::TooLarge)?;
    }
    exp10 -= i32::try_from(frac_part.len()).map_err(|_| Problem::TooLarge)?;
    if mantissa == 0 {
        return Ok(0);
    }
    if negative {
        return Err(Problem::NotWhole);
    }
    let mut value = mantissa
        .checked_mul(1024u128.pow(binary_power))
        .ok_or(Problem::TooLarge)?;
    if exp10 >= 0 {
        let scale = 10u128
            .checked_pow(exp10.unsigned_abs())
            .ok_or(Problem::TooLarge)?;
        value = value.checked_mul(scale).ok_or(Problem::TooLarge)?;
    } else {
        // A divisor larger than any u128 leaves a non-zero value fractional.
        let divisor = 10u128
            .checked_pow(exp10.unsigned_abs())
            .ok_or(Problem::NotWhole)?;
        if value % divisor != 0 {
            return Err(Problem::NotWhole);
        }
        value /= divisor;
    }
    u64::try_from(value).map_err(|_| Problem::TooLarge)
}

/// The decimal exponent and the power of 1024 that a suffix stands for.
fn suffix_scale(suffix: &str) -> Result<(i32, u32), Problem> {
    let scale = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 1),
        "Mi" => (0, 2),
        "Gi" => (0, 3),
        "Ti" => (0, 4),
        "Pi" => (0, 5),
        "Ei" => (0, 6),
        _ => {
            let exponent = suffix
                .strip_prefix(['e', 'E'])
                .ok_or(Problem::NotAQuantity)?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(Problem::NotAQuantity);
            }
            // Exponents beyond a few dozen cannot give a device count either way.
            let e: i64 = exponent.parse().map_err(|_| Problem::TooLarge)?;
            (e.clamp(-1000, 1000) as i32, 0)
        }
    };
    Ok(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_in_every_spelling() {
        for (text, n) in [
            ("8", 8),
            ("+8", 8),
            ("0", 0),
            ("-0", 0),
            ("8000m", 8),
            ("1k", 1000),
            ("2e1", 20),
            ("2E+1", 20),
            ("200e-2", 2),
            ("1Ki", 1024),
            ("0.5Ki", 512),
            ("8.", 8),
            ("8.000", 8),
            ("0008", 8),
        ] {
            assert_eq!(parse(text), Ok(n), "{text}");
        }
    }

    #[test]
    fn fractions_and_negatives_are_not_device_counts() {
        for text in ["1500m", "1.5", "-1", "0.3Ki", "1e-1", "1n"] {
            assert_eq!(parse(text), Err(Problem::NotWhole), "{text}");
        }
    }

    #[test]
    fn garbage_is_not_a_quantity() {
        for text in [
            "", "eight", ".", "1..2", "1.2.3", "8 ", " 8", "8x", "1e", "1e+", "Ki", "--1", "1ki",
        ] {
            assert_eq!(parse(text), Err(Problem::NotAQuantity), "{text:?}");
        }
    }

    #[test]
    fn huge_values_are_refused_not_wrapped() {
        assert_eq!(parse("1e30"), Err(Problem::TooLarge));
        assert_eq!(
            parse("99999999999999999999999999999999999999999"),
            Err(Problem::TooLarge)
        );
        assert_eq!(parse("1e99999999999"), Err(Problem::TooLarge));
        assert_eq!(parse("16Ei"), Err(Problem::TooLarge));
        assert_eq!(parse("1e-99999999999"), Err(Problem::NotWhole));
        assert_eq!(parse("1e99999999999999999999"), Err(Problem::TooLarge));
    }

    #[test]
    fn json_numbers() {
        assert_eq!(whole("8"), Ok(8));
        assert_eq!(whole("8.0"), Ok(8));
        assert_eq!(whole("-1"), Err(Problem::NotWhole));
        assert_eq!(whole("1.5"), Err(Problem::NotWhole));
        assert_eq!(whole("1e300"), Err(Problem::TooLarge));
        assert_eq!(whole("true"), Err(Problem::NotAQuantity));
        assert_eq!(whole("null"), Err(Problem::NotAQuantity));
    }
}
