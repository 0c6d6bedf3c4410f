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
use crate::points::csv_input::Keep;
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
    /// How many observed rows move it: those above the old line (all of
    /// the line's rows where there was no line).
    pub row_count: usize,
    /// Them by id, at most [`SHOWN`].
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
    /// Every observed op the answer did not hold.
    pub under_rows: usize,
    /// The worst of them (demand / reservation), at most [`SHOWN`].
    pub under: Vec<Under>,
    pub changes: Vec<Change>,
    /// Rows already in the store with the same content: ingesting adds nothing.
    pub stored: usize,
    /// Every row the policy would refuse (or no answer prices).
    pub refused_rows: usize,
    /// Them by id, at most [`SHOWN`].
    pub refused: Vec<Refused>,
}

impl ObservedReport {
    /// Whether any observed op took more than its answer (exit 1).
    pub fn has_under(&self) -> bool {
        self.under_rows > 0
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

/// How many under-reserved rows, refused rows and rows of a changed line
/// a report lists by id (the worst first): the counts are whole, the lists
/// bounded, so 10⁶ observed rows make a report a person reads and a
/// process holds (issue 61).
pub const SHOWN: usize = 100;

/// The rows refused, each with the index of its reason; every reason's
/// words once.
#[derive(Default)]
struct Reasons {
    /// Every row refused (what `rows` held before it was cut to the shown).
    total: usize,
    rows: Vec<(Text, usize)>,
    words: Vec<String>,
    index: BTreeMap<String, usize>,
}

impl Reasons {
    /// The index of a reason's words, made once.
    fn reason(&mut self, why: String) -> usize {
        let next = self.words.len();
        let at = *self.index.entry(why.clone()).or_insert(next);
        if at == next {
            self.words.push(why);
        }
        at
    }

    fn add(&mut self, id: &Text, why: impl FnOnce() -> String) {
        let at = self.reason(why());
        self.rows.push((id.clone(), at));
        self.total += 1;
    }

    /// How many rows, and the first [`SHOWN`] by id (then words): the
    /// first found in linear time, only they sorted.
    fn listed(mut self) -> (usize, Vec<Refused>) {
        let words = &self.words;
        let order = |a: &(Text, usize), b: &(Text, usize)| a.0.cmp(&b.0).then_with(|| words[a.1].cmp(&words[b.1]));
        if self.rows.len() > SHOWN {
            self.rows.select_nth_unstable_by(SHOWN, order);
            self.rows.truncate(SHOWN);
        }
        self.rows.sort_by(order);
        let shown = self.rows.iter().map(|(id, at)| Refused { id: id.to_string(), why: words[*at].clone() });
        (self.total, shown.collect())
    }
}

/// One group's figures, gathered row by row.
#[derive(Default)]
struct Tally {
    rows: usize,
    covered: usize,
    /// Σ reservation / demand, scaled as `crossval::mean4` sums them.
    pairs: Vec<(u64, u64)>,
    /// The smallest reservation / demand so far, and its row.
    worst: Option<(u64, u64, Text)>,
}

impl Tally {
    fn add(&mut self, reserved: u64, demand: u64, id: &Text) {
        self.rows += 1;
        self.covered += usize::from(reserved >= demand);
        self.pairs.push((reserved, demand));
        // Compared exactly (cross-multiplied); ties by id.
        let worse = self.worst.as_ref().is_none_or(|(r, d, w)| {
            (u128::from(reserved) * u128::from(*d)).cmp(&(u128::from(*r) * u128::from(demand))).then(id.cmp(w)).is_lt()
        });
        if worse {
            self.worst = Some((reserved, demand, id.clone()));
        }
    }
}

pub fn of_root(root: &Path, opts: &ObservedOptions, progress: &dyn Progress) -> Result<ObservedReport> {
    let ws = crate::workspace::Workspace::new(root);
    let mut inputs = ws.inputs_strict(crate::workspace::Digest::Skip)?;
    let mut stored_points = std::mem::take(&mut inputs.points);
    // The rows are read without their metadata (below), so the stored
    // points are compared without theirs: a row whose every other field is
    // its stored point's counts as stored. (`ingest` compares the metadata
    // too: a row that differs from its stored point in those columns alone
    // is refused there and counted as stored here; docs/hosts.md.)
    stored_points.iter_mut().for_each(|p| p.metadata = Default::default());
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
    // The same reader `ingest` runs: a row it refuses is refused here, with
    // its words. The rows' metadata, which no part of the report shows, is
    // dropped as they are read.
    let (rows, files) = read_rows(open_inputs(&ingest)?, &ingest.from, Keep::Fit, &policy.registry, progress)?;
    let crate::points::row::Rows { points: observed, origins } = rows;

    // Coverage: each row priced in its own context by the shipped file,
    // each distinct question once (a host asks the same sizes again and
    // again), on every core.
    let rows = observed.len();
    let (slots, prices) = prices_of(&observed, &shipped);
    let mut no_answer = 0;
    let mut tallies: BTreeMap<(crate::points::LineKey, Option<Text>, Option<crate::vocab::Context>), Tally> =
        BTreeMap::new();
    let mut unders: Vec<(u64, u64, usize)> = Vec::new();
    // Refused rows as (id, reason): each reason's words made once (at 10⁶
    // rows the words of each row were a third of the report's memory).
    let mut refused = Reasons::default();
    for (i, (p, slot)) in observed.iter().zip(&slots).enumerate() {
        let reserved = match &prices[*slot as usize] {
            Ok(bytes) => *bytes,
            Err(words) => {
                // A key the shipped file cannot price (its family unknown there, say).
                no_answer += 1;
                refused.add(&p.id, || format!("no answer to compare: {words}"));
                continue;
            }
        };
        if reserved < p.demand_bytes {
            unders.push((reserved, p.demand_bytes, i));
        }
        // Grouped by the line that prices it (a cuDNN point's OS is any).
        tallies.entry((policy.line_key(p), p.device.clone(), p.context)).or_default().add(
            reserved,
            p.demand_bytes,
            &p.id,
        );
    }
    drop((slots, prices));
    let groups = tallies
        .into_iter()
        .map(|((key, device, context), t)| {
            let (wr, wd, wid) = t.worst.unwrap_or_default();
            Group {
                key: key.to_string(),
                device: device.as_deref().unwrap_or("-").to_string(),
                context: context.map_or("-", |c| c.as_str()).to_string(),
                rows: t.rows,
                covered: t.covered,
                mean_ratio: crate::crossval::mean4(t.pairs).unwrap_or_default(),
                worst_ratio: Ratio::new(i128::from(wr), i128::from(wd.max(1)))
                    .map(crate::crossval::floor4)
                    .unwrap_or_default(),
                worst_row: wid.to_string(),
            }
        })
        .collect();
    // The worst first (demand / reservation, exactly), ties by id.
    unders.sort_by(|a, b| {
        (u128::from(b.1) * u128::from(a.0))
            .cmp(&(u128::from(a.1) * u128::from(b.0)))
            .then_with(|| observed[a.2].id.cmp(&observed[b.2].id))
    });
    let under_rows = unders.len();
    let under = unders
        .iter()
        .take(SHOWN)
        .map(|(reserved, demand, i)| {
            let p = &observed[*i];
            Under {
                id: p.id.to_string(),
                key: policy.line_key(p).to_string(),
                demand_bytes: *demand,
                reserved_bytes: *reserved,
                ratio: crate::observe::ratio_text(*demand, *reserved),
            }
        })
        .collect();
    drop(unders);

    // What the policy would refuse before a fit sees the row; the rest are
    // taken, kept in place (a second list of 10⁶ points doubled the report's memory).
    let mut keep = Vec::with_capacity(observed.len());
    for p in &observed {
        if p.is_simulated() && !opts.allow_simulated {
            refused.add(&p.id, || {
                "made on a simulated device: `ingest` refuses it (`--allow-simulated` takes it into a scratch root)"
                    .into()
            });
            keep.push(false);
        } else if let Some(l) = policy.excludes.iter().find(|l| l.id == p.id.as_str()) {
            refused.add(&p.id, || format!("listed under [[exclude]] in fits/policy.toml: {}", l.reason));
            keep.push(false);
        } else {
            keep.push(true);
        }
    }
    let (mut observed, mut origins) = (observed, origins);
    let mut kept = keep.iter();
    observed.retain(|_| *kept.next().unwrap_or(&false));
    let mut kept = keep.iter();
    origins.retain(|_| *kept.next().unwrap_or(&false));
    drop(keep);
    let taken = crate::points::row::Rows { points: observed, origins };

    // The lines with and without the rows: the same merge and fit `ingest`
    // and `fit` run. The lines before are fitted first, so the stored
    // points are moved into the merge rather than copied.
    let before: BTreeMap<_, _> =
        crate::lines::assemble(&stored_points, policy)?.into_iter().map(|l| (l.key.clone(), l)).collect();
    let merged = merge(stored_points, taken)?;
    let stored = merged.fates.iter().filter(|f| **f == RowFate::Unchanged).count();
    // The new points of each line, in id order (the merged points are; the
    // added ones are listed in input order).
    let mut added_at = merged.added.clone();
    added_at.sort_unstable();
    let mut added_by_key: BTreeMap<crate::points::LineKey, Vec<&Text>> = BTreeMap::new();
    for i in &added_at {
        let p = &merged.points[*i];
        added_by_key.entry(policy.line_key(p)).or_default().push(&p.id);
    }
    let after = crate::lines::assemble(&merged.points, policy)?;
    let mut changes = Vec::new();
    for line in &after {
        // A line's points are sorted by id too: one walk finds its new ones.
        let added = added_by_key.get(&line.key).map_or(&[][..], Vec::as_slice);
        let mut next = added.iter().peekable();
        let mine: Vec<_> = line
            .points
            .iter()
            .filter(|p| {
                while next.next_if(|id| ***id < p.id).is_some() {}
                next.next_if(|id| ***id == p.id).is_some()
            })
            .collect();
        if mine.is_empty() {
            continue;
        }
        let old = before.get(&line.key);
        let (old_values, new_values) = (old.map(values), values(line));
        if old_values.as_ref() != Some(&new_values) {
            let above: Vec<&Text> = mine
                .iter()
                .filter(|p| old.and_then(|o| line_price(o, p.pixels)).is_none_or(|price| p.demand > price))
                .map(|p| &p.id)
                .collect();
            let by: Vec<&Text> = if above.is_empty() { mine.iter().map(|p| &p.id).collect() } else { above };
            changes.push(Change {
                key: line.key.to_string(),
                before: old_values,
                after: new_values,
                row_count: by.len(),
                rows: by.iter().take(SHOWN).map(|id| id.to_string()).collect(),
            });
        }
        // A line the rows push past the ratio bound is one `fit` refuses:
        // each of its observed rows is named with the point it over-reserves.
        let old_over: BTreeSet<&Text> = old.map(|o| o.over_bound.iter().collect()).unwrap_or_default();
        let newly: Vec<&Text> = line.over_bound.iter().filter(|id| !old_over.contains(id)).collect();
        if let Some(first) = newly.first() {
            let why = format!(
                "ingesting it makes line {} over-reserve point {first} by more than the {} bound: `fit` refuses \
                 the line until that point is an [[exception]] in fits/policy.toml",
                line.key,
                policy.ratio_bound.to_decimal_ceil(2),
            );
            let at = refused.reason(why);
            for p in &mine {
                refused.rows.push((p.id.clone(), at));
                refused.total += 1;
            }
        }
    }
    let (refused_rows, refused) = refused.listed();
    let covered = rows - under_rows - no_answer;
    // The 10⁶ points and their lines are freed off this thread, beside the report.
    drop(added_by_key);
    let n = merged.points.len();
    crate::par::drop_later(merged.points, n);
    crate::par::drop_later(after, n);
    Ok(ObservedReport {
        coefficients: shipped.source.clone(),
        files: files.into_iter().map(|(file, rows)| FileRows { file, rows }).collect(),
        rows,
        covered,
        groups,
        under_rows,
        under,
        changes,
        stored,
        refused_rows,
        refused,
    })
}

/// Each row's reservation by the shipped file in its own context (`verify`
/// prices a point so), or the refusal's words: each distinct question
/// priced once, the distinct ones on every core. Each row's slot, and the
/// answers of the slots.
fn prices_of(
    points: &[crate::points::Point],
    shipped: &crate::pricing::Coefficients,
) -> (Vec<u32>, Vec<Result<u64, String>>) {
    type Question = (crate::points::LineKey, u64, u64, u64, u64, bool);
    let question = |p: &crate::points::Point| -> Question {
        (p.key.clone(), p.width, p.height, p.batch, p.frames, p.priced_warm())
    };
    let mut index: rustc_hash::FxHashMap<Question, u32> = rustc_hash::FxHashMap::default();
    let mut distinct: Vec<&crate::points::Point> = Vec::new();
    let slot: Vec<u32> = points
        .iter()
        .map(|p| {
            *index.entry(question(p)).or_insert_with(|| {
                distinct.push(p);
                // At most one question a row, and a file's rows are far fewer than 2³².
                u32::try_from(distinct.len() - 1).unwrap_or(u32::MAX)
            })
        })
        .collect();
    drop(index);
    let threads = crate::par::threads_for(distinct.len());
    let parts: Vec<&[&crate::points::Point]> = distinct.chunks(distinct.len().div_ceil(threads).max(1)).collect();
    let priced: Vec<Result<u64, String>> = crate::par::map(parts, |part| {
        part.iter()
            .map(|p| {
                let q = crate::verify::pricing_checks::point_query(p);
                shipped.quote(&q, &EnvSnapshot::default()).map(|quote| quote.bytes).map_err(|e| e.words().to_string())
            })
            .collect::<Vec<_>>()
    })
    .into_iter()
    .flatten()
    .collect();
    (slot, priced)
}
