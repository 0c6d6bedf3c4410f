//! Traced shapes and their calibration (docs/traced.md): pure math over the
//! traced rows, the points and the policy, no I/O.
//!
//! A family's *shape* for one (op, dtype, tile) is the exact upper envelope
//! of its traced rows in pixels, with no margin: the traced bytes at any
//! size, rounded up. A *calibration* scales traced bytes to demand for one
//! architecture class on one platform: the exact envelope of the measured
//! points of the class, x = the trace at the point's geometry, y = its
//! demand (the `calibration` module). The traced price is the calibration
//! at the family's own trace.

use crate::contract::traced::{Calibration, ReplayPlatform, ShapeUnit, TracedSection, TracedShape, TRACED_FORMULA};
use crate::fit::{self, Envelope, FitPoint};
use crate::points::traced::TracedRow;
use crate::points::Point;
use crate::policy::{Geometry, Policy};
use crate::vocab::{Dtype, Op};
use anyhow::{anyhow, bail, Result};
use std::collections::{BTreeMap, BTreeSet};

mod calibration;
pub mod validation;
pub use calibration::{
    calibrate_with_envelope, calibration_points, calibrations, priced, Calibrated, CalibrationKey, Fitted,
};

/// What one shape is traced for: an image family's tile, or a video
/// family's temporal tile as its key has it (its spatial tile is in the
/// working set, as a video line's is).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ShapeKey {
    pub vae: String,
    pub op: Op,
    pub dtype: Dtype,
    pub tile: u32,
    pub temporal_tile: Option<u32>,
    /// A video family's one-frame rows (no temporal tile): their own
    /// envelope, for one-frame runs (`TracedShape::one_frame`).
    pub one_frame: bool,
    /// The platform whose replay the shape is drawn through (None: the
    /// rows' live peak). Last, so a family's shapes sort together.
    pub replayed_on: Option<ReplayPlatform>,
}

/// One shape: its envelope and the rows behind it.
#[derive(Debug)]
pub struct Shape {
    pub envelope: Envelope,
    pub rows: usize,
    pub size_range: [u64; 2],
}

/// Every family's traced shapes.
#[derive(Debug, Default)]
pub struct Shapes(BTreeMap<ShapeKey, Shape>);

impl Shapes {
    /// The shapes of the rows, in each family's line coordinates: an image
    /// row (one frame) at its pixels; a video row at its working set, less
    /// the clip term its price adds back (as a video line's points are
    /// fitted). Rows of two configs of one family (SD1.5 and SDXL) join one
    /// envelope.
    pub fn of(rows: &[TracedRow], policy: &Policy) -> Result<Shapes> {
        let mut grouped: BTreeMap<ShapeKey, Vec<FitPoint>> = BTreeMap::new();
        let ids: Vec<String> = rows.iter().map(|r| format!("{}:{}", r.file, r.line)).collect();
        for (r, id) in rows.iter().zip(&ids) {
            let Some((key, x, clip)) = row_coordinates(r, policy) else {
                bail!("{id}: a traced row too large to place on its family's line")
            };
            // One shape per platform the row was replayed on.
            for (replayed_on, y) in r.peaks() {
                let key = ShapeKey { replayed_on, ..key.clone() };
                grouped.entry(key).or_default().push(FitPoint { x, y: y.saturating_sub(clip), id });
            }
        }
        let mut out = BTreeMap::new();
        for (key, pts) in grouped {
            let envelope = fit::envelope(&pts).map_err(|e| anyhow!("traced shape of {} {}: {e}", key.vae, key.op))?;
            let lo = pts.iter().map(|p| p.x).min().unwrap_or(0);
            let hi = pts.iter().map(|p| p.x).max().unwrap_or(0);
            out.insert(key, Shape { envelope, rows: pts.len(), size_range: [lo, hi] });
        }
        Ok(Shapes(out))
    }

