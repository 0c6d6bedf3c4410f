//! Traced shapes and their calibrations as shipped (docs/traced.md): what a
//! runtime needs to price a family that has no measured line on the
//! query's platform from its own architecture.
//!
//! A *shape* is the exact upper envelope of one family's traced rows for
//! one (op, dtype, tile, temporal tile), in the line's own coordinates:
//! pixels for an image family, the working set for a video family (whose
//! rows have the clip term taken off, as a video line's points do). A
//! *calibration* is a shipped line in traced bytes: `reserve =
//! ceil(slope_centi × traced / 100) + base_mib × 2^20`, fitted on the
//! measured points of one architecture class on one platform.

use crate::exact::{Overflow, Ratio};
use crate::registry::ArchClass;
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A measured line's price past its largest measured size `end`, grown as
/// its family's trace grows (docs/traced.md, "Past the measured range"):
/// `ceil(line(end) × traced(x) / traced(end))`. None: a trace of nothing at
/// `end` (nothing to grow by), or a figure past 64 bits. The caller keeps
/// the larger of this and the line's own formula.
pub fn grown_past_end(line_at_end: u64, traced_at_end: u64, traced_at: u64) -> Option<Result<u64, Overflow>> {
    if traced_at_end == 0 {
        return None;
    }
    let grown = crate::exact::ceil_div_u128(u128::from(line_at_end) * u128::from(traced_at), u128::from(traced_at_end));
    Some(u64::try_from(grown).map_err(|_| Overflow))
}

/// The `traced` section of the shipped file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TracedSection {
    /// The margin every calibration is grown by, exact decimal.
    pub margin: Ratio,
    /// Why that margin (the leave-one-family-out figures), from the policy.
    pub reason: String,
    /// How a runtime prices by the traced rule, in words.
    pub formula: String,
    /// Present: the legacy value does not floor a traced price, and why
    /// (from the policy; absent: it floors it like any guess).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifts_legacy_floor: Option<String>,
    /// SHA-256 over the traced rows the shapes were made from
    /// (`file:line\tvae\top\tdtype\ttile\ttemporal_tile\twidth\theight\tframes\tbatch\ttraced_bytes\tpeaks\n`, sorted; `peaks` each replayed platform's reserved peak, `backend/allocator=BYTES` joined by `;`, or `live=BYTES`).
    pub traces_digest: String,
    /// Every family's shapes, sorted by key.
    pub shapes: Vec<TracedShape>,
    /// Every class's calibrations, sorted by key.
    pub calibrations: Vec<Calibration>,
    /// Families with no measured point whose traces equal a measured
    /// family's on every row (one architecture under two names: SD3's VAE
    /// is FLUX.1's): each is priced by its twin's measured lines.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub twins: BTreeMap<String, Twin>,
}

/// A family priced as another: the measured family whose traced rows equal
/// its own, and how many rows agree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Twin {
    /// The measured family with the same architecture.
    pub of: String,
    /// Traced rows (op, dtype, tiles, size, frames, batch) that agree, byte for byte.
    pub rows: u64,
}

/// The coordinate a shape is a function of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ShapeUnit {
    /// `width × height × batch`.
    Pixels,
    /// A video run's working set (docs/DESIGN.md, "Video").
    WorkingSet,
}

impl ShapeUnit {
    /// The unit as an answer's warnings say it after a number.
    pub fn words(self) -> &'static str {
        match self {
            ShapeUnit::Pixels => "px",
            ShapeUnit::WorkingSet => "px of working set",
        }
    }
}

