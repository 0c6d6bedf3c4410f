//! The value types of `fits/policy.toml`: each one is read by serde and
//! checks itself where it is read, so a wrong value is refused with the
//! line and the key path serde stops at (`read::parse` turns both into an
//! `InputError`). Each also describes itself to the schema.

use crate::exact::{parse_decimal, Ratio};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::{Deserializer, Error, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

/// A number the policy reads exactly: a decimal string (`"0.05"`,
/// preferred), a TOML integer, or a TOML float read through Rust's shortest
/// round-trip form (the same on every machine, so `0.05` means exactly
/// 5/100). Never negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decimal(pub Ratio);

impl<'de> Deserialize<'de> for Decimal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
        struct Exact;
        impl Visitor<'_> for Exact {
            type Value = Decimal;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-negative number (a decimal string such as \"0.05\", or a TOML number)")
            }
            fn visit_str<E: Error>(self, s: &str) -> Result<Decimal, E> {
                match parse_decimal(s) {
                    Ok(r) if !r.is_negative() => Ok(Decimal(r)),
                    _ => Err(E::custom(format!("expected a non-negative number, found \"{s}\""))),
                }
            }
            fn visit_i64<E: Error>(self, i: i64) -> Result<Decimal, E> {
                if i < 0 {
                    return Err(E::custom(format!("expected a non-negative number, found {i}")));
                }
                Ok(Decimal(Ratio::int(i128::from(i))))
            }
            fn visit_u64<E: Error>(self, i: u64) -> Result<Decimal, E> {
                Ok(Decimal(Ratio::int(i128::from(i))))
            }
            fn visit_f64<E: Error>(self, f: f64) -> Result<Decimal, E> {
                if !f.is_finite() || f < 0.0 {
                    return Err(E::custom(format!("expected a non-negative number, found {f}")));
                }
                self.visit_str(&format!("{f}"))
            }
        }
        d.deserialize_any(Exact)
    }
}

impl JsonSchema for Decimal {
    fn schema_name() -> Cow<'static, str> {
        "Decimal".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "An exact non-negative number: a decimal string (\"0.05\", preferred) or a TOML number.",
            "anyOf": [{ "type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?$" }, { "type": "number", "minimum": 0 }]
        })
    }
}

/// A string shown to people (an id, a reason, a source, a name): no control
/// character but tab and line feed, and no invisible format character,
/// since reasons and sources are shipped in `fits/vae.json` and shown by
/// `reserve`, `fit` and the reports.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Text(pub String);

impl Text {
    fn checked<E: Error>(s: String) -> Result<Text, E> {
        let bad = |c: char| (c.is_control() && c != '\t' && c != '\n') || crate::text::is_format_char(c);
        match s.chars().find(|c| bad(*c)) {
            Some(c) if crate::text::is_format_char(c) => Err(E::custom(format!(
                "an invisible format character ({}, e.g. a right-to-left override) in a string: not accepted",
                c.escape_unicode()
            ))),
            Some(c) => {
                Err(E::custom(format!("a control character ({}) in a string: not accepted", c.escape_unicode())))
            }
            None => Ok(Text(s)),
        }
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        Text::checked(String::deserialize(d)?)
    }
}

impl JsonSchema for Text {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Text".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string" })
    }
}

/// A [`Text`] that says something: a reason or a source may not be blank,
/// since every departure from the data says why and every figure where it
/// comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said(pub String);

impl<'de> Deserialize<'de> for Said {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Said, D::Error> {
        let Text(s) = Text::deserialize(d)?;
        if s.trim().is_empty() {
            return Err(D::Error::custom("empty: every departure from the data says why, every figure where from"));
        }
        Ok(Said(s))
    }
}

impl JsonSchema for Said {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Said".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "minLength": 1 })
    }
}

/// An integer from `MIN` to `MAX`, refused with both bounds named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int<const MIN: u64, const MAX: u64>(pub u64);

