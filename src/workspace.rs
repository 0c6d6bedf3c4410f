//! The workspace: a root folder and the three files under it, with their
//! loaders. The paths are built here; the names findings and messages cite
//! them by are `findings::{POINTS_FILE, POLICY_FILE, SHIPPED_FILE}`.
//!
//! - `measurements/vae.json`: the points (`ingest` writes it);
//! - `fits/policy.toml`: the maintainer's rules (written by hand);
//! - `fits/vae.json`: the shipped coefficients (`emit` writes it);
//! - and the shipped copy of `fits/vae.json` the root holds: the runtime
//!   crate's `crates/vramfit-runtime/vae.json`, which the crate and the
//!   Python wheel built from it compile in (`emit` writes it beside it).

use crate::fsio::{self, RootLock};
use crate::points::{store, Point};
use crate::policy::{self, Policy, Problem};
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// A shipped copy of `fits/vae.json`: where it lives in a root.
struct CopyPlace {
    /// The folder whose presence says the root holds it.
    folder: &'static str,
    rel: &'static str,
    what: &'static str,
}

/// One place since the Python package became the runtime compiled: a copy
/// a package read at run time could drift from the crate's, and there is
/// none left to drift.
const COPIES: [CopyPlace; 1] = [CopyPlace {
    folder: "crates/vramfit-runtime",
    rel: crate::findings::RUNTIME_FILE,
    what: "the copy the runtime crate and the Python wheel compile in",
}];

/// One shipped copy of `fits/vae.json` in a root.
#[derive(Debug, Clone)]
pub struct ShippedCopy {
    /// Its path under the root.
    pub path: PathBuf,
    /// Its path relative to the root (a finding's file).
    pub rel: &'static str,
    /// What it is, in words.
    pub what: &'static str,
}

/// A root holding `measurements/` and `fits/`.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

/// Whether loading the store computes its digest. Hashing 10^6 points
/// (480 MB) is a fifth of `fit`'s time, and `fit` shows no digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Digest {
    Compute,
    Skip,
}

/// The points, the policy, their digests and the policy's problems.
pub struct Inputs {
    pub points: Vec<Point>,
    /// `sha256:…` of the points' canonical bytes (sorted by id); `None`
    /// when loaded with [`Digest::Skip`].
    pub points_digest: Option<String>,
    pub policy: Policy,
    /// `sha256:…` of the policy file as read.
    pub policy_digest: String,
    /// Unknown keys and ids that name no point.
    pub problems: Vec<Problem>,
    /// The traced rows of `measurements/traced/` (docs/traced.md).
    pub traces: Vec<crate::points::traced::TracedRow>,
}

impl Inputs {
    /// The points digest, or `""` when it was not computed (a file built
    /// from inputs loaded with [`Digest::Skip`] is shown, never written).
    pub fn points_digest(&self) -> &str {
        self.points_digest.as_deref().unwrap_or_default()
    }
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

    /// Every shipped copy of `fits/vae.json` this root holds, each of which
    /// must be that file byte for byte (`emit` writes them all, `emit
    /// --check` and `verify` fail while one differs): the runtime crate's
    /// `crates/vramfit-runtime/vae.json` (what it compiles in, so the crate
    /// packages and publishes on its own, and what the Python wheel built
    /// from it prices with). A root without the crate (a maintainer's data
    /// root) has no copies.
    pub fn shipped_copies(&self) -> Vec<ShippedCopy> {
        COPIES
            .iter()
            .filter(|c| self.root.join(c.folder).is_dir())
            .map(|c| ShippedCopy { path: self.root.join(c.rel), rel: c.rel, what: c.what })
            .collect()
    }

    /// The exclusive lock writers hold for a whole read–modify–write: on
    /// the folders that hold the store, the coefficients and the package's
    /// copy (no link under the root), waiting at most `wait`.
    pub fn lock(&self, wait: std::time::Duration) -> Result<RootLock> {
        let mut files = vec![self.points_path(), self.coefficients_path()];
        files.extend(self.shipped_copies().into_iter().map(|c| c.path));
        RootLock::acquire(&self.root, &files, wait)
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
        Ok(self.read_store(&policy.registry, Digest::Skip)?.0)
    }

    /// The store, streamed from disk and hashed on the way unless
    /// `digest` says not to: the points and the digest of their canonical bytes.
    fn read_store(&self, registry: &crate::registry::Registry, digest: Digest) -> Result<(Vec<Point>, Option<String>)> {
        let path = self.points_path();
        let shown = fsio::shown(&path);
        let read = |r: &mut dyn std::io::BufRead, len| store::read(r, len, &shown, registry);
        if digest == Digest::Skip {
            let (points, _) = fsio::read_streamed(&path, read)?;
            return Ok((points, None));
        }
        let ((points, form), read_digest) = fsio::read_hashed(&path, read)?;
        let digest = match form {
            store::Form::Canonical => read_digest,
            store::Form::Pretty => store::digest(&points),
        };
        Ok((points, Some(digest)))
    }

    /// The points and the policy, with the policy's problems collected
    /// (`verify` reports them as findings).
    pub fn inputs(&self) -> Result<Inputs> {
        self.inputs_with(Digest::Compute)
    }

    /// [`Workspace::inputs`], computing the points digest or not.
    pub fn inputs_with(&self, digest: Digest) -> Result<Inputs> {
        let (policy, mut problems, policy_text) = self.policy_with_problems()?;
        let path = self.points_path();
        if !path.exists() {
            bail!("{}: cannot read file; run `vramfit ingest` first to create it", fsio::shown(&path));
        }
        let (points, digest) = self.read_store(&policy.registry, digest)?;
        problems.extend(policy.unknown_ids(&points));
        let policy_digest = fsio::sha256_tag(policy_text.as_bytes());
        let traces = self.traces(&policy.registry)?;
        Ok(Inputs { points, points_digest: digest, policy, policy_digest, problems, traces })
    }

    /// The inputs, refusing any policy problem (`fit` and `emit`).
    /// The traced rows of `measurements/traced/` (docs/traced.md); none
    /// when the folder is missing.
    pub fn traces(&self, registry: &crate::registry::Registry) -> Result<Vec<crate::points::traced::TracedRow>> {
        crate::points::traced::read_dir(
            &self.root().join("measurements").join("traced"),
            "measurements/traced",
            registry,
        )
    }

    pub fn inputs_strict(&self, digest: Digest) -> Result<Inputs> {
        let inputs = self.inputs_with(digest)?;
        if !inputs.problems.is_empty() {
            let all: Vec<String> = inputs.problems.iter().map(|p| p.message.clone()).collect();
            bail!("{}", all.join("\n"));
        }
        Ok(inputs)
    }
}
