//! The allocator replay against every measured point (docs/traced.md,
//! "Validation"): each point beside the simulated peaks of the trace at its
//! own configuration (`measurements/traced/points/points.csv`, written by
//! `python3 -m harness trace --points`), on its own platform. Pure: rows
//! in, a report out.

use crate::points::traced::TracedRow;
use crate::points::Point;
use crate::policy::Policy;
use serde::Serialize;
use std::collections::BTreeMap;

/// The band a simulated peak is held to: measured ÷ simulated in
/// [0.85, 1.30] (issue 62's bar), in thousandths.
pub const BAND_MILLI: (u64, u64) = (850, 1300);

/// Which measured peak a point is compared on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// `max_memory_reserved()`: the replay's reserved peak.
    Reserved,
    /// Only `max_memory_allocated()` was published: the replay's allocated peak.
    Allocated,
}

/// One point beside its replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Compared {
    pub id: String,
    pub vae: String,
    pub class: String,
    pub platform: String,
    pub metric: Metric,
    pub measured_bytes: u64,
    pub simulated_bytes: u64,
    /// measured ÷ simulated, three decimals, rounded down.
    pub ratio: String,
    /// measured allocated ÷ simulated allocated, where the point has both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocated_ratio: Option<String>,
    pub within: bool,
    #[serde(skip)]
    milli: u64,
}

/// One group's figures: a class, a platform, or every point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Group {
    pub group: String,
    pub points: usize,
    pub within: usize,
    pub min: String,
    pub median: String,
    pub max: String,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct SimulatedReport {
    pub band: [String; 2],
    pub compared: Vec<Compared>,
    /// Per class, per platform, and `all`.
    pub groups: Vec<Group>,
    /// Points with no replay at their configuration, with why.
    pub not_compared: Vec<String>,
}

fn milli_text(m: u64) -> String {
    format!("{}.{:03}", m / 1000, m % 1000)
}

/// `measured / simulated` in thousandths, rounded down (u128: no overflow).
fn milli(measured: u64, simulated: u64) -> u64 {
    u64::try_from(u128::from(measured) * 1000 / u128::from(simulated.max(1))).unwrap_or(u64::MAX)
}

/// The row traced at a point's own configuration: its family, op, dtype,
/// tile, size, frames and batch; of two configs of one family (SD1.5 and
/// SDXL), the one the point's model names.
fn row_of<'a>(p: &Point, rows: &'a [TracedRow]) -> Option<&'a TracedRow> {
    let same: Vec<&TracedRow> = rows
        .iter()
        .filter(|r| {
            r.vae == p.key.vae.as_str()
                && r.op == p.key.op
                && r.dtype == p.key.dtype
                && r.tile == p.key.tile
                && r.width == p.width
                && r.height == p.height
                && r.frames == p.frames
                && r.batch == p.batch
        })
        .collect();
    let model = p.model.as_ref().map(|m| m.as_str().replace('-', "_"));
    let named = same.iter().find(|r| model.as_deref().is_some_and(|m| m == r.family || m.starts_with(&r.family)));
    named.copied().or_else(|| {
        (same.iter().map(|r| &r.family).collect::<std::collections::BTreeSet<_>>().len() == 1).then(|| same[0])
    })
}

/// Every point that is not excluded, beside its replay on its own platform.
pub fn compare(points: &[Point], rows: &[TracedRow], policy: &Policy) -> SimulatedReport {
    let mut compared = Vec::new();
    let mut not_compared = Vec::new();
    for p in points {
        if policy.is_excluded(p.id.as_str()) {
            continue;
        }
        let Some(row) = row_of(p, rows) else {
            not_compared.push(format!("{}: no trace at its configuration in points.csv", p.id));
            continue;
        };
        let (backend, allocator) = (p.key.conv_backend.as_str(), p.key.allocator.as_str());
        let platform =
            crate::contract::traced::ReplayPlatform { conv_backend: p.key.conv_backend, allocator: p.key.allocator };
        let Some(sim) = row.simulated_on(platform) else {
            not_compared.push(format!("{}: no allocator model for {backend}/{allocator}", p.id));
            continue;
        };
        let (metric, measured, simulated) = match (p.reserved_bytes, p.allocated_bytes) {
            (Some(r), _) => (Metric::Reserved, r, sim.reserved),
            (None, Some(a)) => (Metric::Allocated, a, sim.allocated),
            (None, None) => (Metric::Reserved, p.demand_bytes, sim.reserved),
        };
        let m = milli(measured, simulated);
        compared.push(Compared {
            id: p.id.to_string(),
            vae: p.key.vae.to_string(),
            class: policy.class_of(p.key.vae.as_str()).map_or("none", |c| c.as_str()).to_string(),
            platform: format!("{backend}/{allocator}"),
            metric,
            measured_bytes: measured,
            simulated_bytes: simulated,
            ratio: milli_text(m),
            allocated_ratio: p
                .allocated_bytes
                .filter(|_| metric == Metric::Reserved)
                .map(|a| milli_text(milli(a, sim.allocated))),
            within: (BAND_MILLI.0..=BAND_MILLI.1).contains(&m),
            milli: m,
        });
    }
    compared.sort_by(|a, b| {
        (a.class.as_str(), a.platform.as_str(), a.id.as_str()).cmp(&(
            b.class.as_str(),
            b.platform.as_str(),
            b.id.as_str(),
        ))
    });
    let mut by: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for c in &compared {
        by.entry(format!("class {}", c.class)).or_default().push(c.milli);
        by.entry(format!("platform {}", c.platform)).or_default().push(c.milli);
        by.entry("all".to_string()).or_default().push(c.milli);
    }
    let groups = by
        .into_iter()
        .map(|(group, mut v)| {
            v.sort_unstable();
            Group {
                group,
                points: v.len(),
                within: v.iter().filter(|m| (BAND_MILLI.0..=BAND_MILLI.1).contains(m)).count(),
                min: milli_text(v[0]),
                median: milli_text(v[v.len() / 2]),
                max: milli_text(v[v.len() - 1]),
            }
        })
        .collect();
    SimulatedReport { band: [milli_text(BAND_MILLI.0), milli_text(BAND_MILLI.1)], compared, groups, not_compared }
}
