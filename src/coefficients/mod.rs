//! The shipped coefficient file `fits/vae.json` (docs/DESIGN.md, "The coefficients file"): its schema, how
//! `emit` builds it from the assembled lines, and how it is loaded.
//!
//! The file is self-contained: a runtime (a Python app) can price any query
//! from it alone, with no other vramfit file.

pub mod emit;
pub mod fields;

use crate::exact::{Ratio, MIB};
use crate::lines::{slope_text, Line, LineKind};
use crate::points::LineKey;
use crate::policy::{AllocatorDefault, Attention, Legacy, OsSpecific, Policy, Tiling};
use crate::registry::VaeEntry;
use crate::vocab::Allocator;
use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub const FORMAT: &str = "vramfit-coefficients";

/// The shipped `fits/vae.json`, compiled in so `reserve` and `plan` work
/// from any folder and after `cargo install`.
pub const EMBEDDED: &str = include_str!("../../fits/vae.json");
pub const VERSION: u32 = 2;

/// The shipped file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CoefficientsFile {
    /// Always `vramfit-coefficients`.
    pub format: String,
    /// Schema version (2).
    pub version: u32,
    /// Margin applied to the envelope before rounding, exact decimal.
    pub margin: Ratio,
    /// Largest allowed `reserve / demand` outside listed exceptions.
    pub ratio_bound: Ratio,
    /// Distinct sizes a line needs to be fitted.
    pub min_sizes: usize,
    /// Rounding steps of the shipped values.
    pub resolution: Resolution,
    /// How a runtime evaluates a line, in words.
    pub formula: String,
    /// Fitted and carried lines, sorted by key.
    pub lines: Vec<ShippedLine>,
    /// Keys with points but too few sizes: priced by the unmeasured rule.
    pub insufficient: Vec<InsufficientLine>,
    /// The rule for a key with no line.
    pub unmeasured: Unmeasured,
    /// How a cast's weight growth is added, in words.
    pub cast_growth: String,
    /// The previous estimator, the floor of the unmeasured rule.
    pub legacy: Option<Legacy>,
    /// VAE families, model names and weight counts.
    pub registry: BTreeMap<String, VaeEntry>,
    /// `(conv_backend, allocator)` pairs whose lines keep their OS; a null
    /// allocator means every allocator.
    pub os_specific: Vec<OsSpecific>,
    /// The allocator a platform runs when nothing is configured.
    pub allocator_defaults: Vec<AllocatorDefault>,
    /// The allocator when no `allocator_defaults` entry matches.
    pub default_allocator: Allocator,
    /// Tile edges `plan` may fall back to, largest first.
    pub tiles: Vec<u32>,
    /// The derived-tile rule: a tile with no line of its own on a platform
    /// whose untiled line exists (null: no such rule; the unmeasured rule prices it).
    pub tiling: Option<Tiling>,
    /// The attention phase of math-kernel platforms (null: none declared).
    pub attention: Option<Attention>,
    /// Video families' clip copies and hosts' estimates (absent: none declared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video: Option<crate::policy::video::VideoPolicy>,
    /// Digests of the inputs this file was emitted from.
    pub digests: Digests,
}

/// Rounding steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Resolution {
    /// Slopes are multiples of this many bytes per pixel.
    pub slope_bytes_per_pixel: String,
    /// Bases are whole multiples of this many bytes (one MiB).
    pub base_bytes: u64,
}

