//! The line key: the seven fields that name a line (and a video line's
//! temporal tile), as every file and answer writes it.

use crate::text::Text;
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The seven fields that decide which line a point belongs to (docs/DESIGN.md, "Points"),
/// and an eighth for a video VAE: the temporal tile.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LineKey {
    pub vae: Text,
    pub op: Op,
    /// Spatial tile edge, pixels (0: untiled). A video line's key holds 0:
    /// its spatial tile is in the working set it is fitted against.
    pub tile: u32,
    /// Absent for an image VAE. For a video VAE: on a point, the temporal
    /// tile it ran with (absent: none); on a line, the temporal tile every
    /// point and query of the line runs with, 0 for none (docs/DESIGN.md, "Video").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temporal_tile: Option<u32>,
    pub conv_backend: ConvBackend,
    pub allocator: Allocator,
    pub os: Os,
    pub dtype: Dtype,
}

impl fmt::Display for LineKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}/{}/{}/{}/{}",
            self.vae,
            self.op,
            self.tiles_text(),
            self.conv_backend,
            self.allocator,
            self.os
        )?;
        write!(f, "/{}", self.dtype)
    }
}

impl LineKey {
    /// The key text's tile segment ([`crate::vocab::tiles_text`]).
    pub fn tiles_text(&self) -> String {
        crate::vocab::tiles_text(self.tile, self.temporal_tile)
    }

    /// Reads a tile segment ([`crate::vocab::parse_tiles`]).
    pub fn parse_tiles(text: &str) -> Option<(u32, Option<u32>)> {
        crate::vocab::parse_tiles(text)
    }

    /// The platform the key names.
    pub fn platform(&self) -> crate::vocab::Platform {
        crate::vocab::Platform::new(self.conv_backend, self.allocator, self.os)
    }
}
