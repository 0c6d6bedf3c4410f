//! The VAE registry: which family a model name stands for, and how many
//! weights the family's VAE has. A vocabulary the points need to be read
//! (a CSV row names a model, the store keeps its family) and the pricer
//! needs for cast growth; the policy declares it, but it is not a rule of
//! the policy, so it lives on the ground floor where every layer can use it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One VAE family of the registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VaeEntry {
    /// Model names that resolve to this family.
    pub models: Vec<String>,
    /// Weight count, for the cast growth of a wider run dtype; unknown when absent.
    pub params: Option<u64>,
    /// The decoder mid-block's attention, where it has one: what sets the
    /// attention phase's sequence length on a math-kernel platform.
    #[serde(default)]
    pub attention: Option<MidBlock>,
    /// Whether the family's host nodes take the `fp32` switch (SD's nodes:
    /// false runs fp16, true fp32); other families name their dtype.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fp32_switch: bool,
    /// How a video VAE walks a clip (absent for an image VAE): a family
    /// with these facts is priced in working-set units (docs/DESIGN.md,
    /// "Video").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video: Option<VideoFacts>,
    /// Model names of this family that people also use for another VAE,
    /// each with the words that say which (`wan2.2`: the TI2V-5B VAE, while
    /// Wan 2.2 A14B ships Wan 2.1's): an answer asked by one of them warns.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ambiguous: BTreeMap<String, String>,
    /// The family's architecture class: which calibration scales its trace
    /// (docs/traced.md). Absent: not declared, so no traced price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<ArchClass>,
}

impl VaeEntry {
    /// The first figure of the entry a pricer divides or steps by that is
    /// out of its range, as (field under the family, value, what it must
    /// be): the loader of a shipped file refuses it with the file and the
    /// field named (the policy's reader has the same bounds as its types,
    /// `policy::document`), so no query ever divides by a zero read from a file.
    pub fn problem(&self) -> Option<(&'static str, u64, &'static str)> {
        let positive = "a divisor: at least 1";
        if let Some(a) = &self.attention {
            if a.heads == 0 {
                return Some(("attention.heads", a.heads, positive));
            }
            if a.head_dim == 0 {
                return Some(("attention.head_dim", a.head_dim, positive));
            }
            if !(1..=MAX_LATENT_FACTOR).contains(&a.latent_factor) {
                return Some(("attention.latent_factor", a.latent_factor, "a divisor: from 1 to 1024"));
            }
        }
        if let Some(v) = &self.video {
            if v.spatial == 0 {
                return Some(("video.spatial", v.spatial, positive));
            }
            if v.temporal == 0 {
                return Some(("video.temporal", v.temporal, positive));
            }
            if v.walk != Walk::All && v.frames == 0 {
                return Some(("video.frames", v.frames, "a 'tiles' or 'causal' walk steps by it: at least 1"));
            }
            if let Some([p, _]) = v.clips.filter(|[p, e]| *p == 0 || *e == 0) {
                let (field, value) = if p == 0 { ("video.clips[0]", p) } else { ("video.clips[1]", 0) };
                return Some((field, value, "a clip length's step and offset: at least 1"));
            }
        }
        None
    }
}

/// The longest family or model name a registry holds and a query may
/// give, bytes: the shipped names are under 40.
pub const MAX_NAME_BYTES: usize = 128;

/// The largest output pixels per latent pixel a mid-block may declare
/// (the policy's bound, `policy::document::MidBlockEntry`).
pub const MAX_LATENT_FACTOR: u64 = 1024;

/// An architecture class: what a trace's bytes scale by. The measured
/// ratios of demand to traced bytes differ by class (docs/traced.md), so
/// each class is calibrated on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ArchClass {
    /// 2-D AutoencoderKL-style: one image at a time, 2-D convolutions and a
    /// mid-block attention (SD, FLUX.1, FLUX.2, SD3, CogView4).
    #[serde(rename = "kl-2d")]
    Kl2d,
    /// 3-D causal: a frame axis with causal convolutions and feature caches
    /// (Qwen-Image, Wan, HunyuanVideo, CogVideoX, Mochi, LTX).
    #[serde(rename = "causal-3d")]
    Causal3d,
    /// Deep-compression autoencoders: 32x and more in space with
    /// linear-attention stages (Sana's DC-AE). No point is measured yet.
    #[serde(rename = "dc-ae")]
    DeepCompression,
    /// Tiny distilled decoders: a few plain convolutions (TAESD, TAEHV).
    /// No point is measured yet.
    #[serde(rename = "tiny")]
    Tiny,
    /// Wavelet tokenizers: a Haar patcher and unpatcher around causal 3-D
    /// blocks (Cosmos 1.0's CV8x8x8). No point is measured yet.
    #[serde(rename = "wavelet")]
    Wavelet,
    /// A transformer decoder over latent tokens behind a convolutional
    /// encoder (MiniMax-H3's 36-layer ViT decoder over its 16×16 latent
    /// grid). No point is measured yet.
    #[serde(rename = "vit")]
    Vit,
}

