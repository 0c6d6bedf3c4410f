//! The canonical points file `measurements/vae.json`: every point, sorted by
//! id, in one byte form for the same content.
//!
//! Every command that reads the store checks its invariants first (ids
//! unique and sorted, canonical spellings, no unknown or missing fields,
//! `pixels = width × height × batch`, `demand_bytes` = the largest measured
//! delta, a registered family), so nothing is ever fitted, priced or
//! verified on a store that a hand edit or a bad merge has broken.

use super::{Point, AGGREGATES, CONTEXTS};
use crate::exact::{MAX_BYTES, MAX_PIXELS};
use crate::registry::Registry;
use anyhow::{anyhow, bail, Result};
use serde_json::Value;

pub const FORMAT: &str = "vramfit-points";
pub const VERSION: u32 = 1;

/// The first line of the store: everything before the first point.
const HEAD: &str = "{\"format\":\"vramfit-points\",\"version\":1,\"points\":[";
/// The last line of the store.
const TAIL: &str = "]}";

/// Parses a points file and checks every invariant; an error names the
/// file, the point id and the field.
pub fn parse(text: &str, file: &str, registry: &Registry) -> Result<Vec<Point>> {
    Ok(parse_form(text, file, registry)?.0)
}

/// Parses a points file; the flag says whether the text is already the
/// canonical form [`to_bytes`] writes (so its bytes can be hashed as they
/// are). The canonical form is read line by line, one point a line; an
/// older store (the pretty-printed first format) is read whole, and the
/// next write converts it.
pub fn parse_form(text: &str, file: &str, registry: &Registry) -> Result<(Vec<Point>, bool)> {
    if let Some(body) = text.strip_prefix(HEAD).and_then(|b| b.strip_prefix('\n')) {
        return Ok((parse_lines(body, file, registry)?, true));
    }
    Ok((parse_whole(text, file, registry)?, false))
}

/// The canonical form: one point a line, each exactly as `to_bytes` writes
/// it (so a point that is not canonical, has an unknown field or lacks one
/// is caught by comparing its line with its re-serialisation).
fn parse_lines(body: &str, file: &str, registry: &Registry) -> Result<Vec<Point>> {
    let mut points: Vec<Point> = Vec::new();
    let mut written = Vec::with_capacity(1024);
    let mut lines = body.split('\n').enumerate().peekable();
    let mut closed = false;
    while let Some((i, line)) = lines.next() {
        let number = i + 2;
        if line == TAIL {
            let rest: Vec<&str> = lines.map(|(_, l)| l).collect();
            if rest != [""] {
                bail!("{file}:{}: text after the closing `]}}`", number + 1);
            }
            closed = true;
            break;
        }
        if lines.peek().is_none() {
            break; // the text ended without the closing line
        }
        let last = lines.peek().is_some_and(|(_, l)| *l == TAIL);
        let json = if last { line } else { line.strip_suffix(',').unwrap_or(line) };
        if !last && json.len() == line.len() {
            bail!("{file}:{number}: expected a point followed by a comma");
        }
        let raw_id = || {
            serde_json::from_str::<Value>(json)
                .ok()
                .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_string))
                .unwrap_or_else(|| format!("line {number}"))
        };
        let p: Point = serde_json::from_str(json).map_err(|e| anyhow!("{file}:{number}: point '{}': {e}", raw_id()))?;
        let at = format!("{file}: point '{}'", p.id);
        written.clear();
        serde_json::to_writer(&mut written, &p)?;
        if written != json.as_bytes() {
            let raw: Value = serde_json::from_str(json).map_err(|e| anyhow!("{at}: {e}"))?;
            canonical(&raw, &p, &at)?;
            bail!("{file}:{number}: point '{}': not in the canonical byte form (fields in order, no spaces)", p.id);
        }
        check_point(&p, registry, &at)?;
        if let Some(prev) = points.last() {
            ordered(prev, &p, file)?;
        }
        points.push(p);
    }
    if !closed {
        bail!("{file}: the store ends before its closing `]}}` (a truncated file)");
    }
    Ok(points)
}

fn ordered(prev: &Point, next: &Point, file: &str) -> Result<()> {
    if prev.id >= next.id {
        let what = if prev.id == next.id { "appears twice" } else { "is stored before a smaller id" };
        bail!(
            "{file}: point '{}': id: {what} ('{}' follows it); the store is kept sorted by unique id — \
             restore it from version control, or delete it and re-run `vramfit ingest` on the raw files",
            prev.id,
            next.id
        );
    }
    Ok(())
}

