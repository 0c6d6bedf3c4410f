//! The words of every refusal a query can meet, said the same by the CLI
//! and the Python package (which is this crate compiled, so there is one
//! copy): one template each, with `{name}` where a value goes.

use std::fmt::{Display, Write};

/// One refusal's template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Words {
    /// Its name in the generated Python module.
    pub id: &'static str,
    pub text: &'static str,
}

impl Words {
    /// The template with each `{name}` replaced by its value; a name with
    /// no value is left as it is, so a caller that forgets one shows
    /// `{name}` in the words a test compares.
    pub fn fill(&self, values: &[(&str, &dyn Display)]) -> String {
        let mut out = String::with_capacity(self.text.len() + 32);
        let mut rest = self.text;
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}').map(|c| open + c) else { break };
            out.push_str(&rest[..open]);
            let name = &rest[open + 1..close];
            match values.iter().find(|(n, _)| *n == name) {
                Some((_, v)) => {
                    let _ = write!(out, "{v}");
                }
                None => out.push_str(&rest[open..=close]),
            }
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        out
    }
}

macro_rules! words {
    ($($(#[$doc:meta])* $name:ident = $text:literal;)+) => {
        $($(#[$doc])* pub const $name: Words = Words { id: stringify!($name), text: $text };)+
        /// Every template, in the order of this file.
        pub const ALL: &[Words] = &[$($name),+];
    };
}

words! {
    /// A vocabulary word nobody spells that way.
    UNKNOWN_SPELLING = "unknown {what} '{given}' (accepted: {accepted})";
    /// A model or family the file does not register.
    UNKNOWN_MODEL = "unknown vae or model '{name}' (known: {known})";
    /// A name longer than any a registry holds.
    NAME_TOO_LONG = "vae or model name '{name}': longer than any registered name (at most {most} bytes)";
    /// … and one a typo away from a registered name.
    UNKNOWN_MODEL_GUESS = "unknown vae or model '{name}': did you mean '{guess}'? (families: {families})";
    TILE_STEP = "--tile {tile}: a tile is a multiple of {step} pixels (one latent pixel of an 8x VAE), e.g. {below} or {above}";
    FP32_SWITCH = "--fp32 is the SD nodes' switch; for family '{family}' give --dtype";
    DTYPE_CONTRADICTS_FP32 = "--dtype {dtype} contradicts --fp32 {fp32} (an SD node with fp32 = {fp32} runs {runs})";
    NO_DTYPE = "say which dtype the VAE runs in: --dtype fp16|bf16|fp32 (or --fp32 true|false for SD)";
    NO_OS = "cannot tell the host OS; give --os";
    IMAGE_FRAMES = "--frames {frames}: '{family}' is an image VAE; only a video family decodes frames";
    IMAGE_TEMPORAL_TILE = "--temporal-tile {tt}: '{family}' is an image VAE; only a video family has a temporal tile";
    CAUSAL_TEMPORAL_TILE = "--temporal-tile {tt}: '{family}' decodes one causal step of {frames} frame(s) at a time and takes no temporal tile";
    WHOLE_CLIP_TEMPORAL_TILE = "--temporal-tile {tt}: '{family}' decodes every frame at once and takes no temporal tile";
    NO_WEIGHT_COUNT = "a {loaded} → {run} cast grows the weights, but family '{family}' has no weight count (params) in the registry; add it to fits/policy.toml, or give --loaded-dtype {run}";
    NO_TILING_HOSTS = "--host {host}: these coefficients declare no tiling hosts";
    UNKNOWN_HOST = "--host {host}: not a host these coefficients know (known: {known})";
    FRAMES_POSITIVE = "--frames must be positive";
    /// A clip length the family's VAE does not run.
    FRAMES_OFF_GRAMMAR = "--frames {frames}: '{family}' {op}s clips of {grammar} frames, not {frames}; the nearest it {op}s: {nearest}";
    BATCH_POSITIVE = "--batch must be at least 1";
    NO_VIDEO_PRICE = "no line, no declared estimate and no legacy value for {key}";
    NO_IMAGE_PRICE = "no coefficient line for {key} and no legacy value: nothing measured for {vae}/{op}/tile {tile}/{dtype} and the legacy table has no element size for {dtype}";
    /// A warning: the name asked is one people also use for another VAE.
    AMBIGUOUS_NAME = "'{name}' names more than one VAE: {words}";
    /// A warning: no first use is declared for the query's conv backend.
    FIRST_USE_UNKNOWN = "no first use is declared for {here}'s conv backend: a fresh process's first run may need more than this (measure it with the harness, docs/fit.md, \"First use\")";
    /// A warning: the first use added was measured on another platform.
    FIRST_USE_BORROWED = "no first use is measured for {here}: the {mib} MiB measured on {there} is added";
    /// The figures past 64 bits of bytes.
    TOO_LARGE = "{width}x{height} × batch {batch} is too large to price";
    CONTAINS_TOO_LARGE = "{width}x{height} × batch {batch} is too large to price: a smaller request it contains is ({error})";
    CLIP_TOO_LARGE = "{width}x{height} × {frames} frames × batch {batch} is too large to price";
    RESERVATION_TOO_LARGE = "reservation too large";
    ESTIMATE_TOO_LARGE = "the {host} estimate for {key} is too large to price";
    ATTENTION_TOO_LARGE = "the attention phase of {width}x{height} × {items} items is too large to price";
    COPIES_TOO_LARGE = "the output copies of {pixels} px are too large to price";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_is_filled_by_name_and_an_unnamed_value_stays() {
        let w = Words { id: "T", text: "--x {a}: {b} and {a} {c}" };
        assert_eq!(w.fill(&[("a", &1), ("b", &"two")]), "--x 1: two and 1 {c}");
        let ids: std::collections::BTreeSet<&str> = ALL.iter().map(|w| w.id).collect();
        assert_eq!(ids.len(), ALL.len(), "two templates share a name");
    }
}
