//! Reading `fits/policy.toml`: serde reads the document into its types
//! (`document`), each value checking itself; a wrong value or a missing key
//! stops the read with its line and key path; every key no type names is
//! collected as a [`Problem`] with its line, so `verify` names all of them at
//! once and `fit`/`emit` refuse to run. Then the document becomes a
//! [`Policy`], checking what holds across fields.

use super::document::{keys_at, PolicyFile, Step};
use super::Problem;
use crate::places::InputError;
use std::collections::BTreeMap;
use std::ops::Range;

mod build;
mod hosts;
mod video;

/// Reads a policy. `file` names the file in messages.
pub fn parse(text: &str, file: &str) -> anyhow::Result<(super::Policy, Vec<super::Problem>)> {
    let mut unknown: Vec<Vec<Step>> = Vec::new();
    let document: PolicyFile = {
        let mut note = |path: serde_ignored::Path| unknown.push(steps_of_ignored(&path));
        let ignoring = serde_ignored::Deserializer::new(toml::Deserializer::new(text), &mut note);
        serde_path_to_error::deserialize(ignoring).map_err(|e| refused(text, file, &e))?
    };
    let place = Place { text, file };
    let problems = unknown.iter().map(|path| place.unknown_key(path)).collect();
    let policy = place.policy(document)?;
    Ok((policy, problems))
}

/// The text and name of the file being read: what turns a byte offset into
/// a line and a message into an [`InputError`].
#[derive(Clone, Copy)]
struct Place<'a> {
    text: &'a str,
    file: &'a str,
}

impl Place<'_> {
    fn line(&self, offset: usize) -> u64 {
        line_of(self.text, offset)
    }

    /// A refusal of the entry written at `span`, naming its field.
    fn err(&self, span: &Range<usize>, field: &str, what: impl std::fmt::Display) -> anyhow::Error {
        let line = self.line(span.start);
        anyhow::Error::new(InputError::at_line(self.file, line, format!("{field}: {what}")).field(field))
    }

    /// A refusal with no one entry to point at.
    fn err_file(&self, field: &str, what: impl std::fmt::Display) -> anyhow::Error {
        anyhow::Error::new(InputError::in_file(self.file, format!("{field}: {what}")).field(field))
    }

    /// A key no type of the document names: a problem with its line, the
    /// keys its table may hold, and the nearest of them when it looks like
    /// a misspelling.
    fn unknown_key(&self, path: &[Step]) -> Problem {
        let (table, key) = match path.split_last() {
            Some((Step::Key(k), table)) => (table, k.as_str()),
            _ => (path, ""),
        };
        let known = keys_at(table).unwrap_or_default();
        let line = key_line(self.text, path).map(|l| format!(":{l}")).unwrap_or_default();
        let within = if table.is_empty() { "the top level".to_string() } else { shown(table) };
        let guess = crate::registry::nearest_of(key, known.iter().map(String::as_str))
            .map(|k| format!(" (did you mean '{k}'?)"))
            .unwrap_or_default();
        Problem {
            code: crate::findings::Code::UnknownKey,
            ids: vec![],
            message: format!(
                "{}{line}: unknown key '{key}' in {within}{guess}; known: {}; a misspelt key would otherwise be \
                 ignored",
                self.file,
                known.join(", ")
            ),
        }
    }
}

/// The 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> u64 {
    let end = offset.min(text.len());
    text.as_bytes()[..end].iter().filter(|b| **b == b'\n').count() as u64 + 1
}

/// A path as people read it: table keys joined by dots, entries of an
/// array counted from 1 (`carry[2].slope` is the second `[[carry]]`).
fn shown(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{}]", i + 1)),
        }
    }
    out
}

/// The marker key of `toml::Spanned`'s inner value: not a key of the file.
fn is_private(key: &str) -> bool {
    key.starts_with("$__serde_spanned_private")
}

fn steps_of_ignored(path: &serde_ignored::Path) -> Vec<Step> {
    use serde_ignored::Path;
    let mut steps = match path {
        Path::Root => return Vec::new(),
        Path::Seq { parent, .. }
        | Path::Map { parent, .. }
        | Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => steps_of_ignored(parent),
    };
    match path {
        Path::Seq { index, .. } => steps.push(Step::Index(*index)),
        Path::Map { key, .. } if !is_private(key) => steps.push(Step::Key(key.clone())),
        _ => {}
    }
    steps
}

