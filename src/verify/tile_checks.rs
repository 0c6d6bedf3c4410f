//! The derived tile, checked. A tile with no line of its own is priced from
//! its platform's untiled line (docs/DESIGN.md, "Pricing", step 3); these
//! checks restate that price from the shipped file alone and hold the data
//! and the pricer to it: every measured tiled point is covered by it and not
//! over-reserved past the ratio bound, every unmeasured tile of a measured
//! platform is priced by it through the pricer `reserve` uses, and for one
//! image no larger tile prices below a smaller one.

use super::pricing_checks::expected_for;
use super::{covers, Code, Finding, PricingCtx, POLICY_FILE, PRICING_CODE};
use crate::coefficients::CoefficientsFile;
use crate::exact::Ratio;
use crate::points::{LineKey, Point};
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::TILE_STEP;
use crate::pricing::{Query, Rule};
use std::cmp::Ordering;
use std::collections::BTreeSet;

/// The derived price of `key` (a tiled key) at `w × h × batch`, restated
/// from the shipped file: the untiled line of its platform (its own OS's
/// line or the one measured without an OS, the higher) at one tile, plus the
/// default host's copies of the output. None: no untiled line there, or the
/// file declares no tiling rule.
pub(crate) fn restated(
    shipped: &CoefficientsFile,
    key: &LineKey,
    w: u64,
    h: u64,
    batch: u64,
) -> Option<(u64, LineKey)> {
    let tiling = shipped.tiling.as_ref()?;
    let host = tiling.hosts.get(&tiling.default_host)?;
    let t = u64::from(key.tile);
    let tile_pixels = t.min(w).checked_mul(t.min(h))?.checked_mul(batch)?;
    let untiled = LineKey { tile: 0, ..key.clone() };
    let (line, _) = expected_for(shipped, &untiled, tile_pixels)?;
    let copies = host.copies_bytes(key.dtype, w.checked_mul(h)?.checked_mul(batch)?)?;
    Some((line.checked_add(copies)?, untiled))
}

/// Every included tiled point (a tile smaller than its image) on a platform
/// with an untiled line: covered by its derived price, computed without the
/// tile's own line, and not over-reserved by it past the bound unless listed.
pub(super) fn measured_tiles(cx: &mut PricingCtx) {
    let policy = &cx.inputs.policy;
    let mut out = Vec::new();
    let mut over = BTreeSet::new();
    // A video point's spatial tile is in its line's working set: the
    // coverage check prices it (pricing_checks), not the derived tile rule.
    let tiled = cx.inputs.points.iter().filter(|p| {
        p.key.tile != 0 && !covers(p.key.tile, p.width, p.height) && policy.registry.video(&p.key.vae).is_none()
    });
    for p in tiled.filter(|p| !policy.is_excluded(&p.id)) {
        let key = policy.line_key(p);
        let Some((price, untiled)) = restated(cx.shipped, &key, p.width, p.height, p.batch) else { continue };
        // In the point's own context: a fresh point's answer adds its first use.
        let price = price.saturating_add(policy.first_use_bytes(p));
        if policy.ratio_bound.cmp_fraction(price, p.demand_bytes) == Ok(Ordering::Less) {
            over.insert(p.id.to_string());
        }
        if let Some(f) = judge(p, &key, &untiled, price, &policy.ratio_bound, policy.is_exception(&p.id)) {
            out.push(f);
        }
    }
    cx.findings.extend(out);
    cx.derived_over_bound = over;
}

fn judge(p: &Point, key: &LineKey, untiled: &LineKey, price: u64, bound: &Ratio, excepted: bool) -> Option<Finding> {
    let finding = |message: String, hint: &str| {
        Finding::new(Code::DerivedTile, POLICY_FILE, message, hint).line(key).points(vec![p.id.to_string()])
    };
    if price < p.demand_bytes {
        return Some(
            finding(
                format!(
                    "point {} ({}x{}, tile {}) is not covered by the derived tile price from {untiled}: {price} B for \
                     a demand of {} B",
                    p.id, p.width, p.height, p.key.tile, p.demand_bytes
                ),
                "a tile of this platform without a line of its own would spill: raise the host's copies in \
                 [tiling], or measure the untiled line where this tile runs",
            )
            .values(format!("≥ {}", p.demand_bytes), price),
        );
    }
    if excepted || bound.cmp_fraction(price, p.demand_bytes) != Ok(Ordering::Less) {
        return None;
    }
    let shown = Ratio::new(i128::from(price), i128::from(p.demand_bytes)).map(|r| r.to_decimal_ceil(4)).ok()?;
    let bound_text = crate::exact::exact_decimal(bound);
    Some(
        finding(
            format!(
                "point {} ({}x{}, tile {}) is over-reserved {shown}× by the derived tile price from {untiled} (bound \
                 {bound_text})",
                p.id, p.width, p.height, p.key.tile
            ),
            "the derived rule wastes memory here: lower the host's copies, or list the point under [[exception]] \
             with a reason",
        )
        .values(format!("≤ {bound_text}"), shown),
    )
}

