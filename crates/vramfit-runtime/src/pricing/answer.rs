//! A query and its answer: what is asked (`Query`, with `Choice` for
//! what detection may decide), what comes back (`Price` with its `Rule`,
//! `Quote` for the numbers alone), and the `Pricer` that answers. The
//! rules that compute an answer live in the parent module.

use super::platform::{AllocatorWhy, Detected, EnvSnapshot};
use crate::contract::LineKey;
use crate::error::Result;
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
use serde::Serialize;

/// A choice the user may leave to detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice<T> {
    Auto,
    Given(T),
}

/// One question: what would this run reserve?
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// A family (`sd`) or a model name (`sdxl`).
    pub vae: crate::text::Text,
    pub op: Op,
    /// Tile edge; 0 = untiled.
    pub tile: u32,
    pub width: u64,
    pub height: u64,
    pub batch: u64,
    /// Frames of the clip (1: an image; above 1 only for a video family).
    pub frames: u64,
    /// The temporal tile of a video decode, frames (None: the family's
    /// default; Some(0): every frame at once). Image families take none.
    pub temporal_tile: Option<u32>,
    /// The dtype the VAE runs in, when given.
    pub dtype: Option<Dtype>,
    /// The dtype the weights are loaded in (default: the run dtype).
    pub loaded_dtype: Option<Dtype>,
    /// The SD nodes' `fp32` switch (family `sd` only).
    pub fp32: Option<bool>,
    pub conv_backend: ConvBackend,
    pub allocator: Choice<Allocator>,
    pub os: Choice<Os>,
    /// The host whose tiled decode a derived tile prices (`--host`; None:
    /// the coefficients' default host).
    pub host: Option<String>,
    /// The host has already run this op in this process (`--warm`): the
    /// platform's first-use term is left out (docs/fit.md, "First use").
    pub warm: bool,
}

impl Query {
    /// A line key's own query at a size, with allocator and OS given and no
    /// cast: how checks price a point or a line.
    pub fn at_key(key: &LineKey, width: u64, height: u64, batch: u64) -> Query {
        Query {
            vae: key.vae.clone(),
            op: key.op,
            tile: key.tile,
            width,
            height,
            batch,
            frames: 1,
            temporal_tile: key.temporal_tile,
            dtype: Some(key.dtype),
            loaded_dtype: None,
            fp32: None,
            conv_backend: key.conv_backend,
            allocator: Choice::Given(key.allocator),
            os: Choice::Given(key.os),
            host: None,
            // A check restating a rule prices the op's own demand.
            warm: true,
        }
    }
}

