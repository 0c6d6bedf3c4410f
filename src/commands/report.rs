//! `vramfit report`: the evidence bundle a maintainer attaches to a pull
//! request, written into one folder: `report.md` and the plots beside it.

use super::{Found, Outcome};
use crate::evidence::{BundleOptions, BundleReport};
use crate::report::bundle::{FILE, PLOTS};
use anyhow::Result;
use std::path::{Path, PathBuf};

/// Typed options of `report`.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// What to gather.
    pub bundle: BundleOptions,
    /// The folder written.
    pub out: PathBuf,
}

pub fn run(
    root: &Path,
    opts: &ReportOptions,
    progress: &dyn crate::progress::Progress,
) -> Result<Outcome<BundleReport>> {
    let bundle = crate::evidence::gather(root, &opts.bundle, progress)?;
    let drawn = crate::report::plot::draw(&bundle.plots)?;
    let inline = bundle.inline(opts.bundle.all);
    let markdown = crate::report::bundle::markdown(&bundle, &drawn.plots, &inline);
    // Every name is checked before anything is written: a refusal writes nothing.
    crate::fsio::check_in(&opts.out, Path::new(FILE))?;
    for f in &drawn.files {
        crate::fsio::check_in(&opts.out, &Path::new(PLOTS).join(&f.name))?;
    }
    let plots = super::write_plots(&opts.out, Path::new(PLOTS), drawn)?;
    let file = opts.out.join(FILE);
    crate::fsio::write_in(&opts.out, Path::new(FILE), markdown.as_bytes())?;
    let r = BundleReport {
        file: crate::fsio::shown(&file),
        verify_ok: bundle.verify.ok,
        inline: inline.iter().map(|i| plots.files[*i].png.clone()).collect(),
        coverage_pct: bundle.crossval.coverage_pct.clone(),
        plots,
    };
    let found = Found::when(!r.verify_ok, Found::Findings);
    let wrote = vec![r.file.clone(), r.plots.out.clone()];
    Ok(Outcome::of(r).found(found).wrote(wrote))
}

/// `report --observed FILE…`: the observed ops against the shipped lines
/// (`crate::observed`); a finding when one took more than its answer.
pub fn observed(
    root: &Path,
    opts: &crate::observed::ObservedOptions,
    progress: &dyn crate::progress::Progress,
) -> Result<Outcome<crate::observed::ObservedReport>> {
    let r = crate::observed::of_root(root, opts, progress)?;
    let found = Found::when(r.has_under(), Found::UnderReserved);
    Ok(Outcome::of(r).found(found))
}
