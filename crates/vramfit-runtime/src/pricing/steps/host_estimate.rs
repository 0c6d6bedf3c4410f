//! Step 5 of the pricing order (docs/DESIGN.md, "Pricing"): `HostEstimate`.

use super::*;

/// A video key priced by a guess: the largest applicable host estimate
/// declared in the policy's `[video]`, where it is higher.
pub(super) struct HostEstimate;

impl Step for HostEstimate {
    fn name(&self) -> &'static str {
        "HostEstimate"
    }

    fn rules(&self) -> &'static [Rule] {
        &[Rule::VideoEstimate]
    }
    fn effect(&self) -> Effect {
        Effect::Floor
    }
    fn offer<'a>(
        &self,
        c: &'a Coefficients,
        _: &Query,
        ask: &mut Ask<'a>,
        so_far: Option<&Candidate<'a>>,
    ) -> Result<Option<Candidate<'a>>> {
        let (Some(on), Some(v)) = (ask.video.as_mut(), c.file.video.as_ref()) else { return Ok(None) };
        let key = &ask.resolved.key;
        for (e, bytes) in v.estimates(&key.vae, key.op, on.facts, on.run) {
            let bytes = bytes.ok_or_else(|| {
                crate::error::Error::too_large(
                    crate::words::ESTIMATE_TOO_LARGE.fill(&[("host", &e.host), ("key", key)]),
                )
            })?;
            if on.estimate.is_none_or(|(_, b)| bytes > b) {
                on.estimate = Some((e, bytes));
            }
        }
        let Some((_, e)) = on.estimate else { return Ok(None) };
        let bytes = add(e, ask.growth)?;
        let line = so_far.and_then(|s| s.line);
        Ok(Some(Candidate { rule: Rule::VideoEstimate, basis: Basis::Guess, line, derived: false, bytes }))
    }
}
