//! Where the coefficients that price a query come from: the copy compiled
//! into the binary or a file, loaded through the contract's strict loader
//! (so `reserve`, `plan` and `diff` price only files `verify` would load).

use super::{Coefficients, Query};
use crate::contract::{self, EMBEDDED};
use crate::error::{Code, Result};
use std::path::{Path, PathBuf};

/// Where the coefficients come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoefficientSource {
    /// The copy compiled into the binary.
    Embedded,
    /// A file (`--coefficients FILE`, or `fits/vae.json` under `--root`).
    File(PathBuf),
}

impl CoefficientSource {
    /// The coefficients, loaded and indexed for pricing. Every refusal is
    /// about the file ([`Code::File`]).
    pub fn load(&self) -> Result<Coefficients> {
        self.load_any().map_err(|e| e.with_code(Code::File))
    }

    fn load_any(&self) -> Result<Coefficients> {
        let version = env!("CARGO_PKG_VERSION");
        let (mut c, identity) = match self {
            CoefficientSource::Embedded => (
                Coefficients::new(
                    contract::parse(EMBEDDED, "embedded fits/vae.json")?,
                    format!("embedded fits/vae.json (vramfit {version})"),
                )?,
                format!(
                    "bundled fits/vae.json of vramfit {version}, {}",
                    crate::digest::sha256_tag(EMBEDDED.as_bytes())
                ),
            ),
            CoefficientSource::File(p) => {
                let text = crate::io::read_text(p)?;
                let c = Coefficients::new(contract::parse(&text, &crate::io::shown(p))?, crate::io::shown(p))?;
                (c, format!("a coefficients file, {}", crate::digest::sha256_tag(text.as_bytes())))
            }
        };
        c.identity = identity;
        Ok(c)
    }

    /// Whether the compiled-in copy answers while `local` (the folder's own
    /// `fits/vae.json`) holds other bytes: a maintainer who just ran `emit`
    /// would otherwise read the old figures without a word. A file that
    /// cannot be read differs from nothing.
    pub fn embedded_while_differs(&self, local: &Path) -> bool {
        matches!(self, CoefficientSource::Embedded)
            && crate::io::read_if_regular(local, crate::io::TEXT_LIMIT)
                .is_some_and(|bytes| bytes != EMBEDDED.as_bytes())
    }
}

/// A pricing question and the coefficients that answer it: what `reserve`
/// and a VAE `plan` are asked.
#[derive(Debug, Clone)]
pub struct QueryOptions {
    /// The pricing question, as typed.
    pub query: Query,
    /// Which coefficients price it.
    pub source: CoefficientSource,
}

impl QueryOptions {
    /// The pricing question, checked.
    pub fn query(&self) -> Result<Query> {
        if self.query.batch == 0 {
            crate::error::refuse!(crate::words::BATCH_POSITIVE.text);
        }
        Ok(self.query.clone())
    }
}
