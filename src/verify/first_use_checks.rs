//! Each declared first use against its platform's fresh points (docs/fit.md, "First use").

use super::PricingCtx;
use crate::contract::first_use::{first_use_for, FirstUseMatch};
use crate::exact::MIB;
use crate::findings::{Code, Finding, POLICY_FILE};
use crate::vocab::Platform;
use std::collections::BTreeMap;

/// Each declared first use against what its platform's fresh points prove
/// (docs/fit.md, "First use"): `mib` must be `max(driver − reserved)` over
/// them, rounded up to MiB, and some point must prove it. Restated here
/// from the points, not read back from the shipped file.
pub(crate) fn first_use(cx: &mut PricingCtx) {
    for term in crate::coefficients::first_use(&cx.inputs.policy, &cx.inputs.points) {
        let platform = format!("{} {} {}", term.conv_backend, term.allocator, term.os);
        if term.points.is_empty() {
            cx.findings.push(Finding::new(
                Code::FirstUse,
                POLICY_FILE,
                format!("first use on {platform}: no included fresh point of the platform carries both a driver and a reserved delta"),
                "measure the platform with the harness (fresh processes, driver and reserved deltas), or remove the [[first_use]]",
            ));
        } else if term.mib != term.measured_mib {
            let message = format!(
                "first use on {platform} is declared {} MiB; its {} fresh point(s) prove {} MiB (max driver − reserved)",
                term.mib,
                term.points.len(),
                term.measured_mib
            );
            cx.findings.push(
                Finding::new(Code::FirstUse, POLICY_FILE, message, "set `mib` to what the points prove")
                    .points(term.points.clone())
                    .values(format!("{} MiB", term.measured_mib), format!("{} MiB", term.mib)),
            );
        }
    }
}

/// Fresh points of a platform with no first use of its own declared: their
/// lines would carry the term in every warm answer (and a borrowed term
/// would be subtracted in its place), so the platform's own figure, what
/// its points prove, must be declared.
pub(crate) fn undeclared(cx: &mut PricingCtx) {
    let policy = &cx.inputs.policy;
    let mut by_platform: BTreeMap<Platform, (u64, Vec<String>)> = BTreeMap::new();
    for p in cx.inputs.points.iter().filter(|p| !policy.is_excluded(&p.id)) {
        let Some(gap) = p.first_use_gap() else { continue };
        let entry = by_platform.entry(p.key.platform()).or_default();
        entry.0 = entry.0.max(gap);
        entry.1.push(p.id.to_string());
    }
    for (here, (gap, mut ids)) in by_platform {
        let own = first_use_for(&policy.first_use, here).is_some_and(|(_, m)| m == FirstUseMatch::Own);
        let (backend, allocator, os) = (here.conv_backend, here.allocator, here.os);
        if own || gap.div_ceil(MIB) == 0 {
            continue;
        }
        ids.sort();
        let message = format!(
            "{} fresh point(s) on {backend} {allocator} {os} prove a first use of {} MiB (max driver − reserved), and \
             no [[first_use]] of the platform declares it: its lines are fitted on demand that holds it",
            ids.len(),
            gap.div_ceil(MIB)
        );
        cx.findings.push(
            Finding::new(
                Code::FirstUse,
                POLICY_FILE,
                message,
                "declare it: [[first_use]] with this conv_backend, allocator, os, mib and a source",
            )
            .points(ids),
        );
    }
}
