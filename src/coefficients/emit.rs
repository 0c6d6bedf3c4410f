//! What changed between the shipped file and a fresh one, line by line.

use super::CoefficientsFile;
use serde::Serialize;
use std::collections::BTreeMap;

/// One line's change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineChange {
    /// The line key.
    pub key: String,
    /// `added`, `removed`, `changed` or `unchanged`.
    pub change: &'static str,
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
}

type Values = (String, Option<String>, Option<u64>);

fn values(f: &CoefficientsFile) -> BTreeMap<String, Values> {
    let mut m = BTreeMap::new();
    for l in &f.lines {
        m.insert(l.key.to_string(), (l.kind.as_str().to_string(), Some(l.slope.clone()), Some(l.base_mib)));
    }
    for l in &f.insufficient {
        m.insert(l.key.to_string(), ("insufficient".to_string(), None, None));
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
                (None, Some(_)) => "added",
                (Some(_), None) => "removed",
                (Some(a), Some(b)) if a == b => "unchanged",
                _ => "changed",
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
            }
        })
        .collect()
}
