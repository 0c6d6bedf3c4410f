//! Loading a shipped file strictly: what `reserve`, `plan`, `verify` and a
//! runtime's loader agree a valid `fits/vae.json` is. It belongs to the
//! contract because a file one side refuses must not price on the other.

use super::fields;
use super::file::{CoefficientsFile, LineKind, FORMAT, VERSION};
use crate::error::{Code, Error, Result};
use crate::exact::{Ratio, MIB};
use crate::io::InputError;
use std::path::Path;

/// `Some(message)` when a file is valid JSON of another format or version.
pub fn version_mismatch(raw: &serde_json::Value, file: &str) -> Option<String> {
    let format = raw.get("format").and_then(|v| v.as_str()).unwrap_or("");
    let version = raw.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
    (format != FORMAT || version != u64::from(VERSION))
        .then(|| format!("{file}: format '{format}' version {version}; this vramfit reads {FORMAT} version {VERSION}"))
}

/// The file's text as JSON, read once; an error names the line.
pub fn read_json(text: &str, file: &str) -> Result<serde_json::Value> {
    serde_json::from_str(text)
        .map_err(|e| Error::from(InputError::at_line(file, e.line(), format!("not valid JSON: {e}"))))
}

/// Parses a shipped file strictly: the right format and version, every
/// field present with its canonical spelling and no unknown field at any
/// level (the file must be exactly what `emit` writes for its values), and
/// values a pricer can use. `reserve`, `plan` and `verify` all load through
/// here, so no command prices from a file another one would refuse.
pub fn parse(text: &str, file: &str) -> Result<CoefficientsFile> {
    // A file exactly as `emit` writes it (every shipped and embedded file)
    // is canonical by construction: one typed read and a byte comparison,
    // made as the bytes are serialised, prove it. Any other file takes the
    // field-by-field walk, which names what differs.
    if let Ok(typed) = serde_json::from_str::<CoefficientsFile>(text) {
        let this_version = typed.format == FORMAT && typed.version == VERSION;
        if this_version && crate::io::writes_exactly(&typed, text.as_bytes()).unwrap_or(false) {
            validate(&typed, file)?;
            return Ok(typed);
        }
    }
    parse_read(text, &read_json(text, file)?, file)
}

/// [`parse`] for a caller that has already read the text as JSON (`raw`).
pub fn parse_read(text: &str, raw: &serde_json::Value, file: &str) -> Result<CoefficientsFile> {
    // `raw` kept the last of a key given twice; the text says it was twice.
    crate::io::refuse_duplicate_keys(text, file)?;
    if let Some(m) = version_mismatch(raw, file) {
        crate::error::refuse!("{m} (re-run `vramfit emit` with this version)");
    }
    // From the text, not from `raw`, so a type error names its line.
    let typed: CoefficientsFile =
        serde_json::from_str(text).map_err(|e| Error::from(InputError::at_line(file, e.line(), format!("{e}"))))?;
    let canonical = serde_json::to_value(&typed).map_err(|e| Error::new(Code::File, format!("{file}: {e}")))?;
    if let Some(d) = fields::first_difference(&canonical, raw) {
        let what = match (&d.expected, &d.found) {
            _ if d.path.ends_with(']') => "a line key not in canonical form (the seven key fields as `emit` \
                                           writes them, each line once)"
                .to_string(),
            (Some(serde_json::Value::Array(_)), Some(serde_json::Value::Array(_)))
                if d.path.ends_with("lines") || d.path == "insufficient" =>
            {
                "a line appears twice, or the lines are not in key order".to_string()
            }
            (None, _) => "unknown field".to_string(),
            (_, None) => "missing field".to_string(),
            (e, f) => format!("{} is not in canonical form (expected {})", fields::show(f), fields::show(e)),
        };
        crate::error::refuse!(InputError::in_file(file, format!("{}: {what}", d.path)));
    }
    validate(&typed, file)?;
    Ok(typed)
}

