//! The fresh build: the lines fitted from a root's points under its policy,
//! the file `emit` would write, and what `verify` would say of it. `fit`
//! shows it and `emit` writes it, so both say at write time what CI would
//! say after.

use crate::coefficients::emit::{diff, BundledCopy, EmitReport};
use crate::coefficients::{self, CoefficientsFile};
use crate::lines::{assemble_groups, group, FitLine, FitReport, Line};
use crate::pricing::Coefficients;
use crate::workspace::{Digest, Workspace};
use anyhow::Result;
use std::path::Path;

use super::Finding;

/// What `fit` shows and `emit` writes, built once from the inputs.
pub struct Fresh {
    /// Every line as `fit` shows it.
    pub lines: Vec<FitLine>,
    /// The file `emit` writes.
    pub file: CoefficientsFile,
    /// Its bytes, when made for writing ([`Purpose::Write`]).
    pub bytes: Option<Vec<u8>>,
    /// What `verify` would report on it.
    pub findings: Vec<Finding>,
}

/// What the fresh file is made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// `emit`: the file's bytes, with the store's digest in them.
    Write,
    /// `fit`: the lines and findings only; the store is not hashed and no
    /// bytes are made (at 10^6 points that was a quarter of `fit`).
    Show,
}

/// Fits the lines, builds the file and runs every `verify` check on it.
pub fn fresh(root: &Path, purpose: Purpose) -> Result<Fresh> {
    let digest = match purpose {
        Purpose::Write => Digest::Compute,
        Purpose::Show => Digest::Skip,
    };
    let inp = Workspace::new(root).inputs_strict(digest)?;
    let groups = group(&inp.points, &inp.policy);
    let lines = assemble_groups(&groups, &inp.policy)?;
    let file = coefficients::build_from(&lines, &inp)?;
    // The pricer owns the file (at 10^6 points a copy of its point ids
    // was 20 MB).
    let pricer = Coefficients::new(file, "the fresh fits/vae.json".into())?;
    let file = &pricer.file;
    // The file's bytes and the lines as shown are made beside the audit.
    let (made, findings) = crate::par::join(
        true,
        || -> Result<(Option<Vec<u8>>, Vec<FitLine>)> {
            let bytes = match purpose {
                Purpose::Write => Some(crate::fsio::to_json_bytes(file)?),
                Purpose::Show => None,
            };
            Ok((bytes, lines.iter().map(Line::report).collect()))
        },
        || super::run_fresh(&inp, &groups, file, &pricer).findings,
    );
    let (bytes, shown) = made?;
    // The points are freed beside what the command does next.
    drop(groups);
    let items = inp.points.len();
    crate::par::drop_later(inp, items);
    Ok(Fresh { lines: shown, file: pricer.file, bytes, findings })
}

/// What `fit` shows: every line of the fresh build, and the findings
/// placed on their files and lines.
pub fn fit_report(root: &Path) -> Result<FitReport> {
    let mut fresh = fresh(root, Purpose::Show)?;
    crate::places::locate(&mut fresh.findings, root);
    Ok(FitReport {
        margin: crate::exact::exact_decimal(&fresh.file.margin),
        ratio_bound: crate::exact::exact_decimal(&fresh.file.ratio_bound),
        lines: fresh.lines,
        findings: fresh.findings,
    })
}

/// `emit`'s work, for the `emit` command and for `family add`: the fresh
/// file built under the root's lock, compared with the one on disk, and
/// written (with the Python package's copy) when verify has no finding or
/// `force` says so. `check`: only compare (`--check`); `force`: write despite findings
/// (`--force`); `wait`: how long to wait for another writer's lock
/// (`--wait`).
pub fn emit(root: &Path, check: bool, force: bool, wait: std::time::Duration) -> Result<EmitReport> {
    // The lock covers reading the points as well as writing the file, so an
    // ingest running beside this emit is either all in or all out of it.
    let ws = Workspace::new(root);
    let lock = if check { None } else { Some(ws.lock(wait)?) };
    let path = ws.coefficients_path();
    // The file being replaced is read beside the fit.
    let (old_bytes, fresh) = crate::par::join(
        true,
        || crate::fsio::read_if_regular(&path, crate::fsio::STORE_LIMIT),
        || fresh(root, Purpose::Write),
    );
    let Fresh { file, bytes, findings, .. } = fresh?;
    let bytes = bytes.unwrap_or_default();
    // The list of changes needs the old file loaded only when its bytes
    // differ; an unreadable or older-format file counts as "no previous lines".
    let loaded;
    let old = match &old_bytes {
        Some(b) if *b == bytes => Some(&file),
        Some(b) => {
            loaded = coefficients::parse(&String::from_utf8_lossy(b), "").ok();
            loaded.as_ref()
        }
        None => None,
    };
    let changed = old_bytes.as_deref() != Some(bytes.as_slice());
    // Only a writer holds the lock (`--check` takes none).
    let may_write = lock.is_some() && (findings.is_empty() || force);
    // Never write a file the loader would refuse (a base too large to
    // price, say, from extreme but valid points): with --force too, since
    // every `reserve --root` and `plan` would fail on it afterwards.
    if may_write {
        let shown = crate::fsio::shown(&path);
        let text =
            std::str::from_utf8(&bytes).map_err(|_| anyhow::anyhow!("{shown}: emit made a file that is not UTF-8"))?;
        if let Err(e) = coefficients::parse(text, &shown) {
            anyhow::bail!(
                "{e:#}: the file emit would write does not load, so nothing was written (fix the points or the policy)"
            );
        }
    }
    let written = may_write && changed;
    if let (true, Some(lock)) = (written, &lock) {
        lock.write(&path, &bytes)?;
    }
    let mut copies = Vec::new();
    for copy in ws.shipped_copies() {
        let stale =
            crate::fsio::read_if_regular(&copy.path, crate::fsio::STORE_LIMIT).as_deref() != Some(bytes.as_slice());
        let written = may_write && stale;
        if let (true, Some(lock)) = (written, &lock) {
            lock.write(&copy.path, &bytes)?;
        }
        copies.push(BundledCopy { file: crate::fsio::shown(&copy.path), what: copy.what, stale, written });
    }
    let changes = diff(old, &file);
    let old_text = old_bytes.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
    let changed_at = changes
        .iter()
        .filter(|c| c.change != crate::coefficients::emit::Change::Unchanged)
        .find_map(|c| crate::places::coefficients_line(&old_text, &c.key, None))
        .unwrap_or(1);
    let mut findings = findings;
    crate::places::locate(&mut findings, root);
    Ok(EmitReport {
        file: crate::fsio::shown(&path),
        check,
        changed,
        written,
        force,
        changes,
        findings,
        copies,
        changed_at,
    })
}
