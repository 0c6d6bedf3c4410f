//! `vramfit crossval`: leave one size (or source) out, refit, price it.

use super::{Found, Outcome};
use crate::crossval::{CrossvalReport, HoldOut};
use crate::exact::Ratio;
use anyhow::Result;
use std::path::Path;

/// `fail_under`: `--fail-under`, the coverage below which the run is a finding.
pub fn run(
    root: &Path,
    by: HoldOut,
    fail_under: Option<Ratio>,
    progress: &dyn crate::progress::Progress,
) -> Result<Outcome<CrossvalReport>> {
    let r = crate::crossval::of_root(root, by, progress)?;
    let found = Found::when(fail_under.is_some_and(|p| r.below(p)), Found::CoverageBelow);
    Ok(Outcome::of(r).found(found))
}

/// `--against HOST`: the host's estimator and vramfit on the same measured
/// points. The figures are the answer; nothing in them is a finding.
pub fn against(root: &Path, host: &str) -> Result<Outcome<crate::crossval::against::AgainstReport>> {
    Ok(Outcome::of(crate::crossval::against::of_root(root, host)?))
}

/// `--simulated`: every measured point beside the allocator replay of its
/// own configuration's trace. The figures are the answer, not findings.
pub fn simulated(root: &Path) -> Result<Outcome<crate::traced::validation::SimulatedReport>> {
    let ws = crate::workspace::Workspace::new(root);
    let inp = ws.inputs_strict(crate::workspace::Digest::Skip)?;
    let path = root.join("measurements").join("traced").join("points").join("points.csv");
    let text = crate::fsio::read_text(&path)?;
    let rows = crate::points::traced::parse(&text, &crate::fsio::shown(&path), Some(&inp.policy.registry))?;
    Ok(Outcome::of(crate::traced::validation::compare(&inp.points, &rows, &inp.policy)))
}
