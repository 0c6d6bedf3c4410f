//! The rules the shipped file carries beside its lines, as a runtime reads
//! them: which platforms keep their OS, each platform's default allocator,
//! the legacy estimator, the derived-tile hosts and the attention phase
//! (docs/DESIGN.md, "Pricing"). The policy declares them; the coefficients
//! file ships them; pricing reads them from the file.

use crate::exact::Ratio;
use crate::vocab::{Allocator, ConvBackend, Dtype, Os};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The one unmeasured-platform rule vramfit implements (docs/DESIGN.md, "Pricing").
pub const UNMEASURED_RULE: &str = "max-measured-with-legacy-floor";

/// A `(conv_backend, allocator)` pair whose lines keep their OS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OsSpecific {
    pub conv_backend: ConvBackend,
    /// `None` means every allocator of that backend.
    pub allocator: Option<Allocator>,
}

/// The allocator a platform runs when nothing is configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AllocatorDefault {
    pub conv_backend: ConvBackend,
    pub os: Os,
    pub allocator: Allocator,
}

/// The k constants of the v1 estimator for one backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LegacyK {
    pub decode: u64,
    pub encode: u64,
}

/// The previous estimator (docs/DESIGN.md, "The legacy estimator"): the floor for unmeasured platforms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Legacy {
    pub k: BTreeMap<ConvBackend, LegacyK>,
    /// Backend whose k a backend without its own entry uses.
    pub fallback_backend: ConvBackend,
    pub elem_bytes: BTreeMap<Dtype, u64>,
    /// Multiplier for a tiled decode/encode (`tile² × E × k × factor`).
    pub tile_factor: Ratio,
    /// Extra MiB per family when it runs fp32 (v1: `sd` adds 250).
    pub fp32_extra_mib: BTreeMap<String, u64>,
}

/// How a tile with no measured line of its own is priced from the
/// untiled line of its platform (docs/DESIGN.md, "Pricing", step 3):
/// one tile on that line, plus `copies` of the 3-channel output that the
/// host keeps on the GPU while it blends the tiles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Tiling {
    /// The host a query means when it names none.
    pub default_host: String,
    /// Each host's output copies, by the name a query gives (`--host`).
    pub hosts: BTreeMap<String, TilingHost>,
    /// The rule in words, for a runtime reading the file alone.
    pub formula: String,
}

/// One host's tiled decode: how many copies of the output it holds on the GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TilingHost {
    /// Copies of the `3 × W × H × batch` output, exact decimal.
    pub copies: crate::exact::Ratio,
    /// Where the figure comes from.
    pub source: String,
}

impl TilingHost {
    /// `ceil(copies × 3 × element bytes × pixels)`: the decoded output's
    /// copies this host holds on the GPU (None: too large to price).
    pub fn copies_bytes(&self, dtype: Dtype, pixels: u64) -> Option<u64> {
        let num = u128::try_from(self.copies.num()).ok()?;
        let den = u128::try_from(self.copies.den()).ok()?;
        let product = num.checked_mul(3 * u128::from(dtype.elem_bytes()))?.checked_mul(u128::from(pixels))?;
        u64::try_from(crate::exact::ceil_div_u128(product, den)).ok()
    }
}

/// Where PyTorch's SDPA runs the VAE mid-block's attention on the math
/// kernel (a fused kernel refuses its head size, or the platform has none),
/// the S × S scores are materialised: a decode's peak is then the larger of
/// the fitted line and this phase (docs/DESIGN.md, "Pricing", step 6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Attention {
    /// Tensors of `channels × S × element bytes` the mid-block holds beside
    /// the scores (its input, the normalised copy, q, k, v, the output).
    pub held_tensors: u64,
    /// The math-kernel platforms, by conv backend.
    pub platforms: Vec<AttentionPlatform>,
    /// The phase in words, for a runtime reading the file alone.
    pub formula: String,
}

/// One math-kernel platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AttentionPlatform {
    pub conv_backend: ConvBackend,
    /// Reserved bytes per attention-score element, exact decimal.
    pub bytes_per_score: crate::exact::Ratio,
    /// Score elements of one attention matrix (one item, one head) at which
    /// the platform's SDPA silently returns wrong output (null: none known).
    pub wrong_output_at: Option<u64>,
    /// Where the figure comes from.
    pub source: String,
}

impl Attention {
    /// The platform entry of a conv backend, if its SDPA runs the math kernel.
    pub fn on(&self, backend: ConvBackend) -> Option<&AttentionPlatform> {
        self.platforms.iter().find(|p| p.conv_backend == backend)
    }
}

impl AttentionPlatform {
    /// The phase's two terms, `(scores, held)` bytes: `ceil(bytes_per_score ×
    /// batch × heads × S²)` and `held_tensors × batch × heads × head_dim × S ×
    /// element bytes` (None: too large to price).
    pub fn phase(
        &self,
        block: &crate::registry::MidBlock,
        held_tensors: u64,
        dtype: Dtype,
        sequence: u64,
        batch: u64,
    ) -> Option<(u64, u64)> {
        let num = u128::try_from(self.bytes_per_score.num()).ok()?;
        let den = u128::try_from(self.bytes_per_score.den()).ok()?;
        let elements = u128::from(sequence)
            .checked_mul(u128::from(sequence))?
            .checked_mul(u128::from(batch))?
            .checked_mul(u128::from(block.heads))?;
        let scores = u64::try_from(crate::exact::ceil_div_u128(num.checked_mul(elements)?, den)).ok()?;
        let held = [held_tensors, batch, block.heads, block.head_dim, sequence, dtype.elem_bytes()]
            .into_iter()
            .try_fold(1u64, u64::checked_mul)?;
        Some((scores, held))
    }
}

/// The attention phase in words (shipped in the coefficients file).
pub const ATTENTION_FORMULA: &str = "on a listed conv backend, for a family with a mid-block attention: S = \
     ceil(w / latent_factor) × ceil(h / latent_factor) over the image, or over one tile (w = min(T, width), h = \
     min(T, height)); phase = ceil(bytes_per_score × batch × heads × S²) + held_tensors × batch × heads × head_dim × \
     S × element bytes, plus cast growth; the price is the larger of this phase and the line's price";

/// The derived-tile rule in words (shipped in the coefficients file).
pub const DERIVED_TILE_FORMULA: &str = "a tile T with no line of its own on a platform whose untiled line exists: \
     the untiled line at min(T, width) × min(T, height) × batch pixels, plus ceil(copies × 3 × element bytes × \
     width × height × batch) with the host's copies and the run dtype's element bytes (fp16/bf16 2, fp32 4)";

/// Whether lines of this `(conv_backend, allocator)` pair keep their OS.
pub fn is_os_specific(pairs: &[OsSpecific], backend: ConvBackend, allocator: Allocator) -> bool {
    pairs.iter().any(|o| o.conv_backend == backend && o.allocator.is_none_or(|a| a == allocator))
}
