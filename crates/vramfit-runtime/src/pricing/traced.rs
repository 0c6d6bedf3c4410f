//! The traced rule (docs/traced.md): a family with no measured line on the
//! query's platform priced from its own architecture's trace, scaled by
//! its class's calibration on that platform.

use super::answer::TracedTerms;
use super::Coefficients;
use crate::contract::traced::{Calibration, TracedShape};
use crate::contract::LineKey;
use anyhow::Result;

/// The traced rule's terms for one query.
#[derive(Debug, Clone)]
pub(super) struct TracedOn<'a> {
    pub shape: &'a TracedShape,
    pub calibration: &'a Calibration,
    /// Where the shape was evaluated: pixels, or a video run's working set.
    pub at: u64,
    pub traced: u64,
    /// The calibration's price of the traced bytes (no clip, no growth).
    pub bytes: u64,
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
            shape: format!("{}/{}/{}/{}", s.vae, s.op, tiles_text(s.tile, s.temporal_tile), s.dtype),
            shape_slope: s.slope.clone(),
            shape_base: s.base.clone(),
            size_range: s.size_range,
            calibration: format!(
                "{}/{}/{}/{}/{}/{}/{}",
                c.class, c.op, c.tile, c.conv_backend, c.allocator, c.os, c.dtype
            ),
            slope: c.slope.clone(),
            base_mib: c.base_mib,
            families: c.families.clone(),
            points: c.points,
            margin,
        }
    }
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
    /// calibration on the key's platform for the op and tile (a tile with
    /// none of its own: the untiled one), in the key's dtype, else the
    /// highest-pricing of its other dtypes. None: no shape, no class or no
    /// calibration.
    pub(super) fn traced_on(&self, key: &LineKey, at: u64) -> Result<Option<TracedOn<'_>>> {
        let Some(section) = self.file.traced.as_ref() else { return Ok(None) };
        let Some(class) = self.file.registry.get(key.vae.as_str()).and_then(|e| e.class) else { return Ok(None) };
        let Some(shape) =
            section.shapes.iter().find(|s| s.prices(&key.vae, key.op, key.dtype, key.tile, key.temporal_tile))
        else {
            return Ok(None);
        };
        let Some(traced) = shape.at(at) else {
            return Err(super::too_large(crate::words::RESERVATION_TOO_LARGE.text));
        };
        let on_platform = |tile: u32| {
            section
                .calibrations
                .iter()
                .filter(move |c| {
                    c.class == class && c.op == key.op && c.tile == tile && c.holds_on(key.conv_backend, key.allocator, key.os)
                })
                .collect::<Vec<_>>()
        };
        let mut found = on_platform(key.tile);
        if found.is_empty() && key.tile != 0 {
            found = on_platform(0);
        }
        if found.iter().any(|c| c.dtype == key.dtype) {
            found.retain(|c| c.dtype == key.dtype);
        }
        // The highest price; a tie keeps the first in the file's order.
        let mut best: Option<(&Calibration, u64)> = None;
        for c in found {
            let bytes = c.price(traced).map_err(|_| super::too_large(crate::words::RESERVATION_TOO_LARGE.text))?;
            if best.is_none_or(|(_, b)| bytes > b) {
                best = Some((c, bytes));
            }
        }
        Ok(best.map(|(calibration, bytes)| TracedOn { shape, calibration, at, traced, bytes }))
    }
}
