//! What the policy declares about video VAEs (docs/DESIGN.md, "Video"):
//! how many copies of the clip a decode or an encode holds beside the
//! working set, and each host's published estimate, the floor of a video
//! key no line has measured.
//!
//! A video point's demand is priced as a line over its working set (one
//! spatio-temporal tile's pixels × frames) plus the clip copies; this
//! module owns both terms' arithmetic so `fit`, `verify` and the runtime
//! pricer compute them the one way.

use crate::exact::{ceil_div_u128, Ratio, MIB};
use crate::registry::{VideoFacts, Walk};
use crate::vocab::{Dtype, Op};
use serde::{Deserialize, Serialize};

/// The `[video]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VideoPolicy {
    /// Copies of the `3 × W × H × F × batch` clip a decode holds beside the
    /// working set (the decoded clip it returns, and any assembly copy).
    pub decode_clip_copies: Ratio,
    /// Copies of the input clip an encode holds.
    pub encode_clip_copies: Ratio,
    /// Why those copies.
    pub reason: String,
    /// Each host's published estimate: the floor of an unmeasured video key.
    pub estimates: Vec<Estimate>,
    /// The pricing of a video key in words, for a runtime reading the file alone.
    pub formula: String,
}

/// How many frames an estimate's working term counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CountedFrames {
    /// One frame, whatever the clip (a causal decoder's per-step figure).
    One,
    /// Every frame of the clip.
    Clip,
    /// The clip's latent frames, `(F − 1) / temporal + 1`.
    Latent,
    /// The temporal tile, not clamped to the clip (the whole clip when untiled in time).
    Tile,
}

impl CountedFrames {
    pub const ALL: &'static [CountedFrames] =
        &[CountedFrames::One, CountedFrames::Clip, CountedFrames::Latent, CountedFrames::Tile];

    pub fn as_str(&self) -> &'static str {
        match self {
            CountedFrames::One => "one",
            CountedFrames::Clip => "clip",
            CountedFrames::Latent => "latent",
            CountedFrames::Tile => "tile",
        }
    }
}

/// Which runs an estimate is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum When {
    Any,
    /// A run tiled in space or in time: a host's tiled path (InvokeAI's
    /// `tiled=True`) tiles both, a tile covering the frame being one tile.
    Tiled,
    /// A run without one, in space or in time: a host's untiled path
    /// (InvokeAI's `tiled=False`) runs the whole clip at once, so its
    /// figure counts every frame and says nothing of a run tiled in time.
    Untiled,
}

/// One host's published estimate for one family and op: `base + ceil(per_element
/// × element bytes × area × counted frames × batch × tile_factor) + ceil(clip_copies
/// × 3 × element bytes × W × H × F × batch)`, where area is one spatial tile
/// (`min(T, W) × min(T, H)`) or the frame, and `tile_factor` applies to a tiled run only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Estimate {
    pub vae: String,
    pub op: Op,
    /// The host whose estimator this is (`invokeai`, `comfyui`).
    pub host: String,
    pub base_mib: u64,
    /// Bytes per counted pixel-frame per element byte, exact decimal.
    pub per_element: Ratio,
    pub frames: CountedFrames,
    /// Counted frames are at least this many (0: no floor).
    pub min_frames: u64,
    /// Counted frames are at most this many (0: no cap).
    pub max_frames: u64,
    /// Applies to clips of at least this many frames (0: any).
    pub min_clip: u64,
    /// Applies to clips of at most this many frames (0: any).
    pub max_clip: u64,
    pub when: When,
    /// Multiplier of the working term when spatially tiled, exact decimal.
    pub tile_factor: Ratio,
    /// Copies of the clip, exact decimal.
    pub clip_copies: Ratio,
    /// Where the estimate is published.
    pub source: String,
}

/// A video run: what an estimate or a line needs to know of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub width: u64,
    pub height: u64,
    pub frames: u64,
    pub batch: u64,
    /// Spatial tile edge (0: untiled).
    pub tile: u32,
    /// Temporal tile the run uses (0: none; a causal walk: 0).
    pub temporal_tile: u32,
    pub dtype: Dtype,
}