/// One family's traced bytes as a function of its line's coordinate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TracedShape {
    pub vae: String,
    pub op: Op,
    pub dtype: Dtype,
    /// The spatial tile of an image shape (0: untiled); a video shape's is
    /// in its working set (0).
    pub tile: u32,
    /// A video shape's temporal tile as its key has it (absent for an image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temporal_tile: Option<u32>,
    /// A video family's VAE run on one frame (an image): an envelope of its
    /// one-frame rows alone, which prices one-frame queries; the clip shape
    /// (this absent) prices clips and a measured line past its range. One
    /// envelope over both would tilt: a one-frame run's steps are not a
    /// clip's, and its trace sits far above the clips' line drawn down to it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_frame: bool,
    /// The platform whose allocator replay the shape is drawn through: the
    /// reserved peak the rows' `simulated` column gives there (absent: the
    /// rows' live peak, from a tracer before the replay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayed_on: Option<ReplayPlatform>,
    pub unit: ShapeUnit,
    /// Traced bytes per unit, `num/den`, the exact envelope (no margin).
    pub slope: String,
    /// Traced bytes, `num/den`.
    pub base: String,
    /// Traced rows behind it.
    pub rows: usize,
    /// Smallest and largest coordinate traced.
    pub size_range: [u64; 2],
    /// The rows (`file:line`) that pin the envelope.
    pub support: Vec<String>,
}

/// A platform an allocator replay ran for: the conv backend whose declared
/// workspaces it allocated, and the allocator it replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayPlatform {
    pub conv_backend: ConvBackend,
    pub allocator: Allocator,
}

/// The platform a query on a platform with no replay of its own is priced
/// through: cuDNN's workspaces under the native allocator.
pub const REFERENCE: ReplayPlatform = ReplayPlatform { conv_backend: ConvBackend::Cudnn, allocator: Allocator::Native };

impl TracedSection {
    /// A family's shapes drawn through the replay of `conv_backend` and
    /// `allocator` where the family has them, else through the reference
    /// platform's, else its live-peak shapes. Shapes are shipped sorted by
    /// family, so a family's are one run of the list.
    pub fn shapes_on<'a>(
        &'a self,
        vae: &str,
        conv_backend: ConvBackend,
        allocator: Allocator,
    ) -> impl Iterator<Item = &'a TracedShape> + use<'a> {
        let lo = self.shapes.partition_point(|s| s.vae.as_str() < vae);
        let hi = lo + self.shapes[lo..].partition_point(|s| s.vae.as_str() == vae);
        let family = &self.shapes[lo..hi];
        let on = replay_for(ReplayPlatform { conv_backend, allocator }, |p| family.iter().any(|s| s.replayed_on == p));
        family.iter().filter(move |s| s.replayed_on == on)
    }
}

/// The replay a family's shapes are read through on platform `own`: its
/// own where the family `has` shapes drawn through it, else the reference
/// platform's, else the live peak's (None). The fit and the runtime choose
/// by this one rule.
pub fn replay_for(own: ReplayPlatform, has: impl Fn(Option<ReplayPlatform>) -> bool) -> Option<ReplayPlatform> {
    [Some(own), Some(REFERENCE)].into_iter().find(|p| has(*p)).flatten()
}

impl TracedShape {
    /// Traced bytes at `x`: `max(0, ceil(slope × x + base))` (None: overflow
    /// or an unreadable fraction).
    pub fn at(&self, x: u64) -> Option<u64> {
        let slope = Ratio::parse_fraction(&self.slope)?;
        let base = Ratio::parse_fraction(&self.base)?;
        let v = slope.checked_mul(Ratio::int(i128::from(x))).and_then(|v| v.checked_add(base)).ok()?;
        u64::try_from(v.ceil().max(0)).ok()
    }

    /// Whether it is the clip (or image) shape of this query's key: same
    /// family, op, dtype and tiles.
    pub fn prices(&self, vae: &str, op: Op, dtype: Dtype, tile: u32, temporal_tile: Option<u32>) -> bool {
        !self.one_frame
            && self.vae == vae
            && self.op == op
            && self.dtype == dtype
            && self.tile == tile
            && self.temporal_tile == temporal_tile
    }

