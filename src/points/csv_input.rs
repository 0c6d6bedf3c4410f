//! The measurement CSV, and the one row → point conversion that
//! every importer shares (so an imported record and a CSV row of the same
//! figures become the same point).

use super::{LineKey, Point, AGGREGATES, CONTEXTS};
use crate::exact::{mib_decimal_to_bytes, DecimalError, MAX_BYTES, MAX_PIXELS};
use crate::registry::Registry;
use crate::vocab::{Dtype, Os};
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::str::FromStr;

/// Where a row came from, for messages and for the ingest summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowOrigin {
    pub file: String,
    pub line: u64,
}

impl std::fmt::Display for RowOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A validated point and the row it came from.
#[derive(Debug, Clone)]
pub struct ParsedRow {
    pub point: Point,
    pub origin: RowOrigin,
}

/// Columns that must be present in the header (values may be empty where
/// docs/DESIGN.md, "The measurement CSV" gives a default).
pub const REQUIRED_COLUMNS: &[&str] =
    &["source", "conv_backend", "allocator", "os", "op", "tile", "run_dtype", "width", "height", "batch"];

/// The demand columns; at least one must be present and filled per row.
pub const DEMAND_COLUMNS: &[&str] =
    &["reserved_mib", "allocated_mib", "driver_mib", "reserved_bytes", "allocated_bytes", "driver_bytes"];

const KNOWN_COLUMNS: &[&str] = &[
    "id",
    "source",
    "device",
    "torch",
    "conv_backend",
    "allocator",
    "os",
    "vae",
    "model",
    "op",
    "tile",
    "loaded_dtype",
    "run_dtype",
    "width",
    "height",
    "batch",
    "run",
    "runs",
    "aggregate",
    "context",
    "reserved_mib",
    "allocated_mib",
    "driver_mib",
    "reserved_bytes",
    "allocated_bytes",
    "driver_bytes",
    "note",
];

/// Reads one measurement CSV. A UTF-8 BOM and CRLF (or CR-only) line ends
/// are accepted; an empty file (no header) is an error, a header-only file
/// has no rows. Every message counts physical lines of the file, blank ones
/// included, so `file:N` is the line an editor shows as N.
pub fn parse_csv(bytes: &[u8], file: &str, registry: &Registry) -> Result<Vec<ParsedRow>> {
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if body.iter().all(|b| b.is_ascii_whitespace()) {
        bail!("{file}:1: empty file: expected a header row naming the columns");
    }
    let mut lines = physical_lines(body).filter(|(_, l)| !l.iter().all(|b| b.is_ascii_whitespace()));
    let Some((header_line, header_bytes)) = lines.next() else { unreachable!("a non-blank file has a line") };
    let headers: Vec<String> = split_fields(line_text(header_bytes, file, header_line)?, file, header_line, None)?
        .into_iter()
        .map(|s| s.trim().to_string())
        .collect();
    check_header(&headers, file, header_line)?;
    let index = headers.iter().enumerate().map(|(i, h)| (h.clone(), i)).collect();
    let header = Header { names: headers, index };
    let mut rows = Vec::new();
    for (line, raw) in lines {
        let values = split_fields(line_text(raw, file, line)?, file, line, Some(&header.names))?;
        if values.len() != header.names.len() {
            bail!("{file}:{line}: row has {} fields, the header has {}", values.len(), header.names.len());
        }
        let origin = RowOrigin { file: file.to_string(), line };
        let point = row_to_point(&CsvRow { header: &header, values }, &origin, registry)?;
        rows.push(ParsedRow { point, origin });
    }
    Ok(rows)
}

/// The file's physical lines with their 1-based numbers; `\r\n`, `\n` and a
/// lone `\r` each end a line.
fn physical_lines(bytes: &[u8]) -> impl Iterator<Item = (u64, &[u8])> {
    let mut rest = bytes;
    let mut number = 0u64;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        number += 1;
        let end = rest.iter().position(|b| *b == b'\n' || *b == b'\r').unwrap_or(rest.len());
        let line = &rest[..end];
        let skip = match (rest.get(end), rest.get(end + 1)) {
            (Some(b'\r'), Some(b'\n')) => 2,
            (Some(_), _) => 1,
            (None, _) => 0,
        };
        rest = &rest[end + skip..];
        Some((number, line))
    })
}

