//! Step 8 of the pricing order (docs/DESIGN.md, "Pricing"): `AttentionPhase`.

use super::*;

/// On a platform whose SDPA runs the math kernel, the mid-block's S × S
/// attention scores, where they need more than the line phase.
pub(super) struct AttentionPhase;

impl Step for AttentionPhase {
    fn name(&self) -> &'static str {
        "AttentionPhase"
    }

    fn rules(&self) -> &'static [Rule] {
        &[Rule::AttentionPhase]
    }
    fn effect(&self) -> Effect {
        Effect::Raise
    }
    fn offer<'a>(
        &self,
        c: &'a Coefficients,
        q: &Query,
        ask: &mut Ask<'a>,
        so_far: Option<&Candidate<'a>>,
    ) -> Result<Option<Candidate<'a>>> {
        let Some(line) = so_far else { return Ok(None) };
        // A video family runs it per latent frame of the working set:
        // `batch × latent frames` matrices over one spatial tile.
        let items = match &ask.video {
            Some(on) => {
                let latent = on.facts.latent_frames(on.facts.working_frames(on.run.frames, on.run.temporal_tile));
                q.batch
                    .checked_mul(latent)
                    .ok_or_else(|| crate::error::Error::too_large(crate::words::RESERVATION_TOO_LARGE.text))?
            }
            None => q.batch,
        };
        ask.attention = c.attention_on(ask.key(), q, ask.tile, items, ask.growth, line.rule, line.bytes)?;
        Ok(ask.attention.as_ref().map(|a| Candidate {
            rule: Rule::AttentionPhase,
            bytes: a.phase_bytes,
            ..line.clone()
        }))
    }
}
