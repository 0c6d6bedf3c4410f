//! How a stored point is read: its fields flat, the key assembled after.
//! `Point` embeds its `LineKey` with serde's `flatten` when it is written;
//! reading through `flatten` buffers every field first and was a fifth of
//! loading 10^5 points. Writing stays with `Point`'s own derive, and the
//! store compares every line with its re-serialisation, so the two forms
//! cannot drift apart unnoticed.

use super::{LineKey, Point};
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Deserialize)]
pub(super) struct PointWire {
    id: String,
    vae: String,
    op: Op,
    tile: u32,
    conv_backend: ConvBackend,
    allocator: Allocator,
    os: Os,
    dtype: Dtype,
    model: Option<String>,
    loaded_dtype: Option<Dtype>,
    width: u64,
    height: u64,
    batch: u64,
    pixels: u64,
    demand_bytes: u64,
    reserved_bytes: Option<u64>,
    allocated_bytes: Option<u64>,
    driver_bytes: Option<u64>,
    source: String,
    device: Option<String>,
    torch: Option<String>,
    run: Option<u32>,
    runs: Option<u32>,
    aggregate: Option<String>,
    context: Option<String>,
    note: Option<String>,
    metadata: BTreeMap<String, String>,
}

impl From<PointWire> for Point {
    fn from(w: PointWire) -> Point {
        let PointWire { id, vae, op, tile, conv_backend, allocator, os, dtype, .. } = w;
        Point {
            id,
            key: LineKey { vae, op, tile, conv_backend, allocator, os, dtype },
            model: w.model,
            loaded_dtype: w.loaded_dtype,
            width: w.width,
            height: w.height,
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
