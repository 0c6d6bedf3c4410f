//! Checks that price through the pricer `reserve` uses: every point is
//! covered, none is over-reserved beyond the bound, the floor holds, and each
//! line's own key prices to its own formula.

use super::{covers, Code, Finding, PricingCtx, POLICY_FILE, PRICING_CODE, SHIPPED_FILE};
use crate::exact::Ratio;
use crate::fit::reserve_bytes;
use crate::lines::{slope_text, LineKind};
use crate::points::{LineKey, Point};
use crate::policy::Policy;
use crate::pricing::platform::{EnvSnapshot, ALLOC_VARS, HIP_ALLOC_VAR};
use crate::pricing::{Choice, Pricer, Query, Rule};
use crate::text::Text;
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
use std::cmp::Ordering;

/// An environment in which PyTorch's detection gives `allocator` on `os`.
fn env_for(backend: ConvBackend, allocator: Allocator, os: Os) -> EnvSnapshot {
    let var = if backend.is_rocm() { HIP_ALLOC_VAR } else { ALLOC_VARS[0] };
    let conf = match allocator {
        Allocator::Native => "expandable_segments:False",
        Allocator::CudaMallocAsync => "backend:cudaMallocAsync",
        Allocator::ExpandableSegments => "expandable_segments:True",
    };
    EnvSnapshot::default().with(var, conf).on(os)
}

/// Every included point priced at its own key: covered, and not
/// over-reserved beyond the bound (unless a listed exception). Points are
/// priced on every core in slices; the findings come back in point order.
pub(super) fn coverage_and_ratios(cx: &mut PricingCtx) {
    let policy = &cx.inputs.policy;
    let included: Vec<&Point> = cx.inputs.points.iter().filter(|p| !policy.is_excluded(&p.id)).collect();
    let pricer = cx.pricer;
    let threads = crate::par::threads_for(included.len());
    let slice = included.len().div_ceil(threads).max(1);
    let parts = crate::par::map(included.chunks(slice).collect(), |part| price_points(part, pricer, policy));
    cx.pricings += included.len();
    let mut over_bound_ids = std::collections::BTreeSet::new();
    for (findings, over) in parts {
        cx.findings.extend(findings);
        over_bound_ids.extend(over);
    }
    let points = &cx.inputs.points;
    for e in &policy.exceptions {
        // The store is sorted by id.
        let exists = points.binary_search_by(|p| p.id.as_str().cmp(e.id.as_str())).is_ok();
        if exists && !over_bound_ids.contains(e.id.as_str()) && !cx.derived_over_bound.contains(&e.id) {
            cx.findings.push(
                Finding::new(
                    Code::StaleException,
                    POLICY_FILE,
                    format!("[[exception]] {} is no longer above the ratio bound (or not priced by its line)", e.id),
                    "remove the exception so the bound guards this point again",
                )
                .points(vec![e.id.clone()]),
            );
        }
    }
}

/// A point's own query: its key and size, its frames and temporal tile (a
/// point's absent temporal tile is none, 0, not the family's default), in
/// its own context (a fresh point's answer adds the first use).
pub fn point_query(p: &Point) -> Query {
    let temporal_tile = Some(p.key.temporal_tile.unwrap_or(0));
    Query {
        frames: p.frames,
        temporal_tile,
        warm: p.priced_warm(),
        ..Query::at_key(&p.key, p.width, p.height, p.batch)
    }
}

