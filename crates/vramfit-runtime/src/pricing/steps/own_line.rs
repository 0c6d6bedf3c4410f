//! Step 1 of the pricing order (docs/DESIGN.md, "Pricing"): `OwnLine`.

use super::*;

/// The query's own line, or its platform's line measured without an OS,
/// whichever prices higher.
pub(super) struct OwnLine;

impl Step for OwnLine {
    fn name(&self) -> &'static str {
        "OwnLine"
    }

    fn rules(&self) -> &'static [Rule] {
        &[Rule::FittedLine, Rule::CarriedLine, Rule::AnyOsLine]
    }
    fn effect(&self) -> Effect {
        Effect::Decide
    }
    fn offer<'a>(
        &self,
        c: &'a Coefficients,
        _: &Query,
        ask: &mut Ask<'a>,
        _: Option<&Candidate<'a>>,
    ) -> Result<Option<Candidate<'a>>> {
        let Some((rule, k, coef, b)) = c.measured_line(&mut ask.resolved.key, ask.at)? else { return Ok(None) };
        let bytes = add(add(b, ask.clip)?, ask.growth)?;
        Ok(Some(Candidate { rule, basis: Basis::Measured, line: Some((k, coef, b)), derived: false, bytes }))
    }
}
