//! `fits/policy.toml` as written: the serde types the file is read into and
//! the source of its schema (`vramfit schema policy`). Each value checks
//! itself as it is read (`values`); a key no type names is collected by the
//! reader as an unknown key (every one at once, with its line) rather than
//! silently dropped. What holds across fields (duplicates, references between
//! tables) is checked by `read` when the document becomes a `Policy`.

use super::values::{At, Count, Decimal, Edge, Int, Positive, Said, Size, Text, Whole};
use crate::contract::video::{CountedFrames, When};
use crate::registry::Walk;
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;

/// `fits/policy.toml`: every decision the fit and the checks take from a
/// person rather than from the data, each with its reason.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PolicyFile {
    /// Margin added to the envelope before rounding (default 0.05).
    pub margin: Option<Decimal>,
    /// Largest `reserve / demand` outside listed exceptions (default 1.3, at least 1).
    pub ratio_bound: Option<Decimal>,
    /// Distinct sizes a line needs to be fitted (default 3).
    pub min_sizes: Option<Int2>,
    /// The unmeasured-platform rule: `max-measured-with-legacy-floor`, the one implemented.
    pub unmeasured: Option<Text>,
    /// The allocator when no `[[allocator_default]]` matches (default `native`).
    pub default_allocator: Option<Allocator>,
    /// `"WxH"` sizes for tables and the floor checks.
    pub grid: Option<Vec<Size>>,
    /// Tile edges `plan` may fall back to, largest first.
    pub tiles: Option<Vec<TileEdge>>,
    /// Points left out of every fit and check.
    pub exclude: Option<Vec<At<ListedEntry>>>,
    /// Points kept in their line on purpose where another source disagrees at the same size.
    pub keep: Option<Vec<At<ListedEntry>>>,
    /// Points allowed above the ratio bound.
    pub exception: Option<Vec<At<ListedEntry>>>,
    /// Lines whose values are declared, not fitted.
    pub carry: Option<Vec<At<CarryEntry>>>,
    /// `(conv_backend, allocator)` pairs whose lines keep their OS.
    pub os_specific: Option<Vec<At<OsSpecificEntry>>>,
    /// The allocator a platform runs when nothing is configured.
    pub allocator_default: Option<Vec<At<AllocatorDefaultEntry>>>,
    /// The previous estimator: the floor of unmeasured platforms.
    pub legacy: Option<At<LegacyEntry>>,
    /// VAE families by name, with the model names that resolve to them.
    pub vae: Option<BTreeMap<String, At<VaeFamily>>>,
    /// The derived-tile rule: each host's copies of the output.
    pub tiling: Option<At<TilingEntry>>,
    /// The attention phase of math-kernel platforms.
    pub attention: Option<At<AttentionEntry>>,
    /// Video families' clip copies and the hosts' published estimates.
    pub video: Option<At<VideoEntry>>,
    /// The traced price's own margin (docs/traced.md).
    pub traced: Option<At<TracedEntry>>,
    /// The hosts' own image estimators, for `crossval --against` (docs/hosts.md).
    pub host_estimator: Option<Vec<At<HostEstimatorEntry>>>,
    /// Each platform's first use, proven from its fresh points (docs/fit.md, "First use").
    pub first_use: Option<Vec<At<FirstUseEntry>>>,
}

/// One `[[first_use]]`: what a fresh process's first run of an op adds on
/// a platform, in MiB, which `verify` holds to `max(driver − reserved)`
/// over the platform's fresh points.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct FirstUseEntry {
    pub conv_backend: ConvBackend,
    pub allocator: Allocator,
    /// The OS of the points (default `any`: every OS).
    pub os: Option<Os>,
    pub mib: Count,
    /// Where the figure comes from.
    pub source: Said,
}

