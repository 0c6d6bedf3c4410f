//! The fresh build: the lines fitted from a root's points under its policy,
//! the file `emit` would write, and what `verify` would say of it. `fit`
//! shows it and `emit` writes it, so both say at write time what CI would
//! say after.

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
    let file = coefficients::build(&lines, &inp.policy, crate::traced::section(&inp.traces, &inp.points, &inp.policy)?, inp.points_digest(), &inp.policy_digest);
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
