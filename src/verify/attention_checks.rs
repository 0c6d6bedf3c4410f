//! The attention phase, checked. On a platform whose SDPA runs the VAE
//! mid-block's attention on the math kernel, a price is the larger of the
//! line phase and the attention phase (docs/DESIGN.md, "Pricing", step 6).
//! The phase is restated here from the shipped file alone, and every
//! declared platform, family, op, dtype, size and tile is priced through
//! the pricer `reserve` uses: never below the phase, and on every other
//! platform never priced by it.

use super::{covers, Code, Finding, PricingCtx, PRICING_CODE};
use crate::coefficients::CoefficientsFile;
use crate::points::LineKey;
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::{Query, Rule};
use crate::text::Text;
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};

/// The attention phase of `key` (tile included) at `w × h × batch`, without
/// cast growth, restated from the shipped file: None where the key's backend
/// is not a math-kernel platform or its family has no mid-block attention.
pub(crate) fn restated(shipped: &CoefficientsFile, key: &LineKey, w: u64, h: u64, batch: u64) -> Option<u64> {
    let attention = shipped.attention.as_ref()?;
    let platform = attention.platforms.iter().find(|p| p.conv_backend == key.conv_backend)?;
    let block = shipped.registry.get(key.vae.as_str())?.attention?;
    let (w, h) = if key.tile == 0 { (w, h) } else { (u64::from(key.tile).min(w), u64::from(key.tile).min(h)) };
    let s = u128::from(w.div_ceil(block.latent_factor)) * u128::from(h.div_ceil(block.latent_factor));
    let elements = s * s * u128::from(batch) * u128::from(block.heads);
    let num = u128::try_from(platform.bytes_per_score.num()).ok()?;
    let den = u128::try_from(platform.bytes_per_score.den()).ok()?;
    let scores = (num * elements).div_ceil(den);
    let held = u128::from(attention.held_tensors)
        * u128::from(batch)
        * u128::from(block.heads)
        * u128::from(block.head_dim)
        * s
        * u128::from(key.dtype.elem_bytes());
    u64::try_from(scores + held).ok()
}

/// The sizes the phase is checked at: the grid, and the large images where
/// it sets prices.
fn sizes(grid: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut all = grid.to_vec();
    all.extend([(2048, 2048), (3072, 3072), (4096, 2304)]);
    all.sort_unstable();
    all.dedup();
    all
}

/// Every declared platform and one platform without the phase, every
/// family, op, dtype, tile and size: a math-kernel price is never below the
/// restated phase and names the attention phase exactly when the phase is
/// above what the line phase prices; no other platform is priced by it.
pub(super) fn phase(cx: &mut PricingCtx) {
    let Some(attention) = cx.shipped.attention.as_ref() else { return };
    let mut backends: Vec<ConvBackend> = attention.platforms.iter().map(|p| p.conv_backend).collect();
    backends.push(ConvBackend::Cudnn); // must never carry the phase
    backends.dedup();
    let families: Vec<Text> =
        cx.shipped.registry.iter().filter(|(_, e)| e.video.is_none()).map(|(f, _)| Text::from(f.as_str())).collect();
    let mut tiles: Vec<u32> = vec![0];
    tiles.extend(cx.shipped.tiles.iter().copied());
    let sizes = sizes(&cx.inputs.policy.grid);
    let mut out = Vec::new();
    for backend in &backends {
        for family in &families {
            for op in Op::ALL {
                for dtype in Dtype::ALL {
                    for tile in &tiles {
                        for (w, h) in sizes.iter().filter(|(w, h)| !covers(*tile, *w, *h)) {
                            let key = LineKey {
                                vae: family.clone(),
                                op: *op,
                                tile: *tile,
                                temporal_tile: None,
                                conv_backend: *backend,
                                allocator: Allocator::Native,
                                os: Os::Linux,
                                dtype: *dtype,
                            };
                            let q = Query {
                                os: crate::pricing::Choice::Given(Os::Linux),
                                ..Query::at_key(&key, *w, *h, 1)
                            };
                            cx.pricings += 1;
                            let Ok(p) = cx.pricer.price(&q, &EnvSnapshot::default()) else { continue };
                            let want = restated(cx.shipped, &key, *w, *h, 1);
                            // The query's own rules; the monotone composition may only raise it.
                            let (rule, bytes) = p.own();
                            let line_phase = p.attention.as_ref().map_or(bytes, |a| a.line_phase_bytes);
                            let bad = p.bytes < bytes
                                || match want {
                                    None => rule == Rule::AttentionPhase || p.attention.is_some(),
                                    Some(phase) => {
                                        bytes < phase
                                            || (phase > line_phase) != (rule == Rule::AttentionPhase)
                                            || bytes != phase.max(line_phase)
                                    }
                                };
                            if bad {
                                out.push(finding(&key, *w, *h, want, &p));
                            }
                        }
                    }
                }
            }
        }
    }
    cx.findings.extend(out);
}

fn finding(key: &LineKey, w: u64, h: u64, want: Option<u64>, p: &crate::pricing::Price) -> Finding {
    let expected = match want {
        Some(phase) => format!("the larger of the line phase and the attention phase {phase} B"),
        None => "no attention phase (not a math-kernel platform, or no mid-block attention)".to_string(),
    };
    Finding::new(
        Code::Attention,
        PRICING_CODE,
        format!("{key} at {w}x{h}: the pricer's answer does not follow the declared attention phase"),
        "the pricer drops the attention phase, uses the whole image's S for a tile, or applies it where SDPA has a \
         fused kernel",
    )
    .line(key)
    .values(expected, format!("{} B by the {}", p.bytes, p.rule.as_str()))
}
