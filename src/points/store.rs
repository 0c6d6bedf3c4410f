//! The canonical points file `measurements/vae.json`: every point, sorted by
//! id, in one byte form for the same content. This module is the one door
//! to it: the form, the invariants, the writer, and the readers
//! (`read`, `parse`, re-exported from `stream`).
//!
//! The scale budget (docs/DESIGN.md, "Scale"): the hand codec (`codec`),
//! the batched reader on every core (`stream`) and the writer's encoding
//! beside it are for stores of 10⁵–10⁶ points, where serde's generic path
//! was most of a command's time; serde (`wire`) is the reference path,
//! used for a pretty-printed store and to prove the codec (a test holds
//! the two to the same points and bytes).
//!
//! Every command that reads the store checks its invariants first (ids
//! unique and sorted, canonical spellings, no unknown or missing fields,
//! `pixels = width × height × batch`, `demand_bytes` = the largest measured
//! delta, a registered family), so nothing is ever fitted, priced or
//! verified on a store that a hand edit or a bad merge has broken.

use super::codec;
pub use super::stream::{parse, read, Form};
use super::Point;
use crate::exact::{MAX_BYTES, MAX_PIXELS};
use crate::fsio::DigestWriter;
use crate::places::InputError;
use crate::registry::Registry;
use anyhow::{anyhow, bail, Result};
use serde_json::Value;

pub const FORMAT: &str = "vramfit-points";
pub const VERSION: u32 = 1;

/// The first line of the store: everything before the first point.
pub(super) const HEAD: &str = "{\"format\":\"vramfit-points\",\"version\":1,\"points\":[";
/// The last line of the store.
pub(super) const TAIL: &str = "]}";
/// Fewer bytes than any stored point's line takes (its field names and
/// the shortest values are longer): the store's length over this bounds
/// its point count.
pub(super) const MIN_LINE: u64 = 300;

/// The digest of the bytes [`write`] writes for these points.
pub fn digest(points: &[Point]) -> String {
    let mut digest = DigestWriter::default();
    write(points, &mut |bytes| digest.update(bytes));
    digest.finish()
}

/// A line the codec does not read: serde reads it, and it is accepted only
/// if it is exactly the point's own canonical line; otherwise the message
/// names the field that is not canonical, unknown or missing.
pub(super) fn parse_line(json: &str, file: &str, number: usize) -> Result<Point> {
    let raw_id = || {
        serde_json::from_str::<Value>(json)
            .ok()
            .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| format!("line {number}"))
    };
    let p: Point = serde_json::from_str(json)
        .map_err(|e| anyhow!(InputError::at_line(file, number, format!("point '{}': {e}", raw_id()))))?;
    if let Some((key, _)) = crate::fsio::duplicate_key(json) {
        bail!(InputError::at_line(file, number, format!("point '{}': key '{key}' appears twice in one object", p.id)));
    }
    let mut written = Vec::with_capacity(json.len());
    codec::write_point(&mut written, &p);
    if written != json.as_bytes() {
        let at = PointPlace { file, id: p.id.as_str() };
        let raw: Value = serde_json::from_str(json).map_err(|e| anyhow!(at.error(format!("{e}"))))?;
        canonical(&raw, &p, &at)?;
        bail!(InputError::at_line(
            file,
            number,
            format!("point '{}': not in the canonical byte form (fields in order, no spaces)", p.id)
        ));
    }
    Ok(p)
}

pub(super) fn ordered(prev: &Point, next: &Point, file: &str) -> Result<()> {
    if prev.id >= next.id {
        let what = if prev.id == next.id { "appears twice" } else { "is stored before a smaller id" };
        bail!(InputError::in_file(
            file,
            format!(
                "point '{}': id: {what} ('{}' follows it); the store is kept sorted by unique id — \
             restore it from version control, or delete it and re-run `vramfit ingest` on the raw files",
                prev.id, next.id
            )
        ));
    }
    Ok(())
}

