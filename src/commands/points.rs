//! `vramfit points`: list stored points, filtered by any key field.

use crate::points::summary::{PointFilter, PointList};
use crate::points::{LineKey, Point};
use crate::policy::Policy;
use crate::workspace::Workspace;
use anyhow::{anyhow, bail, Result};
use std::path::Path;

pub fn run(root: &Path, f: &PointFilter) -> Result<super::Outcome<PointList>> {
    Ok(super::Outcome::of(list(root, f)?))
}

fn list(root: &Path, f: &PointFilter) -> Result<PointList> {
    let ws = Workspace::new(root);
    let policy = ws.policy()?;
    let all = ws.points(&policy)?;
    if let Some(text) = &f.line {
        return one_line(&all, &policy, text, f.id.as_deref());
    }
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
    Ok(PointList { points, total: all.len(), line: None, excluded: vec![] })
}

/// The points of one line exactly as the fit groups them: through the same
/// grouping (`lines::group`: included points, the policy's line key, which
/// folds the OS into `any` off OS-specific platforms), so the listing and
/// the line's `point_ids` cannot disagree.
fn one_line(all: &[Point], policy: &Policy, text: &str, id: Option<&str>) -> Result<PointList> {
    let key = parse_key(text, policy)?;
    let groups = crate::lines::group(all, policy);
    let mut points: Vec<Point> = groups
        .get(&key)
        .into_iter()
        .flatten()
        .filter(|p| id.is_none_or(|s| p.id.contains(s)))
        .map(|p| (*p).clone())
        .collect();
    points.sort_by(|a, b| (a.pixels, &a.id).cmp(&(b.pixels, &b.id)));
    let excluded = all
        .iter()
        .filter(|p| policy.is_excluded(&p.id) && policy.line_key(p) == key)
        .map(|p| p.id.to_string())
        .collect();
    Ok(PointList { points, total: all.len(), line: Some(key.to_string()), excluded })
}

/// `vae/op/tile/backend/allocator/os/dtype`; the family may be given by a
/// model name, every part in any spelling its column accepts.
fn parse_key(text: &str, policy: &Policy) -> Result<LineKey> {
    let parts: Vec<&str> = text.trim().split('/').collect();
    let [vae, op, tile, backend, allocator, os, dtype] = parts[..] else {
        bail!("--line '{text}': expected vae/op/tile/backend/allocator/os/dtype (7 parts), found {}", parts.len());
    };
    let part = |what: &str, e: &dyn std::fmt::Display| anyhow!("--line '{text}': {what}: {e}");
    let family = policy.registry.resolve(vae).ok_or_else(|| {
        part("vae", &format!("unknown vae or model '{vae}' (registered: {})", policy.registry.describe()))
    })?;
    let (tile, temporal_tile) = LineKey::parse_tiles(tile.trim())
        .ok_or_else(|| part("tile", &format!("'{tile}' is not a tile (512, or 16f / 512x16f for a video line)")))?;
    Ok(LineKey {
        vae: family.into(),
        op: op.parse().map_err(|e| part("op", &e))?,
        tile,
        temporal_tile,
        conv_backend: backend.parse().map_err(|e| part("conv_backend", &e))?,
        allocator: allocator.parse().map_err(|e| part("allocator", &e))?,
        os: os.parse().map_err(|e| part("os", &e))?,
        dtype: dtype.parse().map_err(|e| part("dtype", &e))?,
    })
}
