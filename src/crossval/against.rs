//! `crossval --against HOST`: every measured point priced by the host's own
//! estimator (the `[[host_estimator]]`s the policy declares, and its video
//! estimates in the shipped file) and by vramfit's shipped answer, side by
//! side on the same points (docs/hosts.md).

use super::floor4;
use crate::exact::Ratio;
use crate::points::Point;
use crate::policy::hosts::{HostCall, HostEstimator};
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::{Coefficients, Pricer, Query};
use anyhow::{anyhow, bail, Result};
use serde::Serialize;

/// One point, priced both ways.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Priced {
    pub id: String,
    /// The point's line key.
    pub line: String,
    pub width: u64,
    pub height: u64,
    pub frames: u64,
    pub batch: u64,
    pub demand_bytes: u64,
    /// What the host's estimator returns.
    pub host_bytes: u64,
    /// `host / demand`, four decimals, rounded down.
    pub host_ratio: String,
    /// What vramfit reserves (its shipped answer for the point's query).
    pub vramfit_bytes: u64,
    pub vramfit_ratio: String,
    /// The host's estimator that priced it: `vae/op[/backend] version`, or a video estimate's source.
    pub estimator: String,
}

/// A priced point with its two exact ratios (host, vramfit).
type Row = (Priced, Ratio, Ratio);

/// One side's figures over the points both priced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Side {
    pub covered: usize,
    pub coverage_pct: Option<String>,
    pub mean_ratio: Option<String>,
    pub worst_ratio: Option<String>,
    /// The points it under-reserves.
    pub under: Vec<String>,
}

/// The side-by-side report.
#[derive(Debug, Clone, Serialize)]
pub struct AgainstReport {
    pub host: String,
    /// The releases whose estimators were restated.
    pub versions: Vec<String>,
    /// Points priced by both.
    pub priced: usize,
    pub host_side: Side,
    pub vramfit_side: Side,
    pub points: Vec<Priced>,
    /// Measured points the host declares no estimator for, with why.
    pub not_priced: Vec<String>,
}

/// The hosts the policy declares an estimator for (image or video).
pub fn hosts(policy: &crate::policy::Policy) -> Vec<String> {
    let mut out: Vec<String> = policy.host_estimators.iter().map(|e| e.host.clone()).collect();
    if let Some(v) = &policy.video {
        out.extend(v.estimates.iter().map(|e| e.host.clone()));
    }
    out.sort();
    out.dedup();
    out
}

pub fn of_root(root: &std::path::Path, host: &str) -> Result<AgainstReport> {
    let mut all = each_of_root(root, Some(host))?;
    all.pop().ok_or_else(|| anyhow!("--against {host}: nothing priced"))
}

/// Every declared host's report (`host`: only that one, refused when the
/// policy declares none of it), on the root's included points and its
/// shipped `fits/vae.json`.
pub fn each_of_root(root: &std::path::Path, host: Option<&str>) -> Result<Vec<AgainstReport>> {
    let inp = crate::workspace::Workspace::new(root).inputs_strict(crate::workspace::Digest::Skip)?;
    let known = hosts(&inp.policy);
    if let Some(h) = host.filter(|h| !known.iter().any(|k| k == h)) {
        let declared = if known.is_empty() { "none".to_string() } else { known.join(", ") };
        bail!(
            "--against {h}: the policy declares no estimator of that host (declared: {declared}); add \
             [[host_estimator]] entries to fits/policy.toml (docs/hosts.md)"
        );
    }
    let path = root.join("fits/vae.json");
    let text = crate::fsio::read_text(&path)?;
    let shown = crate::fsio::shown(&path);
    let pricer = Coefficients::new(crate::contract::load::parse(&text, &shown)?, shown)?;
    let points: Vec<&Point> = inp.points.iter().filter(|p| !inp.policy.is_excluded(&p.id)).collect();
    known
        .iter()
        .filter(|h| host.is_none_or(|want| want == h.as_str()))
        .map(|h| against(&points, &inp.policy, &pricer, h))
        .collect()
}

