//! Step 4 of the pricing order (docs/DESIGN.md, "Pricing"): `TracedRule`.

use super::*;

/// A family with no measured line on the query's platform: its traced
/// shape scaled by its class's calibration here (docs/traced.md). A floor:
/// it raises the unmeasured rule's guess (a line of the same family on
/// another platform or dtype still prices when it is higher), and the host
/// estimates and the legacy value after it stay floors under it.
pub(super) struct TracedRule;

impl Step for TracedRule {
    fn name(&self) -> &'static str {
        "TracedRule"
    }

    fn rules(&self) -> &'static [Rule] {
        &[Rule::Traced]
    }
    fn effect(&self) -> Effect {
        Effect::Floor
    }
    fn offer<'a>(
        &self,
        c: &'a Coefficients,
        _: &Query,
        ask: &mut Ask<'a>,
        _: Option<&Candidate<'a>>,
    ) -> Result<Option<Candidate<'a>>> {
        let tile_on = ask.tile_on.as_ref().map(|t| (t.tile_pixels, t.copies_bytes));
        let one_frame = ask.video.as_ref().is_some_and(|v| v.run.frames == 1);
        ask.traced = c.traced_on(ask.key(), ask.at, tile_on, one_frame)?;
        let Some(t) = &ask.traced else { return Ok(None) };
        let bytes = add(add(t.bytes, ask.clip)?, ask.growth)?;
        Ok(Some(Candidate { rule: Rule::Traced, basis: Basis::Guess, line: None, derived: false, bytes }))
    }
}