/// A fitted or carried line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
// The loader refuses unknown fields here too (through the field walk).
#[schemars(deny_unknown_fields)]
pub struct ShippedLine {
    #[serde(flatten)]
    pub key: LineKey,
    /// `fitted` or `carried` (never `insufficient`: those are listed apart).
    pub kind: LineKind,
    /// Bytes per pixel, two decimals, rounded up.
    pub slope: String,
    /// MiB, rounded up.
    pub base_mib: u64,
    /// Included points behind the line.
    pub points: usize,
    pub distinct_sizes: usize,
    /// Smallest and largest measured size in pixels (null: no points).
    pub size_range: Option<[u64; 2]>,
    /// Ids of the points that pin the envelope.
    pub support: Vec<String>,
    /// `edge`, `origin`, `flat` or `single-size` (fitted lines).
    pub support_kind: Option<String>,
    /// The unrounded optimum as exact fractions (fitted lines).
    pub envelope: Option<ShippedEnvelope>,
    /// SHA-256 over `id\tpixels\tdemand\n` of the points, sorted by id.
    pub points_digest: String,
    /// The included points' ids.
    pub point_ids: Vec<crate::text::Text>,
    /// Largest `reserve / demand`, four decimals rounded up (null: no points).
    pub max_ratio: Option<String>,
    /// Listed exceptions among the points.
    pub exceptions: Vec<String>,
    /// Why a carried line is carried.
    pub reason: Option<String>,
    /// The devices the line's points were measured on, each once, sorted
    /// (empty: a carried line with no points): what an answer priced by
    /// the line says it rests on.
    #[serde(default)]
    pub devices: Vec<String>,
    /// Included points made on a simulated device (ingested with
    /// `--allow-simulated`); every answer priced by the line says so.
    /// Absent when none, as in every file of real measurements.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub simulated_points: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The unrounded envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShippedEnvelope {
    /// Bytes per pixel, `num/den`.
    pub slope: String,
    /// Bytes, `num/den`.
    pub base: String,
}

/// A key with points too few to fit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
// The loader refuses unknown fields here too (through the field walk).
#[schemars(deny_unknown_fields)]
pub struct InsufficientLine {
    #[serde(flatten)]
    pub key: LineKey,
    pub points: usize,
    pub distinct_sizes: usize,
    pub points_digest: String,
    pub point_ids: Vec<crate::text::Text>,
    pub reason: String,
}

/// The unmeasured-platform rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Unmeasured {
    pub rule: String,
    pub description: String,
}

/// Input digests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Digests {
    /// SHA-256 of the canonical form of `measurements/vae.json` (points
    /// sorted by id), so the order points are stored in does not matter.
    pub points: String,
    /// SHA-256 of `fits/policy.toml`.
    pub policy: String,
}