/// The first store format (one pretty-printed document), read whole.
pub(super) fn parse_whole(text: &str, file: &str, registry: &Registry) -> Result<Vec<Point>> {
    let raw: Value = serde_json::from_str(text)
        .map_err(|e| anyhow!(InputError::at_line(file, e.line(), format!("not valid JSON: {e}"))))?;
    crate::fsio::refuse_duplicate_keys(text, file)?;
    let format = raw.get("format").and_then(Value::as_str).unwrap_or("");
    let version = raw.get("version").and_then(Value::as_u64).unwrap_or(0);
    if format != FORMAT || version != u64::from(VERSION) {
        bail!(InputError::in_file(
            file,
            format!("format '{format}' version {version} is not {FORMAT} version {VERSION}")
        ));
    }
    let raw_points = raw
        .get("points")
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow!(InputError::in_file(file, "points: missing list")))?;
    let mut points = Vec::with_capacity(raw_points.len());
    for (i, rp) in raw_points.iter().enumerate() {
        let id = rp.get("id").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| format!("#{}", i + 1));
        let at = PointPlace { file, id: &id };
        let p: Point = serde_json::from_value(rp.clone()).map_err(|e| anyhow!(at.error(format!("{e}"))))?;
        canonical(rp, &p, &at)?;
        check_point(&p, registry, file)?;
        points.push(p);
    }
    for w in points.windows(2) {
        ordered(&w[0], &w[1], file)?;
    }
    if raw.as_object().is_some_and(|o| o.keys().any(|k| !["format", "version", "points"].contains(&k.as_str()))) {
        bail!(InputError::in_file(file, "unknown field at the top level (expected format, version, points)"));
    }
    Ok(points)
}

