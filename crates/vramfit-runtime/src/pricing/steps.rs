//! The pricing steps, in the one order they are tried (docs/DESIGN.md,
//! "Pricing"). Each step is one rule: it reads the resolved query
//! ([`Ask`]) and the answer so far, and offers a [`Candidate`] — a rule,
//! the line it rests on, what it reserves. How an offer meets the answer
//! before it is the step's [`Effect`], and [`compose`] alone applies it,
//! so the invariants hold whatever a step computes:
//!
//! - a measured answer (`Basis::Measured`) is never lowered and never
//!   replaced by a guess: floors and caps touch guesses only;
//! - a floor or a raise only raises, a cap only lowers;
//! - the first step that decides is the answer's own rule, and every later
//!   step names itself when it moves the price.
//!
//! The monotone composition (`monotone::settle`) then prices the smaller
//! requests a query contains through the same list and keeps the highest.
//! Adding a rule is adding one step to [`STEPS`] and its `Rule` label.

use super::attention::AttnOn;
use super::tiled::TileOn;
use super::traced::TracedOn;
use super::video::{measured_here, VideoOn};
use super::{legacy, Coefficients, LineCoef, Query, Resolved, Rule};
use crate::contract::LineKey;
use crate::error::Result;
use crate::vocab::Dtype;

/// How a step's offer meets the answer so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Effect {
    /// Answers only when no step before it has.
    Decide,
    /// Raises a guess, or answers when nothing has; never touches a
    /// measured answer.
    Floor,
    /// Lowers a guess to a measured figure that bounds it.
    Cap,
    /// Raises any answer: a phase of the run that needs more than the line.
    Raise,
}

/// What an answer rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Basis {
    /// A line measured on the query's own platform (its own, its any-OS
    /// twin, its untiled line at one tile, a video line of another temporal
    /// tile, a larger tile's line that caps a guess).
    Measured,
    /// A rule's guess: another platform's or dtype's line, a host's
    /// estimate, the previous estimator.
    Guess,
}

/// A line that prices: its key, its values, its bytes where it is
/// evaluated (the query's pixels, one tile's, or a video working set).
pub(super) type Line<'a> = (&'a LineKey, &'a LineCoef, u64);

/// One step's answer.
#[derive(Clone)]
pub(super) struct Candidate<'a> {
    pub rule: Rule,
    pub basis: Basis,
    /// The line it rests on (kept when a floor or a phase raises it).
    pub line: Option<Line<'a>>,
    /// The line was an untiled one priced at one tile (the tile terms show).
    pub derived: bool,
    /// What it reserves, cast growth included.
    pub bytes: u64,
}

/// A query resolved: what every step reads, and the terms the steps
/// consulted on the way (shown in the answer whether or not they set it).
pub(super) struct Ask<'a> {
    pub resolved: Resolved,
    /// Output pixels, `width × height × batch`.
    pub pixels: u64,
    pub loaded: Dtype,
    /// Bytes the weights grow by in a wider run dtype.
    pub growth: u64,
    /// The spatial tile the run uses (0 = untiled).
    pub tile: u32,
    /// Where a line is evaluated: the pixels, or a video run's working set.
    pub at: u64,
    /// Bytes every line's price adds: a video run's clip copies.
    pub clip: u64,
    /// A tile's geometry and the host's output copies.
    pub tile_on: Option<TileOn<'a>>,
    /// A video family's run.
    pub video: Option<VideoOn<'a>>,
    /// The previous estimator's figure, where a step consulted it.
    pub legacy: Option<u64>,
    /// The attention phase, on a math-kernel platform.
    pub attention: Option<AttnOn<'a>>,
    /// The traced rule's offer, where a step consulted it.
    pub traced: Option<TracedOn<'a>>,
}

impl Ask<'_> {
    pub fn key(&self) -> &LineKey {
        &self.resolved.key
    }
}

/// One rule of the list.
pub(super) trait Step: Sync {
    /// Its name, as docs/DESIGN.md's pricing order lists it.
    fn name(&self) -> &'static str;
    /// The rules its candidates carry.
    fn rules(&self) -> &'static [Rule];
    fn effect(&self) -> Effect;
    /// Its candidate, given the answer so far (`None` when it has none).
    fn offer<'a>(
        &self,
        c: &'a Coefficients,
        q: &Query,
        ask: &mut Ask<'a>,
        so_far: Option<&Candidate<'a>>,
    ) -> Result<Option<Candidate<'a>>>;
}

/// Every pricing step, in order.
pub(super) const STEPS: [&dyn Step; 8] =
    [&OwnLine, &DerivedTile, &UnmeasuredRule, &TracedRule, &HostEstimate, &LegacyFloor, &MeasuredCap, &AttentionPhase];

impl Effect {
    /// The word docs/DESIGN.md's pricing order gives the effect.
    pub(super) fn word(self) -> &'static str {
        match self {
            Effect::Decide => "decides",
            Effect::Floor => "floor",
            Effect::Cap => "cap",
            Effect::Raise => "raise",
        }
    }
}

/// The pricing order as (step, effect) words, for the documentation's
/// check (`tests/architecture.rs` holds docs/DESIGN.md's list to it).
pub fn order() -> Vec<(&'static str, &'static str)> {
    STEPS.iter().map(|s| (s.name(), s.effect().word())).collect()
}

