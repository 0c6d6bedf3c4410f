//! Monotone composition (docs/DESIGN.md, "Monotone composition"): a larger
//! request never reserves less than a smaller one it contains.
//!
//! Each rule is monotone inside its own domain (a line grows with its
//! pixels, a derived tile with its tile, an estimate with its clip); what
//! broke the order were the places where one rule's domain ends and
//! another's begins: a tile with a line of its own beside tiles without, a
//! tile that grows to cover the image and becomes untiled, a temporal tile
//! that reaches the clip, a host estimate declared up to some clip length.
//! So the price of a query is the largest that the rules give the query
//! itself or any smaller request (every size, batch, frame count and tile
//! at most the query's, a tile covering the image counting as no tile).
//! That is the least monotone price at or above every rule's own answer,
//! so it is monotone by construction and never below a measured line.
//!
//! The largest over that infinite set is found among a few smaller
//! requests, the ends of the domains inside it (`corners`): between two
//! ends one rule prices with one formula that grows in every input, so its
//! largest value lies at the upper end. Their number depends on how many
//! tiles the file measured, never on the size of the numbers asked.

use super::answer::Lifted;
use super::platform::EnvSnapshot;
use super::{Coefficients, Query, Settled, TILE_STEP};
use crate::error::Result;
use crate::registry::VideoFacts;

impl Coefficients {
    /// A query priced by its own rules, then raised to the price of the
    /// highest smaller request it contains, where one prices higher.
    pub(super) fn settle(&self, q: &Query, env: &EnvSnapshot) -> Result<Settled<'_>> {
        // The query asked runs a clip its VAE takes; its corners (the clip
        // cut to one temporal tile) are requests inside it, not clips of their own.
        self.check_frames(q)?;
        let mut own = self.settle_one(q, env)?;
        let mut best: Option<(Query, Settled<'_>)> = None;
        for corner in self.corners(q, &own) {
            // A smaller request no rule can price sets nothing (its error
            // is its own: the query itself was priced); one too large to
            // price makes the query too large too.
            let s = match self.settle_one(&corner, env) {
                Ok(s) => s,
                Err(e) if e.code() == crate::error::Code::TooLarge => {
                    let at: [(&str, &dyn std::fmt::Display); 4] =
                        [("width", &q.width), ("height", &q.height), ("batch", &q.batch), ("error", &e)];
                    return Err(crate::error::Error::too_large(crate::words::CONTAINS_TOO_LARGE.fill(&at)));
                }
                Err(_) => continue,
            };
            if s.bytes() > best.as_ref().map_or(own.bytes(), |(_, b)| b.bytes()) {
                best = Some((corner, s));
            }
        }
        own.lifted = best.map(Box::new);
        Ok(own)
    }

    /// The smaller requests where some rule's domain ends inside the query
    /// (in a fixed order, so a tie keeps the first).
    fn corners(&self, q: &Query, own: &Settled<'_>) -> Vec<Query> {
        let (w, h) = (q.width, q.height);
        let family = &own.key().vae;
        let mut out = Vec::new();
        match own.ask.video.as_ref() {
            None => {
                let ends = self.corner_tiles.get(&(family.clone(), q.op)).map_or(&[][..], Vec::as_slice);
                for tile in spatial_corners(own.key().tile, w, h, ends) {
                    out.push(Query { tile, ..q.clone() });
                }
                if own.key().tile != 0 {
                    out.push(shrunk_to_tile(q, own.key().tile));
                }
            }
            Some(v) => {
                let facts = v.facts;
                let mut frame_corners = vec![q.frames];
                // One frame is a shape of its own (a video VAE run on an
                // image): every clip it takes is floored by it, so a clip
                // never prices below a single frame of its size (issue 62:
                // frames 1 -> 2 fell to 0.32x for Cosmos).
                if q.frames > 1 && facts.frame_count(1, q.op == crate::vocab::Op::Decode).is_ok() {
                    frame_corners.push(1);
                }
                if let Some(video) = self.file.video.as_ref() {
                    let ends = video.estimates.iter().filter(|e| e.vae == family.as_str() && e.op == q.op);
                    frame_corners.extend(ends.map(|e| e.max_clip).filter(|m| (1..q.frames).contains(m)));
                }
                frame_corners.sort_unstable();
                frame_corners.dedup();
                let measured = self.line_temporal_tiles.get(&(family.clone(), q.op)).map_or(&[][..], Vec::as_slice);
                for frames in frame_corners {
                    let at = Query { frames, ..q.clone() };
                    let mut times = vec![at.clone()];
                    if facts.takes_temporal_tile() {
                        times.extend(temporal_corners(facts, &at, measured));
                    }
                    for t in times {
                        // The spatial ends of each: the largest tile short of
                        // the image, or the image shrunk to the tile.
                        match v.run.tile {
                            0 => out.extend(
                                spatial_corners(0, w, h, &[]).into_iter().map(|tile| Query { tile, ..t.clone() }),
                            ),
                            tile => out.push(shrunk_to_tile(&t, tile)),
                        }
                        out.push(t);
                    }
                }
                out.retain(|c| c != q);
            }
        }
        out
    }
}

