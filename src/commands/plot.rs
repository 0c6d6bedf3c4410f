//! `vramfit plot`: what each line's picture shows (drawn by `report`).

use crate::lines::assemble;
use crate::plot::{self, LinePlot};
use crate::workspace::Workspace;
use anyhow::Result;
use std::path::Path;

pub fn run(root: &Path) -> Result<Vec<LinePlot>> {
    let inp = Workspace::new(root).inputs_strict(crate::workspace::Digest::Compute)?;
    let lines = assemble(&inp.points, &inp.policy)?;
    let file = crate::coefficients::build(&lines, &inp.policy, inp.points_digest(), &inp.policy_digest);
    plot::plots(&inp.points, &inp.policy, &lines, &file)
}
