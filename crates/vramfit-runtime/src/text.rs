//! Shared immutable strings for the values a million points repeat.
//!
//! A store of 10^6 points names a handful of sources, devices, torch
//! versions and families; as owned `String`s they were one heap block per
//! field per point, a third of the memory of loading the store. A [`Text`]
//! is a reference-counted `str` behind one thin pointer (the length sits
//! beside the count, in the same allocation as the bytes): cloning it
//! copies a pointer, and an [`Interner`] hands out one shared copy per
//! distinct value.

use arcstr::ArcStr;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Borrow;
use std::collections::HashSet;
use std::fmt;
use std::ops::Deref;

/// An immutable, cheaply cloned string. It compares, orders, hashes,
/// prints and serialises exactly as the `str` it holds.
#[derive(Clone, Default)]
pub struct Text(ArcStr);

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.hash(h);
    }
}

// Two copies handed out by one interner share their allocation: equal
// without reading a byte (line keys are compared millions of times).
impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        ArcStr::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Eq for Text {}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Text) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Text) -> std::cmp::Ordering {
        if ArcStr::ptr_eq(&self.0, &other.0) {
            return std::cmp::Ordering::Equal;
        }
        self.0.cmp(&other.0)
    }
}

impl Text {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text(ArcStr::from(s))
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text(ArcStr::from(s))
    }
}

impl From<&String> for Text {
    fn from(s: &String) -> Text {
        Text(ArcStr::from(s.as_str()))
    }
}

impl From<Text> for String {
    fn from(t: Text) -> String {
        t.0.to_string()
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<Text> for String {
    fn eq(&self, other: &Text) -> bool {
        **self == *other.0
    }
}

impl PartialEq<Text> for str {
    fn eq(&self, other: &Text) -> bool {
        self == &*other.0
    }
}

impl PartialEq<Text> for &str {
    fn eq(&self, other: &Text) -> bool {
        *self == &*other.0
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        String::deserialize(d).map(Text::from)
    }
}

/// Hands out one shared [`Text`] per distinct value. The previous value is
/// checked first: sorted points repeat it far more often than not.
#[derive(Default)]
pub struct Interner {
    seen: HashSet<Text>,
    last: Option<Text>,
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> Text {
        if let Some(t) = self.last.as_ref().filter(|t| t.as_str() == s) {
            return t.clone();
        }
        let t = match self.seen.get(s) {
            Some(t) => t.clone(),
            None => {
                let t = Text::from(s);
                self.seen.insert(t.clone());
                t
            }
        };
        self.last = Some(t.clone());
        t
    }
}

/// In a schema a `Text` is the string it holds.
impl schemars::JsonSchema for Text {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Text".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }
}

/// The most characters of a value a refusal quotes (a name, a spelling):
/// a value longer than any the vocabularies hold is shown by its start and
/// its length, never whole.
pub const QUOTED: usize = 64;

/// A value as a refusal quotes it: [`escaped`] to [`QUOTED`] characters.
pub fn quoted(value: &str) -> String {
    escaped(value, QUOTED)
}

/// A value a user supplied, as it may be shown: control characters escaped
/// (`\u{1b}`), cut to `max` characters with the count of the rest.
pub fn escaped(value: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in value.chars().enumerate() {
        if i == max {
            out.push_str(&format!("… ({} characters)", value.chars().count()));
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `c` is an invisible format character (Unicode category Cf:
/// bidirectional overrides, isolates and marks, zero-width characters, the
/// byte order mark, tags): text that reads one way and is another, so no
/// value a user writes may hold one, like a control character.
pub fn is_format_char(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{0600}'..='\u{0605}'
            | '\u{061C}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{0890}'..='\u{0891}'
            | '\u{08E2}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0001}'
            | '\u{E0020}'..='\u{E007F}'
    )
}

/// Whether a cell's text begins as a spreadsheet formula does: `=`, `+`,
/// `-`, `@`, a tab or a carriage return (OWASP's list for CSV injection).
pub fn starts_like_formula(s: &str) -> bool {
    s.starts_with(['=', '+', '-', '@', '\t', '\r'])
}

/// Free text as vramfit writes it into a CSV or a Markdown cell: text that
/// [`starts_like_formula`] gets a leading apostrophe, so a spreadsheet
/// shows it as text instead of running it; anything else unchanged.
pub fn formula_safe(s: &str) -> std::borrow::Cow<'_, str> {
    if starts_like_formula(s) {
        format!("'{s}").into()
    } else {
        s.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interned_values_share_one_allocation_and_compare_as_str() {
        let mut i = Interner::default();
        let a = i.intern("rtx 4090");
        let _ = i.intern("other");
        let b = i.intern("rtx 4090");
        assert!(ArcStr::ptr_eq(&a.0, &b.0));
        assert_eq!(a, "rtx 4090");
        let (a2, b2) = (Text::from("a"), Text::from("b"));
        assert!(a2 < b2);
        assert_eq!(serde_json::to_string(&a).unwrap(), "\"rtx 4090\"");
        assert_eq!(format!("{a:?}"), "\"rtx 4090\"");
    }

    #[test]
    fn a_text_is_one_pointer_and_an_absent_one_costs_nothing_more() {
        // A point holds seven of them: each word saved is 7 MB at 10^6 points.
        assert_eq!(std::mem::size_of::<Text>(), std::mem::size_of::<usize>());
        assert_eq!(std::mem::size_of::<Option<Text>>(), std::mem::size_of::<usize>());
    }
}
