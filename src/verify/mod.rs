//! `verify` (SPEC §8): re-derive everything from the points and the policy,
//! compare with the shipped file, and price every point and every line's own
//! key through the same [`Pricer`] that `reserve` uses. Each failure is a
//! [`Finding`] with a stable code.

mod certificate;
mod pricing_checks;
mod reproduce;

use crate::coefficients::assemble::{assemble, Line};
use crate::coefficients::CoefficientsFile;
use crate::inputs::Inputs;
use crate::pricing::Pricer;
use anyhow::Result;
use serde::Serialize;

/// The files a finding can point at.
pub const POINTS_FILE: &str = "measurements/vae.json";
pub const POLICY_FILE: &str = "fits/policy.toml";
pub const SHIPPED_FILE: &str = "fits/vae.json";
pub const PRICING_CODE: &str = "src/pricing/mod.rs";

/// Every code verify can report, in the order the README documents them.
pub const CODES: &[&str] = &[
    "version",
    "unknown-key",
    "unknown-id",
    "margin",
    "settings",
    "digest",
    "reproduce",
    "points-changed",
    "certificate",
    "coverage",
    "ratio-bound",
    "stale-exception",
    "floor",
    "query-path",
];

/// One failed check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable code (see [`CODES`]).
    pub code: &'static str,
    /// The file to look at.
    pub file: &'static str,
    /// The line key, where the finding is about one line.
    pub line: Option<String>,
    /// The point ids involved.
    pub points: Vec<String>,
    /// What the check expected.
    pub expected: Option<String>,
    /// What it found.
    pub found: Option<String>,
    /// What is wrong, in words.
    pub message: String,
    /// What to do next.
    pub hint: String,
}

impl Finding {
    pub fn new(code: &'static str, file: &'static str, message: impl Into<String>, hint: impl Into<String>) -> Finding {
        Finding {
            code,
            file,
            line: None,
            points: vec![],
            expected: None,
            found: None,
            message: message.into(),
            hint: hint.into(),
        }
    }

    pub fn line(mut self, key: impl ToString) -> Finding {
        self.line = Some(key.to_string());
        self
    }

    pub fn points(mut self, ids: Vec<String>) -> Finding {
        self.points = ids;
        self
    }

    pub fn values(mut self, expected: impl ToString, found: impl ToString) -> Finding {
        self.expected = Some(expected.to_string());
        self.found = Some(found.to_string());
        self
    }
}

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

/// Running totals the checks share.
pub(crate) struct Ctx<'a> {
    pub inputs: &'a Inputs,
    pub shipped: &'a CoefficientsFile,
    pub fresh: Vec<Line>,
    pub pricer: &'a dyn Pricer,
    pub pricings: usize,
    pub findings: Vec<Finding>,
}

/// Verifies a shipped file against the inputs, pricing with `pricer`.
pub fn run(inputs: &Inputs, shipped: &CoefficientsFile, pricer: &dyn Pricer) -> Result<VerifyReport> {
    let fresh = assemble(&inputs.points, &inputs.policy)?;
    let mut cx = Ctx { inputs, shipped, fresh, pricer, pricings: 0, findings: Vec::new() };
    reproduce::policy_problems(&mut cx);
    reproduce::settings(&mut cx);
    reproduce::lines(&mut cx);
    certificate::check(&mut cx);
    pricing_checks::coverage_and_ratios(&mut cx);
    pricing_checks::floor(&mut cx);
    pricing_checks::query_path(&mut cx);
    let mut findings = cx.findings;
    findings.sort_by(|a, b| (&a.line, a.code, &a.points, &a.message).cmp(&(&b.line, b.code, &b.points, &b.message)));
    findings.dedup();
    let included = inputs.points.iter().filter(|p| !inputs.policy.is_excluded(&p.id)).count();
    Ok(VerifyReport {
        ok: findings.is_empty(),
        lines: shipped.lines.len(),
        insufficient: shipped.insufficient.len(),
        points: inputs.points.len(),
        included,
        pricings: cx.pricings,
        findings,
    })
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
            "version",
            SHIPPED_FILE,
            message,
            "re-emit the file with this vramfit (`vramfit emit`), or run the vramfit that wrote it",
        )],
    }
}
