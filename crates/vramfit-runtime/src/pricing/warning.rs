//! What an answer warns of, as values: each variant carries the facts it
//! names, has a stable code, and is made into words here alone (`Display`),
//! so the CLI, the JSON and the Python package say one text and a host
//! that links the runtime can branch on the kind.

use crate::vocab::{ConvBackend, Dtype, Platform};
use std::fmt;

/// One warning of an answer (the answer's `warnings` are their words).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// A tile as large as the image: priced untiled.
    TileCoversImage { tile: u32, width: u64, height: u64 },
    /// The size lies outside the pricing line's measured range.
    Extrapolated { at: u64, line: String, lo: u64, hi: u64 },
    /// No line: a host's published video estimate priced it.
    VideoEstimate { key: String, host: String },
    /// No line: the unmeasured rule or the legacy floor priced it.
    NoLine { key: String, rule: &'static str },
    /// No line on this platform: the traced rule priced it.
    Traced {
        key: String,
        traced: u64,
        at: u64,
        unit: &'static str,
        class: String,
        families: String,
        slope: String,
        base_mib: u64,
        margin: String,
    },
    /// The family's class has no calibration: another class's priced it.
    UncalibratedClass { family: String, class: &'static str, calibration: String },
    /// The traced rule's coordinate lies outside the shape's traced range.
    TraceExtrapolated { at: u64, family: String, lo: u64, hi: u64 },
    /// Another dtype's line on this platform sets the floor.
    OtherDtypeFloor { by: String, by_dtype: Dtype, dtype: Dtype },
    /// Nothing measured for the family: its twin's lines price it.
    Twin { family: String, of: String, rows: u64 },
    /// Nothing measured for the family: its trace scaled by its class.
    FamilyTraced { family: String },
    /// Nothing measured for the family: the previous estimator's guess.
    FamilyUnmeasured { family: String },
    /// The pricing line rests on points from a simulated device.
    Simulated { line: String, points: u64 },
    /// Priced by a line measured without a published OS.
    AnyOsLine { line: String },
    /// An attention matrix past where the backend's SDPA returns wrong output.
    AttentionWrongOutput { sequence: u64, at: u64, backend: ConvBackend },
    /// Past the line's measured range, grown as its family's trace grows.
    FollowsTrace {
        at: u64,
        unit: &'static str,
        line: String,
        end: u64,
        family: String,
        line_at_end: u64,
        traced_at_end: u64,
        traced_at: u64,
        bytes: u64,
    },
    /// A smaller request priced higher set the price (its words are the
    /// monotone composition's).
    Lifted { words: String },
    /// No first use is declared for the platform's backend.
    FirstUseUnknown { here: Platform },
    /// The first use added is another platform's.
    FirstUseBorrowed { here: Platform, mib: u64, there: String },
}

impl Warning {
    /// The stable code of the kind.
    pub fn code(&self) -> &'static str {
        match self {
            Warning::TileCoversImage { .. } => "tile-covers-image",
            Warning::Extrapolated { .. } => "extrapolated",
            Warning::VideoEstimate { .. } => "video-estimate",
            Warning::NoLine { .. } => "no-line",
            Warning::Traced { .. } => "traced",
            Warning::UncalibratedClass { .. } => "uncalibrated-class",
            Warning::TraceExtrapolated { .. } => "trace-extrapolated",
            Warning::OtherDtypeFloor { .. } => "other-dtype-floor",
            Warning::Twin { .. } => "twin",
            Warning::FamilyTraced { .. } => "family-traced",
            Warning::FamilyUnmeasured { .. } => "family-unmeasured",
            Warning::Simulated { .. } => "simulated",
            Warning::AnyOsLine { .. } => "any-os-line",
            Warning::AttentionWrongOutput { .. } => "attention-wrong-output",
            Warning::FollowsTrace { .. } => "follows-trace",
            Warning::Lifted { .. } => "lifted",
            Warning::FirstUseUnknown { .. } => "first-use-unknown",
            Warning::FirstUseBorrowed { .. } => "first-use-borrowed",
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::words;
        match self {
            Warning::TileCoversImage { tile, width, height } => {
                write!(
                    f,
                    "tile {tile} covers the whole {width}x{height} image: tiling does nothing, so it is priced untiled"
                )
            }
            Warning::Extrapolated { at, line, lo, hi } => {
                write!(f, "{at} px lies outside the measured range of {line} ({lo}–{hi} px): the line is extrapolated")
            }
            Warning::VideoEstimate { key, host } => write!(
                f,
                "no line measured for {key}: priced by {host}'s published video estimate (its source: `estimate`)"
            ),
            Warning::NoLine { key, rule } => write!(f, "no line measured for {key}: priced by the {rule}"),
            Warning::Traced { key, traced, at, unit, class, families, slope, base_mib, margin } => write!(
                f,
                "no line measured for {key} on this platform: priced by the traced rule, its trace ({traced} B at {at} \
                 {unit}) scaled by class {class}'s calibration on {families} ({slope} B of demand per traced byte + \
                 {base_mib} MiB, margin {margin})"
            ),
            Warning::UncalibratedClass { family, class, calibration } => write!(
                f,
                "no family of {family}'s class, {class}, has been measured: its trace is scaled by the most cautious \
                 calibration of another class ({calibration}), not by its own class's; measure it to calibrate {class}"
            ),
            Warning::TraceExtrapolated { at, family, lo, hi } => write!(
                f,
                "{at} lies outside the traced range of {family}'s shape ({lo}–{hi}): the trace is extrapolated"
            ),
            Warning::OtherDtypeFloor { by, by_dtype, dtype } => write!(
                f,
                "{by}, measured in {by_dtype} on this platform, sets the floor for {dtype}: a run dtype is never \
                 priced below another dtype's measured line of the same VAE (the demand does not follow the element \
                 size)"
            ),
            Warning::Twin { family, of, rows } => write!(
                f,
                "nothing has been measured for the {family} VAE, but its architecture is {of}'s (their traces agree \
                 on all {rows} rows): it is priced by {of}'s measured lines"
            ),
            Warning::FamilyTraced { family } => write!(
                f,
                "nothing has been measured for the {family} VAE: this price is its architecture's trace scaled by \
                 what was measured on other families of its class, not a measurement"
            ),
            Warning::FamilyUnmeasured { family } => write!(
                f,
                "nothing has been measured for the {family} VAE (no line for any op, backend or dtype): this is the \
                 previous estimator's guess, not a measurement"
            ),
            Warning::Simulated { line, points } => write!(
                f,
                "{line} rests on {points} point(s) made on a simulated device (ingested with --allow-simulated): a \
                 memory model's figures, not measurements"
            ),
            Warning::AnyOsLine { line } => {
                write!(f, "priced by {line}, measured without a published OS: that line is a lower bound for every OS")
            }
            Warning::AttentionWrongOutput { sequence, at, backend } => write!(
                f,
                "one attention matrix here has {sequence}² = {} elements, at or past {at} where {backend}'s SDPA \
                 silently returns wrong output: tile the decode (plan does)",
                u128::from(*sequence).pow(2)
            ),
            Warning::FollowsTrace { at, unit, line, end, family, line_at_end, traced_at_end, traced_at, bytes } => {
                write!(
                    f,
                    "{at} {unit} lies past {line}'s largest measured size ({end} {unit}), where {family}'s trace grows \
                     faster than the line: the line's {line_at_end} B there grown as the trace grows ({traced_at_end} \
                     → {traced_at} traced B) is {bytes} B"
                )
            }
            Warning::Lifted { words: w } => f.write_str(w),
            Warning::FirstUseUnknown { here } => f.write_str(&words::FIRST_USE_UNKNOWN.fill(&[("here", here)])),
            Warning::FirstUseBorrowed { here, mib, there } => {
                f.write_str(&words::FIRST_USE_BORROWED.fill(&[("here", here), ("mib", mib), ("there", there)]))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::{Allocator, Os};

    fn one_of_each() -> Vec<Warning> {
        let here = Platform::new(ConvBackend::Cudnn, Allocator::Native, Os::Linux);
        let s = || "x".to_string();
        vec![
            Warning::TileCoversImage { tile: 512, width: 256, height: 256 },
            Warning::Extrapolated { at: 1, line: s(), lo: 2, hi: 3 },
            Warning::VideoEstimate { key: s(), host: s() },
            Warning::NoLine { key: s(), rule: "legacy-floor" },
            Warning::Traced {
                key: s(),
                traced: 1,
                at: 2,
                unit: "px",
                class: s(),
                families: s(),
                slope: s(),
                base_mib: 3,
                margin: s(),
            },
            Warning::UncalibratedClass { family: s(), class: "dc-ae", calibration: s() },
            Warning::TraceExtrapolated { at: 1, family: s(), lo: 2, hi: 3 },
            Warning::OtherDtypeFloor { by: s(), by_dtype: Dtype::Fp16, dtype: Dtype::Bf16 },
            Warning::Twin { family: s(), of: s(), rows: 4 },
            Warning::FamilyTraced { family: s() },
            Warning::FamilyUnmeasured { family: s() },
            Warning::Simulated { line: s(), points: 2 },
            Warning::AnyOsLine { line: s() },
            Warning::AttentionWrongOutput { sequence: 65536, at: 1 << 32, backend: ConvBackend::Miopen },
            Warning::FollowsTrace {
                at: 1,
                unit: "px",
                line: s(),
                end: 2,
                family: s(),
                line_at_end: 3,
                traced_at_end: 4,
                traced_at: 5,
                bytes: 6,
            },
            Warning::Lifted { words: s() },
            Warning::FirstUseUnknown { here },
            Warning::FirstUseBorrowed { here, mib: 166, there: s() },
        ]
    }

    /// Each kind has its own code, and its words fill every value they name
    /// (a template's `{name}` left in the words is a value forgotten).
    #[test]
    fn every_kind_has_one_code_and_whole_words() {
        let all = one_of_each();
        let mut codes: Vec<&str> = all.iter().map(Warning::code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
        for w in &all {
            let words = w.to_string();
            assert!(!words.is_empty() && !words.contains('{'), "{}: {words}", w.code());
        }
        let borrowed = all.last().unwrap().to_string();
        assert!(borrowed.contains("cudnn/native/linux") && borrowed.contains("166 MiB"), "{borrowed}");
    }
}
