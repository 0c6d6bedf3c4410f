//! Calibrations (docs/traced.md, "Calibration, and leaving a family out"):
//! the measured points of each architecture class against their traces,
//! grouped by platform, op, dtype and tile, and the exact envelope each
//! group ships, or, on too few sizes, the nearest fitted slope with its
//! base lifted. Pure math over the points, the shapes and the policy.

use super::Shapes;
use crate::exact::{Ratio, MIB};
use crate::fit::{self, Envelope, FitPoint};
use crate::points::{LineKey, Point};
use crate::policy::document::ArchClass;
use crate::policy::Policy;
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
use anyhow::{anyhow, Result};
use std::collections::{BTreeMap, BTreeSet};

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
        let k = self;
        crate::contract::traced::calibration_id(k.class, k.op, k.tile, k.conv_backend, k.allocator, k.os, k.dtype)
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
