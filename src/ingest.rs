//! Measurement files into a root's store (`measurements/vae.json`): read
//! every file beside the store, refuse simulated rows, merge, say what
//! `--check` reports (rows the store lacks, stored points no file gives),
//! and write the store under the root's lock. `commands::ingest` only
//! hands its options in and its report out.

use crate::points::csv_input::{read_csv_keeping, Keep};
use crate::points::invokeai::{self, InvokeaiContext};
use crate::points::merge::{merge, RowFate};
use crate::points::row::Rows;
use crate::points::store;
use crate::points::summary::{FileSummary, IngestReport, Placed};
use crate::policy;
use crate::progress::Progress;
use crate::workspace::Workspace;
use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The input formats `ingest` reads.
#[derive(Debug, Clone)]
pub enum InputFormat {
    /// vramfit's measurement CSV (docs/DESIGN.md, "The measurement CSV").
    Csv,
    /// InvokeAI's `all_benchmark_results.json`, with the missing facts given.
    InvokeaiBenchmark(InvokeaiContext),
}

/// Typed options of `ingest`.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    pub files: Vec<PathBuf>,
    pub from: InputFormat,
    /// Only compare: exit 1 when the store is not up to date with the files.
    pub check: bool,
    /// Take rows made on a simulated device (refused otherwise).
    pub allow_simulated: bool,
    /// How long to wait for another writer's lock (`--wait`).
    pub wait: std::time::Duration,
}

/// The largest benchmark JSON read whole (InvokeAI's is 60 KiB for 98 records).
pub const MAX_JSON_BYTES: u64 = 256 << 20;

/// How standard input (`-`) is named in messages and the summary.
pub const STDIN_NAME: &str = "<stdin>";

/// An input of `ingest` or `report --observed`, opened: standard input
/// (`-`), or a regular file opened without blocking (`fsio::open_regular`:
/// a FIFO, a device or a folder is refused here, before any lock).
pub enum Input {
    Stdin,
    File(std::fs::File),
}

/// Opens every input `opts` names, in order: each refused unless it is
/// standard input or a regular file.
pub fn open_inputs(opts: &IngestOptions) -> Result<Vec<(String, Input)>> {
    opts.files
        .iter()
        .map(|f| {
            if f.as_os_str() == "-" {
                Ok((STDIN_NAME.to_string(), Input::Stdin))
            } else {
                Ok((f.display().to_string(), Input::File(crate::fsio::open_regular(f)?)))
            }
        })
        .collect()
}

/// Reads opened inputs into rows: every input's rows in the order given,
/// and each one's name and row count.
pub fn read_rows(
    inputs: Vec<(String, Input)>,
    from: &InputFormat,
    keep: Keep,
    registry: &crate::registry::Registry,
    progress: &dyn Progress,
) -> Result<(Rows, Vec<(String, usize)>)> {
    let mut all = Rows::default();
    let mut sizes = Vec::new();
    for (name, input) in inputs {
        let mut rows = match (from, input) {
            // Standard input is a pipe: its length is not known up front.
            (InputFormat::Csv, Input::Stdin) => {
                read_csv_keeping(&mut std::io::stdin(), 0, &name, registry, keep, progress)?
            }
            (InputFormat::Csv, Input::File(mut file)) => {
                let len = file.metadata().map(|m| m.len()).unwrap_or(0);
                let mut r = std::io::BufReader::with_capacity(1 << 16, &mut file);
                read_csv_keeping(&mut r, len, &name, registry, keep, progress)?
            }
            (InputFormat::InvokeaiBenchmark(ctx), input) => {
                // Read at most one byte past the limit, so a huge file (or
                // /dev/zero) is refused with memory bounded.
                let limit = MAX_JSON_BYTES + 1;
                let mut b = Vec::new();
                let read = match input {
                    Input::Stdin => {
                        std::io::Read::read_to_end(&mut std::io::Read::take(std::io::stdin(), limit), &mut b)
                    }
                    Input::File(file) => std::io::Read::read_to_end(&mut std::io::Read::take(file, limit), &mut b),
                };
                read.with_context(|| format!("{name}: cannot read file"))?;
                if b.len() as u64 > MAX_JSON_BYTES {
                    anyhow::bail!(
                        "{name}: more than {} MiB: larger than a benchmark JSON may be",
                        MAX_JSON_BYTES >> 20
                    );
                }
                let text = String::from_utf8(b).map_err(|_| anyhow::anyhow!("{name}: not UTF-8 text"))?;
                invokeai::parse(&text, &name, ctx, registry)?
            }
        };
        sizes.push((name, rows.len()));
        // One file's rows are taken as they are; more are appended.
        if all.is_empty() {
            all = rows;
        } else {
            all.append(&mut rows);
        }
    }
    Ok((all, sizes))
}

