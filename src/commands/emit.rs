//! `vramfit emit`: write `fits/vae.json` from the points and the policy.

use crate::coefficients::assemble::assemble;
use crate::coefficients::emit::{diff, LineChange};
use crate::coefficients::{self, CoefficientsFile};
use crate::inputs;
use anyhow::Result;
use serde::Serialize;
use std::path::Path;

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
    /// Line-by-line changes (every line, unchanged ones too).
    pub changes: Vec<LineChange>,
}

/// The fresh file and its bytes.
pub fn fresh(root: &Path) -> Result<(CoefficientsFile, Vec<u8>)> {
    let inp = inputs::load_strict(root)?;
    let lines = assemble(&inp.points, &inp.policy)?;
    let file = coefficients::build(&lines, &inp.policy, &inp.points_bytes, &inp.policy_bytes);
    let bytes = crate::fsio::to_json_bytes(&file)?;
    Ok((file, bytes))
}

pub fn run(root: &Path, check: bool) -> Result<EmitReport> {
    let (file, bytes) = fresh(root)?;
    let path = coefficients::path(root);
    let old_bytes = std::fs::read(&path).ok();
    // An unreadable or older-format file counts as "no previous lines".
    let old = old_bytes.as_ref().and_then(|b| coefficients::parse(&String::from_utf8_lossy(b), "").ok());
    let changed = old_bytes.as_deref() != Some(bytes.as_slice());
    let written = !check && changed;
    if written {
        crate::fsio::write_atomic(&path, &bytes)?;
    }
    Ok(EmitReport { file: crate::fsio::shown(&path), check, changed, written, changes: diff(old.as_ref(), &file) })
}