/// The video pricing in words (shipped in the coefficients file).
pub const VIDEO_FORMULA: &str = "a video family's line is fitted and priced in working-set units: x = min(T, W) × \
     min(T, H) × working frames × batch (T = 0: the whole frame; working frames = the temporal tile, or the clip when \
     none, or one causal step's frames, each clamped to the clip), and the price is the line at x plus ceil(clip \
     copies × 3 × element bytes × W × H × F × batch); a video key no line has measured takes the larger of its family's \
     most demanding line of the same op (any temporal tile; the same dtype on any platform, or any dtype on this \
     platform) at its working set plus the clip copies, and the largest applicable host estimate";

/// `ceil(ratio × product of factors)` in u128; None on overflow.
pub fn ceil_times(ratio: Ratio, factors: &[u64]) -> Option<u64> {
    let num = u128::try_from(ratio.num()).ok()?;
    let den = u128::try_from(ratio.den()).ok()?;
    let product = factors.iter().try_fold(num, |acc, f| acc.checked_mul(u128::from(*f)))?;
    u64::try_from(ceil_div_u128(product, den)).ok()
}

impl Run {
    /// The spatial area one tile covers (the frame when untiled).
    pub fn area(&self) -> Option<u64> {
        let (w, h) = match self.tile {
            0 => (self.width, self.height),
            t => (u64::from(t).min(self.width), u64::from(t).min(self.height)),
        };
        w.checked_mul(h)
    }

    /// Pixels × frames of one working set (`registry::working_set`).
    pub fn working_set(&self, facts: &VideoFacts) -> Option<u64> {
        let frames = facts.working_frames(self.frames, self.temporal_tile);
        crate::registry::working_set(self.width, self.height, self.tile, frames, self.batch)
    }

    /// `ceil(copies × 3 × element bytes × W × H × F × batch)`.
    pub fn clip_bytes(&self, copies: Ratio) -> Option<u64> {
        ceil_times(copies, &[3, self.dtype.elem_bytes(), self.width, self.height, self.frames, self.batch])
    }
}

impl VideoPolicy {
    /// The clip copies of an op.
    pub fn clip_copies(&self, op: Op) -> Ratio {
        match op {
            Op::Decode => self.decode_clip_copies,
            Op::Encode => self.encode_clip_copies,
        }
    }

    /// The estimates that apply to a run of `family`/`op`, each with its bytes
    /// (None: too large to price), in declared order.
    pub fn estimates(&self, family: &str, op: Op, facts: &VideoFacts, run: Run) -> Vec<(&Estimate, Option<u64>)> {
        self.estimates
            .iter()
            .filter(|e| e.vae == family && e.op == op && e.applies(run))
            .map(|e| (e, e.bytes(facts, run)))
            .collect()
    }
}

impl Estimate {
    /// Whether the estimate is for this run's tiling and clip length.
    pub fn applies(&self, run: Run) -> bool {
        let tiling = match self.when {
            When::Any => true,
            When::Tiled => run.tile > 0 || run.temporal_tile > 0,
            When::Untiled => run.tile == 0 && run.temporal_tile == 0,
        };
        tiling && run.frames >= self.min_clip && (self.max_clip == 0 || run.frames <= self.max_clip)
    }

    /// Frames the working term counts.
    pub fn counted_frames(&self, facts: &VideoFacts, run: Run) -> u64 {
        let n = match self.frames {
            CountedFrames::One => 1,
            CountedFrames::Clip => run.frames,
            CountedFrames::Latent => (run.frames.saturating_sub(1)) / facts.temporal.max(1) + 1,
            CountedFrames::Tile => match (facts.walk, run.temporal_tile) {
                (Walk::Causal, _) => facts.frames.max(1),
                (_, 0) => run.frames,
                (_, t) => u64::from(t),
            },
        };
        let n = n.max(self.min_frames);
        if self.max_frames > 0 {
            n.min(self.max_frames)
        } else {
            n
        }
    }

    /// The estimate's bytes for a run (None: too large to price).
    pub fn bytes(&self, facts: &VideoFacts, run: Run) -> Option<u64> {
        let factor = if run.tile > 0 { self.tile_factor } else { Ratio::int(1) };
        let per = self.per_element.checked_mul(factor).ok()?;
        let working =
            ceil_times(per, &[run.dtype.elem_bytes(), run.area()?, self.counted_frames(facts, run), run.batch])?;
        self.base_mib.checked_mul(MIB)?.checked_add(working)?.checked_add(run.clip_bytes(self.clip_copies)?)
    }
}
