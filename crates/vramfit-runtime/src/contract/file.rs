//! The shipped coefficients file (`fits/vae.json`) as a runtime reads it:
//! its schema, the kind of each line and the line's values.

use super::key::LineKey;
use super::rules::{AllocatorDefault, Attention, Legacy, OsSpecific, Tiling};
use crate::error::Result;
use crate::exact::Ratio;
use crate::registry::VaeEntry;
use crate::vocab::{Allocator, ConvBackend, Os};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a line got its values.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LineKind {
    Fitted,
    Carried,
    /// Too few distinct sizes: not fitted; its points are priced by the unmeasured rule.
    Insufficient,
}

impl LineKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            LineKind::Fitted => "fitted",
            LineKind::Carried => "carried",
            LineKind::Insufficient => "insufficient",
        }
    }
}

/// The shipped slope as a decimal with two places.
pub fn slope_text(slope_centi: u64) -> String {
    crate::exact::format_scaled(i128::from(slope_centi), 2)
}

pub const FORMAT: &str = "vramfit-coefficients";

/// The shipped `fits/vae.json`, compiled in so `reserve` and `plan` work
/// from any folder and after `cargo install`. The crate carries its own
/// copy (`crates/vramfit-runtime/vae.json`, inside the package, so the
/// crate builds and publishes on its own); `vramfit emit` writes it with
/// `fits/vae.json`, and `verify` fails while the two differ (finding
/// `copy`).
pub const EMBEDDED: &str = include_str!("../../vae.json");
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
    pub video: Option<super::video::VideoPolicy>,
    /// Traced shapes and their calibrations: the price of a family with no
    /// measured line on the query's platform (absent: no traces, or no
    /// `[traced]` margin declared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traced: Option<super::traced::TracedSection>,
    /// Each platform's first use, declared in the policy and proven from
    /// its fresh-process points (docs/fit.md, "First use"; absent: none
    /// declared).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_use: Vec<FirstUse>,
    /// Digests of the inputs this file was emitted from.
    pub digests: Digests,
}

/// What a fresh process's first run of an op adds on a platform: the CUDA
/// libraries' kernels, loaded by the first convolution, counted by the
/// driver and never by the caching allocator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FirstUse {
    pub conv_backend: ConvBackend,
    pub allocator: Allocator,
    pub os: Os,
    /// Declared, MiB.
    pub mib: u64,
    /// `max(driver − reserved)` over the proving points, MiB rounded up:
    /// `verify` holds `mib` to it.
    pub measured_mib: u64,
    /// The fresh points of the platform with both deltas, sorted.
    pub points: Vec<String>,
    pub source: String,
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

impl ShippedLine {
    /// The shipped slope in hundredths of a byte per pixel.
    pub fn slope_centi(&self) -> Result<u64> {
        let r = crate::exact::parse_decimal(&self.slope)
            .map_err(|e| crate::error::refused!("line {}: slope: {e}", self.key))?;
        let c = r.checked_mul(Ratio::int(100))?;
        if c.den() != 1 {
            crate::error::refuse!("line {}: slope '{}' has more than two decimals", self.key, self.slope);
        }
        u64::try_from(c.num()).map_err(|_| crate::error::refused!("line {}: slope too large", self.key))
    }

    /// The unrounded envelope, when the file has one.
    pub fn envelope_values(&self) -> Option<(Ratio, Ratio)> {
        let e = self.envelope.as_ref()?;
        Some((Ratio::parse_fraction(&e.slope)?, Ratio::parse_fraction(&e.base)?))
    }
}
