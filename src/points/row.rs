//! One row → one point: the conversion every importer shares, so an
//! imported record and a CSV row of the same figures become the same point.
//! A row is read through [`Col`], the closed list of columns vramfit knows;
//! any other column is kept as the point's metadata.

use super::{LineKey, Point};
use crate::exact::{mib_decimal_to_bytes, DecimalError, MAX_BYTES, MAX_PIXELS};
use crate::places::InputError;
use crate::registry::Registry;
use crate::text::{Interner, Text};
use crate::vocab::{Dtype, Os};
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::str::FromStr;

/// Where a row came from, for messages and for the ingest summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowOrigin {
    /// The file as named on the command line (shared by all its rows).
    pub file: Text,
    pub line: u64,
}

impl std::fmt::Display for RowOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

impl RowOrigin {
    /// An input error at this row: `FILE:LINE: what`.
    pub fn error(&self, what: impl std::fmt::Display) -> InputError {
        InputError::at_line(self.file.as_str(), self.line, what)
    }

    /// An input error in one field of this row: `FILE:LINE: FIELD: what`.
    pub fn field_error(&self, field: impl std::fmt::Display, what: impl std::fmt::Display) -> InputError {
        let field = field.to_string();
        InputError::at_line(self.file.as_str(), self.line, format!("{field}: {what}")).field(&field)
    }
}

/// Validated points and the rows they came from, as two lists side by
/// side: `origins[i]` is where `points[i]` was read. The origins only name
/// rows in messages, so the points are kept in a list of their own that
/// the merge can turn into the store's list in place (at 10^6 rows a list
/// of point-and-origin pairs had to be copied into a list of points).
#[derive(Debug, Clone, Default)]
pub struct Rows {
    pub points: Vec<Point>,
    pub origins: Vec<RowOrigin>,
}

impl Rows {
    pub fn with_capacity(n: usize) -> Rows {
        Rows { points: Vec::with_capacity(n), origins: Vec::with_capacity(n) }
    }

    pub fn push(&mut self, point: Point, origin: RowOrigin) {
        self.points.push(point);
        self.origins.push(origin);
    }

    /// Moves every row of `other` to the end.
    pub fn append(&mut self, other: &mut Rows) {
        self.points.append(&mut other.points);
        self.origins.append(&mut other.origins);
    }

    /// Makes room for exactly `more` more rows.
    pub fn reserve(&mut self, more: usize) {
        self.points.reserve_exact(more);
        self.origins.reserve_exact(more);
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }
}

macro_rules! columns {
    ($($variant:ident => $name:literal),+ $(,)?) => {
        /// A column of the measurement CSV that vramfit reads
        /// (docs/DESIGN.md, "The measurement CSV").
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Col { $($variant),+ }

        impl Col {
            /// Every known column, in the documented order.
            pub const ALL: &'static [Col] = &[$(Col::$variant),+];

            /// The column's name in a header.
            pub fn name(self) -> &'static str {
                match self { $(Col::$variant => $name),+ }
            }
        }
    };
}

columns!(
    Id => "id",
    Source => "source",
    Device => "device",
    Torch => "torch",
    ConvBackend => "conv_backend",
    Allocator => "allocator",
    Os => "os",
    Vae => "vae",
    Model => "model",
    Op => "op",
    Tile => "tile",
    LoadedDtype => "loaded_dtype",
    RunDtype => "run_dtype",
    Width => "width",
    Height => "height",
    Batch => "batch",
    Frames => "frames",
    TemporalTile => "temporal_tile",
    Run => "run",
    Runs => "runs",
    Aggregate => "aggregate",
    Context => "context",
    ReservedMib => "reserved_mib",
    AllocatedMib => "allocated_mib",
    DriverMib => "driver_mib",
    ReservedBytes => "reserved_bytes",
    AllocatedBytes => "allocated_bytes",
    DriverBytes => "driver_bytes",
    Note => "note",
);

impl Col {
    /// The known column of a header name, if any.
    pub fn of(name: &str) -> Option<Col> {
        Col::ALL.iter().copied().find(|c| c.name() == name)
    }
}

