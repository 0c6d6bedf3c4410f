//! Numbers in the policy file, read exactly.

use crate::exact::{parse_decimal, Ratio};

/// A policy number (TOML float or string) as an exact rational. A TOML float
/// is read through Rust's shortest round-trip form, which is the same on
/// every machine, so `0.05` means exactly 5/100.
pub fn policy_number(v: &toml::Value) -> Option<Ratio> {
    match v {
        toml::Value::String(s) => parse_decimal(s).ok(),
        toml::Value::Integer(i) if *i >= 0 => Some(Ratio::int(i128::from(*i))),
        toml::Value::Float(f) if f.is_finite() && *f >= 0.0 => parse_decimal(&format!("{f}")).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_floats_are_read_as_written() {
        let v: toml::Value = toml::from_str::<toml::Table>("m = 0.05").unwrap()["m"].clone();
        assert_eq!(policy_number(&v), Some(Ratio::new(1, 20).unwrap()));
    }
}
