//! `verify`: re-derive everything from the points and the policy, compare
//! the shipped file with it field by field, and price every point and every
//! line's own key through the same [`Pricer`] that `reserve` uses. Each
//! failure is a [`Finding`] with a stable [`Code`]. What each code proves:
//! `docs/DESIGN.md`, "What verify proves".

mod attention_checks;
mod audit;
mod certificate;
mod first_use_checks;
pub mod fresh;
pub(crate) mod pricing_checks;
mod reproduce;
mod tile_checks;
mod traced_checks;
mod video_checks;

use crate::coefficients::CoefficientsFile;
use crate::lines::{assemble_groups, group, Groups, Line};
use crate::pricing::Pricer;
use crate::workspace::Inputs;
use anyhow::Result;
use serde::Serialize;

pub use crate::findings::{Code, Finding, POINTS_FILE, POLICY_FILE, PRICING_CODE, SHIPPED_FILE};
pub use audit::{audit, audit_with};

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
    /// The included points of each line key.
    pub groups: &'a Groups<'a>,
    pub shipped: &'a CoefficientsFile,
    pub pricer: &'a dyn Pricer,
    pub pricings: usize,
    pub findings: Vec<Finding>,
    /// Tiled points whose derived tile price is over the ratio bound
    /// (exceptions included): an exception listed for that reason is not stale.
    pub derived_over_bound: std::collections::BTreeSet<String>,
}

/// What a pricing that a check refused gave, as a finding shows it:
/// `N B by the RULE`, or the error.
pub(crate) fn quoted(got: &crate::error::Result<crate::pricing::Quote>) -> String {
    match got {
        Ok(q) => format!("{} B by the {}", q.bytes, q.rule.as_str()),
        Err(e) => format!("error: {e:#}"),
    }
}

/// Whether a tile covers a whole `w × h` image (so it prices untiled): the
/// checks that price on a grid skip those sizes for tiled keys.
pub(crate) fn covers(tile: u32, w: u64, h: u64) -> bool {
    tile != 0 && u64::from(tile) >= w && u64::from(tile) >= h
}

/// What `emit` would write now from the inputs: its lines and the file.
pub fn expected(inputs: &Inputs) -> Result<(Vec<Line>, CoefficientsFile)> {
    expected_from(inputs, &group(&inputs.points, &inputs.policy))
}

fn expected_from(inputs: &Inputs, groups: &Groups) -> Result<(Vec<Line>, CoefficientsFile)> {
    let fresh = assemble_groups(groups, &inputs.policy)?;
    let file = crate::coefficients::build_from(&fresh, inputs)?;
    Ok((fresh, file))
}

/// Verifies a shipped file (`text` as read, `shipped` as loaded) against
/// the inputs, pricing with `pricer`.
pub fn run(inputs: &Inputs, text: &str, shipped: &CoefficientsFile, pricer: &dyn Pricer) -> Result<VerifyReport> {
    // The fresh fit and its comparison run on a second thread while this
    // one prices every point: on two cores the two halves overlap.
    let groups = group(&inputs.points, &inputs.policy);
    // (A small store is checked on one thread: a second costs more than it saves.)
    let (reproduced, (mut findings, pricings)) = crate::par::join(
        inputs.points.len() >= crate::par::FEW_POINTS,
        || -> Result<Vec<Finding>> {
            let (fresh, file) = expected_from(inputs, &groups)?;
            reproduction(inputs, &fresh, &file, text, shipped)
        },
        || pricing(inputs, &groups, shipped, pricer),
    );
    findings.extend(reproduced?);
    Ok(finish_all(findings, shipped, inputs, pricings))
}

/// The checks a file `emit` has just built can fail: the certificate and
/// the checks that price. The reproduction checks would compare the file
/// with itself, which proves nothing, so they are not run.
pub fn run_fresh(inputs: &Inputs, groups: &Groups, file: &CoefficientsFile, pricer: &dyn Pricer) -> VerifyReport {
    let (findings, pricings) = pricing(inputs, groups, file, pricer);
    finish_all(findings, file, inputs, pricings)
}

