//! The certificate of each fitted line, checked without the hull code: the
//! support points exist and lie on the shipped unrounded envelope, no point
//! lies above it, the envelope is optimal, and the shipped values are that
//! envelope with the margin, rounded up.

use super::{Code, Finding, PricingCtx, SHIPPED_FILE};
use crate::exact::{Ratio, MIB};
use crate::lines::LineKind;
use std::cmp::Ordering;

pub(super) fn check(cx: &mut PricingCtx) {
    let groups = cx.groups;
    let margin = cx.shipped.margin;
    let policy = &cx.inputs.policy;
    // Where a point sits in its line's coordinates: (pixels, own demand)
    // for an image point; (working set, own demand − clip copies) for a
    // video one (the op's own demand: a fresh point's less its first use).
    let xy = |p: &crate::points::Point| {
        let (x, clip) = policy.fit_coordinates(p).unwrap_or((p.pixels, 0));
        (x, policy.own_demand(p).saturating_sub(clip))
    };
    let mut out = Vec::new();
    for s in cx.shipped.lines.iter().filter(|s| s.kind == LineKind::Fitted) {
        let key = s.key.to_string();
        let fail = |msg: String| {
            Finding::new(
                Code::Certificate,
                SHIPPED_FILE,
                format!("line {key}: {msg}"),
                "the shipped envelope is not the optimum of these points: run `vramfit emit`",
            )
            .line(&key)
        };
        let Some((a, b)) = s.envelope_values() else {
            out.push(fail("a fitted line without an exact envelope".into()));
            continue;
        };
        let pts = groups.get(&s.key).map(Vec::as_slice).unwrap_or(&[]);
        if a.is_negative() || b.is_negative() {
            out.push(fail(format!("negative envelope (slope {a}, base {b})")));
        }
        let on = |x: u64| a.checked_mul(Ratio::int(i128::from(x))).and_then(|v| v.checked_add(b));
        // Support points exist and lie exactly on the envelope.
        let mut support = Vec::new();
        for id in &s.support {
            match pts.iter().find(|p| &p.id == id) {
                None => out
                    .push(fail(format!("support point {id} is not among the line's points")).points(vec![id.clone()])),
                Some(p) => {
                    let (x, y) = xy(p);
                    if on(x).ok() != Some(Ratio::int(i128::from(y))) {
                        out.push(
                            fail(format!("support point {id} does not lie on the envelope"))
                                .points(vec![id.clone()])
                                .values(y, on(x).map(|v| v.to_string()).unwrap_or_default()),
                        );
                    }
                    support.push(x);
                }
            }
        }
        // No point above the envelope.
        for p in pts {
            let (x, y) = xy(p);
            if a.cmp_line_at(&b, x, y) != Ok(Ordering::Less) {
                continue;
            }
            out.push(
                fail(format!("point {} lies above the envelope", p.id))
                    .points(vec![p.id.to_string()])
                    .values(format!("≥ {y}"), on(x).map(|v| v.to_string()).unwrap_or_default()),
            );
        }
        // Optimality: an edge is optimal when the mean size lies within it.
        if s.support_kind.as_deref() == Some("edge") && support.len() == 2 && !pts.is_empty() {
            let n = pts.len() as u128;
            let sum: u128 = pts.iter().map(|p| u128::from(xy(p).0)).sum();
            let (lo, hi) = (support[0].min(support[1]), support[0].max(support[1]));
            if !(n * u128::from(lo) <= sum && sum <= n * u128::from(hi)) {
                out.push(fail("the mean size lies outside the support edge: the edge is not the optimum".into()));
            }
        }
        // The shipped values are the envelope with the margin, rounded up.
        let grow = Ratio::int(1).checked_add(margin);
        let want = grow.and_then(|g| {
            let slope = a.checked_mul(g)?.checked_mul(Ratio::int(100))?.ceil();
            let base = b.checked_mul(g)?.checked_div(Ratio::int(i128::from(MIB)))?.ceil();
            Ok((slope, base))
        });
        let have = s.slope_centi().ok().map(|c| (i128::from(c), i128::from(s.base_mib)));
        if let (Ok(w), Some(h)) = (want, have) {
            if w != h {
                out.push(
                    Finding::new(
                        Code::Certificate,
                        SHIPPED_FILE,
                        format!("line {key}: the shipped slope/base are not the envelope with the margin, rounded up"),
                        "a shipped value was edited after `emit`: run `vramfit emit`",
                    )
                    .line(&key)
                    .values(
                        format!("{} B/px + {} MiB", crate::exact::format_scaled(w.0, 2), w.1),
                        format!("{} B/px + {} MiB", s.slope, s.base_mib),
                    ),
                );
            }
        }
    }
    cx.findings.extend(out);
}
