//! `vramfit verify`: the audit CI runs.

use super::{Found, Outcome};
use crate::verify::VerifyReport;
use anyhow::Result;
use std::path::Path;

pub fn run(root: &Path) -> Result<Outcome<VerifyReport>> {
    let r = crate::verify::audit(root)?;
    let (found, weight) = (Found::when(!r.ok, Found::Findings), r.findings.len());
    Ok(Outcome::of(r).found(found).weighing(weight))
}