/// One `[[host_estimator]]`: a host's published image estimator for one
/// family and op, as its code computes it (docs/hosts.md):
/// `floor(max(per_element × element bytes × area × batch? + copies × 3 ×
/// element bytes × W × H + fp32 MiB, score term))`, where the area is the
/// image's pixels, or one tile's × `tile_factor` when tiled.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct HostEstimatorEntry {
    /// `invokeai`, `comfyui`, …: what `crossval --against` names.
    pub host: Said,
    /// The release whose code this restates.
    pub version: Said,
    /// A registered family.
    pub vae: Text,
    pub op: Op,
    /// Only on this conv backend (absent: every backend without an entry of its own).
    pub conv_backend: Option<ConvBackend>,
    /// Bytes per pixel per element byte.
    pub per_element: Decimal,
    /// `dtype` (the run dtype's element bytes, default) or `fp32-switch`
    /// (4 bytes when the run is fp32, else 2: InvokeAI's SD `fp32` flag).
    pub element: Option<ElementRule>,
    /// Present: a tiled run prices one tile's pixels times this; absent:
    /// the estimator ignores tiles and prices the whole image.
    pub tile_factor: Option<Decimal>,
    /// A tiled run adds this many copies of the 3-channel image.
    pub tile_copies: Option<Decimal>,
    /// MiB added for an fp32 run.
    pub fp32_extra_mib: Option<Count>,
    /// Whether the estimate multiplies by the batch (default false: it
    /// prices one item whatever the batch).
    pub batch: Option<bool>,
    /// Bytes per attention score where the estimator adds the mid-block's
    /// scores (one head a batch item, `S = (W/8)(H/8)` or one tile's); the
    /// price is the larger of that and the rest.
    pub score_bytes: Option<Decimal>,
    /// The conv backends on which the score term applies (the math kernel).
    pub score_on: Option<Vec<ConvBackend>>,
    pub source: Said,
}

/// How a host estimator reads the element size.
#[derive(Deserialize, serde::Serialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ElementRule {
    /// The run dtype's element bytes.
    Dtype,
    /// 4 when the run is fp32, else 2.
    Fp32Switch,
}

/// `[traced]`: how a price scaled from a trace is padded.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TracedEntry {
    /// Added to the calibrated envelope before rounding (exact decimal):
    /// set from the leave-one-family-out figures (`crossval --by family`).
    pub margin: Decimal,
    /// The figures it was set from.
    pub reason: Said,
    /// Present: the legacy value no longer floors a traced price, and this
    /// is why (the leave-one-family-out figures of both on the same points).
    pub lift_legacy_floor: Option<Said>,
}

pub use crate::registry::ArchClass;

/// `min_sizes`: a line needs two sizes.
pub type Int2 = Int<2, { u32::MAX as u64 }>;
/// A tile edge `plan` may fall back to.
pub type TileEdge = Int<1, { u32::MAX as u64 }>;
/// `held_tensors`: at most 1000.
pub type HeldTensors = Int<1, 1000>;

/// `[video]`.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct VideoEntry {
    pub reason: Said,
    /// Copies of the clip beside the working set, per op (exact decimals).
    pub clip_copies: ClipCopiesEntry,
    /// The hosts' published estimates: the floor of a video key with no line.
    pub estimate: Option<Vec<At<EstimateEntry>>>,
}

/// `clip_copies = { decode = "1", encode = "1" }`.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ClipCopiesEntry {
    pub decode: Decimal,
    pub encode: Decimal,
}

/// One `[[video.estimate]]` (docs/DESIGN.md, "Video").
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EstimateEntry {
    /// A registered video family.
    pub vae: Text,
    pub op: Op,
    /// The host whose estimator it is (`invokeai`, `comfyui`).
    pub host: Said,
    /// Fixed MiB (default 0).
    pub base_mib: Option<Count>,
    /// Bytes per counted pixel-frame per element byte.
    pub per_element: Decimal,
    /// `one`, `clip`, `latent` or `tile`: the frames the working term counts.
    pub frames: CountedFrames,
    /// Counted frames at least this many (default 0).
    pub min_frames: Option<Count>,
    /// Counted frames at most this many (default 0: no cap).
    pub max_frames: Option<Count>,
    /// For clips of at least this many frames (default 0).
    pub min_clip: Option<Count>,
    /// For clips of at most this many frames (default 0: any).
    pub max_clip: Option<Count>,
    /// `any` (default), `tiled` or `untiled`.
    pub when: Option<When>,
    /// Multiplier of the working term when spatially tiled (default 1).
    pub tile_factor: Option<Decimal>,
    /// Copies of the clip (default 0).
    pub clip_copies: Option<Decimal>,
    pub source: Said,
}