    /// The traced bytes of `key` at `x`, `max(0, ⌈a·x + b⌉)` (None: no shape).
    pub fn at(&self, key: &ShapeKey, x: u64) -> Option<u64> {
        let v = fit::envelope_at(&self.0.get(key)?.envelope, x).ok()?;
        u64::try_from(v.ceil().max(0)).ok()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&ShapeKey, &Shape)> {
        self.0.iter()
    }

    /// The shape a point's line follows past its range: its family, op,
    /// dtype and tile, a clip's shape for every video point (None: no such
    /// shape).
    pub fn key_of(&self, p: &Point, policy: &Policy) -> Option<ShapeKey> {
        point_coordinates(p, policy).map(|(k, _, _)| self.on_platform(k, p)).filter(|k| self.0.contains_key(k))
    }

    /// `key` drawn through the point's own platform's replay where the
    /// family has it, else the reference platform's, else its live peak
    /// (as the runtime's `TracedSection::shapes_on` picks).
    fn on_platform(&self, key: ShapeKey, p: &Point) -> ShapeKey {
        let own = ReplayPlatform { conv_backend: p.key.conv_backend, allocator: p.key.allocator };
        let replayed_on = crate::contract::traced::replay_for(own, |on| {
            self.0.keys().any(|k| k.vae == key.vae && k.replayed_on == on)
        });
        ShapeKey { replayed_on, ..key }
    }

    /// The trace at a point's own geometry, and the clip term its demand
    /// holds (0 for an image): its family, op, dtype and tile, at its line
    /// coordinate (batch included).
    /// A point outside its shape's traced range has none: the trace there
    /// is extrapolated, and a calibration rests on traced geometry only.
    /// A video point of one frame reads its family's one-frame shape where
    /// there is one, as `reserve` prices it.
    pub fn at_point(&self, p: &Point, policy: &Policy) -> Option<(u64, u64)> {
        let (key, x, clip) = point_coordinates(p, policy)?;
        let key = self.on_platform(key, p);
        let one = ShapeKey { temporal_tile: None, one_frame: true, ..key.clone() };
        let key = if key.temporal_tile.is_some() && p.frames == 1 && self.0.contains_key(&one) { one } else { key };
        let [lo, hi] = self.0.get(&key)?.size_range;
        if x < lo || x > hi {
            return None;
        }
        Some((self.at(&key, x)?, clip))
    }
}

/// A traced row's shape key (on no platform), coordinate and clip term.
fn row_coordinates(r: &TracedRow, policy: &Policy) -> Option<(ShapeKey, u64, u64)> {
    let g = Geometry { width: r.width, height: r.height, frames: r.frames, batch: r.batch };
    match policy.registry.video(&r.vae) {
        None => {
            let tile = if u64::from(r.tile) >= r.width && u64::from(r.tile) >= r.height { 0 } else { r.tile };
            let key = ShapeKey {
                vae: r.vae.clone(),
                op: r.op,
                dtype: r.dtype,
                tile,
                temporal_tile: None,
                one_frame: false,
                replayed_on: None,
            };
            let x = crate::exact::pixels(r.width, r.height, r.batch)?;
            (r.frames == 1).then_some((key, x, 0))
        }
        Some(facts) => {
            let (x, clip, tt) = policy.video_coordinates(facts, r.op, r.dtype, r.tile, Some(r.temporal_tile), g)?;
            // One frame has no temporal walk: its rows are their own shape.
            let (temporal_tile, one_frame) = if r.frames == 1 { (None, true) } else { (Some(tt), false) };
            let key = ShapeKey {
                vae: r.vae.clone(),
                op: r.op,
                dtype: r.dtype,
                tile: 0,
                temporal_tile,
                one_frame,
                replayed_on: None,
            };
            Some((key, x, clip))
        }
    }
}

/// A measured point's shape key, line coordinate and clip term.
fn point_coordinates(p: &Point, policy: &Policy) -> Option<(ShapeKey, u64, u64)> {
    let (x, clip) = policy.fit_coordinates(p)?;
    let (tile, temporal_tile) = match policy.registry.video(&p.key.vae) {
        None => (effective_tile(p), None),
        Some(_) => (0, Some(policy.line_key(p).temporal_tile.unwrap_or(0))),
    };
    let vae = p.key.vae.to_string();
    let key =
        ShapeKey { vae, op: p.key.op, dtype: p.key.dtype, tile, temporal_tile, one_frame: false, replayed_on: None };
    Some((key, x, clip))
}

