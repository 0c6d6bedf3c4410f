//! `vramfit emit`: write `fits/vae.json` from the points and the policy.

use super::{Found, Outcome};
use crate::coefficients::emit::EmitReport;
use crate::verify::fresh::emit;
use anyhow::Result;
use std::path::Path;

/// `check`: only compare (`--check`); `force`: write despite findings
/// (`--force`); `wait`: how long to wait for another writer's lock
/// (`--wait`).
pub fn run(root: &Path, check: bool, force: bool, wait: std::time::Duration) -> Result<Outcome<EmitReport>> {
    let r = emit(root, check, force, wait)?;
    let found = match (check && r.out_of_date(), r.findings.is_empty()) {
        (_, false) => Found::Findings,
        (true, true) => Found::OutOfDate,
        (false, true) => Found::Nothing,
    };
    let weight = r.findings.len();
    let copies = r.copies.iter().filter(|b| b.written).map(|b| b.file.clone());
    let wrote: Vec<String> = r.written.then(|| r.file.clone()).into_iter().chain(copies).collect();
    Ok(Outcome::of(r).found(found).weighing(weight).wrote(wrote))
}
