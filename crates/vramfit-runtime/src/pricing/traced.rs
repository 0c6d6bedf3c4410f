//! The traced rule (docs/traced.md): a family with no measured line on the
//! query's platform priced from its own architecture's trace, scaled by
//! its class's calibration on that platform.

use super::answer::{FollowsTrace, TracedTerms};
use super::{Coefficients, LineCoef};
use crate::contract::traced::{Calibration, TracedShape};
use crate::contract::LineKey;
use crate::error::Result;

/// The traced rule's terms for one query.
#[derive(Debug, Clone)]
pub(super) struct TracedOn<'a> {
    pub shape: &'a TracedShape,
    pub calibration: &'a Calibration,
    /// Where the shape was evaluated: pixels, or a video run's working set.
    pub at: u64,
    pub traced: u64,
    /// A tile with no shape of its own: the host's output copies added to
    /// the untiled shape's price at one tile (0 otherwise).
    pub copies: u64,
    /// The calibration's price of the traced bytes, plus `copies` (no clip,
    /// no growth).
    pub bytes: u64,
    /// The family's class has no calibration at all (no family of it is
    /// measured): the calibration is another class's, the most cautious.
    pub borrowed_from_class: Option<crate::registry::ArchClass>,
}

impl TracedOn<'_> {
    pub fn extrapolated(&self) -> bool {
        let [lo, hi] = self.shape.size_range;
        self.at < lo || self.at > hi
    }

    pub fn terms(&self, margin: String) -> TracedTerms {
        let (s, c) = (self.shape, self.calibration);
        TracedTerms {
            at: self.at,
            unit: s.unit,
            traced_bytes: self.traced,
            bytes: self.bytes,
            extrapolated: self.extrapolated(),
            shape: shape_name(s),
            shape_slope: s.slope.clone(),
            shape_base: s.base.clone(),
            size_range: s.size_range,
            calibration: c.id(),
            slope_from: c.slope_from.clone(),
            slope: c.slope.clone(),
            base_mib: c.base_mib,
            families: c.families.clone(),
            points: c.points,
            tile_copies_bytes: self.copies,
            margin,
        }
    }
}

/// A shape's name in answers: `vae/op/tile/dtype`, a video shape's tile
/// `Nf` (its temporal tile) or `one-frame`.
fn shape_name(s: &TracedShape) -> String {
    let tiles = if s.one_frame { "one-frame".to_string() } else { tiles_text(s.tile, s.temporal_tile) };
    format!("{}/{}/{}/{}", s.vae, s.op, tiles, s.dtype)
}

fn tiles_text(tile: u32, temporal_tile: Option<u32>) -> String {
    match temporal_tile {
        None => tile.to_string(),
        Some(t) => format!("{t}f"),
    }
}

impl Coefficients {
    /// The traced rule for `key` at `at` (pixels, or a video working set):
    /// the family's shape for the key's op, dtype and tiles, and its class's
    /// calibration for the op and tile (a tile with none of its own: the
    /// untiled one) on the key's platform in the key's dtype; where there is
    /// none, the highest-pricing of this platform's other dtypes and every
    /// platform's in this dtype (the unmeasured rule's candidates); where
    /// there is none of those either, the highest of the class's. Among
    /// candidates, those on the key's conv backend where there are any.
    /// None: no shape, no class or no calibration of the class for the op.
    ///
    /// A tile with no shape of its own (`tile_on`: one tile's pixels and
    /// the host's output copies) is the untiled shape at one tile plus the
    /// copies, as the derived tile rule prices a line. A video run of one
    /// frame (`one_frame`) is priced by the family's one-frame shape where
    /// there is one; a temporal tile with no shape, by the highest of the
    /// family's shapes of other temporal tiles at the run's working set.
    pub(super) fn traced_on(
        &self,
        key: &LineKey,
        at: u64,
        tile_on: Option<(u64, u64)>,
        one_frame: bool,
    ) -> Result<Option<TracedOn<'_>>> {
        let Some(section) = self.file.traced.as_ref() else { return Ok(None) };
        let Some(class) = self.file.registry.get(key.vae.as_str()).and_then(|e| e.class) else { return Ok(None) };
        // One frame of a video family: its one-frame shape where it has one.
        let on = || section.shapes_on(key.vae.as_str(), key.conv_backend, key.allocator);
        let one = |tile: u32| on().find(|s| one_frame && s.prices_one_frame(&key.vae, key.op, key.dtype, tile));
        // A temporal tile the family was not traced at: its shapes of the
        // other temporal tiles at this run's working set, the highest (the
        // unit is the same, as a video line of another temporal tile
        // prices a run of this one).
        let other_temporal = |tile: u32| {
            key.temporal_tile?;
            on().filter(|s| s.temporal_tile.is_some() && s.prices(&key.vae, key.op, key.dtype, tile, s.temporal_tile))
                .max_by_key(|s| (s.at(at), std::cmp::Reverse(s.temporal_tile)))
        };
        let find = |tile: u32| one(tile).or_else(|| self.shape_of(key, tile)).or_else(|| other_temporal(tile));
        let (shape, at, copies) = match (find(key.tile), tile_on) {
            (Some(s), _) => (s, at, 0),
            (None, Some((tile_pixels, copies))) if key.tile != 0 => match find(0) {
                Some(s) => (s, tile_pixels, copies),
                None => return Ok(None),
            },
            (None, _) => return Ok(None),
        };
        let Some(traced) = shape.at(at) else {
            return Err(crate::error::Error::too_large(crate::words::RESERVATION_TOO_LARGE.text));
        };
        let of_class = |tile: u32| {
            section.calibrations.iter().filter(move |c| c.class == class && c.op == key.op && c.tile == tile)
        };
        // The query's tile where the class has a calibration at it, else untiled.
        let tile = if of_class(key.tile).next().is_some() { key.tile } else { 0 };
        let here = |c: &&Calibration| c.holds_on(key.platform());
        let mut found: Vec<&Calibration> = of_class(tile).filter(|c| here(c) && c.dtype == key.dtype).collect();
        if found.is_empty() {
            // As the unmeasured rule: this platform's other dtypes, and
            // every platform's calibration in this dtype.
            found = of_class(tile).filter(|c| here(c) || c.dtype == key.dtype).collect();
        }
        if found.is_empty() {
            // Nothing here nor in this dtype: every calibration of the class.
            found = of_class(tile).collect();
        }
        // A class no family of which is measured has no calibration at all:
        // priced by the most cautious calibration of any class for the op
        // (the highest price at these traced bytes), and said so.
        let uncalibrated = !section.calibrations.iter().any(|c| c.class == class);
        if uncalibrated {
            let any_class = section.calibrations.iter().filter(|c| c.op == key.op && c.tile == 0);
            let here_or_dtype: Vec<&Calibration> =
                any_class.clone().filter(|c| here(c) && c.dtype == key.dtype).collect();
            found = if here_or_dtype.is_empty() { any_class.collect() } else { here_or_dtype };
        }
        // A calibration on the query's conv backend where one is among
        // them: the conv library's workspace is what a trace cannot see,
        // and MIOpen's is several times cuDNN's (FLUX.2's encode: 5.25
        // against 1.65 traced bytes), so another allocator on the same
        // backend is nearer than another backend.
        if found.iter().any(|c| c.conv_backend == key.conv_backend) {
            found.retain(|c| c.conv_backend == key.conv_backend);
        }
        // The highest price; a tie keeps the first in the file's order.
        let mut best: Option<(&Calibration, u64)> = None;
        for c in found {
            let bytes = c
                .price(traced)
                .map_err(|_| crate::error::Error::too_large(crate::words::RESERVATION_TOO_LARGE.text))?;
            if best.is_none_or(|(_, b)| bytes > b) {
                best = Some((c, bytes));
            }
        }
        let Some((calibration, bytes)) = best else { return Ok(None) };
        let bytes = bytes
            .checked_add(copies)
            .ok_or_else(|| crate::error::Error::too_large(crate::words::RESERVATION_TOO_LARGE.text))?;
        let borrowed_from_class = uncalibrated.then_some(class);
        Ok(Some(TracedOn { shape, calibration, at, traced, copies, bytes, borrowed_from_class }))
    }
}