/// The answer the steps give one query, in order, each offer meeting the
/// answer so far by its step's effect.
pub(super) fn compose<'a>(c: &'a Coefficients, q: &Query, ask: &mut Ask<'a>) -> Result<Candidate<'a>> {
    let mut answer: Option<Candidate<'a>> = None;
    for step in STEPS {
        let effect = step.effect();
        let open = match (&answer, effect) {
            (None, Effect::Decide | Effect::Floor) => true,
            (Some(a), Effect::Floor | Effect::Cap) => a.basis == Basis::Guess,
            (Some(_), Effect::Raise) => true,
            _ => false,
        };
        if !open {
            continue;
        }
        let Some(offer) = step.offer(c, q, ask, answer.as_ref())? else { continue };
        debug_assert!(step.rules().contains(&offer.rule), "{:?} offered {:?}", step.rules(), offer.rule);
        answer = Some(match answer {
            None => offer,
            Some(a) => match effect {
                Effect::Floor | Effect::Raise if offer.bytes > a.bytes => offer,
                Effect::Cap if offer.bytes < a.bytes => offer,
                _ => a,
            },
        });
    }
    // The legacy floor answers or refuses when nothing has.
    answer.ok_or_else(|| crate::error::refused!("nothing prices {}", ask.key()))
}

fn add(a: u64, b: u64) -> Result<u64> {
    a.checked_add(b).ok_or_else(|| super::too_large(crate::words::RESERVATION_TOO_LARGE.text))
}

/// The query's own line, or its platform's line measured without an OS,
/// whichever prices higher.
struct OwnLine;

impl Step for OwnLine {
    fn name(&self) -> &'static str {
        "OwnLine"
    }

    fn rules(&self) -> &'static [Rule] {
        &[Rule::FittedLine, Rule::CarriedLine, Rule::AnyOsLine]
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
        let Some((rule, k, coef, b)) = c.measured_line(&mut ask.resolved.key, ask.at)? else { return Ok(None) };
        let bytes = add(add(b, ask.clip)?, ask.growth)?;
        Ok(Some(Candidate { rule, basis: Basis::Measured, line: Some((k, coef, b)), derived: false, bytes }))
    }
}

/// A tile with no line of its own: the platform's untiled line at one
/// tile, plus the host's copies of the output.
struct DerivedTile;

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

/// No line for the key: the largest line of the same (vae, op, tile,
/// dtype) on any platform, or of the same VAE, op and tile in another dtype
/// on this platform; for a tile, also each such untiled line priced as a
/// derived tile. Ties go to the first key in key order, a measured tile
/// before a derived one. For a video key, a line of its own platform and
/// dtype at another temporal tile makes the answer measured.
struct UnmeasuredRule;

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

/// A family with no measured line on the query's platform: its traced
/// shape scaled by its class's calibration here (docs/traced.md). A floor:
/// it raises the unmeasured rule's guess (a line of the same family on
/// another platform or dtype still prices when it is higher), and the host
/// estimates and the legacy value after it stay floors under it.
struct TracedRule;

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
        ask.traced = c.traced_on(ask.key(), ask.at, tile_on)?;
        let Some(t) = &ask.traced else { return Ok(None) };
        let bytes = add(add(t.bytes, ask.clip)?, ask.growth)?;
        Ok(Some(Candidate { rule: Rule::Traced, basis: Basis::Guess, line: None, derived: false, bytes }))
    }
}

/// A video key priced by a guess: the largest applicable host estimate
/// declared in the policy's `[video]`, where it is higher.
struct HostEstimate;

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
                super::too_large(crate::words::ESTIMATE_TOO_LARGE.fill(&[("host", &e.host), ("key", key)]))
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

/// The previous estimator's figure: a floor under an image's guess, and
/// what prices a key nothing else does (a video key's only there).
struct LegacyFloor;

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

/// A guess for a tile never prices above what a measured line of the same
/// platform prices a larger tile (or no tile) of the same image: a run on
/// a smaller tile holds no more.
struct MeasuredCap;

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

/// On a platform whose SDPA runs the math kernel, the mid-block's S × S
/// attention scores, where they need more than the line phase.
struct AttentionPhase;

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
                q.batch.checked_mul(latent).ok_or_else(|| super::too_large(crate::words::RESERVATION_TOO_LARGE.text))?
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The rules no step decides: the composition over smaller requests
    /// (`monotone::settle`) and `--legacy`, which prices by the previous
    /// estimator alone.
    const OUTSIDE_STEPS: [Rule; 2] = [Rule::MonotoneFloor, Rule::Legacy];

    /// Every rule an answer can carry is decided in one place: one step of
    /// the list, or the composition outside it.
    #[test]
    fn every_rule_is_one_step_of_the_list() {
        let mut seen: Vec<Rule> = OUTSIDE_STEPS.to_vec();
        for step in STEPS {
            for r in step.rules() {
                assert!(!seen.contains(r), "{r:?} is decided twice");
                seen.push(*r);
            }
        }
        for r in Rule::ALL {
            assert!(seen.contains(r), "{r:?} is decided by no step");
        }
        assert_eq!(seen.len(), Rule::ALL.len());
    }
}
