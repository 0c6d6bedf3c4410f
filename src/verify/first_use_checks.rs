//! Each declared first use against its platform's fresh points (docs/fit.md, "First use").

use super::PricingCtx;
use crate::findings::{Code, Finding, POLICY_FILE};

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
