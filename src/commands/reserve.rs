//! `vramfit reserve`: what would this decode or encode reserve? Builds the
//! query and picks the coefficients from typed options, then prices.

use crate::coefficients;
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::{Choice, Coefficients, Pricer, Query, ReserveReport};
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
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

/// A query as the user typed it, typed: `MODEL OP WxH` and the flags
/// `reserve` and `plan` share.
#[derive(Debug, Clone)]
pub struct QueryOptions {
    /// A family or a model name.
    pub model: String,
    pub op: Op,
    /// Width and height in pixels.
    pub size: (u64, u64),
    /// Images in the batch (for `plan`: the number of items).
    pub batch: u64,
    /// Tile edge; 0 = untiled.
    pub tile: u32,
    pub dtype: Option<Dtype>,
    pub loaded_dtype: Option<Dtype>,
    /// The SD nodes' `fp32` switch.
    pub fp32: Option<bool>,
    pub backend: ConvBackend,
    pub allocator: Choice<Allocator>,
    pub os: Choice<Os>,
    /// `--coefficients FILE`.
    pub coefficients: Option<PathBuf>,
    /// An explicit `--root`, whose `fits/vae.json` then prices.
    pub root: Option<PathBuf>,
}

impl QueryOptions {
    /// The pricing question.
    pub fn query(&self) -> Result<Query> {
        if self.batch == 0 {
            bail!("--batch must be at least 1");
        }
        Ok(Query {
            vae: self.model.clone(),
            op: self.op,
            tile: self.tile,
            width: self.size.0,
            height: self.size.1,
            batch: self.batch,
            dtype: self.dtype,
            loaded_dtype: self.loaded_dtype,
            fp32: self.fp32,
            conv_backend: self.backend,
            allocator: self.allocator,
            os: self.os,
        })
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

pub fn run(opts: &QueryOptions, env: &EnvSnapshot, legacy: bool) -> Result<ReserveReport> {
    let c = load(&opts.source())?;
    let q = opts.query()?;
    let price = if legacy { c.price_legacy(&q, env)? } else { c.price(&q, env)? };
    Ok(ReserveReport { price, coefficients: c.source.clone() })
}
