//! Where each side of a diff comes from: a coefficients file, the copy
//! compiled in, the v1 estimator, or `fits/vae.json` at a git revision
//! (read through the `git` CLI).

use super::{diff, DiffReport, Grid, Side};
use crate::coefficients;
use crate::pricing::source::CoefficientSource;
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

    /// The side's coefficients; `None` for the v1 estimator.
    fn load(&self, ws: &Workspace) -> Result<Option<Coefficients>> {
        Ok(match self {
            SideSpec::Legacy => None,
            SideSpec::Embedded => Some(CoefficientSource::Embedded.load()?),
            SideSpec::File(p) => Some(CoefficientSource::File(p.clone()).load()?),
            SideSpec::Git(rev) => Some(at_revision(ws, rev)?),
        })
    }
}

/// What to compare: the two sides and the grid they are priced on.
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
    Ok(Coefficients::new(coefficients::parse(&text, &name)?, name)?)
}

fn shown(p: &Path) -> String {
    crate::fsio::shown(p)
}

/// A loaded file, or the v1 estimator priced with the other side's tables.
fn side<'a>(own: &'a Option<Coefficients>, other: &'a Option<Coefficients>) -> Result<Side<'a>> {
    Ok(match own {
        Some(c) => Side::File(c),
        None => Side::Legacy(other.as_ref().ok_or_else(|| anyhow!("diff: only one side may be `legacy`"))?),
    })
}

/// Loads both sides (a git revision is read from the repository holding
/// `root`) and prices them on the grid.
pub fn of_sides(root: &Path, opts: &DiffOptions) -> Result<DiffReport> {
    let ws = Workspace::new(root);
    let (b, a) = (opts.before.load(&ws)?, opts.after.load(&ws)?);
    let before = side(&b, &a)?;
    let after = side(&a, &b)?;
    diff((&opts.before.label(), &before), (&opts.after.label(), &after), &opts.grid)
}