/// Declares `Rule` from one table: each rule's variant (its JSON name is
/// the variant in kebab case), the words an answer shows (`as_str`), and
/// its short name in a diff's table (`short`). Every list of rules (`ALL`)
/// and every spelling comes from this one table.
macro_rules! rules {
    ($($(#[doc = $doc:expr])* $name:ident => $words:literal, $short:literal;)*) => {
        /// Which rule set the price.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
        #[serde(rename_all = "kebab-case")]
        pub enum Rule {
            $($(#[doc = $doc])* $name,)*
        }

        impl Rule {
            /// Every rule, in the order of the table.
            pub const ALL: &'static [Rule] = &[$(Rule::$name,)*];

            /// The words an answer shows for the rule.
            pub fn as_str(&self) -> &'static str {
                match self {
                    $(Rule::$name => $words,)*
                }
            }

            /// The rule's short name in a table of before and after.
            pub fn short(&self) -> &'static str {
                match self {
                    $(Rule::$name => $short,)*
                }
            }
        }
    };
}

rules! {
    /// The query's own fitted line.
    FittedLine => "fitted line", "fitted";
    /// The query's own carried line.
    CarriedLine => "carried line", "carried";
    /// No line for the key: the largest same-(vae, op, tile, dtype) line.
    UnmeasuredRule => "unmeasured rule", "unmeasured";
    /// A tile with no line of its own on a platform whose untiled line
    /// exists: that line at one tile, plus the host's copies of the output.
    DerivedTile => "derived tile", "derived tile";
    /// On a platform whose SDPA runs the math kernel, the mid-block's S × S
    /// attention scores need more than the rule that priced the line phase
    /// (in `attention.line_rule`): the attention phase sets the price.
    AttentionPhase => "attention phase", "attention phase";
    /// The key keeps its OS (an OS-specific backend), and the line of the
    /// same platform measured without a published OS prices it: that line
    /// is a lower bound for every OS, so it prices a key with no line of its
    /// own, and one whose own line lies below it.
    AnyOsLine => "line measured without an OS", "OS-less line";
    /// No line, and the legacy estimate was higher than any line (or no line exists).
    LegacyFloor => "legacy floor", "legacy floor";
    /// A video key with no line of its own, where a host's published
    /// estimate (declared in the policy's `[video]`) was higher than any
    /// line of the same family, op, temporal tile and dtype.
    VideoEstimate => "video estimate", "video estimate";
    /// `--legacy`: the v1 estimator alone.
    Legacy => "legacy estimator", "legacy";
    /// A smaller request that this one contains (a smaller tile, the image
    /// shrunk to one tile, a shorter clip; `lifted` names it) is priced
    /// higher by its own rule: a larger request never reserves less, so this
    /// one takes that price (docs/DESIGN.md, "Monotone composition").
    MonotoneFloor => "monotone floor", "monotone floor";
    /// A tile no line measured, where the unmeasured rule's or the legacy
    /// floor's guess was above what a measured line of the same platform
    /// prices a larger tile (or no tile) of the same image: a run on a
    /// smaller tile holds no more than one on a larger tile, so the lowest
    /// such line sets it (`priced_by`).
    MeasuredCap => "measured cap", "measured cap";
    /// No measured line on the query's platform: the family's traced shape
    /// at the query's size, scaled by its architecture class's calibration
    /// on the platform (`traced` names both); a floor under the unmeasured
    /// rule's guess, floored in turn by a host's estimate and the legacy value.
    Traced => "traced rule", "traced";
}

impl Rule {
    /// Whether this rule rests on a measured line at the query's own key
    /// (what `--strict` accepts, inside the line's measured range).
    pub fn is_measured_line(&self) -> bool {
        matches!(self, Rule::FittedLine | Rule::CarriedLine | Rule::AnyOsLine)
    }
}

/// The smaller request whose price a query takes (rule `monotone-floor`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Lifted {
    /// The smaller request: its width, pixels.
    pub width: u64,
    /// Its height, pixels.
    pub height: u64,
    /// Its frames (1 for an image).
    pub frames: u64,
    /// Its spatial tile, pixels (0: untiled).
    pub tile: u32,
    /// Its temporal tile, frames (null: an image family; 0: the whole clip).
    pub temporal_tile: Option<u32>,
    /// The rule that priced it.
    pub rule: Rule,
    /// The line that set its price (null: an estimate or the legacy floor).
    pub priced_by: Option<LineKey>,
    /// Its price, bytes: this answer's.
    pub bytes: u64,
    /// Whether its price extrapolates the line that set it.
    pub extrapolated: bool,
    /// The rule that priced the query itself.
    pub own_rule: Rule,
    /// What that rule priced the query itself at, bytes (less than `bytes`).
    pub own_bytes: u64,
}

/// A shipped slope in hundredths of a byte per pixel, shown (and written
/// as JSON) as the decimal with two places; formatted only when shown, so
/// the 10^6 pricings of `verify` format none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slope(pub u64);

impl std::fmt::Display for Slope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::contract::slope_text(self.0))
    }
}

/// In a schema: the decimal with two places.
impl schemars::JsonSchema for Slope {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Slope".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": "^[0-9]+\\.[0-9]{2}$" })
    }
}

