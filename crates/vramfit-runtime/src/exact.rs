//! Exact arithmetic: decimals parsed without floating point, rationals over
//! checked `i128`, and rounding that always goes up.
//!
//! Every decision vramfit makes (a fit, a rounding, a coverage check) goes
//! through here, so that the same inputs give the same answer on any machine.
//! Overflow is an error, never a wrap: the limits are far above any real
//! image size or memory figure (see [`MAX_PIXELS`] and [`MAX_BYTES`]).

use std::cmp::Ordering;
use std::fmt;

/// Bytes in one MiB (2^20). Published "MB" figures from PyTorch tools are MiB.
pub const MIB: u64 = 1 << 20;

/// Largest size (pixels) the fit accepts: 2^48 pixels, a 16-million-pixel
/// square. Keeping sizes and demands well inside `i64` leaves the hull's
/// cross products and the margin arithmetic room inside `i128`.
pub const MAX_PIXELS: u64 = 1 << 48;

/// Largest demand the fit accepts: 2^56 bytes (64 PiB).
pub const MAX_BYTES: u64 = 1 << 56;

/// The error every overflowing operation returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overflow;

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("arithmetic overflow: a size or demand is beyond what vramfit can price exactly")
    }
}

impl std::error::Error for Overflow {}

/// An exact fraction `num / den` with `den > 0`, always in lowest terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ratio {
    num: i128,
    den: i128,
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

impl Ratio {
    /// `num / den`; `den` must not be zero.
    pub fn new(num: i128, den: i128) -> Result<Ratio, Overflow> {
        if den == 0 {
            return Err(Overflow);
        }
        let g = gcd(num, den).max(1);
        let (mut n, mut d) = (num / g, den / g);
        if d < 0 {
            n = n.checked_neg().ok_or(Overflow)?;
            d = d.checked_neg().ok_or(Overflow)?;
        }
        Ok(Ratio { num: n, den: d })
    }

    pub fn int(n: i128) -> Ratio {
        Ratio { num: n, den: 1 }
    }

    pub fn zero() -> Ratio {
        Ratio::int(0)
    }

    pub fn num(&self) -> i128 {
        self.num
    }

    pub fn den(&self) -> i128 {
        self.den
    }

    pub fn is_negative(&self) -> bool {
        self.num < 0
    }

    pub fn is_positive(&self) -> bool {
        self.num > 0
    }

    pub fn checked_add(self, o: Ratio) -> Result<Ratio, Overflow> {
        let n = self
            .num
            .checked_mul(o.den)
            .and_then(|a| o.num.checked_mul(self.den).and_then(|b| a.checked_add(b)))
            .ok_or(Overflow)?;
        let d = self.den.checked_mul(o.den).ok_or(Overflow)?;
        Ratio::new(n, d)
    }

    pub fn checked_sub(self, o: Ratio) -> Result<Ratio, Overflow> {
        self.checked_add(Ratio::new(o.num.checked_neg().ok_or(Overflow)?, o.den)?)
    }

    pub fn checked_mul(self, o: Ratio) -> Result<Ratio, Overflow> {
        // Cross-reduce first so that products stay small.
        let g1 = gcd(self.num, o.den).max(1);
        let g2 = gcd(o.num, self.den).max(1);
        let n = (self.num / g1).checked_mul(o.num / g2).ok_or(Overflow)?;
        let d = (self.den / g2).checked_mul(o.den / g1).ok_or(Overflow)?;
        Ratio::new(n, d)
    }

    pub fn checked_div(self, o: Ratio) -> Result<Ratio, Overflow> {
        if o.num == 0 {
            return Err(Overflow);
        }
        self.checked_mul(Ratio::new(o.den, o.num)?)
    }

    /// Smallest integer not below this value.
    pub fn ceil(&self) -> i128 {
        ceil_div(self.num, self.den)
    }

    /// Largest integer not above this value.
    pub fn floor(&self) -> i128 {
        self.num.div_euclid(self.den)
    }

    /// Exact comparison without overflow risk for values built by vramfit.
    pub fn cmp_exact(&self, o: &Ratio) -> Result<Ordering, Overflow> {
        let l = self.num.checked_mul(o.den).ok_or(Overflow)?;
        let r = o.num.checked_mul(self.den).ok_or(Overflow)?;
        Ok(l.cmp(&r))
    }

