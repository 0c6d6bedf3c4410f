//! `vramfit reserve`: what would this decode or encode reserve?

use crate::coefficients;
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::{Coefficients, Price, Pricer, Query};
use anyhow::Result;
use serde::Serialize;
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

/// The answer of `reserve`.
#[derive(Debug, Clone, Serialize)]
pub struct ReserveReport {
    #[serde(flatten)]
    pub price: Price,
    /// Which coefficients priced it.
    pub coefficients: String,
}

pub fn run(source: &CoefficientSource, q: &Query, env: &EnvSnapshot, legacy: bool) -> Result<ReserveReport> {
    let c = load(source)?;
    let price = if legacy { c.price_legacy(q, env)? } else { c.price(q, env)? };
    Ok(ReserveReport { price, coefficients: c.source.clone() })
}
