//! The evidence a reviewer reads for a change of points or policy
//! (docs/evidence.md): the fresh lines, the audit, the answers before and
//! after, the cross-validation and each line's picture, gathered from a
//! root in one place. `report` renders it into `report.md` and a folder of
//! plots; what was written is a [`BundleReport`].

use crate::crossval::{CrossvalReport, HoldOut};
use crate::diff::{DiffOptions, DiffReport, Grid, SideSpec};
use crate::lines::FitReport;
use crate::plot::{LinePlot, PlotReport};
use crate::verify::VerifyReport;
use anyhow::Result;
use serde::Serialize;
use std::path::Path;

/// Everything the report shows.
pub struct Bundle {
    /// Every line of the fresh build, and what verify would say of it.
    pub fit: FitReport,
    /// The audit of the files as they lie.
    pub verify: VerifyReport,
    /// The diff against the side before, or why there is none (no repository).
    pub diff: std::result::Result<DiffReport, String>,
    /// Leave one size out.
    pub crossval: CrossvalReport,
    /// Each declared host's estimator beside vramfit on the measured points.
    pub hosts: Vec<crate::crossval::against::AgainstReport>,
    /// What each line's picture shows.
    pub plots: Vec<LinePlot>,
}

/// What to gather.
#[derive(Debug, Clone)]
pub struct BundleOptions {
    /// The side the diff compares the root's `fits/vae.json` with.
    pub before: SideSpec,
    /// Every key of the default grid in the diff, and every plot inline.
    pub all: bool,
}

/// Gathers the evidence of the files under `root`.
pub fn gather(root: &Path, opts: &BundleOptions, progress: &dyn crate::progress::Progress) -> Result<Bundle> {
    let diff_opts = DiffOptions {
        before: opts.before.clone(),
        after: SideSpec::File(crate::workspace::Workspace::new(root).coefficients_path()),
        grid: Grid { all: opts.all, ..Grid::default() },
    };
    Ok(Bundle {
        fit: crate::verify::fresh::fit_report(root)?,
        verify: crate::verify::audit(root)?,
        diff: crate::diff::of_sides(root, &diff_opts).map_err(|e| format!("{e:#}")),
        crossval: crate::crossval::of_root(root, HoldOut::Size, progress)?,
        hosts: crate::crossval::against::each_of_root(root, None)?,
        plots: crate::plot::of_root(root)?,
    })
}

impl Bundle {
    /// The plots shown inline (indices into `plots`): the lines the diff
    /// says were added or changed, or every line with `all`; a pull-request
    /// comment shows those, and the rest are linked.
    pub fn inline(&self, all: bool) -> Vec<usize> {
        let changed: std::collections::BTreeSet<String> = match &self.diff {
            Ok(d) => d
                .lines
                .iter()
                .filter(|c| c.change != crate::coefficients::emit::Change::Removed)
                .map(|c| c.key.clone())
                .collect(),
            Err(_) => Default::default(),
        };
        (0..self.plots.len()).filter(|i| all || changed.contains(&self.plots[*i].key.to_string())).collect()
    }
}

/// What `report` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct BundleReport {
    /// The markdown file.
    pub file: String,
    /// The plots written beside it.
    pub plots: PlotReport,
    /// Whether verify passed.
    pub verify_ok: bool,
    /// The plots shown inline (PNG file names): the changed lines'.
    pub inline: Vec<String>,
    /// Held-out coverage of the cross-validation, percent.
    pub coverage_pct: Option<String>,
}