/// Prices a slice of points: their findings, and the ids above the bound
/// (exceptions included, so a stale exception can be told apart).
fn price_points(points: &[&Point], pricer: &dyn Pricer, policy: &Policy) -> (Vec<Finding>, Vec<Text>) {
    let mut out = Vec::new();
    let mut over_bound = Vec::new();
    for p in points {
        // Formatted only for a finding: most points have none.
        let line = || policy.line_key(p).to_string();
        let q = point_query(p);
        let price = match pricer.quote(&q, &EnvSnapshot::default()) {
            Ok(pr) => pr,
            Err(e) => {
                out.push(
                    Finding::new(
                        Code::Coverage,
                        SHIPPED_FILE,
                        format!("point {} cannot be priced: {e:#}", p.id),
                        "see the message",
                    )
                    .line(line())
                    .points(vec![p.id.to_string()]),
                );
                continue;
            }
        };
        if price.bytes < p.demand_bytes {
            out.push(
                Finding::new(
                    Code::Coverage,
                    SHIPPED_FILE,
                    format!(
                        "point {} ({} px) is not covered: {} reserves {} B for a demand of {} B",
                        p.id,
                        p.pixels,
                        price.rule.as_str(),
                        price.bytes,
                        p.demand_bytes
                    ),
                    "the cache would spill here: run `vramfit emit` so the line covers the point",
                )
                .line(line())
                .points(vec![p.id.to_string()])
                .values(format!("≥ {}", p.demand_bytes), price.bytes),
            );
        }
        // A video point is held to the bound whatever priced it: with few
        // lines measured, its answer is often a host's estimate, and that
        // estimate's over-reservation is what the bound is for.
        // The bound is on what the answer reserves (lifted or not), for the
        // points a line of their own prices.
        if !matches!(price.own.0, Rule::FittedLine | Rule::CarriedLine) && policy.registry.video(&p.key.vae).is_none() {
            continue;
        }
        // Compared as a fraction; reduced and shown only when over.
        if policy.ratio_bound.cmp_fraction(price.bytes, p.demand_bytes) != Ok(Ordering::Less) {
            continue;
        }
        over_bound.push(p.id.clone());
        if policy.is_exception(&p.id) {
            continue;
        }
        let shown = Ratio::new(i128::from(price.bytes), i128::from(p.demand_bytes))
            .map(|r| r.to_decimal_ceil(4))
            .unwrap_or_default();
        out.push(
            Finding::new(
                Code::RatioBound,
                POLICY_FILE,
                format!(
                    "point {} is over-reserved {shown}× by the {} (bound {})",
                    p.id,
                    price.rule.as_str(),
                    crate::exact::exact_decimal(&policy.ratio_bound)
                ),
                "list it under [[exception]] with a reason, exclude it, or measure the line better",
            )
            .line(line())
            .points(vec![p.id.to_string()])
            .values(format!("≤ {}", crate::exact::exact_decimal(&policy.ratio_bound)), shown),
        );
    }
    (out, over_bound)
}

/// A grid image, batch 1.
fn shape(width: u64, height: u64) -> crate::pricing::legacy::Shape {
    crate::pricing::legacy::Shape { width, height, batch: 1 }
}