/// A stored point must be exactly what vramfit writes for it: the canonical
/// spelling of every value, every field present, no unknown field.
fn canonical(raw: &Value, p: &Point, at: &PointPlace) -> Result<()> {
    let written = serde_json::to_value(p).map_err(|e| anyhow!(at.error(format!("{e}"))))?;
    let (Value::Object(r), Value::Object(w)) = (raw, &written) else { bail!(at.error("expected an object")) };
    if let Some(k) = r.keys().find(|k| !w.contains_key(*k)) {
        bail!(at.field_error(k, "unknown field"));
    }
    for (k, wv) in w {
        match r.get(k) {
            None => bail!(at.field_error(k, "missing field (write null when a value is unknown)")),
            Some(rv) if rv != wv => {
                bail!(at.field_error(k, format!("{rv} is not in canonical form (vramfit writes {wv})")))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The invariants of one point; the message is only formatted on failure
/// (a million points must not each pay for it).
pub(super) fn check_point(p: &Point, registry: &Registry, file: &str) -> Result<()> {
    let ok = !p.id.is_empty()
        && p.id.trim().len() == p.id.len()
        && !p.source.trim().is_empty()
        && p.width > 0
        && p.height > 0
        && p.batch > 0
        && crate::exact::pixels(p.width, p.height, p.batch) == Some(p.pixels)
        && p.frames > 0
        && crate::exact::pixel_frames(p.pixels, p.frames).is_some()
        && [p.reserved_bytes, p.allocated_bytes, p.driver_bytes].into_iter().flatten().max() == Some(p.demand_bytes)
        && p.demand_bytes > 0
        && p.demand_bytes <= MAX_BYTES
        && p.run != Some(0)
        && p.runs != Some(0)
        && registry.0.contains_key(p.key.vae.as_str());
    if ok {
        return Ok(());
    }
    let at = &PointPlace { file, id: p.id.as_str() };
    if p.id.trim().is_empty() || p.id.trim() != p.id {
        bail!(at.error("id: empty or padded with spaces"));
    }
    if p.source.trim().is_empty() {
        bail!(at.error("source: empty (every point names its source)"));
    }
    if !registry.0.contains_key(p.key.vae.as_str()) {
        bail!(at.error(format!(
            "vae: '{}' is not a family of the registry in fits/policy.toml ({})",
            p.key.vae,
            registry.describe()
        )));
    }
    for (field, v) in [("width", p.width), ("height", p.height), ("batch", p.batch)] {
        if v == 0 {
            bail!(at.field_error(field, "must be a positive integer"));
        }
    }
    let pixels = crate::exact::pixels(p.width, p.height, p.batch);
    if pixels != Some(p.pixels) {
        let want = pixels.map(|x| x.to_string()).unwrap_or_else(|| format!("more than {MAX_PIXELS}"));
        bail!(at.error(format!(
            "pixels: {} but width × height × batch = {}×{}×{} = {want}",
            p.pixels, p.width, p.height, p.batch
        )));
    }
    if p.frames == 0 {
        bail!(at.error("frames: must be a positive integer"));
    }
    if crate::exact::pixel_frames(p.pixels, p.frames).is_none() {
        bail!(at.error(format!(
            "frames: {} × {} px exceeds {MAX_PIXELS} pixel-frames: too large to price",
            p.frames, p.pixels
        )));
    }
    let largest = [p.reserved_bytes, p.allocated_bytes, p.driver_bytes].into_iter().flatten().max();
    match largest {
        None => {
            bail!(at.error("demand_bytes: no measured delta (reserved_bytes, allocated_bytes, driver_bytes) behind it"))
        }
        Some(m) if m != p.demand_bytes => {
            bail!(at.error(format!("demand_bytes: {} but the largest measured delta is {m}", p.demand_bytes)))
        }
        _ => {}
    }
    if p.demand_bytes == 0 || p.demand_bytes > MAX_BYTES {
        bail!(at.error(format!("demand_bytes: {} is outside 1..={MAX_BYTES}", p.demand_bytes)));
    }
    for (field, v) in [("run", p.run), ("runs", p.runs)] {
        if v == Some(0) {
            bail!(at.field_error(field, "must be a positive integer or null"));
        }
    }
    let texts = [
        ("id", Some(p.id.as_str())),
        ("source", Some(p.source.as_str())),
        ("model", p.model.as_deref()),
        ("device", p.device.as_deref()),
        ("torch", p.torch.as_deref()),
        ("note", p.note.as_deref()),
    ];
    let metadata = p.metadata.iter().flat_map(|(k, v)| [("metadata key", Some(k)), ("metadata", Some(v.as_str()))]);
    for (field, v) in texts.into_iter().chain(metadata) {
        if let Some(problem) = v.and_then(crate::points::row::field_problem) {
            bail!(at.field_error(field, problem));
        }
    }
    Ok(())
}

/// The canonical bytes of a set of points, whatever their order: one JSON
/// document, one point a line (compact, fields in a fixed order) between a
/// first and a last line, so a diff of new measurements shows one line a
/// point and the file can be read and written as a stream.
pub fn to_bytes(points: &[Point]) -> Vec<u8> {
    let mut out = Vec::with_capacity(points.len() * 512 + 64);
    write(points, &mut |bytes| out.extend_from_slice(bytes));
    out
}

/// [`to_bytes`], handed to `sink` a piece at a time (about 1 MiB each).
/// A large store is encoded on a second thread while this one hands the
/// pieces on (at 10^5 points writing was a quarter of `ingest`, half of
/// it the encoding); the pieces are the same either way.
pub fn write(points: &[Point], sink: &mut dyn FnMut(&[u8])) {
    let mut sorted: Vec<&Point> = points.iter().collect();
    if !sorted.is_sorted_by(|a, b| a.id <= b.id) {
        sorted.sort_by(|a, b| a.id.cmp(&b.id));
    }
    if sorted.len() < crate::par::FEW_POINTS {
        encode(&sorted, &mut |piece| {
            sink(piece);
            Some(std::mem::take(piece))
        });
        return;
    }
    std::thread::scope(|scope| {
        let (pieces, received) = std::sync::mpsc::sync_channel::<Vec<u8>>(4);
        // Emptied pieces go back to the encoders: no fresh pages per piece.
        let (back, spare) = std::sync::mpsc::channel::<Vec<u8>>();
        scope.spawn(move || {
            // Runs of points encoded two at a time, side by side, and sent
            // in order while this thread writes the ones before (encoding
            // 10⁶ points on one thread was a fifth of an `ingest`).
            let runs: Vec<&[&Point]> = sorted.chunks(RUN).collect();
            let mut at = 0;
            for pair in runs.chunks(2) {
                let mut bufs = [spare.try_recv().unwrap_or_default(), spare.try_recv().unwrap_or_default()];
                let [a, b] = &mut bufs;
                let (first, second) = (pair[0], pair.get(1).copied().unwrap_or_default());
                crate::par::join(
                    !second.is_empty(),
                    || encode_run(first, at, sorted.len(), a),
                    || encode_run(second, at + first.len(), sorted.len(), b),
                );
                at += first.len() + second.len();
                for buf in bufs.into_iter().filter(|b| !b.is_empty()) {
                    if pieces.send(buf).is_err() {
                        return;
                    }
                }
            }
        });
        for mut piece in received {
            sink(&piece);
            piece.clear();
            let _ = back.send(piece);
        }
    });
}

/// Points a piece of the store holds (about 1 MiB of an observed row's
/// points; less of smaller ones).
const RUN: usize = 1024;

/// The bytes of `run`, the points from index `at` of `total`: the store's
/// head before the first point, a comma after every point but the last,
/// and its tail after that.
fn encode_run(run: &[&Point], at: usize, total: usize, buf: &mut Vec<u8>) {
    buf.clear();
    if run.is_empty() {
        return;
    }
    if at == 0 {
        buf.extend_from_slice(HEAD.as_bytes());
        buf.push(b'\n');
    }
    for (i, p) in run.iter().enumerate() {
        codec::write_point(buf, p);
        if at + i + 1 < total {
            buf.push(b',');
        }
        buf.push(b'\n');
    }
    if at + run.len() == total {
        buf.extend_from_slice(TAIL.as_bytes());
        buf.push(b'\n');
    }
}

/// Encodes the sorted points into pieces of about 1 MiB, handing each to
/// `full`, which returns the buffer for the next piece (None: stop).
fn encode(sorted: &[&Point], full: &mut dyn FnMut(&mut Vec<u8>) -> Option<Vec<u8>>) {
    const PIECE: usize = 1 << 20;
    let mut buf = Vec::with_capacity(PIECE + 4096);
    buf.extend_from_slice(HEAD.as_bytes());
    buf.push(b'\n');
    for (i, p) in sorted.iter().enumerate() {
        codec::write_point(&mut buf, p);
        if i + 1 < sorted.len() {
            buf.push(b',');
        }
        buf.push(b'\n');
        if buf.len() >= PIECE {
            let Some(mut next) = full(&mut buf) else { return };
            next.clear();
            next.reserve(PIECE + 4096);
            buf = next;
        }
    }
    buf.extend_from_slice(TAIL.as_bytes());
    buf.push(b'\n');
    let _ = full(&mut buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The store encoded beside the writer gives the bytes encoded in
    /// line, piece for piece, for stores either side of the cut-over.
    #[test]
    fn a_large_store_is_written_as_a_small_one_is() {
        // A registry of the one family the rows name, built here: the
        // store sits below the policy that registers families in a root.
        let sd = crate::registry::VaeEntry {
            models: Vec::new(),
            params: None,
            attention: None,
            fp32_switch: false,
            video: None,
            ambiguous: Default::default(),
            class: None,
        };
        let registry = crate::registry::Registry([("sd".to_string(), sd)].into_iter().collect());
        let mut csv = String::from(
            "id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_bytes\n",
        );
        let n = crate::par::FEW_POINTS + 3;
        // Written out of order, so the sort is exercised too.
        for j in (0..n).rev() {
            let (w, h) = (64 * (4 + (j * 7) % 61) as u64, 64 * (4 + (j * 13) % 61) as u64);
            csv.push_str(&format!(
                "w-{j:06},write test,cudnn,native,linux,sd,decode,0,fp16,{w},{h},1,{}\n",
                3000 * w * h
            ));
        }
        let points = crate::points::csv_input::parse_csv(csv.as_bytes(), "w.csv", &registry).unwrap().points;
        for count in [0, 1, 5000, crate::par::FEW_POINTS - 1, n] {
            let some = &points[..count];
            let mut sorted: Vec<&Point> = some.iter().collect();
            sorted.sort_by(|a, b| a.id.cmp(&b.id));
            let mut in_line: Vec<Vec<u8>> = Vec::new();
            encode(&sorted, &mut |piece| {
                in_line.push(piece.clone());
                Some(std::mem::take(piece))
            });
            let mut written: Vec<Vec<u8>> = Vec::new();
            write(some, &mut |piece| written.push(piece.to_vec()));
            // The same bytes, whatever the pieces (the large path encodes runs two at a time).
            assert_eq!(written.concat(), in_line.concat(), "{count} points");
            assert_eq!(written.concat(), to_bytes(some));
        }
    }
}

/// A stored point as an error names it: `FILE: point 'ID'`; its errors
/// carry the file and the id (the line is looked up in the store).
#[derive(Clone, Copy)]
struct PointPlace<'a> {
    file: &'a str,
    id: &'a str,
}

impl PointPlace<'_> {
    fn error(&self, what: impl std::fmt::Display) -> InputError {
        InputError::in_file(self.file, format!("point '{}': {what}", self.id)).point(self.id)
    }

    fn field_error(&self, field: impl std::fmt::Display, what: impl std::fmt::Display) -> InputError {
        let field = field.to_string();
        self.error(format!("{field}: {what}")).field(&field)
    }
}
