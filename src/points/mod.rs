//! Measured points: the model, the measurement-CSV reader, importers for
//! third-party formats, and the canonical points file (`measurements/vae.json`).

mod codec;
pub use codec::write_u64;
pub mod csv_input;
pub mod invokeai;
pub mod merge;
pub mod row;
pub mod store;
mod stream;
pub mod summary;
pub mod traced;
mod wire;

pub use crate::contract::LineKey;
use crate::text::Text;
use crate::vocab::{Aggregate, Context, Dtype};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One measured demand of one run configuration (docs/DESIGN.md, "Points").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(from = "wire::PointWire")]
// The store refuses unknown fields (every line must re-serialise to itself).
#[schemars(deny_unknown_fields)]
pub struct Point {
    /// Stable id; derived from the content when the input gave none.
    pub id: Text,
    /// The run configuration: VAE family, op, tile, conv backend (which
    /// stands for the platform), allocator, the OS it was measured on (`any`
    /// when unknown) and the dtype the VAE ran in (`run_dtype` in the CSV).
    #[serde(flatten)]
    pub key: LineKey,
    /// Model name as given (`sdxl`, `sd15`, …), informational once the family is known.
    pub model: Option<Text>,
    /// The dtype the weights were loaded in, when recorded.
    pub loaded_dtype: Option<Dtype>,
    /// Output width in pixels (decode: decoded image; encode: input image).
    pub width: u64,
    /// Output height in pixels.
    pub height: u64,
    /// Frames of the clip (1 for an image; written only when above 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub frames: u64,
    /// Images in the batch.
    pub batch: u64,
    /// `width × height × batch`: the size an image line is fitted against
    /// (a video line's is the working set, docs/DESIGN.md, "Video").
    pub pixels: u64,
    /// `max(driver, reserved, allocated)` in bytes: what a cache must cover.
    pub demand_bytes: u64,
    /// Measured `torch.cuda.memory_reserved` delta, bytes (rounded up).
    pub reserved_bytes: Option<u64>,
    /// Measured `torch.cuda.memory_allocated` delta, bytes (rounded up).
    pub allocated_bytes: Option<u64>,
    /// Measured driver-level (nvidia-smi / rocm-smi) delta, bytes (rounded up).
    pub driver_bytes: Option<u64>,
    /// Where the figure comes from (URL, harness name and version).
    pub source: Text,
    /// GPU name, informational.
    pub device: Option<Text>,
    /// torch version, informational.
    pub torch: Option<Text>,
    /// 1-based index of this run within its fresh process.
    pub run: Option<u32>,
    /// Number of runs behind the figure.
    pub runs: Option<u32>,
    /// How the runs were aggregated.
    pub aggregate: Option<Aggregate>,
    /// Whether the VAE ran alone or inside a generation.
    pub context: Option<Context>,
    /// Free text.
    pub note: Option<Text>,
    /// Columns vramfit does not know, kept verbatim.
    pub metadata: BTreeMap<String, String>,
}

fn one() -> u64 {
    1
}

fn is_one(n: &u64) -> bool {
    *n == 1
}

impl Point {
    /// Whether the row says it was made on a simulated device (the
    /// harness's `--device fake` writes `device = fake` and "SIMULATED" in
    /// the note): figures of a memory model, never a measurement.
    pub fn is_simulated(&self) -> bool {
        let device = self.device.as_deref().unwrap_or_default().trim().to_ascii_lowercase();
        device == "fake"
            || device.starts_with("simulated")
            || self.note.as_deref().is_some_and(|n| n.contains("SIMULATED"))
    }

    /// Whether its answer leaves out the platform's first use, as a warm
    /// host's does (`--warm`): a figure taken warm, inside a generation or
    /// isolated by a host is the whole demand its line covers; a fresh
    /// one's answer adds the first use, and one that does not say is
    /// priced as the default answer is (docs/fit.md, "Demand per context").
    pub fn priced_warm(&self) -> bool {
        self.context.is_some_and(|c| c != Context::Fresh)
    }

    /// What a fresh point's driver saw beyond its reserved delta: the
    /// first use it measures (None: not fresh, or a delta missing).
    pub fn first_use_gap(&self) -> Option<u64> {
        (self.context == Some(Context::Fresh)).then_some(())?;
        Some(self.driver_bytes?.saturating_sub(self.reserved_bytes?))
    }

    /// The point's own key, with the OS it was measured on.
    pub fn key(&self) -> LineKey {
        self.key.clone()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_point_stays_small() {
        // 224: a video clip's frames and temporal tile added 8 bytes; each
        // byte is 1 MB at 10^6 points.
        assert!(std::mem::size_of::<super::Point>() <= 224, "{}", std::mem::size_of::<super::Point>());
    }
}
