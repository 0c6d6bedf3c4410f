//! What `ingest` did, and what `points` lists: the result types of the two
//! commands that read and write the store.

use super::Point;
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
use serde::Serialize;
use std::collections::BTreeMap;

/// Per input file.
#[derive(Debug, Clone, Serialize)]
pub struct FileSummary {
    /// The file as given on the command line.
    pub file: String,
    /// Data rows (records) read.
    pub rows: usize,
    /// Rows new to the store.
    pub added: usize,
    /// Rows already stored with the same content.
    pub unchanged: usize,
}

/// A point or row named by where it is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Placed {
    pub id: String,
    /// The file it is in (a CSV for a row, the store for a point).
    pub file: String,
    /// Its 1-based line there.
    pub line: u64,
}

impl std::fmt::Display for Placed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{} ({})", self.file, self.line, self.id)
    }
}

/// What `ingest` did (or, with `--check`, would do).
#[derive(Debug, Clone, Serialize)]
pub struct IngestReport {
    /// The points file.
    pub store: String,
    /// Whether this was `--check`.
    pub check: bool,
    /// Whether the store was written (never with `--check` or when nothing changed).
    pub written: bool,
    /// Per input file.
    pub files: Vec<FileSummary>,
    /// Points in the store after the run (with `--check`: as it would be).
    pub points: usize,
    /// Rows added by this run.
    pub added: usize,
    /// Points per line key, after the policy's OS grouping.
    pub lines: BTreeMap<String, usize>,
    /// With `--check`: the rows of the files the store lacks, by file and line.
    pub missing: Vec<Placed>,
    /// With `--check` over every CSV of `measurements/raw/`: stored points
    /// none of the files produce (a hand edit), by their line in the store.
    pub orphans: Vec<Placed>,
    /// Whether orphans were looked for: only when the files given are the
    /// whole of `measurements/raw/*.csv` does "no file produces it" mean
    /// anything (a check of one new file reports only what it lacks).
    pub orphans_checked: bool,
    /// Whether the store is up to date with the files (`--check` exits 1 when not).
    pub up_to_date: bool,
    /// Things the maintainer should know about the rows this run added:
    /// points with no OS on a platform whose lines keep their OS, and what
    /// they become; rows given twice with the same content (counted once).
    pub notes: Vec<String>,
}

/// Filters; each given one must match.
#[derive(Debug, Clone, Default)]
pub struct PointFilter {
    /// A family or a model alias (`sdxl` selects the `sd` family's SDXL points).
    pub vae: Option<String>,
    pub op: Option<Op>,
    pub tile: Option<u32>,
    pub conv_backend: Option<ConvBackend>,
    pub allocator: Option<Allocator>,
    pub os: Option<Os>,
    pub dtype: Option<Dtype>,
    /// Substring of the id.
    pub id: Option<String>,
    /// One line's key, `vae/op/tile/backend/allocator/os/dtype`: its points
    /// exactly as the fit groups them (replaces the key fields above).
    pub line: Option<String>,
}

/// The listing.
#[derive(Debug, Clone, Serialize)]
pub struct PointList {
    /// Matching points, sorted by key, then size, then id.
    pub points: Vec<Point>,
    /// Points in the store.
    pub total: usize,
    /// With `--line`: the line's key, as the fit names it.
    pub line: Option<String>,
    /// With `--line`: stored points of that line left out by `[[exclude]]`.
    pub excluded: Vec<String>,
}