/// A measured line priced past its largest measured size where its
/// family's trace grows faster than the line: the line's price at that
/// size scaled by the trace's growth from there (docs/traced.md, "Past
/// the measured range").
#[derive(Debug, Clone)]
pub(super) struct PastRange<'a> {
    pub shape: &'a TracedShape,
    /// The line's largest measured size.
    pub end: u64,
    /// The line's price there.
    pub line_at_end: u64,
    /// The shape's traced bytes there and at the query.
    pub traced_at_end: u64,
    pub traced_at: u64,
    /// `ceil(line_at_end × traced_at / traced_at_end)`.
    pub bytes: u64,
}

impl PastRange<'_> {
    pub fn terms(&self) -> FollowsTrace {
        let s = self.shape;
        FollowsTrace {
            shape: shape_name(s),
            measured_to: self.end,
            line_bytes_at_end: self.line_at_end,
            traced_at_end: self.traced_at_end,
            traced_at: self.traced_at,
            bytes: self.bytes,
        }
    }
}

impl Coefficients {
    /// The family's traced shape for `key`'s op, dtype and temporal tile at
    /// spatial tile `tile` (None: no traced section, or no such shape).
    fn shape_of(&self, key: &LineKey, tile: u32) -> Option<&TracedShape> {
        let section = self.file.traced.as_ref()?;
        section
            .shapes_on(key.vae.as_str(), key.conv_backend, key.allocator)
            .find(|s| s.prices(&key.vae, key.op, key.dtype, tile, key.temporal_tile))
    }

    /// What the measured line `key` prices at `at`: its formula, or past
    /// its largest measured size the formula's price there grown as the
    /// family's traced shape for the same key grows, where that is higher.
    /// A trace sees which tensors grow with the image; a line fitted on
    /// small sizes may not (docs/traced.md).
    pub(super) fn line_price(&self, key: &LineKey, coef: &LineCoef, at: u64) -> Result<u64> {
        let own = coef.at(at)?;
        Ok(self.past_range(key, coef, at)?.map_or(own, |p| p.bytes.max(own)))
    }

    /// The trace's growth past `key`'s measured range, where it prices
    /// above the line's formula (None elsewhere: inside the range, no shape
    /// for the key, or a trace that grows no faster).
    pub(super) fn past_range(&self, key: &LineKey, coef: &LineCoef, at: u64) -> Result<Option<PastRange<'_>>> {
        let Some([_, end]) = coef.size_range else { return Ok(None) };
        let Some(shape) = self.shape_of(key, key.tile).filter(|_| at > end) else { return Ok(None) };
        let too_large = || crate::error::Error::too_large(crate::words::RESERVATION_TOO_LARGE.text);
        let (Some(traced_at_end), Some(traced_at)) = (shape.at(end), shape.at(at)) else { return Err(too_large()) };
        let line_at_end = coef.at(end)?;
        let Some(grown) = crate::contract::traced::grown_past_end(line_at_end, traced_at_end, traced_at) else {
            return Ok(None);
        };
        let bytes = grown.map_err(|_| too_large())?;
        if bytes <= coef.at(at)? {
            return Ok(None);
        }
        Ok(Some(PastRange { shape, end, line_at_end, traced_at_end, traced_at, bytes }))
    }
}
