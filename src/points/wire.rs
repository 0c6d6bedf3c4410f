//! A point's fields flat, in the order of the first store format.
//!
//! - Reading: `Point` embeds its `LineKey` with serde's `flatten` when it is
//!   written; reading through `flatten` buffers every field first and was a
//!   fifth of loading 10^5 points, so a stored point is read flat and its key
//!   assembled after. The store compares every line with the point's own
//!   re-serialisation, so the two forms cannot drift apart unnoticed.
//! - Hashing: a row without an id gets one derived from these bytes (see
//!   `row::derived_id`); their field order is frozen so old ids stay.

use super::{LineKey, Point};
use crate::text::Text;
use crate::vocab::{Aggregate, Allocator, Context, ConvBackend, Dtype, Op, Os};
use serde::{Deserialize, Serialize};

/// (Its schema is the read side of `Point`'s; the committed schemas are
/// of the written side, `Point` itself.)
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
pub(super) struct PointWire {
    id: Text,
    vae: Text,
    model: Option<Text>,
    op: Op,
    tile: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    temporal_tile: Option<u32>,
    conv_backend: ConvBackend,
    allocator: Allocator,
    os: Os,
    dtype: Dtype,
    loaded_dtype: Option<Dtype>,
    width: u64,
    height: u64,
    #[serde(default = "super::one", skip_serializing_if = "super::is_one")]
    frames: u64,
    batch: u64,
    pixels: u64,
    demand_bytes: u64,
    reserved_bytes: Option<u64>,
    allocated_bytes: Option<u64>,
    driver_bytes: Option<u64>,
    source: Text,
    device: Option<Text>,
    torch: Option<Text>,
    run: Option<u32>,
    runs: Option<u32>,
    aggregate: Option<Aggregate>,
    context: Option<Context>,
    note: Option<Text>,
    metadata: super::Metadata,
}

impl From<PointWire> for Point {
    fn from(w: PointWire) -> Point {
        let PointWire { id, vae, op, tile, temporal_tile, conv_backend, allocator, os, dtype, .. } = w;
        Point {
            id,
            key: LineKey { vae, op, tile, temporal_tile, conv_backend, allocator, os, dtype },
            model: w.model,
            loaded_dtype: w.loaded_dtype,
            width: w.width,
            height: w.height,
            frames: w.frames,
            batch: w.batch,
            pixels: w.pixels,
            demand_bytes: w.demand_bytes,
            reserved_bytes: w.reserved_bytes,
            allocated_bytes: w.allocated_bytes,
            driver_bytes: w.driver_bytes,
            source: w.source,
            device: w.device,
            torch: w.torch,
            run: w.run,
            runs: w.runs,
            aggregate: w.aggregate,
            context: w.context,
            note: w.note,
            metadata: w.metadata,
        }
    }
}

impl From<&Point> for PointWire {
    fn from(p: &Point) -> PointWire {
        let k = p.key.clone();
        PointWire {
            id: p.id.clone(),
            vae: k.vae,
            model: p.model.clone(),
            op: k.op,
            tile: k.tile,
            temporal_tile: k.temporal_tile,
            conv_backend: k.conv_backend,
            allocator: k.allocator,
            os: k.os,
            dtype: k.dtype,
            loaded_dtype: p.loaded_dtype,
            width: p.width,
            height: p.height,
            frames: p.frames,
            batch: p.batch,
            pixels: p.pixels,
            demand_bytes: p.demand_bytes,
            reserved_bytes: p.reserved_bytes,
            allocated_bytes: p.allocated_bytes,
            driver_bytes: p.driver_bytes,
            source: p.source.clone(),
            device: p.device.clone(),
            torch: p.torch.clone(),
            run: p.run,
            runs: p.runs,
            aggregate: p.aggregate,
            context: p.context,
            note: p.note.clone(),
            metadata: p.metadata.clone(),
        }
    }
}

/// The frozen bytes a derived id hashes: the compact JSON of the point, with
/// an empty id, fields in the first store format's order.
pub(super) fn id_bytes(p: &Point) -> Vec<u8> {
    let mut w = PointWire::from(p);
    w.id = Text::default();
    serde_json::to_vec(&w).unwrap_or_default()
}