/// A point's tile as its trace has it: a tile covering the image is no tile.
fn effective_tile(p: &Point) -> u32 {
    if u64::from(p.key.tile) >= p.width && u64::from(p.key.tile) >= p.height {
        0
    } else {
        p.key.tile
    }
}

/// The shipped `traced` section: every shape and every calibration, with
/// the policy's margin (None: no traces, or no `[traced]` declared).
pub fn section(rows: &[TracedRow], points: &[Point], policy: &Policy) -> Result<Option<TracedSection>> {
    let Some(declared) = policy.traced.as_ref() else { return Ok(None) };
    if rows.is_empty() {
        return Ok(None);
    }
    let shapes = Shapes::of(rows, policy)?;
    let shipped_shapes = shapes
        .iter()
        .map(|(k, s)| TracedShape {
            vae: k.vae.clone(),
            op: k.op,
            dtype: k.dtype,
            tile: k.tile,
            temporal_tile: k.temporal_tile,
            one_frame: k.one_frame,
            replayed_on: k.replayed_on,
            unit: if k.temporal_tile.is_some() || k.one_frame { ShapeUnit::WorkingSet } else { ShapeUnit::Pixels },
            slope: s.envelope.slope.to_fraction_string(),
            base: s.envelope.base.to_fraction_string(),
            rows: s.rows,
            size_range: s.size_range,
            support: s.envelope.support.ids(),
        })
        .collect();
    let mut calibrations = Vec::new();
    let groups = calibration_points(points, policy, &shapes);
    let fitted = self::calibrations(&groups, declared.margin, policy.min_sizes)?;
    for (k, group) in &groups {
        let Some(f) = fitted.get(k) else { continue };
        let families: BTreeSet<String> = group.iter().map(|c| c.point.key.vae.to_string()).collect();
        calibrations.push(Calibration {
            class: k.class,
            conv_backend: k.conv_backend,
            allocator: k.allocator,
            os: k.os,
            op: k.op,
            dtype: k.dtype,
            tile: k.tile,
            slope: crate::contract::slope_text(f.rounded.slope_centi),
            base_mib: f.rounded.base_mib,
            families: families.into_iter().collect(),
            points: group.len(),
            sizes: f.sizes,
            slope_from: f.slope_from.as_ref().map(CalibrationKey::id),
            support: f.support.clone(),
        });
    }
    Ok(Some(TracedSection {
        margin: declared.margin,
        reason: declared.reason.clone(),
        formula: TRACED_FORMULA.to_string(),
        lifts_legacy_floor: declared.lift_legacy_floor.clone(),
        traces_digest: traces_digest(rows),
        shapes: shipped_shapes,
        calibrations,
        twins: twins(rows, points, policy),
    }))
}

/// Families with no measured point whose traced rows equal, key for key
/// and byte for byte, those of a family with measured points: one
/// architecture under two names. Of several such families, the one with
/// the most points (then the first by name) is the twin.
pub fn twins(rows: &[TracedRow], points: &[Point], policy: &Policy) -> BTreeMap<String, crate::contract::traced::Twin> {
    type Grid = BTreeMap<(Op, Dtype, u32, u32, u64, u64, u64, u64), Vec<(Option<ReplayPlatform>, u64)>>;
    let mut grids: BTreeMap<&str, Grid> = BTreeMap::new();
    for r in rows {
        let key = (r.op, r.dtype, r.tile, r.temporal_tile, r.width, r.height, r.frames, r.batch);
        grids.entry(r.vae.as_str()).or_default().insert(key, r.peaks());
    }
    let mut measured: BTreeMap<&str, usize> = BTreeMap::new();
    for p in points.iter().filter(|p| !policy.is_excluded(p.id.as_str())) {
        *measured.entry(p.key.vae.as_str()).or_default() += 1;
    }
    let mut out = BTreeMap::new();
    for (family, grid) in &grids {
        if measured.contains_key(family) || grid.is_empty() {
            continue;
        }
        let class = policy.class_of(family);
        let best = grids
            .iter()
            .filter(|(other, g)| measured.contains_key(*other) && *g == grid && policy.class_of(other) == class)
            .max_by_key(|(other, _)| (measured[*other], std::cmp::Reverse(**other)));
        if let Some((other, _)) = best {
            out.insert(
                family.to_string(),
                crate::contract::traced::Twin { of: other.to_string(), rows: grid.len() as u64 },
            );
        }
    }
    out
}

