//! `vramfit points`: list stored points, filtered by any key field.

use crate::points::{store, Point};
use crate::policy;
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
use anyhow::{bail, Result};
use serde::Serialize;
use std::path::Path;

/// Filters; each given one must match.
#[derive(Debug, Clone, Default)]
pub struct PointFilter {
    /// A family or a model alias (`sdxl` selects the `sd` family's SDXL points).
    pub vae: Option<String>,
    pub op: Option<Op>,
    pub tile: Option<u32>,
    pub conv_backend: Option<ConvBackend>,
    pub allocator: Option<Allocator>,
    pub os: Option<Os>,
    pub dtype: Option<Dtype>,
    /// Substring of the id.
    pub id: Option<String>,
}

/// The listing.
#[derive(Debug, Clone, Serialize)]
pub struct PointList {
    /// Matching points, sorted by key, then size, then id.
    pub points: Vec<Point>,
    /// Points in the store.
    pub total: usize,
}

pub fn run(root: &Path, f: &PointFilter) -> Result<PointList> {
    let policy = policy::load_strict(root)?;
    let all = store::load(root, &policy.registry)?;
    let (family, model) = match &f.vae {
        None => (None, None),
        Some(name) => match policy.registry.resolve(name) {
            Some(fam) if fam.eq_ignore_ascii_case(name) => (Some(fam.to_string()), None),
            Some(fam) => (Some(fam.to_string()), Some(name.to_ascii_lowercase())),
            None => bail!("unknown vae or model '{name}' (registered: {})", policy.registry.describe()),
        },
    };
    let points: Vec<Point> = all
        .iter()
        .filter(|p| family.as_ref().is_none_or(|v| &p.vae == v))
        .filter(|p| model.as_ref().is_none_or(|m| p.model.as_ref().is_some_and(|pm| pm.eq_ignore_ascii_case(m))))
        .filter(|p| f.op.is_none_or(|o| p.op == o))
        .filter(|p| f.tile.is_none_or(|t| p.tile == t))
        .filter(|p| f.conv_backend.is_none_or(|b| p.conv_backend == b))
        .filter(|p| f.allocator.is_none_or(|a| p.allocator == a))
        .filter(|p| f.os.is_none_or(|o| p.os == o))
        .filter(|p| f.dtype.is_none_or(|d| p.dtype == d))
        .filter(|p| f.id.as_ref().is_none_or(|s| p.id.contains(s.as_str())))
        .cloned()
        .collect();
    let mut points = points;
    // People read a listing line by line, smallest size first.
    points.sort_by(|a, b| (a.key(), a.pixels, &a.id).cmp(&(b.key(), b.pixels, &b.id)));
    Ok(PointList { points, total: all.len() })
}
