//! `vramfit verify`: the audit CI runs.

use crate::coefficients;
use crate::inputs;
use crate::pricing::{Coefficients, Pricer};
use crate::verify::{self, VerifyReport};
use anyhow::Result;
use std::path::Path;

/// Verifies the files under `root` with the real pricer built from the
/// shipped file.
pub fn run(root: &Path) -> Result<VerifyReport> {
    run_with(root, &|c: Coefficients| Box::new(c))
}

/// Verifies with a pricer made from the shipped coefficients by `make`: the
/// seam through which a test hands in a deliberately broken pricer.
pub fn run_with(root: &Path, make: &dyn Fn(Coefficients) -> Box<dyn Pricer>) -> Result<VerifyReport> {
    let inp = inputs::load(root)?;
    let path = coefficients::path(root);
    let shown = crate::fsio::shown(&path);
    let text = crate::fsio::read_text(&path)?;
    if let Some(m) = coefficients::version_mismatch(&text, &shown)? {
        return Ok(verify::version_only(&inp, m));
    }
    let shipped = coefficients::parse(&text, &shown)?;
    let pricer = make(Coefficients::new(shipped.clone(), shown)?);
    verify::run(&inp, &shipped, pricer.as_ref())
}
