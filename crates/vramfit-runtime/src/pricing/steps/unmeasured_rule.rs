//! Step 3 of the pricing order (docs/DESIGN.md, "Pricing"): `UnmeasuredRule`.

use super::*;

/// No line for the key: the largest line of the same (vae, op, tile,
/// dtype) on any platform, or of the same VAE, op and tile in another dtype
/// on this platform; for a tile, also each such untiled line priced as a
/// derived tile. Ties go to the first key in key order, a measured tile
/// before a derived one. For a video key, a line of its own platform and
/// dtype at another temporal tile makes the answer measured.
pub(super) struct UnmeasuredRule;

impl Step for UnmeasuredRule {
    fn name(&self) -> &'static str {
        "UnmeasuredRule"
    }

    fn rules(&self) -> &'static [Rule] {
        &[Rule::UnmeasuredRule]
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
        let key = ask.key();
        // (total before growth, line bytes, key, line, derived)
        let mut best: Option<(u64, u64, &LineKey, &LineCoef, bool)> = None;
        let mut platform_measured = false;
        for (k, coef) in c.unmeasured_candidates(key) {
            let b = c.line_price(k, coef, ask.at)?;
            platform_measured |= ask.video.is_some() && measured_here(k, key);
            if best.is_none_or(|(bt, _, bk, _, _)| b > bt || (b == bt && k < bk)) {
                best = Some((b, b, k, coef, false));
            }
        }
        if let Some(t) = &ask.tile_on {
            let untiled = LineKey { tile: 0, ..key.clone() };
            for (k, coef) in c.unmeasured_candidates(&untiled) {
                let b = c.line_price(k, coef, t.tile_pixels)?;
                let total = add(b, t.copies_bytes)?;
                if best.is_none_or(|(bt, _, bk, _, bd)| total > bt || (total == bt && bd && k < bk)) {
                    best = Some((total, b, k, coef, true));
                }
            }
        }
        let Some((total, b, k, coef, derived)) = best else { return Ok(None) };
        // A platform that measured this video family, op and dtype at
        // another temporal tile is measured: no host's guess floors it.
        let basis = if platform_measured { Basis::Measured } else { Basis::Guess };
        let bytes = add(add(total, ask.clip)?, ask.growth)?;
        Ok(Some(Candidate { rule: Rule::UnmeasuredRule, basis, line: Some((k, coef, b)), derived, bytes }))
    }
}