    /// This value against the fraction `num / den` (`den` > 0), exactly and
    /// without building (and reducing) a ratio: the per-point comparisons
    /// of 10^6 points pay for no gcd.
    pub fn cmp_fraction(&self, num: u64, den: u64) -> Result<Ordering, Overflow> {
        let l = self.num.checked_mul(i128::from(den)).ok_or(Overflow)?;
        let r = i128::from(num).checked_mul(self.den).ok_or(Overflow)?;
        Ok(l.cmp(&r))
    }

    /// `self · x + b` against `y`, exactly: in integers when the products
    /// fit, else through reduced ratios.
    pub fn cmp_line_at(&self, b: &Ratio, x: u64, y: u64) -> Result<Ordering, Overflow> {
        let fast = (|| {
            let lhs =
                self.num.checked_mul(i128::from(x))?.checked_mul(b.den)?.checked_add(b.num.checked_mul(self.den)?)?;
            let rhs = i128::from(y).checked_mul(self.den)?.checked_mul(b.den)?;
            Some(lhs.cmp(&rhs))
        })();
        match fast {
            Some(o) => Ok(o),
            None => self.checked_mul(Ratio::int(i128::from(x)))?.checked_add(*b)?.cmp_exact(&Ratio::int(i128::from(y))),
        }
    }

    /// The value as `num/den` (or `num` when whole); the form vramfit writes
    /// unrounded envelopes in, so a reader can re-check them exactly.
    pub fn to_fraction_string(&self) -> String {
        if self.den == 1 {
            self.num.to_string()
        } else {
            format!("{}/{}", self.num, self.den)
        }
    }

    /// Parses what [`Ratio::to_fraction_string`] writes.
    pub fn parse_fraction(s: &str) -> Option<Ratio> {
        let s = s.trim();
        match s.split_once('/') {
            Some((n, d)) => Ratio::new(n.trim().parse().ok()?, d.trim().parse().ok()?).ok(),
            None => s.parse().ok().map(Ratio::int),
        }
    }

    /// A decimal with `places` digits, rounded **up**: shown ratios never
    /// look better than they are.
    pub fn to_decimal_ceil(&self, places: u32) -> String {
        let scale = 10i128.pow(places);
        let scaled = ceil_div(self.num.saturating_mul(scale), self.den);
        format_scaled(scaled, places)
    }
}

/// Written as an exact decimal where one exists (`0.05`), else `num/den`.
impl serde::Serialize for Ratio {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&exact_decimal(self))
    }
}

/// In a schema: the exact decimal, or `num/den`.
impl schemars::JsonSchema for Ratio {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Ratio".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "An exact number: a decimal (`0.05`) or a fraction `num/den`",
            "pattern": "^-?[0-9]+(\\.[0-9]+)?(/[0-9]+)?$"
        })
    }
}

impl<'de> serde::Deserialize<'de> for Ratio {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_decimal(&s)
            .ok()
            .or_else(|| Ratio::parse_fraction(&s))
            .ok_or_else(|| serde::de::Error::custom(format!("'{s}' is not an exact number")))
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_fraction_string())
    }
}

/// `ceil(n / d)` for `d > 0`.
pub fn ceil_div(n: i128, d: i128) -> i128 {
    let q = n.div_euclid(d);
    if n.rem_euclid(d) == 0 {
        q
    } else {
        q + 1
    }
}

/// `ceil(n / d)` on unsigned values.
pub fn ceil_div_u128(n: u128, d: u128) -> u128 {
    n / d + u128::from(!n.is_multiple_of(d))
}

/// Writes an integer that counts `10^-places` units as a decimal.
pub fn format_scaled(scaled: i128, places: u32) -> String {
    if places == 0 {
        return scaled.to_string();
    }
    let scale = 10i128.pow(places);
    let sign = if scaled < 0 { "-" } else { "" };
    let a = scaled.unsigned_abs();
    let s = scale as u128;
    format!("{sign}{}.{:0width$}", a / s, a % s, width = places as usize)
}

/// Why a decimal did not parse; callers turn it into a message that names
/// the file, line and field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecimalError {
    Empty,
    Negative,
    NotANumber,
    TooPrecise,
    TooLarge,
}

impl fmt::Display for DecimalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DecimalError::Empty => "empty value",
            DecimalError::Negative => "negative value (must be zero or more)",
            DecimalError::NotANumber => "not a decimal number (expected digits with an optional '.', e.g. 4274.5)",
            DecimalError::TooPrecise => "more than 18 digits after the decimal point",
            DecimalError::TooLarge => "value too large",
        })
    }
}

