//! Rendering: tables for people, JSON for scripts, GitHub annotations and
//! markdown for CI; SVG, PNG, HTML and `report.md` for the folder outputs,
//! returned as bytes ([`OutFile`]) for the command to write. Renderers
//! compute nothing and write nothing; every figure they show was computed
//! by the core and is in the JSON too.

pub mod bundle;
mod crossval;
mod diff;
mod export;
mod fit;
mod grid;
mod ingest;
mod observed;

mod plan;
pub mod plot;
pub mod png;
mod points;
mod reserve;
pub mod svg;
mod verify;

use anyhow::{bail, Result};
use serde::Serialize;

/// A file of a multi-file output (the plots, the report bundle): its name
/// within the output folder and its bytes. Renderers make them; the command
/// writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutFile {
    /// The path within the folder (`report.md`, `plots/index.html`).
    pub name: String,
    /// What the file holds.
    pub bytes: Vec<u8>,
}

/// Output formats (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Human tables (default).
    Table,
    /// One JSON document, keys in a stable order.
    Json,
    /// GitHub Actions `::error` annotations (verify, `ingest --check`, `emit --check`).
    Github,
    /// A markdown table, for pull-request comments (fit, emit, verify).
    Markdown,
}

impl Format {
    /// The name `--format` takes.
    pub fn as_str(&self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Github => "github",
            Format::Markdown => "markdown",
        }
    }
}

/// A result that can be shown. JSON comes from `Serialize`; the others are
/// optional and a format a result does not support is a usage error.
pub trait Report: Serialize {
    /// The formats this result prints: the one declaration `--help`, the
    /// check before a command runs, and rendering all read.
    const FORMATS: &'static [Format] = &[Format::Table, Format::Json];
    /// The human view.
    fn table(&self) -> String;
    /// GitHub annotations, where they make sense.
    fn github(&self) -> Option<String> {
        None
    }
    /// Markdown, where it makes sense.
    fn markdown(&self) -> Option<String> {
        None
    }
}

/// Renders a result in the asked format.
pub fn render<R: Report>(r: &R, format: Format, command: &str) -> Result<String> {
    if !R::FORMATS.contains(&format) {
        bail!("`{command}` has no {} output", format.as_str());
    }
    let text = match format {
        Format::Table => Some(r.table()),
        Format::Json => Some(String::from_utf8(crate::fsio::to_json_bytes(r)?)?),
        Format::Github => r.github(),
        Format::Markdown => r.markdown(),
    };
    match text {
        Some(t) => Ok(t),
        None => bail!("`{command}` has no {format:?} output (use table or json)"),
    }
}

pub use grid::{grid, with_style, TableStyle};

/// The program's version and the coefficients compiled into it: the
/// file's digest, its lines and the points they rest on, and the digest of
/// the store they were fitted from.
pub fn long_version() -> String {
    let text = crate::coefficients::EMBEDDED;
    let mut s = format!("vramfit {}\n", env!("CARGO_PKG_VERSION"));
    match crate::coefficients::parse(text, "embedded fits/vae.json") {
        Ok(file) => {
            let points: usize = file.lines.iter().map(|l| l.points).sum();
            let thin: usize = file.insufficient.iter().map(|l| l.points).sum();
            let fitted = file.lines.iter().filter(|l| l.kind == crate::lines::LineKind::Fitted).count();
            // The file knows the points its lines and too-thin keys rest
            // on, not the store's excluded ones: `verify` counts every
            // stored point, so its count is larger, and the line says why.
            s.push_str(&format!(
                "coefficients: embedded fits/vae.json {}\n  {} lines ({fitted} fitted, {} carried) on {points} \
                 points; {} keys too thin to fit, on {thin} more\n  (`vramfit verify` counts every stored point, \
                 the ones the policy excludes too)\n  points digest {}\n  policy digest {}\n",
                crate::fsio::sha256_tag(text.as_bytes()),
                file.lines.len(),
                file.lines.len() - fitted,
                file.insufficient.len(),
                file.digests.points,
                file.digests.policy,
            ));
        }
        Err(e) => s.push_str(&format!("coefficients: embedded fits/vae.json does not load: {e:#}\n")),
    }
    s
}

/// A GitHub Actions workflow command (`::error file=F,title=T::message`),
/// its message escaped as the runner reads it (`%`, CR and LF).
pub fn annotation(level: &str, file: &str, line: u64, title: &str, message: &str) -> String {
    format!(
        "::{level} file={},line={line},title={}::{}\n",
        escape_property(file),
        escape_property(title),
        escape_data(message)
    )
}

/// An annotation that names no file (an error about no file in particular).
pub fn annotation_without_file(level: &str, title: &str, message: &str) -> String {
    format!("::{level} title={}::{}\n", escape_property(title), escape_data(message))
}

/// A workflow command's message, escaped as GitHub reads it.
fn escape_data(t: &str) -> String {
    t.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// A workflow command's property value (`file=`, `title=`), escaped.
fn escape_property(t: &str) -> String {
    escape_data(t).replace(':', "%3A").replace(',', "%2C")
}

/// A markdown table; every cell through [`markdown_cell`].
pub fn markdown_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut s =
        format!("| {} |\n|{}|\n", headers.join(" | "), headers.iter().map(|_| "---").collect::<Vec<_>>().join("|"));
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| markdown_cell(c)).collect();
        s.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    s
}

/// A cell as a Markdown table holds it whatever text it carries (a note,
/// a reason, an id): a line break is a space and a `|` is escaped, so the
/// table keeps its shape; text that begins as a spreadsheet formula does
/// gets a leading apostrophe (`text::formula_safe`), but for a number and
/// the `-` that stands for none.
pub fn markdown_cell(cell: &str) -> String {
    let flat = cell.replace(['\n', '\r'], " ").replace('|', "\\|");
    let unsigned = cell.trim_start_matches(['+', '-', '−']);
    if cell == "-" || unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return flat;
    }
    crate::text::formula_safe(&flat).into_owned()
}

/// A value before and after a change: `a`, `a → b`, `a → -`, `b` or `-`.
pub fn before_after(old: Option<String>, new: Option<String>) -> String {
    match (old, new) {
        (Some(a), Some(b)) if a == b => a,
        (Some(a), Some(b)) => format!("{a} → {b}"),
        (Some(a), None) => format!("{a} → -"),
        (None, Some(b)) => b,
        (None, None) => "-".into(),
    }
}
