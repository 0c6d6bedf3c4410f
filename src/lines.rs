//! Lines: the fit of each key under the policy. Which included points each
//! line key has, whether the line is fitted (the exact envelope of `fit`),
//! carried (declared in the policy) or too thin to fit, its rounded values,
//! how it prices its own points, and which of them exceed the ratio bound.
//! `fit` shows them, `emit` ships them, `verify` re-derives them. See
//! `docs/DESIGN.md`, "Lines".

pub use crate::contract::{slope_text, LineKind};
use crate::exact::Ratio;
use crate::findings::Finding;
use crate::fit::{self, Envelope, FitPoint, Rounded};
use crate::points::{LineKey, Point};
use crate::policy::Policy;
use crate::text::Text;
use anyhow::{anyhow, Result};
use serde::Serialize;
use std::collections::BTreeMap;

/// One included point of a line, as priced by that line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PricedPoint {
    pub id: Text,
    /// Where the line prices the point: its pixels (a video point: its working set).
    pub pixels: u64,
    /// The op's own demand (`Policy::own_demand`): what the line covers.
    pub demand: u64,
    /// The line's price at the point's size, plus a video point's clip term
    /// (None for an insufficient line).
    pub reserve: Option<u64>,
    /// Made on a simulated device (`Point::is_simulated`).
    pub simulated: bool,
    /// The device the point was measured on, as its row names it.
    pub device: Option<Text>,
    /// How its figure was taken (None: the row does not say).
    pub context: Option<crate::vocab::Context>,
}

/// A line with everything `fit`, `emit` and `verify` need to know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub key: LineKey,
    pub kind: LineKind,
    /// Shipped values (None for an insufficient line).
    pub rounded: Option<Rounded>,
    /// The unrounded optimum (fitted lines only).
    pub envelope: Option<Envelope>,
    /// Included points, sorted by id.
    pub points: Vec<PricedPoint>,
    pub distinct_sizes: usize,
    /// Smallest and largest measured size, pixels.
    pub size_range: Option<(u64, u64)>,
    /// Digest of the points behind the line (id, pixels, demand).
    pub points_digest: String,
    /// Largest `reserve / demand` over the points.
    pub max_ratio: Option<Ratio>,
    /// Points above the ratio bound that are not listed exceptions.
    pub over_bound: Vec<Text>,
    /// Listed exceptions among this line's points.
    pub exceptions: Vec<Text>,
    /// Why the line is carried or insufficient.
    pub reason: Option<String>,
}

/// Digest of a line's points: SHA-256 over `id\tpixels\tdemand\n`, sorted by id.
pub fn points_digest(points: &[PricedPoint]) -> String {
    let mut digest = crate::fsio::DigestWriter::default();
    let mut row = Vec::with_capacity(64);
    for p in points {
        row.clear();
        row.extend_from_slice(p.id.as_bytes());
        row.push(b'\t');
        crate::points::write_u64(&mut row, p.pixels);
        row.push(b'\t');
        crate::points::write_u64(&mut row, p.demand);
        row.push(b'\n');
        digest.update(&row);
    }
    digest.finish()
}

/// The included points of each line key, sorted by id.
pub type Groups<'a> = BTreeMap<LineKey, Vec<&'a Point>>;

/// Groups the included points by line key.
/// The points are borrowed, never copied: at 10^5 points a copy per
/// grouping was a tenth of `verify`; `verify` groups once for the fit and
/// the certificate.
pub fn group<'a>(points: &'a [Point], policy: &Policy) -> Groups<'a> {
    let mut by_key: BTreeMap<LineKey, Vec<&'a Point>> = BTreeMap::new();
    // A point the attention phase explains prices by that phase, not by the line.
    for p in points.iter().filter(|p| !policy.is_excluded(&p.id) && !policy.explained_by_attention(p)) {
        by_key.entry(policy.line_key(p)).or_default().push(p);
    }
    for v in by_key.values_mut() {
        v.sort_by(|a, b| a.id.cmp(&b.id));
    }
    by_key
}

/// Every line: fitted, carried (from the policy, with or without points) and
/// insufficient, sorted by key.
pub fn assemble(points: &[Point], policy: &Policy) -> Result<Vec<Line>> {
    assemble_groups(&group(points, policy), policy)
}

