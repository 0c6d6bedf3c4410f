//! `report.md`: the one markdown file a maintainer attaches to a pull
//! request, with the plots beside it. It renders what [`crate::evidence`]
//! gathered: the lines, the verify findings, the diff, the
//! cross-validation, and the plots as drawn.

use super::Report;
use crate::evidence::{Bundle, BundleReport};
use crate::lines::LineKind;
use crate::plot::PlotFile;

/// The markdown file's name in the report folder.
pub const FILE: &str = "report.md";
/// The plots' folder beside it.
pub const PLOTS: &str = "plots";

fn section(title: &str, body: Option<String>) -> String {
    format!("## {title}\n\n{}\n", body.unwrap_or_default().trim_end())
}

/// `report.md` for `b`, whose plots were drawn as `plots`; `inline` are
/// the indices of the plots shown inline (the rest are linked).
pub fn markdown(b: &Bundle, plots: &[PlotFile], inline: &[usize]) -> String {
    let mut md = String::from("# vramfit report\n\n");
    md.push_str(&format!(
        "Coefficients built from {} lines ({} not fitted); verify: **{}**; cross-validation: {} of {} held-out points covered ({}%).\n\n",
        b.fit.lines.iter().filter(|l| l.kind != LineKind::Insufficient).count(),
        b.fit.lines.iter().filter(|l| l.kind == LineKind::Insufficient).count(),
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
    for h in &b.hosts {
        md.push_str(&section(&format!("Against {}'s own estimator", h.host), h.markdown()));
        md.push('\n');
    }
    let mut links = String::new();
    if inline.is_empty() {
        links.push_str("No line was added or changed against the side before: no plot is shown inline.\n\n");
    }
    for i in inline {
        let f = &plots[*i];
        links.push_str(&format!("### {}\n\n![{}]({PLOTS}/{})\n\n", f.key, f.key, f.png));
    }
    links.push_str("Every line (SVG, and PNG beside each):\n\n");
    for f in plots {
        links.push_str(&format!("- [{}]({PLOTS}/{}): {}\n", f.key, f.file, f.plot.formula));
    }
    links.push_str(&format!("\nAll plots on one page: [{PLOTS}/{idx}]({PLOTS}/{idx}).\n", idx = super::plot::INDEX));
    md.push_str(&section("Plots", Some(links)));
    md
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
