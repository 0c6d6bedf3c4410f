//! The measurement CSV of SPEC §2, and the one row → point conversion that
//! every importer shares (so an imported record and a CSV row of the same
//! figures become the same point).

use super::{Point, AGGREGATES, CONTEXTS};
use crate::exact::{mib_decimal_to_bytes, DecimalError, MAX_BYTES, MAX_PIXELS};
use crate::policy::Registry;
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
/// SPEC §2 gives a default).
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

/// Reads one measurement CSV. A UTF-8 BOM and CRLF line ends are accepted;
/// an empty file (no header) is an error, a header-only file has no rows.
pub fn parse_csv(bytes: &[u8], file: &str, registry: &Registry) -> Result<Vec<ParsedRow>> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        bail!("{file}:1: empty file: expected a header row naming the columns (SPEC §2)");
    }
    let mut reader = csv::ReaderBuilder::new().has_headers(true).flexible(false).from_reader(bytes);
    let headers: Vec<String> = match reader.headers() {
        Ok(h) => h.iter().map(|s| s.trim().to_string()).collect(),
        Err(e) => bail!("{file}:1: cannot read the header row: {e}"),
    };
    check_header(&headers, file)?;
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map(|p| p.line()).unwrap_or(0);
                let what = match e.kind() {
                    csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
                        format!("row has {len} fields, the header has {expected_len}")
                    }
                    csv::ErrorKind::Utf8 { .. } => "not valid UTF-8".to_string(),
                    _ => e.to_string(),
                };
                bail!("{file}:{line}: {what}");
            }
        };
        let line = record.position().map(|p| p.line()).unwrap_or(0);
        if record.iter().all(|f| f.trim().is_empty()) {
            continue;
        }
        let origin = RowOrigin { file: file.to_string(), line };
        let fields: BTreeMap<String, String> =
            headers.iter().cloned().zip(record.iter().map(|f| f.trim().to_string())).collect();
        let point = row_to_point(&fields, &origin, registry)?;
        rows.push(ParsedRow { point, origin });
    }
    Ok(rows)
}

fn check_header(headers: &[String], file: &str) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for h in headers {
        if h.is_empty() {
            bail!("{file}:1: the header has an empty column name");
        }
        if !seen.insert(h.as_str()) {
            bail!("{file}:1: {h}: column named twice in the header");
        }
    }
    for required in REQUIRED_COLUMNS {
        if !seen.contains(required) {
            bail!("{file}:1: {required}: missing required column (required: {})", REQUIRED_COLUMNS.join(", "));
        }
    }
    if !seen.contains("vae") && !seen.contains("model") {
        bail!("{file}:1: vae: missing column: give `vae` (a family) or `model` (a registered model name)");
    }
    if !DEMAND_COLUMNS.iter().any(|c| seen.contains(c)) {
        bail!("{file}:1: reserved_mib: missing demand column: give at least one of {}", DEMAND_COLUMNS.join(", "));
    }
    Ok(())
}

/// A row's fields by column name.
pub type Fields = BTreeMap<String, String>;

/// Converts one row into a validated point. Every error names the row and column.
pub fn row_to_point(f: &Fields, at: &RowOrigin, registry: &Registry) -> Result<Point> {
    let get = |c: &str| f.get(c).map(|s| s.trim()).filter(|s| !s.is_empty());
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
    let pixels = width
        .checked_mul(height)
        .and_then(|p| p.checked_mul(batch))
        .filter(|p| *p <= MAX_PIXELS)
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
        .iter()
        .filter(|(k, v)| !KNOWN_COLUMNS.contains(&k.as_str()) && !v.trim().is_empty())
        .map(|(k, v)| (k.clone(), v.trim().to_string()))
        .collect();

    let mut point = Point {
        id: String::new(),
        vae,
        model: get("model").map(str::to_string),
        op,
        tile,
        conv_backend,
        allocator,
        os,
        dtype,
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
pub fn derived_id(p: &Point) -> String {
    let mut blank = p.clone();
    blank.id = String::new();
    let bytes = serde_json::to_vec(&blank).unwrap_or_default();
    let tag = crate::fsio::sha256_tag(&bytes);
    format!("p-{}", &tag["sha256:".len().."sha256:".len() + 16])
}
