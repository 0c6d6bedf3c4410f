//! `vramfit export --host invokeai|comfyui`: the shipped lines as a host's
//! own constants, for a host that cannot take a dependency (docs/hosts.md).
//!
//! Both hosts price a VAE as `pixels × element size × constant`; a vramfit
//! line is `ceil(slope × pixels) + base`, and its slope does not follow the
//! element size, so each line becomes its own constant: bytes per pixel per
//! element byte (`slope / element bytes`, exact) and a base in bytes, per
//! (family, op, tile, backend, allocator, OS, dtype). Priced the host's way
//! (the export's `formula`), every entry equals `vramfit reserve` for its
//! own key inside its measured range; what the host's formula cannot say
//! (a video line's working set and clip, an attention phase on a
//! math-kernel platform, past the measured range) is written per entry.

use crate::contract::file::{CoefficientsFile, ShippedLine};
use crate::exact::{exact_decimal, Ratio, MIB};
use anyhow::{bail, Result};
use serde::Serialize;

/// The hosts an export is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Host {
    Invokeai,
    Comfyui,
}

impl Host {
    pub fn parse(text: &str) -> Result<Host> {
        match text.trim().to_ascii_lowercase().as_str() {
            "invokeai" => Ok(Host::Invokeai),
            "comfyui" => Ok(Host::Comfyui),
            other => bail!("--host {other}: an export is written for invokeai or comfyui"),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Host::Invokeai => "invokeai",
            Host::Comfyui => "comfyui",
        }
    }

    fn formula(self) -> &'static str {
        match self {
            Host::Invokeai => {
                "working_memory = math.ceil(h * w * batch * element_size * per_element) + base_bytes, with h and w \
                 the image's pixels (LATENT_SCALE_FACTOR x the latents' for a decode; the whole image for a tiled \
                 key too: vramfit's tile lines are fitted on it) and element_size the run dtype's bytes"
            }
            Host::Comfyui => {
                "memory_used = math.ceil(shape[2] * shape[3] * 64 * dtype_size(dtype) * per_element) + base_bytes \
                 for a decode (the latents' shape; 64 = 8 x 8 pixels a latent pixel), math.ceil(shape[2] * \
                 shape[3] * dtype_size(dtype) * per_element) + base_bytes for an encode (the pixels'), per batch \
                 item"
            }
        }
    }
}

/// One line as the host's constants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub vae: String,
    pub op: crate::vocab::Op,
    /// The spatial tile (0: untiled).
    pub tile: u32,
    pub conv_backend: crate::vocab::ConvBackend,
    pub allocator: crate::vocab::Allocator,
    pub os: crate::vocab::Os,
    pub dtype: crate::vocab::Dtype,
    /// Bytes per pixel per element byte, exact decimal.
    pub per_element: String,
    /// The line's base plus `first_use_bytes`: a host's formula has no
    /// warm answer, so its constant covers a fresh process's first run.
    pub base_bytes: u64,
    /// The platform's first use inside `base_bytes` (0: none declared for
    /// its backend; docs/fit.md, "First use").
    pub first_use_bytes: u64,
    /// The measured range, pixels: inside it the entry is vramfit's answer.
    pub size_range: Option<[u64; 2]>,
    /// What the host's formula cannot say for this key (empty: nothing).
    pub caveats: Vec<String>,
}

/// The export: provenance, the formula, the entries and what was left out.
#[derive(Debug, Clone, Serialize)]
pub struct Export {
    pub format: &'static str,
    pub host: Host,
    /// `sha256:` of the coefficients file exported.
    pub coefficients_digest: String,
    /// The exported file relative to the root (`fits/vae.json`): never a path of the machine that exported it.
    pub coefficients: String,
    pub vramfit: &'static str,
    pub formula: &'static str,
    pub entries: Vec<Entry>,
    /// Lines the host's formula cannot express at all, with why.
    pub not_exported: Vec<String>,
}

/// The format name an export declares.
pub const FORMAT: &str = "vramfit-host-constants";

pub fn export(file: &CoefficientsFile, bytes: &[u8], host: Host) -> Result<Export> {
    let mut entries = Vec::new();
    let mut not_exported = Vec::new();
    for line in &file.lines {
        if line.key.temporal_tile.is_some() {
            not_exported.push(format!(
                "{}: a video line prices one working set (tile x working frames) plus copies of the clip; \
                 the host's image formula has neither term",
                line.key
            ));
            continue;
        }
        entries.push(entry(file, line)?);
    }
    Ok(Export {
        format: FORMAT,
        host,
        coefficients_digest: crate::fsio::sha256_tag(bytes),
        // Relative to the root, whatever spelling of it was typed: an
        // export is meant to ship, and holds no path of the machine that made it.
        coefficients: crate::findings::SHIPPED_FILE.to_string(),
        vramfit: env!("CARGO_PKG_VERSION"),
        formula: host.formula(),
        entries,
        not_exported,
    })
}

fn entry(file: &CoefficientsFile, line: &ShippedLine) -> Result<Entry> {
    let k = &line.key;
    let centi = line.slope_centi()?;
    let per_element = Ratio::new(i128::from(centi), 100 * i128::from(k.dtype.elem_bytes()))?;
    let mut caveats = Vec::new();
    let math = file.attention.as_ref().and_then(|a| a.platforms.iter().find(|p| p.conv_backend == k.conv_backend));
    let attends = file.registry.get(k.vae.as_str()).is_some_and(|e| e.attention.is_some());
    if let (Some(p), true) = (math, attends) {
        caveats.push(format!(
            "on {} the mid-block's attention scores ({} B each) set the price where they need more than this \
             line: the host's formula has no such term",
            p.conv_backend,
            exact_decimal(&p.bytes_per_score)
        ));
    }
    if k.tile > 0 {
        caveats.push(
            "monotone: vramfit never prices a tiled key below what its platform's untiled line prices a smaller \
             image; where that is higher (a small image, a large tile) its answer is above this entry"
                .to_string(),
        );
    }
    if file.traced.as_ref().is_some_and(|t| t.shapes.iter().any(|s| s.vae == k.vae.as_str() && s.op == k.op)) {
        caveats.push(
            "past the measured range vramfit follows the family's traced shape where it grows faster than the line"
                .to_string(),
        );
    }
    let first_use =
        crate::contract::first_use::first_use_for(&file.first_use, k.platform()).map_or(0, |(t, _)| t.mib * MIB);
    Ok(Entry {
        vae: k.vae.to_string(),
        op: k.op,
        tile: k.tile,
        conv_backend: k.conv_backend,
        allocator: k.allocator,
        os: k.os,
        dtype: k.dtype,
        per_element: exact_decimal(&per_element),
        base_bytes: line.base_mib * MIB + first_use,
        first_use_bytes: first_use,
        size_range: line.size_range,
        caveats,
    })
}