/// Builds the shipped file from assembled lines.
pub fn build(lines: &[Line], policy: &Policy, points_digest: &str, policy_digest: &str) -> CoefficientsFile {
    let mut shipped = Vec::new();
    let mut insufficient = Vec::new();
    for l in lines {
        let ids: Vec<crate::text::Text> = l.points.iter().map(|p| p.id.clone()).collect();
        match (l.kind, l.rounded) {
            (LineKind::Insufficient, _) | (_, None) => insufficient.push(InsufficientLine {
                key: l.key.clone(),
                points: l.points.len(),
                distinct_sizes: l.distinct_sizes,
                points_digest: l.points_digest.clone(),
                point_ids: ids,
                reason: l.reason.clone().unwrap_or_default(),
            }),
            (kind, Some(r)) => shipped.push(ShippedLine {
                key: l.key.clone(),
                kind,
                slope: slope_text(r.slope_centi),
                base_mib: r.base_mib,
                points: l.points.len(),
                distinct_sizes: l.distinct_sizes,
                size_range: l.size_range.map(|(a, b)| [a, b]),
                support: l.envelope.as_ref().map(|e| e.support.ids()).unwrap_or_default(),
                support_kind: l.envelope.as_ref().map(|e| e.support.kind().to_string()),
                envelope: l.envelope.as_ref().map(|e| ShippedEnvelope {
                    slope: e.slope.to_fraction_string(),
                    base: e.base.to_fraction_string(),
                }),
                points_digest: l.points_digest.clone(),
                point_ids: ids,
                max_ratio: l.max_ratio.map(|m| m.to_decimal_ceil(4)),
                exceptions: l.exceptions.iter().map(|e| e.to_string()).collect(),
                reason: l.reason.clone(),
                devices: l.devices(),
                simulated_points: l.points.iter().filter(|p| p.simulated).count(),
            }),
        }
    }
    CoefficientsFile {
        format: FORMAT.to_string(),
        version: VERSION,
        margin: policy.margin,
        ratio_bound: policy.ratio_bound,
        min_sizes: policy.min_sizes,
        resolution: Resolution { slope_bytes_per_pixel: "0.01".into(), base_bytes: MIB },
        formula: "reserve_bytes = ceil(slope_centi × pixels / 100) + base_mib × 1048576, where \
                  slope_centi = slope × 100 (an integer) and pixels = width × height × batch; a tile at least \
                  as large as both sides of the image does nothing and is priced with tile 0"
            .into(),
        lines: shipped,
        insufficient,
        unmeasured: Unmeasured {
            rule: policy.unmeasured.clone(),
            description: "a key with no line is priced at the largest of every line with the same \
                          (vae, op, tile, dtype) at the query's size, plus cast growth, and never below \
                          the legacy estimate (pixels × elem_bytes × k, or tiled tile² × batch × elem_bytes × \
                          k × tile_factor rounded up, plus fp32_extra_mib for the family in fp32)"
                .into(),
        },
        cast_growth: "when the run dtype is wider than the loaded dtype, add params × \
                      (elem(run) − elem(loaded)) bytes (fp16/bf16: 2, fp32: 4)"
            .into(),
        legacy: policy.legacy.clone(),
        registry: policy.registry.0.clone(),
        os_specific: policy.os_specific.clone(),
        allocator_defaults: policy.allocator_defaults.clone(),
        default_allocator: policy.default_allocator,
        tiles: policy.tiles.clone(),
        tiling: policy.tiling.clone(),
        attention: policy.attention.clone(),
        video: policy.video.clone(),
        digests: Digests { points: points_digest.to_string(), policy: policy_digest.to_string() },
    }
}

/// `Some(message)` when a file is valid JSON of another format or version.
pub fn version_mismatch(raw: &serde_json::Value, file: &str) -> Option<String> {
    let format = raw.get("format").and_then(|v| v.as_str()).unwrap_or("");
    let version = raw.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
    (format != FORMAT || version != u64::from(VERSION))
        .then(|| format!("{file}: format '{format}' version {version}; this vramfit reads {FORMAT} version {VERSION}"))
}

/// The file's text as JSON, read once; an error names the line.
pub fn read_json(text: &str, file: &str) -> Result<serde_json::Value> {
    serde_json::from_str(text).map_err(|e| anyhow!("{file}:{}: not valid JSON: {e}", e.line()))
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
        if this_version && crate::fsio::writes_exactly(&typed, text.as_bytes()).unwrap_or(false) {
            validate(&typed, file)?;
            return Ok(typed);
        }
    }
    parse_read(text, &read_json(text, file)?, file)
}

/// [`parse`] for a caller that has already read the text as JSON (`raw`).
pub fn parse_read(text: &str, raw: &serde_json::Value, file: &str) -> Result<CoefficientsFile> {
    if let Some(m) = version_mismatch(raw, file) {
        bail!("{m} (re-run `vramfit emit` with this version)");
    }
    // From the text, not from `raw`, so a type error names its line.
    let typed: CoefficientsFile = serde_json::from_str(text).map_err(|e| anyhow!("{file}:{}: {e}", e.line()))?;
    let canonical = serde_json::to_value(&typed)?;
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
        bail!("{file}: {}: {what}", d.path);
    }
    validate(&typed, file)?;
    Ok(typed)
}

