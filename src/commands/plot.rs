//! `vramfit plot`: draw each line's picture into a folder.

use super::Outcome;
use crate::plot::PlotReport;
use anyhow::Result;
use std::path::Path;

/// `out`: the folder the plots are written into.
pub fn run(root: &Path, out: &Path) -> Result<Outcome<PlotReport>> {
    let drawn = crate::report::plot::draw(&crate::plot::of_root(root)?)?;
    let r = super::write_plots(out, Path::new(""), drawn)?;
    let wrote = vec![r.out.clone()];
    Ok(Outcome::of(r).wrote(wrote))
}
