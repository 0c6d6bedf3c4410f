//! The derived tile (docs/DESIGN.md, "Pricing", step 3): a tile with no
//! line of its own, priced from its platform's untiled line at one tile
//! plus the output copies the host keeps while it blends the tiles.

use super::{Coefficients, Query, TileTerms};
use crate::contract::LineKey;
use crate::error::Result;
use crate::pricing::platform::Detected;

impl Coefficients {
    /// The host a derived tile is priced for: `--host`, else the file's default.
    pub(super) fn tiling_host(&self, q: &Query) -> Result<Option<(&str, &crate::contract::TilingHost, bool)>> {
        let Some(t) = self.file.tiling.as_ref() else {
            return match &q.host {
                Some(h) => crate::error::refuse!(crate::words::NO_TILING_HOSTS.fill(&[("host", h)])),
                None => Ok(None),
            };
        };
        let (name, given) = match &q.host {
            Some(h) => (h.trim(), true),
            None => (t.default_host.as_str(), false),
        };
        match t.hosts.get_key_value(name) {
            Some((n, h)) => Ok(Some((n.as_str(), h, given))),
            None => {
                let known = t.hosts.keys().map(String::as_str).collect::<Vec<_>>().join(", ");
                crate::error::refuse!(
                    crate::words::UNKNOWN_HOST.fill(&[("host", &crate::text::quoted(name)), ("known", &known)])
                )
            }
        }
    }

    /// A tiled query's two derived terms' inputs: one tile's pixels and the
    /// output copies' bytes (None: untiled, or no tiling rule in the file).
    pub(super) fn tile_on(&self, q: &Query, key: &LineKey, pixels: u64) -> Result<Option<TileOn<'_>>> {
        if key.tile == 0 {
            return Ok(None);
        }
        let Some((host, h, given)) = self.tiling_host(q)? else { return Ok(None) };
        let t = u64::from(key.tile);
        let tile_pixels = crate::exact::pixels(t.min(q.width), t.min(q.height), q.batch).ok_or_else(|| {
            crate::error::Error::too_large(format!("tile {t} × batch {} is too large to price", q.batch))
        })?;
        let copies_bytes = h.copies_bytes(key.dtype, pixels).ok_or_else(|| {
            crate::error::Error::too_large(crate::words::COPIES_TOO_LARGE.fill(&[("pixels", &pixels)]))
        })?;
        Ok(Some(TileOn { host, given, h, tile_pixels, copies_bytes }))
    }
}

/// What a tiled query derives from: the host, one tile's pixels, the copies' bytes.
pub(super) struct TileOn<'a> {
    pub(super) host: &'a str,
    /// Whether `--host` named it (else the file's default).
    pub(super) given: bool,
    pub(super) h: &'a crate::contract::TilingHost,
    pub(super) tile_pixels: u64,
    pub(super) copies_bytes: u64,
}

impl TileOn<'_> {
    pub(super) fn terms(&self, tile_bytes: u64) -> TileTerms {
        let from = if self.given { "flag" } else { "the coefficients' default host" };
        TileTerms {
            host: Detected { value: self.host.to_string(), from: from.into() },
            copies: crate::exact::exact_decimal(&self.h.copies),
            copies_source: self.h.source.clone(),
            tile_pixels: self.tile_pixels,
            tile_bytes,
            copies_bytes: self.copies_bytes,
        }
    }
}
