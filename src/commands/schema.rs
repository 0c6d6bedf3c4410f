//! `vramfit schema KIND`: the JSON Schema of each file vramfit reads or
//! writes and of each answer it prints, derived from the types that read
//! and write them (`schemars`), so a schema cannot describe a field the
//! program does not have. The committed copies under `schemas/` are held
//! to these by a test.

use crate::contract::schema_of;
use crate::plan::Plan;
use crate::points::Point;
use crate::policy::document::PolicyFile;
use crate::pricing::ReserveReport;
use schemars::JsonSchema;
use serde_json::{json, Value};

/// The documents a schema is printed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SchemaKind {
    /// `fits/vae.json`.
    Coefficients,
    /// `measurements/vae.json`.
    Points,
    /// `fits/policy.toml` (the TOML document).
    Policy,
    /// `vramfit reserve --format json`.
    Reserve,
    /// `vramfit plan --format json`.
    Plan,
}

impl SchemaKind {
    pub const ALL: [SchemaKind; 5] =
        [SchemaKind::Coefficients, SchemaKind::Points, SchemaKind::Policy, SchemaKind::Reserve, SchemaKind::Plan];

    /// The name on the command line and of the file under `schemas/`.
    pub fn name(self) -> &'static str {
        match self {
            SchemaKind::Coefficients => "coefficients",
            SchemaKind::Points => "points",
            SchemaKind::Policy => "policy",
            SchemaKind::Reserve => "reserve",
            SchemaKind::Plan => "plan",
        }
    }
}

/// `measurements/vae.json` as written: the points sorted by id, one a line.
#[derive(JsonSchema)]
#[allow(dead_code)] // describes the store's frame; the codec writes it
struct StoreDocument {
    /// Always `vramfit-points`.
    format: String,
    /// The store format's version (1).
    version: u32,
    /// Every point, sorted by id.
    points: Vec<Point>,
}

/// The schema of one kind, as JSON.
pub fn schema(kind: SchemaKind) -> Value {
    let (mut s, title) = match kind {
        SchemaKind::Coefficients => return crate::contract::schema(),
        SchemaKind::Points => (schema_of::<StoreDocument>(true), "vramfit points (measurements/vae.json)"),
        SchemaKind::Policy => (schema_of::<PolicyFile>(false), "vramfit policy (fits/policy.toml, as parsed TOML)"),
        SchemaKind::Reserve => (schema_of::<ReserveReport>(true), "vramfit reserve --format json"),
        SchemaKind::Plan => (schema_of::<Plan>(true), "vramfit plan --format json"),
    };
    s["title"] = json!(title);
    // The fixed values of a file's frame.
    let fixed: &[(&str, Value)] = match kind {
        SchemaKind::Points => &[("format", json!("vramfit-points")), ("version", json!(1))],
        _ => &[],
    };
    for (field, value) in fixed {
        s["properties"][*field]["const"] = value.clone();
    }
    s
}
