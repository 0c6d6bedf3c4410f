//! `vramfit emit`: write `fits/vae.json` from the points and the policy.

use super::{Found, Outcome};
use crate::coefficients;
use crate::coefficients::emit::{diff, BundledCopy, EmitReport};
use crate::verify::fresh::{fresh, Fresh, Purpose};
use crate::workspace::Workspace;
use anyhow::Result;
use std::path::Path;

/// `check`: only compare (`--check`); `force`: write despite findings
/// (`--force`); `wait`: how long to wait for another writer's lock
/// (`--wait`).
pub fn run(root: &Path, check: bool, force: bool, wait: std::time::Duration) -> Result<Outcome<EmitReport>> {
    // The lock covers reading the points as well as writing the file, so an
    // ingest running beside this emit is either all in or all out of it.
    let ws = Workspace::new(root);
    let lock = if check { None } else { Some(ws.lock(wait)?) };
    let path = ws.coefficients_path();
    // The file being replaced is read beside the fit.
    let (old_bytes, fresh) = crate::par::join(true, || std::fs::read(&path).ok(), || fresh(root, Purpose::Write));
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
    let bundled = match ws.bundled_copy_path() {
        None => None,
        Some(copy) => {
            let stale = std::fs::read(&copy).ok().as_deref() != Some(bytes.as_slice());
            let written = may_write && stale;
            if let (true, Some(lock)) = (written, &lock) {
                lock.write(&copy, &bytes)?;
            }
            Some(BundledCopy { file: crate::fsio::shown(&copy), stale, written })
        }
    };
    let changes = diff(old, &file);
    let old_text = old_bytes.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
    let changed_at = changes
        .iter()
        .filter(|c| c.change != crate::coefficients::emit::Change::Unchanged)
        .find_map(|c| crate::places::coefficients_line(&old_text, &c.key, None))
        .unwrap_or(1);
    let mut findings = findings;
    crate::places::locate(&mut findings, root);
    let r = EmitReport {
        file: crate::fsio::shown(&path),
        check,
        changed,
        written,
        force,
        changes,
        findings,
        bundled,
        changed_at,
    };
    let found = match (check && r.out_of_date(), r.findings.is_empty()) {
        (_, false) => Found::Findings,
        (true, true) => Found::OutOfDate,
        (false, true) => Found::Nothing,
    };
    let weight = r.findings.len();
    let copy = r.bundled.as_ref().filter(|b| b.written).map(|b| b.file.clone());
    let wrote: Vec<String> = r.written.then(|| r.file.clone()).into_iter().chain(copy).collect();
    Ok(Outcome::of(r).found(found).weighing(weight).wrote(wrote))
}
