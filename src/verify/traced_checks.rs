//! Each measured family against its class (docs/traced.md): within one
//! class on one platform, op, dtype and tile, a family's demand over its
//! traced bytes should fall where the other families' does, give or take
//! the traced margin. A band outside that is a family in the wrong class,
//! or points that measured something other than what the trace shapes.

use super::PricingCtx;
use crate::exact::Ratio;
use crate::findings::{Code, Finding, POLICY_FILE};
use crate::traced::{calibration_points, Calibrated, Shapes};
use std::cmp::Ordering;
use std::collections::BTreeSet;

/// `[lowest, highest]` demand over traced bytes of some points.
fn band<'a>(points: impl Iterator<Item = &'a Calibrated<'a>>) -> Option<(Ratio, Ratio)> {
    let mut out: Option<(Ratio, Ratio)> = None;
    for c in points {
        let r = Ratio::new(i128::from(c.demand()), i128::from(c.traced)).ok()?;
        out = Some(match out {
            None => (r, r),
            Some((lo, hi)) => (
                if r.cmp_exact(&lo).ok()? == Ordering::Less { r } else { lo },
                if r.cmp_exact(&hi).ok()? == Ordering::Greater { r } else { hi },
            ),
        });
    }
    out
}

fn shown(r: &Ratio) -> String {
    crate::exact::format_scaled(r.checked_mul(Ratio::int(1000)).map(|s| s.floor()).unwrap_or(0), 3)
}

/// A `traced-band` finding for each family whose band does not meet its
/// class's (the other families', widened by the traced margin both ways).
pub(crate) fn bands(cx: &mut PricingCtx) {
    let policy = &cx.inputs.policy;
    let Ok(shapes) = Shapes::of(&cx.inputs.traces, policy) else { return };
    let grow = Ratio::int(1).checked_add(policy.traced.as_ref().map_or(policy.margin, |t| t.margin));
    let Ok(grow) = grow else { return };
    for (key, group) in calibration_points(&cx.inputs.points, policy, &shapes) {
        let families: BTreeSet<&str> = group.iter().map(|c| c.point.key.vae.as_str()).collect();
        if families.len() < 2 {
            continue;
        }
        for family in families {
            let (own, others): (Vec<&Calibrated>, Vec<&Calibrated>) =
                group.iter().partition(|c| c.point.key.vae.as_str() == family);
            let (Some((lo, hi)), Some((olo, ohi))) = (band(own.iter().copied()), band(others.iter().copied())) else {
                continue;
            };
            let (Ok(wlo), Ok(whi)) = (olo.checked_div(grow), ohi.checked_mul(grow)) else { continue };
            let below = hi.cmp_exact(&wlo).is_ok_and(|o| o == Ordering::Less);
            let above = lo.cmp_exact(&whi).is_ok_and(|o| o == Ordering::Greater);
            if !(below || above) {
                continue;
            }
            let line = own[0].line.clone();
            let message = format!(
                "family {family}: demand over traced bytes {}–{} on {} {} {} {} {} (tile {}), outside class {}'s {}–{} \
                 (the other families', widened by the traced margin to {}–{})",
                shown(&lo),
                shown(&hi),
                key.conv_backend,
                key.allocator,
                key.os,
                key.op,
                key.dtype,
                key.tile,
                key.class.as_str(),
                shown(&olo),
                shown(&ohi),
                shown(&wlo),
                shown(&whi)
            );
            cx.findings.push(
                Finding::new(
                    Code::TracedBand,
                    POLICY_FILE,
                    message,
                    "check the family's `class` in fits/policy.toml, or what its points measured (a borrowed or \
                     mislabelled figure)",
                )
                .line(line)
                .points(own.iter().map(|c| c.point.id.to_string())),
            );
        }
    }
}
