//! What `emit` did: what changed between the shipped file and a fresh one,
//! line by line, and what `verify` would say about the fresh one.

use super::CoefficientsFile;
use crate::findings::Finding;
use serde::Serialize;
use std::collections::BTreeMap;

/// How a line changed between two files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Added,
    Removed,
    Changed,
    Unchanged,
}

impl Change {
    pub fn as_str(&self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Changed => "changed",
            Change::Unchanged => "unchanged",
        }
    }
}

/// What `emit` did (or, with `--check`, would do).
#[derive(Debug, Clone, Serialize)]
pub struct EmitReport {
    /// The shipped file.
    pub file: String,
    /// Whether this was `--check`.
    pub check: bool,
    /// Whether the fresh file differs from the one on disk (byte for byte).
    pub changed: bool,
    /// Whether the file was written.
    pub written: bool,
    /// Whether `--force` asked to write despite findings.
    pub force: bool,
    /// Line-by-line changes (every line, unchanged ones too).
    pub changes: Vec<LineChange>,
    /// What `verify` would report on the fresh file (a point over the ratio
    /// bound without an exception, a stale exception, a floor broken, …).
    /// With findings nothing is written unless `--force`; either way the
    /// command exits 1.
    pub findings: Vec<Finding>,
    /// The shipped copies of the file the root holds (the Python package's,
    /// the runtime crate's).
    pub copies: Vec<BundledCopy>,
    /// The 1-based line of the file where the first changed line is written
    /// (1 when it is new or the file is; the `line=` of `--check`'s annotation).
    pub changed_at: u64,
}

/// A shipped copy of `fits/vae.json` (the runtime crate's
/// `crates/vramfit-runtime/vae.json`, compiled into the crate and the
/// Python wheel): one source of truth, so `emit` writes it too and
/// `--check` fails while it differs.
#[derive(Debug, Clone, Serialize)]
pub struct BundledCopy {
    /// Its path, as shown.
    pub file: String,
    /// What it is, in words.
    pub what: &'static str,
    /// Whether it differed from the fresh file before this run.
    pub stale: bool,
    /// Whether this run wrote it.
    pub written: bool,
}

impl EmitReport {
    /// Whether `--check` finds something to do: the file or a copy out of date.
    pub fn out_of_date(&self) -> bool {
        self.changed || self.copies.iter().any(|b| b.stale)
    }
}

/// One line's change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineChange {
    /// The line key.
    pub key: String,
    /// `added`, `removed`, `changed` or `unchanged`.
    pub change: Change,
    /// Kind before (`fitted`, `carried`, `insufficient`), when it existed.
    pub old_kind: Option<String>,
    /// Kind after.
    pub new_kind: Option<String>,
    /// Slope before, B/px.
    pub old_slope: Option<String>,
    /// Slope after, B/px.
    pub new_slope: Option<String>,
    /// Base before, MiB.
    pub old_base_mib: Option<u64>,
    /// Base after, MiB.
    pub new_base_mib: Option<u64>,
    /// Support point ids before.
    pub old_support: Vec<String>,
    /// Support point ids after.
    pub new_support: Vec<String>,
}

type Values = (String, Option<String>, Option<u64>, Vec<String>);

fn values(f: &CoefficientsFile) -> BTreeMap<String, Values> {
    let mut m = BTreeMap::new();
    for l in &f.lines {
        let v = (l.kind.as_str().to_string(), Some(l.slope.clone()), Some(l.base_mib), l.support.clone());
        m.insert(l.key.to_string(), v);
    }
    for l in &f.insufficient {
        m.insert(l.key.to_string(), ("insufficient".to_string(), None, None, vec![]));
    }
    m
}

/// Line-by-line changes from `old` (absent: every line is added) to `new`.
pub fn diff(old: Option<&CoefficientsFile>, new: &CoefficientsFile) -> Vec<LineChange> {
    let before = old.map(values).unwrap_or_default();
    let after = values(new);
    let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|k| {
            let (o, n) = (before.get(k), after.get(k));
            let change = match (o, n) {
                (None, Some(_)) => Change::Added,
                (Some(_), None) => Change::Removed,
                (Some(a), Some(b)) if a == b => Change::Unchanged,
                _ => Change::Changed,
            };
            LineChange {
                key: k.clone(),
                change,
                old_kind: o.map(|v| v.0.clone()),
                new_kind: n.map(|v| v.0.clone()),
                old_slope: o.and_then(|v| v.1.clone()),
                new_slope: n.and_then(|v| v.1.clone()),
                old_base_mib: o.and_then(|v| v.2),
                new_base_mib: n.and_then(|v| v.2),
                old_support: o.map(|v| v.3.clone()).unwrap_or_default(),
                new_support: n.map(|v| v.3.clone()).unwrap_or_default(),
            }
        })
        .collect()
}
