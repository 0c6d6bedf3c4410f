//! `vramfit fit`: fit every line and show it, without writing anything.

use super::{Found, Outcome};
use crate::lines::FitReport;
use anyhow::Result;
use std::path::Path;

pub fn run(root: &Path) -> Result<Outcome<FitReport>> {
    let r = crate::verify::fresh::fit_report(root)?;
    let found = Found::when(!r.findings.is_empty(), Found::Findings);
    let weight = r.lines.iter().map(|l| l.points.len()).sum::<usize>() + r.findings.len();
    Ok(Outcome::of(r).found(found).weighing(weight))
}
