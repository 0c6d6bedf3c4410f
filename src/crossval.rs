//! Do the lines generalise? For each fitted line, leave one measured size
//! (or one source) out, refit the rest exactly as `emit` would (same
//! margin, same rounding), and price the held-out points with the refit
//! line: how many are still covered, and how far over or under.
//!
//! A line needs points at two sizes to be fitted at all, so a fold that
//! would leave fewer is reported as not validated rather than guessed; the
//! policy's `min_sizes` is not applied to the folds (a three-size line
//! would otherwise never be validated).

use crate::exact::Ratio;
use crate::fit::{self, FitPoint};
use crate::lines::{group, Line, LineKind};
use crate::points::{LineKey, Point};
use crate::policy::Policy;
use crate::traced::Shapes;
use anyhow::{anyhow, Result};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

pub mod against;
mod position;

pub use position::{Place, Position};

/// What a fold leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HoldOut {
    /// Every point at one measured size.
    Size,
    /// Every point of one source.
    Source,
    /// Every tile's own line: each measured tiled point priced from its
    /// platform's untiled line alone, by the derived tile rule.
    Tile,
    /// Every point of one family: priced from its own trace, scaled by its
    /// class's calibration on the other families' points (docs/traced.md).
    Family,
    /// Every point of one architecture class: priced from its own traces,
    /// by the calibrations of the other classes alone.
    Class,
}

/// One held-out point, priced by the line refit without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeldOut {
    pub id: String,
    pub pixels: u64,
    pub demand_bytes: u64,
    /// What the refit line reserves for it.
    pub reserve_bytes: u64,
    /// `reserve / demand`, four decimals, rounded down (never flatters).
    pub ratio: String,
    /// Whether the reservation covers the demand.
    pub covered: bool,
    /// How far under the demand, bytes (0 when covered).
    pub under_bytes: u64,
    /// What the fold left out (`1024x1024`-class size in pixels, or a source).
    pub fold: String,
    /// Where the point's size sat against the sizes its refit was trained
    /// on (`--by size` and `--by source`): what a miss says to measure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
    #[serde(skip)]
    ratio_exact: Ratio,
}

/// One line's cross-validation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineCheck {
    #[serde(flatten)]
    pub key: LineKey,
    /// Folds refit and priced.
    pub folds: usize,
    /// Folds that could not be refit, with why.
    pub skipped: Vec<String>,
    /// Every held-out point.
    pub points: Vec<HeldOut>,
    /// Held-out points covered.
    pub covered: usize,
    /// Lowest `reserve / demand` over the held-out points, rounded down.
    pub worst_ratio: Option<String>,
    /// Mean `reserve / demand`, rounded down.
    pub mean_ratio: Option<String>,
}

/// The whole cross-validation.
#[derive(Debug, Clone, Serialize)]
pub struct CrossvalReport {
    /// What each fold leaves out.
    pub by: HoldOut,
    /// Lines with an under-reserved held-out point first, then by key.
    pub lines: Vec<LineCheck>,
    /// Fitted lines that could not be validated at all, with why.
    pub not_validated: Vec<String>,
    /// Held-out points over every line.
    pub held_out: usize,
    /// Of them, covered.
    pub covered: usize,
    /// `covered / held_out` in percent, one decimal, rounded down.
    pub coverage_pct: Option<String>,
    /// Lowest ratio over every line, rounded down.
    pub worst_ratio: Option<String>,
    /// Mean ratio over every held-out point, rounded down.
    pub mean_ratio: Option<String>,
}

impl CrossvalReport {
    /// Whether coverage is below `pct` percent (exactly).
    pub fn below(&self, pct: Ratio) -> bool {
        let covered = Ratio::int(self.covered as i128 * 100);
        let want = pct.checked_mul(Ratio::int(self.held_out as i128));
        want.is_ok_and(|w| covered.cmp_exact(&w) == Ok(std::cmp::Ordering::Less))
    }
}

