//! An observation: one VAE op a host ran under vramfit's reservation,
//! written as the measurement row `vramfit ingest` reads (docs/data.md,
//! "The measurement CSV"), and the verdict on the answer. The Python
//! package's `observe` reads the accelerator; this module decides what a
//! row says, so every surface writes the same row and the CLI's reader is
//! the one that checks it (tests/observe.rs).
//!
//! A row carries the query, the answer and the platform, never anything
//! about the user: no prompt, path or model file name. The model column is
//! the resolved family, not the name the host passed.

pub mod file;

use crate::pricing::{Price, Query};
use crate::vocab::{Allocator, Context, ConvBackend, Os};

/// The columns of an observation row, in order: the harness's (so `ingest`
/// reads every one it knows) and the answer's, which it keeps verbatim in
/// the point's metadata.
pub const COLUMNS: [&str; 36] = [
    "id",
    "source",
    "device",
    "torch",
    "conv_backend",
    "allocator",
    "os",
    "vae",
    "model",
    "op",
    "tile",
    "loaded_dtype",
    "run_dtype",
    "width",
    "height",
    "batch",
    "frames",
    "temporal_tile",
    "run",
    "runs",
    "aggregate",
    "context",
    "reserved_bytes",
    "allocated_bytes",
    "driver_bytes",
    "note",
    "driver_version",
    "diffusers",
    "accelerator",
    "conv_library",
    "allocator_conf",
    "reservation_bytes",
    "reservation_key",
    "reservation_rule",
    "coefficients",
    "measured_on",
];

/// The peaks read around the op, bytes: the caching allocator's reserved
/// and allocated peaks over their values before it, and the driver's used
/// memory after it over before (what `mem_get_info` says).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Peaks {
    pub reserved: u64,
    pub allocated: u64,
    pub driver: u64,
}

impl Peaks {
    /// The op's demand: the largest delta, as `ingest` reads a row.
    pub fn demand(&self) -> u64 {
        self.reserved.max(self.allocated).max(self.driver)
    }
}

/// The platform the op ran on, as torch and the driver report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// The device's name (`NVIDIA GeForce RTX 4090`).
    pub device: String,
    pub torch: String,
    /// `CUDA 12.8` or `HIP 6.4.43482`.
    pub accelerator: String,
    /// `cuDNN 91900` or `MIOpen 3.4.0` (empty: not reported).
    pub conv_library: String,
    pub driver_version: String,
    pub diffusers: String,
    /// The allocator configuration as the process's environment gives it
    /// (`expandable_segments:True`; empty: none).
    pub allocator_conf: String,
    pub conv_backend: ConvBackend,
    pub allocator: Allocator,
    pub os: Os,
}

/// One op a host ran, and what vramfit had answered for it.
#[derive(Debug, Clone)]
pub struct Observation<'a> {
    pub query: &'a Query,
    pub price: &'a Price,
    /// Which coefficients priced it (`ReserveReport::coefficients`).
    pub coefficients: &'a str,
    pub peaks: Peaks,
    pub facts: &'a Facts,
    pub context: Context,
    /// The day it ran, `YYYY-MM-DD`.
    pub date: &'a str,
    /// What makes the row's id unique among the host's ops: hex digits.
    pub nonce: &'a str,
    /// Who observed it: `vramfit-vae 0.1.0`.
    pub observed_by: &'a str,
}

/// What the observation says of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The reservation held the op's demand.
    Covered,
    /// The op took more than was reserved.
    Under { demand: u64, reserved: u64 },
}

/// Why an observation cannot be written as a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowError {
    /// The nonce is not 1 to 32 lowercase hex digits.
    Nonce(String),
    /// The date is not `YYYY-MM-DD`.
    Date(String),
    /// Every peak is 0: `ingest` refuses a zero demand.
    NoDemand,
}

