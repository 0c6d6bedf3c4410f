//! `vramfit report --observed FILE…`: what hosts saw their own ops take
//! (the rows `vramfit_vae.Observer` appends, or any measurement CSV)
//! against the shipped lines. Three questions, each answered from the
//! same code the maintainer's loop runs: how each observed op sits against
//! its answer (priced by the root's `fits/vae.json` in the row's own
//! context, as `verify` prices a point); which lines the rows would change
//! if ingested (the lines refitted with and without them); and which rows
//! the policy would refuse, and why. Nothing is written.

use crate::exact::Ratio;
use crate::ingest::{open_inputs, read_rows, IngestOptions, InputFormat};
use crate::lines::Line;
use crate::points::merge::{merge, RowFate};
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::source::CoefficientSource;
use crate::pricing::Pricer;
use crate::progress::Progress;
use crate::text::Text;
use anyhow::Result;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Typed options of `report --observed`.
#[derive(Debug, Clone)]
pub struct ObservedOptions {
    pub files: Vec<PathBuf>,
    /// Count a simulated device's rows as ingest would with
    /// `--allow-simulated` (they are refused otherwise).
    pub allow_simulated: bool,
}

/// One (line key, device, context) group of observed ops.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    pub key: String,
    pub device: String,
    pub context: String,
    pub rows: usize,
    /// Rows whose demand the answer held.
    pub covered: usize,
    /// Mean of reservation / demand over the rows, 4 decimals (rounded down, as crossval's).
    pub mean_ratio: String,
    /// The smallest reservation / demand, 4 decimals (rounded down), and its row.
    pub worst_ratio: String,
    pub worst_row: String,
}

/// An observed op the answer did not hold.
#[derive(Debug, Clone, Serialize)]
pub struct Under {
    pub id: String,
    pub key: String,
    pub demand_bytes: u64,
    pub reserved_bytes: u64,
    /// demand / reservation, 2 decimals rounded up.
    pub ratio: String,
}

/// A line's shipped values, as `fit` rounds them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Values {
    /// `fitted`, `carried` or `insufficient`.
    pub kind: &'static str,
    /// B/px, two decimals (None: insufficient).
    pub slope: Option<String>,
    pub base_mib: Option<u64>,
}

/// A line the rows would change if ingested.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    pub key: String,
    /// None: no line or key before (the rows start one).
    pub before: Option<Values>,
    pub after: Values,
    /// The observed rows above the old line (all of the line's rows where
    /// there was no line), which is what moves it.
    pub rows: Vec<String>,
}

/// A row the policy would refuse, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Refused {
    pub id: String,
    pub why: String,
}

/// A file read, and its rows.
#[derive(Debug, Clone, Serialize)]
pub struct FileRows {
    pub file: String,
    pub rows: usize,
}

/// The answer of `report --observed`.
#[derive(Debug, Clone, Serialize)]
pub struct ObservedReport {
    /// The coefficients the rows were priced by.
    pub coefficients: String,
    pub files: Vec<FileRows>,
    pub rows: usize,
    pub covered: usize,
    pub groups: Vec<Group>,
    pub under: Vec<Under>,
    pub changes: Vec<Change>,
    /// Rows already in the store with the same content: ingesting adds nothing.
    pub stored: usize,
    pub refused: Vec<Refused>,
}

impl ObservedReport {
    /// Whether any observed op took more than its answer (exit 1).
    pub fn has_under(&self) -> bool {
        !self.under.is_empty()
    }
}

fn values(line: &Line) -> Values {
    Values {
        kind: line.kind.as_str(),
        slope: line.rounded.as_ref().map(|r| format!("{}.{:02}", r.slope_centi / 100, r.slope_centi % 100)),
        base_mib: line.rounded.as_ref().map(|r| r.base_mib),
    }
}

/// What a rounded line reserves at `pixels`, bytes (the clip term left out).
fn line_price(line: &Line, pixels: u64) -> Option<u64> {
    let r = line.rounded.as_ref()?;
    crate::fit::reserve_bytes(r.slope_centi, r.base_mib, pixels).ok()
}

