//! Importer for InvokeAI's published VAE benchmark JSON
//! (`vae_benchmarks/all_benchmark_results.json`, commit 7785061e).
//!
//! The format records size, operation, dtype, model and the average
//! allocated/reserved deltas, but not where or how it ran: the source,
//! device, conv backend, allocator and OS come from the caller. Each record
//! is turned into a measurement-CSV row and goes through the same
//! [`row_to_point`] as a CSV, so both paths give the same points.

use super::row::{row_to_point, Col, Fields, Interners, RowOrigin, Rows};
use crate::exact::mib_decimal_to_bytes;
use crate::places::InputError;
use crate::registry::Registry;
use crate::vocab::{Aggregate, Context, Dtype};
use anyhow::{anyhow, bail, Result};
use serde_json::Value;

/// What the benchmark file does not say, given on the command line.
#[derive(Debug, Clone)]
pub struct InvokeaiContext {
    pub source: String,
    pub device: Option<String>,
    pub torch: Option<String>,
    pub conv_backend: String,
    pub allocator: String,
    pub os: String,
    /// Prefix of the generated ids (`PREFIX-MODEL-OP[-tTILE]-DTYPE-WxH[-LOADEDload]`).
    pub id_prefix: String,
    /// Runs behind each average, when known.
    pub runs: Option<u32>,
}

/// InvokeAI's model labels and the vramfit model names they stand for.
fn model_name(label: &str) -> String {
    let squashed: String = label.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    match squashed.as_str() {
        "flux" | "flux1" => "flux1".to_string(),
        other => other.to_string(),
    }
}

/// Reads the benchmark JSON (an array of records).
pub fn parse(text: &str, file: &str, ctx: &InvokeaiContext, registry: &Registry) -> Result<Rows> {
    let records: Value = serde_json::from_str(text)
        .map_err(|e| anyhow!(InputError::at_line(file, e.line(), format!("not valid JSON: {e}"))))?;
    crate::fsio::refuse_duplicate_keys(text, file)?;
    let records = records.as_array().ok_or_else(|| anyhow!("{file}:1: expected a JSON array of benchmark records"))?;
    let lines = record_lines(text);
    let shared_file = crate::text::Text::from(file);
    let mut texts = Interners::default();
    let mut rows = Rows::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        let origin = RowOrigin { file: shared_file.clone(), line: lines.get(i).copied().unwrap_or(1) };
        let fields = record_fields(r, i, &origin, ctx, registry)?;
        let point = row_to_point(&fields, &origin, registry, &mut texts)?;
        rows.push(point, origin);
    }
    Ok(rows)
}

/// Line numbers where each top-level record opens, for messages.
fn record_lines(text: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let (mut depth, mut line, mut in_str, mut esc) = (0i32, 1u64, false, false);
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, '\\') => esc = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' | '[' => {
                if depth == 1 && c == '{' {
                    out.push(line);
                }
                depth += 1;
            }
            '}' | ']' => depth -= 1,
            _ => {}
        }
    }
    out
}