/// A ratio as four decimals, rounded down.
pub(crate) fn floor4(r: Ratio) -> String {
    let scaled = r.checked_mul(Ratio::int(10_000)).map(|s| s.floor()).unwrap_or(0);
    crate::exact::format_scaled(scaled, 4)
}

fn fold_label(by: HoldOut, p: &Point, policy: &Policy) -> String {
    match by {
        HoldOut::Size => format!("{} px", xy(p, policy).0),
        HoldOut::Source => p.source.to_string(),
        HoldOut::Tile => format!("tile {}", p.key.tile),
        HoldOut::Family => format!("family {}", p.key.vae),
        HoldOut::Class => format!("class {}", policy.class_of(p.key.vae.as_str()).map_or("none", |c| c.as_str())),
    }
}

/// Where a point sits on its line: `(x, own demand − clip term)`, and its
/// clip term (`Policy::fit_coordinates`; a video point: working set and
/// clip copies). The own demand is what `lines` fits (a fresh point's
/// demand less its first use).
fn xy(p: &Point, policy: &Policy) -> (u64, u64, u64) {
    let (x, clip) = policy.fit_coordinates(p).unwrap_or((p.pixels, 0));
    (x, policy.own_demand(p).saturating_sub(clip), clip)
}

/// What a refit line prices at `x`, as `reserve` prices a measured line
/// (docs/traced.md, "Past the measured range"): its formula, or past its
/// largest training size `end` that price grown as the family's traced
/// shape for the point's key grows, where that is higher.
/// The second value says whether the trace raised the price.
fn line_price(r: &fit::Rounded, end: u64, x: u64, p: &Point, policy: &Policy, shapes: &Shapes) -> Result<(u64, bool)> {
    let own = fit::reserve_bytes(r.slope_centi, r.base_mib, x).map_err(|e| anyhow!("{e}"))?;
    if x <= end {
        return Ok((own, false));
    }
    let Some(key) = shapes.key_of(p, policy) else { return Ok((own, false)) };
    let (Some(at_end), Some(at)) = (shapes.at(&key, end), shapes.at(&key, x)) else { return Ok((own, false)) };
    let line_at_end = fit::reserve_bytes(r.slope_centi, r.base_mib, end).map_err(|e| anyhow!("{e}"))?;
    match crate::contract::traced::grown_past_end(line_at_end, at_end, at) {
        None => Ok((own, false)),
        Some(grown) => {
            let grown = grown.map_err(|_| anyhow!("point {}: reservation too large", p.id))?;
            Ok((own.max(grown), grown > own))
        }
    }
}

fn check_line(line: &Line, pts: &[&Point], policy: &Policy, shapes: &Shapes, by: HoldOut) -> Result<LineCheck> {
    if by == HoldOut::Size {
        return check_line_by_size(line, pts, policy, shapes);
    }
    let folds: BTreeSet<String> = pts.iter().map(|p| fold_label(by, p, policy)).collect();
    let mut out = LineCheck::new(line.key.clone(), 0);
    if folds.len() < 2 {
        out.skipped.push(format!("only one {} to hold out", if by == HoldOut::Size { "size" } else { "source" }));
        return Ok(out);
    }
    for fold in &folds {
        let (held, train): (Vec<&Point>, Vec<&Point>) = pts.iter().partition(|p| &fold_label(by, p, policy) == fold);
        let sizes: BTreeSet<u64> = train.iter().map(|p| xy(p, policy).0).collect();
        if sizes.len() < 2 {
            out.skipped.push(format!("{fold}: the rest has {} size(s), 2 are needed to fit", sizes.len()));
            continue;
        }
        let fp: Vec<FitPoint> = train
            .iter()
            .map(|p| {
                let (x, y, _) = xy(p, policy);
                FitPoint { x, y, id: &p.id }
            })
            .collect();
        let env = fit::envelope(&fp).map_err(|e| anyhow!("line {}: {e}", line.key))?;
        let r = fit::round(&env, policy.margin).map_err(|e| anyhow!("line {}: {e}", line.key))?;
        let end = sizes.last().copied().unwrap_or(0);
        out.folds += 1;
        for p in held {
            let (x, _, clip) = xy(p, policy);
            let (price, traced) = line_price(&r, end, x, p, policy, shapes)?;
            let mut held_out = HeldOut::priced(p, price + clip, fold.clone(), policy)?;
            let unit = if policy.registry.video(&p.key.vae).is_some() {
                position::ShapeUnit::WorkingSet
            } else {
                position::ShapeUnit::Pixels
            };
            held_out.position = Position::of(x, &sizes, traced, unit);
            out.points.push(held_out);
        }
    }
    finish_check(out)
}

