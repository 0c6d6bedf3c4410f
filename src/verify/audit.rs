//! The audit of a root as CI runs it: the three files read, the shipped
//! file loaded as strictly as a runtime would, every check run, and each
//! finding placed on its file and line.

use crate::coefficients;
use crate::pricing::{Coefficients, Pricer};
use crate::workspace::Workspace;
use anyhow::Result;
use std::path::Path;

use super::VerifyReport;
use crate::findings::{Code, Finding, SHIPPED_FILE};

/// Verifies the files under `root` with the real pricer built from the
/// shipped file.
pub fn audit(root: &Path) -> Result<VerifyReport> {
    audit_with(root, &|c: Coefficients| Box::new(c))
}

/// Verifies with a pricer made from the shipped coefficients by `make`: the
/// seam through which a test hands in a deliberately broken pricer.
pub fn audit_with(root: &Path, make: &dyn Fn(Coefficients) -> Box<dyn Pricer>) -> Result<VerifyReport> {
    let mut report = audit_unplaced(root, make)?;
    let copies = copy_findings(&Workspace::new(root))?;
    if !copies.is_empty() {
        report.findings.extend(copies);
        report.findings = super::sorted(std::mem::take(&mut report.findings));
        report.ok = false;
    }
    crate::places::locate(&mut report.findings, root);
    Ok(report)
}

fn audit_unplaced(root: &Path, make: &dyn Fn(Coefficients) -> Box<dyn Pricer>) -> Result<VerifyReport> {
    let ws = Workspace::new(root);
    let path = ws.coefficients_path();
    let shown = crate::fsio::shown(&path);
    // A large shipped file is read on a second thread while the store loads.
    let large = std::fs::metadata(&path).is_ok_and(|m| m.len() >= crate::fsio::SMALL);
    let (shipped, inp) = crate::par::join(large, || read_shipped(&path, &shown), || ws.inputs());
    let inp = inp?;
    match shipped? {
        Shipped::OtherVersion(m) => Ok(super::version_only(&inp, m)),
        Shipped::Unloadable(raw, e) => super::unloadable(&inp, &raw, &e),
        Shipped::Loaded(text, file) => {
            let coefficients = Coefficients::new((*file).clone(), shown.clone());
            match coefficients {
                Ok(c) => {
                    let report = super::run(&inp, &text, &file, make(c).as_ref());
                    // Freed beside the answer's rendering, not before it.
                    let items = inp.points.len();
                    crate::par::drop_later((inp, file), items);
                    report
                }
                Err(e) => super::unloadable(&inp, &coefficients::read_json(&text, &shown)?, &e.into()),
            }
        }
    }
}

/// Every shipped copy of `fits/vae.json` must be it, byte for byte: the
/// Python package and the runtime crate price with their own copies, so a
/// copy that drifted (by a hand edit, a merge, a tamper) would answer
/// differently from the CLI while every other check passed. A root without
/// the package or the crate has none.
fn copy_findings(ws: &Workspace) -> Result<Vec<Finding>> {
    let copies = ws.shipped_copies();
    if copies.is_empty() {
        return Ok(Vec::new());
    }
    let shipped = crate::fsio::read_bytes(&ws.coefficients_path(), crate::fsio::STORE_LIMIT)?;
    let mut out = Vec::new();
    for copy in copies {
        let found = match crate::fsio::read_bytes(&copy.path, crate::fsio::STORE_LIMIT) {
            Ok(bytes) if bytes == shipped => continue,
            Ok(bytes) => format!("{} ({} bytes)", crate::fsio::sha256_tag(&bytes), bytes.len()),
            Err(_) if !copy.path.exists() => "missing".to_string(),
            Err(e) => format!("unreadable: {e}"),
        };
        let mut f = Finding::new(
            Code::Copy,
            copy.rel,
            format!("{} ({}) differs from {SHIPPED_FILE}", crate::fsio::shown(&copy.path), copy.what),
            "run `vramfit emit` (it writes every copy), or restore the copy",
        );
        f.expected = Some(format!("{} ({} bytes)", crate::fsio::sha256_tag(&shipped), shipped.len()));
        f.found = Some(found);
        out.push(f);
    }
    Ok(out)
}

/// The shipped file as the audit needs it.
enum Shipped {
    /// Another format or version: the message.
    OtherVersion(String),
    /// Valid JSON that the strict loader refuses: the JSON and the reason.
    Unloadable(serde_json::Value, anyhow::Error),
    /// Loaded: its text and the file. Its JSON tree is not kept (at 10^6
    /// points it was a tenth of `verify`'s memory); `verify::run` rebuilds
    /// it only for a file that differs from a fresh `emit`.
    Loaded(String, Box<coefficients::CoefficientsFile>),
}

fn read_shipped(path: &Path, shown: &str) -> Result<Shipped> {
    let text = crate::fsio::read_text(path)?;
    // The JSON tree is built only for a file that does not load as it is.
    let error = match coefficients::parse(&text, shown) {
        Ok(file) => return Ok(Shipped::Loaded(text, Box::new(file))),
        Err(e) => e,
    };
    let raw = coefficients::read_json(&text, shown)?;
    if let Some(m) = coefficients::version_mismatch(&raw, shown) {
        return Ok(Shipped::OtherVersion(m));
    }
    Ok(Shipped::Unloadable(raw, error.into()))
}
