//! `vramfit fit`: fit every line and show it, without writing anything.

use crate::lines::{assemble, FitReport};
use crate::workspace::Workspace;
use anyhow::Result;
use std::path::Path;

pub fn run(root: &Path) -> Result<FitReport> {
    let inp = Workspace::new(root).inputs_strict()?;
    let lines = assemble(&inp.points, &inp.policy)?;
    let file = crate::coefficients::build(&lines, &inp.policy, &inp.points_bytes, &inp.policy_bytes);
    let shown = lines.iter().map(crate::lines::Line::report).collect();
    Ok(FitReport {
        margin: crate::exact::exact_decimal(&inp.policy.margin),
        ratio_bound: crate::exact::exact_decimal(&inp.policy.ratio_bound),
        lines: shown,
        findings: super::emit::audit(&inp, lines, &file)?,
    })
}