/// SHA-256 over the rows' fields, one line each, sorted: the shapes'
/// inputs, whatever order the files were read in.
pub fn traces_digest(rows: &[TracedRow]) -> String {
    let mut lines: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{}:{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                r.file,
                r.line,
                r.vae,
                r.op,
                r.dtype,
                r.tile,
                r.temporal_tile,
                r.width,
                r.height,
                r.frames,
                r.batch,
                r.bytes,
                r.peaks()
                    .iter()
                    .map(|(p, b)| format!(
                        "{}={b}",
                        p.map_or("live".to_string(), |p| format!("{}/{}", p.conv_backend, p.allocator))
                    ))
                    .collect::<Vec<_>>()
                    .join(";")
            )
        })
        .collect();
    lines.sort();
    crate::fsio::sha256_tag(lines.concat().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(vae: &str, w: u64, bytes: u64) -> TracedRow {
        TracedRow {
            family: vae.into(),
            vae: vae.into(),
            op: Op::Decode,
            dtype: Dtype::Fp16,
            tile: 0,
            temporal_tile: 0,
            simulated: Vec::new(),
            facts: None,
            width: w,
            height: w,
            frames: 1,
            batch: 1,
            bytes,
            file: "t.csv".into(),
            line: w,
        }
    }

    #[test]
    fn a_shape_is_the_exact_envelope_of_its_rows_rounded_up() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(root.join("fits/policy.toml")).unwrap();
        let (policy, _) = crate::policy::parse(&text, "policy.toml").unwrap();
        // 1 536 bytes a pixel and 1 000 bytes fixed, traced at three sizes.
        let rows: Vec<TracedRow> = [512u64, 1024, 2048].iter().map(|w| row("sd", *w, 1536 * w * w + 1000)).collect();
        let shapes = Shapes::of(&rows, &policy).unwrap();
        let key = ShapeKey {
            vae: "sd".into(),
            op: Op::Decode,
            dtype: Dtype::Fp16,
            tile: 0,
            temporal_tile: None,
            one_frame: false,
            replayed_on: None,
        };
        assert_eq!(shapes.at(&key, 1024 * 1024), Some(1536 * 1024 * 1024 + 1000));
        assert_eq!(shapes.at(&key, 768 * 768), Some(1536 * 768 * 768 + 1000));
        assert_eq!(shapes.at(&ShapeKey { tile: 512, ..key.clone() }, 1), None);
        // A video family's rows are a shape in working-set units, less the
        // clip; its one-frame rows are a shape of their own.
        let clip = |w: u64, bytes: u64| TracedRow { frames: 17, ..row("wan21", w, bytes) };
        let rows = [
            row("wan21", 512, 10_000_000),
            row("wan21", 1024, 40_000_000),
            clip(512, 90_000_000),
            clip(1024, 300_000_000),
        ];
        let video = Shapes::of(&rows, &policy).unwrap();
        let shapes: Vec<(&ShapeKey, &Shape)> = video.iter().collect();
        assert_eq!(shapes.len(), 2);
        let (k, s) = shapes[0];
        assert_eq!((k.tile, k.temporal_tile, k.one_frame), (0, None, true));
        assert_eq!(s.size_range, [512 * 512, 1024 * 1024], "one frame: the working set is the frame");
        assert_eq!((s.rows, shapes[1].1.rows), (2, 2));
        assert_eq!((shapes[1].0.temporal_tile, shapes[1].0.one_frame), (Some(0), false));
    }
}