impl ArchClass {
    pub const ALL: [ArchClass; 6] = [
        ArchClass::Kl2d,
        ArchClass::Causal3d,
        ArchClass::DeepCompression,
        ArchClass::Tiny,
        ArchClass::Wavelet,
        ArchClass::Vit,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            ArchClass::Kl2d => "kl-2d",
            ArchClass::Causal3d => "causal-3d",
            ArchClass::DeepCompression => "dc-ae",
            ArchClass::Tiny => "tiny",
            ArchClass::Wavelet => "wavelet",
            ArchClass::Vit => "vit",
        }
    }
}

impl std::fmt::Display for ArchClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a video VAE's decoder walks time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Walk {
    /// Temporal tiles of `frames` frames (the host's default) that overlap
    /// by `overlap`; a query or point may name another temporal tile, and 0
    /// runs every frame at once.
    Tiles,
    /// One causal step at a time, with a cache of the previous step's
    /// features: `frames` output frames per step, whatever the clip's length.
    Causal,
    /// Every frame at once unless a temporal tile is named.
    All,
}

impl Walk {
    pub const ALL: &'static [Walk] = &[Walk::Tiles, Walk::Causal, Walk::All];

    pub fn as_str(&self) -> &'static str {
        match self {
            Walk::Tiles => "tiles",
            Walk::Causal => "causal",
            Walk::All => "all",
        }
    }
}

/// A video VAE's facts: compression, how its decoder walks time, and the
/// host's default tiles, each with its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VideoFacts {
    /// Output pixels per latent pixel along one side.
    pub spatial: u64,
    /// Output frames per latent frame.
    pub temporal: u64,
    /// How the decoder walks time.
    pub walk: Walk,
    /// `tiles`: the default temporal tile, frames; `causal`: output frames
    /// one step decodes; `all`: 0.
    pub frames: u64,
    /// Frames two neighbouring temporal tiles share (`tiles` only; informational).
    pub overlap: u64,
    /// The host's default spatial tile edge, pixels (0: untiled by default; informational).
    pub tile: u32,
    /// Where the facts come from.
    pub source: String,
    /// The clip lengths past one frame where they are not `temporal·n + 1`:
    /// `[p, e]` takes `p·n + e` frames, n ≥ 1 (MiniMax-H3's encoder takes
    /// 17-frame clips and drops 3 latent frames: 17n + 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clips: Option<[u64; 2]>,
    /// Whether the decoder runs on one frame (MiniMax-H3's makes no chunk of
    /// one latent frame: an image is encoded, never decoded).
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub decodes_single_frame: bool,
}

fn yes() -> bool {
    true
}

fn is_yes(b: &bool) -> bool {
    *b
}

/// A frame count a family's VAE cannot run, and the nearest counts it can.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffGrammar {
    /// The lengths it takes, as words: `4n + 1`, `17n + 5 (n ≥ 1) or 1`.
    pub grammar: String,
    pub below: Option<u64>,
    pub above: Option<u64>,
}

impl VideoFacts {
    /// The clip lengths as `(step, offset, first)`: every `step·n + offset`
    /// frames with n ≥ `first`, besides a single frame.
    fn lengths(&self) -> (u64, u64, u64) {
        match self.clips {
            Some([p, e]) => (p.max(1), e, 1),
            None => (self.temporal.max(1), 1, 0),
        }
    }

    /// Whether the VAE runs a clip of `frames` frames for this op (`decode`
    /// or not): one frame (unless its decoder needs a clip), or a length of
    /// its grammar; otherwise the grammar and the nearest lengths it runs.
    /// Checked arithmetic throughout: any u64 is answered.
    pub fn frame_count(&self, frames: u64, decode: bool) -> Result<(), OffGrammar> {
        let single = !decode || self.decodes_single_frame;
        let (step, offset, first) = self.lengths();
        let start = step.saturating_mul(first).saturating_add(offset);
        let on_grammar = frames >= start && (frames - offset).is_multiple_of(step);
        if (frames == 1 && single) || (frames > 1 && on_grammar) {
            return Ok(());
        }
        // The largest grammar length at or below `frames`, when one is.
        let floor = (frames > start).then(|| offset + (frames - offset) / step * step);
        let below = floor.or_else(|| (single && frames > 1).then_some(1));
        let above = match floor {
            Some(g) => g.checked_add(step),
            None => Some(start),
        };
        let mut grammar = format!("{step}n + {offset}");
        if first > 0 {
            grammar.push_str(&format!(" (n ≥ {first})"));
        }
        if single && first > 0 {
            grammar.push_str(" or 1");
        }
        Err(OffGrammar { grammar, below, above })
    }

