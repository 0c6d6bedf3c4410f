//! The video pricing restated from the shipped file alone (docs/DESIGN.md,
//! "Video"): a video line's own key prices its working set plus the clip
//! copies, and a video key with no line of its own never prices below the
//! largest host estimate that applies. Both through the pricer `reserve` uses.

use super::{Code, Finding, PricingCtx, PRICING_CODE};
use crate::coefficients::CoefficientsFile;
use crate::exact::Ratio;
use crate::points::LineKey;
use crate::policy::video::Run;
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::{Query, Rule};
use crate::registry::{VideoFacts, Walk};
use crate::text::Text;
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};

/// Clip lengths every video check prices: one frame, a short and a long
/// clip; each the shortest the family runs of at least that many frames
/// (`clips`).
const CLIPS: [u64; 4] = [1, 17, 33, 121];

/// [`CLIPS`] as a family runs them for an op.
fn clips(facts: &VideoFacts, op: Op) -> Vec<u64> {
    let mut out: Vec<u64> = CLIPS.iter().filter_map(|f| facts.clip_at_least(*f, op == Op::Decode)).collect();
    out.dedup();
    out
}

/// A query for `key` at a size and clip, with the key's temporal tile.
fn query(key: &LineKey, w: u64, h: u64, frames: u64, batch: u64) -> Query {
    Query { frames, ..Query::at_key(key, w, h, batch) }
}

/// A run of a query on its video key (spatial tile 0: the checks price
/// untiled); a temporal tile at least the clip is the whole clip.
fn run(key: &LineKey, w: u64, h: u64, frames: u64, batch: u64) -> Run {
    let temporal_tile = key.temporal_tile.unwrap_or(0);
    let temporal_tile = if u64::from(temporal_tile) >= frames { 0 } else { temporal_tile };
    Run { width: w, height: h, frames, batch, tile: 0, temporal_tile, dtype: key.dtype }
}

fn copies(shipped: &CoefficientsFile, op: Op) -> Ratio {
    shipped.video.as_ref().map_or(Ratio::zero(), |v| v.clip_copies(op))
}

/// Each shipped video line, priced at its own key: the line at the run's
/// working set plus the clip copies, restated from the file.
pub(super) fn own_lines(cx: &mut PricingCtx) {
    let grid = cx.inputs.policy.grid.clone();
    let mut out = Vec::new();
    for s in cx.shipped.lines.iter().filter(|s| s.key.temporal_tile.is_some()) {
        let Some(facts) = cx.shipped.registry.get(s.key.vae.as_str()).and_then(|e| e.video.as_ref()) else {
            continue;
        };
        let k = &s.key;
        let want_rule = if s.kind == crate::lines::LineKind::Carried { Rule::CarriedLine } else { Rule::FittedLine };
        'sizes: for (w, h) in &grid {
            // A clip its temporal tile covers is the whole clip: another key.
            for frames in
                clips(facts, k.op).into_iter().filter(|f| k.temporal_tile.is_none_or(|t| t == 0 || u64::from(t) < *f))
            {
                for batch in [1u64, 2] {
                    let r = run(k, *w, *h, frames, batch);
                    let (Some(x), Some(clip)) = (r.working_set(facts), r.clip_bytes(copies(cx.shipped, k.op))) else {
                        continue;
                    };
                    let Some(line) = super::pricing_checks::line_price(cx.shipped, s, x) else { continue };
                    let expected = line.saturating_add(clip);
                    cx.pricings += 1;
                    let got = cx.pricer.quote(&query(k, *w, *h, frames, batch), &EnvSnapshot::default());
                    if matches!(&got, Ok(p) if p.own == (want_rule, expected) && p.bytes >= expected) {
                        continue;
                    }
                    let found = super::quoted(&got);
                    out.push(
                        Finding::new(
                            Code::QueryPath,
                            PRICING_CODE,
                            format!(
                                "pricing video line {k} at {w}x{h} × {frames} frames, batch {batch} does not give the \
                                 line at its working set ({x} px) plus the clip copies ({clip} B)"
                            ),
                            "the pricer drops the clip term, prices the wrong working set, or scales batch wrongly",
                        )
                        .line(k)
                        .values(format!("{expected} B by the {}", want_rule.as_str()), found),
                    );
                    break 'sizes;
                }
            }
        }
    }
    cx.findings.extend(out);
}

/// Every video family, op, dtype and temporal tile with no line of its own
/// on a platform: never priced below the largest host estimate that applies.
pub(super) fn estimate_floor(cx: &mut PricingCtx) {
    let Some(video) = cx.shipped.video.as_ref() else { return };
    let grid = cx.inputs.policy.grid.clone();
    let families: Vec<(Text, &VideoFacts)> =
        cx.shipped.registry.iter().filter_map(|(f, e)| e.video.as_ref().map(|v| (Text::from(f.as_str()), v))).collect();
    let own: std::collections::BTreeSet<&LineKey> = cx.shipped.lines.iter().map(|l| &l.key).collect();
    let mut out = Vec::new();
    for (family, facts) in &families {
        let temporal: Vec<u32> = match facts.walk {
            Walk::Causal | Walk::All => vec![0],
            Walk::Tiles => vec![0, facts.temporal_tile(None), 32],
        };
        for op in Op::ALL {
            for dtype in Dtype::ALL {
                for tt in &temporal {
                    for backend in [ConvBackend::Cudnn, ConvBackend::Miopen] {
                        let key = LineKey {
                            vae: family.clone(),
                            op: *op,
                            tile: 0,
                            temporal_tile: Some(*tt),
                            conv_backend: backend,
                            allocator: Allocator::Native,
                            os: Os::Linux,
                            dtype: *dtype,
                        };
                        if own.contains(&key) || own.contains(&LineKey { os: Os::Any, ..key.clone() }) {
                            continue; // its own line prices it (own_lines restates that)
                        }
                        for (w, h) in &grid {
                            for frames in clips(facts, *op) {
                                let r = run(&key, *w, *h, frames, 1);
                                let priced = LineKey { temporal_tile: Some(r.temporal_tile), ..key.clone() };
                                if own.contains(&priced) || own.contains(&LineKey { os: Os::Any, ..priced.clone() }) {
                                    continue; // its own line prices this clip
                                }
                                if cx.shipped.lines.iter().any(|l| crate::pricing::measured_here(&l.key, &priced)) {
                                    continue; // a measured platform: its lines price it, no host's guess
                                }
                                let floor =
                                    video.estimates(family, *op, facts, r).into_iter().filter_map(|(_, b)| b).max();
                                let Some(floor) = floor else { continue };
                                cx.pricings += 1;
                                let got = cx.pricer.quote(&query(&key, *w, *h, frames, 1), &EnvSnapshot::default());
                                if matches!(&got, Ok(p) if p.bytes >= floor) {
                                    continue;
                                }
                                let found = super::quoted(&got);
                                out.push(
                                    Finding::new(
                                        Code::Floor,
                                        PRICING_CODE,
                                        format!(
                                            "{key} has no line of its own and prices {w}x{h} × {frames} frames below \
                                             the largest host estimate that applies"
                                        ),
                                        "a video key nobody measured must never price below its hosts' published \
                                         estimates: fix the pricer",
                                    )
                                    .values(format!("≥ {floor}"), found),
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    cx.findings.extend(out);
}