/// The checks a pricer relies on beyond the schema.
fn validate(f: &CoefficientsFile, file: &str) -> Result<()> {
    let mut keys = std::collections::BTreeSet::new();
    for l in &f.lines {
        let at = format!("{file}: lines[{}]", l.key);
        if !keys.insert(l.key.clone()) {
            bail!("{at}: the line appears twice");
        }
        if l.kind == LineKind::Insufficient {
            bail!("{at}: kind: a shipped line is fitted or carried (too-thin keys belong in `insufficient`)");
        }
        l.slope_centi().map_err(|e| anyhow!("{at}: slope: {e}"))?;
        if l.base_mib.checked_mul(MIB).is_none_or(|b| b > crate::exact::MAX_BYTES) {
            bail!("{at}: base_mib: {} is too large", l.base_mib);
        }
        if let Some([lo, hi]) = l.size_range {
            if lo == 0 || lo > hi {
                bail!("{at}: size_range: [{lo}, {hi}] is not a range of positive sizes");
            }
        }
        if l.points != l.point_ids.len() {
            bail!("{at}: points: {} but point_ids lists {}", l.points, l.point_ids.len());
        }
        if l.kind == LineKind::Fitted && (l.envelope_values().is_none() || l.size_range.is_none()) {
            bail!("{at}: envelope: a fitted line carries its exact envelope and measured size range");
        }
    }
    for l in &f.insufficient {
        if !keys.insert(l.key.clone()) {
            bail!("{file}: insufficient[{}]: the key appears twice", l.key);
        }
    }
    if f.unmeasured.rule != crate::policy::UNMEASURED_RULE {
        bail!(
            "{file}: unmeasured.rule: '{}' is not a rule this vramfit implements ({})",
            f.unmeasured.rule,
            crate::policy::UNMEASURED_RULE
        );
    }
    if f.ratio_bound.cmp_exact(&Ratio::int(1))? == std::cmp::Ordering::Less || f.margin.is_negative() {
        bail!("{file}: margin / ratio_bound: the margin is at least 0 and the ratio bound at least 1");
    }
    let mut tiles = std::collections::BTreeSet::new();
    if let Some(t) = f.tiles.iter().find(|t| **t == 0 || !tiles.insert(**t)) {
        bail!("{file}: tiles: {t} is zero or listed twice");
    }
    if let Some(t) = &f.tiling {
        if !t.hosts.contains_key(&t.default_host) {
            bail!("{file}: tiling.default_host: '{}' is not one of tiling.hosts", t.default_host);
        }
        if let Some((name, _)) = t.hosts.iter().find(|(_, h)| h.copies.is_negative()) {
            bail!("{file}: tiling.hosts.{name}.copies: a count of copies is at least 0");
        }
    }
    let mut names = std::collections::BTreeMap::new();
    for (family, entry) in &f.registry {
        for name in std::iter::once(family).chain(&entry.models) {
            if let Some(other) = names.insert(name.to_ascii_lowercase(), family) {
                bail!("{file}: registry: '{name}' names both '{other}' and '{family}'");
            }
        }
    }
    Ok(())
}

/// Reads a shipped file.
pub fn load(file: &Path) -> Result<CoefficientsFile> {
    parse(&crate::fsio::read_text(file)?, &crate::fsio::shown(file))
}

impl ShippedLine {
    /// The shipped slope in hundredths of a byte per pixel.
    pub fn slope_centi(&self) -> Result<u64> {
        let r = crate::exact::parse_decimal(&self.slope).map_err(|e| anyhow!("line {}: slope: {e}", self.key))?;
        let c = r.checked_mul(Ratio::int(100))?;
        if c.den() != 1 {
            bail!("line {}: slope '{}' has more than two decimals", self.key, self.slope);
        }
        u64::try_from(c.num()).map_err(|_| anyhow!("line {}: slope too large", self.key))
    }

    /// The unrounded envelope, when the file has one.
    pub fn envelope_values(&self) -> Option<(Ratio, Ratio)> {
        let e = self.envelope.as_ref()?;
        Some((Ratio::parse_fraction(&e.slope)?, Ratio::parse_fraction(&e.base)?))
    }
}
