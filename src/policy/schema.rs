//! The schema of `fits/policy.toml` as written (the TOML document, for
//! editors and tools), and the one list of the keys each of its tables may
//! hold: the parser takes them from these types (`keys`), so a field added
//! here is known to the parser and printed by `vramfit schema policy`. The
//! parser reads the TOML by hand beside them, so that every unknown key is
//! collected as a problem (verify reports them all) rather than stopping at
//! the first, and each value is checked with words that name its entry.

use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
use schemars::JsonSchema;
use std::collections::BTreeMap;

/// A number the policy reads exactly: a decimal string (`"0.05"`,
/// preferred) or a TOML integer or float (read through its decimal form).
#[derive(JsonSchema)]
#[serde(untagged)]
pub enum PolicyNumber {
    Decimal(String),
    Number(f64),
}

/// `fits/policy.toml`: every decision the fit and the checks take from a
/// person rather than from the data, each with its reason.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    /// Margin added to the envelope before rounding (default 0.05).
    pub margin: Option<PolicyNumber>,
    /// Largest `reserve / demand` outside listed exceptions (default 1.3, at least 1).
    pub ratio_bound: Option<PolicyNumber>,
    /// Distinct sizes a line needs to be fitted (default 3).
    pub min_sizes: Option<u64>,
    /// The unmeasured-platform rule: `max-measured-with-legacy-floor`, the one implemented.
    pub unmeasured: Option<String>,
    /// The allocator when no `[[allocator_default]]` matches (default `native`).
    pub default_allocator: Option<Allocator>,
    /// `"WxH"` sizes for tables and the floor checks.
    pub grid: Option<Vec<String>>,
    /// Tile edges `plan` may fall back to, largest first.
    pub tiles: Option<Vec<u32>>,
    /// Points left out of every fit and check.
    pub exclude: Option<Vec<ListedEntry>>,
    /// Points kept in their line on purpose where another source disagrees at the same size.
    pub keep: Option<Vec<ListedEntry>>,
    /// Points allowed above the ratio bound.
    pub exception: Option<Vec<ListedEntry>>,
    /// Lines whose values are declared, not fitted.
    pub carry: Option<Vec<CarryEntry>>,
    /// `(conv_backend, allocator)` pairs whose lines keep their OS.
    pub os_specific: Option<Vec<OsSpecificEntry>>,
    /// The allocator a platform runs when nothing is configured.
    pub allocator_default: Option<Vec<AllocatorDefaultEntry>>,
    /// The previous estimator: the floor of unmeasured platforms.
    pub legacy: Option<LegacyEntry>,
    /// VAE families by name, with the model names that resolve to them.
    pub vae: Option<BTreeMap<String, VaeFamily>>,
    /// The derived-tile rule: each host's copies of the output.
    pub tiling: Option<TilingEntry>,
    /// The attention phase of math-kernel platforms.
    pub attention: Option<AttentionEntry>,
    /// Video families' clip copies and the hosts' published estimates.
    pub video: Option<VideoEntry>,
}

/// `[video]`.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VideoEntry {
    pub reason: String,
    /// Copies of the clip beside the working set, per op (exact decimals).
    pub clip_copies: ClipCopiesEntry,
    /// The hosts' published estimates: the floor of a video key with no line.
    pub estimate: Option<Vec<EstimateEntry>>,
}

/// `clip_copies = { decode = "1", encode = "1" }`.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClipCopiesEntry {
    pub decode: PolicyNumber,
    pub encode: PolicyNumber,
}

/// One `[[video.estimate]]` (docs/DESIGN.md, "Video").
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EstimateEntry {
    /// A registered video family.
    pub vae: String,
    pub op: Op,
    /// The host whose estimator it is (`invokeai`, `comfyui`).
    pub host: String,
    /// Fixed MiB (default 0).
    pub base_mib: Option<u64>,
    /// Bytes per counted pixel-frame per element byte.
    pub per_element: PolicyNumber,
    /// `one`, `clip`, `latent` or `tile`: the frames the working term counts.
    pub frames: String,
    /// Counted frames at least this many (default 0).
    pub min_frames: Option<u64>,
    /// Counted frames at most this many (default 0: no cap).
    pub max_frames: Option<u64>,
    /// For clips of at least this many frames (default 0).
    pub min_clip: Option<u64>,
    /// For clips of at most this many frames (default 0: any).
    pub max_clip: Option<u64>,
    /// `any` (default), `tiled` or `untiled`.
    pub when: Option<String>,
    /// Multiplier of the working term when spatially tiled (default 1).
    pub tile_factor: Option<PolicyNumber>,
    /// Copies of the clip (default 0).
    pub clip_copies: Option<PolicyNumber>,
    pub source: String,
}

/// A family's `video = { … }` facts.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VideoFactsEntry {
    /// Output pixels per latent pixel along a side.
    pub spatial: u64,
    /// Output frames per latent frame.
    pub temporal: u64,
    /// `tiles`, `causal` or `all`.
    pub walk: String,
    /// `tiles`: the default temporal tile; `causal`: frames one step decodes; `all`: 0.
    pub frames: Option<u64>,
    /// Frames two temporal tiles share.
    pub overlap: Option<u64>,
    /// The host's default spatial tile (0: untiled).
    pub tile: Option<u32>,
    pub source: String,
}

