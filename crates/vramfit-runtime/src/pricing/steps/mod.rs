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
//! Adding a rule is adding one step to [`STEPS`] and its `Rule` label:
//! each step is a file of this folder, with the lookups only it uses.

use super::attention::AttnOn;
use super::tiled::TileOn;
use super::traced::TracedOn;
use super::video::{measured_here, VideoOn};
use super::{legacy, Coefficients, LineCoef, Query, Resolved, Rule};
use crate::contract::LineKey;
use crate::error::Result;
use crate::vocab::Dtype;

mod attention_phase;
mod derived_tile;
mod host_estimate;
mod legacy_floor;
mod measured_cap;
mod own_line;
mod traced_rule;
mod unmeasured_rule;

use {
    attention_phase::AttentionPhase, derived_tile::DerivedTile, host_estimate::HostEstimate, legacy_floor::LegacyFloor,
    measured_cap::MeasuredCap, own_line::OwnLine, traced_rule::TracedRule, unmeasured_rule::UnmeasuredRule,
};

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
    a.checked_add(b).ok_or_else(|| crate::error::Error::too_large(crate::words::RESERVATION_TOO_LARGE.text))
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