fn line_text<'a>(bytes: &'a [u8], file: &str, line: u64) -> Result<&'a str> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| anyhow::anyhow!("{file}:{line}: not valid UTF-8 (byte {} of the line)", e.valid_up_to() + 1))?;
    if let Some(at) = text.find('\u{FEFF}') {
        let what = if line == 1 && at == 0 { "a second byte-order mark" } else { "a byte-order mark (U+FEFF)" };
        bail!("{file}:{line}: {what} inside the data: save the file as UTF-8 with at most one BOM at its start");
    }
    Ok(text)
}

/// Splits one physical line into fields. A field that starts with `"` is
/// quoted (`""` inside is one quote) and must close on the same line: a
/// field that spans lines is refused rather than silently swallowing the
/// rows after it. A quote inside an unquoted field is kept as text.
fn split_fields<'a>(
    text: &'a str,
    file: &str,
    line: u64,
    headers: Option<&[String]>,
) -> Result<Vec<std::borrow::Cow<'a, str>>> {
    use std::borrow::Cow;
    let column = |i: usize| match headers.and_then(|h| h.get(i)) {
        Some(name) => format!("{name}: "),
        None => format!("column {}: ", i + 1),
    };
    let bytes = text.as_bytes();
    let mut fields: Vec<Cow<'a, str>> = Vec::with_capacity(headers.map_or(8, <[String]>::len));
    let mut at = 0;
    loop {
        let mut start = at;
        while bytes.get(start).is_some_and(|b| *b == b' ' || *b == b'\t') {
            start += 1;
        }
        if bytes.get(start) == Some(&b'"') {
            // A quoted field: up to the quote not followed by another.
            let mut i = start + 1;
            let mut doubled = false;
            loop {
                match bytes.get(i) {
                    None => bail!(
                        "{file}:{line}: {}a quoted field opens here and does not close on this line \
                         (close the quote; a field cannot span lines)",
                        column(fields.len())
                    ),
                    Some(b'"') if bytes.get(i + 1) == Some(&b'"') => {
                        doubled = true;
                        i += 2;
                    }
                    Some(b'"') => break,
                    Some(_) => i += 1,
                }
            }
            let inner = &text[start + 1..i];
            fields.push(if doubled { Cow::Owned(inner.replace("\"\"", "\"")) } else { Cow::Borrowed(inner) });
            let mut j = i + 1;
            while bytes.get(j).is_some_and(|b| *b == b' ' || *b == b'\t') {
                j += 1;
            }
            match bytes.get(j) {
                None => return Ok(fields),
                Some(b',') => at = j + 1,
                Some(_) => bail!(
                    "{file}:{line}: {}text after the closing quote of a quoted field (quote the whole field)",
                    column(fields.len() - 1)
                ),
            }
        } else {
            let end = bytes[at..].iter().position(|b| *b == b',').map_or(bytes.len(), |p| at + p);
            fields.push(Cow::Borrowed(&text[at..end]));
            if end == bytes.len() {
                return Ok(fields);
            }
            at = end + 1;
        }
    }
}

fn check_header(headers: &[String], file: &str, line: u64) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for h in headers {
        if h.is_empty() {
            bail!("{file}:{line}: the header has an empty column name");
        }
        if !seen.insert(h.as_str()) {
            bail!("{file}:{line}: {h}: column named twice in the header");
        }
    }
    for required in REQUIRED_COLUMNS {
        if !seen.contains(required) {
            bail!("{file}:{line}: {required}: missing required column (required: {})", REQUIRED_COLUMNS.join(", "));
        }
    }
    if !seen.contains("vae") && !seen.contains("model") {
        bail!("{file}:{line}: vae: missing column: give `vae` (a family) or `model` (a registered model name)");
    }
    if !DEMAND_COLUMNS.iter().any(|c| seen.contains(c)) {
        bail!("{file}:{line}: reserved_mib: missing demand column: give at least one of {}", DEMAND_COLUMNS.join(", "));
    }
    Ok(())
}

/// A row's fields by column name (what an importer builds).
pub type Fields = BTreeMap<String, String>;

/// What `row_to_point` reads a row through: a value by column name, and the
/// columns vramfit does not know (kept as metadata).
pub trait Row {
    /// The raw value of a column, when the row has it.
    fn field(&self, column: &str) -> Option<&str>;
    /// Every `(column, value)` pair, in column order.
    fn pairs(&self) -> Vec<(&str, &str)>;
}

