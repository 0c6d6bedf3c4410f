//! `vramfit export --host HOST [--out FILE]`: the root's shipped lines as
//! the host's own constants.

use super::Outcome;
use crate::export::{Export, Host};
use anyhow::Result;
use std::path::Path;

/// `out`: where the export's JSON is written atomically (None: printed).
pub fn run(root: &Path, host: &str, out: Option<&Path>) -> Result<Outcome<Export>> {
    let host = Host::parse(host)?;
    let path = crate::workspace::Workspace::new(root).coefficients_path();
    let text = crate::fsio::read_text(&path)?;
    let shown = crate::fsio::shown(&path);
    let file = crate::contract::load::parse(&text, &shown)?;
    let export = crate::export::export(&file, text.as_bytes(), host)?;
    let Some(out) = out else { return Ok(Outcome::of(export)) };
    crate::fsio::write_file(out, &crate::fsio::to_json_bytes(&export)?)?;
    let wrote = vec![crate::fsio::shown(out)];
    Ok(Outcome::of(export).wrote(wrote))
}
