//! `vramfit reserve`: what would this decode or encode reserve? Prices a
//! typed query with the coefficients it names.

use super::{Found, Outcome};
use crate::plan::MaxTileReport;
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::source::QueryOptions;
use crate::pricing::{Pricer, ReserveReport};
use anyhow::Result;

/// `legacy`: price with the v1 estimator (`--legacy`); `strict`: an
/// answer resting on an estimate is a finding (`--strict`).
pub fn run(opts: &QueryOptions, env: &EnvSnapshot, legacy: bool, strict: bool) -> Result<Outcome<ReserveReport>> {
    let c = opts.source.load()?;
    let q = opts.query()?;
    let price = if legacy { c.price_legacy(&q, env) } else { c.price(&q, env) };
    let price = super::or_local_copy(&opts.source, price)?;
    let (found, mut notes) = super::strict(strict, price.estimates());
    notes.splice(0..0, super::local_copy_note(&opts.source));
    let r = ReserveReport { price, coefficients: c.source.clone() };
    Ok(Outcome { notes, ..Outcome::of(r).found(found) })
}

/// `reserve --max-tile-for BUDGET`: the largest tile whose price fits.
pub fn max_tile(opts: &QueryOptions, env: &EnvSnapshot, budget: u64, strict: bool) -> Result<Outcome<MaxTileReport>> {
    let c = opts.source.load()?;
    let q = opts.query()?;
    let known = c.known_tiles().to_vec();
    let search = super::or_local_copy(&opts.source, crate::plan::largest_tile(&c, &q, env, budget, None, &known))?;
    let estimates = search.chosen.as_ref().map(|p| p.estimates()).unwrap_or_default();
    let (strict_found, mut notes) = super::strict(strict, estimates);
    notes.splice(0..0, super::local_copy_note(&opts.source));
    let found = if search.chosen.is_none() { Found::NoTileFits } else { strict_found };
    let tile = search.chosen.as_ref().map(|p| p.spatial_tile());
    let r = MaxTileReport { budget_bytes: budget, tile, search, coefficients: c.source.clone() };
    Ok(Outcome { notes, ..Outcome::of(r).found(found) })
}