impl Serialize for Slope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The answer, with everything needed to explain it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Price {
    /// The reservation, bytes.
    pub bytes: u64,
    /// The reservation in MiB, rounded up.
    pub mib: u64,
    /// Which rule priced it.
    pub rule: Rule,
    /// The query's key (resolved family, run dtype, detected allocator and OS).
    pub line: LineKey,
    /// The line whose formula set the price (for the unmeasured rule: the largest one).
    pub priced_by: Option<LineKey>,
    /// That line's slope, B/px, two decimals.
    pub slope: Option<Slope>,
    /// That line's base, MiB.
    pub base_mib: Option<u64>,
    /// `width × height × batch`.
    pub pixels: u64,
    /// The line's price before cast growth, bytes.
    pub line_bytes: Option<u64>,
    /// Weight growth of a cast (loaded narrower than run), bytes.
    pub weight_growth_bytes: u64,
    /// The legacy estimate, where it was consulted.
    pub legacy_bytes: Option<u64>,
    /// Whether `pixels` lies outside the pricing line's measured size range.
    pub extrapolated: bool,
    /// The pricing line's measured size range, pixels.
    pub size_range: Option<[u64; 2]>,
    /// The devices the pricing line's points were measured on (empty: no
    /// line priced it, or a carried line with no points).
    pub measured_on: Vec<String>,
    /// The dtype the VAE runs in and why.
    pub run_dtype: Detected<Dtype>,
    /// The dtype the weights are loaded in.
    pub loaded_dtype: Dtype,
    /// The allocator and where it came from.
    pub allocator: Detected<Allocator>,
    /// The OS and where it came from.
    pub os: Detected<Os>,
    /// The tile asked for when it was not the tile priced: a tile at least
    /// as large as both sides of the image does nothing, so the untiled key
    /// prices it (null otherwise).
    pub tile_asked: Option<u32>,
    /// The two terms of a tile priced from an untiled line (the derived
    /// tile rule, or the unmeasured rule when its largest candidate was one).
    pub tiled: Option<TileTerms>,
    /// The attention phase on a math-kernel platform (null elsewhere, and
    /// for a family without a mid-block attention).
    pub attention: Option<AttentionTerms>,
    /// A video family's terms: frames, tiles, working set, clip copies and
    /// the host estimate consulted (null for an image family).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub video: Option<VideoTerms>,
    /// The traced rule's terms, where it was consulted (absent elsewhere).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traced: Option<TracedTerms>,
    /// The pricing line's price past its largest measured size, grown as
    /// its family's trace grows, where that set `line_bytes` (absent
    /// elsewhere).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub follows_trace: Option<FollowsTrace>,
    /// The smaller request whose higher price this one takes (rule
    /// `monotone-floor`; absent when the query's own rule set the price).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifted: Option<Lifted>,
    /// What the rules priced the op itself at, bytes: `bytes` less the
    /// first-use term where it is included.
    pub op_bytes: u64,
    /// The platform's first use (docs/fit.md, "First use"): added once by
    /// default, left out for a warm host (null: none known for the backend).
    pub first_use: Option<FirstUseTerm>,
    /// Warnings a user should read (extrapolation, …).
    pub warnings: Vec<String>,
}

/// The first-use term of an answer: what a fresh process's first run of
/// the op adds on its platform (the CUDA libraries' kernels).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FirstUseTerm {
    /// The platform it was declared for: `conv_backend/allocator/os`.
    pub declared_for: String,
    /// Whether that is the query's own platform or a borrowed one.
    pub matched: crate::contract::first_use::FirstUseMatch,
    /// Declared, MiB.
    pub mib: u64,
    /// The same in bytes.
    pub bytes: u64,
    /// Whether `bytes` adds it (false: `--warm`).
    pub included: bool,
    /// Where the figure comes from.
    pub source: String,
}

/// How a video run was priced: a line over one spatio-temporal tile's
/// working set, plus the clip copies (docs/DESIGN.md, "Video").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct VideoTerms {
    /// Frames of the clip.
    pub frames: u64,
    /// Spatial tile edge the run uses, pixels (0: untiled).
    pub tile: u32,
    /// Temporal tile, frames (0: the whole clip at once, or a causal walk).
    pub temporal_tile: u32,
    /// How the family's decoder walks time (`tiles`, `causal`, `all`).
    pub walk: crate::registry::Walk,
    /// Output frames per latent frame: the step a temporal tile takes.
    pub temporal_compression: u64,
    /// Frames one working set spans (the temporal tile or one causal step, clamped to the clip).
    pub working_frames: u64,
    /// `min(T, W) × min(T, H) × working frames × batch`: where the line is priced.
    pub working_set: u64,
    /// Copies of the clip, exact decimal.
    pub clip_copies: String,
    /// `ceil(clip copies × 3 × element bytes × W × H × F × batch)`, bytes.
    pub clip_bytes: u64,
    /// The largest applicable host estimate, where one was consulted.
    pub estimate: Option<EstimateTerm>,
}

/// A measured line past its largest measured size where its family's
/// trace grows faster (docs/traced.md, "Past the measured range"):
/// `bytes = ceil(line_bytes_at_end × traced_at / traced_at_end)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FollowsTrace {
    /// The shape followed: `vae/op/tile/dtype`.
    pub shape: String,
    /// The line's largest measured size (pixels, or a video working set).
    pub measured_to: u64,
    /// The line's price there, bytes.
    pub line_bytes_at_end: u64,
    /// The shape's traced bytes there.
    pub traced_at_end: u64,
    /// The shape's traced bytes where the line is priced.
    pub traced_at: u64,
    /// The line's price here, bytes (above its formula's).
    pub bytes: u64,
}

