//! vramfit's runtime: what a diffusion app links to reserve VRAM before a
//! VAE decode or encode. It reads the shipped coefficients file
//! ([`contract`]) and prices a query from it ([`pricing`]); the ground it
//! stands on is exact arithmetic ([`exact`]), the closed vocabularies of a
//! line key ([`vocab`]), the VAE families ([`registry`]), shared strings
//! ([`text`]) and bounded reads ([`io`]). [`observe`] writes what a host
//! saw an op take as a measurement row.
//!
//! Nothing here fits, plots or parses a command line: the crate's
//! dependencies are serde, serde_json, schemars (the file's schema),
//! arcstr and rustc-hash, and `tests/architecture.rs` checks that
//! `cargo tree` of this crate names none of the CLI's.

pub mod contract;
pub mod digest;
pub mod error;
pub mod exact;
pub mod io;
pub mod observe;
pub mod plan;
pub mod pricing;
pub mod registry;
pub mod text;
pub mod units;
pub mod vocab;
pub mod words;