/// A family's `video = { … }` facts.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct VideoFactsEntry {
    /// Output pixels per latent pixel along a side.
    pub spatial: Positive,
    /// Output frames per latent frame.
    pub temporal: Positive,
    /// `tiles`, `causal` or `all`.
    pub walk: Walk,
    /// `tiles`: the default temporal tile; `causal`: frames one step decodes; `all`: 0.
    pub frames: Option<Count>,
    /// Frames two temporal tiles share.
    pub overlap: Option<Count>,
    /// The host's default spatial tile (0: untiled).
    pub tile: Option<Count>,
    pub source: Said,
    /// Clip lengths `p·n + e` (n ≥ 1) where they are not `temporal·n + 1`:
    /// `[p, e]` (MiniMax-H3: `[17, 5]`).
    pub clips: Option<[Positive; 2]>,
    /// false where the decoder runs no single frame (default true).
    pub decodes_single_frame: Option<bool>,
}

/// `[attention]`: where SDPA materialises the mid-block's S × S scores.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AttentionEntry {
    pub reason: Said,
    /// Tensors of `channels × S` elements the mid-block holds beside the scores.
    pub held_tensors: HeldTensors,
    /// One per conv backend whose SDPA runs the math kernel.
    pub platform: Vec<At<AttentionPlatformEntry>>,
}

/// `[[attention.platform]]`.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AttentionPlatformEntry {
    pub conv_backend: ConvBackend,
    /// Reserved bytes per score element, exact decimal.
    pub bytes_per_score: Decimal,
    /// Score elements of one matrix at which the platform returns wrong output.
    pub wrong_output_at: Option<Positive>,
    /// Where the figure comes from.
    pub source: Said,
}

/// A family's mid-block attention shape.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MidBlockEntry {
    pub heads: Int<1, 1024>,
    pub head_dim: Int<1, 65536>,
    pub latent_factor: Int<1, { crate::registry::MAX_LATENT_FACTOR }>,
}

/// `[tiling]`: how a tile without a line of its own is priced.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TilingEntry {
    /// The host a query means when it names none.
    pub default_host: Text,
    pub reason: Said,
    /// Each host by the name `--host` takes.
    pub host: BTreeMap<String, At<TilingHostEntry>>,
}

/// `[tiling.host.NAME]`: copies of the 3-channel output the host keeps on the GPU.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TilingHostEntry {
    /// Exact decimal, at least 0.
    pub copies: Decimal,
    /// Where the figure comes from.
    pub source: Said,
}

/// A point id and why it is listed.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ListedEntry {
    pub id: Said,
    pub reason: Said,
}

/// A carried line: its key, its values and why.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CarryEntry {
    pub vae: Text,
    pub op: Op,
    /// Tile edge (default 0: untiled; a video family's line takes none).
    pub tile: Option<Edge>,
    /// A video family's temporal tile, frames (default: the family's walk).
    pub temporal_tile: Option<Edge>,
    pub conv_backend: ConvBackend,
    pub allocator: Allocator,
    pub os: Os,
    pub dtype: Dtype,
    /// Bytes per pixel, at most two decimals.
    pub slope: Decimal,
    pub base_mib: Whole,
    pub reason: Said,
}

/// A pair whose lines keep their OS.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct OsSpecificEntry {
    pub conv_backend: ConvBackend,
    /// `*` (or absent): every allocator of the backend.
    pub allocator: Option<AllocatorOrAll>,
    pub reason: Said,
}

/// An allocator, or `*` for every allocator (None).
pub struct AllocatorOrAll(pub Option<Allocator>);

impl<'de> Deserialize<'de> for AllocatorOrAll {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<AllocatorOrAll, D::Error> {
        let s = String::deserialize(d)?;
        if s.trim() == "*" {
            return Ok(AllocatorOrAll(None));
        }
        s.parse().map(|a| AllocatorOrAll(Some(a))).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for AllocatorOrAll {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AllocatorOrAll".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let one = generator.subschema_for::<Allocator>();
        schemars::json_schema!({ "anyOf": [one, { "const": "*" }] })
    }
}

/// The allocator a platform runs when nothing is configured.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AllocatorDefaultEntry {
    pub conv_backend: ConvBackend,
    pub os: Os,
    pub allocator: Allocator,
    pub reason: Said,
}