/// `--by size` in `O(n log n)`: every size's fold refitted at once
/// (`fit::leave_out`), each held-out point placed among its neighbours in
/// the sorted sizes. The same report as refitting each fold from its own
/// points (the brute-force test in tests/crossval.rs holds the two equal).
fn check_line_by_size(line: &Line, pts: &[&Point], policy: &Policy, shapes: &Shapes) -> Result<LineCheck> {
    let coords: Vec<(u64, u64, u64)> = pts.iter().map(|p| xy(p, policy)).collect();
    let mut out = LineCheck::new(line.key.clone(), 0);
    let mut sizes: Vec<u64> = coords.iter().map(|c| c.0).collect();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.len() < 2 {
        out.skipped.push("only one size to hold out".to_string());
        return Ok(out);
    }
    let fp: Vec<FitPoint> =
        pts.iter().zip(&coords).map(|(p, (x, y, _))| FitPoint { x: *x, y: *y, id: &p.id }).collect();
    let folds = fit::leave_out::folds(&fp).map_err(|e| anyhow!("line {}: {e}", line.key))?;
    let mut held: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, c) in coords.iter().enumerate() {
        held.entry(c.0).or_default().push(i);
    }
    // Folds in the order of their labels, as the general walk takes them.
    let mut order: Vec<(String, usize)> = sizes.iter().enumerate().map(|(i, s)| (format!("{s} px"), i)).collect();
    order.sort();
    let unit = if policy.registry.video(&line.key.vae).is_some() {
        position::ShapeUnit::WorkingSet
    } else {
        position::ShapeUnit::Pixels
    };
    for (label, i) in order {
        let size = sizes[i];
        if sizes.len() - 1 < 2 {
            out.skipped.push(format!("{label}: the rest has {} size(s), 2 are needed to fit", sizes.len() - 1));
            continue;
        }
        let env = folds[i].envelope.clone().map_err(|e| anyhow!("line {}: {e}", line.key))?;
        let r = fit::round(&env, policy.margin).map_err(|e| anyhow!("line {}: {e}", line.key))?;
        let end = if i + 1 == sizes.len() { sizes[i - 1] } else { sizes[sizes.len() - 1] };
        let (smallest, largest) = (if i == 0 { sizes[1] } else { sizes[0] }, end);
        let neighbours = (i.checked_sub(1).map(|k| sizes[k]), sizes.get(i + 1).copied());
        out.folds += 1;
        for &k in &held[&size] {
            let (x, _, clip) = coords[k];
            let (price, traced) = line_price(&r, end, x, pts[k], policy, shapes)?;
            let mut held_out = HeldOut::priced(pts[k], price + clip, label.clone(), policy)?;
            held_out.position = Some(Position::of_neighbours(x, smallest, largest, neighbours, traced, unit));
            out.points.push(held_out);
        }
    }
    finish_check(out)
}

impl LineCheck {
    /// A line's check before any point is priced: `folds` refit so far.
    fn new(key: LineKey, folds: usize) -> LineCheck {
        LineCheck { key, folds, skipped: vec![], points: vec![], covered: 0, worst_ratio: None, mean_ratio: None }
    }
}

