//! Findings: one failed check, with a stable code, the file to look at and
//! what to do next. A vocabulary shared by `verify` (which finds them),
//! `fit` and `emit` (which report what `verify` would) and the renderers.

use serde::Serialize;

/// The files a finding can point at.
pub const POINTS_FILE: &str = "measurements/vae.json";
pub const POLICY_FILE: &str = "fits/policy.toml";
pub const SHIPPED_FILE: &str = "fits/vae.json";
/// The runtime crate's copy of [`SHIPPED_FILE`] (what it and the Python
/// wheel compile in).
pub const RUNTIME_FILE: &str = "crates/vramfit-runtime/vae.json";
pub const PRICING_CODE: &str = "crates/vramfit-runtime/src/pricing/steps/mod.rs";

/// Every check's stable code, in the order docs/verify.md lists them. The
/// JSON and GitHub outputs spell them in kebab case (`points-changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Code {
    /// `fits/vae.json` of another format or version.
    Version,
    /// `fits/vae.json` does not load (a wrong type, a missing or unknown field, a value not in canonical form); nothing is priced.
    Schema,
    /// A misspelt policy key, or a field of `fits/vae.json` that `emit` never writes, at any depth.
    UnknownKey,
    /// An `[[exclude]]` or `[[keep]]` id that names no point.
    UnknownId,
    /// The shipped margin differs from the policy's.
    Margin,
    /// The shipped ratio bound or `min_sizes` differs from the policy's.
    Settings,
    /// The shipped file was emitted from other points or another policy.
    Digest,
    /// A field of `fits/vae.json` differs from what `emit` builds now; a line missing or extra.
    Reproduce,
    /// The points behind a line changed since `emit`.
    PointsChanged,
    /// The unrounded envelope is not the optimum, or the shipped values are not it with the margin, rounded up (checked without the hull code).
    Certificate,
    /// An included point priced below its demand.
    Coverage,
    /// A point priced above the ratio bound that is not a listed exception.
    RatioBound,
    /// An `[[exception]]` no longer above the bound, or naming no point.
    StaleException,
    /// A carried line, or the unmeasured rule, pricing below the legacy estimate.
    Floor,
    /// A line's own key, priced as a user would ask it, does not give the line's formula.
    QueryPath,
    /// A measured tiled point not covered by the derived tile price (its
    /// platform's untiled line at one tile plus the output copies), or
    /// over-reserved by it past the ratio bound; or a tile with no line of
    /// its own that the pricer does not price by that rule.
    DerivedTile,
    /// For one image, a larger tile priced below a smaller one.
    Monotone,
    /// On a math-kernel platform, a price below the declared attention
    /// phase, or one that does not say the phase set it; or the phase
    /// applied where SDPA has a fused kernel.
    Attention,
    /// A family's demand over its traced bytes outside its class's band on
    /// a platform (the other families', widened by the traced margin).
    TracedBand,
    /// A declared first use that its platform's fresh points do not prove.
    FirstUse,
    /// A shipped copy of `fits/vae.json` (the runtime crate's
    /// `crates/vramfit-runtime/vae.json`, which the Python wheel compiles
    /// in too) that differs from it byte for byte.
    Copy,
}

impl Code {
    /// Every code, in documentation order.
    pub const ALL: &'static [Code] = &[
        Code::Version,
        Code::Schema,
        Code::UnknownKey,
        Code::UnknownId,
        Code::Margin,
        Code::Settings,
        Code::Digest,
        Code::Reproduce,
        Code::PointsChanged,
        Code::Certificate,
        Code::Coverage,
        Code::RatioBound,
        Code::StaleException,
        Code::Floor,
        Code::QueryPath,
        Code::DerivedTile,
        Code::Monotone,
        Code::Attention,
        Code::TracedBand,
        Code::FirstUse,
        Code::Copy,
    ];

    /// The stable spelling, as in JSON.
    pub fn as_str(&self) -> &'static str {
        match self {
            Code::Version => "version",
            Code::Schema => "schema",
            Code::UnknownKey => "unknown-key",
            Code::UnknownId => "unknown-id",
            Code::Margin => "margin",
            Code::Settings => "settings",
            Code::Digest => "digest",
            Code::Reproduce => "reproduce",
            Code::PointsChanged => "points-changed",
            Code::Certificate => "certificate",
            Code::Coverage => "coverage",
            Code::RatioBound => "ratio-bound",
            Code::StaleException => "stale-exception",
            Code::Floor => "floor",
            Code::QueryPath => "query-path",
            Code::DerivedTile => "derived-tile",
            Code::Monotone => "monotone",
            Code::Attention => "attention",
            Code::TracedBand => "traced-band",
            Code::FirstUse => "first-use",
            Code::Copy => "copy",
        }
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One failed check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable code.
    pub code: Code,
    /// The file to look at.
    pub file: &'static str,
    /// The line key, where the finding is about one line.
    pub line: Option<String>,
    /// The JSON path of the field in `fits/vae.json`, for whole-file findings.
    pub path: Option<String>,
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
    /// The 1-based line of `file` it points at (set by `places::locate`;
    /// the `line=` of a GitHub annotation).
    pub at: Option<u64>,
}

impl Finding {
    pub fn new(code: Code, file: &'static str, message: impl Into<String>, hint: impl Into<String>) -> Finding {
        Finding {
            code,
            file,
            line: None,
            path: None,
            points: vec![],
            expected: None,
            found: None,
            message: message.into(),
            hint: hint.into(),
            at: None,
        }
    }

    pub fn line(mut self, key: impl ToString) -> Finding {
        self.line = Some(key.to_string());
        self
    }

    pub fn at_path(mut self, path: impl Into<String>) -> Finding {
        self.path = Some(path.into());
        self
    }

    pub fn points<I: IntoIterator>(mut self, ids: I) -> Finding
    where
        I::Item: ToString,
    {
        self.points = ids.into_iter().map(|i| i.to_string()).collect();
        self
    }

    pub fn values(mut self, expected: impl ToString, found: impl ToString) -> Finding {
        self.expected = Some(expected.to_string());
        self.found = Some(found.to_string());
        self
    }
}