/// A value serde refused (or a syntax error): the line where it stopped, the
/// key path it was reading, and its words.
fn refused(text: &str, file: &str, e: &serde_path_to_error::Error<toml::de::Error>) -> anyhow::Error {
    use serde_path_to_error::Segment;
    let steps: Vec<Step> = e
        .path()
        .iter()
        .filter_map(|s| match s {
            Segment::Seq { index } => Some(Step::Index(*index)),
            Segment::Map { key } if !is_private(key) => Some(Step::Key(key.clone())),
            _ => None,
        })
        .collect();
    let line = e.inner().span().map(|s| line_of(text, s.start));
    let field = shown(&steps);
    let words = match plain_words(e.inner().message()) {
        // No key path: the text itself did not parse.
        w if field.is_empty() => format!("TOML syntax error: {w}"),
        w => w,
    };
    let said = match (&line, field.is_empty()) {
        (Some(l), true) => format!("{file}:{l}: {words}"),
        (Some(l), false) => format!("{file}:{l}: {field}: {words}"),
        (None, true) => format!("{file}: {words}"),
        (None, false) => format!("{file}: {field}: {words}"),
    };
    let error = InputError::new(file, line, said);
    anyhow::Error::new(if field.is_empty() { error } else { error.field(&field) })
}

/// serde's words, in the policy's own: "missing field `reason`" says which
/// key to add, and a missing reason or source why it is asked for.
fn plain_words(message: &str) -> String {
    let lines: Vec<&str> = message.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let message = &lines.join("; ");
    match message.strip_prefix("missing field `").and_then(|m| m.strip_suffix('`')) {
        Some("reason") => "missing reason: every departure from the data says why".to_string(),
        Some("source") => "missing source: say where the figure comes from".to_string(),
        Some(key) => format!("missing {key}"),
        None => message.replace('`', "'"),
    }
}

/// Where each key of the document was written: a tree of tables and arrays
/// with each key's byte range, read beside the typed document so an
/// unknown key (which the types do not keep) can be given its line.
enum Written {
    Table(BTreeMap<String, (Range<usize>, Written)>),
    Array(Vec<Written>),
    Value,
}