impl HeldOut {
    /// A held-out point and what was reserved for the op, priced in the
    /// point's own context: a fresh point's answer adds its first use
    /// (docs/fit.md, "Demand per context").
    fn priced(p: &Point, op_reserve: u64, fold: String, policy: &Policy) -> Result<HeldOut> {
        let reserve = op_reserve
            .checked_add(policy.first_use_bytes(p))
            .ok_or_else(|| anyhow!("{}: reservation too large", p.id))?;
        let ratio = Ratio::new(i128::from(reserve), i128::from(p.demand_bytes))?;
        Ok(HeldOut {
            id: p.id.to_string(),
            pixels: p.pixels,
            demand_bytes: p.demand_bytes,
            reserve_bytes: reserve,
            ratio: floor4(ratio),
            covered: reserve >= p.demand_bytes,
            under_bytes: p.demand_bytes.saturating_sub(reserve),
            fold,
            position: None,
            ratio_exact: ratio,
        })
    }
}

/// A line's held-out points in size order, with its coverage and ratios.
fn finish_check(mut out: LineCheck) -> Result<LineCheck> {
    out.points.sort_by(|a, b| (a.pixels, &a.id).cmp(&(b.pixels, &b.id)));
    out.covered = out.points.iter().filter(|p| p.covered).count();
    let (worst, mean) = summary(out.points.iter())?;
    out.worst_ratio = worst;
    out.mean_ratio = mean;
    Ok(out)
}

/// The lowest and the mean ratio of some held-out points.
fn summary<'a>(points: impl Iterator<Item = &'a HeldOut>) -> Result<(Option<String>, Option<String>)> {
    let mut worst: Option<Ratio> = None;
    let mut pairs = Vec::new();
    for p in points {
        if worst.is_none_or(|w| p.ratio_exact.cmp_exact(&w) == Ok(std::cmp::Ordering::Less)) {
            worst = Some(p.ratio_exact);
        }
        pairs.push((p.reserve_bytes, p.demand_bytes));
    }
    Ok((worst.map(floor4), mean4(pairs)))
}

/// The mean of `reserve / demand` over some pairs, four decimals, rounded
/// down: each ratio is added rounded down to 12 decimals (a sum of exact
/// fractions with byte-sized denominators would overflow).
pub(crate) fn mean4(pairs: impl IntoIterator<Item = (u64, u64)>) -> Option<String> {
    const SCALE: u128 = 1_000_000_000_000;
    let (mut sum, mut n) = (0u128, 0u128);
    for (reserve, demand) in pairs {
        sum += u128::from(reserve) * SCALE / u128::from(demand.max(1));
        n += 1;
    }
    (n > 0).then(|| crate::exact::format_scaled((sum / n / (SCALE / 10_000)) as i128, 4))
}

/// Cross-validates every fitted line of `lines` on the included points.
/// Reports each line checked to `progress`.
pub fn crossval(
    points: &[Point],
    policy: &Policy,
    lines: &[Line],
    shapes: &Shapes,
    by: HoldOut,
    progress: &dyn crate::progress::Progress,
) -> Result<CrossvalReport> {
    if by == HoldOut::Tile {
        return tile_folds(points, policy, lines);
    }
    if by == HoldOut::Family {
        return Err(anyhow!("crossval --by family needs the traced shapes: use crossval::family_folds"));
    }
    let groups = group(points, policy);
    let mut checks = Vec::new();
    let mut not_validated = Vec::new();
    let fitted: Vec<&Line> = lines.iter().filter(|l| l.kind == LineKind::Fitted).collect();
    progress.start("crossval", fitted.len() as u64, crate::progress::Unit::Items);
    for line in fitted {
        let pts = groups.get(&line.key).map(Vec::as_slice).unwrap_or(&[]);
        let c = check_line(line, pts, policy, shapes, by);
        progress.advance(1);
        let c = c.inspect_err(|_| progress.finish())?;
        if c.folds == 0 {
            not_validated.push(format!("{}: {}", line.key, c.skipped.join("; ")));
        }
        checks.push(c);
    }
    progress.finish();
    report(by, checks, not_validated)
}