/// How the traced rule priced a query, or what it offered where it was
/// consulted (docs/traced.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TracedTerms {
    /// Where the shape was evaluated: pixels, or a video run's working set.
    pub at: u64,
    pub unit: crate::contract::traced::ShapeUnit,
    /// The family's traced bytes there.
    pub traced_bytes: u64,
    /// The calibration's price of them (plus `tile_copies_bytes`), bytes, before clip bytes and cast growth.
    pub bytes: u64,
    /// Whether `at` lies outside the traced range.
    pub extrapolated: bool,
    /// The shape: `vae/op/tile/dtype` (a video shape's tile: `Nf`, its temporal tile).
    pub shape: String,
    /// Its traced bytes per unit, `num/den`.
    pub shape_slope: String,
    /// Its traced bytes at 0, `num/den`.
    pub shape_base: String,
    /// The traced range of the shape.
    pub size_range: [u64; 2],
    /// The calibration: `class/op/tile/backend/allocator/os/dtype`.
    pub calibration: String,
    /// Bytes of demand per traced byte, two decimals (margin included).
    pub slope: String,
    /// MiB (margin included).
    pub base_mib: u64,
    /// The families it was calibrated on.
    pub families: Vec<String>,
    /// The measured points it was calibrated on.
    pub points: usize,
    /// Where those points span too few sizes to fit a slope: the fitted
    /// calibration whose slope it takes (its base covers the points).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slope_from: Option<String>,
    /// A tile with no traced shape of its own: the host's output copies
    /// added to the untiled shape's price at one tile (`at`), bytes (0
    /// otherwise; included in `bytes`).
    pub tile_copies_bytes: u64,
    /// The traced margin it carries, exact decimal.
    pub margin: String,
}

/// One host's published estimate, as consulted for a video key with no line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct EstimateTerm {
    /// The host whose estimator it is.
    pub host: String,
    /// Its bytes for this run.
    pub bytes: u64,
    /// Where it is published.
    pub source: String,
}

/// The two phases of a decode on a math-kernel platform: the price is the
/// larger (a decode's peak is its largest phase, not their sum).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct AttentionTerms {
    /// Reserved bytes per score element on this platform, exact decimal.
    pub bytes_per_score: String,
    /// Where that figure comes from.
    pub source: String,
    /// `S`: attention positions over the image, or over one tile.
    pub sequence: u64,
    /// Attention heads of the family's mid-block.
    pub heads: u64,
    /// `ceil(bytes_per_score × batch × heads × S²)`.
    pub score_bytes: u64,
    /// What the mid-block holds beside the scores: `held_tensors × batch × heads × head_dim × S × element bytes`.
    pub held_bytes: u64,
    /// Scores + held + cast growth.
    pub phase_bytes: u64,
    /// The line phase: what `line_rule` priced (line, copies and cast growth, or the legacy floor).
    pub line_phase_bytes: u64,
    /// The rule that priced the line phase.
    pub line_rule: Rule,
    /// Whether one attention matrix (S², one item, one head) reaches the
    /// number of elements where this platform silently returns wrong output.
    pub wrong_output: bool,
}

/// A tile priced from an untiled line: one tile's activations on the line,
/// plus the decoded output the host keeps while it blends the tiles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TileTerms {
    /// The host whose copies priced the output term, and why that host.
    pub host: Detected<String>,
    /// The host's copies of the output, exact decimal.
    pub copies: String,
    /// Where the copies figure comes from.
    pub copies_source: String,
    /// `min(tile, width) × min(tile, height) × batch`: where the untiled line was priced.
    pub tile_pixels: u64,
    /// The untiled line at `tile_pixels`, bytes.
    pub tile_bytes: u64,
    /// `ceil(copies × 3 × element bytes × width × height × batch)`, bytes.
    pub copies_bytes: u64,
}

impl Price {
    /// The rule that priced the query itself and its bytes (the answer's own
    /// unless a smaller request lifted it).
    pub fn own(&self) -> (Rule, u64) {
        self.lifted.as_ref().map_or((self.rule, self.bytes), |l| (l.own_rule, l.own_bytes))
    }

    /// The spatial tile the answer priced (a video key holds 0: its tile is
    /// in the working set).
    pub fn spatial_tile(&self) -> u32 {
        self.video.as_ref().map_or(self.line.tile, |v| v.tile)
    }

    /// The temporal tile a video answer priced (None: an image family, or
    /// a causal decoder, which takes none).
    pub fn temporal_tile(&self) -> Option<u32> {
        self.video.as_ref().filter(|v| v.walk != crate::registry::Walk::Causal).map(|v| v.temporal_tile)
    }

