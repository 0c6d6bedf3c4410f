//! Step 6 of the pricing order (docs/DESIGN.md, "Pricing"): `LegacyFloor`.

use super::*;

/// The previous estimator's figure: a floor under an image's guess, and
/// what prices a key nothing else does (a video key's only there).
pub(super) struct LegacyFloor;

impl Step for LegacyFloor {
    fn name(&self) -> &'static str {
        "LegacyFloor"
    }

    fn rules(&self) -> &'static [Rule] {
        &[Rule::LegacyFloor]
    }
    fn effect(&self) -> Effect {
        Effect::Floor
    }
    fn offer<'a>(
        &self,
        c: &'a Coefficients,
        q: &Query,
        ask: &mut Ask<'a>,
        so_far: Option<&Candidate<'a>>,
    ) -> Result<Option<Candidate<'a>>> {
        let key = ask.key();
        if ask.video.is_some() {
            if so_far.is_some() {
                return Ok(None);
            }
            let l = c
                .legacy_at(&LineKey { tile: 0, ..key.clone() }, legacy::Shape::pixels(ask.at))
                .ok_or_else(|| crate::error::refused!(crate::words::NO_VIDEO_PRICE.fill(&[("key", key)])))?;
            ask.legacy = Some(l);
            let bytes = add(l, ask.growth)?;
            return Ok(Some(Candidate {
                rule: Rule::LegacyFloor,
                basis: Basis::Guess,
                line: None,
                derived: false,
                bytes,
            }));
        }
        let legacy = c.legacy_at(key, legacy::Shape::of(q));
        if let (None, None) = (so_far, legacy) {
            let at: [(&str, &dyn std::fmt::Display); 5] =
                [("key", key), ("vae", &key.vae), ("op", &key.op), ("tile", &key.tile), ("dtype", &key.dtype)];
            crate::error::refuse!(crate::words::NO_IMAGE_PRICE.fill(&at));
        }
        ask.legacy = legacy;
        // Where the policy lifts the legacy floor off traced prices, a query
        // the traced rule prices is not floored, whichever guess is higher
        // (its trace, or a line borrowed from another platform: both are
        // better evidence than someone else's constant). Lifting it only
        // where the trace out-bid the borrowed line made a small image the
        // line won price at the floor (262 MB) above a larger one the trace
        // won (34 MB): a price that fell as the image grew.
        let lifted = c.file.traced.as_ref().is_some_and(|t| t.lifts_legacy_floor.is_some());
        if lifted && ask.traced.is_some() && so_far.is_some() {
            return Ok(None);
        }
        // The previous estimator's figure stands as it is (it has no cast
        // growth of its own); the guess under it keeps its line.
        Ok(legacy.map(|bytes| Candidate {
            rule: Rule::LegacyFloor,
            basis: Basis::Guess,
            line: so_far.and_then(|s| s.line),
            derived: so_far.is_some_and(|s| s.derived),
            bytes,
        }))
    }
}