/// `[attention]`: where SDPA materialises the mid-block's S × S scores.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttentionEntry {
    pub reason: String,
    /// Tensors of `channels × S` elements the mid-block holds beside the scores.
    pub held_tensors: u64,
    /// One per conv backend whose SDPA runs the math kernel.
    pub platform: Vec<AttentionPlatformEntry>,
}

/// `[[attention.platform]]`.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttentionPlatformEntry {
    pub conv_backend: ConvBackend,
    /// Reserved bytes per score element, exact decimal.
    pub bytes_per_score: PolicyNumber,
    /// Score elements of one matrix at which the platform returns wrong output.
    pub wrong_output_at: Option<u64>,
    /// Where the figure comes from.
    pub source: String,
}

/// A family's mid-block attention shape.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MidBlockEntry {
    pub heads: u64,
    pub head_dim: u64,
    pub latent_factor: u64,
}

/// `[tiling]`: how a tile without a line of its own is priced.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TilingEntry {
    /// The host a query means when it names none.
    pub default_host: String,
    pub reason: String,
    /// Each host by the name `--host` takes.
    pub host: BTreeMap<String, TilingHostEntry>,
}

/// `[tiling.host.NAME]`: copies of the 3-channel output the host keeps on the GPU.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TilingHostEntry {
    /// Exact decimal, at least 0.
    pub copies: PolicyNumber,
    /// Where the figure comes from.
    pub source: String,
}

/// A point id and why it is listed.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListedEntry {
    pub id: String,
    pub reason: String,
}

/// A carried line: its key, its values and why.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CarryEntry {
    pub vae: String,
    pub op: Op,
    /// Tile edge (default 0: untiled; a video family's line takes none).
    pub tile: Option<u32>,
    /// A video family's temporal tile, frames (default: the family's walk).
    pub temporal_tile: Option<u32>,
    pub conv_backend: ConvBackend,
    pub allocator: Allocator,
    pub os: Os,
    pub dtype: Dtype,
    /// Bytes per pixel, at most two decimals.
    pub slope: PolicyNumber,
    pub base_mib: u64,
    pub reason: String,
}

/// A pair whose lines keep their OS.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OsSpecificEntry {
    pub conv_backend: ConvBackend,
    /// `*` (or absent): every allocator of the backend.
    pub allocator: Option<AllocatorOrAll>,
    pub reason: String,
}

/// An allocator, or `*` for every allocator.
pub struct AllocatorOrAll;

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
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AllocatorDefaultEntry {
    pub conv_backend: ConvBackend,
    pub os: Os,
    pub allocator: Allocator,
    pub reason: String,
}

/// The v1 estimator's constants.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LegacyEntry {
    pub reason: String,
    /// The k constants per backend.
    pub k: Option<BTreeMap<ConvBackend, LegacyKEntry>>,
    /// The backend whose k a backend without its own entry uses.
    pub fallback_backend: ConvBackend,
    /// Bytes per element per dtype.
    pub elem_bytes: Option<BTreeMap<Dtype, u64>>,
    /// Multiplier of a tiled decode or encode.
    pub tile_factor: PolicyNumber,
    /// Extra MiB per family when it runs fp32.
    pub fp32_extra_mib: Option<BTreeMap<String, u64>>,
}

/// One backend's k constants.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LegacyKEntry {
    pub decode: u64,
    pub encode: u64,
}

/// A VAE family.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VaeFamily {
    /// Model names that resolve to the family.
    pub models: Option<Vec<String>>,
    /// The weight count, for cast growth.
    pub params: Option<u64>,
    pub note: Option<String>,
    /// The decoder mid-block's attention shape (none: no mid-block attention).
    pub attention: Option<MidBlockEntry>,
    /// A video VAE's facts (none: an image VAE).
    pub video: Option<VideoFactsEntry>,
    /// Whether the family's host nodes take the `fp32` switch (`--fp32`; default false).
    pub fp32_switch: Option<bool>,
    /// Model names people also use for another VAE, each with the words
    /// that say which: an answer asked by one warns with them.
    pub ambiguous: Option<BTreeMap<String, String>>,
}

/// The keys a table of the policy may hold: the fields of its type, in
/// the schema's order, computed once per type (sixteen small lists, kept
/// for the life of the process).
pub(super) fn keys<T: JsonSchema + 'static>() -> &'static [&'static str] {
    use std::any::TypeId;
    use std::sync::{Mutex, OnceLock};
    static KEYS: OnceLock<Mutex<BTreeMap<TypeId, &'static [&'static str]>>> = OnceLock::new();
    let mut all = KEYS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    all.entry(TypeId::of::<T>()).or_insert_with(|| {
        let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
        let names: Vec<&'static str> = schema
            .get("properties")
            .and_then(|p| p.as_object())
            .map(|p| p.keys().map(|k| &*Box::leak(k.clone().into_boxed_str())).collect())
            .unwrap_or_default();
        Box::leak(names.into_boxed_slice())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_table_knows_the_fields_of_its_type() {
        assert!(super::keys::<super::PolicyFile>().contains(&"margin"));
        assert_eq!(super::keys::<super::TilingHostEntry>(), ["copies", "source"]);
        assert!(super::keys::<super::VaeFamily>().contains(&"ambiguous"));
        // One list per type, computed once.
        assert!(std::ptr::eq(super::keys::<super::ListedEntry>(), super::keys::<super::ListedEntry>()));
    }
}