    /// Whether it is the one-frame shape of this family, op, dtype and
    /// spatial tile (one frame has no temporal walk).
    pub fn prices_one_frame(&self, vae: &str, op: Op, dtype: Dtype, tile: u32) -> bool {
        self.one_frame && self.vae == vae && self.op == op && self.dtype == dtype && self.tile == tile
    }
}

/// A calibration's name in answers and in `slope_from`:
/// `class/op/tile/backend/allocator/os/dtype`. One spelling for the
/// shipped calibration and the fit that makes it.
pub fn calibration_id(
    class: ArchClass,
    op: Op,
    tile: u32,
    conv_backend: ConvBackend,
    allocator: Allocator,
    os: Os,
    dtype: Dtype,
) -> String {
    format!("{class}/{op}/{tile}/{conv_backend}/{allocator}/{os}/{dtype}")
}

/// Demand over traced bytes for one architecture class on one platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    pub class: ArchClass,
    pub conv_backend: ConvBackend,
    pub allocator: Allocator,
    pub os: Os,
    pub op: Op,
    pub dtype: Dtype,
    /// The tile of the points it was fitted on (0: untiled, and every video point).
    pub tile: u32,
    /// Bytes of demand per traced byte, two decimals, rounded up (margin included).
    pub slope: String,
    /// MiB, rounded up (margin included).
    pub base_mib: u64,
    /// The families whose measured points it was fitted on, sorted.
    pub families: Vec<String>,
    /// Measured points behind it.
    pub points: usize,
    /// Distinct traced sizes among them.
    pub sizes: usize,
    /// Where the points span fewer distinct traced sizes than the policy's
    /// `min_sizes`, they cannot part a slope from a constant: the slope is
    /// then this fitted calibration's (`class/op/tile/backend/allocator/os/dtype`,
    /// the most cautious of the nearest ones) and `base_mib` the least that
    /// covers every point with the margin. Absent: fitted on its own points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slope_from: Option<String>,
    /// The points that pin the envelope (with `slope_from`: the base).
    pub support: Vec<String>,
}

impl Calibration {
    /// The slope in hundredths.
    pub fn slope_centi(&self) -> Option<u64> {
        let r = crate::exact::parse_decimal(&self.slope).ok()?.checked_mul(Ratio::int(100)).ok()?;
        (r.den() == 1).then(|| u64::try_from(r.num()).ok()).flatten()
    }

    /// The reservation for `traced` bytes.
    pub fn price(&self, traced: u64) -> Result<u64, Overflow> {
        super::reserve_bytes(self.slope_centi().ok_or(Overflow)?, self.base_mib, traced)
    }

    /// Its name in answers: `class/op/tile/backend/allocator/os/dtype`.
    pub fn id(&self) -> String {
        calibration_id(self.class, self.op, self.tile, self.conv_backend, self.allocator, self.os, self.dtype)
    }

    /// Whether it holds on this platform: its backend and allocator, and
    /// its OS or one measured without an OS.
    pub fn holds_on(&self, here: crate::vocab::Platform) -> bool {
        self.conv_backend == here.conv_backend
            && self.allocator == here.allocator
            && (self.os == here.os || self.os == Os::Any)
    }
}

/// How a runtime prices by the traced rule, in words (shipped as `formula`).
pub const TRACED_FORMULA: &str = "a family with no measured line on the query's platform: traced = the family's \
    shape (op, dtype, tile; temporal tile for video) at the query's pixels or working set, max(0, ceil(slope × x + \
    base)); reserve = ceil(slope_centi × traced / 100) + base_mib × 1048576 under its class's calibration for the op \
    and tile (a tile the class has no calibration at: the untiled one) on the query's platform (backend, allocator, \
    and its OS or none) in the query's dtype, else the highest of this platform's other dtypes and every platform's \
    in the query's dtype, else the highest of the class's; plus a video run's clip bytes and cast growth. A floor under the unmeasured rule's guess: \
    never below a line of the same family; a host's estimate stays a floor under it, and so does the legacy value \
    unless `lifts_legacy_floor` says why not";