/// Ingests the files `opts` names into the store of `root` (with
/// `opts.check`, only compares).
pub fn ingest(root: &Path, opts: &IngestOptions, progress: &dyn Progress) -> Result<IngestReport> {
    let ws = Workspace::new(root);
    let policy = ws.policy()?;
    // Every input is opened (and a FIFO, a device or a folder refused)
    // before the lock; standard input, which may wait on a person or a
    // pipe, is read whole before it too: the lock is never held while
    // waiting on input.
    let inputs = open_inputs(opts)?;
    let (early, later) = if inputs.iter().any(|(_, i)| matches!(i, Input::Stdin)) {
        (Some(read_rows(inputs, &opts.from, Keep::All, &policy.registry, progress)), Vec::new())
    } else {
        (None, inputs)
    };
    // The lock covers the whole read–modify–write of the store, so a
    // concurrent ingest never reads the store this one is about to replace.
    let lock = if opts.check { None } else { Some(ws.lock(opts.wait)?) };
    // The files and the store are read side by side; a bad file is
    // reported before a bad store.
    let (stored, per_file) = crate::par::join(
        true,
        || ws.points(&policy),
        || early.unwrap_or_else(|| read_rows(later, &opts.from, Keep::All, &policy.registry, progress)),
    );
    let (all, sizes) = per_file?;
    if !opts.allow_simulated {
        refuse_simulated(&all)?;
    }
    let stored = stored?;
    // What only `--check` reports: rows of the files the store lacks, and,
    // when the files are the whole raw folder, stored points none produces.
    let orphans_checked = opts.check && covers_the_raw_folder(&ws, &opts.files);
    let (missing, orphans) = if opts.check {
        let from_files: BTreeSet<&str> = all.points.iter().map(|p| p.id.as_str()).collect();
        let stored_ids: BTreeSet<&str> = stored.iter().map(|p| p.id.as_str()).collect();
        let missing = all
            .points
            .iter()
            .zip(&all.origins)
            .filter(|(p, _)| !stored_ids.contains(p.id.as_str()))
            .map(|(p, at)| Placed { id: p.id.to_string(), file: at.file.to_string(), line: at.line })
            .collect();
        let store = crate::fsio::shown(&ws.points_path());
        // The store is one point a line after its first line, in id order.
        let orphans = if orphans_checked {
            stored
                .iter()
                .enumerate()
                .filter(|(_, p)| !from_files.contains(p.id.as_str()))
                .map(|(i, p)| Placed { id: p.id.to_string(), file: store.clone(), line: i as u64 + 2 })
                .collect()
        } else {
            vec![]
        };
        (missing, orphans)
    } else {
        (vec![], vec![])
    };
    let merged = merge(stored, all)?;
    let mut notes = repeat_notes(&merged.repeats);
    notes.extend(unknown_os_notes(merged.added.iter().map(|at| &merged.points[*at]), &policy));

    let mut files = Vec::new();
    let mut fates = merged.fates.iter();
    for (name, rows) in sizes {
        let added = fates.by_ref().take(rows).filter(|f| **f == RowFate::Added).count();
        files.push(FileSummary { file: name, rows, added, unchanged: rows - added });
    }
    let added: usize = files.iter().map(|f| f.added).sum();
    let points = merged.points;
    let mut by_key: BTreeMap<crate::points::LineKey, usize> = BTreeMap::new();
    for p in &points {
        *by_key.entry(policy.line_key(p)).or_insert(0) += 1;
    }
    let lines = by_key.into_iter().map(|(k, n)| (k.to_string(), n)).collect();
    let up_to_date = added == 0 && orphans.is_empty();
    let path = ws.points_path();
    // Only a writer holds the lock (`--check` takes none).
    let written = lock.is_some() && added > 0;
    if let (true, Some(lock)) = (written, &lock) {
        lock.write_with(&path, &mut |w| {
            let mut result = Ok(());
            store::write(&points, &mut |bytes| {
                if result.is_ok() {
                    result = w.write_all(bytes);
                }
            });
            result
        })?;
    }
    let count = points.len();
    // The points are freed off this thread, beside the report.
    crate::par::drop_later(points, count);
    Ok(IngestReport {
        store: crate::fsio::shown(&path),
        check: opts.check,
        written,
        files,
        points: count,
        added,
        lines,
        missing,
        orphans,
        orphans_checked,
        up_to_date,
        notes,
    })
}