/// Parses a non-negative decimal (`123`, `123.`, `0.05`, `+7.25`) exactly.
/// No exponent, no `inf`/`nan`: measurement files hold plain figures.
pub fn parse_decimal(text: &str) -> Result<Ratio, DecimalError> {
    let (num, places) = decimal_digits(text)?;
    Ratio::new(num, 10i128.pow(places)).map_err(|_| DecimalError::TooLarge)
}

/// A decimal as its digits read as one integer and the number of places
/// after the point: `4274.5` is `(42745, 1)`.
fn decimal_digits(text: &str) -> Result<(i128, u32), DecimalError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(DecimalError::Empty);
    }
    let body = if let Some(rest) = t.strip_prefix('-') {
        // "-0" and "-0.0" are zero; anything else is a negative delta.
        if !rest.is_empty() && rest.chars().all(|c| c == '0' || c == '.') && rest.contains('0') {
            rest
        } else if rest.chars().all(|c| c.is_ascii_digit() || c == '.') && rest.chars().any(|c| c.is_ascii_digit()) {
            return Err(DecimalError::Negative);
        } else {
            return Err(DecimalError::NotANumber);
        }
    } else {
        t.strip_prefix('+').unwrap_or(t)
    };
    let (int_part, frac_part) = match body.split_once('.') {
        Some((i, f)) => (i, f),
        None => (body, ""),
    };
    let digits_ok = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if !digits_ok(int_part) || !digits_ok(frac_part) || (int_part.is_empty() && frac_part.is_empty()) {
        return Err(DecimalError::NotANumber);
    }
    if frac_part.len() > 18 {
        return Err(DecimalError::TooPrecise);
    }
    let mut num: i128 = 0;
    for c in int_part.chars().chain(frac_part.chars()) {
        num = num
            .checked_mul(10)
            .and_then(|n| n.checked_add(i128::from(c as u8 - b'0')))
            .ok_or(DecimalError::TooLarge)?;
        if num > i128::from(u64::MAX) * 10i128.pow(18) {
            return Err(DecimalError::TooLarge);
        }
    }
    Ok((num, frac_part.len() as u32))
}

/// `width × height × batch`, the size every line is fitted and priced at;
/// None when it overflows or exceeds [`MAX_PIXELS`]. The one place the
/// pixel limit is applied.
pub fn pixels(width: u64, height: u64, batch: u64) -> Option<u64> {
    width.checked_mul(height).and_then(|p| p.checked_mul(batch)).filter(|p| *p <= MAX_PIXELS)
}

/// `pixels × frames`, a clip's pixel-frames, or None past [`MAX_PIXELS`]:
/// the bound an image's pixels have, held by a clip too, so its working set
/// and its clip copies stay inside what the pricer computes. The one place
/// a point's or a query's clip is bounded (ingest refuses past it).
pub fn pixel_frames(pixels: u64, frames: u64) -> Option<u64> {
    pixels.checked_mul(frames).filter(|x| *x <= MAX_PIXELS)
}

/// Decimal MiB to whole bytes, rounding **up** (docs/DESIGN.md, "The measurement CSV").
///
/// In integers (`ceil(digits × 2^20 / 10^places)`) where the product fits
/// an `i128`, which every real figure does: a CSV row holds up to three of
/// these, and reducing fractions by gcd was a tenth of reading a large CSV.
/// Else as an exact fraction; the two agree (a test compares them).
pub fn mib_decimal_to_bytes(text: &str) -> Result<u64, DecimalError> {
    let (num, places) = decimal_digits(text)?;
    let too_large = |_| DecimalError::TooLarge;
    match num.checked_mul(i128::from(MIB)) {
        Some(product) => u64::try_from(ceil_div(product, 10i128.pow(places))).map_err(too_large),
        None => mib_by_fraction(num, places),
    }
}

fn mib_by_fraction(num: i128, places: u32) -> Result<u64, DecimalError> {
    let r = Ratio::new(num, 10i128.pow(places)).map_err(|_| DecimalError::TooLarge)?;
    let bytes = r.checked_mul(Ratio::int(i128::from(MIB))).map_err(|_| DecimalError::TooLarge)?.ceil();
    u64::try_from(bytes).map_err(|_| DecimalError::TooLarge)
}

/// Shows a rational that has a finite decimal form exactly (`0.05`, `1.3`),
/// else as a fraction.
pub fn exact_decimal(r: &Ratio) -> String {
    for places in 0..=18u32 {
        let scale = 10i128.pow(places);
        if let Some(m) = r.num().checked_mul(scale) {
            if m % r.den() == 0 {
                let s = format_scaled(m / r.den(), places);
                return s;
            }
        }
    }
    r.to_fraction_string()
}