impl Row for Fields {
    fn field(&self, column: &str) -> Option<&str> {
        self.get(column).map(String::as_str)
    }

    fn pairs(&self) -> Vec<(&str, &str)> {
        self.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }
}

/// The header of a CSV, with the position of each column, built once.
struct Header {
    names: Vec<String>,
    index: std::collections::HashMap<String, usize>,
}

/// One CSV row: its values, borrowed from the line where no quote needed
/// undoing, looked up through the header.
struct CsvRow<'a> {
    header: &'a Header,
    values: Vec<std::borrow::Cow<'a, str>>,
}

impl Row for CsvRow<'_> {
    fn field(&self, column: &str) -> Option<&str> {
        self.header.index.get(column).and_then(|i| self.values.get(*i)).map(|v| v.as_ref())
    }

    fn pairs(&self) -> Vec<(&str, &str)> {
        self.header.names.iter().map(String::as_str).zip(self.values.iter().map(|v| v.as_ref())).collect()
    }
}

/// Converts one row into a validated point. Every error names the row and column.
pub fn row_to_point(f: &impl Row, at: &RowOrigin, registry: &Registry) -> Result<Point> {
    let get = |c: &str| f.field(c).map(|s| s.trim()).filter(|s| !s.is_empty());
    let fail = |col: &str, what: String| -> anyhow::Error { anyhow::anyhow!("{at}: {col}: {what}") };
    let vocab = |col: &str| -> Result<&str> { get(col).ok_or_else(|| fail(col, "missing value".into())) };
    fn parse_vocab<T: FromStr>(v: &str, col: &str, at: &RowOrigin) -> Result<T>
    where
        T::Err: std::fmt::Display,
    {
        v.parse::<T>().map_err(|e| anyhow::anyhow!("{at}: {col}: {e}"))
    }
    let positive = |col: &str, default: Option<u64>| -> Result<u64> {
        match get(col) {
            None => default.ok_or_else(|| fail(col, "missing value (a positive integer)".into())),
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(fail(col, format!("'{v}' is not a positive integer"))),
            },
        }
    };

    let source = get("source").ok_or_else(|| fail("source", "missing value: every point names its source".into()))?;
    let conv_backend = parse_vocab(vocab("conv_backend")?, "conv_backend", at)?;
    let allocator = parse_vocab(vocab("allocator")?, "allocator", at)?;
    let os = match get("os") {
        None => Os::Any,
        Some(v) => parse_vocab(v, "os", at)?,
    };
    let vae = resolve_family(get("vae"), get("model"), at, registry)?;
    let op = parse_vocab(vocab("op")?, "op", at)?;
    let tile = match get("tile") {
        None => 0,
        Some(v) => v.parse::<u32>().map_err(|_| fail("tile", format!("'{v}' is not a non-negative integer")))?,
    };
    let dtype: Dtype = parse_vocab(vocab("run_dtype")?, "run_dtype", at)?;
    let loaded_dtype = get("loaded_dtype").map(|v| parse_vocab::<Dtype>(v, "loaded_dtype", at)).transpose()?;
    let width = positive("width", None)?;
    let height = positive("height", None)?;
    let batch = positive("batch", Some(1))?;
    let pixels = crate::exact::pixels(width, height, batch)
        .ok_or_else(|| fail("width", format!("width × height × batch exceeds {MAX_PIXELS} pixels")))?;

    let mut deltas = [None, None, None];
    for (i, name) in ["reserved", "allocated", "driver"].iter().enumerate() {
        let mib_col = format!("{name}_mib");
        let bytes_col = format!("{name}_bytes");
        deltas[i] = match (get(&mib_col), get(&bytes_col)) {
            (Some(_), Some(_)) => {
                return Err(fail(&bytes_col, format!("both {mib_col} and {bytes_col} are filled; give one")))
            }
            (Some(v), None) => Some(mib_decimal_to_bytes(v).map_err(|e| demand_error(&mib_col, v, e, at))?),
            (None, Some(v)) => Some(parse_bytes_field(v).map_err(|e| demand_error(&bytes_col, v, e, at))?),
            (None, None) => None,
        };
    }
    let demand = deltas.iter().flatten().copied().max().ok_or_else(|| {
        fail("reserved_mib", format!("no demand: fill at least one of {}", DEMAND_COLUMNS.join(", ")))
    })?;
    if demand == 0 {
        return Err(fail("reserved_mib", "every measured delta is zero: a zero demand cannot be priced".into()));
    }
    if demand > MAX_BYTES {
        return Err(fail("reserved_mib", format!("demand above {MAX_BYTES} bytes")));
    }

    let small = |col: &str| -> Result<Option<u32>> {
        get(col)
            .map(|v| match v.parse::<u32>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(fail(col, format!("'{v}' is not a positive integer"))),
            })
            .transpose()
    };
    let one_of = |col: &str, accepted: &[&str]| -> Result<Option<String>> {
        get(col)
            .map(|v| {
                let l = v.to_ascii_lowercase();
                if accepted.contains(&l.as_str()) {
                    Ok(l)
                } else {
                    Err(fail(col, format!("unknown {col} '{v}' (accepted: {})", accepted.join(", "))))
                }
            })
            .transpose()
    };
    let metadata = f
        .pairs()
        .into_iter()
        .filter(|(k, v)| !KNOWN_COLUMNS.contains(k) && !v.trim().is_empty())
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect();

    let mut point = Point {
        id: String::new(),
        key: LineKey { vae, op, tile, conv_backend, allocator, os, dtype },
        model: get("model").map(str::to_string),
        loaded_dtype,
        width,
        height,
        batch,
        pixels,
        demand_bytes: demand,
        reserved_bytes: deltas[0],
        allocated_bytes: deltas[1],
        driver_bytes: deltas[2],
        source: source.to_string(),
        device: get("device").map(str::to_string),
        torch: get("torch").map(str::to_string),
        run: small("run")?,
        runs: small("runs")?,
        aggregate: one_of("aggregate", AGGREGATES)?,
        context: one_of("context", CONTEXTS)?,
        note: get("note").map(str::to_string),
        metadata,
    };
    point.id = match get("id") {
        Some(id) => id.to_string(),
        None => derived_id(&point),
    };
    Ok(point)
}