/// Rows a simulated device made would fit lines to a memory model's
/// figures: an input error naming them, unless `--allow-simulated`.
fn refuse_simulated(rows: &Rows) -> Result<()> {
    let at: Vec<String> =
        rows.points.iter().zip(&rows.origins).filter(|(p, _)| p.is_simulated()).map(|(_, o)| o.to_string()).collect();
    if let Some(first) = at.first() {
        let shown: Vec<&str> = at.iter().take(10).map(String::as_str).collect();
        let more = if at.len() > 10 { format!(" and {} more", at.len() - 10) } else { String::new() };
        anyhow::bail!(
            "{first}: device: {} row(s) were made on a simulated device (device = fake, or SIMULATED in the note): \
             {}{more}; they are a memory model's figures, not measurements. Nothing was written; \
             `--allow-simulated` takes them (for a scratch root), and every answer priced from them says so",
            at.len(),
            shown.join(", ")
        );
    }
    Ok(())
}

/// Whether `files` name every CSV of the root's `measurements/raw/` (what
/// CI checks): only then is a stored point that none of them produces an
/// orphan rather than a row of some other file.
fn covers_the_raw_folder(ws: &Workspace, files: &[PathBuf]) -> bool {
    let raw = ws.root().join("measurements").join("raw");
    let Ok(entries) = std::fs::read_dir(&raw) else { return false };
    let given: BTreeSet<PathBuf> = files.iter().filter_map(|f| f.canonicalize().ok()).collect();
    let mut any = false;
    for e in entries.flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "csv") {
            any = true;
            if !p.canonicalize().is_ok_and(|c| given.contains(&c)) {
                return false;
            }
        }
    }
    any
}

/// Rows given twice in this input with the same content: counted once,
/// but said, since a repeated row is usually a copy-and-paste slip (the
/// first 20 by place, then how many more).
fn repeat_notes(
    repeats: &[(crate::points::row::RowOrigin, crate::points::row::RowOrigin, crate::text::Text)],
) -> Vec<String> {
    const SHOWN: usize = 20;
    let mut notes: Vec<String> = repeats
        .iter()
        .take(SHOWN)
        .map(|(again, first, id)| format!("{again}: repeats the row at {first} exactly (id {id}): counted once"))
        .collect();
    if repeats.len() > SHOWN {
        notes.push(format!("… and {} more repeated row(s)", repeats.len() - SHOWN));
    }
    notes
}

/// Rows with no OS on a platform whose lines keep their OS: they make a
/// line of their own (`os = any`) that prices every OS as a lower bound.
fn unknown_os_notes<'a>(added: impl Iterator<Item = &'a crate::points::Point>, policy: &policy::Policy) -> Vec<String> {
    let mut per_key: BTreeMap<String, usize> = BTreeMap::new();
    for p in added {
        if p.key.os == crate::vocab::Os::Any && policy.is_os_specific(p.key.conv_backend, p.key.allocator) {
            *per_key.entry(policy.line_key(p).to_string()).or_insert(0) += 1;
        }
    }
    per_key
        .into_iter()
        .map(|(key, n)| {
            format!(
                "{n} row(s) of {key} give no OS, on a platform whose lines keep their OS: they make the line \
                 measured without an OS, which prices every OS as a lower bound (an OS-specific line of the \
                 same platform is used only where it prices higher)"
            )
        })
        .collect()
}
