//! One module per subcommand: each turns typed options into an
//! [`Outcome`] (its result, what it found, what it says beside the
//! answer); none of them prints to the terminal or sees clap. A command
//! that writes a folder of files (`plot`, `report`) has the renderer make
//! the bytes and writes them itself.

pub mod crossval;
pub mod diff;
pub mod emit;
pub mod export;
pub mod family;
pub mod fit;
pub mod ingest;
pub mod plan;
pub mod plot;
pub mod points;
pub mod report;
pub mod reserve;
pub mod schema;
pub mod verify;

use crate::plot::PlotReport;
use crate::pricing::source::CoefficientSource;
use crate::report::plot::{Drawn, INDEX};
use crate::report::OutFile;
use crate::workspace::Workspace;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// What a command that ran found, typed: `cli` makes it an exit code in
/// one place (docs/cli.md, "Exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Nothing to report: exit 0.
    Nothing,
    /// `verify` findings (and the same from `fit`, `emit`, `report`).
    Findings,
    /// `ingest --check` or `emit --check`: the file is not up to date.
    OutOfDate,
    /// `--strict`: the answer rests on an estimate.
    Estimate,
    /// `plan --fail-on`: the verdict is that bad or worse.
    VerdictMet,
    /// `reserve --max-tile-for`: no tile fits.
    NoTileFits,
    /// `diff --fail-over`: a reservation grew more than allowed.
    Growth,
    /// `crossval --fail-under`: coverage below the floor.
    CoverageBelow,
    /// `report --observed`: an observed op took more than its answer.
    UnderReserved,
}

impl Found {
    /// `found` when `cond`, else nothing.
    pub fn when(cond: bool, found: Found) -> Found {
        if cond {
            found
        } else {
            Found::Nothing
        }
    }
}

/// A line a command leaves on standard error beside its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// Said before the answer: something the reader should know first
    /// (the compiled-in copy answered while the folder's differs; part of
    /// a plan cannot run on the device).
    Warning(String),
    /// Said after the answer: `--strict` names an estimate it rests on.
    Strict(String),
}

/// What a command hands back.
#[derive(Debug)]
pub struct Outcome<R> {
    /// What it computed (rendered in the asked format).
    pub result: R,
    /// What it found (the exit code).
    pub found: Found,
    /// What it says on standard error.
    pub notes: Vec<Note>,
    /// How many items the result holds: a large result is freed on a thread
    /// of its own after the answer is written (`par::drop_later`).
    pub weight: usize,
    /// The files it wrote (shown): when its answer then cannot be printed,
    /// the exit code and the message say these were written.
    pub wrote: Vec<String>,
}

impl<R> Outcome<R> {
    /// A result that found nothing, says nothing and is small.
    pub fn of(result: R) -> Outcome<R> {
        Outcome { result, found: Found::Nothing, notes: Vec::new(), weight: 0, wrote: Vec::new() }
    }

    /// The same, having found `found`.
    pub fn found(self, found: Found) -> Outcome<R> {
        Outcome { found, ..self }
    }

    /// The same, having written these files.
    pub fn wrote(self, wrote: Vec<String>) -> Outcome<R> {
        Outcome { wrote, ..self }
    }

    /// The same, holding `weight` items.
    pub fn weighing(self, weight: usize) -> Outcome<R> {
        Outcome { weight, ..self }
    }
}

/// `--strict`: a note per estimate the answer rests on, and whether that
/// is a finding (only with `strict`).
fn strict(strict: bool, estimates: Vec<String>) -> (Found, Vec<Note>) {
    if !strict || estimates.is_empty() {
        return (Found::Nothing, Vec::new());
    }
    (Found::Estimate, estimates.into_iter().map(Note::Strict).collect())
}

/// Which coefficients price a query: `--coefficients FILE`, else
/// `fits/vae.json` under an explicit `--root`, else the compiled-in copy;
/// never the folder a command happens to run in.
pub fn coefficient_source(file: Option<PathBuf>, root: Option<&Path>) -> CoefficientSource {
    match (file, root) {
        (Some(f), _) => CoefficientSource::File(f),
        (None, Some(r)) => CoefficientSource::File(Workspace::new(r).coefficients_path()),
        (None, None) => CoefficientSource::Embedded,
    }
}

/// The folder's own `fits/vae.json` when the compiled-in copy prices
/// while that file differs from it (a maintainer who just ran `emit` would
/// otherwise read the old figures without a word).
fn local_copy_differs(source: &CoefficientSource) -> Option<PathBuf> {
    // The folder the command runs in, named as a user would type it.
    let local = Workspace::new(Path::new("")).coefficients_path();
    source.embedded_while_differs(&local).then_some(local)
}

/// The warning said before an answer priced by the compiled-in copy while
/// the folder's file differs.
fn local_copy_note(source: &CoefficientSource) -> Vec<Note> {
    let Some(local) = local_copy_differs(source) else { return Vec::new() };
    vec![Note::Warning(format!(
        "answered from the compiled-in coefficients; {} here differs from them (emitted since this vramfit was \
         built?): `--root .` prices with it",
        local.display()
    ))]
}

/// A query that fails on the compiled-in copy while the folder's file
/// differs says so in its error, since that file may be what the user meant
/// (a model or a key emitted since this vramfit was built).
fn or_local_copy<T, E: Into<anyhow::Error>>(source: &CoefficientSource, result: Result<T, E>) -> Result<T> {
    result.map_err(|e| match (e.into(), local_copy_differs(source)) {
        (e, Some(local)) => e.context(format!(
            "priced with the compiled-in coefficients, and {} here differs from them (`--root .` prices with it)",
            local.display()
        )),
        (e, None) => e,
    })
}

/// Writes a folder of files, each atomically (a reader sees the old file
/// or the new one).
/// Writes files into `sub` of the chosen folder `out` (`sub` empty: `out`
/// itself), never through a link (`fsio::write_in`).
fn write_files(out: &Path, sub: &Path, files: &[OutFile]) -> Result<()> {
    for f in files {
        crate::fsio::check_in(out, &sub.join(&f.name))?;
    }
    for f in files {
        crate::fsio::write_in(out, &sub.join(&f.name), &f.bytes)?;
    }
    Ok(())
}

/// Writes drawn plots into `sub` of the chosen folder `out` and says what was written.
fn write_plots(out: &Path, sub: &Path, drawn: Drawn) -> Result<PlotReport> {
    write_files(out, sub, &drawn.files)?;
    let dir = out.join(sub);
    Ok(PlotReport { out: crate::fsio::shown(&dir), index: crate::fsio::shown(&dir.join(INDEX)), files: drawn.plots })
}
