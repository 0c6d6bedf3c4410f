//! What a change of coefficients does to the answers: the reservation of
//! every line key at every size of a grid, before and after, with the rule
//! that priced each side; the lines added, removed and changed; the points
//! added and removed. The pull-request table of an estimator change.
//!
//! Both sides are priced by the same [`Pricer`] code `reserve` uses; a
//! side may be the v1 estimator instead (`legacy`), priced from the other
//! side's legacy table.

pub mod sides;

pub use sides::{of_sides, DiffOptions, SideSpec};

use crate::coefficients::emit::{diff as line_changes, Change, LineChange};
use crate::exact::Ratio;
use crate::points::LineKey;
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::{Coefficients, Pricer, Query, Rule};
use crate::vocab::Os;
use anyhow::Result;
use serde::Serialize;
use std::collections::BTreeSet;

/// One side of a diff.
pub enum Side<'a> {
    /// A coefficients file, named for people.
    File(&'a Coefficients),
    /// The v1 estimator, with the legacy table and registry of this file.
    Legacy(&'a Coefficients),
}

impl Side<'_> {
    fn price(&self, q: &Query) -> Result<crate::pricing::Price> {
        let env = EnvSnapshot::default();
        match self {
            Side::File(c) => Ok(c.price(q, &env)?),
            Side::Legacy(c) => Ok(c.price_legacy(q, &env)?),
        }
    }

    fn file(&self) -> Option<&Coefficients> {
        match self {
            Side::File(c) => Some(c),
            Side::Legacy(_) => None,
        }
    }
}

/// The sizes a diff asks when none are given: 512² to 2048².
pub const DEFAULT_SIZES: &[(u64, u64)] = &[(512, 512), (768, 768), (1024, 1024), (1536, 1536), (2048, 2048)];

/// What the grid asks.
#[derive(Debug, Clone)]
pub struct Grid {
    /// `(width, height)` sizes.
    pub sizes: Vec<(u64, u64)>,
    /// Images per query.
    pub batch: u64,
    /// Substrings a key must contain (any of them); empty: every key.
    pub keys: Vec<String>,
    /// Keep the unchanged reservations too (`--all`); by default a diff
    /// lists only what changed and counts the rest, so a pull request's
    /// table is the change and nothing else.
    pub all: bool,
}

/// One side's answer for one case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Priced {
    /// The reservation, bytes (null when this side cannot price it).
    pub bytes: Option<u64>,
    /// The reservation in MiB, rounded up.
    pub mib: Option<u64>,
    /// The rule that priced it.
    pub rule: Option<Rule>,
    /// Why this side cannot price it.
    pub error: Option<String>,
}

/// One line key at one size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Case {
    /// The line key.
    pub key: LineKey,
    pub width: u64,
    pub height: u64,
    pub batch: u64,
    pub before: Priced,
    pub after: Priced,
    /// `(after − before) / before` in percent, one decimal, rounded half away
    /// from zero (null when a side is missing).
    pub change_pct: Option<String>,
    /// The same, exactly, as a fraction (for `--fail-over`).
    #[serde(skip)]
    pub change: Option<Ratio>,
}

/// The diff of two sides.
#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
    /// What the before side is (`git:HEAD`, a path, `embedded`, `legacy`).
    pub before: String,
    /// What the after side is.
    pub after: String,
    /// The reservations that changed (with `--all`, every key at every
    /// grid size), sorted by key then size.
    pub cases: Vec<Case>,
    /// Reservations asked and found the same on both sides (the same
    /// bytes); listed in `cases` only with `--all`.
    pub unchanged: usize,
    /// Lines added, removed or changed (slope, base, kind, support); unchanged lines left out.
    pub lines: Vec<LineChange>,
    /// Point ids behind the after side's lines but not the before side's.
    pub points_added: Vec<crate::text::Text>,
    /// Point ids behind the before side's lines but not the after side's.
    pub points_removed: Vec<crate::text::Text>,
}

impl Default for Grid {
    fn default() -> Grid {
        Grid { sizes: DEFAULT_SIZES.to_vec(), batch: 1, keys: vec![], all: false }
    }
}

impl DiffReport {
    /// Whether some reservation grows by more than `pct` percent.
    pub fn grows_more_than(&self, pct: Ratio) -> bool {
        let limit = pct.checked_div(Ratio::int(100)).ok();
        self.largest_growth().zip(limit).is_some_and(|(g, l)| g.cmp_exact(&l) == Ok(std::cmp::Ordering::Greater))
    }

    /// The largest growth, exactly, over every case priced on both sides
    /// (an unchanged one grew by 0).
    pub fn largest_growth(&self) -> Option<Ratio> {
        let unchanged = (self.unchanged > 0).then(|| Ratio::int(0));
        self.cases
            .iter()
            .filter_map(|c| c.change)
            .chain(unchanged)
            .max_by(|a, b| a.cmp_exact(b).unwrap_or(std::cmp::Ordering::Equal))
    }
}

fn keys_of(c: &Coefficients) -> impl Iterator<Item = LineKey> + '_ {
    c.file.lines.iter().map(|l| l.key.clone()).chain(c.file.insufficient.iter().map(|l| l.key.clone()))
}