/// Columns that must be present in the header. `vae` or `model` and one
/// demand column are required too (either of a kind will do); `os`, `tile`
/// and `batch` may be left out of the header like any optional column, and
/// then read as their empty value does (`any`, 0, 1): docs/DESIGN.md, "The
/// measurement CSV".
pub const REQUIRED_COLUMNS: &[Col] =
    &[Col::Source, Col::ConvBackend, Col::Allocator, Col::Op, Col::RunDtype, Col::Width, Col::Height];

/// The demand columns, as (MiB column, bytes column) per measured delta in
/// the order reserved, allocated, driver; at least one must be filled per row.
pub const DEMAND_PAIRS: [(Col, Col); 3] = [
    (Col::ReservedMib, Col::ReservedBytes),
    (Col::AllocatedMib, Col::AllocatedBytes),
    (Col::DriverMib, Col::DriverBytes),
];

/// The demand columns, for messages and the header check.
pub const DEMAND_COLUMNS: [Col; 6] =
    [Col::ReservedMib, Col::AllocatedMib, Col::DriverMib, Col::ReservedBytes, Col::AllocatedBytes, Col::DriverBytes];

/// The names of the demand columns, for messages.
pub fn demand_column_names() -> String {
    DEMAND_COLUMNS.map(Col::name).join(", ")
}

/// A row's fields by column name (what an importer builds).
pub type Fields = BTreeMap<String, String>;

/// What `row_to_point` reads a row through: the value of a known column,
/// and the columns vramfit does not know (kept as metadata).
pub trait Row {
    /// The raw value of a known column, when the row has it.
    fn field(&self, column: Col) -> Option<&str>;
    /// Every `(column, value)` pair of the columns vramfit does not know.
    fn unknown(&self) -> Vec<(&str, &str)>;
    /// Whether every value is known to pass [`field_problem`] already (a
    /// reader that saw the raw line whole).
    fn plain(&self) -> bool {
        false
    }
    /// Whether [`Row::unknown`] gives its columns sorted by name, each once.
    fn unknown_sorted(&self) -> bool {
        false
    }
}

impl Row for Fields {
    fn field(&self, column: Col) -> Option<&str> {
        self.get(column.name()).map(String::as_str)
    }

    fn unknown(&self) -> Vec<(&str, &str)> {
        self.iter().filter(|(k, _)| Col::of(k).is_none()).map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }
}

/// One shared copy of each repeated string of the points one input makes.
pub struct Interners {
    /// Whether a point keeps its metadata (`csv_input::Keep`).
    pub(super) keep_metadata: bool,
    /// Each name a row gave for its family or model, resolved once.
    families: std::collections::HashMap<Box<str>, Option<Text>>,
    pub(super) vae: Interner,
    pub(super) model: Interner,
    pub(super) source: Interner,
    pub(super) device: Interner,
    pub(super) torch: Interner,
    pub(super) note: Interner,
    /// Values of the columns kept as metadata (the store's reader, which
    /// meets them as pairs).
    pub(super) metadata: Interner,
    /// The names of a point's metadata, joined (`Metadata::interned`).
    pub(super) metadata_names: Interner,
    /// The CSV reader's: one interner per metadata column, in the order a
    /// row gives them (a column's value mostly repeats the row before's).
    pub(super) columns: Vec<(Text, Interner)>,
    /// Which of those columns the last row filled, and their names joined:
    /// rows mostly fill the same ones.
    last_names: Option<(Vec<bool>, Text)>,
}

impl Default for Interners {
    fn default() -> Interners {
        Interners {
            keep_metadata: true,
            families: Default::default(),
            vae: Default::default(),
            model: Default::default(),
            source: Default::default(),
            device: Default::default(),
            torch: Default::default(),
            note: Default::default(),
            metadata: Default::default(),
            metadata_names: Default::default(),
            columns: Default::default(),
            last_names: None,
        }
    }
}