/// Every tile the file knows, on every measured untiled line's platform
/// where that tile has no line of its own, at every grid size it tiles:
/// the pricer answers with the derived tile rule and the restated price.
pub(super) fn unmeasured_tiles(cx: &mut PricingCtx) {
    let grid = cx.inputs.policy.grid.clone();
    let tiles = all_tiles(cx.shipped);
    let own: BTreeSet<&LineKey> = cx.shipped.lines.iter().map(|l| &l.key).collect();
    let mut out = Vec::new();
    for line in cx.shipped.lines.iter().filter(|l| l.key.tile == 0 && l.key.temporal_tile.is_none()) {
        for tile in &tiles {
            let key = LineKey { tile: *tile, ..line.key.clone() };
            let os_less = LineKey { os: crate::vocab::Os::Any, ..key.clone() };
            if own.contains(&key) || own.contains(&os_less) {
                continue; // a measured tile line prices it
            }
            for (w, h) in grid.iter().filter(|(w, h)| !covers(*tile, *w, *h)) {
                let Some((derived, _)) = restated(cx.shipped, &key, *w, *h, 1) else { continue };
                // On a math-kernel platform the tile's attention phase may be higher.
                let (want, rule) = match super::attention_checks::restated(cx.shipped, &key, *w, *h, 1) {
                    Some(phase) if phase > derived => (phase, Rule::AttentionPhase),
                    _ => (derived, Rule::DerivedTile),
                };
                cx.pricings += 1;
                let got = cx.pricer.quote(&Query::at_key(&key, *w, *h, 1), &EnvSnapshot::default());
                if matches!(&got, Ok(q) if q.own == (rule, want) && q.bytes >= want) {
                    continue;
                }
                let found = super::quoted(&got);
                out.push(
                    Finding::new(
                        Code::DerivedTile,
                        PRICING_CODE,
                        format!(
                            "{key} has no line of its own, and at {w}x{h} the pricer does not give the derived tile \
                             price from {}",
                            line.key
                        ),
                        "the pricer drops the output copies, prices the wrong tile size, or ignores the untiled line",
                    )
                    .line(&key)
                    .values(format!("{want} B by the derived tile"), found),
                );
                break; // one finding per key is enough to act on
            }
        }
    }
    cx.findings.extend(out);
}

/// Tile edges the file knows: the policy's fallbacks and every measured tile.
fn all_tiles(shipped: &CoefficientsFile) -> Vec<u32> {
    let lines = shipped.lines.iter().map(|l| l.key.tile);
    let thin = shipped.insufficient.iter().map(|l| l.key.tile);
    let set: BTreeSet<u32> = shipped.tiles.iter().copied().chain(lines).chain(thin).filter(|t| *t != 0).collect();
    set.into_iter().collect()
}

/// Sizes past the grid: twice and four times the side of the largest size
/// any line of the file measured, square and long on either side (the
/// extrapolated range, where a line and a guess meet).
pub(crate) fn beyond(shipped: &CoefficientsFile) -> Vec<(u64, u64)> {
    let hi = shipped.lines.iter().filter_map(|l| l.size_range).map(|[_, hi]| hi).max().unwrap_or(1 << 22);
    let s = hi.isqrt().div_ceil(8) * 8;
    vec![(2 * s, 2 * s), (4 * s, s), (s, 4 * s)]
}

