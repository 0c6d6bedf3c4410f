//! The workspace: a root folder and the three files under it, named here
//! and nowhere else, with their loaders.
//!
//! - `measurements/vae.json`: the points (`ingest` writes it);
//! - `fits/policy.toml`: the maintainer's rules (written by hand);
//! - `fits/vae.json`: the shipped coefficients (`emit` writes it).

use crate::fsio::{self, RootLock};
use crate::points::{store, Point};
use crate::policy::{self, Policy, Problem};
use anyhow::{anyhow, bail, Result};
use std::path::{Path, PathBuf};

/// A root holding `measurements/` and `fits/`.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

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

impl Workspace {
    pub fn new(root: &Path) -> Workspace {
        Workspace { root: root.to_path_buf() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `measurements/vae.json`.
    pub fn points_path(&self) -> PathBuf {
        self.root.join("measurements").join("vae.json")
    }

    /// `fits/policy.toml`.
    pub fn policy_path(&self) -> PathBuf {
        self.root.join("fits").join("policy.toml")
    }

    /// `fits/vae.json`.
    pub fn coefficients_path(&self) -> PathBuf {
        self.root.join("fits").join("vae.json")
    }

    /// The exclusive lock writers hold for a whole read–modify–write.
    pub fn lock(&self) -> Result<RootLock> {
        RootLock::acquire(&self.root)
    }

    /// The policy and its problems (unknown keys), as `verify` wants them.
    fn policy_with_problems(&self) -> Result<(Policy, Vec<Problem>, String)> {
        let path = self.policy_path();
        let text = fsio::read_text(&path)?;
        let (policy, problems) = policy::parse(&text, &fsio::shown(&path))?;
        Ok((policy, problems, text))
    }

    /// The policy, failing on any problem (`fit`, `emit`, `ingest`, `points`).
    pub fn policy(&self) -> Result<Policy> {
        let (policy, problems, _) = self.policy_with_problems()?;
        if let Some(p) = problems.first() {
            bail!("{}", p.message);
        }
        Ok(policy)
    }

    /// The stored points, every invariant checked; a missing store is empty.
    pub fn points(&self, policy: &Policy) -> Result<Vec<Point>> {
        let path = self.points_path();
        if !path.exists() {
            return Ok(Vec::new());
        }
        store::parse(&fsio::read_text(&path)?, &fsio::shown(&path), &policy.registry)
    }

    /// The points and the policy, with the policy's problems collected
    /// (`verify` reports them as findings).
    pub fn inputs(&self) -> Result<Inputs> {
        let (policy, mut problems, policy_text) = self.policy_with_problems()?;
        let path = self.points_path();
        let text = fsio::read_text(&path)
            .map_err(|e| anyhow!("{e:#}; run `vramfit ingest` first to create {}", fsio::shown(&path)))?;
        let (points, canonical) = store::parse_form(&text, &fsio::shown(&path), &policy.registry)?;
        problems.extend(policy.unknown_ids(&points));
        // A canonical store is hashed as it is; an older one as it will be written.
        let points_bytes = if canonical { text.into_bytes() } else { store::to_bytes(&points)? };
        Ok(Inputs { points, points_bytes, policy, policy_bytes: policy_text.into_bytes(), problems })
    }

    /// The inputs, refusing any policy problem (`fit` and `emit`).
    pub fn inputs_strict(&self) -> Result<Inputs> {
        let inputs = self.inputs()?;
        if !inputs.problems.is_empty() {
            let all: Vec<String> = inputs.problems.iter().map(|p| p.message.clone()).collect();
            bail!("{}", all.join("\n"));
        }
        Ok(inputs)
    }
}
