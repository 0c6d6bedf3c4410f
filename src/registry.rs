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

    pub fn params(&self, family: &str) -> Option<u64> {
        self.0.get(family).and_then(|e| e.params)
    }
}
