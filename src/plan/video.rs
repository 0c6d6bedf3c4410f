//! A video VAE's fallback: the largest spatial × temporal tile pair whose
//! price fits (docs/DESIGN.md, "Video"). "Largest" is the working set, the
//! pixel-frames one step decodes: the pair that decodes the most per step.

use super::{by_legacy, tile_candidates, TileSearch, TILE_SEARCH_STEP};
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::{Price, Pricer, Query, VideoTerms};
use crate::registry::Walk;
use crate::units::mib_text as mib;
use anyhow::Result;

/// Temporal tiles to try, largest first: the whole clip at once (when the
/// query asked for it), then the temporal step (output frames per latent
/// frame) times 1, 2, 4, … below the clip and no larger than the tile asked.
/// A causal decoder takes no temporal tile.
pub fn temporal_candidates(v: &VideoTerms) -> Vec<u32> {
    if v.walk == Walk::Causal {
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
pub fn largest_tiles(
    pricer: &dyn Pricer,
    q: &Query,
    env: &EnvSnapshot,
    budget: u64,
    asked: &VideoTerms,
    known: &[u32],
) -> Result<TileSearch> {
    let below = (asked.tile != 0).then_some(asked.tile);
    let mut spatial = tile_candidates(q.width, q.height, below, known);
    if asked.tile == 0 {
        spatial.insert(0, 0);
    }
    let temporal = temporal_candidates(asked);
    let mut priced: Vec<Price> = Vec::with_capacity(spatial.len() * temporal.len());
    for s in &spatial {
        for t in &temporal {
            if (*s, *t) == (asked.tile, asked.temporal_tile) {
                continue; // the pair asked for is what did not fit
            }
            let tt = (asked.walk != Walk::Causal).then_some(*t);
            priced.push(pricer.price(&Query { tile: *s, temporal_tile: tt, ..q.clone() }, env)?);
        }
    }
    let work = |p: &Price| p.video.as_ref().map_or(0, |v| v.working_set);
    priced.sort_by(|a, b| {
        (work(b), b.spatial_tile(), b.temporal_tile()).cmp(&(work(a), a.spatial_tile(), a.temporal_tile()))
    });
    let fits = |p: &Price| p.bytes <= budget;
    let best = priced.iter().position(|p| fits(p) && !by_legacy(p));
    let any = priced.iter().position(fits);
    let chosen_at = best.or(any);
    let skipped_legacy = match (best, any) {
        (Some(b), Some(a)) if a < b => Some(priced[a].clone()),
        _ => None,
    };
    let next_larger = chosen_at.and_then(|i| i.checked_sub(1)).map(|i| priced[i].clone()).filter(|p| !fits(p));
    let name = |p: &Price| pair(p.spatial_tile(), p.temporal_tile().unwrap_or(0));
    let mut reasons = Vec::new();
    match chosen_at.map(|i| &priced[i]) {
        Some(c) => {
            reasons.push(format!(
                "{} is the largest working set ({} px) of {} spatial × temporal tile pairs searched (spatial \
                 multiples of {TILE_SEARCH_STEP} px and the measured tiles; temporal steps of {} frames) whose price \
                 fits: {} ≤ budget {}, by the {}",
                name(c),
                work(c),
                priced.len(),
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
        None => reasons.push(match priced.last() {
            Some(s) => {
                format!("no tile pair fits: even {} reserves {} > budget {}", name(s), mib(s.bytes), mib(budget))
            }
            None => "no smaller tile pair to try".to_string(),
        }),
    }
    let searched = priced.len();
    let chosen = chosen_at.map(|i| priced[i].clone());
    Ok(TileSearch { chosen, next_larger, skipped_legacy, searched, reasons })
}

/// `512 px × 16 frames`, `untiled × all frames`.
fn pair(spatial: u32, temporal: u32) -> String {
    let s = if spatial == 0 { "untiled".to_string() } else { format!("{spatial} px") };
    let t = if temporal == 0 { "all frames".to_string() } else { format!("{temporal} frames") };
    format!("tile {s} × {t}")
}