/// The v1 estimator's constants.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LegacyEntry {
    pub reason: Said,
    /// The k constants per backend.
    pub k: Option<BTreeMap<ConvBackend, LegacyKEntry>>,
    /// The backend whose k a backend without its own entry uses.
    pub fallback_backend: ConvBackend,
    /// Bytes per element per dtype.
    pub elem_bytes: Option<BTreeMap<Dtype, Positive>>,
    /// Multiplier of a tiled decode or encode.
    pub tile_factor: Decimal,
    /// Extra MiB per family when it runs fp32.
    pub fp32_extra_mib: Option<BTreeMap<String, Whole>>,
}

/// One backend's k constants.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LegacyKEntry {
    pub decode: Positive,
    pub encode: Positive,
}

/// A VAE family.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct VaeFamily {
    /// Model names that resolve to the family.
    pub models: Option<Vec<Text>>,
    /// The weight count, for cast growth.
    pub params: Option<Positive>,
    pub note: Option<Text>,
    /// The decoder mid-block's attention shape (none: no mid-block attention).
    pub attention: Option<MidBlockEntry>,
    /// A video VAE's facts (none: an image VAE).
    pub video: Option<VideoFactsEntry>,
    /// Whether the family's host nodes take the `fp32` switch (`--fp32`; default false).
    pub fp32_switch: Option<bool>,
    /// Model names people also use for another VAE, each with the words
    /// that say which: an answer asked by one warns with them.
    pub ambiguous: Option<BTreeMap<String, Said>>,
    /// The architecture class whose calibration scales the family's trace
    /// (`kl-2d`, `causal-3d`): families of one class share one.
    pub class: Option<ArchClass>,
}

/// The keys the table at `path` may hold (a path as the reader walks it:
/// table keys and array indices), from the schema of the whole document,
/// so the list is the types' own fields. None: the path names no table.
pub(super) fn keys_at(path: &[Step]) -> Option<Vec<String>> {
    let root = serde_json::Value::from(schemars::SchemaGenerator::default().into_root_schema_for::<PolicyFile>());
    let defs = root.get("$defs").cloned().unwrap_or_default();
    // Follows `$ref`s and the `anyOf` an `Option` of a table becomes.
    let resolve = |v: &serde_json::Value| -> Option<serde_json::Value> {
        let mut v = v.clone();
        for _ in 0..8 {
            if let Some(r) = v.get("$ref").and_then(|r| r.as_str()) {
                v = defs.get(r.rsplit('/').next()?)?.clone();
            } else if let Some(any) = v.get("anyOf").and_then(|a| a.as_array()) {
                v = any.iter().find(|s| s.get("type").and_then(|t| t.as_str()) != Some("null"))?.clone();
            } else {
                return Some(v);
            }
        }
        None
    };
    let mut at = resolve(&root)?;
    for step in path {
        at = match step {
            Step::Index(_) => resolve(at.get("items")?)?,
            Step::Key(k) => match at.get("properties").and_then(|p| p.get(k)) {
                Some(field) => resolve(field)?,
                None => resolve(at.get("additionalProperties")?)?,
            },
        };
    }
    Some(at.get("properties")?.as_object()?.keys().cloned().collect())
}

/// One step of a path into the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

#[cfg(test)]
mod tests {
    use super::{keys_at, Step};

    #[test]
    fn a_table_knows_the_fields_of_its_type() {
        let key = |k: &str| Step::Key(k.into());
        assert!(keys_at(&[]).unwrap().contains(&"margin".to_string()));
        assert_eq!(keys_at(&[key("tiling"), key("host"), key("comfyui")]).unwrap(), ["copies", "source"]);
        assert!(keys_at(&[key("vae"), key("sd")]).unwrap().contains(&"ambiguous".to_string()));
        assert!(keys_at(&[key("vae"), key("sd"), key("attention")]).unwrap().contains(&"heads".to_string()));
        assert_eq!(keys_at(&[key("exclude"), Step::Index(4)]).unwrap(), ["id", "reason"]);
        assert!(keys_at(&[key("video"), key("estimate"), Step::Index(0)]).unwrap().contains(&"per_element".into()));
        assert_eq!(keys_at(&[key("margin")]), None);
    }
}
