//! `vramfit ingest`: measurement files into `measurements/vae.json`.

use crate::ingest::ingest;
pub use crate::ingest::{IngestOptions, InputFormat};
use crate::points::summary::IngestReport;
use crate::progress::Progress;
use anyhow::Result;
use std::path::Path;

pub fn run(root: &Path, opts: &IngestOptions, progress: &dyn Progress) -> Result<super::Outcome<IngestReport>> {
    let r = ingest(root, opts, progress)?;
    let found = super::Found::when(opts.check && !r.up_to_date, super::Found::OutOfDate);
    let wrote = if r.written { vec![r.store.clone()] } else { Vec::new() };
    Ok(super::Outcome::of(r).found(found).wrote(wrote))
}
