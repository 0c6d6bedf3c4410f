//! `vramfit points`: list stored points, filtered by any key field.

use crate::points::summary::{PointFilter, PointList};
use crate::points::Point;
use crate::workspace::Workspace;
use anyhow::{bail, Result};
use std::path::Path;

pub fn run(root: &Path, f: &PointFilter) -> Result<PointList> {
    let ws = Workspace::new(root);
    let policy = ws.policy()?;
    let all = ws.points(&policy)?;
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
        .filter(|p| family.as_ref().is_none_or(|v| &p.key.vae == v))
        .filter(|p| model.as_ref().is_none_or(|m| p.model.as_ref().is_some_and(|pm| pm.eq_ignore_ascii_case(m))))
        .filter(|p| f.op.is_none_or(|o| p.key.op == o))
        .filter(|p| f.tile.is_none_or(|t| p.key.tile == t))
        .filter(|p| f.conv_backend.is_none_or(|b| p.key.conv_backend == b))
        .filter(|p| f.allocator.is_none_or(|a| p.key.allocator == a))
        .filter(|p| f.os.is_none_or(|o| p.key.os == o))
        .filter(|p| f.dtype.is_none_or(|d| p.key.dtype == d))
        .filter(|p| f.id.as_ref().is_none_or(|s| p.id.contains(s.as_str())))
        .cloned()
        .collect();
    let mut points = points;
    // People read a listing line by line, smallest size first.
    points.sort_by(|a, b| (a.key(), a.pixels, &a.id).cmp(&(b.key(), b.pixels, &b.id)));
    Ok(PointList { points, total: all.len() })
}