fn demand_error(col: &str, v: &str, e: DecimalError, at: &RowOrigin) -> anyhow::Error {
    anyhow::anyhow!("{at}: {col}: '{v}': {e}")
}

fn parse_bytes_field(v: &str) -> Result<u64, DecimalError> {
    if v.starts_with('-') && v[1..].chars().all(|c| c.is_ascii_digit()) && v.len() > 1 {
        return if v[1..].chars().all(|c| c == '0') { Ok(0) } else { Err(DecimalError::Negative) };
    }
    let t = v.strip_prefix('+').unwrap_or(v);
    if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit()) {
        return Err(DecimalError::NotANumber);
    }
    t.parse::<u64>().map_err(|_| DecimalError::TooLarge)
}

fn resolve_family(vae: Option<&str>, model: Option<&str>, at: &RowOrigin, registry: &Registry) -> Result<String> {
    let unknown = |col: &str, v: &str| {
        anyhow::anyhow!(
            "{at}: {col}: unknown {col} '{v}' (registered: {}; add it under [vae] in fits/policy.toml)",
            registry.describe()
        )
    };
    let from_vae = vae.map(|v| registry.resolve(v).map(str::to_string).ok_or_else(|| unknown("vae", v))).transpose()?;
    let from_model = model.and_then(|m| registry.resolve(m).map(str::to_string));
    match (from_vae, from_model) {
        (Some(v), Some(m)) if v != m => {
            bail!("{at}: model: model '{}' belongs to family '{m}', but vae says '{v}'", model.unwrap_or_default())
        }
        (Some(v), _) => Ok(v),
        (None, Some(m)) => Ok(m),
        (None, None) => match model {
            Some(m) => Err(unknown("model", m)),
            None => bail!("{at}: vae: missing value: give `vae` or a registered `model`"),
        },
    }
}

/// A content-derived id (`p-` and 16 hex digits of a SHA-256 over the
/// canonical point), so a row without an id gets the same id on every run.
///
/// The hashed bytes are frozen (`wire::id_bytes`): a store keeps ids it
/// derived long ago, so the same row must get the same id from every later
/// vramfit, whatever the `Point` struct's field order becomes.
pub fn derived_id(p: &Point) -> String {
    let bytes = super::wire::id_bytes(p);
    let tag = crate::fsio::sha256_tag(&bytes);
    format!("p-{}", &tag["sha256:".len().."sha256:".len() + 16])
}
