//! `vramfit fit`: fit every line and show it, without writing anything.

use crate::coefficients::assemble::{assemble, slope_text, Line};
use crate::inputs;
use anyhow::Result;
use serde::Serialize;
use std::path::Path;

/// One line as `fit` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct FitLine {
    pub vae: String,
    pub op: String,
    pub tile: u32,
    pub conv_backend: String,
    pub allocator: String,
    pub os: String,
    pub dtype: String,
    /// `fitted`, `carried` or `insufficient`.
    pub kind: String,
    /// B/px with two decimals (null when insufficient).
    pub slope: Option<String>,
    /// MiB (null when insufficient).
    pub base_mib: Option<u64>,
    /// Ids of the included points.
    pub points: Vec<String>,
    pub distinct_sizes: usize,
    /// Ids of the support points.
    pub support: Vec<String>,
    /// Largest reserve / demand over the points, four decimals rounded up.
    pub max_ratio: Option<String>,
    /// Points above the ratio bound that are not listed exceptions.
    pub over_bound: Vec<String>,
    /// Why a line is carried or insufficient.
    pub reason: Option<String>,
}

/// All lines, sorted by key.
#[derive(Debug, Clone, Serialize)]
pub struct FitReport {
    /// The margin used, exact.
    pub margin: String,
    /// The ratio bound used, exact.
    pub ratio_bound: String,
    pub lines: Vec<FitLine>,
    /// What `verify` would report on the file these lines make; `fit`
    /// exits 1 when there are any.
    pub findings: Vec<crate::verify::Finding>,
}

pub fn to_fit_line(l: &Line) -> FitLine {
    FitLine {
        vae: l.key.vae.clone(),
        op: l.key.op.to_string(),
        tile: l.key.tile,
        conv_backend: l.key.conv_backend.to_string(),
        allocator: l.key.allocator.to_string(),
        os: l.key.os.to_string(),
        dtype: l.key.dtype.to_string(),
        kind: l.kind.as_str().to_string(),
        slope: l.rounded.map(|r| slope_text(r.slope_centi)),
        base_mib: l.rounded.map(|r| r.base_mib),
        points: l.points.iter().map(|p| p.id.clone()).collect(),
        distinct_sizes: l.distinct_sizes,
        support: l.envelope.as_ref().map(|e| e.support.ids()).unwrap_or_default(),
        max_ratio: l.max_ratio.map(|m| m.to_decimal_ceil(4)),
        over_bound: l.over_bound.clone(),
        reason: l.reason.clone(),
    }
}

pub fn run(root: &Path) -> Result<FitReport> {
    let inp = inputs::load_strict(root)?;
    let lines = assemble(&inp.points, &inp.policy)?;
    let file = crate::coefficients::build(&lines, &inp.policy, &inp.points_bytes, &inp.policy_bytes);
    Ok(FitReport {
        margin: crate::exact::exact_decimal(&inp.policy.margin),
        ratio_bound: crate::exact::exact_decimal(&inp.policy.ratio_bound),
        lines: lines.iter().map(to_fit_line).collect(),
        findings: super::emit::audit(&inp, &file)?,
    })
}
