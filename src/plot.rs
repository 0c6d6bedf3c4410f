//! What a plot of a line shows, computed here so the SVG renderer only
//! draws: the line's points (included, excluded with their reason, support
//! marked), the exact envelope, the shipped line, the ratio-bound band, the
//! legacy estimate and the measured range. Every figure comes from the same
//! lines `emit` ships and the same pricing `reserve` uses.

use crate::coefficients::CoefficientsFile;
use crate::exact::{Ratio, MIB};
use crate::fit::reserve_bytes;
use crate::lines::{Line, LineKind};
use crate::points::{LineKey, Point};
use crate::policy::Policy;
use anyhow::Result;
use serde::Serialize;

/// One point as drawn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlotPoint {
    pub id: String,
    pub pixels: u64,
    pub demand_bytes: u64,
    /// Where the figure comes from (the colour).
    pub source: String,
    /// `single`, `mean`, `max` or unknown (the shape).
    pub aggregate: Option<crate::vocab::Aggregate>,
    /// Whether it pins the envelope.
    pub support: bool,
    /// Why the policy leaves it out (drawn grey); None when included.
    pub excluded: Option<String>,
}

/// One line's plot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinePlot {
    pub key: LineKey,
    /// `fitted` or `carried`.
    pub kind: LineKind,
    /// `slope B/px · x + base MiB`.
    pub formula: String,
    pub slope_centi: u64,
    pub base_mib: u64,
    /// The unrounded envelope `(slope B/px, base B)`, exact.
    pub envelope: Option<(Ratio, Ratio)>,
    /// The ratio bound (the band is `line / bound … line`).
    pub ratio_bound: Ratio,
    /// The measured size range, pixels.
    pub size_range: Option<[u64; 2]>,
    /// The largest size drawn, pixels.
    pub x_max: u64,
    /// The v1 estimate at `x = 0` and at `x_max`, bytes (it is a straight
    /// line in x; null where the legacy table has no value).
    pub legacy: Option<[u64; 2]>,
    pub points: Vec<PlotPoint>,
    /// The file name of the plot (`sd-decode-0-cudnn-native-any-fp16.svg`).
    pub file: String,
}

impl LinePlot {
    /// The shipped line at `x` pixels, bytes.
    pub fn line_at(&self, x: u64) -> u64 {
        reserve_bytes(self.slope_centi, self.base_mib, x).unwrap_or(u64::MAX)
    }
}

/// Where the plotting area lies in the picture and what it spans, so a
/// reader (a test) can map a data point to its pixel. The renderer that
/// draws the picture fills it in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Frame {
    /// Pixel columns `[left, right)` and rows `[top, bottom)` of the plotting area.
    pub left: i32,
    pub right: i32,
    pub top: i32,
    pub bottom: i32,
    /// Axis spans: megapixels on x, MiB on y, both from 0.
    pub x_max_mpx: f64,
    pub y_max_mib: f64,
}

/// One plot as written.
#[derive(Debug, Clone, Serialize)]
pub struct PlotFile {
    /// The line key.
    pub key: String,
    /// The SVG's file name in the output folder.
    pub file: String,
    /// The same picture as PNG, beside it (for a pull-request comment).
    pub png: String,
    /// Where the plotting area lies, to map data to pixels.
    pub frame: Frame,
    /// What was drawn.
    pub plot: LinePlot,
}

/// What `plot` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct PlotReport {
    /// The output folder.
    pub out: String,
    /// The page that shows every plot.
    pub index: String,
    /// Every plot, in key order.
    pub files: Vec<PlotFile>,
}

/// [`plots`] of the lines fitted from `root`'s own points and policy, with
/// the file `emit` would build from them.
pub fn of_root(root: &std::path::Path) -> Result<Vec<LinePlot>> {
    let inp = crate::workspace::Workspace::new(root).inputs_strict(crate::workspace::Digest::Compute)?;
    let lines = crate::lines::assemble(&inp.points, &inp.policy)?;
    let file = crate::coefficients::build_from(&lines, &inp)?;
    plots(&inp.points, &inp.policy, &lines, &file)
}

/// Plots of every fitted or carried line, sorted by key.
pub fn plots(points: &[Point], policy: &Policy, lines: &[Line], file: &CoefficientsFile) -> Result<Vec<LinePlot>> {
    let mut out = Vec::new();
    for line in lines.iter().filter(|l| l.kind != LineKind::Insufficient) {
        let Some(r) = line.rounded else { continue };
        let support: Vec<String> = line.envelope.as_ref().map(|e| e.support.ids()).unwrap_or_default();
        let mut pts: Vec<PlotPoint> = points
            .iter()
            .filter(|p| policy.line_key(p) == line.key)
            .map(|p| {
                // A video point sits at its working set, with its demand less the clip copies.
                let (x, clip) = policy.fit_coordinates(p).unwrap_or((p.pixels, 0));
                (p, x, p.demand_bytes.saturating_sub(clip))
            })
            .map(|(p, x, y)| PlotPoint {
                id: p.id.to_string(),
                pixels: x,
                demand_bytes: y,
                source: p.source.to_string(),
                aggregate: p.aggregate,
                support: support.iter().any(|s| *s == p.id),
                excluded: policy.excludes.iter().find(|e| p.id == e.id).map(|e| e.reason.clone()),
            })
            .collect();
        pts.sort_by(|a, b| (a.pixels, &a.id).cmp(&(b.pixels, &b.id)));
        let hi = pts.iter().map(|p| p.pixels).max().unwrap_or(1 << 20);
        let x_max = (hi + hi / 4).max(1 << 20);
        let video = line.key.temporal_tile.is_some();
        // The legacy estimator prices image pixels: no band on a working-set axis.
        let legacy = file.legacy.as_ref().filter(|_| !video).and_then(|l| {
            let k = &line.key;
            // A square image of x pixels (a tiled key's figure is clamped to it).
            let at = |x: u64| {
                let shape = crate::pricing::legacy::Shape::square(x.isqrt());
                crate::pricing::legacy::legacy_bytes(l, &k.vae, k.op, k.tile, k.conv_backend, k.dtype, shape)
            };
            Some([at(0)?, at(x_max)?])
        });
        let slope = crate::lines::slope_text(r.slope_centi);
        out.push(LinePlot {
            key: line.key.clone(),
            kind: line.kind,
            formula: match video {
                false => format!("{slope} B/px · x + {} MiB", r.base_mib),
                true => format!("{slope} B/px · x + {} MiB + clip copies", r.base_mib),
            },
            slope_centi: r.slope_centi,
            base_mib: r.base_mib,
            envelope: line.envelope.as_ref().map(|e| (e.slope, e.base)),
            ratio_bound: policy.ratio_bound,
            size_range: line.size_range.map(|(a, b)| [a, b]),
            x_max,
            legacy,
            points: pts,
            file: format!("{}.svg", line.key.to_string().replace('/', "-")),
        });
    }
    Ok(out)
}

/// Bytes as MiB for drawing (a float only places a mark on the picture).
pub fn mib_f(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}
