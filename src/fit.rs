//! The exact upper-envelope fit of docs/DESIGN.md, "The exact fit". Pure math on sizes and demands:
//! no I/O, no floating point.
//!
//! The envelope `(a, b)` minimises the total over-reservation
//! `Σ (a·xᵢ + b − yᵢ)` subject to covering every point with `a, b ≥ 0`.
//! Because the objective is `n·(a·x̄ + b) − Σy`, the optimum is the upper
//! hull edge above the mean size `x̄`; when that edge would need a negative
//! base (or slope), the constraint binds and the line pivots on the origin
//! (or goes flat) through the single binding point.

use crate::exact::{Overflow, Ratio, MAX_BYTES, MAX_PIXELS, MIB};
use std::cmp::Ordering;
use std::fmt;

/// One point as the fit sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FitPoint<'a> {
    /// Size in pixels (`width × height × batch`), positive.
    pub x: u64,
    /// Demand in bytes.
    pub y: u64,
    /// Point id; breaks ties so the support does not depend on input order.
    pub id: &'a str,
}

/// How the envelope is pinned to the data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// The hull edge through two points.
    Edge { left: String, right: String },
    /// `b < 0` on the hull edge: `b = 0` and the line passes through this point.
    Origin { point: String },
    /// `a < 0` on the hull edge: `a = 0` at the highest demand.
    Flat { point: String },
    /// Every point has the same size: `b = 0` through the highest demand
    /// (demand scales with pixels, so this is the cautious extrapolation).
    SingleSize { point: String },
}

impl Support {
    /// The support point ids (two for an edge, one otherwise).
    pub fn ids(&self) -> Vec<String> {
        match self {
            Support::Edge { left, right } => vec![left.clone(), right.clone()],
            Support::Origin { point } | Support::Flat { point } | Support::SingleSize { point } => vec![point.clone()],
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Support::Edge { .. } => "edge",
            Support::Origin { .. } => "origin",
            Support::Flat { .. } => "flat",
            Support::SingleSize { .. } => "single-size",
        }
    }
}

/// The unrounded optimum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// Bytes per pixel.
    pub slope: Ratio,
    /// Bytes.
    pub base: Ratio,
    pub support: Support,
}

/// Why a set of points cannot be fitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FitError {
    NoPoints,
    ZeroSize { id: String },
    TooLarge { id: String },
    Overflow,
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FitError::NoPoints => f.write_str("no points to fit"),
            FitError::ZeroSize { id } => write!(f, "point {id}: size 0 pixels"),
            FitError::TooLarge { id } => {
                write!(f, "point {id}: size above {MAX_PIXELS} pixels or demand above {MAX_BYTES} bytes")
            }
            FitError::Overflow => Overflow.fmt(f),
        }
    }
}

impl std::error::Error for FitError {}

impl From<Overflow> for FitError {
    fn from(_: Overflow) -> Self {
        FitError::Overflow
    }
}

/// The highest demand at one size, and the smallest id that has it.
#[derive(Debug, Clone, Copy)]
struct Vertex<'a> {
    x: i128,
    y: i128,
    id: &'a str,
}

/// Upper-hull vertices, left to right, from points sorted by x.
fn upper_hull<'a>(tops: &[Vertex<'a>]) -> Vec<Vertex<'a>> {
    let mut hull: Vec<Vertex<'a>> = Vec::with_capacity(tops.len().min(64));
    for &v in tops {
        while hull.len() >= 2 {
            let (o, a) = (hull[hull.len() - 2], hull[hull.len() - 1]);
            // Keep `a` only on a strict right turn; sizes and demands are
            // bounded so that these products fit comfortably in i128.
            let cross = (a.x - o.x) * (v.y - o.y) - (a.y - o.y) * (v.x - o.x);
            if cross >= 0 {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(v);
    }
    hull
}

/// The highest demand at each distinct size, sorted by size.
fn tops<'a>(points: &[FitPoint<'a>]) -> Result<Vec<Vertex<'a>>, FitError> {
    let mut sorted: Vec<&FitPoint<'a>> = points.iter().collect();
    for p in &sorted {
        if p.x == 0 {
            return Err(FitError::ZeroSize { id: p.id.to_string() });
        }
        if p.x > MAX_PIXELS || p.y > MAX_BYTES {
            return Err(FitError::TooLarge { id: p.id.to_string() });
        }
    }
    // Size ascending, demand descending, id ascending: the first of each size wins.
    sorted.sort_unstable_by(|a, b| a.x.cmp(&b.x).then(b.y.cmp(&a.y)).then_with(|| a.id.cmp(b.id)));
    let mut out: Vec<Vertex<'a>> = Vec::new();
    for p in sorted {
        if out.last().is_none_or(|v| v.x != i128::from(p.x)) {
            out.push(Vertex { x: i128::from(p.x), y: i128::from(p.y), id: p.id });
        }
    }
    Ok(out)
}