pub(super) fn floor(cx: &mut PricingCtx) {
    let Some(legacy) = cx.shipped.legacy.as_ref() else { return };
    let grid = cx.inputs.policy.grid.clone();
    let mut out = Vec::new();
    // Carried lines never price below legacy.
    for s in cx.shipped.lines.iter().filter(|s| s.kind == LineKind::Carried && s.key.temporal_tile.is_none()) {
        let Ok(centi) = s.slope_centi() else { continue };
        for (w, h) in &grid {
            let x = w.saturating_mul(*h);
            let k = &s.key;
            let Some(l) = crate::pricing::legacy::legacy_bytes(
                legacy,
                &k.vae,
                k.op,
                k.tile,
                k.conv_backend,
                k.dtype,
                shape(*w, *h),
            ) else {
                continue;
            };
            let line = reserve_bytes(centi, s.base_mib, x).unwrap_or(0);
            if line < l {
                out.push(
                    Finding::new(
                        Code::Floor,
                        POLICY_FILE,
                        format!("carried line {k} prices {w}x{h} at {line} B, below the legacy {l} B"),
                        "a carried line stands in for a measurement: raise its [[carry]] values to at least legacy",
                    )
                    .line(k)
                    .values(format!("≥ {l}"), line),
                );
            }
        }
    }
    // The unmeasured rule never prices below legacy.
    let mut tiles: Vec<u32> = cx.shipped.lines.iter().map(|l| l.key.tile).collect();
    tiles.push(0);
    tiles.sort_unstable();
    tiles.dedup();
    // Image families: a video family's floor is its hosts' estimates (video_checks).
    let families: Vec<Text> =
        cx.shipped.registry.iter().filter(|(_, e)| e.video.is_none()).map(|(f, _)| Text::from(f.as_str())).collect();
    let pricer = cx.pricer;
    let lifted = cx.shipped.traced.as_ref().is_some_and(|t| t.lifts_legacy_floor.is_some());
    for family in &families {
        for op in Op::ALL {
            for tile in &tiles {
                for dtype in Dtype::ALL {
                    for backend in ConvBackend::ALL {
                        for os in [Os::Linux, Os::Windows] {
                            for (w, h) in &grid {
                                if covers(*tile, *w, *h) {
                                    continue; // priced untiled: the tile-0 pass checks it
                                }
                                let key = LineKey {
                                    vae: family.clone(),
                                    op: *op,
                                    tile: *tile,
                                    temporal_tile: None,
                                    conv_backend: *backend,
                                    allocator: Allocator::Native,
                                    os,
                                    dtype: *dtype,
                                };
                                // The allocator is left to detection: the platform default.
                                let q = Query { allocator: Choice::Auto, ..Query::at_key(&key, *w, *h, 1) };
                                let Some(l) = crate::pricing::legacy::legacy_bytes(
                                    legacy,
                                    family,
                                    *op,
                                    *tile,
                                    *backend,
                                    *dtype,
                                    shape(*w, *h),
                                ) else {
                                    continue;
                                };
                                cx.pricings += 1;
                                // The monotone composition and the attention phase only
                                // raise a price: what the floor is about is the rule that
                                // priced the query's own line phase.
                                let mut found = pricer
                                    .quote(&q, &EnvSnapshot::default())
                                    .map(|p| crate::pricing::Quote { bytes: p.own.1, rule: p.own.0, ..p });
                                if matches!(&found, Ok(p) if p.rule == Rule::AttentionPhase) {
                                    found = pricer.price(&q, &EnvSnapshot::default()).map(|p| {
                                        let rule = p.attention.as_ref().map_or(p.rule, |a| a.line_rule);
                                        let bytes = p.attention.as_ref().map_or(p.bytes, |a| a.line_phase_bytes);
                                        crate::pricing::Quote { bytes, rule, own: (rule, bytes), line: p.line }
                                    });
                                }
                                let bad = match &found {
                                    // A measured line may price below legacy: that is what fitting is
                                    // for; so may a tile derived from a measured platform's untiled line
                                    // (the derived-tile checks restate that price).
                                    Ok(p)
                                        if matches!(
                                            p.rule,
                                            Rule::FittedLine
                                                | Rule::CarriedLine
                                                | Rule::AnyOsLine
                                                | Rule::DerivedTile
                                                | Rule::MeasuredCap
                                        ) =>
                                    {
                                        false
                                    }
                                    // A query the traced rule prices, where the file lifts the
                                    // legacy floor (`traced.lifts_legacy_floor`), stands on its
                                    // own guesses: its trace, or a higher borrowed line.
                                    Ok(p)
                                        if lifted
                                            && p.bytes < l
                                            && matches!(p.rule, Rule::Traced | Rule::UnmeasuredRule) =>
                                    {
                                        !pricer
                                            .price(&q, &EnvSnapshot::default())
                                            .is_ok_and(|full| full.traced.is_some())
                                    }
                                    Ok(p) => p.bytes < l,
                                    Err(_) => true,
                                };
                                if bad {
                                    let found_text = match &found {
                                        Ok(p) => p.bytes.to_string(),
                                        Err(e) => format!("error: {e:#}"),
                                    };
                                    out.push(
                                        Finding::new(
                                            Code::Floor,
                                            PRICING_CODE,
                                            format!(
                                                "the unmeasured rule prices {family}/{op}/{tile}/{backend}/{dtype} on {os} \
                                                 at {w}x{h} below the legacy estimate"
                                            ),
                                            "the unmeasured rule must never go below legacy: fix the pricer",
                                        )
                                        .values(format!("≥ {l}"), found_text),
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    cx.findings.extend(out);
}

/// No unmeasured answer below a measured one: a run dtype with no line of
/// its own on a platform where the same VAE, op and tile were measured in
/// another dtype is never priced below that line (the demand does not follow
/// the element size). Checked for every shipped line, every other dtype and
/// every grid size, through the pricer a user gets.
pub(super) fn other_dtype_floor(cx: &mut PricingCtx) {
    let grid = cx.inputs.policy.grid.clone();
    let own: std::collections::BTreeSet<&LineKey> = cx.shipped.lines.iter().map(|l| &l.key).collect();
    let mut out = Vec::new();
    for line in &cx.shipped.lines {
        let Ok(centi) = line.slope_centi() else { continue };
        for dtype in Dtype::ALL.iter().filter(|d| **d != line.key.dtype) {
            let key = LineKey { dtype: *dtype, ..line.key.clone() };
            if own.contains(&key) {
                continue; // its own measured line prices it, lower or not
            }
            for (w, h) in &grid {
                if covers(key.tile, *w, *h) {
                    continue;
                }
                let floor = reserve_bytes(centi, line.base_mib, w.saturating_mul(*h)).unwrap_or(0);
                cx.pricings += 1;
                let found = cx.pricer.quote(&Query::at_key(&key, *w, *h, 1), &EnvSnapshot::default());
                let bad = match &found {
                    Ok(p) => p.bytes < floor,
                    Err(_) => true,
                };
                if bad {
                    let shown = found.as_ref().map_or_else(|e| format!("error: {e:#}"), |p| p.bytes.to_string());
                    out.push(
                        Finding::new(
                            Code::Floor,
                            PRICING_CODE,
                            format!(
                                "{key} has no line, and prices {w}x{h} below {}, measured in {} on the same platform",
                                line.key, line.key.dtype
                            ),
                            "an unmeasured dtype must never price below another dtype's measured line of the same \
                             VAE and platform: fix the pricer",
                        )
                        .line(&line.key)
                        .values(format!("≥ {floor}"), shown),
                    );
                }
            }
        }
    }
    cx.findings.extend(out);
}

/// What a query for `key` on `os` must price at `x` pixels, restated from
/// the shipped lines alone: the key's own line, or for an OS-specific key
/// the line of the same platform measured without an OS when that one is
/// higher (it is a lower bound for every OS).
pub(super) fn expected_for(
    shipped: &crate::coefficients::CoefficientsFile,
    key: &LineKey,
    x: u64,
) -> Option<(u64, Rule)> {
    let price = |k: &LineKey| {
        let l = shipped.lines.iter().find(|l| &l.key == k)?;
        let rule = if l.kind == LineKind::Carried { Rule::CarriedLine } else { Rule::FittedLine };
        Some((line_price(shipped, l, x)?, rule))
    };
    let own = price(key);
    let any = (key.os != Os::Any).then(|| price(&LineKey { os: Os::Any, ..key.clone() })).flatten();
    match (own, any) {
        (Some(o), Some(a)) if a.0 > o.0 => Some((a.0, Rule::AnyOsLine)),
        (Some(o), _) => Some(o),
        (None, Some(a)) => Some((a.0, Rule::AnyOsLine)),
        (None, None) => None,
    }
}

/// What a shipped line prices at `x`, restated from the file alone: its
/// formula; past its largest measured size, the formula's price there grown
/// as the family's traced shape for the same key grows, where that is
/// higher (docs/traced.md, "Past the measured range"). None: an overflow.
pub(super) fn line_price(
    shipped: &crate::coefficients::CoefficientsFile,
    line: &crate::coefficients::ShippedLine,
    x: u64,
) -> Option<u64> {
    let centi = line.slope_centi().ok()?;
    let formula = reserve_bytes(centi, line.base_mib, x).ok()?;
    let Some([_, end]) = line.size_range.filter(|[_, end]| x > *end) else { return Some(formula) };
    let k = &line.key;
    let shape = shipped.traced.as_ref().and_then(|t| {
        t.shapes_on(k.vae.as_str(), k.conv_backend, k.allocator)
            .find(|s| s.prices(k.vae.as_str(), k.op, k.dtype, k.tile, k.temporal_tile))
    });
    let Some(shape) = shape else { return Some(formula) };
    let (at_end, at_x) = (shape.at(end)?, shape.at(x)?);
    if at_end == 0 {
        return Some(formula);
    }
    let grown =
        (u128::from(reserve_bytes(centi, line.base_mib, end).ok()?) * u128::from(at_x)).div_ceil(u128::from(at_end));
    Some(formula.max(u64::try_from(grown).ok()?))
}

pub(super) fn query_path(cx: &mut PricingCtx) {
    let grid = cx.inputs.policy.grid.clone();
    let mut out = Vec::new();
    // A video line's own key is restated with its clip term in video_checks.
    for s in cx.shipped.lines.iter().filter(|s| s.key.temporal_tile.is_none()) {
        let Ok(centi) = s.slope_centi() else { continue };
        let k = &s.key;
        let os_specific = crate::policy::is_os_specific(&cx.shipped.os_specific, k.conv_backend, k.allocator);
        // The OS a user's query names: the line's own; for a line measured
        // without an OS on an OS-specific platform, every OS (it prices each
        // of them as a lower bound) and `any` itself.
        let hosts: Vec<(Os, Choice<Os>)> = match (k.os, os_specific) {
            (Os::Any, false) => vec![(Os::Linux, Choice::Auto)],
            (Os::Any, true) => {
                vec![(Os::Linux, Choice::Auto), (Os::Windows, Choice::Auto), (Os::Linux, Choice::Given(Os::Any))]
            }
            (os, _) => vec![(os, Choice::Auto)],
        };
        let mut reported = false;
        for (host, os_choice) in hosts {
            let asked = match os_choice {
                Choice::Given(o) => o,
                Choice::Auto => host,
            };
            let key_os = if os_specific { asked } else { Os::Any };
            let query_key = LineKey { os: key_os, ..k.clone() };
            let paths = [
                ("detected", Choice::Auto, os_choice, env_for(k.conv_backend, k.allocator, host)),
                ("given", Choice::Given(k.allocator), Choice::Given(asked), EnvSnapshot::default()),
            ];
            // A tile as large as the image prices the untiled key, by design.
            for (w, h) in grid.iter().filter(|(w, h)| !covers(k.tile, *w, *h)) {
                for batch in [1u64, 2] {
                    for (how, allocator, os, env) in &paths {
                        if reported {
                            continue;
                        }
                        let x = w.saturating_mul(*h).saturating_mul(batch);
                        let Some((line_price, line_rule)) = expected_for(cx.shipped, &query_key, x) else { continue };
                        // A math-kernel platform: the larger of the line and the attention phase.
                        let (expected, want_rule) =
                            match super::attention_checks::restated(cx.shipped, &query_key, *w, *h, batch) {
                                Some(phase) if phase > line_price => (phase, Rule::AttentionPhase),
                                _ => (line_price, line_rule),
                            };
                        let q = Query { allocator: *allocator, os: *os, ..Query::at_key(k, *w, *h, batch) };
                        cx.pricings += 1;
                        let got = cx.pricer.quote(&q, env);
                        // The query's own rule gives the formula; the monotone
                        // composition may only raise the answer above it.
                        let ok = matches!(&got, Ok(p) if p.own == (want_rule, expected) && p.bytes >= expected);
                        if !ok {
                            let found = match &got {
                                Ok(p) => format!("{} B by the {} ({})", p.bytes, p.rule.as_str(), p.line),
                                Err(e) => format!("error: {e:#}"),
                            };
                            out.push(
                                Finding::new(
                                    Code::QueryPath,
                                    PRICING_CODE,
                                    format!(
                                        "pricing {k}'s own key on {asked} at {w}x{h} batch {batch} ({how} allocator/OS) \
                                         does not give the line's formula {} B/px × {x} px + {} MiB{}",
                                        slope_text(centi),
                                        s.base_mib,
                                        if want_rule == Rule::AnyOsLine { " (or the higher line measured without an OS)" } else { "" }
                                    ),
                                    "the pricer drops a term, scales batch wrongly, or ignores allocator/OS detection",
                                )
                                .line(k)
                                .values(format!("{expected} B by the {}", want_rule.as_str()), found),
                            );
                            reported = true;
                        }
                    }
                }
            }
        }
    }
    cx.findings.extend(out);
}