pub fn of_root(root: &Path, opts: &ObservedOptions, progress: &dyn Progress) -> Result<ObservedReport> {
    let ws = crate::workspace::Workspace::new(root);
    let inputs = ws.inputs_strict(crate::workspace::Digest::Skip)?;
    let policy = &inputs.policy;
    let source = CoefficientSource::File(ws.coefficients_path());
    let shipped = source.load()?;
    let ingest = IngestOptions {
        files: opts.files.clone(),
        from: InputFormat::Csv,
        check: false,
        allow_simulated: opts.allow_simulated,
        wait: std::time::Duration::ZERO,
    };
    // The same reader `ingest` runs: a row it refuses is refused here, with its words.
    let (rows, files) = read_rows(open_inputs(&ingest)?, &ingest.from, &policy.registry, progress)?;
    let crate::points::row::Rows { points: observed, origins } = rows;

    // Coverage: each row priced in its own context by the shipped file.
    // (line key, device, context) → each op's (reservation, demand, id).
    type Ops = Vec<(u64, u64, String)>;
    let mut groups: BTreeMap<(String, String, String), Ops> = BTreeMap::new();
    let mut under = Vec::new();
    let mut refused = Vec::new();
    for p in &observed {
        let q = crate::verify::pricing_checks::point_query(p);
        let reserved = match shipped.quote(&q, &EnvSnapshot::default()) {
            Ok(quote) => quote.bytes,
            Err(e) => {
                // A key the shipped file cannot price (its family unknown there, say).
                refused.push(Refused { id: p.id.to_string(), why: format!("no answer to compare: {}", e.words()) });
                continue;
            }
        };
        let covered = reserved >= p.demand_bytes;
        if !covered {
            under.push(Under {
                id: p.id.to_string(),
                key: policy.line_key(p).to_string(),
                demand_bytes: p.demand_bytes,
                reserved_bytes: reserved,
                ratio: crate::observe::ratio_text(p.demand_bytes, reserved),
            });
        }
        // Grouped by the line that prices it (a cuDNN point's OS is any).
        let group = (
            policy.line_key(p).to_string(),
            p.device.as_deref().unwrap_or("-").to_string(),
            p.context.map_or("-", |c| c.as_str()).to_string(),
        );
        groups.entry(group).or_default().push((reserved, p.demand_bytes, p.id.to_string()));
    }
    let groups = groups
        .into_iter()
        .map(|((key, device, context), rows)| {
            // The smallest reservation / demand, compared exactly (cross-multiplied); ties by id.
            let worst = rows
                .iter()
                .min_by(|a, b| {
                    (u128::from(a.0) * u128::from(b.1)).cmp(&(u128::from(b.0) * u128::from(a.1))).then(a.2.cmp(&b.2))
                })
                .expect("a group has a row");
            let worst_ratio = Ratio::new(i128::from(worst.0), i128::from(worst.1.max(1)))
                .map(crate::crossval::floor4)
                .unwrap_or_default();
            Group {
                key,
                device,
                context,
                rows: rows.len(),
                covered: rows.iter().filter(|r| r.0 >= r.1).count(),
                mean_ratio: crate::crossval::mean4(rows.iter().map(|r| (r.0, r.1))).unwrap_or_default(),
                worst_ratio,
                worst_row: worst.2.clone(),
            }
        })
        .collect();

    // What the policy would refuse before a fit sees the row.
    let mut taken = crate::points::row::Rows::default();
    for (p, origin) in observed.iter().zip(&origins) {
        if p.is_simulated() && !opts.allow_simulated {
            refused.push(Refused {
                id: p.id.to_string(),
                why:
                    "made on a simulated device: `ingest` refuses it (`--allow-simulated` takes it into a scratch root)"
                        .into(),
            });
        } else if let Some(l) = policy.excludes.iter().find(|l| l.id == p.id.as_str()) {
            refused.push(Refused {
                id: p.id.to_string(),
                why: format!("listed under [[exclude]] in fits/policy.toml: {}", l.reason),
            });
        } else {
            taken.push(p.clone(), origin.clone());
        }
    }

    // The lines with and without the rows: the same merge and fit `ingest` and `fit` run.
    let merged = merge(inputs.points.clone(), taken)?;
    let stored = merged.fates.iter().filter(|f| **f == RowFate::Unchanged).count();
    let new_ids: BTreeSet<Text> = merged.added.iter().map(|i| merged.points[*i].id.clone()).collect();
    let before: BTreeMap<_, _> =
        crate::lines::assemble(&inputs.points, policy)?.into_iter().map(|l| (l.key.clone(), l)).collect();
    let after = crate::lines::assemble(&merged.points, policy)?;
    let mut changes = Vec::new();
    for line in &after {
        let mine: Vec<_> = line.points.iter().filter(|p| new_ids.contains(&p.id)).collect();
        if mine.is_empty() {
            continue;
        }
        let old = before.get(&line.key);
        let (old_values, new_values) = (old.map(values), values(line));
        if old_values.as_ref() != Some(&new_values) {
            let above: Vec<String> = mine
                .iter()
                .filter(|p| old.and_then(|o| line_price(o, p.pixels)).is_none_or(|price| p.demand > price))
                .map(|p| p.id.to_string())
                .collect();
            let rows = if above.is_empty() { mine.iter().map(|p| p.id.to_string()).collect() } else { above };
            changes.push(Change { key: line.key.to_string(), before: old_values, after: new_values, rows });
        }
        // A line the rows push past the ratio bound is one `fit` refuses:
        // each of its observed rows is named with the point it over-reserves.
        let old_over: BTreeSet<&Text> = old.map(|o| o.over_bound.iter().collect()).unwrap_or_default();
        let newly: Vec<&Text> = line.over_bound.iter().filter(|id| !old_over.contains(id)).collect();
        if let Some(first) = newly.first() {
            for p in &mine {
                refused.push(Refused {
                    id: p.id.to_string(),
                    why: format!(
                        "ingesting it makes line {} over-reserve point {first} by more than the {} bound: `fit` \
                         refuses the line until that point is an [[exception]] in fits/policy.toml",
                        line.key,
                        policy.ratio_bound.to_decimal_ceil(2),
                    ),
                });
            }
        }
    }
    refused.sort_by(|a, b| a.id.cmp(&b.id).then(a.why.cmp(&b.why)));
    under.sort_by(|a, b| a.id.cmp(&b.id));
    let covered = observed.len() - under.len() - refused.iter().filter(|r| r.why.starts_with("no answer")).count();
    Ok(ObservedReport {
        coefficients: shipped.source.clone(),
        files: files.into_iter().map(|(file, rows)| FileRows { file, rows }).collect(),
        rows: observed.len(),
        covered,
        groups,
        under,
        changes,
        stored,
        refused,
    })
}
