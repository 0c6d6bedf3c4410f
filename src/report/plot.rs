//! Writing the plots: one SVG per line and an `index.html` that shows them
//! with the line table. The same inputs give byte-identical files.

use super::svg::{line_svg, Frame};
use super::{grid, Report};
use crate::plot::LinePlot;
use anyhow::Result;
use serde::Serialize;
use std::path::Path;

/// One written plot.
#[derive(Debug, Clone, Serialize)]
pub struct PlotFile {
    /// The line key.
    pub key: String,
    /// The SVG's file name in the output folder.
    pub file: String,
    /// The same picture as PNG, beside it (for a pull-request comment).
    pub png: String,
    /// Where the plotting area lies, to map data to pixels.
    pub frame: Frame,
    /// What was drawn.
    pub plot: LinePlot,
}

/// What `plot` wrote.
#[derive(Debug, Clone, Serialize)]
pub struct PlotReport {
    /// The output folder.
    pub out: String,
    /// The page that shows every plot.
    pub index: String,
    pub files: Vec<PlotFile>,
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn index_html(plots: &[PlotFile]) -> String {
    let mut rows = String::new();
    for f in plots {
        let p = &f.plot;
        let range = p.size_range.map(|[a, b]| format!("{a}–{b}")).unwrap_or_default();
        let ex = p.points.iter().filter(|q| q.excluded.is_some()).count();
        rows.push_str(&format!(
            "<tr><td><a href=\"#{id}\">{key}</a></td><td>{kind}</td><td>{formula}</td><td>{n}</td><td>{ex}</td><td>{range}</td></tr>\n",
            id = escape(&f.file),
            key = escape(&f.key),
            kind = p.kind.as_str(),
            formula = escape(&p.formula),
            n = p.points.len() - ex,
        ));
    }
    let mut figures = String::new();
    for f in plots {
        figures.push_str(&format!(
            "<figure id=\"{id}\"><img src=\"{id}\" alt=\"{key}\" width=\"960\" height=\"600\"><figcaption>{key}</figcaption></figure>\n",
            id = escape(&f.file),
            key = escape(&f.key)
        ));
    }
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>vramfit lines</title>\n<style>\
body{{font-family:sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}\
figure{{margin:2em 0}}img{{max-width:100%;height:auto;border:1px solid #eee}}</style></head><body>\n\
<h1>vramfit: the shipped lines</h1>\n<p>Each plot shows a line's measured points (colour by source, shape by aggregate: ● mean, ▲ single, ✕ max; grey: excluded by the policy; ringed: support), the exact envelope, the shipped line with its margin (dashed where it extrapolates beyond the measured sizes), the ratio-bound band and the legacy v1 estimate.</p>\n\
<table><tr><th>line</th><th>kind</th><th>reserve</th><th>points</th><th>excluded</th><th>measured px</th></tr>\n{rows}</table>\n{figures}</body></html>\n"
    )
}

/// Draws every plot and writes the SVGs and the index into `dir`.
pub fn write_plots(dir: &Path, plots: Vec<LinePlot>) -> Result<PlotReport> {
    // Rasterising is most of the work: the plots are drawn in one run per
    // core, then written in order.
    let cores = std::thread::available_parallelism().map_or(1, usize::from).min(plots.len().max(1));
    let per = plots.len().div_ceil(cores).max(1);
    let mut runs: Vec<Vec<LinePlot>> = Vec::new();
    let mut rest = plots.into_iter().peekable();
    while rest.peek().is_some() {
        runs.push(rest.by_ref().take(per).collect());
    }
    let drawn = crate::par::map(runs, |run| {
        run.into_iter()
            .map(|p| -> Result<(LinePlot, String, Frame, Vec<u8>)> {
                let (svg, frame) = line_svg(&p)?;
                let png = super::png::svg_to_png(&svg)?;
                Ok((p, svg, frame, png))
            })
            .collect::<Result<Vec<_>>>()
    });
    let mut files = Vec::new();
    for run in drawn {
        for (p, svg, frame, png_bytes) in run? {
            crate::fsio::write_atomic(&dir.join(&p.file), svg.as_bytes())?;
            let png = p.file.strip_suffix(".svg").unwrap_or(&p.file).to_string() + ".png";
            crate::fsio::write_atomic(&dir.join(&png), &png_bytes)?;
            files.push(PlotFile { key: p.key.to_string(), file: p.file.clone(), png, frame, plot: p });
        }
    }
    let index = dir.join("index.html");
    crate::fsio::write_atomic(&index, index_html(&files).as_bytes())?;
    Ok(PlotReport { out: crate::fsio::shown(dir), index: crate::fsio::shown(&index), files })
}

impl Report for PlotReport {
    fn table(&self) -> String {
        let rows = self.files.iter().map(|f| vec![f.key.clone(), f.plot.formula.clone(), f.file.clone()]).collect();
        let mut s = grid(&["line", "reserve", "file"], rows, &[]);
        s.push_str(&format!("\n{} plot(s) in {}; open {}\n", self.files.len(), self.out, self.index));
        s
    }
}
