//! Devices per GPU as an exact fraction: `0.5` EFA per GPU on a p4d, 32 per 8 GPUs on a p5.
//!
//! Counts are `⌈G × r⌉` (behaviour.md §3.5). In floating point `30 × 0.1` is a little over 3 and
//! would round up to 4 devices, a pod that never schedules; so a setting is read from its JSON
//! text as a decimal fraction and every count is computed in integers.

use std::cmp::Ordering;
use std::fmt;

/// The most decimal places a per-GPU setting may have.
pub const MAX_DECIMALS: u32 = 6;

/// A non-negative fraction `num / den`, `den > 0`.
#[derive(Debug, Clone, Copy)]
pub struct Ratio {
    num: u64,
    den: u64,
}

impl Ratio {
    /// `devices` per `gpus`; `None` when `gpus` is 0.
    pub fn new(devices: u64, gpus: u64) -> Option<Ratio> {
        (gpus > 0).then_some(Ratio {
            num: devices,
            den: gpus,
        })
    }

    pub fn whole(n: u64) -> Ratio {
        Ratio { num: n, den: 1 }
    }

    /// A JSON number's text as a fraction: `4`, `0.5`, `1.50`, `5e-1`. `None` for anything else,
    /// a negative number, or one with more than [`MAX_DECIMALS`] decimal places.
    pub fn parse_decimal(text: &str) -> Option<Ratio> {
        let (mantissa, exponent) = match text.find(['e', 'E']) {
            Some(at) => (&text[..at], text[at + 1..].parse::<i32>().ok()?),
            None => (text, 0),
        };
        let (int_part, frac_part) = match mantissa.split_once('.') {
            Some((_, "")) => return None,
            Some(parts) => parts,
            None => (mantissa, ""),
        };
        let digits = int_part.bytes().chain(frac_part.bytes());
        if int_part.is_empty() || !digits.clone().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let frac_part = frac_part.trim_end_matches('0');
        let mut num: u64 = 0;
        for b in int_part.bytes().chain(frac_part.bytes()) {
            num = num.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
        }
        // num × 10^(exponent − decimals)
        let scale = i64::from(exponent) - frac_part.len() as i64;
        if scale >= 0 {
            let factor = 10u64.checked_pow(u32::try_from(scale).ok()?)?;
            return Some(Ratio::whole(num.checked_mul(factor)?));
        }
        let decimals = u32::try_from(-scale).ok()?;
        if decimals > MAX_DECIMALS && num != 0 {
            return None;
        }
        Some(Ratio {
            num,
            den: 10u64.checked_pow(decimals)?,
        })
    }

    pub fn is_zero(self) -> bool {
        self.num == 0
    }

    /// `self ≤ n`.
    pub fn at_most(self, n: u64) -> bool {
        u128::from(self.num) <= u128::from(n) * u128::from(self.den)
    }

    /// `⌈gpus × self⌉`, `None` when it does not fit in a count.
    pub fn devices_for(self, gpus: u64) -> Option<u64> {
        let product = u128::from(gpus) * u128::from(self.num);
        u64::try_from(product.div_ceil(u128::from(self.den))).ok()
    }
}

impl PartialEq for Ratio {
    fn eq(&self, other: &Ratio) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ratio {}

impl PartialOrd for Ratio {
    fn partial_cmp(&self, other: &Ratio) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ratio {
    fn cmp(&self, other: &Ratio) -> Ordering {
        (u128::from(self.num) * u128::from(other.den))
            .cmp(&(u128::from(other.num) * u128::from(self.den)))
    }
}

/// As a decimal where it is one (`4`, `0.5`, `1.25`), else as `num/den`.
impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.num / self.den;
        let mut rest = self.num % self.den;
        if rest == 0 {
            return write!(f, "{whole}");
        }
        let mut den = self.den;
        while den % 10 == 0 && rest % 10 == 0 {
            den /= 10;
            rest /= 10;
        }
        let mut digits = String::new();
        let mut remainder = rest;
        for _ in 0..=MAX_DECIMALS {
            if remainder == 0 {
                break;
            }
            remainder *= 10;
            digits.push(char::from(b'0' + (remainder / den) as u8));
            remainder %= den;
        }
        if remainder == 0 {
            write!(f, "{whole}.{digits}")
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str) -> Ratio {
        Ratio::parse_decimal(text).unwrap_or_else(|| panic!("{text} should parse"))
    }

    #[test]
    fn decimals_are_read_exactly() {
        assert_eq!(r("4"), Ratio::whole(4));
        assert_eq!(r("0.5"), Ratio::new(1, 2).unwrap());
        assert_eq!(r("1.50"), Ratio::new(3, 2).unwrap());
        assert_eq!(r("5e-1"), Ratio::new(1, 2).unwrap());
        assert_eq!(r("0.25E1"), Ratio::new(5, 2).unwrap());
        assert_eq!(r("1e1"), Ratio::whole(10));
        assert_eq!(r("0.000001"), Ratio::new(1, 1_000_000).unwrap());
        assert_eq!(r("0.10000000"), Ratio::new(1, 10).unwrap());
        for bad in [
            "",
            "-1",
            "0.0000001",
            ".5",
            "5.",
            "1e",
            "0x10",
            "1.2.3",
            "٣",
            "99999999999999999999",
        ] {
            assert_eq!(Ratio::parse_decimal(bad), None, "{bad}");
        }
    }

    #[test]
    fn counts_round_up_exactly() {
        // 30 × 0.1 is 3, not the 3.0000000000000004 of floating point.
        assert_eq!(r("0.1").devices_for(30), Some(3));
        assert_eq!(r("0.5").devices_for(3), Some(2));
        assert_eq!(r("1.5").devices_for(1), Some(2));
        assert_eq!(Ratio::new(4, 8).unwrap().devices_for(1), Some(1));
        assert_eq!(Ratio::new(32, 8).unwrap().devices_for(8), Some(32));
        assert_eq!(Ratio::whole(0).devices_for(8), Some(0));
        assert_eq!(Ratio::whole(64).devices_for(u64::MAX), None);
        assert_eq!(Ratio::whole(1).devices_for(u64::MAX), Some(u64::MAX));
    }

    #[test]
    fn fractions_compare_by_value() {
        assert!(Ratio::new(4, 8).unwrap() < Ratio::whole(1));
        assert_eq!(Ratio::new(32, 8).unwrap(), Ratio::whole(4));
        assert!(r("64").at_most(64) && !r("64.000001").at_most(64));
    }

    #[test]
    fn shown_as_written() {
        for text in ["4", "0.5", "1.25", "0.000001", "64"] {
            assert_eq!(r(text).to_string(), text);
        }
        assert_eq!(Ratio::new(32, 8).unwrap().to_string(), "4");
        assert_eq!(Ratio::new(1, 3).unwrap().to_string(), "1/3");
    }
}
