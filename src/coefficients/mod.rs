//! The shipped coefficient file `fits/vae.json` (docs/DESIGN.md, "The coefficients file"): its schema, how
//! `emit` builds it from the assembled lines, and how it is loaded.
//!
//! The file is self-contained: a runtime (a Python app) can price any query
//! from it alone, with no other vramfit file.

pub mod emit;
pub use crate::contract::fields;
pub use crate::contract::load::{load, parse, parse_read, read_json, version_mismatch};

pub use crate::contract::file::{
    CoefficientsFile, Digests, InsufficientLine, Resolution, ShippedEnvelope, ShippedLine, Unmeasured, EMBEDDED,
    FORMAT, VERSION,
};
use crate::exact::MIB;
use crate::lines::{slope_text, Line, LineKind};
use crate::policy::Policy;

/// The file `emit` writes from a root's inputs and the lines assembled
/// from them: the lines, the traced section, the digests.
pub fn build_from(lines: &[Line], inputs: &crate::workspace::Inputs) -> anyhow::Result<CoefficientsFile> {
    let traced = crate::traced::section(&inputs.traces, &inputs.points, &inputs.policy)?;
    let mut file = build(lines, &inputs.policy, traced, inputs.points_digest(), &inputs.policy_digest);
    file.first_use = first_use(&inputs.policy, &inputs.points);
    Ok(file)
}

/// Each declared first use with what its platform's fresh points prove:
/// `max(driver − reserved)` over the included fresh points of its conv
/// backend, allocator and OS (any OS for `any`) that carry both deltas,
/// in MiB rounded up (docs/fit.md, "First use").
pub fn first_use(policy: &Policy, points: &[crate::points::Point]) -> Vec<crate::contract::file::FirstUse> {
    policy
        .first_use
        .iter()
        .map(|d| {
            let proving: Vec<(&crate::points::Point, u64)> = points
                .iter()
                .filter(|p| !policy.is_excluded(&p.id))
                .filter(|p| p.key.conv_backend == d.conv_backend && p.key.allocator == d.allocator)
                .filter(|p| d.os == crate::vocab::Os::Any || p.key.os == d.os)
                .filter_map(|p| Some((p, p.first_use_gap()?)))
                .collect();
            let mut ids: Vec<String> = proving.iter().map(|(p, _)| p.id.to_string()).collect();
            ids.sort();
            crate::contract::file::FirstUse {
                conv_backend: d.conv_backend,
                allocator: d.allocator,
                os: d.os,
                mib: d.mib,
                measured_mib: proving.iter().map(|(_, b)| *b).max().unwrap_or(0).div_ceil(MIB),
                points: ids,
                source: d.source.clone(),
            }
        })
        .collect()
}

/// Builds the shipped file from assembled lines.
pub fn build(
    lines: &[Line],
    policy: &Policy,
    traced: Option<crate::contract::traced::TracedSection>,
    points_digest: &str,
    policy_digest: &str,
) -> CoefficientsFile {
    let mut shipped = Vec::new();
    let mut insufficient = Vec::new();
    for l in lines {
        let ids: Vec<crate::text::Text> = l.points.iter().map(|p| p.id.clone()).collect();
        match (l.kind, l.rounded) {
            (LineKind::Insufficient, _) | (_, None) => insufficient.push(InsufficientLine {
                key: l.key.clone(),
                points: l.points.len(),
                distinct_sizes: l.distinct_sizes,
                points_digest: l.points_digest.clone(),
                point_ids: ids,
                reason: l.reason.clone().unwrap_or_default(),
            }),
            (kind, Some(r)) => shipped.push(ShippedLine {
                key: l.key.clone(),
                kind,
                slope: slope_text(r.slope_centi),
                base_mib: r.base_mib,
                points: l.points.len(),
                distinct_sizes: l.distinct_sizes,
                size_range: l.size_range.map(|(a, b)| [a, b]),
                support: l.envelope.as_ref().map(|e| e.support.ids()).unwrap_or_default(),
                support_kind: l.envelope.as_ref().map(|e| e.support.kind().to_string()),
                envelope: l.envelope.as_ref().map(|e| ShippedEnvelope {
                    slope: e.slope.to_fraction_string(),
                    base: e.base.to_fraction_string(),
                }),
                points_digest: l.points_digest.clone(),
                point_ids: ids,
                max_ratio: l.max_ratio.map(|m| m.to_decimal_ceil(4)),
                exceptions: l.exceptions.iter().map(|e| e.to_string()).collect(),
                reason: l.reason.clone(),
                devices: l.devices(),
                simulated_points: l.points.iter().filter(|p| p.simulated).count(),
            }),
        }
    }
    CoefficientsFile {
        format: FORMAT.to_string(),
        version: VERSION,
        margin: policy.margin,
        ratio_bound: policy.ratio_bound,
        min_sizes: policy.min_sizes,
        resolution: Resolution { slope_bytes_per_pixel: "0.01".into(), base_bytes: MIB },
        formula: "reserve_bytes = ceil(slope_centi × pixels / 100) + base_mib × 1048576, where \
                  slope_centi = slope × 100 (an integer) and pixels = width × height × batch; a tile at least \
                  as large as both sides of the image does nothing and is priced with tile 0"
            .into(),
        lines: shipped,
        insufficient,
        unmeasured: Unmeasured {
            rule: policy.unmeasured.clone(),
            description: "a key with no line is priced at the largest of every line with the same \
                          (vae, op, tile, dtype) at the query's size, plus cast growth, and never below \
                          the legacy estimate (pixels × elem_bytes × k, or tiled tile² × batch × elem_bytes × \
                          k × tile_factor rounded up, plus fp32_extra_mib for the family in fp32)"
                .into(),
        },
        cast_growth: "when the run dtype is wider than the loaded dtype, add params × \
                      (elem(run) − elem(loaded)) bytes (fp16/bf16: 2, fp32: 4)"
            .into(),
        legacy: policy.legacy.clone(),
        registry: policy.registry.0.clone(),
        os_specific: policy.os_specific.clone(),
        allocator_defaults: policy.allocator_defaults.clone(),
        default_allocator: policy.default_allocator,
        tiles: policy.tiles.clone(),
        tiling: policy.tiling.clone(),
        attention: policy.attention.clone(),
        video: policy.video.clone(),
        traced,
        first_use: Vec::new(),
        digests: Digests { points: points_digest.to_string(), policy: policy_digest.to_string() },
    }
}
