//! Where long work says how far it has got. The work reports to a
//! [`Progress`]; the CLI hands in a bar on standard error when that is a
//! terminal, everything else [`Silent`]. Reporting never changes a result.

/// What a stretch of work counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Items,
}

/// A sink for progress reports. Every method defaults to doing nothing.
pub trait Progress: Sync {
    /// A new stretch of work: what it is, and how many units it has (bytes
    /// of a file, lines to cross-validate; 0 when unknown).
    fn start(&self, _what: &str, _total: u64, _unit: Unit) {}
    /// `done` more units are done.
    fn advance(&self, _done: u64) {}
    /// The stretch is over (successfully or not).
    fn finish(&self) {}
}

/// Reports to nobody.
pub struct Silent;

impl Progress for Silent {}
