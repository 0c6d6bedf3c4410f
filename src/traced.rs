//! Traced shapes and their calibration (docs/traced.md): pure math over the
//! traced rows, the points and the policy, no I/O.
//!
//! A family's *shape* for one (op, dtype, tile) is the exact upper envelope
//! of its traced rows in pixels, with no margin: the traced bytes at any
//! size, rounded up. A *calibration* scales traced bytes to demand for one
//! architecture class on one platform: the exact envelope of the measured
//! points of the class, x = the trace at the point's geometry, y = its
//! demand. The traced price is the calibration at the family's own trace.

use crate::exact::Ratio;
use crate::fit::{self, Envelope, FitPoint};
use crate::points::traced::TracedRow;
use crate::points::{LineKey, Point};
use crate::policy::document::ArchClass;
use crate::policy::Policy;
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
use anyhow::{anyhow, Result};
use std::collections::BTreeMap;

/// What one shape is traced for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ShapeKey {
    pub vae: String,
    pub op: Op,
    pub dtype: Dtype,
    pub tile: u32,
}

/// Every image family's traced shapes.
#[derive(Debug, Default)]
pub struct Shapes(BTreeMap<ShapeKey, Envelope>);

impl Shapes {
    /// The shapes of the image rows (one frame, batch 1, a family the
    /// registry does not price as video). Rows of two configs of one family
    /// (SD1.5 and SDXL) join one envelope.
    pub fn of(rows: &[TracedRow], policy: &Policy) -> Result<Shapes> {
        let mut grouped: BTreeMap<ShapeKey, Vec<FitPoint>> = BTreeMap::new();
        let ids: Vec<String> = rows.iter().map(|r| format!("{}:{}", r.file, r.line)).collect();
        for (r, id) in rows.iter().zip(&ids) {
            if r.frames != 1 || r.batch != 1 || policy.registry.video(&r.vae).is_some() {
                continue;
            }
            let key = ShapeKey { vae: r.vae.clone(), op: r.op, dtype: r.dtype, tile: r.tile };
            let x = r.width.checked_mul(r.height).ok_or_else(|| anyhow!("{id}: size too large"))?;
            grouped.entry(key).or_default().push(FitPoint { x, y: r.bytes, id });
        }
        let mut out = BTreeMap::new();
        for (key, pts) in grouped {
            let env = fit::envelope(&pts).map_err(|e| anyhow!("traced shape of {} {}: {e}", key.vae, key.op))?;
            out.insert(key, env);
        }
        Ok(Shapes(out))
    }

    /// The traced bytes of `key` at `pixels`, rounded up (None: no shape).
    pub fn at(&self, key: &ShapeKey, pixels: u64) -> Option<u64> {
        let v = fit::envelope_at(self.0.get(key)?, pixels).ok()?;
        u64::try_from(v.ceil()).ok()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The trace at a point's own geometry: its family, op, dtype and tile
    /// (a tile covering the image is no tile), at its pixels (batch included).
    pub fn at_point(&self, p: &Point) -> Option<u64> {
        let key = ShapeKey { vae: p.key.vae.to_string(), op: p.key.op, dtype: p.key.dtype, tile: effective_tile(p) };
        self.at(&key, p.pixels)
    }
}

/// Where one calibration holds: a class on one platform, for one op, dtype and tile.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CalibrationKey {
    pub class: ArchClass,
    pub conv_backend: ConvBackend,
    pub allocator: Allocator,
    pub os: Os,
    pub op: Op,
    pub dtype: Dtype,
    pub tile: u32,
}

/// A measured point the calibration can read: its family, line key, trace and demand.
#[derive(Debug, Clone)]
pub struct Calibrated<'p> {
    pub point: &'p Point,
    pub line: LineKey,
    pub traced: u64,
}

/// The measured points of every class, grouped by calibration key: points
/// the fit uses (not excluded, not left to the attention phase) of a family
/// with a declared class and a trace at the point's geometry.
pub fn calibration_points<'p>(
    points: &'p [Point],
    policy: &Policy,
    shapes: &Shapes,
) -> BTreeMap<CalibrationKey, Vec<Calibrated<'p>>> {
    let mut out: BTreeMap<CalibrationKey, Vec<Calibrated<'p>>> = BTreeMap::new();
    for p in points {
        if policy.is_excluded(&p.id) || policy.explained_by_attention(p) {
            continue;
        }
        let Some(class) = policy.classes.get(p.key.vae.as_str()).copied() else { continue };
        let Some(traced) = shapes.at_point(p) else { continue };
        let line = policy.line_key(p);
        let key = CalibrationKey {
            class,
            conv_backend: line.conv_backend,
            allocator: line.allocator,
            os: line.os,
            op: line.op,
            dtype: line.dtype,
            tile: effective_tile(p),
        };
        out.entry(key).or_default().push(Calibrated { point: p, line, traced });
    }
    out
}

/// A point's tile as its trace has it: a tile covering the image is no tile.
fn effective_tile(p: &Point) -> u32 {
    if u64::from(p.key.tile) >= p.width && u64::from(p.key.tile) >= p.height {
        0
    } else {
        p.key.tile
    }
}

/// The calibration of some points with `margin`: the exact envelope of
/// demand over traced bytes, grown by the margin and rounded up as a
/// shipped line is (hundredths of a byte per traced byte, MiB).
pub fn calibrate(points: &[&Calibrated], margin: Ratio) -> Result<fit::Rounded> {
    let fp: Vec<FitPoint> =
        points.iter().map(|c| FitPoint { x: c.traced, y: c.point.demand_bytes, id: c.point.id.as_str() }).collect();
    let env = fit::envelope(&fp).map_err(|e| anyhow!("calibration: {e}"))?;
    fit::round(&env, margin).map_err(|e| anyhow!("calibration: {e}"))
}

/// The price of `traced` bytes under a calibration.
pub fn priced(calibration: &fit::Rounded, traced: u64) -> Result<u64> {
    fit::reserve_bytes(calibration.slope_centi, calibration.base_mib, traced).map_err(|e| anyhow!("{e}"))
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
        let key = ShapeKey { vae: "sd".into(), op: Op::Decode, dtype: Dtype::Fp16, tile: 0 };
        assert_eq!(shapes.at(&key, 1024 * 1024), Some(1536 * 1024 * 1024 + 1000));
        assert_eq!(shapes.at(&key, 768 * 768), Some(1536 * 768 * 768 + 1000));
        assert_eq!(shapes.at(&ShapeKey { tile: 512, ..key.clone() }, 1), None);
        // A video family's rows are not an image shape.
        let video = Shapes::of(&[row("wan21", 512, 10), row("wan21", 1024, 40)], &policy).unwrap();
        assert!(video.is_empty());
    }
}
