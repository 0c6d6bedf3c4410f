//! The canonical points file `measurements/vae.json`: every point, sorted by
//! id, in one byte form for the same content.

use super::Point;
use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const FORMAT: &str = "vramfit-points";
pub const VERSION: u32 = 1;

/// Path of the points file under a root.
pub fn path(root: &Path) -> PathBuf {
    root.join("measurements").join("vae.json")
}

#[derive(Serialize, Deserialize)]
struct StoreFile {
    format: String,
    version: u32,
    points: Vec<Point>,
}

/// Loads the points (sorted by id). A missing file is an empty store.
pub fn load(root: &Path) -> Result<Vec<Point>> {
    let p = path(root);
    if !p.exists() {
        return Ok(Vec::new());
    }
    let text = crate::fsio::read_text(&p)?;
    parse(&text, &p.display().to_string())
}

/// Parses a points file, checking its format and that ids are unique.
pub fn parse(text: &str, file: &str) -> Result<Vec<Point>> {
    let f: StoreFile = serde_json::from_str(text).map_err(|e| anyhow!("{file}:{}: {e}", e.line()))?;
    if f.format != FORMAT || f.version != VERSION {
        bail!("{file}: format '{}' version {} is not {FORMAT} version {VERSION}", f.format, f.version);
    }
    let mut points = f.points;
    points.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some(w) = points.windows(2).find(|w| w[0].id == w[1].id) {
        bail!("{file}: id '{}' appears twice", w[0].id);
    }
    Ok(points)
}

/// The canonical bytes of a set of points, whatever their order.
pub fn to_bytes(points: &[Point]) -> Result<Vec<u8>> {
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    crate::fsio::to_json_bytes(&StoreFile { format: FORMAT.into(), version: VERSION, points: sorted })
}