/// [`assemble`] from points already grouped.
pub fn assemble_groups(groups: &Groups, policy: &Policy) -> Result<Vec<Line>> {
    let mut keys: Vec<&LineKey> = groups.keys().chain(policy.carries.iter().map(|c| &c.key)).collect();
    keys.sort();
    keys.dedup();
    // Lines are independent: they are fitted on every core, in runs of
    // keys holding about as many points each, and come back in key order
    // (so the first error is the one a walk in order would meet).
    let points = |k: &&LineKey| groups.get(*k).map_or(0, Vec::len);
    let total: usize = keys.iter().map(points).sum();
    let parts = crate::par::balanced(&keys, points, crate::par::threads_for(total));
    let runs = crate::par::map(parts, |run| -> Result<Vec<Line>> {
        run.iter().map(|key| line((*key).clone(), groups.get(*key).map_or(&[][..], Vec::as_slice), policy)).collect()
    });
    let mut lines = Vec::with_capacity(keys.len());
    for run in runs {
        lines.extend(run?);
    }
    Ok(lines)
}

fn line(key: LineKey, pts: &[&Point], policy: &Policy) -> Result<Line> {
    // (x, clip term) of each point: pixels and 0 for an image line; the
    // working set and the clip copies for a video one.
    let coords: Vec<(u64, u64)> = pts
        .iter()
        .map(|p| policy.fit_coordinates(p).ok_or_else(|| {
            let what = format!("point '{}' (line {key}): its working set or clip copies are too large to price under fits/policy.toml's clip copies", p.id);
            anyhow::Error::new(crate::places::InputError::in_file(crate::findings::POINTS_FILE, what).point(&p.id))
        }))
        .collect::<Result<_>>()?;
    let mut sizes: Vec<u64> = coords.iter().map(|(x, _)| *x).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let carry = policy.carries.iter().find(|c| c.key == key);
    let (kind, rounded, envelope, reason) = if let Some(c) = carry {
        let r = Rounded { slope_centi: c.slope_centi, base_mib: c.base_mib };
        (LineKind::Carried, Some(r), None, Some(c.reason.clone()))
    } else if sizes.len() >= policy.min_sizes {
        let fp: Vec<FitPoint> = pts
            .iter()
            .zip(&coords)
            .map(|(p, (x, clip))| FitPoint { x: *x, y: policy.own_demand(p).saturating_sub(*clip), id: &p.id })
            .collect();
        let env = fit::envelope(&fp).map_err(|e| anyhow!("line {key}: {e}"))?;
        let r = fit::round(&env, policy.margin).map_err(|e| anyhow!("line {key}: {e}"))?;
        (LineKind::Fitted, Some(r), Some(env), None)
    } else {
        let why = format!(
            "{} distinct size(s), {} needed (min_sizes); priced by the unmeasured rule",
            sizes.len(),
            policy.min_sizes
        );
        (LineKind::Insufficient, None, None, Some(why))
    };
    let priced: Vec<PricedPoint> = pts
        .iter()
        .zip(&coords)
        .map(|(p, (x, clip))| {
            let reserve = rounded
                .map(|r| fit::reserve_bytes(r.slope_centi, r.base_mib, *x).map(|b| b.checked_add(*clip)))
                .transpose()
                .map_err(|e| anyhow!("line {key}, point {}: {e}", p.id))?
                .map(|b| b.ok_or_else(|| anyhow!("line {key}, point {}: reservation too large", p.id)))
                .transpose()?;
            Ok(PricedPoint {
                id: p.id.clone(),
                pixels: *x,
                demand: policy.own_demand(p),
                reserve,
                simulated: p.is_simulated(),
                device: p.device.clone(),
                context: p.context,
            })
        })
        .collect::<Result<_>>()?;
    // Ratios are compared as fractions (cross-multiplied in u128), and only
    // the largest is reduced: no gcd per point.
    let mut max: Option<(u64, u64)> = None;
    let (mut over_bound, mut exceptions) = (Vec::new(), Vec::new());
    for p in &priced {
        let Some(r) = p.reserve else { continue };
        if max.is_none_or(|(mr, md)| u128::from(r) * u128::from(md) > u128::from(mr) * u128::from(p.demand)) {
            max = Some((r, p.demand));
        }
    }
    for p in &priced {
        if policy.is_exception(&p.id) {
            exceptions.push(p.id.clone());
        } else if p
            .reserve
            .is_some_and(|r| policy.ratio_bound.cmp_fraction(r, p.demand) == Ok(std::cmp::Ordering::Less))
        {
            over_bound.push(p.id.clone());
        }
    }
    let max_ratio = max.and_then(|(r, d)| Ratio::new(i128::from(r), i128::from(d)).ok());
    Ok(Line {
        key,
        kind,
        rounded,
        envelope,
        distinct_sizes: sizes.len(),
        size_range: sizes.first().map(|lo| (*lo, *sizes.last().unwrap_or(lo))),
        points_digest: points_digest(&priced),
        points: priced,
        max_ratio,
        over_bound,
        exceptions,
        reason,
    })
}