/// A positive count (`heads`, `spatial`, legacy `k`): 1 or more.
pub type Positive = Int<1, { u64::MAX }>;
/// A non-negative count with a sane ceiling (frames, MiB of an estimate).
pub type Count = Int<0, 1_000_000>;
/// A non-negative integer (`base_mib`, legacy extras).
pub type Whole = Int<0, { u64::MAX }>;
/// A tile edge in pixels (0: untiled).
pub type Edge = Int<0, { u32::MAX as u64 }>;

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Int<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Bounded<const MIN: u64, const MAX: u64>;
        impl<const MIN: u64, const MAX: u64> Visitor<'_> for Bounded<MIN, MAX> {
            type Value = Int<MIN, MAX>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match (MIN, MAX) {
                    (1, u64::MAX) => f.write_str("a positive integer"),
                    (0, u64::MAX) => f.write_str("a non-negative integer"),
                    _ => write!(f, "an integer from {MIN} to {MAX}"),
                }
            }
            fn visit_i64<E: Error>(self, i: i64) -> Result<Self::Value, E> {
                match u64::try_from(i) {
                    Ok(u) => self.visit_u64(u),
                    Err(_) => Err(E::invalid_value(serde::de::Unexpected::Signed(i), &self)),
                }
            }
            fn visit_u64<E: Error>(self, u: u64) -> Result<Self::Value, E> {
                if (MIN..=MAX).contains(&u) {
                    Ok(Int(u))
                } else {
                    Err(E::invalid_value(serde::de::Unexpected::Unsigned(u), &self))
                }
            }
        }
        d.deserialize_i64(Bounded::<MIN, MAX>)
    }
}

impl<const MIN: u64, const MAX: u64> JsonSchema for Int<MIN, MAX> {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        format!("Int{MIN}to{MAX}").into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        match MAX {
            u64::MAX => json_schema!({ "type": "integer", "minimum": MIN }),
            _ => json_schema!({ "type": "integer", "minimum": MIN, "maximum": MAX }),
        }
    }
}

/// A `"WxH"` size of the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64, pub u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Size, D::Error> {
        let s = String::deserialize(d)?;
        let (w, h) = crate::units::parse_size(&s).map_err(|_| {
            D::Error::custom(format!("expected \"WxH\" with positive integers, found \"{}\"", s.escape_debug()))
        })?;
        Ok(Size(w, h))
    }
}

impl JsonSchema for Size {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Size".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "pattern": "^[0-9]+x[0-9]+$" })
    }
}

/// A table entry with the byte range it was written at, so a check that
/// spans its fields (a duplicate, a cross-reference) can name its line.
/// Transparent to the schema.
#[derive(Debug, Clone)]
pub struct At<T> {
    pub span: Range<usize>,
    pub value: T,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for At<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<At<T>, D::Error> {
        let spanned = toml::Spanned::<T>::deserialize(d)?;
        Ok(At { span: spanned.span(), value: spanned.into_inner() })
    }
}

impl<T: JsonSchema> JsonSchema for At<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read<T: for<'de> Deserialize<'de>>(toml_value: &str) -> Result<T, String> {
        #[derive(Deserialize)]
        struct One<T> {
            v: T,
        }
        toml::from_str::<One<T>>(&format!("v = {toml_value}")).map(|o| o.v).map_err(|e| e.message().to_string())
    }

    #[test]
    fn numbers_are_read_as_written() {
        assert_eq!(read::<Decimal>("0.05").unwrap().0, Ratio::new(1, 20).unwrap());
        assert_eq!(read::<Decimal>("\"0.05\"").unwrap().0, Ratio::new(1, 20).unwrap());
        assert_eq!(read::<Decimal>("3").unwrap().0, Ratio::int(3));
        for bad in ["-1", "\"-0.5\"", "-0.5", "\"x\"", "nan", "inf"] {
            assert!(read::<Decimal>(bad).unwrap_err().contains("non-negative"), "{bad}");
        }
    }

    #[test]
    fn integers_name_their_bounds() {
        assert_eq!(read::<Positive>("7").unwrap().0, 7);
        assert!(read::<Positive>("0").unwrap_err().contains("a positive integer"));
        assert!(read::<Count>("1000001").unwrap_err().contains("from 0 to 1000000"));
        assert!(read::<Whole>("-3").unwrap_err().contains("non-negative"));
        assert!(read::<Edge>("4294967296").is_err());
        assert!(read::<Whole>("\"3\"").is_err());
    }

    #[test]
    fn strings_shown_to_people_are_checked() {
        assert!(read::<Text>("\"a\\u202Eb\"").unwrap_err().contains("invisible format character"));
        assert!(read::<Text>("\"a\\u0007b\"").unwrap_err().contains("control character"));
        assert_eq!(read::<Text>("\"tab\\there\"").unwrap().0, "tab\there");
        assert!(read::<Said>("\"  \"").unwrap_err().contains("empty"));
        assert_eq!(read::<Size>("\"512x768\"").unwrap(), Size(512, 768));
        assert!(read::<Size>("\"512\"").is_err());
    }
}
