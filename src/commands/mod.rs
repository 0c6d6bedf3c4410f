//! One module per subcommand: each turns typed options into a result
//! struct; none of them prints or sees clap.

pub mod ingest;
pub mod points;