/// The checks that compare the shipped file with the fresh one. A file
/// byte for byte what `emit` would write reproduces by definition: its
/// fields are not walked, and its JSON tree is never built (at 10^6 points
/// the walk was a third of `verify`, the tree a tenth of its memory).
fn reproduction(
    inputs: &Inputs,
    fresh: &[Line],
    file: &CoefficientsFile,
    text: &str,
    shipped: &CoefficientsFile,
) -> Result<Vec<Finding>> {
    let mut findings = reproduce::policy_problems(inputs);
    if crate::fsio::writes_exactly(file, text.as_bytes())? {
        return Ok(findings);
    }
    let expected = serde_json::to_value(file)?;
    let raw: serde_json::Value = serde_json::from_str(text)?;
    let raw = &raw;
    let mut cx = Ctx { inputs, shipped, raw, expected: &expected, fresh, findings: Vec::new() };
    cx.findings.append(&mut findings);
    reproduce::settings(&mut cx);
    reproduce::lines(&mut cx);
    let moved = reproduce::moved_lines(&cx.findings);
    cx.findings.extend(reproduce::whole_file(cx.expected, cx.raw, Some(&moved)));
    Ok(cx.findings)
}

/// The certificate and the checks that price through `pricer`, with the
/// number of pricings made.
fn pricing(inputs: &Inputs, groups: &Groups, shipped: &CoefficientsFile, pricer: &dyn Pricer) -> (Vec<Finding>, usize) {
    let mut cx = PricingCtx {
        inputs,
        groups,
        shipped,
        pricer,
        pricings: 0,
        findings: Vec::new(),
        derived_over_bound: Default::default(),
    };
    certificate::check(&mut cx);
    tile_checks::measured_tiles(&mut cx);
    pricing_checks::coverage_and_ratios(&mut cx);
    pricing_checks::floor(&mut cx);
    pricing_checks::other_dtype_floor(&mut cx);
    pricing_checks::query_path(&mut cx);
    tile_checks::unmeasured_tiles(&mut cx);
    tile_checks::monotone(&mut cx);
    attention_checks::phase(&mut cx);
    video_checks::own_lines(&mut cx);
    video_checks::estimate_floor(&mut cx);
    traced_checks::bands(&mut cx);
    first_use_checks::first_use(&mut cx);
    first_use_checks::undeclared(&mut cx);
    (cx.findings, cx.pricings)
}

fn finish_all(findings: Vec<Finding>, shipped: &CoefficientsFile, inputs: &Inputs, pricings: usize) -> VerifyReport {
    finish(findings, shipped.lines.len(), shipped.insufficient.len(), inputs, pricings)
}

/// The report for a shipped file that does not load (a wrong type, an
/// unknown or missing field, an unusable value): every field that differs
/// from a fresh `emit`, and the loader's own message. Nothing is priced.
pub fn unloadable(inputs: &Inputs, raw: &serde_json::Value, error: &anyhow::Error) -> Result<VerifyReport> {
    let expected = serde_json::to_value(expected(inputs)?.1)?;
    let mut findings = reproduce::policy_problems(inputs);
    findings.extend(reproduce::whole_file(&expected, raw, None));
    findings.push(Finding::new(
        Code::Schema,
        SHIPPED_FILE,
        format!("{error:#}"),
        "reserve and plan refuse this file: restore it, or run `vramfit emit`",
    ));
    Ok(finish(findings, 0, 0, inputs, 0))
}

fn finish(findings: Vec<Finding>, lines: usize, insufficient: usize, inputs: &Inputs, pricings: usize) -> VerifyReport {
    let included = inputs.points.iter().filter(|p| !inputs.policy.is_excluded(&p.id)).count();
    let mut findings = sorted(findings);
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

/// Findings sorted by line, code, path, points and message (a stable
/// sort). They are bucketed by (line, code) first: each bucket arrives
/// nearly sorted (a check walks the points in id order), so sorting it is
/// close to linear, where one sort of 10^5 findings compared long strings
/// a million times.
pub(crate) fn sorted(findings: Vec<Finding>) -> Vec<Finding> {
    let mut buckets: std::collections::BTreeMap<(Option<&str>, &str), Vec<usize>> = Default::default();
    for (i, f) in findings.iter().enumerate() {
        buckets.entry((f.line.as_deref(), f.code.as_str())).or_default().push(i);
    }
    let mut order = Vec::with_capacity(findings.len());
    for mut idx in buckets.into_values() {
        idx.sort_by(|a, b| {
            let (a, b) = (&findings[*a], &findings[*b]);
            (&a.path, &a.points, &a.message).cmp(&(&b.path, &b.points, &b.message))
        });
        order.extend(idx);
    }
    let mut slots: Vec<Option<Finding>> = findings.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}
