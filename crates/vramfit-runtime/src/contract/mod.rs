//! The contract between vramfit and a runtime (docs/DESIGN.md, "The
//! contract"): the types of the shipped coefficients file and the formulas
//! a runtime prices with them. `pricing` builds its answers from this
//! module alone (with the ground floor's vocabularies and exact numbers);
//! the Python package is this crate compiled (`crates/vramfit-python`). The maintainer's side
//! (`points`, `policy`, `lines`, `coefficients`) re-exports what it shares
//! from here, so one type has one home.

pub mod fields;
pub mod file;
pub mod first_use;
mod formula;
pub mod key;
pub mod load;
pub mod rules;
pub mod traced;
pub mod video;

pub use file::slope_text;
pub use file::{
    CoefficientsFile, Digests, InsufficientLine, LineKind, Resolution, ShippedEnvelope, ShippedLine, Unmeasured,
    EMBEDDED, FORMAT, VERSION,
};
pub use formula::reserve_bytes;
pub use key::LineKey;
pub use load::{load, parse, parse_read, read_json, schema, schema_of, version_mismatch};
pub use rules::{
    is_os_specific, AllocatorDefault, Attention, AttentionPlatform, Legacy, LegacyK, OsSpecific, Tiling, TilingHost,
    ATTENTION_FORMULA, DERIVED_TILE_FORMULA, UNMEASURED_RULE,
};
