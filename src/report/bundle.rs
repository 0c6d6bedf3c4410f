//! `vramfit report`: one markdown file a maintainer attaches to a pull
//! request, with the plots beside it. It renders results the domain
//! computed: the lines, the verify findings, the diff, the cross-validation.

use super::plot::{write_plots, PlotReport};
use super::Report;
use crate::crossval::CrossvalReport;
use crate::diff::DiffReport;
use crate::lines::FitReport;
use crate::plot::LinePlot;
use crate::verify::VerifyReport;
use anyhow::Result;
use serde::Serialize;
use std::path::Path;

/// Everything the report shows.
pub struct Bundle {
    pub fit: FitReport,
    pub verify: VerifyReport,
    /// The diff against `--before`, or why there is none (no repository).
    pub diff: std::result::Result<DiffReport, String>,
    pub crossval: CrossvalReport,
    pub plots: Vec<LinePlot>,
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

fn section(title: &str, body: Option<String>) -> String {
    format!("## {title}\n\n{}\n", body.unwrap_or_default().trim_end())
}

/// The plots `report.md` shows inline: the lines the diff says were added
/// or changed (every line with `all`), as PNG, which a pull-request comment
/// takes; the rest are linked.
fn inline_plots(plots: &PlotReport, diff: &std::result::Result<DiffReport, String>, all: bool) -> Vec<usize> {
    let changed: std::collections::BTreeSet<&str> = match diff {
        Ok(d) => d
            .lines
            .iter()
            .filter(|c| c.change != crate::coefficients::emit::Change::Removed)
            .map(|c| c.key.as_str())
            .collect(),
        Err(_) => Default::default(),
    };
    (0..plots.files.len()).filter(|i| all || changed.contains(plots.files[*i].key.as_str())).collect()
}

/// Writes `report.md` and `plots/` into `dir`.
pub fn write(dir: &Path, b: Bundle, all: bool) -> Result<BundleReport> {
    let plots = write_plots(&dir.join("plots"), b.plots)?;
    let mut md = String::from("# vramfit report\n\n");
    md.push_str(&format!(
        "Coefficients built from {} lines ({} not fitted); verify: **{}**; cross-validation: {} of {} held-out points covered ({}%).\n\n",
        b.fit.lines.iter().filter(|l| l.kind != crate::lines::LineKind::Insufficient).count(),
        b.fit.lines.iter().filter(|l| l.kind == crate::lines::LineKind::Insufficient).count(),
        if b.verify.ok { "green".to_string() } else { format!("{} finding(s)", b.verify.findings.len()) },
        b.crossval.covered,
        b.crossval.held_out,
        b.crossval.coverage_pct.clone().unwrap_or_else(|| "-".into()),
    ));
    md.push_str(&section("Lines", b.fit.markdown()));
    md.push('\n');
    md.push_str(&section("Verify", b.verify.markdown()));
    md.push('\n');
    let diff = match &b.diff {
        Ok(d) => d.markdown().unwrap_or_default(),
        Err(why) => format!("No diff: {why}\n"),
    };
    md.push_str(&section("Before and after", Some(diff)));
    md.push('\n');
    md.push_str(&section("Cross-validation (leave one size out)", b.crossval.markdown()));
    md.push('\n');
    let mut links = String::new();
    let inline = inline_plots(&plots, &b.diff, all);
    if inline.is_empty() {
        links.push_str("No line was added or changed against the side before: no plot is shown inline.\n\n");
    }
    for i in &inline {
        let f = &plots.files[*i];
        links.push_str(&format!("### {}\n\n![{}](plots/{})\n\n", f.key, f.key, f.png));
    }
    links.push_str("Every line (SVG, and PNG beside each):\n\n");
    for f in &plots.files {
        links.push_str(&format!("- [{}](plots/{}): {}\n", f.key, f.file, f.plot.formula));
    }
    links.push_str("\nAll plots on one page: [plots/index.html](plots/index.html).\n");
    md.push_str(&section("Plots", Some(links)));
    let file = dir.join("report.md");
    crate::fsio::write_atomic(&file, md.as_bytes())?;
    Ok(BundleReport {
        file: crate::fsio::shown(&file),
        verify_ok: b.verify.ok,
        inline: inline.iter().map(|i| plots.files[*i].png.clone()).collect(),
        coverage_pct: b.crossval.coverage_pct.clone(),
        plots,
    })
}

impl Report for BundleReport {
    fn table(&self) -> String {
        format!(
            "{}: written, with {} plot(s) in {}; verify {}; crossval coverage {}%\n",
            self.file,
            self.plots.files.len(),
            self.plots.out,
            if self.verify_ok { "green" } else { "has findings" },
            self.coverage_pct.clone().unwrap_or_else(|| "-".into())
        )
    }
}
