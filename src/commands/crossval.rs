//! `vramfit crossval`: leave one size (or source) out, refit, price it.

use crate::crossval::{self, CrossvalReport, HoldOut};
use crate::lines::assemble;
use crate::workspace::Workspace;
use anyhow::Result;
use std::path::Path;

pub fn run(root: &Path, by: HoldOut, progress: &dyn crate::progress::Progress) -> Result<CrossvalReport> {
    let inp = Workspace::new(root).inputs_strict(crate::workspace::Digest::Skip)?;
    let lines = assemble(&inp.points, &inp.policy)?;
    crossval::crossval(&inp.points, &inp.policy, &lines, by, progress)
}