// The runtime's error from exact arithmetic's, here because `error` is the
// floor below this module.
impl From<Overflow> for crate::error::Error {
    fn from(e: Overflow) -> crate::error::Error {
        crate::error::Error::new(crate::error::Code::Overflow, e.to_string())
    }
}

impl From<DecimalError> for crate::error::Error {
    fn from(e: DecimalError) -> crate::error::Error {
        crate::error::Error::refused(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MiB in integers gives the exact fraction's bytes: figures of every
    /// length and precision, up to where the integers hand over.
    #[test]
    fn mib_to_bytes_in_integers_is_the_fractions_ceiling() {
        let mut texts: Vec<String> = vec!["0".into(), "0.0".into(), "1".into(), "4274.5".into(), "0.000001".into()];
        let mut seed = 0x1234_5678_9ABC_DEF1u64;
        for _ in 0..3000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let int = seed % 10u64.pow((seed % 20) as u32).max(1);
            let places = ((seed >> 32) % 19) as usize;
            let frac: String = (0..places).map(|k| char::from(b'0' + ((seed >> (k % 60)) % 10) as u8)).collect();
            texts.push(if places == 0 { int.to_string() } else { format!("{int}.{frac}") });
        }
        texts.push(format!("{}", u64::MAX));
        texts.push(format!("{}.{}", u64::MAX, "9".repeat(18)));
        texts.push(format!("{}", u64::MAX / super::MIB));
        let mut fast = 0;
        for t in &texts {
            let Ok((num, places)) = super::decimal_digits(t) else {
                assert!(super::mib_decimal_to_bytes(t).is_err(), "{t}");
                continue;
            };
            fast += usize::from(num.checked_mul(i128::from(super::MIB)).is_some());
            assert_eq!(super::mib_decimal_to_bytes(t), super::mib_by_fraction(num, places), "{t}");
        }
        // Both paths ran.
        assert!(fast > 1000 && fast < texts.len(), "{fast} of {}", texts.len());
    }

    #[test]
    fn decimals_parse_exactly() {
        assert_eq!(parse_decimal("452.0").unwrap(), Ratio::int(452));
        assert_eq!(parse_decimal("0.05").unwrap(), Ratio::new(1, 20).unwrap());
        assert_eq!(parse_decimal("+7.25").unwrap(), Ratio::new(29, 4).unwrap());
        assert_eq!(parse_decimal("3.").unwrap(), Ratio::int(3));
        assert_eq!(parse_decimal(".5").unwrap(), Ratio::new(1, 2).unwrap());
        assert_eq!(parse_decimal("-0.0").unwrap(), Ratio::zero());
        assert_eq!(parse_decimal("-1.5"), Err(DecimalError::Negative));
        for bad in ["", "abc", "1e3", "nan", "inf", "1.2.3", ".", "1,5", "- 3"] {
            assert!(parse_decimal(bad).is_err(), "{bad:?} must not parse");
        }
    }

    #[test]
    fn mib_round_up_to_bytes() {
        assert_eq!(mib_decimal_to_bytes("1").unwrap(), MIB);
        // 384.28173828125 MiB is exactly 402 948 096 + 295 424 bytes.
        assert_eq!(mib_decimal_to_bytes("384.28173828125").unwrap(), 384 * MIB + 295_424);
        // 534.4 MiB = 560 359 014.4 bytes: rounded up.
        assert_eq!(mib_decimal_to_bytes("534.4").unwrap(), 560_359_015);
    }

    #[test]
    fn ratio_arithmetic_is_reduced_and_rounds_up() {
        let r = Ratio::new(10, -4).unwrap();
        assert_eq!((r.num(), r.den()), (-5, 2));
        assert_eq!(r.ceil(), -2);
        assert_eq!(r.floor(), -3);
        assert_eq!(Ratio::new(7, 3).unwrap().to_decimal_ceil(2), "2.34");
        assert_eq!(exact_decimal(&Ratio::new(13, 10).unwrap()), "1.3");
        assert_eq!(exact_decimal(&Ratio::new(1, 3).unwrap()), "1/3");
        assert_eq!(Ratio::parse_fraction("-5/2"), Some(r));
        assert!(Ratio::int(i128::MAX).checked_add(Ratio::int(1)).is_err());
    }
}