/// The host's price of one point, and which estimator gave it (None: none declared).
fn host_price(
    p: &Point,
    estimators: &[HostEstimator],
    pricer: &Coefficients,
    host: &str,
) -> Result<Option<(u64, String)>> {
    let k = &p.key;
    let registry = &pricer.file.registry;
    if let (Some(facts), Some(v)) =
        (registry.get(k.vae.as_str()).and_then(|e| e.video.as_ref()), pricer.file.video.as_ref())
    {
        let run = crate::contract::video::Run {
            width: p.width,
            height: p.height,
            frames: p.frames,
            batch: p.batch,
            tile: k.tile,
            temporal_tile: k.temporal_tile.unwrap_or(0),
            dtype: k.dtype,
        };
        let mut best: Option<(u64, String)> = None;
        for (e, bytes) in v.estimates(k.vae.as_str(), k.op, facts, run).into_iter().filter(|(e, _)| e.host == host) {
            let bytes = bytes.ok_or_else(|| anyhow!("point {}: {host}'s estimate overflows", p.id))?;
            if best.as_ref().is_none_or(|(b, _)| bytes > *b) {
                best = Some((bytes, e.source.clone()));
            }
        }
        return Ok(best.map(|(b, source)| (b, source.split(':').next().unwrap_or_default().to_string())));
    }
    let Some(e) = HostEstimator::for_call(estimators, host, k.vae.as_str(), k.op, k.conv_backend) else {
        return Ok(None);
    };
    let call = HostCall {
        width: p.width,
        height: p.height,
        batch: p.batch,
        tile: k.tile,
        dtype: k.dtype,
        conv_backend: k.conv_backend,
    };
    let bytes = e.bytes(call).ok_or_else(|| anyhow!("point {}: {host}'s estimate overflows", p.id))?;
    let on = e.conv_backend.map(|b| format!("/{b}")).unwrap_or_default();
    Ok(Some((bytes, format!("{}/{}{on} {} {}", e.vae, e.op, e.host, e.version))))
}

pub fn against(
    points: &[&Point],
    policy: &crate::policy::Policy,
    pricer: &Coefficients,
    host: &str,
) -> Result<AgainstReport> {
    let mut rows = Vec::new();
    let mut not_priced = Vec::new();
    let mut versions: Vec<String> =
        policy.host_estimators.iter().filter(|e| e.host == host).map(|e| e.version.clone()).collect();
    versions.sort();
    versions.dedup();
    for p in points {
        let Some((host_bytes, estimator)) = host_price(p, &policy.host_estimators, pricer, host)? else {
            not_priced.push(format!("{}: {host} declares no estimator for {} {}", p.id, p.key.vae, p.key.op));
            continue;
        };
        let q = Query {
            frames: p.frames,
            temporal_tile: Some(p.key.temporal_tile.unwrap_or(0)),
            // In the point's own context: a fresh point's answer adds its first use.
            warm: p.priced_warm(),
            ..Query::at_key(&p.key, p.width, p.height, p.batch)
        };
        let vramfit_bytes = pricer.quote(&q, &EnvSnapshot::default())?.bytes;
        let ratio = |b: u64| Ratio::new(i128::from(b), i128::from(p.demand_bytes));
        rows.push((
            Priced {
                id: p.id.to_string(),
                line: p.key.to_string(),
                width: p.width,
                height: p.height,
                frames: p.frames,
                batch: p.batch,
                demand_bytes: p.demand_bytes,
                host_bytes,
                host_ratio: floor4(ratio(host_bytes)?),
                vramfit_bytes,
                vramfit_ratio: floor4(ratio(vramfit_bytes)?),
                estimator,
            },
            ratio(host_bytes)?,
            ratio(vramfit_bytes)?,
        ));
    }
    rows.sort_by(|a, b| a.0.line.cmp(&b.0.line).then(a.0.id.cmp(&b.0.id)));
    let side = |pick: &dyn Fn(&Row) -> (Ratio, u64)| -> Side {
        let mut worst: Option<Ratio> = None;
        let mut under = Vec::new();
        let mut pairs = Vec::new();
        for r in &rows {
            let (ratio, bytes) = pick(r);
            if bytes < r.0.demand_bytes {
                under.push(r.0.id.clone());
            }
            pairs.push((bytes, r.0.demand_bytes));
            if worst.is_none_or(|w| ratio.cmp_exact(&w) == Ok(std::cmp::Ordering::Less)) {
                worst = Some(ratio);
            }
        }
        let n = rows.len();
        let covered = n - under.len();
        Side {
            covered,
            coverage_pct: (n > 0).then(|| {
                let pct = (covered as u128 * 1000) / n as u128;
                format!("{}.{}", pct / 10, pct % 10)
            }),
            mean_ratio: super::mean4(pairs),
            worst_ratio: worst.map(floor4),
            under,
        }
    };
    let host_side = side(&|r| (r.1, r.0.host_bytes));
    let vramfit_side = side(&|r| (r.2, r.0.vramfit_bytes));
    Ok(AgainstReport {
        host: host.to_string(),
        versions,
        priced: rows.len(),
        host_side,
        vramfit_side,
        points: rows.into_iter().map(|r| r.0).collect(),
        not_priced,
    })
}
