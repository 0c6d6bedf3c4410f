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

/// For every platform the file has a line or a thin key on, every grid
/// image and every pair of tiles smaller than it: the larger tile never
/// prices below the smaller one, whichever rule prices each.
pub(super) fn monotone(cx: &mut PricingCtx) {
    let grid = cx.inputs.policy.grid.clone();
    let tiles = all_tiles(cx.shipped);
    let keys = cx.shipped.lines.iter().map(|l| &l.key).chain(cx.shipped.insufficient.iter().map(|l| &l.key));
    let platforms: BTreeSet<LineKey> = keys.map(|k| LineKey { tile: 0, ..k.clone() }).collect();
    let mut out = Vec::new();
    for platform in &platforms {
        for (w, h) in &grid {
            let mut previous: Option<(u32, u64)> = None;
            for tile in tiles.iter().filter(|t| !covers(**t, *w, *h)) {
                let key = LineKey { tile: *tile, ..platform.clone() };
                cx.pricings += 1;
                let Ok(q) = cx.pricer.quote(&Query::at_key(&key, *w, *h, 1), &EnvSnapshot::default()) else {
                    continue; // a pricing error is the coverage and query-path checks' to report
                };
                if let Some((small, below)) = previous.filter(|(_, b)| q.bytes < *b) {
                    out.push(
                        Finding::new(
                            Code::Monotone,
                            PRICING_CODE,
                            format!(
                                "{platform} at {w}x{h}: tile {tile} prices {} B by the {}, below tile {small} at {below} B",
                                q.bytes,
                                q.rule.as_str()
                            ),
                            "a larger tile must never look cheaper than a smaller one (plan would pick it): fix the \
                             pricer, or measure the tile",
                        )
                        .line(&key)
                        .values(format!("≥ {below}"), q.bytes),
                    );
                }
                previous = Some((*tile, q.bytes));
            }
        }
    }
    cx.findings.extend(out);
}
