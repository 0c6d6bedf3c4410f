//! Traced shapes and their calibration (docs/traced.md): pure math over the
//! traced rows, the points and the policy, no I/O.
//!
//! A family's *shape* for one (op, dtype, tile) is the exact upper envelope
//! of its traced rows in pixels, with no margin: the traced bytes at any
//! size, rounded up. A *calibration* scales traced bytes to demand for one
//! architecture class on one platform: the exact envelope of the measured
//! points of the class, x = the trace at the point's geometry, y = its
//! demand. The traced price is the calibration at the family's own trace.

use crate::contract::traced::{Calibration, ShapeUnit, TracedSection, TracedShape, TRACED_FORMULA};
use crate::exact::{Ratio, MIB};
use crate::fit::{self, Envelope, FitPoint};
use crate::points::traced::TracedRow;
use crate::points::{LineKey, Point};
use crate::policy::document::ArchClass;
use crate::policy::{Geometry, Policy};
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
use anyhow::{anyhow, bail, Result};
use std::collections::{BTreeMap, BTreeSet};

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
            let Some((key, x, y)) = row_coordinates(r, policy) else {
                bail!("{id}: a traced row too large to place on its family's line")
            };
            grouped.entry(key).or_default().push(FitPoint { x, y, id });
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
        point_coordinates(p, policy).map(|(k, _, _)| k).filter(|k| self.0.contains_key(k))
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
        let one = ShapeKey { temporal_tile: None, one_frame: true, ..key.clone() };
        let key = if key.temporal_tile.is_some() && p.frames == 1 && self.0.contains_key(&one) { one } else { key };
        let [lo, hi] = self.0.get(&key)?.size_range;
        if x < lo || x > hi {
            return None;
        }
        Some((self.at(&key, x)?, clip))
    }
}

