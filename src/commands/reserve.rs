//! `vramfit reserve`: what would this decode or encode reserve? Builds the
//! query and picks the coefficients from typed options, then prices.

use crate::coefficients;
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::{Coefficients, Pricer, Query, ReserveReport};
use anyhow::{bail, Result};
use std::path::PathBuf;

/// Where the coefficients come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoefficientSource {
    /// The copy compiled into the binary.
    Embedded,
    /// A file (`--coefficients FILE`, or `fits/vae.json` under `--root`).
    File(PathBuf),
}

/// Loads the coefficients a query is priced with.
pub fn load(source: &CoefficientSource) -> Result<Coefficients> {
    match source {
        CoefficientSource::Embedded => Coefficients::new(
            coefficients::parse(coefficients::EMBEDDED, "embedded fits/vae.json")?,
            format!("embedded fits/vae.json (vramfit {})", env!("CARGO_PKG_VERSION")),
        ),
        CoefficientSource::File(p) => Coefficients::new(coefficients::load(p)?, crate::fsio::shown(p)),
    }
}

/// What `reserve` (and a VAE `plan`) is asked: the query, and which
/// coefficients price it.
#[derive(Debug, Clone)]
pub struct QueryOptions {
    /// The pricing question, as typed.
    pub query: Query,
    /// `--coefficients FILE`.
    pub coefficients: Option<PathBuf>,
    /// An explicit `--root`, whose `fits/vae.json` then prices.
    pub root: Option<PathBuf>,
}

impl QueryOptions {
    /// The pricing question, checked.
    pub fn query(&self) -> Result<Query> {
        if self.query.batch == 0 {
            bail!("--batch must be at least 1");
        }
        Ok(self.query.clone())
    }

    /// `--coefficients FILE`, else `fits/vae.json` under an explicit
    /// `--root`, else the compiled-in copy: never the folder a command
    /// happens to run in.
    pub fn source(&self) -> CoefficientSource {
        match (&self.coefficients, &self.root) {
            (Some(f), _) => CoefficientSource::File(f.clone()),
            (None, Some(r)) => CoefficientSource::File(crate::workspace::Workspace::new(r).coefficients_path()),
            (None, None) => CoefficientSource::Embedded,
        }
    }
}

/// The `fits/vae.json` of the folder the command runs in, when the answer
/// comes from the compiled-in copy and that file differs from it: a
/// maintainer who just ran `emit` in a checkout would otherwise read the
/// old figures without a word. (The folder is never priced from unasked:
/// `--root .` is the way to use it.)
pub fn local_copy_differs(source: &CoefficientSource) -> Option<PathBuf> {
    if !matches!(source, CoefficientSource::Embedded) {
        return None;
    }
    let local = PathBuf::from("fits").join("vae.json");
    let bytes = std::fs::read(&local).ok()?;
    (bytes != coefficients::EMBEDDED.as_bytes()).then_some(local)
}

pub fn run(opts: &QueryOptions, env: &EnvSnapshot, legacy: bool) -> Result<ReserveReport> {
    let c = load(&opts.source())?;
    let q = opts.query()?;
    let price = if legacy { c.price_legacy(&q, env)? } else { c.price(&q, env)? };
    Ok(ReserveReport { price, coefficients: c.source.clone() })
}

/// `reserve --max-tile-for BUDGET`: the largest tile whose price fits.
pub fn max_tile(opts: &QueryOptions, env: &EnvSnapshot, budget: u64) -> Result<crate::plan::MaxTileReport> {
    let c = load(&opts.source())?;
    let q = opts.query()?;
    let known = c.known_tiles().to_vec();
    let search = crate::plan::largest_tile(&c, &q, env, budget, None, &known)?;
    Ok(crate::plan::MaxTileReport { budget_bytes: budget, search, coefficients: c.source.clone() })
}