impl std::fmt::Display for RowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowError::Nonce(n) => write!(f, "nonce: expected 1 to 32 lowercase hex digits, got {n:?}"),
            RowError::Date(d) => write!(f, "date: expected YYYY-MM-DD, got {d:?}"),
            RowError::NoDemand => f.write_str("every peak is 0: the op demanded nothing the device saw"),
        }
    }
}

impl std::error::Error for RowError {}

impl Observation<'_> {
    pub fn verdict(&self) -> Verdict {
        let demand = self.peaks.demand();
        if demand <= self.price.bytes {
            Verdict::Covered
        } else {
            Verdict::Under { demand, reserved: self.price.bytes }
        }
    }

    /// The one line a host's log gets for an under-reserved op (None when
    /// the reservation held): the key, both figures and their ratio.
    pub fn under_reserved(&self) -> Option<String> {
        match self.verdict() {
            Verdict::Covered => None,
            Verdict::Under { demand, reserved } => Some(format!(
                "vramfit: {} under-reserved: the op took {demand} B, {reserved} B were reserved ({} of the reservation; {} by {})",
                self.price.line,
                ratio_text(demand, reserved),
                self.price.rule.as_str(),
                self.coefficients,
            )),
        }
    }

    /// The row's fields, in [`COLUMNS`] order.
    pub fn fields(&self) -> Result<Vec<String>, RowError> {
        let nonce_ok = (1..=32).contains(&self.nonce.len())
            && self.nonce.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !nonce_ok {
            return Err(RowError::Nonce(self.nonce.to_string()));
        }
        let d = self.date.as_bytes();
        let date_ok = d.len() == 10
            && d.iter().enumerate().all(|(i, b)| if i == 4 || i == 7 { *b == b'-' } else { b.is_ascii_digit() });
        if !date_ok {
            return Err(RowError::Date(self.date.to_string()));
        }
        if self.peaks.demand() == 0 {
            return Err(RowError::NoDemand);
        }
        let (q, p, f) = (self.query, self.price, self.facts);
        let key = &p.line;
        let video = key.temporal_tile.is_some();
        let frames = if video { format!("x{}", q.frames) } else { String::new() };
        let tile = if key.tile > 0 { format!("-t{}", key.tile) } else { String::new() };
        let slug: String = clean(&f.device)
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect::<String>()
            .split('-')
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("-");
        let id = format!(
            "o-{}/{}-{}{tile}-{}-{}x{}{frames}-b{}-{}-{}-{}-{}",
            if slug.is_empty() { "gpu" } else { &slug },
            key.vae,
            key.op.as_str(),
            key.dtype.as_str(),
            q.width,
            q.height,
            q.batch,
            f.conv_backend.as_str(),
            f.allocator.as_str(),
            self.context.as_str(),
            self.nonce,
        );
        let note = format!(
            "observed in a host by {} around its own op ({}): deltas of max_memory_reserved and \
             max_memory_allocated over their values before the op, and of the driver's used memory; \
             the host's real weights and inputs",
            clean(self.observed_by),
            context_words(self.context),
        );
        let source = format!("{} observe on {}, {}", clean(self.observed_by), clean(&f.device), self.date);
        let row = vec![
            id,
            source,
            clean(&f.device),
            clean(&f.torch),
            f.conv_backend.as_str().to_string(),
            f.allocator.as_str().to_string(),
            f.os.as_str().to_string(),
            key.vae.to_string(),
            key.vae.to_string(),
            key.op.as_str().to_string(),
            key.tile.to_string(),
            p.loaded_dtype.as_str().to_string(),
            p.run_dtype.value.as_str().to_string(),
            q.width.to_string(),
            q.height.to_string(),
            q.batch.to_string(),
            q.frames.to_string(),
            key.temporal_tile.map(|t| t.to_string()).unwrap_or_default(),
            "1".to_string(),
            "1".to_string(),
            "single".to_string(),
            self.context.as_str().to_string(),
            self.peaks.reserved.to_string(),
            self.peaks.allocated.to_string(),
            self.peaks.driver.to_string(),
            note,
            clean(&f.driver_version),
            clean(&f.diffusers),
            clean(&f.accelerator),
            clean(&f.conv_library),
            clean(&f.allocator_conf),
            p.bytes.to_string(),
            key.to_string(),
            p.rule.as_str().to_string(),
            clean(self.coefficients),
            self.date.to_string(),
        ];
        debug_assert_eq!(row.len(), COLUMNS.len());
        Ok(row)
    }

    /// The row as one CSV line, `\n`-terminated: what a host appends.
    pub fn csv_line(&self) -> Result<String, RowError> {
        Ok(csv_line(&self.fields()?))
    }
}