    /// The shortest clip of at least `wanted` frames the VAE runs for this
    /// op (None past what a u64 holds): how a check or a plan picks a clip
    /// length near the one it has in mind.
    pub fn clip_at_least(&self, wanted: u64, decode: bool) -> Option<u64> {
        match self.frame_count(wanted.max(1), decode) {
            Ok(()) => Some(wanted.max(1)),
            Err(off) => off.above,
        }
    }

    /// The temporal tile a query means: the one it names, else the
    /// walk's default (`tiles`: the host's tile; otherwise 0).
    pub fn temporal_tile(&self, asked: Option<u32>) -> u32 {
        match (self.walk, asked) {
            (Walk::Causal, _) => 0,
            (_, Some(t)) => t,
            (Walk::Tiles, None) => u32::try_from(self.frames).unwrap_or(u32::MAX),
            (Walk::All, None) => 0,
        }
    }

    /// The temporal tile a run of `frames` frames is keyed and priced by:
    /// [`VideoFacts::temporal_tile`], except that a temporal tile at least
    /// as long as the clip does nothing, so it is the whole clip (0), as a
    /// spatial tile at least as large as the image is untiled. One rule for
    /// points and queries (docs/DESIGN.md, "Monotone composition").
    pub fn key_temporal_tile(&self, asked: Option<u32>, frames: u64) -> u32 {
        match self.temporal_tile(asked) {
            t if u64::from(t) >= frames => 0,
            t => t,
        }
    }

    /// Latent frames a working set of `working_frames` output frames spans:
    /// `(working frames − 1) / temporal + 1`.
    pub fn latent_frames(&self, working_frames: u64) -> u64 {
        working_frames.saturating_sub(1) / self.temporal.max(1) + 1
    }

    /// Whether a run may name a temporal tile: a walk of temporal tiles
    /// does; a causal decoder (one step at a time) and one that decodes
    /// every frame at once have none to name.
    pub fn takes_temporal_tile(&self) -> bool {
        self.walk == Walk::Tiles
    }

    /// Frames one working set spans: the temporal tile (0: the whole clip),
    /// or one causal step, clamped to the clip.
    pub fn working_frames(&self, frames: u64, temporal_tile: u32) -> u64 {
        let span = match (self.walk, temporal_tile) {
            (Walk::Causal, _) => self.frames.max(1),
            (_, 0) => frames,
            (_, t) => u64::from(t),
        };
        span.min(frames).max(1)
    }
}

/// Pixels × frames of one spatio-temporal tile: `min(T, w) × min(T, h) ×
/// working frames × batch` (T = 0: the whole frame). None when it overflows.
pub fn working_set(width: u64, height: u64, tile: u32, working_frames: u64, batch: u64) -> Option<u64> {
    let (w, h) = match tile {
        0 => (width, height),
        t => (u64::from(t).min(width), u64::from(t).min(height)),
    };
    [h, working_frames, batch].into_iter().try_fold(w, u64::checked_mul)
}

/// The name of `known` nearest to `name` by edit distance, ASCII case
/// ignored, where it is near enough to be a typo: one edit per four
/// characters of the name asked, at least one. A tie keeps the first.
/// (Model names here; the policy's keys in its reader.)
pub fn nearest_of<'k>(name: &str, known: impl IntoIterator<Item = &'k str>) -> Option<&'k str> {
    let asked: Vec<char> = name.trim().to_ascii_lowercase().chars().collect();
    let mut best: Option<(usize, &str)> = None;
    for k in known {
        let d = edit_distance(&asked, &k.to_ascii_lowercase().chars().collect::<Vec<_>>());
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, k));
        }
    }
    let near = (asked.len() / 4).max(1);
    best.filter(|(d, _)| *d <= near).map(|(_, k)| k)
}

/// The fewest one-character insertions, deletions, substitutions and
/// swaps of two neighbours from `a` to `b`, each substring edited once (the
/// optimal string alignment distance): a swapped pair (`modles`) is one
/// slip of the fingers, not two.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let width = b.len() + 1;
    let mut d: Vec<usize> = (0..(a.len() + 1) * width)
        .map(|k| {
            if k < width {
                k
            } else if k % width == 0 {
                k / width
            } else {
                0
            }
        })
        .collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let mut best = (d[(i - 1) * width + j - 1] + usize::from(a[i - 1] != b[j - 1]))
                .min(d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

/// The shape of a VAE's mid-block attention: `heads` heads of `head_dim`
/// channels over `S = ceil(W / latent_factor) × ceil(H / latent_factor)`
/// positions (per tile when tiled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MidBlock {
    pub heads: u64,
    pub head_dim: u64,
    /// Output pixels per latent pixel along one side (8 for every registered VAE).
    pub latent_factor: u64,
}

