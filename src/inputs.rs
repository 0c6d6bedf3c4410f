//! Loading the inputs every fitting command shares.

use crate::points::{store, Point};
use crate::policy::{self, Policy, Problem};
use anyhow::{bail, Result};
use std::path::Path;

/// The points, the policy, their bytes (for digests) and the policy's problems.
pub struct Inputs {
    pub points: Vec<Point>,
    /// The canonical bytes of the points (sorted by id), for digests.
    pub points_bytes: Vec<u8>,
    pub policy: Policy,
    pub policy_bytes: Vec<u8>,
    /// Unknown keys and ids that name no point.
    pub problems: Vec<Problem>,
}

/// Loads `measurements/vae.json` and `fits/policy.toml` under `root`.
pub fn load(root: &Path) -> Result<Inputs> {
    let policy_path = root.join("fits/policy.toml");
    let policy_text = crate::fsio::read_text(&policy_path)?;
    let (policy, mut problems) = policy::parse(&policy_text, &crate::fsio::shown(&policy_path))?;
    let points_path = store::path(root);
    let points_bytes = std::fs::read(&points_path).map_err(|e| {
        anyhow::anyhow!("{}: cannot read ({e}); run `vramfit ingest` first", crate::fsio::shown(&points_path))
    })?;
    let points = store::parse(
        std::str::from_utf8(&points_bytes).map_err(|_| anyhow::anyhow!("{}: not UTF-8", points_path.display()))?,
        &crate::fsio::shown(&points_path),
        &policy.registry,
    )?;
    problems.extend(policy.unknown_ids(&points));
    let points_bytes = store::to_bytes(&points)?;
    Ok(Inputs { points, points_bytes, policy, policy_bytes: policy_text.into_bytes(), problems })
}

/// Loads the inputs and refuses any policy problem (fit and emit).
pub fn load_strict(root: &Path) -> Result<Inputs> {
    let inputs = load(root)?;
    if !inputs.problems.is_empty() {
        let all: Vec<String> = inputs.problems.iter().map(|p| p.message.clone()).collect();
        bail!("{}", all.join("\n"));
    }
    Ok(inputs)
}