/// For every platform the file has a line or a thin key on, at every grid
/// image and the sizes past the largest measured one ([`beyond`]): no
/// larger tile prices below a smaller one, and no tile above the untiled
/// price, whichever rule prices each; and along each line's own key, no
/// larger image (the grid's, then past the measured range) prices below a
/// smaller one.
pub(super) fn monotone(cx: &mut PricingCtx) {
    let mut sizes = cx.inputs.policy.grid.clone();
    let past = beyond(cx.shipped);
    sizes.extend(past.iter().copied());
    // Where rules' domains meet: the tiles on either side of each measured
    // tile, and the image one step wider than it (tiled meets untiled).
    let measured: BTreeSet<u32> = cx.shipped.lines.iter().map(|l| l.key.tile).filter(|t| *t > 0).collect();
    let mut tiles: BTreeSet<u32> = all_tiles(cx.shipped).into_iter().collect();
    for t in &measured {
        // Checked: a hand-edited file may hold any tile (verify reports it).
        tiles.extend([t.checked_sub(TILE_STEP), t.checked_add(TILE_STEP)].into_iter().flatten().filter(|t| *t > 0));
        let wider = u64::from(*t) + u64::from(TILE_STEP);
        sizes.push((wider, wider));
    }
    let tiles: Vec<u32> = tiles.into_iter().collect();
    let keys = cx.shipped.lines.iter().map(|l| &l.key).chain(cx.shipped.insufficient.iter().map(|l| &l.key));
    let platforms: BTreeSet<LineKey> = keys.map(|k| LineKey { tile: 0, ..k.clone() }).collect();
    let mut out = Vec::new();
    let env = EnvSnapshot::default();
    let finding = |key: &LineKey, what: String, found: u64, below: u64| {
        Finding::new(
            Code::Monotone,
            PRICING_CODE,
            what,
            "a larger request must never look cheaper than a smaller one (plan would pick it): fix the pricer, or \
             measure the tile",
        )
        .line(key)
        .values(format!("≥ {below}"), found)
    };
    for platform in platforms.iter().filter(|p| p.temporal_tile.is_none()) {
        for (w, h) in &sizes {
            let mut previous: Option<(u32, u64)> = None;
            // Each tile that tiles the image, smallest first, then no tile.
            for tile in tiles.iter().copied().filter(|t| !covers(*t, *w, *h)).chain([0]) {
                let key = LineKey { tile, ..platform.clone() };
                cx.pricings += 1;
                let Ok(q) = cx.pricer.quote(&Query::at_key(&key, *w, *h, 1), &env) else {
                    continue; // a pricing error is the coverage and query-path checks' to report
                };
                if let Some((small, below)) = previous.filter(|(_, b)| q.bytes < *b) {
                    let name = if tile == 0 { "untiled".to_string() } else { format!("tile {tile}") };
                    let what = format!(
                        "{platform} at {w}x{h}: {name} prices {} B by the {}, below tile {small} at {below} B",
                        q.bytes,
                        q.rule.as_str()
                    );
                    out.push(finding(&key, what, q.bytes, below));
                }
                previous = Some((tile, q.bytes));
            }
        }
    }
    // Along each line's own key: squares of the grid, then past the range.
    let mut sides: Vec<u64> = cx.inputs.policy.grid.iter().filter(|(w, h)| w == h).map(|(w, _)| *w).collect();
    sides.extend(measured.iter().flat_map(|t| [u64::from(*t), u64::from(*t) + u64::from(TILE_STEP)]));
    sides.extend(past.iter().filter(|(w, h)| w == h).map(|(w, _)| *w));
    sides.push(past[0].0 * 2);
    sides.sort_unstable();
    sides.dedup();
    for line in &cx.shipped.lines {
        let k = &line.key;
        // A video key is asked over a clip its temporal tile does not cover.
        let frames = k.temporal_tile.map_or(1, |t| u64::from(t).max(1) * 4 + 1);
        let mut previous: Option<(u64, u64)> = None;
        for side in sides.iter().copied().filter(|s| !covers(k.tile, *s, *s)) {
            cx.pricings += 1;
            let q = Query { frames, ..Query::at_key(k, side, side, 1) };
            let Ok(q) = cx.pricer.quote(&q, &env) else { continue };
            if let Some((small, below)) = previous.filter(|(_, b)| q.bytes < *b) {
                let what = format!(
                    "{k}: {side}x{side} prices {} B by the {}, below {small}x{small} at {below} B",
                    q.bytes,
                    q.rule.as_str()
                );
                out.push(finding(k, what, q.bytes, below));
            }
            previous = Some((side, q.bytes));
        }
    }
    cx.findings.extend(out);
}