impl Interners {
    /// The metadata of a row whose unknown columns come sorted by name, each
    /// once (a CSV's): values shared per column, the joined names shared
    /// while rows fill the same columns; no sort, no name compared.
    fn sorted_metadata(&mut self, unknown: &[(&str, &str)]) -> super::Metadata {
        let filled: Vec<bool> = unknown.iter().map(|(_, v)| !v.trim().is_empty()).collect();
        let mut values = Vec::with_capacity(filled.iter().filter(|f| **f).count() + 1);
        values.push(Text::default());
        for (i, (k, v)) in unknown.iter().enumerate().filter(|(i, _)| filled[*i]) {
            values.push(self.metadata_pair(i, k, v.trim()).1);
        }
        if values.len() == 1 {
            return super::Metadata::default();
        }
        let names = match &self.last_names {
            Some((was, names)) if *was == filled => names.clone(),
            _ => {
                let joined: Vec<&str> =
                    unknown.iter().zip(&filled).filter(|(_, f)| **f).map(|((k, _), _)| *k).collect();
                let names = self.metadata_names.intern(&super::Metadata::join(&joined));
                self.last_names = Some((filled, names.clone()));
                names
            }
        };
        values[0] = names;
        super::Metadata::from_parts(values)
    }

    /// Interners for a reader that keeps metadata, or not.
    pub fn keeping_metadata(keep: bool) -> Interners {
        Interners { keep_metadata: keep, ..Interners::default() }
    }

    /// A metadata pair of a row's `i`th unknown column, shared.
    fn metadata_pair(&mut self, i: usize, name: &str, value: &str) -> (Text, Text) {
        while self.columns.len() <= i {
            self.columns.push((Text::default(), Interner::default()));
        }
        if self.columns[i].0.as_str() != name {
            self.columns[i] = (Text::from(name), Interner::default());
        }
        let (n, values) = &mut self.columns[i];
        (n.clone(), values.intern(value))
    }
}

impl Interners {
    /// The family `name` stands for in the registry (the registry walks
    /// every family and model per name; a large CSV gives few names).
    fn family(&mut self, registry: &Registry, name: &str) -> Option<Text> {
        if let Some(f) = self.families.get(name) {
            return f.clone();
        }
        let f = registry.resolve(name).map(|f| self.vae.intern(f));
        self.families.insert(name.into(), f.clone());
        f
    }
}

