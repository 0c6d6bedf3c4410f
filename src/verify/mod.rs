//! `verify`: re-derive everything from the points and the policy, compare
//! the shipped file with it field by field, and price every point and every
//! line's own key through the same [`Pricer`] that `reserve` uses. Each
//! failure is a [`Finding`] with a stable [`Code`]. What each code proves:
//! `docs/DESIGN.md`, "What verify proves".

mod certificate;
mod pricing_checks;
mod reproduce;

use crate::coefficients::CoefficientsFile;
use crate::lines::{assemble, Line};
use crate::pricing::Pricer;
use crate::workspace::Inputs;
use anyhow::Result;
use serde::Serialize;

pub use crate::findings::{Code, Finding, POINTS_FILE, POLICY_FILE, PRICING_CODE, SHIPPED_FILE};

/// The result of `verify`.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// `true` when there are no findings.
    pub ok: bool,
    /// Lines in the shipped file (fitted and carried).
    pub lines: usize,
    /// Keys too thin to fit.
    pub insufficient: usize,
    /// Points in the store.
    pub points: usize,
    /// Points included in fits and checks.
    pub included: usize,
    /// Pricings made through the pricer (coverage, floor, query path).
    pub pricings: usize,
    /// Findings, sorted by line, code and points.
    pub findings: Vec<Finding>,
}

/// What the reproduction checks share: the shipped file against the one
/// `emit` would write now.
pub(crate) struct Ctx<'a> {
    pub inputs: &'a Inputs,
    pub shipped: &'a CoefficientsFile,
    /// The shipped file as read, every field of it (unknown ones too).
    pub raw: &'a serde_json::Value,
    /// The file `emit` would write now, as JSON.
    pub expected: &'a serde_json::Value,
    pub fresh: &'a [Line],
    pub findings: Vec<Finding>,
}

/// What the checks that price share: the shipped file and the pricer
/// `reserve` uses, with a count of the pricings made.
pub(crate) struct PricingCtx<'a> {
    pub inputs: &'a Inputs,
    pub shipped: &'a CoefficientsFile,
    pub pricer: &'a dyn Pricer,
    pub pricings: usize,
    pub findings: Vec<Finding>,
}

/// What `emit` would write now from the inputs: its lines and the file as JSON.
pub fn expected(inputs: &Inputs) -> Result<(Vec<Line>, serde_json::Value)> {
    let fresh = assemble(&inputs.points, &inputs.policy)?;
    let file = crate::coefficients::build(&fresh, &inputs.policy, &inputs.points_digest, &inputs.policy_digest);
    Ok((fresh, serde_json::to_value(&file)?))
}

/// Verifies a shipped file (`raw` as read, `shipped` as loaded) against the
/// inputs, pricing with `pricer`.
pub fn run(
    inputs: &Inputs,
    raw: &serde_json::Value,
    shipped: &CoefficientsFile,
    pricer: &dyn Pricer,
) -> Result<VerifyReport> {
    // The fresh fit and its comparison run on a second thread while this
    // one prices every point: on two cores the two halves overlap.
    std::thread::scope(|s| {
        let reproduced = s.spawn(|| -> Result<Vec<Finding>> {
            let (fresh, expected) = expected(inputs)?;
            Ok(reproduction(inputs, &fresh, &expected, raw, shipped))
        });
        let (mut findings, pricings) = pricing(inputs, shipped, pricer);
        findings.extend(reproduced.join().map_err(|_| anyhow::anyhow!("the verify thread failed"))??);
        Ok(finish_all(findings, shipped, inputs, pricings))
    })
}

/// The checks a file `emit` has just built can fail: the certificate and
/// the checks that price. The reproduction checks would compare the file
/// with itself, which proves nothing, so they are not run.
pub fn run_fresh(inputs: &Inputs, file: &CoefficientsFile, pricer: &dyn Pricer) -> VerifyReport {
    let (findings, pricings) = pricing(inputs, file, pricer);
    finish_all(findings, file, inputs, pricings)
}

/// The checks that compare the shipped file with the fresh one.
fn reproduction(
    inputs: &Inputs,
    fresh: &[Line],
    expected: &serde_json::Value,
    raw: &serde_json::Value,
    shipped: &CoefficientsFile,
) -> Vec<Finding> {
    let mut cx = Ctx { inputs, shipped, raw, expected, fresh, findings: Vec::new() };
    cx.findings.extend(reproduce::policy_problems(inputs));
    reproduce::settings(&mut cx);
    reproduce::lines(&mut cx);
    let moved = reproduce::moved_lines(&cx.findings);
    cx.findings.extend(reproduce::whole_file(cx.expected, cx.raw, Some(&moved)));
    cx.findings
}

/// The certificate and the checks that price through `pricer`, with the
/// number of pricings made.
fn pricing(inputs: &Inputs, shipped: &CoefficientsFile, pricer: &dyn Pricer) -> (Vec<Finding>, usize) {
    let mut cx = PricingCtx { inputs, shipped, pricer, pricings: 0, findings: Vec::new() };
    certificate::check(&mut cx);
    pricing_checks::coverage_and_ratios(&mut cx);
    pricing_checks::floor(&mut cx);
    pricing_checks::query_path(&mut cx);
    (cx.findings, cx.pricings)
}

fn finish_all(findings: Vec<Finding>, shipped: &CoefficientsFile, inputs: &Inputs, pricings: usize) -> VerifyReport {
    let included = inputs.points.iter().filter(|p| !inputs.policy.is_excluded(&p.id)).count();
    finish(findings, shipped.lines.len(), shipped.insufficient.len(), inputs, included, pricings)
}

/// The report for a shipped file that does not load (a wrong type, an
/// unknown or missing field, an unusable value): every field that differs
/// from a fresh `emit`, and the loader's own message. Nothing is priced.
pub fn unloadable(inputs: &Inputs, raw: &serde_json::Value, error: &anyhow::Error) -> Result<VerifyReport> {
    let (_, expected) = expected(inputs)?;
    let mut findings = reproduce::policy_problems(inputs);
    findings.extend(reproduce::whole_file(&expected, raw, None));
    findings.push(Finding::new(
        Code::Schema,
        SHIPPED_FILE,
        format!("{error:#}"),
        "reserve and plan refuse this file: restore it, or run `vramfit emit`",
    ));
    let included = inputs.points.iter().filter(|p| !inputs.policy.is_excluded(&p.id)).count();
    Ok(finish(findings, 0, 0, inputs, included, 0))
}

fn finish(
    mut findings: Vec<Finding>,
    lines: usize,
    insufficient: usize,
    inputs: &Inputs,
    included: usize,
    pricings: usize,
) -> VerifyReport {
    findings.sort_by(|a, b| {
        (&a.line, a.code.as_str(), &a.path, &a.points, &a.message).cmp(&(
            &b.line,
            b.code.as_str(),
            &b.path,
            &b.points,
            &b.message,
        ))
    });
    findings.dedup();
    VerifyReport {
        ok: findings.is_empty(),
        lines,
        insufficient,
        points: inputs.points.len(),
        included,
        pricings,
        findings,
    }
}

/// The report for a shipped file that cannot be read as this version.
pub fn version_only(inputs: &Inputs, message: String) -> VerifyReport {
    VerifyReport {
        ok: false,
        lines: 0,
        insufficient: 0,
        points: inputs.points.len(),
        included: 0,
        pricings: 0,
        findings: vec![Finding::new(
            Code::Version,
            SHIPPED_FILE,
            message,
            "re-emit the file with this vramfit (`vramfit emit`), or run the vramfit that wrote it",
        )],
    }
}
