//! Step 7 of the pricing order (docs/DESIGN.md, "Pricing"): `MeasuredCap`.

use super::*;

/// A guess for a tile never prices above what a measured line of the same
/// platform prices a larger tile (or no tile) of the same image: a run on
/// a smaller tile holds no more.
pub(super) struct MeasuredCap;

impl Step for MeasuredCap {
    fn name(&self) -> &'static str {
        "MeasuredCap"
    }

    fn rules(&self) -> &'static [Rule] {
        &[Rule::MeasuredCap]
    }
    fn effect(&self) -> Effect {
        Effect::Cap
    }
    fn offer<'a>(
        &self,
        c: &'a Coefficients,
        q: &Query,
        ask: &mut Ask<'a>,
        _: Option<&Candidate<'a>>,
    ) -> Result<Option<Candidate<'a>>> {
        if ask.key().tile == 0 {
            return Ok(None);
        }
        let Some((k, coef, b)) = c.measured_cap(&mut ask.resolved.key, q, ask.pixels)? else { return Ok(None) };
        Ok(b.checked_add(ask.growth).map(|bytes| Candidate {
            rule: Rule::MeasuredCap,
            basis: Basis::Measured,
            line: Some((k, coef, b)),
            derived: false,
            bytes,
        }))
    }
}