/// Converts one row into a validated point. Every error names the row and column.
pub fn row_to_point(f: &impl Row, at: &RowOrigin, registry: &Registry, texts: &mut Interners) -> Result<Point> {
    check_text(f, at)?;
    let get = |c: Col| f.field(c).map(|s| s.trim()).filter(|s| !s.is_empty());
    let fail = |col: Col, what: String| -> anyhow::Error { anyhow::anyhow!(at.field_error(col.name(), what)) };
    let vocab = |col: Col| -> Result<&str> { get(col).ok_or_else(|| fail(col, "missing value".into())) };
    fn parse_vocab<T: FromStr>(v: &str, col: Col, at: &RowOrigin) -> Result<T>
    where
        T::Err: std::fmt::Display,
    {
        v.parse::<T>().map_err(|e| anyhow::anyhow!(at.field_error(col.name(), format!("{e}"))))
    }
    let positive = |col: Col, default: Option<u64>| -> Result<u64> {
        match get(col) {
            None => default.ok_or_else(|| fail(col, "missing value (a positive integer)".into())),
            // Digits only, as everywhere: no sign, no decimal point, no exponent.
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n > 0 && v.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
                _ => Err(fail(col, format!("'{v}' is not a positive integer (digits only)"))),
            },
        }
    };

    let source =
        get(Col::Source).ok_or_else(|| fail(Col::Source, "missing value: every point names its source".into()))?;
    let conv_backend = parse_vocab(vocab(Col::ConvBackend)?, Col::ConvBackend, at)?;
    let allocator = parse_vocab(vocab(Col::Allocator)?, Col::Allocator, at)?;
    let os = match get(Col::Os) {
        None => Os::Any,
        Some(v) => parse_vocab(v, Col::Os, at)?,
    };
    let vae = resolve_family(get(Col::Vae), get(Col::Model), at, registry, texts)?;
    let op = parse_vocab(vocab(Col::Op)?, Col::Op, at)?;
    let tile = match get(Col::Tile) {
        None => 0,
        Some(v) if v.bytes().all(|b| b.is_ascii_digit()) => {
            v.parse::<u32>().map_err(|_| fail(Col::Tile, format!("'{v}' is not a non-negative integer")))?
        }
        Some(v) => return Err(fail(Col::Tile, format!("'{v}' is not a non-negative integer (digits only)"))),
    };
    let dtype: Dtype = parse_vocab(vocab(Col::RunDtype)?, Col::RunDtype, at)?;
    let loaded_dtype = get(Col::LoadedDtype).map(|v| parse_vocab::<Dtype>(v, Col::LoadedDtype, at)).transpose()?;
    let width = positive(Col::Width, None)?;
    let height = positive(Col::Height, None)?;
    let batch = positive(Col::Batch, Some(1))?;
    let pixels = crate::exact::pixels(width, height, batch)
        .ok_or_else(|| fail(Col::Width, format!("width × height × batch exceeds {MAX_PIXELS} pixels")))?;
    let frames = positive(Col::Frames, Some(1))?;
    crate::exact::pixel_frames(pixels, frames).ok_or_else(|| {
        fail(
            Col::Frames,
            format!("width × height × frames × batch exceeds {MAX_PIXELS} pixel-frames: too large to price"),
        )
    })?;
    let temporal_tile = match get(Col::TemporalTile) {
        None => 0,
        Some(v) if v.bytes().all(|b| b.is_ascii_digit()) => {
            v.parse::<u32>().map_err(|_| fail(Col::TemporalTile, format!("'{v}' is not a non-negative integer")))?
        }
        Some(v) => return Err(fail(Col::TemporalTile, format!("'{v}' is not a non-negative integer (digits only)"))),
    };
    let temporal_tile = video_work(registry.video(&vae), frames, temporal_tile, &fail)?;

    let mut deltas = [None, None, None];
    for (i, (mib_col, bytes_col)) in DEMAND_PAIRS.into_iter().enumerate() {
        deltas[i] = match (get(mib_col), get(bytes_col)) {
            (Some(_), Some(_)) => {
                return Err(fail(
                    bytes_col,
                    format!("both {} and {} are filled; give one", mib_col.name(), bytes_col.name()),
                ))
            }
            (Some(v), None) => Some(mib_decimal_to_bytes(v).map_err(|e| demand_error(mib_col, v, e, at))?),
            (None, Some(v)) => Some(parse_bytes_field(v).map_err(|e| demand_error(bytes_col, v, e, at))?),
            (None, None) => None,
        };
    }
    let demand =
        deltas.iter().flatten().copied().max().ok_or_else(|| {
            fail(Col::ReservedMib, format!("no demand: fill at least one of {}", demand_column_names()))
        })?;
    if demand == 0 {
        return Err(fail(Col::ReservedMib, "every measured delta is zero: a zero demand cannot be priced".into()));
    }
    if demand > MAX_BYTES {
        return Err(fail(Col::ReservedMib, format!("demand above {MAX_BYTES} bytes")));
    }

    let small = |col: Col| -> Result<Option<u32>> {
        get(col)
            .map(|v| match v.parse::<u32>() {
                Ok(n) if n > 0 && v.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
                _ => Err(fail(col, format!("'{v}' is not a positive integer (digits only)"))),
            })
            .transpose()
    };
    // A byte count kept beside the point (an observation's
    // `reservation_bytes`) is one a pricer could have answered: a whole
    // number of bytes within its range, never NaN, negative or 1e30.
    for (k, v) in
        f.unknown().into_iter().map(|(k, v)| (k, v.trim())).filter(|(k, v)| k.ends_with("_bytes") && !v.is_empty())
    {
        match parse_bytes_field(v) {
            Ok(n) if n <= MAX_BYTES => {}
            Ok(_) => return Err(anyhow::anyhow!(at.field_error(k, format!("'{v}' is above {MAX_BYTES} bytes")))),
            Err(e) => {
                let what = format!("'{}' is not a byte count ({e})", crate::text::escaped(v, 40));
                return Err(anyhow::anyhow!(at.field_error(k, what)));
            }
        }
    }
    let metadata = match (texts.keep_metadata, f.unknown_sorted()) {
        (false, _) => super::Metadata::default(),
        (true, true) => texts.sorted_metadata(&f.unknown()),
        (true, false) => {
            let pairs = f
                .unknown()
                .into_iter()
                .enumerate()
                .filter(|(_, (_, v))| !v.trim().is_empty())
                .map(|(i, (k, v))| texts.metadata_pair(i, k, v.trim()))
                .collect();
            super::Metadata::interned(pairs, &mut texts.metadata_names)
        }
    };

    let mut point = Point {
        id: Text::default(),
        key: LineKey { vae, op, tile, temporal_tile, conv_backend, allocator, os, dtype },
        model: get(Col::Model).map(|m| texts.model.intern(m)),
        loaded_dtype,
        width,
        height,
        frames,
        batch,
        pixels,
        demand_bytes: demand,
        reserved_bytes: deltas[0],
        allocated_bytes: deltas[1],
        driver_bytes: deltas[2],
        source: texts.source.intern(source),
        device: get(Col::Device).map(|d| texts.device.intern(d)),
        torch: get(Col::Torch).map(|t| texts.torch.intern(t)),
        run: small(Col::Run)?,
        runs: small(Col::Runs)?,
        aggregate: get(Col::Aggregate).map(|v| parse_vocab(v, Col::Aggregate, at)).transpose()?,
        context: get(Col::Context).map(|v| parse_vocab(v, Col::Context, at)).transpose()?,
        note: get(Col::Note).map(|n| texts.note.intern(n)),
        metadata,
    };
    point.id = match get(Col::Id) {
        // The cell as given too: a tab before the `=` is trimmed away, and is a formula's start.
        Some(id)
            if crate::text::starts_like_formula(id)
                || f.field(Col::Id).is_some_and(crate::text::starts_like_formula) =>
        {
            let what = format!(
                "'{}' begins as a spreadsheet formula does (=, +, -, @, a tab or a carriage return): an id begins \
                 with a letter or a digit",
                crate::text::escaped(id, 40)
            );
            return Err(fail(Col::Id, what));
        }
        Some(id) => Text::from(id),
        None => derived_id(&point),
    };
    Ok(point)
}