fn report(by: HoldOut, mut checks: Vec<LineCheck>, not_validated: Vec<String>) -> Result<CrossvalReport> {
    checks.sort_by(|a, b| ((a.covered == a.points.len()), &a.key).cmp(&((b.covered == b.points.len()), &b.key)));
    let held_out = checks.iter().map(|c| c.points.len()).sum();
    let covered = checks.iter().map(|c| c.covered).sum();
    let (worst_ratio, mean_ratio) = summary(checks.iter().flat_map(|c| c.points.iter()))?;
    let coverage_pct = (held_out > 0).then(|| {
        let tenths = (covered as i128 * 1000) / held_out as i128;
        crate::exact::format_scaled(tenths, 1)
    });
    Ok(CrossvalReport { by, lines: checks, not_validated, held_out, covered, coverage_pct, worst_ratio, mean_ratio })
}

/// `--by tile`: each tiled key's measured points (a tile smaller than the
/// image) priced without the tile's own line, from the fresh untiled line of
/// the platform (its own OS's or the OS-less one, the higher) at one tile plus
/// the default host's output copies: what `reserve` answers for a tile
/// nobody measured.
fn tile_folds(points: &[Point], policy: &Policy, lines: &[Line]) -> Result<CrossvalReport> {
    let groups = group(points, policy);
    let untiled: std::collections::BTreeMap<&LineKey, &Line> =
        lines.iter().filter(|l| l.key.tile == 0 && l.rounded.is_some()).map(|l| (&l.key, l)).collect();
    let host = policy.tiling.as_ref().and_then(|t| t.hosts.get(&t.default_host));
    let mut checks = Vec::new();
    let mut not_validated = Vec::new();
    for (key, pts) in groups.iter().filter(|(k, _)| k.tile != 0) {
        let tiled: Vec<&&Point> = pts.iter().filter(|p| !covers_image(p)).collect();
        if tiled.is_empty() {
            continue;
        }
        let base = LineKey { tile: 0, ..key.clone() };
        let twins = [
            Some(base.clone()),
            (base.os != crate::vocab::Os::Any).then(|| LineKey { os: crate::vocab::Os::Any, ..base.clone() }),
        ];
        let found: Vec<&Line> = twins.iter().flatten().filter_map(|k| untiled.get(k).copied()).collect();
        let Some(host) = host.filter(|_| !found.is_empty()) else {
            not_validated
                .push(format!("{key}: no untiled line on its platform (or no [tiling] rule) to derive it from"));
            continue;
        };
        let mut check = LineCheck::new(key.clone(), 1);
        for p in tiled {
            let t = u64::from(p.key.tile);
            let tile_pixels = t.min(p.width) * t.min(p.height) * p.batch;
            let mut line_bytes = 0;
            for l in &found {
                let r = l.rounded.as_ref().ok_or_else(|| anyhow!("line {} has no values", l.key))?;
                line_bytes = line_bytes
                    .max(fit::reserve_bytes(r.slope_centi, r.base_mib, tile_pixels).map_err(|e| anyhow!("{e}"))?);
            }
            let copies = host
                .copies_bytes(p.key.dtype, p.pixels)
                .ok_or_else(|| anyhow!("point {}: output copies too large", p.id))?;
            check.points.push(HeldOut::priced(p, line_bytes + copies, format!("tile {}", p.key.tile), policy)?);
        }
        checks.push(finish_check(check)?);
    }
    report(HoldOut::Tile, checks, not_validated)
}