/// The exact envelope of docs/DESIGN.md, "The exact fit".
pub fn envelope(points: &[FitPoint]) -> Result<Envelope, FitError> {
    if points.is_empty() {
        return Err(FitError::NoPoints);
    }
    let tops = tops(points)?;
    if tops.len() == 1 {
        let v = tops[0];
        return Ok(Envelope {
            slope: Ratio::new(v.y, v.x)?,
            base: Ratio::zero(),
            support: Support::SingleSize { point: v.id.to_string() },
        });
    }
    let hull = upper_hull(&tops);
    let n = points.len() as u128;
    let sum_x: u128 = points.iter().map(|p| u128::from(p.x)).sum();
    // The first edge whose right end is at or past the mean: on a vertex
    // this is the edge to its left (the steeper one), as docs/DESIGN.md, "The exact fit" says. The
    // walk stops by the last vertex at the latest: no size exceeds the
    // largest, so neither does the mean.
    let mut j = 0;
    while n * (hull[j + 1].x as u128) < sum_x {
        j += 1;
    }
    on_edge(hull[j], hull[j + 1], || max_by_ratio(&tops), || Ok(max_flat(&tops)))
}

/// The envelope on the hull edge `p`–`q` above the mean, or its pivot on
/// the origin (`best_ratio`) or its flat line (`best_flat`) where the edge
/// would need a negative base or slope.
fn on_edge<'a>(
    p: Vertex<'a>,
    q: Vertex<'a>,
    best_ratio: impl FnOnce() -> Result<Vertex<'a>, FitError>,
    best_flat: impl FnOnce() -> Result<Vertex<'a>, FitError>,
) -> Result<Envelope, FitError> {
    let slope = Ratio::new(q.y - p.y, q.x - p.x)?;
    let base = Ratio::int(p.y).checked_sub(slope.checked_mul(Ratio::int(p.x))?)?;
    if base.is_negative() {
        let best = best_ratio()?;
        return Ok(Envelope {
            slope: Ratio::new(best.y, best.x)?,
            base: Ratio::zero(),
            support: Support::Origin { point: best.id.to_string() },
        });
    }
    if slope.is_negative() {
        let best = best_flat()?;
        return Ok(Envelope {
            slope: Ratio::zero(),
            base: Ratio::int(best.y),
            support: Support::Flat { point: best.id.to_string() },
        });
    }
    Ok(Envelope { slope, base, support: Support::Edge { left: p.id.to_string(), right: q.id.to_string() } })
}

/// Whether `a` wins over `b` as the flat line's point: the higher demand,
/// then the smaller size, then the smaller id.
fn flat_order(a: &Vertex, b: &Vertex) -> Ordering {
    a.y.cmp(&b.y).then(b.x.cmp(&a.x)).then_with(|| b.id.cmp(a.id))
}

/// The flat line's point: the highest demand ([`flat_order`]).
fn max_flat<'a>(tops: &[Vertex<'a>]) -> Vertex<'a> {
    let mut best = tops[0];
    for v in &tops[1..] {
        if flat_order(v, &best) == Ordering::Greater {
            best = *v;
        }
    }
    best
}

/// The point with the largest `y/x`; ties go to the smaller size, then id.
fn max_by_ratio<'a>(tops: &[Vertex<'a>]) -> Result<Vertex<'a>, FitError> {
    let mut best = tops[0];
    for v in &tops[1..] {
        // v.y/v.x > best.y/best.x  ⇔  v.y·best.x > best.y·v.x (all positive).
        let ord = (v.y * best.x).cmp(&(best.y * v.x));
        if ord == Ordering::Greater {
            best = *v;
        }
    }
    Ok(best)
}

/// Shipped values: slope in hundredths of a byte per pixel, base in MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rounded {
    pub slope_centi: u64,
    pub base_mib: u64,
}

/// Applies the margin exactly and rounds both terms up (docs/DESIGN.md, "The exact fit"), so the
/// rounded line still covers every point.
pub fn round(env: &Envelope, margin: Ratio) -> Result<Rounded, Overflow> {
    let grow = Ratio::int(1).checked_add(margin)?;
    let slope_centi = env.slope.checked_mul(grow)?.checked_mul(Ratio::int(100))?.ceil();
    let base_mib = env.base.checked_mul(grow)?.checked_div(Ratio::int(i128::from(MIB)))?.ceil();
    Ok(Rounded {
        slope_centi: u64::try_from(slope_centi).map_err(|_| Overflow)?,
        base_mib: u64::try_from(base_mib).map_err(|_| Overflow)?,
    })
}

pub use crate::contract::reserve_bytes;

/// `a·x + b` on the unrounded envelope.
pub fn envelope_at(env: &Envelope, x: u64) -> Result<Ratio, Overflow> {
    env.slope.checked_mul(Ratio::int(i128::from(x)))?.checked_add(env.base)
}

/// Total over-reservation `Σ (a·xᵢ + b − yᵢ)` of a line over points.
pub fn total_over(slope: Ratio, base: Ratio, points: &[FitPoint]) -> Result<Ratio, Overflow> {
    let n = points.len() as i128;
    let sum_x: i128 = points.iter().map(|p| i128::from(p.x)).sum();
    let sum_y: i128 = points.iter().map(|p| i128::from(p.y)).sum();
    slope.checked_mul(Ratio::int(sum_x))?.checked_add(base.checked_mul(Ratio::int(n))?)?.checked_sub(Ratio::int(sum_y))
}

pub mod leave_out;

#[cfg(test)]
mod tests;
