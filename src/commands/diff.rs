//! `vramfit diff [BEFORE] [AFTER]`: the before/after table of an estimator
//! change. Each side is a coefficients file, `embedded`, `legacy` or
//! `git:REV` (docs/cli.md, "diff").

use super::{Found, Outcome};
use crate::diff::{DiffOptions, DiffReport};
use crate::exact::Ratio;
use anyhow::Result;
use std::path::Path;

/// `fail_over`: `--fail-over`, the growth beyond which the run is a finding.
pub fn run(root: &Path, opts: &DiffOptions, fail_over: Option<Ratio>) -> Result<Outcome<DiffReport>> {
    let r = crate::diff::of_sides(root, opts)?;
    let found = Found::when(fail_over.is_some_and(|p| r.grows_more_than(p)), Found::Growth);
    Ok(Outcome::of(r).found(found))
}