/// The platforms a user runs by default: cuDNN, and each OS-specific
/// backend on Linux and on Windows, each with the allocator it runs when
/// nothing is configured. Every measured (family, op, tile, dtype) is asked
/// on each, so a diff shows what a user of each platform is reserved, not
/// only the keys that were measured.
fn platform_keys(c: &Coefficients) -> Vec<LineKey> {
    use crate::vocab::ConvBackend;
    let f = &c.file;
    let mut backends: Vec<ConvBackend> = vec![ConvBackend::Cudnn];
    backends.extend(f.os_specific.iter().map(|o| o.conv_backend));
    backends.sort();
    backends.dedup();
    let mut platforms = Vec::new();
    for b in backends {
        let specific = f.os_specific.iter().any(|o| o.conv_backend == b);
        let oses: &[Os] = if specific { &[Os::Linux, Os::Windows] } else { &[Os::Any] };
        for &os in oses {
            let allocator = f
                .allocator_defaults
                .iter()
                .find(|d| d.conv_backend == b && d.os == os)
                .map_or(f.default_allocator, |d| d.allocator);
            platforms.push((b, allocator, os));
        }
    }
    let mut out = Vec::new();
    for k in keys_of(c) {
        for &(conv_backend, allocator, os) in &platforms {
            out.push(LineKey { conv_backend, allocator, os, ..k.clone() });
        }
    }
    out
}

fn point_ids(c: &Coefficients) -> BTreeSet<crate::text::Text> {
    let lines = c.file.lines.iter().flat_map(|l| l.point_ids.iter().cloned());
    lines.chain(c.file.insufficient.iter().flat_map(|l| l.point_ids.iter().cloned())).collect()
}

fn priced(side: &Side, q: &Query) -> Priced {
    match side.price(q) {
        Ok(p) => Priced { bytes: Some(p.bytes), mib: Some(p.mib), rule: Some(p.rule), error: None },
        Err(e) => Priced { bytes: None, mib: None, rule: None, error: Some(format!("{e:#}")) },
    }
}

/// `(after − before) / before` as a percentage with one decimal, rounded
/// half away from zero.
fn percent(change: Ratio) -> String {
    let tenths = Ratio::int(1000).checked_mul(change).ok();
    let Some(t) = tenths else { return "overflow".into() };
    let (num, den) = (t.num(), t.den());
    let rounded = (2 * num.abs() + den) / (2 * den) * num.signum();
    let sign = if rounded > 0 {
        "+"
    } else if rounded < 0 {
        "-"
    } else {
        ""
    };
    format!("{sign}{}.{}%", rounded.abs() / 10, rounded.abs() % 10)
}

/// Prices every key of both sides, and every measured kind on each default
/// platform (filtered by `grid.keys`), at every grid size.
pub fn diff(before: (&str, &Side), after: (&str, &Side), grid: &Grid) -> Result<DiffReport> {
    if grid.batch == 0 {
        anyhow::bail!("--batch must be at least 1");
    }
    let mut keys: BTreeSet<LineKey> = BTreeSet::new();
    for side in [before.1, after.1] {
        if let Some(c) = side.file() {
            keys.extend(keys_of(c));
            keys.extend(platform_keys(c));
        }
    }
    keys.retain(|k| grid.keys.is_empty() || grid.keys.iter().any(|f| k.to_string().contains(f.as_str())));
    let mut cases = Vec::new();
    let mut unchanged = 0;
    for key in &keys {
        for &(w, h) in &grid.sizes {
            // The default answer, as `reserve` prints it: the first use included.
            let q = Query { warm: false, ..Query::at_key(key, w, h, grid.batch) };
            let (b, a) = (priced(before.1, &q), priced(after.1, &q));
            let change = match (b.bytes, a.bytes) {
                (Some(x), Some(y)) if x > 0 => Ratio::new(i128::from(y) - i128::from(x), i128::from(x)).ok(),
                _ => None,
            };
            // Unchanged: both sides reserve the same bytes (a rule renamed
            // with the same figure changes nothing a user sees).
            if !grid.all && b.bytes.is_some() && b.bytes == a.bytes {
                unchanged += 1;
                continue;
            }
            cases.push(Case {
                key: key.clone(),
                width: w,
                height: h,
                batch: grid.batch,
                before: b,
                after: a,
                change_pct: change.map(percent),
                change,
            });
        }
    }
    let (lines, points_added, points_removed) = match (before.1.file(), after.1.file()) {
        (Some(b), Some(a)) => {
            let lines =
                line_changes(Some(&b.file), &a.file).into_iter().filter(|c| c.change != Change::Unchanged).collect();
            let (pb, pa) = (point_ids(b), point_ids(a));
            (lines, pa.difference(&pb).cloned().collect(), pb.difference(&pa).cloned().collect())
        }
        _ => (vec![], vec![], vec![]),
    };
    Ok(DiffReport {
        before: before.0.to_string(),
        after: after.0.to_string(),
        cases,
        unchanged,
        lines,
        points_added,
        points_removed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_rounds_half_away_from_zero() {
        assert_eq!(percent(Ratio::new(1, 3).unwrap()), "+33.3%");
        assert_eq!(percent(Ratio::new(-1, 3).unwrap()), "-33.3%");
        assert_eq!(percent(Ratio::new(1, 2000).unwrap()), "+0.1%");
        assert_eq!(percent(Ratio::new(-1, 2000).unwrap()), "-0.1%");
        assert_eq!(percent(Ratio::new(1, 2001).unwrap()), "0.0%");
        assert_eq!(percent(Ratio::int(0)), "0.0%");
        assert_eq!(percent(Ratio::new(-5749, 14650).unwrap()), "-39.2%");
    }
}
