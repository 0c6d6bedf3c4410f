//! `vramfit fit`: fit every line and show it, without writing anything.

use crate::lines::FitReport;
use anyhow::Result;
use std::path::Path;

pub fn run(root: &Path) -> Result<FitReport> {
    let mut fresh = super::emit::fresh(root, super::emit::Purpose::Show)?;
    crate::places::locate(&mut fresh.findings, root);
    Ok(FitReport {
        margin: crate::exact::exact_decimal(&fresh.file.margin),
        ratio_bound: crate::exact::exact_decimal(&fresh.file.ratio_bound),
        lines: fresh.lines,
        findings: fresh.findings,
    })
}
