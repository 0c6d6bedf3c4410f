//! The attention phase (docs/DESIGN.md, "Pricing", step 6): where SDPA runs
//! the VAE mid-block's attention on the math kernel, the S × S scores are
//! a phase of their own, and a price is the larger of it and the line's.

use super::{AttentionTerms, Coefficients, Query, Rule};
use crate::contract::LineKey;
use crate::error::Result;

impl Coefficients {
    /// The attention phase of a query on a math-kernel platform, for a
    /// family with a mid-block attention (None elsewhere): `items` attention
    /// matrices (the batch, times the latent frames of a video working set)
    /// over the image or one `tile`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn attention_on(
        &self,
        key: &LineKey,
        q: &Query,
        tile: u32,
        items: u64,
        growth: u64,
        line_rule: Rule,
        line_phase: u64,
    ) -> Result<Option<AttnOn<'_>>> {
        let Some(platform) = self.file.attention.as_ref().and_then(|a| a.on(key.conv_backend)) else {
            return Ok(None);
        };
        let Some(block) = self.file.registry.get(key.vae.as_str()).and_then(|e| e.attention) else {
            return Ok(None);
        };
        let held_tensors = self.file.attention.as_ref().map_or(0, |a| a.held_tensors);
        let (w, h) = match tile {
            0 => (q.width, q.height),
            t => (u64::from(t).min(q.width), u64::from(t).min(q.height)),
        };
        let too_large = || {
            let at: [(&str, &dyn std::fmt::Display); 3] = [("width", &w), ("height", &h), ("items", &items)];
            crate::error::Error::too_large(crate::words::ATTENTION_TOO_LARGE.fill(&at))
        };
        let sequence = block.sequence(w, h).ok_or_else(too_large)?;
        let phase = platform.phase(&block, held_tensors, key.dtype, sequence, items).ok_or_else(too_large)?;
        let phase_bytes = phase.0.checked_add(phase.1).and_then(|b| b.checked_add(growth)).ok_or_else(too_large)?;
        let wrong_output = platform.wrong_output_at.is_some_and(|n| u128::from(sequence).pow(2) >= u128::from(n));
        Ok(Some(AttnOn {
            platform,
            sequence,
            heads: block.heads,
            score_bytes: phase.0,
            held_bytes: phase.1,
            phase_bytes,
            line_phase_bytes: line_phase,
            line_rule,
            wrong_output,
        }))
    }
}

/// A query's attention phase, as numbers (the words are made by `price`).
pub(super) struct AttnOn<'a> {
    pub(super) platform: &'a crate::contract::AttentionPlatform,
    pub(super) sequence: u64,
    pub(super) heads: u64,
    pub(super) score_bytes: u64,
    pub(super) held_bytes: u64,
    pub(super) phase_bytes: u64,
    pub(super) line_phase_bytes: u64,
    pub(super) line_rule: Rule,
    pub(super) wrong_output: bool,
}

impl AttnOn<'_> {
    pub(super) fn terms(&self) -> AttentionTerms {
        AttentionTerms {
            bytes_per_score: crate::exact::exact_decimal(&self.platform.bytes_per_score),
            source: self.platform.source.clone(),
            sequence: self.sequence,
            heads: self.heads,
            score_bytes: self.score_bytes,
            held_bytes: self.held_bytes,
            phase_bytes: self.phase_bytes,
            line_phase_bytes: self.line_phase_bytes,
            line_rule: self.line_rule,
            wrong_output: self.wrong_output,
        }
    }
}