impl<'de> serde::Deserialize<'de> for Written {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Written, D::Error> {
        struct Walk;
        impl<'de> serde::de::Visitor<'de> for Walk {
            type Value = Written;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a TOML value")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut m: M) -> Result<Written, M::Error> {
                let mut keys = BTreeMap::new();
                while let Some(key) = m.next_key::<toml::Spanned<String>>()? {
                    let span = key.span();
                    keys.insert(key.into_inner(), (span, m.next_value::<Written>()?));
                }
                Ok(Written::Table(keys))
            }
            fn visit_seq<S: serde::de::SeqAccess<'de>>(self, mut s: S) -> Result<Written, S::Error> {
                let mut items = Vec::new();
                while let Some(item) = s.next_element::<Written>()? {
                    items.push(item);
                }
                Ok(Written::Array(items))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Written, E> {
                Ok(Written::Value)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Written, E> {
                Ok(Written::Value)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Written, E> {
                Ok(Written::Value)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Written, E> {
                Ok(Written::Value)
            }
            fn visit_str<E>(self, _: &str) -> Result<Written, E> {
                Ok(Written::Value)
            }
        }
        d.deserialize_any(Walk)
    }
}

/// The line of the key at `path`, if the text says.
fn key_line(text: &str, path: &[Step]) -> Option<u64> {
    let mut at = toml::from_str::<Written>(text).ok()?;
    let mut span = None;
    for step in path {
        at = match (step, at) {
            (Step::Key(k), Written::Table(mut keys)) => {
                let (s, inner) = keys.remove(k)?;
                span = Some(s);
                inner
            }
            (Step::Index(i), Written::Array(mut items)) if *i < items.len() => items.swap_remove(*i),
            _ => return None,
        };
    }
    span.map(|s| line_of(text, s.start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_on_their_lines() {
        let text =
            "margin = \"0.05\"\n\n[[carry]]\nvae = \"sd\"\n\n[[carry]]\nvae = \"x\"\nslop = 1\n[vae.sd]\nmodls = []\n";
        let key = |k: &str| Step::Key(k.into());
        assert_eq!(key_line(text, &[key("margin")]), Some(1));
        assert_eq!(key_line(text, &[key("carry"), Step::Index(1), key("slop")]), Some(8));
        assert_eq!(key_line(text, &[key("vae"), key("sd"), key("modls")]), Some(10));
        assert_eq!(key_line(text, &[key("nothing")]), None);
        assert_eq!(shown(&[key("carry"), Step::Index(1), key("slop")]), "carry[2].slop");
    }

    #[test]
    fn every_unknown_key_is_a_problem_on_its_line() {
        let text = "margn = 1\n[[exclude]]\nid = \"a\"\nreason = \"r\"\nreasn = \"x\"\n[vae.sd]\nmodels = []\nnote = \"n\"\nmodls = []\n";
        let (_, problems) = parse(text, "p.toml").unwrap();
        let said: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(problems.len(), 3, "{said:?}");
        assert!(said[0].starts_with("p.toml:1: unknown key 'margn' in the top level (did you mean 'margin'?)"));
        assert!(said[1].starts_with("p.toml:5: unknown key 'reasn' in exclude[1] (did you mean 'reason'?)"));
        assert!(said[1].contains("known: id, reason;"), "{}", said[1]);
        assert!(said[2].starts_with("p.toml:9: unknown key 'modls' in vae.sd (did you mean 'models'?)"));
    }

    #[test]
    fn a_refused_value_names_its_line_and_path() {
        let text = "margin = \"0.05\"\n[[carry]]\nvae = \"sd\"\nop = \"decode\"\nconv_backend = \"cudnn\"\n\
                    allocator = \"native\"\nos = \"linux\"\ndtype = \"fp17\"\n";
        let e = parse(text, "p.toml").unwrap_err();
        let placed = crate::places::input_of(&e).unwrap();
        assert_eq!(placed.line, Some(8), "{e}");
        assert_eq!(placed.field.as_deref(), Some("carry[1].dtype"));
        assert!(e.to_string().starts_with("p.toml:8: carry[1].dtype: unknown dtype 'fp17'"), "{e}");
        let e = parse("[[exclude]]\nid = \"a\"\n", "p.toml").unwrap_err();
        assert!(e.to_string().contains("p.toml:1: exclude[1]: missing reason: every departure"), "{e}");
    }

    #[test]
    fn classes_and_the_traced_margin_are_read_and_checked() {
        let text = "[vae.sd]\nclass = \"kl-2d\"\n[vae.wan21]\nclass = \"causal-3d\"\n[vae.x]\n\
                    [traced]\nmargin = \"0.25\"\nreason = \"figures\"\n";
        let (policy, problems) = parse(text, "p.toml").unwrap();
        assert!(problems.is_empty());
        use crate::policy::document::ArchClass;
        assert_eq!(policy.class_of("sd"), Some(ArchClass::Kl2d));
        assert_eq!(policy.class_of("wan21"), Some(ArchClass::Causal3d));
        assert_eq!(policy.class_of("x"), None);
        assert_eq!(policy.traced.unwrap().margin, crate::exact::Ratio::new(1, 4).unwrap());
        let e = parse("[vae.sd]\nclass = \"3d\"\n", "p.toml").unwrap_err().to_string();
        assert!(e.starts_with("p.toml:2: vae.sd.class: unknown variant '3d'"), "{e}");
        let e = parse("[traced]\nmargin = \"11\"\nreason = \"r\"\n", "p.toml").unwrap_err().to_string();
        assert!(e.contains("traced: margin: at most 6 decimal places and at most 10"), "{e}");
        let e = parse("[traced]\nmargin = \"0.2\"\n", "p.toml").unwrap_err().to_string();
        assert!(e.contains("traced: missing reason"), "{e}");
    }
}