/// A row's temporal tile as its key holds it: None for an image family
/// (which must not name frames or a temporal tile) and for a video row
/// untiled in time; Some(N) for a video row with an N-frame temporal tile.
fn video_work(
    facts: Option<&crate::registry::VideoFacts>,
    frames: u64,
    temporal_tile: u32,
    fail: &dyn Fn(Col, String) -> anyhow::Error,
) -> Result<Option<u32>> {
    use crate::registry::Walk;
    match facts {
        None if frames > 1 => Err(fail(Col::Frames, format!("{frames} frames on an image VAE (only a video family, one with `video` facts in the registry, has frames)"))),
        None if temporal_tile > 0 => Err(fail(Col::TemporalTile, format!("{temporal_tile} on an image VAE (only a video family has a temporal tile)"))),
        None => Ok(None),
        Some(v) if v.walk == Walk::Causal && temporal_tile > 0 => Err(fail(
            Col::TemporalTile,
            format!("{temporal_tile}: this family's decoder walks one causal step of {} frame(s) at a time and takes no temporal tile; leave it 0", v.frames),
        )),
        Some(v) if v.walk == Walk::All && temporal_tile > 0 => Err(fail(
            Col::TemporalTile,
            format!("{temporal_tile}: this family's decoder decodes every frame at once and takes no temporal tile; leave it 0"),
        )),
        // Stored only when a point ran one: a family's one-frame,
        // untiled-in-time rows keep the bytes (and the ids) they had
        // before the family was registered as video.
        Some(_) => Ok((temporal_tile > 0).then_some(temporal_tile)),
    }
}