    /// Why this answer is an estimate rather than a measured line at a
    /// measured size: the unmeasured rule, the legacy floor or the legacy
    /// estimator, or a size outside the line's measured range. Empty when the
    /// answer rests on a fitted or carried line inside its range. This is
    /// what `--strict` refuses.
    pub fn estimates(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(l) = &self.lifted {
            if !l.rule.is_measured_line() || l.extrapolated {
                out.push(format!(
                    "{} takes the price of a smaller request ({}x{}, tile {}) set by the {}{}",
                    self.line,
                    l.width,
                    l.height,
                    l.tile,
                    l.rule.as_str(),
                    if l.extrapolated { " outside its line's measured range" } else { "" }
                ));
            }
            return out;
        }
        match self.rule {
            Rule::FittedLine | Rule::CarriedLine | Rule::AnyOsLine | Rule::MonotoneFloor => {}
            Rule::UnmeasuredRule | Rule::LegacyFloor => {
                out.push(format!("{} is priced by the {}: no line was measured for it", self.line, self.rule.as_str()))
            }
            Rule::AttentionPhase => out.push(format!(
                "{} is priced by the attention phase: a declared bytes-per-score figure, not a measured decode",
                self.line
            )),
            Rule::MeasuredCap => out.push(format!(
                "{} has no line of its own: priced by its platform's line of a larger tile (or of no tile)",
                self.line
            )),
            Rule::DerivedTile => out.push(format!(
                "{} has no line of its own: priced by the derived tile rule from its untiled line",
                self.line
            )),
            Rule::Legacy => out.push(format!("{} is priced by the legacy estimator", self.line)),
            Rule::VideoEstimate => out.push(format!(
                "{} is priced by a host's published video estimate: no line was measured for it",
                self.line
            )),
            Rule::Traced => out.push(format!(
                "{} is priced by the traced rule: its architecture's trace scaled by other families' measurements, \
                 no line was measured for it on this platform",
                self.line
            )),
        }
        if self.extrapolated {
            out.push(format!("{} px lies outside the measured range of the line that priced it", self.pixels));
        }
        out
    }
}

/// The answer of `reserve`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ReserveReport {
    #[serde(flatten)]
    pub price: Price,
    /// Which coefficients priced it.
    pub coefficients: String,
}

/// Prices a query. Verify takes this as a parameter so a test can hand it a
/// deliberately broken pricer and see the check catch it. `Sync`: verify
/// prices 10^6 points on every core.
pub trait Pricer: Sync {
    fn price(&self, q: &Query, env: &EnvSnapshot) -> Result<Price>;

    /// The reservation, the rule that set it and the query's key, without
    /// the explanation (no strings are made): what `verify`'s thousands of
    /// pricings compare. The default answers through [`Pricer::price`], so
    /// a pricer that implements only `price` is audited exactly as before;
    /// the real one shares every number with `price` (a test compares the
    /// two over every line, rule, dtype, batch, allocator and OS).
    fn quote(&self, q: &Query, env: &EnvSnapshot) -> Result<Quote> {
        self.price(q, env).map(|p| Quote { bytes: p.bytes, rule: p.rule, own: p.own(), line: p.line })
    }
}

/// The numbers of an answer (see [`Pricer::quote`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quote {
    /// The reservation: the larger of the query's own rule and the smaller
    /// requests it contains.
    pub bytes: u64,
    /// The rule that set it (`MonotoneFloor` when a smaller request did).
    pub rule: Rule,
    pub line: LineKey,
    /// The query's own rule and its bytes (what a check restating that
    /// rule compares; equal to `(rule, bytes)` unless lifted).
    pub own: (Rule, u64),
}

/// A query's key and how each part of it was decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub key: LineKey,
    pub run: Detected<Dtype>,
    pub allocator: ChosenAllocator,
    pub os: Detected<Os>,
}

impl Resolved {
    /// The platform the query runs on: its backend, the allocator chosen
    /// and the OS detected (not the key's, which drops an OS the platform
    /// does not depend on).
    pub fn platform(&self) -> crate::vocab::Platform {
        crate::vocab::Platform::new(self.key.conv_backend, self.allocator.value, self.os.value)
    }
}

/// The allocator and why: given by flag, or detected. The reason is made
/// into words only for an answer that is shown ([`ChosenAllocator::detected`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChosenAllocator {
    pub value: Allocator,
    /// None: given by flag.
    pub why: Option<AllocatorWhy>,
}

impl ChosenAllocator {
    /// The allocator with its reason in words.
    pub fn detected(&self) -> Detected<Allocator> {
        let from = self.why.as_ref().map_or("flag".into(), AllocatorWhy::text);
        Detected { value: self.value, from }
    }
}