impl MidBlock {
    /// The sequence length over a `w × h` image (or tile).
    pub fn sequence(&self, w: u64, h: u64) -> Option<u64> {
        w.div_ceil(self.latent_factor).checked_mul(h.div_ceil(self.latent_factor))
    }
}

/// Family names and model aliases.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Registry(pub BTreeMap<String, VaeEntry>);

impl Registry {
    /// The family a family or model name stands for (case-insensitive).
    pub fn resolve(&self, name: &str) -> Option<&str> {
        let n = name.trim();
        for (family, entry) in &self.0 {
            if family.eq_ignore_ascii_case(n) || entry.models.iter().any(|m| m.eq_ignore_ascii_case(n)) {
                return Some(family.as_str());
            }
        }
        None
    }

    /// Families and their models, for "accepted: …" messages.
    pub fn describe(&self) -> String {
        self.0
            .iter()
            .map(|(f, e)| if e.models.is_empty() { f.clone() } else { format!("{f} ({})", e.models.join(", ")) })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The registered name (a family or a model) nearest to `name` by edit
    /// distance, ASCII case ignored, where it is near enough to be a typo:
    /// one edit per four characters of the name asked, at least one (so
    /// `ltx2` is no typo of `flux2`, two edits away). A tie
    /// keeps the first in the registry's order (each family, then its models).
    pub fn nearest(&self, name: &str) -> Option<&str> {
        nearest_of(
            name,
            self.0.iter().flat_map(|(family, e)| std::iter::once(family).chain(&e.models).map(String::as_str)),
        )
    }

    pub fn params(&self, family: &str) -> Option<u64> {
        self.0.get(family).and_then(|e| e.params)
    }

    /// The video facts of a family, when it is a video VAE.
    pub fn video(&self, family: &str) -> Option<&VideoFacts> {
        self.0.get(family).and_then(|e| e.video.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::{edit_distance, nearest_of};

    fn distance(a: &str, b: &str) -> usize {
        edit_distance(&a.chars().collect::<Vec<_>>(), &b.chars().collect::<Vec<_>>())
    }

    fn facts(temporal: u64, clips: Option<[u64; 2]>, decodes_single_frame: bool) -> super::VideoFacts {
        super::VideoFacts {
            spatial: 8,
            temporal,
            walk: super::Walk::All,
            frames: 0,
            overlap: 0,
            tile: 0,
            source: String::new(),
            clips,
            decodes_single_frame,
        }
    }

    #[test]
    fn frame_counts_off_the_grammar_name_the_nearest_ones() {
        let wan = facts(4, None, true);
        for ok in [1, 5, 17, 81, 4 * (u64::MAX / 4) + 1] {
            assert_eq!(wan.frame_count(ok, true), Ok(()), "{ok}");
        }
        let e = wan.frame_count(18, true).unwrap_err();
        assert_eq!((e.grammar.as_str(), e.below, e.above), ("4n + 1", Some(17), Some(21)));
        assert_eq!(wan.frame_count(2, false).unwrap_err().below, Some(1));
        // Past the last length a u64 holds: no length above.
        assert_eq!(wan.frame_count(u64::MAX, true).unwrap_err().above, None);
        let minimax = facts(4, Some([17, 5]), false);
        for ok in [22, 39, 90, 243] {
            assert_eq!(minimax.frame_count(ok, true), Ok(()), "{ok}");
        }
        // One frame: encoded, never decoded.
        assert_eq!(minimax.frame_count(1, false), Ok(()));
        let e = minimax.frame_count(1, true).unwrap_err();
        assert_eq!((e.below, e.above), (None, Some(22)));
        let e = minimax.frame_count(10, false).unwrap_err();
        assert_eq!((e.grammar.as_str(), e.below, e.above), ("17n + 5 (n ≥ 1) or 1", Some(1), Some(22)));
        let e = minimax.frame_count(91, true).unwrap_err();
        assert_eq!((e.below, e.above), (Some(90), Some(107)));
    }

    #[test]
    fn a_swapped_pair_is_one_edit() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("modles", "models"), 1);
        assert_eq!(distance("ab", "ba"), 1);
        // Each substring edited once: "ca" → "abc" is three edits, not two.
        assert_eq!(distance("ca", "abc"), 3);
        assert_eq!(distance("", "sdxl"), 4);
        assert_eq!(distance("sdxl", "sdxl"), 0);
        assert_eq!(nearest_of("modles", ["note", "models", "params"]), Some("models"));
        // One edit per four characters: two slips in "ltx2" are not a typo of "flux2".
        assert_eq!(nearest_of("ltx2", ["flux2"]), None);
    }
}
