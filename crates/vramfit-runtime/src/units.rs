//! Sizes typed by people: image sizes (`1024x1024`) and memory amounts
//! (`20GiB`, `512M`, `1073741824`).

use crate::error::Result;

/// `WxH` (also `W×H` or `W*H`) with positive integers.
pub fn parse_size(s: &str) -> Result<(u64, u64)> {
    let t = s.trim();
    let (w, h) = t
        .split_once(['x', 'X', '×', '*'])
        .ok_or_else(|| crate::error::refused!("size '{t}': expected WIDTHxHEIGHT, e.g. 1024x1024"))?;
    let parse = |v: &str, what: &str| -> Result<u64> {
        let v = v.trim();
        match v.parse::<u64>() {
            Ok(n) if n > 0 && v.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
            _ => crate::error::refuse!("size '{t}': {what} must be a positive integer (digits only)"),
        }
    };
    Ok((parse(w, "width")?, parse(h, "height")?))
}

/// A memory amount in bytes: plain bytes, or a number with `KiB`/`MiB`/`GiB`/`TiB`
/// (`K`/`M`/`G`/`T` and `KB`/`MB`/`GB` are read as the same binary units, as
/// PyTorch's tools print them). Decimals are exact and round down to whole
/// bytes, so a budget is never larger than what was typed.
pub fn parse_bytes(s: &str) -> Result<u64> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        u => crate::error::refuse!("'{t}': unknown unit '{u}' (accepted: bytes, KiB, MiB, GiB, TiB; K/M/G/T)"),
    };
    let value = crate::exact::parse_decimal(num).map_err(|e| crate::error::refused!("'{t}': {e}"))?;
    let bytes = value
        .checked_mul(crate::exact::Ratio::int(1i128 << shift))
        .map_err(|_| crate::error::refused!("'{t}': too large"))?
        .floor();
    u64::try_from(bytes).map_err(|_| crate::error::refused!("'{t}': too large"))
}

/// A factor typed on the command line (`--share`, `--transient`): a plain
/// decimal, or one with a power-of-ten exponent (`1e-16`, `2.5E3`), read
/// exactly. An exponent that does not fit the exact range is an error.
pub fn parse_factor(s: &str) -> Result<crate::exact::Ratio> {
    use crate::exact::Ratio;
    let t = s.trim();
    let (mantissa, exp) = match t.split_once(['e', 'E']) {
        None => return crate::exact::parse_decimal(t).map_err(|e| crate::error::refused!("'{t}': {e}")),
        Some((m, e)) => {
            (m, e.parse::<i32>().map_err(|_| crate::error::refused!("'{t}': the exponent '{e}' is not an integer"))?)
        }
    };
    let m = crate::exact::parse_decimal(mantissa).map_err(|e| crate::error::refused!("'{t}': {e}"))?;
    if exp.unsigned_abs() > 30 {
        crate::error::refuse!("'{t}': the exponent {exp} is outside -30..=30");
    }
    let scale = Ratio::int(10i128.pow(exp.unsigned_abs()));
    let v = if exp >= 0 { m.checked_mul(scale) } else { m.checked_div(scale) };
    v.map_err(|_| crate::error::refused!("'{t}': too many digits to hold exactly"))
}

/// A count in groups of three digits, as tables show bytes and pixels:
/// `4 955 360 461`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// Bytes as MiB with `places` decimals, rounded **up** (a figure shown is
/// never less than the bytes behind it): the one MiB formatter.
pub fn mib_up(bytes: u64, places: u32) -> String {
    let scale = 10i128.pow(places);
    crate::exact::format_scaled(
        crate::exact::ceil_div(i128::from(bytes) * scale, i128::from(crate::exact::MIB)),
        places,
    )
}

/// Bytes as whole MiB rounded up, for messages (`4488 MiB`).
pub fn mib_text(bytes: u64) -> String {
    format!("{} MiB", mib_up(bytes, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1024x768").unwrap(), (1024, 768));
        assert_eq!(parse_size("1280×720").unwrap(), (1280, 720));
        assert!(parse_size("0x5").is_err());
        assert!(parse_size("1024").is_err());
        assert!(parse_size("-4x4").is_err());
    }

    #[test]
    fn factors_with_exponents_are_exact() {
        use crate::exact::Ratio;
        assert_eq!(parse_factor("1e-16").unwrap(), Ratio::new(1, 10i128.pow(16)).unwrap());
        assert_eq!(parse_factor("2.5E3").unwrap(), Ratio::int(2500));
        assert_eq!(parse_factor("0.25").unwrap(), Ratio::new(1, 4).unwrap());
        assert!(parse_factor("1e-99").is_err());
        assert!(parse_factor("1ex").is_err());
        assert!(parse_factor("-1e3").is_err());
    }

    #[test]
    fn byte_amounts() {
        assert_eq!(parse_bytes("20GiB").unwrap(), 20 << 30);
        assert_eq!(parse_bytes("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_bytes("512 MiB").unwrap(), 512 << 20);
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert!(parse_bytes("-1GiB").is_err());
        assert!(parse_bytes("NaN").is_err());
        assert!(parse_bytes("3 parsecs").is_err());
        assert!(parse_bytes("99999999999999999999TiB").is_err());
    }
}