fn record_fields(
    r: &Value,
    index: usize,
    at: &RowOrigin,
    ctx: &InvokeaiContext,
    registry: &Registry,
) -> Result<Fields> {
    let obj = r.as_object().ok_or_else(|| anyhow!(at.error(format!("record {}: expected an object", index + 1))))?;
    let text = |k: &str| -> Result<String> {
        match obj.get(k) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(Value::Number(n)) => Ok(n.to_string()),
            Some(Value::Bool(b)) => Ok(b.to_string()),
            _ => bail!(at.field_error(k, "missing field")),
        }
    };
    let (w, h) =
        crate::units::parse_size(&text("resolution")?).map_err(|e| anyhow!(at.error(format!("resolution: {e}"))))?;
    let operation = text("operation")?;
    let tiled = operation == "decode_tiled" || matches!(obj.get("tiling"), Some(Value::Bool(true)));
    let op = match operation.as_str() {
        "decode" | "decode_tiled" => "decode",
        "encode" => "encode",
        other => {
            bail!(at.error(format!("operation: unknown operation '{other}' (accepted: encode, decode, decode_tiled)")))
        }
    };
    let tile = if tiled {
        match obj.get("tile_size") {
            Some(Value::Number(n)) if n.as_u64().is_some_and(|t| t > 0) => n.to_string(),
            _ => bail!(at.error("tile_size: a tiled record needs a positive tile_size")),
        }
    } else {
        "0".to_string()
    };
    let run: Dtype = text("dtype")?.parse().map_err(|e| anyhow!(at.error(format!("dtype: {e}"))))?;
    let model = model_name(&text("model")?);
    let family = registry.resolve(&model).map(str::to_string);
    let size_mb = model_size(obj.get("model_size_mb"), at)?;
    let loaded = loaded_dtype(size_mb, family.as_deref().and_then(|f| registry.params(f)), run);

    let mut f = Fields::new();
    let mut id = format!("{}-{model}-{op}", ctx.id_prefix);
    if tile != "0" {
        id.push_str(&format!("-t{tile}"));
    }
    id.push_str(&format!("-{run}-{w}x{h}"));
    if loaded != run {
        id.push_str(&format!("-{loaded}load"));
    }
    // The record becomes the row a CSV would hold, named by the CSV's own
    // columns and spelled by the vocabularies, so it is checked by the one
    // row rule (`row_to_point`) every importer shares.
    let mut put = |c: Col, v: String| {
        f.insert(c.name().to_string(), v);
    };
    put(Col::Id, id);
    put(Col::Source, ctx.source.clone());
    put(Col::Device, ctx.device.clone().unwrap_or_default());
    put(Col::Torch, ctx.torch.clone().unwrap_or_default());
    put(Col::ConvBackend, ctx.conv_backend.clone());
    put(Col::Allocator, ctx.allocator.clone());
    put(Col::Os, ctx.os.clone());
    put(Col::Model, model);
    put(Col::Op, op.to_string());
    put(Col::Tile, tile);
    put(Col::RunDtype, run.to_string());
    put(Col::LoadedDtype, loaded.to_string());
    put(Col::Width, w.to_string());
    put(Col::Height, h.to_string());
    put(Col::Batch, "1".to_string());
    put(Col::Aggregate, Aggregate::Mean.as_str().to_string());
    put(Col::Runs, ctx.runs.map(|r| r.to_string()).unwrap_or_default());
    // InvokeAI's benchmark averages its runs after two warm-ups: warm figures.
    put(Col::Context, Context::Warm.as_str().to_string());
    for (from, to) in [("avg_reserved_mb", Col::ReservedMib), ("avg_allocated_mb", Col::AllocatedMib)] {
        if let Some(v) = obj.get(from) {
            put(to, number_text(v).ok_or_else(|| anyhow!(at.field_error(from, "expected a number")))?);
        }
    }
    // The rest of the record is kept in the point's metadata, under its own names.
    for extra in ["model_size_mb", "max_reserved_mb", "max_allocated_mb", "avg_time_s"] {
        if let Some(v) = obj.get(extra).and_then(number_text) {
            f.insert(extra.to_string(), v);
        }
    }
    Ok(f)
}

fn number_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The weights' size in bytes, when recorded. It decides the loaded dtype
/// (and so the cast growth), so a value that is not a positive number is
/// refused rather than read as "unknown".
fn model_size(v: Option<&Value>, at: &RowOrigin) -> Result<Option<u64>> {
    let Some(v) = v else { return Ok(None) };
    let text = number_text(v)
        .ok_or_else(|| anyhow!(at.error(format!("model_size_mb: expected a number of MiB, found {v}"))))?;
    match mib_decimal_to_bytes(&text) {
        Ok(b) if b > 0 => Ok(Some(b)),
        Ok(_) => bail!(at.error(format!("model_size_mb: {text} is not a positive size"))),
        Err(e) => bail!(at.error(format!("model_size_mb: '{text}': {e}"))),
    }
}

/// The dtype the weights were loaded in, from the weight size: about two
/// bytes a parameter is a 16-bit load (the run's own 16-bit dtype, or fp16
/// when it ran fp32: an upcast), about four is fp32. Without a weight count
/// or size, the run dtype.
fn loaded_dtype(bytes: Option<u64>, params: Option<u64>, run: Dtype) -> Dtype {
    let (Some(bytes), Some(params)) = (bytes, params) else { return run };
    let (b, p) = (u128::from(bytes), u128::from(params));
    let elem = if b.abs_diff(2 * p) <= b.abs_diff(4 * p) { 2 } else { 4 };
    match (elem, run) {
        (4, _) => Dtype::Fp32,
        (_, Dtype::Fp32) => Dtype::Fp16,
        (_, r) => r,
    }
}
