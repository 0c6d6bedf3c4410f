//! One module per subcommand: each turns typed options into a result
//! struct; none of them prints or sees clap.

pub mod crossval;
pub mod diff;
pub mod emit;
pub mod fit;
pub mod ingest;

pub mod plan;
pub mod plot;
pub mod points;
pub mod reserve;
pub mod schema;
pub mod verify;