fn demand_error(col: Col, v: &str, e: DecimalError, at: &RowOrigin) -> anyhow::Error {
    anyhow::anyhow!(at.field_error(col.name(), format!("'{v}': {e}")))
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

fn resolve_family(
    vae: Option<&str>,
    model: Option<&str>,
    at: &RowOrigin,
    registry: &Registry,
    texts: &mut Interners,
) -> Result<Text> {
    let unknown = |col: &str, v: &str| {
        anyhow::anyhow!(at.field_error(
            col,
            format!(
                "unknown {col} '{v}' (registered: {}; add it under [vae] in fits/policy.toml)",
                registry.describe()
            )
        ))
    };
    let from_vae = vae.map(|v| texts.family(registry, v).ok_or_else(|| unknown("vae", v))).transpose()?;
    let from_model = model.and_then(|m| texts.family(registry, m));
    match (from_vae, from_model) {
        (Some(v), Some(m)) if v != m => {
            bail!(at.error(format!(
                "model: model '{}' belongs to family '{m}', but vae says '{v}'",
                model.unwrap_or_default()
            )))
        }
        (Some(v), _) => Ok(v),
        (None, Some(m)) => Ok(m),
        (None, None) => match model {
            Some(m) => Err(unknown("model", m)),
            None => bail!(at.error("vae: missing value: give `vae` or a registered `model`")),
        },
    }
}

/// A content-derived id a reviewer can read: what was measured, then a
/// short hash of the whole row, so the same row gets the same id on every
/// run and two rows that differ anywhere get different ones:
/// `MODEL-OP[-tTILE]-DTYPE-WxH[xFRAMES[-ttTT]][-bBATCH]-BACKEND-ALLOCATOR[-OS]-HASH8`
/// (the model as given, else the family; the OS left out when unknown).
///
/// The hashed bytes are frozen (`wire::id_bytes`), whatever the `Point`
/// struct's field order becomes. Ids derived by vramfit before 0.2 were
/// `p-` and 16 hex digits of the same hash ([`legacy_derived_id`]); `merge`
/// keeps such an id when the store already holds the row under it.
pub fn derived_id(p: &Point) -> Text {
    readable_id(p, &hash_hex(p)[..8]).into()
}

/// The id vramfit derived before readable ids: `p-` and 16 hex digits.
pub fn legacy_derived_id(p: &Point) -> Text {
    format!("p-{}", &hash_hex(p)[..16]).into()
}

/// Whether `id` has the form of a [`legacy_derived_id`].
pub fn is_legacy_derived_id(id: &str) -> bool {
    id.len() == 18 && id.starts_with("p-") && id[2..].bytes().all(|b| b.is_ascii_hexdigit())
}

fn hash_hex(p: &Point) -> String {
    let tag = crate::fsio::sha256_tag(&super::wire::id_bytes(p));
    tag["sha256:".len()..].to_string()
}

fn readable_id(p: &Point, hash: &str) -> String {
    let k = &p.key;
    let name = p.model.as_deref().unwrap_or(&k.vae);
    let tile = if k.tile > 0 { format!("-t{}", k.tile) } else { String::new() };
    let batch = if p.batch > 1 { format!("-b{}", p.batch) } else { String::new() };
    let frames = match (p.frames, k.temporal_tile) {
        (1, None) => String::new(),
        (f, None) => format!("x{f}"),
        (f, Some(t)) => format!("x{f}-tt{t}"),
    };
    let os = if k.os == Os::Any { String::new() } else { format!("-{}", k.os) };
    format!(
        "{name}-{}{tile}-{}-{}x{}{frames}{batch}-{}-{}{os}-{hash}",
        k.op, k.dtype, p.width, p.height, k.conv_backend, k.allocator
    )
}

/// The longest value a field may hold (a note of a few paragraphs is a few
/// KiB; past this, a field is a mistake or an attack, not a measurement).
pub const MAX_FIELD_BYTES: usize = 64 * 1024;

/// What is wrong with one text value, if anything: no control character
/// but the tab (a value is printed by `points` and in messages, where an
/// escape sequence would clear a screen or retitle a terminal), and at most
/// [`MAX_FIELD_BYTES`]. The one rule for a CSV field and a stored one.
pub fn field_problem(value: &str) -> Option<String> {
    if value.len() > MAX_FIELD_BYTES {
        return Some(format!("{} bytes, more than a field may hold ({MAX_FIELD_BYTES})", value.len()));
    }
    // Printable ASCII and tabs, nearly every field of every row: no
    // character to decode (this check was a sixth of an `ingest` of 10⁶ rows).
    if value.bytes().all(|b| (0x20..0x7f).contains(&b) || b == b'\t') {
        return None;
    }
    value.chars().find(|c| (c.is_control() && *c != '\t') || crate::text::is_format_char(*c)).map(|c| {
        format!(
            "a control character ({}) in '{}': not accepted in any field (nor an invisible format character)",
            c.escape_unicode(),
            crate::text::escaped(value, 80)
        )
    })
}

/// Every value of a row, known column or not, by [`field_problem`].
fn check_text(f: &impl Row, at: &RowOrigin) -> Result<()> {
    if f.plain() {
        return Ok(());
    }
    let known = Col::ALL.iter().filter_map(|c| f.field(*c).map(|v| (c.name(), v)));
    for (name, value) in known.chain(f.unknown()) {
        if let Some(problem) = field_problem(value) {
            anyhow::bail!(at.field_error(name, problem));
        }
    }
    Ok(())
}
