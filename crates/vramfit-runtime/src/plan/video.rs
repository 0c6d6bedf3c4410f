//! A video VAE's fallback: the largest spatial × temporal tile pair whose
//! price fits (docs/DESIGN.md, "Video"). "Largest" is the working set, the
//! pixel-frames one step decodes: the pair that decodes the most per step.

use super::{by_legacy, TileCandidates, TileSearch, TILE_SEARCH_STEP};
use crate::error::Result;
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::{Price, Pricer, Query, VideoTerms};
use crate::registry::Walk;
use crate::units::mib_text as mib;

/// Temporal tiles to try, largest first: the whole clip at once (when the
/// query asked for it), then the temporal step (output frames per latent
/// frame) times 1, 2, 4, … below the clip and no larger than the tile asked.
/// Only a decoder that walks tiles takes a temporal tile: a causal one
/// walks its own steps, and one that decodes every frame at once (`all`)
/// has no temporal tile to shrink, so neither is searched over one.
pub fn temporal_candidates(v: &VideoTerms) -> Vec<u32> {
    if v.walk != Walk::Tiles {
        return vec![0];
    }
    let step = u32::try_from(v.temporal_compression.max(1)).unwrap_or(u32::MAX);
    let ceiling = if v.temporal_tile == 0 { v.frames } else { u64::from(v.temporal_tile) };
    let mut out: Vec<u32> = std::iter::successors(Some(step), |t| t.checked_mul(2))
        .take_while(|t| u64::from(*t) < v.frames && u64::from(*t) <= ceiling)
        .collect();
    if v.temporal_tile == 0 {
        out.push(0);
    }
    out.reverse();
    out
}

/// The largest (spatial, temporal) pair, other than the one asked, whose
/// price fits: measured, derived or estimated prices before a legacy guess.
/// For each temporal tile (log-many), the largest spatial tile that fits
/// is found by bisection (prices never fall as a tile grows), so the
/// search prices O(log² n) pairs whatever the image's size.
pub fn largest_tiles(
    pricer: &dyn Pricer,
    q: &Query,
    env: &EnvSnapshot,
    budget: u64,
    asked: &VideoTerms,
    known: &[u32],
) -> Result<TileSearch> {
    let below = (asked.tile != 0).then_some(asked.tile);
    let spatial = TileCandidates::new(q.width, q.height, below, known);
    let temporal = temporal_candidates(asked);
    let price = |s: u32, t: u32| {
        let tt = (asked.walk == Walk::Tiles).then_some(t);
        pricer.price(&Query { tile: s, temporal_tile: tt, ..q.clone() }, env)
    };
    let fits = |p: &Price| p.bytes <= budget;
    let asked_pair = (asked.tile, asked.temporal_tile);
    // Per temporal tile, the largest spatial tile that fits (untiled first, when untiled was asked).
    let mut best_each: Vec<Price> = Vec::new();
    let mut searched = 0usize;
    for t in &temporal {
        let untiled = asked.tile == 0 && (0, *t) != asked_pair;
        searched = searched.saturating_add(spatial.len()).saturating_add(usize::from(untiled));
        let whole = if untiled { Some(price(0, *t)?).filter(fits) } else { None };
        let chosen = match whole {
            Some(p) => Some(p),
            None => spatial.largest(|s| Ok(fits(&price(s, *t)?)))?.map(|s| price(s, *t)).transpose()?,
        };
        best_each.extend(chosen);
    }
    let work = |p: &Price| p.video.as_ref().map_or(0, |v| v.working_set);
    let order = |a: &Price, b: &Price| {
        (work(b), b.spatial_tile(), b.temporal_tile()).cmp(&(work(a), a.spatial_tile(), a.temporal_tile()))
    };
    best_each.sort_by(order);
    let any = best_each.first().cloned();
    let mut chosen = best_each.iter().find(|p| !by_legacy(p)).cloned();
    if chosen.is_none() {
        // Every pair's largest fit is a legacy guess: a bounded window below each for a priced one.
        let mut found: Vec<Price> = Vec::new();
        for p in &best_each {
            let t = p.temporal_tile().unwrap_or(0);
            for s in spatial.below(p.spatial_tile()).take(super::LEGACY_WINDOW) {
                let c = price(s, t)?;
                if fits(&c) && !by_legacy(&c) {
                    found.push(c);
                    break;
                }
            }
        }
        found.sort_by(order);
        chosen = found.into_iter().next();
    }
    let skipped_legacy = match (&chosen, &any) {
        (Some(c), Some(a)) if c != a => Some(a.clone()),
        _ => None,
    };
    let chosen = chosen.or(any);
    let next_larger = match &chosen {
        Some(c) => {
            let t = c.temporal_tile().unwrap_or(0);
            match c.spatial_tile() {
                0 => None,
                s => spatial.above(s).map(|s| price(s, t)).transpose()?.filter(|p| !fits(p)),
            }
        }
        None => None,
    };
    let name = |p: &Price| pair(p.spatial_tile(), p.temporal_tile().unwrap_or(0));
    let mut reasons = Vec::new();
    match &chosen {
        Some(c) => {
            reasons.push(format!(
                "{} is the largest working set ({} px) of {} spatial × temporal tile pairs searched (spatial \
                 multiples of {TILE_SEARCH_STEP} px and the measured tiles; temporal steps of {} frames) whose price \
                 fits: {} ≤ budget {}, by the {}",
                name(c),
                work(c),
                searched,
                asked.temporal_compression,
                mib(c.bytes),
                mib(budget),
                c.rule.as_str()
            ));
            if let Some(n) = &next_larger {
                reasons.push(format!("{} reserves {} > budget", name(n), mib(n.bytes)));
            }
            if let Some(l) = &skipped_legacy {
                reasons.push(format!(
                    "{} fits only by the legacy floor's guess ({}): passed over for a measured or estimated price",
                    name(l),
                    mib(l.bytes)
                ));
            }
        }
        None => {
            let t = temporal.last().copied().unwrap_or(0);
            let smallest = spatial.smallest().map(|s| price(s, t)).transpose()?;
            reasons.push(match smallest {
                Some(s) => {
                    format!("no tile pair fits: even {} reserves {} > budget {}", name(&s), mib(s.bytes), mib(budget))
                }
                None => "no smaller tile pair to try".to_string(),
            })
        }
    }
    Ok(TileSearch { chosen, next_larger, skipped_legacy, searched, reasons })
}

/// `512 px × 16 frames`, `untiled × all frames`.
fn pair(spatial: u32, temporal: u32) -> String {
    let s = if spatial == 0 { "untiled".to_string() } else { format!("{spatial} px") };
    let t = if temporal == 0 { "all frames".to_string() } else { format!("{temporal} frames") };
    format!("tile {s} × {t}")
}