/// A tile at least as large as both sides of the image does nothing.
fn covers_image(p: &Point) -> bool {
    u64::from(p.key.tile) >= p.width && u64::from(p.key.tile) >= p.height
}

/// `--by family`: within each class on each platform, op, dtype and tile,
/// each family's points priced by the calibration fitted on the other
/// families' points alone, at the family's own trace, with the policy's
/// traced margin (its fit margin when none is declared). A family alone in
/// its group cannot be validated.
pub fn family_folds(points: &[Point], policy: &Policy, shapes: &crate::traced::Shapes) -> Result<CrossvalReport> {
    use crate::traced::{calibration_points, calibrations, priced};
    let margin = policy.traced.as_ref().map_or(policy.margin, |t| t.margin);
    let mut checks = Vec::new();
    let mut not_validated = Vec::new();
    let groups = calibration_points(points, policy, shapes);
    // A family whose class has no measured point at all: nothing can hold
    // it out, and its price borrows another class's calibration.
    let calibrated: BTreeSet<crate::registry::ArchClass> = groups.keys().map(|k| k.class).collect();
    for family in policy.registry.0.keys() {
        if let Some(class) = policy.class_of(family).filter(|c| !calibrated.contains(c)) {
            not_validated.push(format!(
                "{family}: no family of class {} is measured: it is priced from its trace by the most cautious \
                 calibration of another class (docs/traced.md, \"A class nobody measured\")",
                class.as_str()
            ));
        }
    }
    // Each fold is every calibration emit would ship without one family's
    // points anywhere: a group left with too few sizes borrows its slope
    // as emit's would, and never from the held family's own points.
    let mut folds = BTreeMap::new();
    for (key, group) in &groups {
        let families: BTreeSet<&str> = group.iter().map(|c| c.point.key.vae.as_str()).collect();
        for family in &families {
            let held: Vec<_> = group.iter().filter(|c| c.point.key.vae.as_str() == *family).collect();
            let line = held[0].line.clone();
            if !folds.contains_key(*family) {
                let without: BTreeMap<_, Vec<_>> = groups
                    .iter()
                    .map(|(k, g)| {
                        (k.clone(), g.iter().filter(|c| c.point.key.vae.as_str() != *family).cloned().collect())
                    })
                    .filter(|(_, g): &(_, Vec<_>)| !g.is_empty())
                    .collect();
                folds.insert(family.to_string(), calibrations(&without, margin, policy.min_sizes)?);
            }
            let Some(calibration) = folds[*family].get(key).map(|f| f.rounded) else {
                not_validated.push(format!(
                    "{line}: no other family of class {} measured on {} {} {} {} {} (tile {})",
                    key.class.as_str(),
                    key.conv_backend,
                    key.allocator,
                    key.os,
                    key.op,
                    key.dtype,
                    key.tile
                ));
                continue;
            };
            let mut check = LineCheck::new(line, 1);
            for c in held {
                let reserve = priced(&calibration, c.traced)?
                    .checked_add(c.clip)
                    .ok_or_else(|| anyhow!("{}: too large", c.point.id))?;
                check.points.push(HeldOut::priced(c.point, reserve, format!("family {family}"), policy)?);
            }
            checks.push(finish_check(check)?);
        }
    }
    report(HoldOut::Family, checks, not_validated)
}

