//! Drawing the plots: one SVG per line, the same picture as PNG beside it,
//! and an `index.html` that shows them with the line table, returned as
//! files for a command to write. The same inputs give byte-identical files.

use super::svg::{line_svg, Frame};
use super::{grid, OutFile, Report};
use crate::plot::{LinePlot, PlotFile, PlotReport};
use anyhow::Result;

/// The page that shows every plot, in the plots' folder.
pub const INDEX: &str = "index.html";

/// Every plot drawn, and the files that hold them.
pub struct Drawn {
    /// What each plot shows and which files hold it, in key order.
    pub plots: Vec<PlotFile>,
    /// The SVGs, the PNGs and the index page, named within the folder.
    pub files: Vec<OutFile>,
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

/// Draws every plot (SVG, PNG and the index page).
pub fn draw(plots: &[LinePlot]) -> Result<Drawn> {
    // Rasterising is most of the work: the plots are drawn in one run per
    // core, then listed in order.
    let cores = std::thread::available_parallelism().map_or(1, usize::from).min(plots.len().max(1));
    let per = plots.len().div_ceil(cores).max(1);
    let runs: Vec<&[LinePlot]> = plots.chunks(per).collect();
    let drawn = crate::par::map(runs, |run| {
        run.iter()
            .map(|p| -> Result<(String, Frame, Vec<u8>)> {
                let (svg, frame) = line_svg(p)?;
                let png = super::png::svg_to_png(&svg)?;
                Ok((svg, frame, png))
            })
            .collect::<Result<Vec<_>>>()
    });
    let mut files = Vec::new();
    let mut shown = Vec::new();
    let mut plots = plots.iter();
    for run in drawn {
        for (svg, frame, png_bytes) in run? {
            let p = plots.next().expect("one drawing per plot").clone();
            let png = p.file.strip_suffix(".svg").unwrap_or(&p.file).to_string() + ".png";
            files.push(OutFile { name: p.file.clone(), bytes: svg.into_bytes() });
            files.push(OutFile { name: png.clone(), bytes: png_bytes });
            shown.push(PlotFile { key: p.key.to_string(), file: p.file.clone(), png, frame, plot: p });
        }
    }
    files.push(OutFile { name: INDEX.into(), bytes: index_html(&shown).into_bytes() });
    Ok(Drawn { plots: shown, files })
}

impl Report for PlotReport {
    fn table(&self) -> String {
        let rows = self.files.iter().map(|f| vec![f.key.clone(), f.plot.formula.clone(), f.file.clone()]).collect();
        let mut s = grid(&["line", "reserve", "file"], rows, &[]);
        s.push_str(&format!("\n{} plot(s) in {}; open {}\n", self.files.len(), self.out, self.index));
        s
    }
}
