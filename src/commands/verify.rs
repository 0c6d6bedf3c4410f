//! `vramfit verify`: the audit CI runs.

use crate::coefficients;
use crate::pricing::{Coefficients, Pricer};
use crate::verify::{self, VerifyReport};
use crate::workspace::Workspace;
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
    let ws = Workspace::new(root);
    let path = ws.coefficients_path();
    let shown = crate::fsio::shown(&path);
    // The shipped file is read on a second thread while the store loads.
    let (inp, shipped) = std::thread::scope(|s| {
        let shipped = s.spawn(|| -> Result<(String, serde_json::Value, Result<coefficients::CoefficientsFile>)> {
            let text = crate::fsio::read_text(&path)?;
            let raw = coefficients::read_json(&text, &shown)?;
            let file = match coefficients::version_mismatch(&raw, &shown) {
                Some(m) => Err(anyhow::anyhow!(m)),
                None => coefficients::parse_read(&text, &raw, &shown),
            };
            Ok((text, raw, file))
        });
        let inp = ws.inputs();
        (inp, shipped.join().map_err(|_| anyhow::anyhow!("{shown}: the reading thread failed")))
    });
    let inp = inp?;
    let (text, raw, file) = shipped??;
    if let Some(m) = coefficients::version_mismatch(&raw, &shown) {
        return Ok(verify::version_only(&inp, m));
    }
    let loaded = file.and_then(|f| Ok((f.clone(), Coefficients::new(f, shown.clone())?)));
    match loaded {
        Ok((shipped, coefficients)) => verify::run(&inp, &text, &raw, &shipped, make(coefficients).as_ref()),
        Err(e) => verify::unloadable(&inp, &raw, &e),
    }
}