/// `--by class`: each architecture class's points priced by calibrations
/// fitted on the other classes' points alone: at the point's own platform,
/// op, dtype and tile, the most cautious other class's calibration (the
/// untiled one where no other class has the tile). The honest test of a
/// class nobody measured: what its price would be, from its trace alone.
pub fn class_folds(points: &[Point], policy: &Policy, shapes: &crate::traced::Shapes) -> Result<CrossvalReport> {
    use crate::traced::{calibration_points, calibrations, priced, CalibrationKey};
    let margin = policy.traced.as_ref().map_or(policy.margin, |t| t.margin);
    let groups = calibration_points(points, policy, shapes);
    let classes: BTreeSet<crate::registry::ArchClass> = groups.keys().map(|k| k.class).collect();
    let mut checks = Vec::new();
    let mut not_validated = Vec::new();
    for class in &classes {
        let without: BTreeMap<_, Vec<_>> =
            groups.iter().filter(|(k, _)| k.class != *class).map(|(k, g)| (k.clone(), g.clone())).collect();
        let fold = calibrations(&without, margin, policy.min_sizes)?;
        for (key, group) in groups.iter().filter(|(k, _)| k.class == *class) {
            // As the runtime prices a class nobody measured: the other
            // classes' calibrations for the op at the tile (else untiled) on
            // this platform in this dtype; else on this platform or in this
            // dtype; else any; those on this conv backend first.
            let tile = if fold.keys().any(|k| k.op == key.op && k.tile == key.tile) { key.tile } else { 0 };
            let same_platform = |k: &CalibrationKey| {
                k.conv_backend == key.conv_backend && k.allocator == key.allocator && k.os == key.os
            };
            let of_op = || fold.iter().filter(|(k, _)| k.op == key.op && k.tile == tile);
            let mut found: Vec<(&CalibrationKey, &fit::Rounded)> = of_op()
                .filter(|(k, _)| same_platform(k) && k.dtype == key.dtype)
                .map(|(k, f)| (k, &f.rounded))
                .collect();
            if found.is_empty() {
                found = of_op()
                    .filter(|(k, _)| same_platform(k) || k.dtype == key.dtype)
                    .map(|(k, f)| (k, &f.rounded))
                    .collect();
            }
            if found.is_empty() {
                found = of_op().map(|(k, f)| (k, &f.rounded)).collect();
            }
            if found.iter().any(|(k, _)| k.conv_backend == key.conv_backend) {
                found.retain(|(k, _)| k.conv_backend == key.conv_backend);
            }
            let found: Vec<&fit::Rounded> = found.into_iter().map(|(_, r)| r).collect();
            if found.is_empty() {
                not_validated.push(format!(
                    "{}: no other class measured on {} {} {} {} {} (tile {})",
                    group[0].line, key.conv_backend, key.allocator, key.os, key.op, key.dtype, key.tile
                ));
                continue;
            }
            let mut check = LineCheck::new(group[0].line.clone(), 1);
            for c in group {
                let mut reserve = 0u64;
                for cal in &found {
                    reserve = reserve.max(priced(cal, c.traced)?);
                }
                let reserve = reserve.checked_add(c.clip).ok_or_else(|| anyhow!("{}: too large", c.point.id))?;
                check.points.push(HeldOut::priced(c.point, reserve, format!("class {}", class.as_str()), policy)?);
            }
            checks.push(finish_check(check)?);
        }
    }
    report(HoldOut::Class, checks, not_validated)
}

/// [`crossval`] of the lines fitted from `root`'s own points and policy.
pub fn of_root(
    root: &std::path::Path,
    by: HoldOut,
    progress: &dyn crate::progress::Progress,
) -> Result<CrossvalReport> {
    let inp = crate::workspace::Workspace::new(root).inputs_strict(crate::workspace::Digest::Skip)?;
    let shapes = crate::traced::Shapes::of(&inp.traces, &inp.policy)?;
    if by == HoldOut::Family {
        return family_folds(&inp.points, &inp.policy, &shapes);
    }
    if by == HoldOut::Class {
        return class_folds(&inp.points, &inp.policy, &shapes);
    }
    // A line follows its trace past its range only where the shipped file
    // carries the traces: with a `[traced]` margin declared.
    let shapes = if inp.policy.traced.is_some() { shapes } else { Shapes::default() };
    let lines = crate::lines::assemble(&inp.points, &inp.policy)?;
    crossval(&inp.points, &inp.policy, &lines, &shapes, by, progress)
}
