//! `vramfit diff [BEFORE] [AFTER]`: the before/after table of an estimator
//! change. Each side is a coefficients file, `embedded`, `legacy` or
//! `git:REV` (the file at a revision, read through the `git` CLI).

use super::reserve::{load, CoefficientSource};
use crate::coefficients;
use crate::diff::{self, DiffReport, Grid, Side};
use crate::pricing::Coefficients;
use crate::workspace::Workspace;
use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};

/// Where one side's coefficients come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SideSpec {
    /// The coefficients compiled into the binary.
    Embedded,
    /// The v1 estimator.
    Legacy,
    /// `fits/vae.json` at a git revision of the repository holding the root.
    Git(String),
    /// A coefficients file.
    File(PathBuf),
}

impl SideSpec {
    /// `embedded`, `legacy`, `git:REV`, or a path.
    pub fn parse(s: &str) -> SideSpec {
        match s {
            "embedded" => SideSpec::Embedded,
            "legacy" => SideSpec::Legacy,
            _ => match s.strip_prefix("git:") {
                Some(rev) => SideSpec::Git(rev.to_string()),
                None => SideSpec::File(PathBuf::from(s)),
            },
        }
    }

    fn label(&self) -> String {
        match self {
            SideSpec::Embedded => "embedded".into(),
            SideSpec::Legacy => "legacy".into(),
            SideSpec::Git(r) => format!("git:{r}"),
            SideSpec::File(p) => crate::fsio::shown(p),
        }
    }
}

/// Typed options of `diff`.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    pub before: SideSpec,
    pub after: SideSpec,
    pub grid: Grid,
}

/// `fits/vae.json` as it is at `rev`, through `git show`.
fn at_revision(ws: &Workspace, rev: &str) -> Result<Coefficients> {
    // A revision is never an option (`git:--output=FILE` would make git
    // write FILE), never empty, and has no `:` (the path is ours to add).
    let bad =
        rev.is_empty() || rev.starts_with('-') || rev.chars().any(|c| c.is_whitespace() || c.is_control() || c == ':');
    if bad {
        bail!(
            "git:{}: not a revision (a branch, tag, commit or HEAD~N; no leading '-', no spaces, no ':')",
            rev.escape_debug()
        );
    }
    let root = ws.root();
    let inside = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "--is-inside-work-tree"])
        .output()
        .with_context(|| "git:REV needs the `git` command, and it cannot be run".to_string())?;
    if !inside.status.success() {
        bail!("git:{rev}: {} is not inside a git repository; give a coefficients file instead", shown(root));
    }
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["show", "--end-of-options"])
        .arg(format!("{rev}:./fits/vae.json"))
        .output()?;
    if !out.status.success() {
        bail!("git:{rev}: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let text = String::from_utf8(out.stdout).map_err(|_| anyhow!("git:{rev}: fits/vae.json is not UTF-8"))?;
    let name = format!("fits/vae.json at {rev}");
    Coefficients::new(coefficients::parse(&text, &name)?, name)
}

fn shown(p: &Path) -> String {
    crate::fsio::shown(p)
}

fn load_side(ws: &Workspace, spec: &SideSpec) -> Result<Option<Coefficients>> {
    Ok(match spec {
        SideSpec::Legacy => None,
        SideSpec::Embedded => Some(load(&CoefficientSource::Embedded)?),
        SideSpec::File(p) => Some(load(&CoefficientSource::File(p.clone()))?),
        SideSpec::Git(rev) => Some(at_revision(ws, rev)?),
    })
}

/// A loaded file, or the v1 estimator priced with the other side's tables.
fn side<'a>(own: &'a Option<Coefficients>, other: &'a Option<Coefficients>) -> Result<Side<'a>> {
    Ok(match own {
        Some(c) => Side::File(c),
        None => Side::Legacy(other.as_ref().ok_or_else(|| anyhow!("diff: only one side may be `legacy`"))?),
    })
}

pub fn run(root: &Path, opts: &DiffOptions) -> Result<DiffReport> {
    let ws = Workspace::new(root);
    let (b, a) = (load_side(&ws, &opts.before)?, load_side(&ws, &opts.after)?);
    let before = side(&b, &a)?;
    let after = side(&a, &b)?;
    diff::diff((&opts.before.label(), &before), (&opts.after.label(), &after), &opts.grid)
}
