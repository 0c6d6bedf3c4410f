//! Step 2 of the pricing order (docs/DESIGN.md, "Pricing"): `DerivedTile`.

use super::*;

/// A tile with no line of its own: the platform's untiled line at one
/// tile, plus the host's copies of the output.
pub(super) struct DerivedTile;

impl Step for DerivedTile {
    fn name(&self) -> &'static str {
        "DerivedTile"
    }

    fn rules(&self) -> &'static [Rule] {
        &[Rule::DerivedTile]
    }
    fn effect(&self) -> Effect {
        Effect::Decide
    }
    fn offer<'a>(
        &self,
        c: &'a Coefficients,
        _: &Query,
        ask: &mut Ask<'a>,
        _: Option<&Candidate<'a>>,
    ) -> Result<Option<Candidate<'a>>> {
        let Some(t) = &ask.tile_on else { return Ok(None) };
        let (tile_pixels, copies) = (t.tile_pixels, t.copies_bytes);
        let key = &mut ask.resolved.key;
        let tile = std::mem::replace(&mut key.tile, 0);
        let untiled = c.measured_line(key, tile_pixels);
        key.tile = tile;
        let Some((_, k, coef, b)) = untiled? else { return Ok(None) };
        let bytes = add(add(b, copies)?, ask.growth)?;
        Ok(Some(Candidate {
            rule: Rule::DerivedTile,
            basis: Basis::Measured,
            line: Some((k, coef, b)),
            derived: true,
            bytes,
        }))
    }
}