/// The checks a pricer relies on beyond the schema.
fn validate(f: &CoefficientsFile, file: &str) -> Result<()> {
    let mut keys = std::collections::BTreeSet::new();
    for l in &f.lines {
        let at = LinePlace { file, line: format!("lines[{}]", l.key) };
        if !keys.insert(l.key.clone()) {
            crate::error::refuse!(at.error("the line appears twice"));
        }
        if l.kind == LineKind::Insufficient {
            crate::error::refuse!(
                at.error("kind: a shipped line is fitted or carried (too-thin keys belong in `insufficient`)")
            );
        }
        l.slope_centi().map_err(|e| crate::error::refused!(at.error(format!("slope: {e}"))))?;
        if l.base_mib.checked_mul(MIB).is_none_or(|b| b > crate::exact::MAX_BYTES) {
            crate::error::refuse!(at.error(format!("base_mib: {} is too large", l.base_mib)));
        }
        if let Some([lo, hi]) = l.size_range {
            if lo == 0 || lo > hi {
                crate::error::refuse!(at.error(format!("size_range: [{lo}, {hi}] is not a range of positive sizes")));
            }
        }
        if l.points != l.point_ids.len() {
            crate::error::refuse!(at.error(format!("points: {} but point_ids lists {}", l.points, l.point_ids.len())));
        }
        if l.kind == LineKind::Fitted && (l.envelope_values().is_none() || l.size_range.is_none()) {
            crate::error::refuse!(
                at.error("envelope: a fitted line carries its exact envelope and measured size range")
            );
        }
    }
    for l in &f.insufficient {
        if !keys.insert(l.key.clone()) {
            crate::error::refuse!(InputError::in_file(file, format!("insufficient[{}]: the key appears twice", l.key)));
        }
    }
    if f.unmeasured.rule != super::rules::UNMEASURED_RULE {
        crate::error::refuse!(InputError::in_file(
            file,
            format!(
                "unmeasured.rule: '{}' is not a rule this vramfit implements ({})",
                f.unmeasured.rule,
                super::rules::UNMEASURED_RULE
            )
        ));
    }
    if f.ratio_bound.cmp_exact(&Ratio::int(1))? == std::cmp::Ordering::Less || f.margin.is_negative() {
        crate::error::refuse!(InputError::in_file(
            file,
            "margin / ratio_bound: the margin is at least 0 and the ratio bound at least 1"
        ));
    }
    let mut tiles = std::collections::BTreeSet::new();
    if let Some(t) = f.tiles.iter().find(|t| **t == 0 || !tiles.insert(**t)) {
        crate::error::refuse!(InputError::in_file(file, format!("tiles: {t} is zero or listed twice")));
    }
    if let Some(t) = &f.tiling {
        if !t.hosts.contains_key(&t.default_host) {
            crate::error::refuse!(InputError::in_file(
                file,
                format!("tiling.default_host: '{}' is not one of tiling.hosts", t.default_host)
            ));
        }
        if let Some((name, _)) = t.hosts.iter().find(|(_, h)| h.copies.is_negative()) {
            crate::error::refuse!(InputError::in_file(
                file,
                format!("tiling.hosts.{name}.copies: a count of copies is at least 0")
            ));
        }
    }
    if let Some(p) = f.attention.iter().flat_map(|a| &a.platforms).find(|p| !p.bytes_per_score.is_positive()) {
        crate::error::refuse!(InputError::in_file(
            file,
            format!(
                "attention.platforms[{}].bytes_per_score: more than 0 (0 would silently remove the phase)",
                p.conv_backend
            )
        ));
    }
    let mut names = std::collections::BTreeMap::new();
    for (family, entry) in &f.registry {
        if let Some((field, value, what)) = entry.problem() {
            crate::error::refuse!(InputError::in_file(
                file,
                format!("registry.{family}.{field}: {value} is not {what}")
            ));
        }
        for name in std::iter::once(family).chain(&entry.models) {
            if name.len() > crate::registry::MAX_NAME_BYTES {
                crate::error::refuse!(InputError::in_file(
                    file,
                    format!(
                        "registry: '{}' is longer than a name may be ({} bytes)",
                        crate::text::quoted(name),
                        crate::registry::MAX_NAME_BYTES
                    )
                ));
            }
            if let Some(other) = names.insert(name.to_ascii_lowercase(), family) {
                crate::error::refuse!(InputError::in_file(
                    file,
                    format!("registry: '{name}' names both '{other}' and '{family}'")
                ));
            }
        }
    }
    Ok(())
}

/// Reads a shipped file.
pub fn load(file: &Path) -> Result<CoefficientsFile> {
    parse(&crate::io::read_text(file)?, &crate::io::shown(file))
}

/// The draft 2020-12 JSON Schema of a type, as it is written (`written`)
/// or as it is read: the one setting every schema vramfit prints uses.
pub fn schema_of<T: schemars::JsonSchema>(written: bool) -> serde_json::Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12();
    let settings = if written { settings.for_serialize() } else { settings.for_deserialize() };
    settings.into_generator().into_root_schema_for::<T>().to_value()
}

/// The JSON Schema of the file, as `emit` writes it: what `vramfit schema
/// coefficients` prints and what the Python package checks a file against
/// before it reads it.
pub fn schema() -> serde_json::Value {
    let mut s = schema_of::<CoefficientsFile>(true);
    s["title"] = serde_json::json!("vramfit coefficients (fits/vae.json)");
    s["properties"]["format"]["const"] = serde_json::json!(FORMAT);
    s["properties"]["version"]["const"] = serde_json::json!(VERSION);
    s
}

/// A shipped line as an error names it: `FILE: lines[KEY]`; its errors
/// carry the file and the field's JSON path.
struct LinePlace<'a> {
    file: &'a str,
    line: String,
}

impl LinePlace<'_> {
    fn error(&self, what: impl std::fmt::Display) -> InputError {
        InputError::in_file(self.file, format!("{}: {what}", self.line)).field(&self.line)
    }
}