/// The first store format (one pretty-printed document), read whole.
fn parse_whole(text: &str, file: &str, registry: &Registry) -> Result<Vec<Point>> {
    let raw: Value = serde_json::from_str(text).map_err(|e| anyhow!("{file}:{}: not valid JSON: {e}", e.line()))?;
    let format = raw.get("format").and_then(Value::as_str).unwrap_or("");
    let version = raw.get("version").and_then(Value::as_u64).unwrap_or(0);
    if format != FORMAT || version != u64::from(VERSION) {
        bail!("{file}: format '{format}' version {version} is not {FORMAT} version {VERSION}");
    }
    let raw_points =
        raw.get("points").and_then(Value::as_array).ok_or_else(|| anyhow!("{file}: points: missing list"))?;
    let mut points = Vec::with_capacity(raw_points.len());
    for (i, rp) in raw_points.iter().enumerate() {
        let id = rp.get("id").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| format!("#{}", i + 1));
        let at = format!("{file}: point '{id}'");
        let p: Point = serde_json::from_value(rp.clone()).map_err(|e| anyhow!("{at}: {e}"))?;
        canonical(rp, &p, &at)?;
        check_point(&p, registry, &at)?;
        points.push(p);
    }
    for w in points.windows(2) {
        ordered(&w[0], &w[1], file)?;
    }
    if raw.as_object().is_some_and(|o| o.keys().any(|k| !["format", "version", "points"].contains(&k.as_str()))) {
        bail!("{file}: unknown field at the top level (expected format, version, points)");
    }
    Ok(points)
}

/// A stored point must be exactly what vramfit writes for it: the canonical
/// spelling of every value, every field present, no unknown field.
fn canonical(raw: &Value, p: &Point, at: &str) -> Result<()> {
    let written = serde_json::to_value(p).map_err(|e| anyhow!("{at}: {e}"))?;
    let (Value::Object(r), Value::Object(w)) = (raw, &written) else { bail!("{at}: expected an object") };
    if let Some(k) = r.keys().find(|k| !w.contains_key(*k)) {
        bail!("{at}: {k}: unknown field");
    }
    for (k, wv) in w {
        match r.get(k) {
            None => bail!("{at}: {k}: missing field (write null when a value is unknown)"),
            Some(rv) if rv != wv => bail!("{at}: {k}: {rv} is not in canonical form (vramfit writes {wv})"),
            _ => {}
        }
    }
    Ok(())
}

fn check_point(p: &Point, registry: &Registry, at: &str) -> Result<()> {
    if p.id.trim().is_empty() || p.id.trim() != p.id {
        bail!("{at}: id: empty or padded with spaces");
    }
    if p.source.trim().is_empty() {
        bail!("{at}: source: empty (every point names its source)");
    }
    if !registry.0.contains_key(&p.key.vae) {
        bail!(
            "{at}: vae: '{}' is not a family of the registry in fits/policy.toml ({})",
            p.key.vae,
            registry.describe()
        );
    }
    for (field, v) in [("width", p.width), ("height", p.height), ("batch", p.batch)] {
        if v == 0 {
            bail!("{at}: {field}: must be a positive integer");
        }
    }
    let pixels = crate::exact::pixels(p.width, p.height, p.batch);
    if pixels != Some(p.pixels) {
        let want = pixels.map(|x| x.to_string()).unwrap_or_else(|| format!("more than {MAX_PIXELS}"));
        bail!("{at}: pixels: {} but width × height × batch = {}×{}×{} = {want}", p.pixels, p.width, p.height, p.batch);
    }
    let largest = [p.reserved_bytes, p.allocated_bytes, p.driver_bytes].into_iter().flatten().max();
    match largest {
        None => {
            bail!("{at}: demand_bytes: no measured delta (reserved_bytes, allocated_bytes, driver_bytes) behind it")
        }
        Some(m) if m != p.demand_bytes => {
            bail!("{at}: demand_bytes: {} but the largest measured delta is {m}", p.demand_bytes)
        }
        _ => {}
    }
    if p.demand_bytes == 0 || p.demand_bytes > MAX_BYTES {
        bail!("{at}: demand_bytes: {} is outside 1..={MAX_BYTES}", p.demand_bytes);
    }
    for (field, v) in [("run", p.run), ("runs", p.runs)] {
        if v == Some(0) {
            bail!("{at}: {field}: must be a positive integer or null");
        }
    }
    if let Some(a) = p.aggregate.as_deref().filter(|a| !AGGREGATES.contains(a)) {
        bail!("{at}: aggregate: unknown '{a}' (accepted: {})", AGGREGATES.join(", "));
    }
    if let Some(c) = p.context.as_deref().filter(|c| !CONTEXTS.contains(c)) {
        bail!("{at}: context: unknown '{c}' (accepted: {})", CONTEXTS.join(", "));
    }
    Ok(())
}

/// The canonical bytes of a set of points, whatever their order: one JSON
/// document, one point a line (compact, fields in a fixed order) between a
/// first and a last line, so a diff of new measurements shows one line a
/// point and the file can be read and written as a stream.
pub fn to_bytes(points: &[Point]) -> Result<Vec<u8>> {
    let mut sorted: Vec<&Point> = points.iter().collect();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    let mut out = Vec::with_capacity(points.len() * 560 + 64);
    out.extend_from_slice(HEAD.as_bytes());
    out.push(b'\n');
    for (i, p) in sorted.iter().enumerate() {
        serde_json::to_writer(&mut out, p)?;
        if i + 1 < sorted.len() {
            out.push(b',');
        }
        out.push(b'\n');
    }
    out.extend_from_slice(TAIL.as_bytes());
    out.push(b'\n');
    Ok(out)
}