/// A traced row's shape key and coordinates `(x, traced − clip)`.
fn row_coordinates(r: &TracedRow, policy: &Policy) -> Option<(ShapeKey, u64, u64)> {
    let g = Geometry { width: r.width, height: r.height, frames: r.frames, batch: r.batch };
    match policy.registry.video(&r.vae) {
        None => {
            let tile = if u64::from(r.tile) >= r.width && u64::from(r.tile) >= r.height { 0 } else { r.tile };
            let key =
                ShapeKey { vae: r.vae.clone(), op: r.op, dtype: r.dtype, tile, temporal_tile: None, one_frame: false };
            let x = crate::exact::pixels(r.width, r.height, r.batch)?;
            (r.frames == 1).then_some((key, x, r.bytes))
        }
        Some(facts) => {
            let (x, clip, tt) = policy.video_coordinates(facts, r.op, r.dtype, r.tile, Some(r.temporal_tile), g)?;
            // One frame has no temporal walk: its rows are their own shape.
            let (temporal_tile, one_frame) = if r.frames == 1 { (None, true) } else { (Some(tt), false) };
            let key = ShapeKey { vae: r.vae.clone(), op: r.op, dtype: r.dtype, tile: 0, temporal_tile, one_frame };
            Some((key, x, r.bytes.saturating_sub(clip)))
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
    Some((ShapeKey { vae, op: p.key.op, dtype: p.key.dtype, tile, temporal_tile, one_frame: false }, x, clip))
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

/// A measured point the calibration can read: its line key, its trace,
/// and the clip term its demand holds (a video point's; 0 for an image).
#[derive(Debug, Clone)]
pub struct Calibrated<'p> {
    pub point: &'p Point,
    pub line: LineKey,
    pub traced: u64,
    pub clip: u64,
    /// The op's own demand (`Policy::own_demand`).
    pub own: u64,
}

impl Calibrated<'_> {
    /// What the calibration fits: the op's own demand less the clip term.
    pub fn demand(&self) -> u64 {
        self.own.saturating_sub(self.clip)
    }
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
        let Some(class) = policy.class_of(&p.key.vae) else { continue };
        let Some((traced, clip)) = shapes.at_point(p, policy) else { continue };
        let line = policy.line_key(p);
        let key = CalibrationKey {
            class,
            conv_backend: line.conv_backend,
            allocator: line.allocator,
            os: line.os,
            op: line.op,
            dtype: line.dtype,
            tile: line.tile,
        };
        out.entry(key).or_default().push(Calibrated { point: p, line, traced, clip, own: policy.own_demand(p) });
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
/// demand (less a video point's clip term) over traced bytes, grown by the
/// margin and rounded up as a shipped line is (hundredths of a byte per
/// traced byte, MiB); with the envelope, for its support.
pub fn calibrate_with_envelope(points: &[&Calibrated], margin: Ratio) -> Result<(fit::Rounded, Envelope)> {
    let fp: Vec<FitPoint> =
        points.iter().map(|c| FitPoint { x: c.traced, y: c.demand(), id: c.point.id.as_str() }).collect();
    let env = fit::envelope(&fp).map_err(|e| anyhow!("calibration: {e}"))?;
    let rounded = fit::round(&env, margin).map_err(|e| anyhow!("calibration: {e}"))?;
    Ok((rounded, env))
}

/// One group's calibration: its rounded line, how it was found, and the
/// points that pin it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    pub rounded: fit::Rounded,
    /// Distinct traced sizes among its points.
    pub sizes: usize,
    /// A group with too few sizes: the fitted calibration whose slope it takes.
    pub slope_from: Option<CalibrationKey>,
    pub support: Vec<String>,
}

impl CalibrationKey {
    /// Its name in answers, as the shipped calibration's `id()`.
    pub fn id(&self) -> String {
        format!(
            "{}/{}/{}/{}/{}/{}/{}",
            self.class.as_str(),
            self.op,
            self.tile,
            self.conv_backend,
            self.allocator,
            self.os,
            self.dtype
        )
    }

    fn same_platform(&self, o: &CalibrationKey) -> bool {
        (self.conv_backend, self.allocator, self.os) == (o.conv_backend, o.allocator, o.os)
    }
}

/// Every group's calibration. A group whose points span at least
/// `min_sizes` distinct traced sizes (the rule a line has) is the envelope
/// of its own points. One with fewer cannot part a slope from a constant:
/// one point's envelope runs through the origin, so a demand that is
/// mostly a workspace is read as a steep slope and grows with every larger
/// trace. Where the most cautious (highest) fitted calibration nearest it
/// grows more slowly than its own envelope, it takes that slope and the
/// least whole MiB of base that covers each of its points with the margin;
/// elsewhere its own envelope stands (a steeper slope would price its own
/// points above what they need). Nearest, in order: its
/// class and op at its tile on its platform or in its dtype; its class and
/// op at its tile; the same untiled; then any class's untiled calibration
/// for the op, on its platform in its dtype, on its platform or in its
/// dtype, anywhere (as the runtime borrows for a class nobody measured);
/// within a tier, on its conv backend where the tier has one there.
/// With no fitted calibration of the op at all, its own envelope stands.
pub fn calibrations(
    groups: &BTreeMap<CalibrationKey, Vec<Calibrated>>,
    margin: Ratio,
    min_sizes: usize,
) -> Result<BTreeMap<CalibrationKey, Fitted>> {
    let sizes_of = |g: &[Calibrated]| g.iter().map(|c| c.traced).collect::<BTreeSet<u64>>().len();
    let mut fitted = BTreeMap::new();
    for (k, g) in groups {
        if sizes_of(g) >= min_sizes {
            let refs: Vec<&Calibrated> = g.iter().collect();
            let (rounded, env) = calibrate_with_envelope(&refs, margin)?;
            fitted.insert(
                k.clone(),
                Fitted { rounded, sizes: sizes_of(g), slope_from: None, support: env.support.ids() },
            );
        }
    }
    let mut out = fitted.clone();
    for (k, g) in groups.iter().filter(|(k, _)| !fitted.contains_key(*k)) {
        let refs: Vec<&Calibrated> = g.iter().collect();
        let own = || -> Result<Fitted> {
            let (rounded, env) = calibrate_with_envelope(&refs, margin)?;
            Ok(Fitted { rounded, sizes: sizes_of(g), slope_from: None, support: env.support.ids() })
        };
        let own = own()?;
        // Only a shallower slope is taken: one steeper than the group's own
        // envelope would price its own points above what they need.
        let found = match nearest_slope(k, &fitted) {
            Some((from, slope_centi)) if slope_centi < own.rounded.slope_centi => {
                lifted(&refs, from, slope_centi, margin, own.sizes)?
            }
            _ => own,
        };
        out.insert(k.clone(), found);
    }
    Ok(out)
}

/// The fitted calibration a few-size group borrows its slope from (see
/// [`calibrations`]), and that slope in hundredths.
fn nearest_slope(k: &CalibrationKey, fitted: &BTreeMap<CalibrationKey, Fitted>) -> Option<(CalibrationKey, u64)> {
    type Tier<'a> = Box<dyn Fn(&CalibrationKey) -> bool + 'a>;
    let class_op = |c: &CalibrationKey| c.class == k.class && c.op == k.op;
    let near = |c: &CalibrationKey| k.same_platform(c) || c.dtype == k.dtype;
    let tiers: [Tier; 7] = [
        Box::new(move |c| class_op(c) && c.tile == k.tile && near(c)),
        Box::new(move |c| class_op(c) && c.tile == k.tile),
        Box::new(move |c| class_op(c) && c.tile == 0 && near(c)),
        Box::new(move |c| class_op(c) && c.tile == 0),
        Box::new(move |c| c.op == k.op && c.tile == 0 && k.same_platform(c) && c.dtype == k.dtype),
        Box::new(move |c| c.op == k.op && c.tile == 0 && near(c)),
        Box::new(move |c| c.op == k.op && c.tile == 0),
    ];
    for tier in &tiers {
        let in_tier: Vec<(&CalibrationKey, &Fitted)> = fitted.iter().filter(|(c, _)| tier(c)).collect();
        // On its conv backend where the tier has one there, as the runtime
        // prefers (a conv library's workspace is what a trace cannot see).
        let same_backend = in_tier.iter().any(|(c, _)| c.conv_backend == k.conv_backend);
        // The highest slope; a tie keeps the first key.
        let best = in_tier.into_iter().filter(|(c, _)| !same_backend || c.conv_backend == k.conv_backend).fold(
            None::<(&CalibrationKey, u64)>,
            |best, (c, f)| match best {
                Some((_, s)) if s >= f.rounded.slope_centi => best,
                _ => Some((c, f.rounded.slope_centi)),
            },
        );
        if let Some((c, s)) = best {
            return Some((c.clone(), s));
        }
    }
    None
}

/// A few-size group at `slope_centi`: the least whole MiB of base with
/// which every point's price covers its demand grown by the margin.
fn lifted(
    points: &[&Calibrated],
    from: CalibrationKey,
    slope_centi: u64,
    margin: Ratio,
    sizes: usize,
) -> Result<Fitted> {
    let grow = Ratio::int(1).checked_add(margin).map_err(|e| anyhow!("calibration: {e}"))?;
    let mut need: Vec<(i128, &str)> = Vec::new();
    for c in points {
        let want =
            grow.checked_mul(Ratio::int(i128::from(c.demand()))).map_err(|e| anyhow!("calibration: {e}"))?.ceil();
        let per = fit::reserve_bytes(slope_centi, 0, c.traced).map_err(|e| anyhow!("calibration: {e}"))?;
        let short = want - i128::from(per);
        let mib = if short <= 0 { 0 } else { (short + i128::from(MIB) - 1) / i128::from(MIB) };
        need.push((mib, c.point.id.as_str()));
    }
    let base = need.iter().map(|(m, _)| *m).max().unwrap_or(0);
    let mut support: Vec<String> = need.iter().filter(|(m, _)| *m == base).map(|(_, id)| id.to_string()).collect();
    support.sort();
    support.dedup();
    let base_mib = u64::try_from(base).map_err(|_| anyhow!("calibration: base too large"))?;
    Ok(Fitted { rounded: fit::Rounded { slope_centi, base_mib }, sizes, slope_from: Some(from), support })
}

/// The price of `traced` bytes under a calibration.
pub fn priced(calibration: &fit::Rounded, traced: u64) -> Result<u64> {
    fit::reserve_bytes(calibration.slope_centi, calibration.base_mib, traced).map_err(|e| anyhow!("{e}"))
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
    }))
}

/// SHA-256 over the rows' fields, one line each, sorted: the shapes'
/// inputs, whatever order the files were read in.
pub fn traces_digest(rows: &[TracedRow]) -> String {
    let mut lines: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{}:{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
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
                r.bytes
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