/// The largest tile edge (a multiple of [`TILE_STEP`] that a tile field
/// holds) strictly below `n`.
fn tile_below(n: u64) -> Option<u32> {
    let step = u64::from(TILE_STEP);
    let t = (n.saturating_sub(1) / step * step).min(u64::from(u32::MAX) / step * step);
    u32::try_from(t).ok().filter(|t| *t >= TILE_STEP)
}

/// The tiles below a query's `tile` (0: untiled) that still tile a `w`×`h`
/// image and end a domain: each tile with a line of its own (`measured`,
/// sorted), and the largest tile with none (derived, unmeasured or legacy,
/// one formula that grows with the tile).
fn spatial_corners(tile: u32, w: u64, h: u64, measured: &[u32]) -> Vec<u32> {
    let Some(widest) = tile_below(w.max(h)) else { return Vec::new() };
    // Tiles that tile the image and lie strictly below the query's.
    let limit = if tile == 0 { widest } else { widest.min(tile.saturating_sub(TILE_STEP)) };
    let mut out: Vec<u32> = measured.iter().copied().filter(|t| *t > 0 && *t <= limit).collect();
    // Skip down past measured tiles to the largest generic one (the query's
    // own tile, when generic, is the query itself).
    if tile == 0 || measured.binary_search(&tile).is_ok() {
        let mut t = limit;
        while t >= TILE_STEP && measured.binary_search(&t).is_ok() {
            t -= TILE_STEP;
        }
        if t >= TILE_STEP {
            out.push(t);
        }
    }
    out
}

/// The query with its image cut to one `tile` (which then covers it: the
/// untiled price of one tile's area, which every tiled run of the image
/// holds at least).
fn shrunk_to_tile(q: &Query, tile: u32) -> Query {
    let t = u64::from(tile);
    Query { width: q.width.min(t), height: q.height.min(t), tile: 0, ..q.clone() }
}

/// The temporal tiles below a video query's that end a domain: each
/// temporal tile with a line of its own (`measured`, sorted), the largest
/// with none, and, for a query tiled in time, the clip cut to one
/// temporal tile (then the whole clip).
fn temporal_corners(facts: &VideoFacts, q: &Query, measured: &[u32]) -> Vec<Query> {
    let tt = facts.key_temporal_tile(q.temporal_tile, q.frames);
    let frames = q.frames;
    let Ok(shortest_clip) = u32::try_from(frames.saturating_sub(1)) else { return Vec::new() };
    // Temporal tiles that tile the clip and lie strictly below the query's.
    let limit = if tt == 0 { shortest_clip } else { shortest_clip.min(tt - 1) };
    let mut out: Vec<Query> = measured
        .iter()
        .filter(|t| (1..=limit).contains(*t))
        .map(|t| Query { temporal_tile: Some(*t), ..q.clone() })
        .collect();
    if tt == 0 || measured.binary_search(&tt).is_ok() {
        let mut t = limit;
        while t >= 1 && measured.binary_search(&t).is_ok() {
            t -= 1;
        }
        if t >= 1 {
            out.push(Query { temporal_tile: Some(t), ..q.clone() });
        }
    }
    if tt != 0 {
        out.push(Query { frames: u64::from(tt), temporal_tile: Some(0), ..q.clone() });
    }
    out
}

/// What an answer says of the smaller request that priced it.
pub(super) fn lifted(own: &Settled<'_>, smaller: &Query, by: &Settled<'_>) -> Lifted {
    Lifted {
        width: smaller.width,
        height: smaller.height,
        frames: smaller.frames,
        tile: by.ask.video.as_ref().map_or(by.key().tile, |v| v.run.tile),
        temporal_tile: by.ask.video.as_ref().map(|v| v.run.temporal_tile),
        rule: by.rule(),
        priced_by: by.priced_by().cloned(),
        bytes: by.bytes(),
        extrapolated: by.extrapolated(),
        own_rule: own.rule(),
        own_bytes: own.bytes(),
    }
}

/// The warning of a lifted answer.
pub(super) fn lifted_warning(l: &Lifted) -> String {
    let clip = match l.temporal_tile {
        Some(t) => format!(" × {} frames, temporal tile {t}", l.frames),
        None => String::new(),
    };
    format!(
        "a smaller request, {}x{}{clip} at tile {}, is priced higher ({} B, {}) than this one's own {} ({} B): a \
         larger request never reserves less, so this one reserves that",
        l.width,
        l.height,
        l.tile,
        l.bytes,
        l.rule.as_str(),
        l.own_rule.as_str(),
        l.own_bytes
    )
}