/// The header line of an observation file, `\n`-terminated.
pub fn header() -> String {
    csv_line(&COLUMNS)
}

/// `demand / reserved` with two decimals and a `×`, rounded up (exact
/// integers; a ratio just over 1 never shows as `1.00×`).
pub fn ratio_text(demand: u64, reserved: u64) -> String {
    match crate::exact::Ratio::new(i128::from(demand), i128::from(reserved)) {
        Ok(r) => format!("{}×", r.to_decimal_ceil(2)),
        Err(_) => "∞×".to_string(),
    }
}

fn context_words(c: Context) -> &'static str {
    match c {
        Context::Fresh => "the first op of its kind in the process",
        Context::Warm => "after an earlier op of the same kind in the process",
        Context::Generation => "inside a whole generation, as the host said",
        Context::Isolated => "the op alone",
    }
}

/// The most characters a free-text field of a row keeps (a device's or a
/// library's name, a version): what bounds a row, so a torn one is told
/// from a file that is not an observation file (`file::TORN_LIMIT`).
pub const FIELD_LIMIT: usize = 256;

/// A field as `ingest` takes it and a spreadsheet shows it: control
/// characters (which `ingest` refuses) become spaces, the text is trimmed
/// and cut to [`FIELD_LIMIT`] characters, and a leading `=`, `+`, `-` or
/// `@` (a formula, where the CSV is opened) is escaped with an apostrophe
/// (`crate::text::formula_safe`).
fn clean(s: &str) -> String {
    let spaced: String = s.chars().take(FIELD_LIMIT).map(|c| if c.is_control() { ' ' } else { c }).collect();
    crate::text::formula_safe(spaced.trim()).into_owned()
}

/// One CSV line: a field with a comma, quote or line break is quoted, its
/// quotes doubled (RFC 4180, what `ingest` reads).
fn csv_line<S: AsRef<str>>(fields: &[S]) -> String {
    let mut out = String::new();
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let f = f.as_ref();
        if f.contains([',', '"', '\n', '\r']) {
            out.push('"');
            out.push_str(&f.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(f);
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_just_over_one_never_reads_as_one() {
        assert_eq!(ratio_text(1001, 1000), "1.01×");
        assert_eq!(ratio_text(1000, 1000), "1.00×");
        assert_eq!(ratio_text(3, 2), "1.50×");
        assert_eq!(ratio_text(1, 0), "∞×");
    }

    #[test]
    fn a_field_with_a_comma_or_quote_is_quoted() {
        assert_eq!(csv_line(&["a", "b,c", "say \"x\"", "d"]), "a,\"b,c\",\"say \"\"x\"\"\",d\n");
        assert_eq!(clean(" NVIDIA\tH100\n"), "NVIDIA H100");
        assert_eq!(clean("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
        assert_eq!(clean(&"x".repeat(1000)).len(), FIELD_LIMIT);
    }

    #[test]
    fn the_demand_is_the_largest_delta() {
        assert_eq!(Peaks { reserved: 5, allocated: 3, driver: 7 }.demand(), 7);
        assert_eq!(Peaks { reserved: 9, allocated: 3, driver: 7 }.demand(), 9);
    }
}