impl Line {
    /// The devices its points were measured on, each once, sorted.
    pub fn devices(&self) -> Vec<String> {
        let set: std::collections::BTreeSet<&str> = self.points.iter().filter_map(|p| p.device.as_deref()).collect();
        set.into_iter().map(str::to_string).collect()
    }
}

/// One line as `fit` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct FitLine {
    /// The line key.
    #[serde(flatten)]
    pub key: LineKey,
    /// `fitted`, `carried` or `insufficient`.
    pub kind: LineKind,
    /// B/px with two decimals (null when insufficient).
    pub slope: Option<String>,
    /// MiB (null when insufficient).
    pub base_mib: Option<u64>,
    /// Ids of the included points.
    pub points: Vec<Text>,
    /// Distinct sizes among them.
    pub distinct_sizes: usize,
    /// Ids of the support points.
    pub support: Vec<String>,
    /// Largest reserve / demand over the points, four decimals rounded up.
    pub max_ratio: Option<String>,
    /// Points above the ratio bound that are not listed exceptions.
    pub over_bound: Vec<Text>,
    /// Why a line is carried or insufficient.
    pub reason: Option<String>,
    /// Its points by how each figure was taken (`unsaid`: the row does not
    /// say): a line of more than one context says so (docs/data.md, "Context").
    pub contexts: std::collections::BTreeMap<String, usize>,
}

/// What `fit` shows: every line, sorted by key, and what `verify` would say.
#[derive(Debug, Clone, Serialize)]
pub struct FitReport {
    /// The margin used, exact.
    pub margin: String,
    /// The ratio bound used, exact.
    pub ratio_bound: String,
    /// Every line.
    pub lines: Vec<FitLine>,
    /// What `verify` would report on the file these lines make; `fit`
    /// exits 1 when there are any.
    pub findings: Vec<Finding>,
}

impl Line {
    /// The line as `fit` reports it.
    pub fn report(&self) -> FitLine {
        FitLine {
            key: self.key.clone(),
            kind: self.kind,
            slope: self.rounded.map(|r| slope_text(r.slope_centi)),
            base_mib: self.rounded.map(|r| r.base_mib),
            points: self.points.iter().map(|p| p.id.clone()).collect(),
            distinct_sizes: self.distinct_sizes,
            support: self.envelope.as_ref().map(|e| e.support.ids()).unwrap_or_default(),
            max_ratio: self.max_ratio.map(|m| m.to_decimal_ceil(4)),
            over_bound: self.over_bound.clone(),
            reason: self.reason.clone(),
            contexts: self.contexts(),
        }
    }

    /// Its points counted by context (`unsaid` where a row does not say).
    pub fn contexts(&self) -> std::collections::BTreeMap<String, usize> {
        let mut out = std::collections::BTreeMap::new();
        for p in &self.points {
            *out.entry(p.context.map_or("unsaid", |c| c.as_str()).to_string()).or_insert(0) += 1;
        }
        out
    }
}

/// A line's contexts in words, where it has more than one: `fresh 14, warm 6`.
pub fn mixed_contexts(contexts: &std::collections::BTreeMap<String, usize>) -> Option<String> {
    (contexts.len() > 1).then(|| contexts.iter().map(|(c, n)| format!("{c} {n}")).collect::<Vec<_>>().join(", "))
}
