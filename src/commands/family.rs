//! `vramfit family add NAME --traces FILE`: register a VAE from its traces
//! and price it by the traced rule (docs/traced.md, "A new VAE on day one").

use super::Outcome;
use crate::family::{add as add_family, FamilyAddReport};
use crate::registry::ArchClass;
use anyhow::Result;
use std::path::Path;

/// `class`: `--class`; `wait`: `--wait`; `commands`: the command line's
/// own words (subcommands), which a family name must not shadow.
pub fn add(
    root: &Path,
    name: &str,
    traces: &Path,
    class: Option<ArchClass>,
    wait: std::time::Duration,
    commands: &[String],
) -> Result<Outcome<FamilyAddReport>> {
    let r = add_family(root, name, traces, class, wait, commands)?;
    let wrote = vec![r.traces.clone(), r.policy.clone(), r.emit.file.clone()];
    Ok(Outcome::of(r).wrote(wrote))
}
