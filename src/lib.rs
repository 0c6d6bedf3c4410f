//! vramfit: fit, ship and audit the GPU-memory coefficients a diffusion app
//! reserves before a VAE decode or encode.
//!
//! Data flows one way (docs/DESIGN.md, "The house"): measurement files → [`points`] → [`fit`]
//! (pure math) → [`coefficients`] (lines under the [`policy`]) → [`pricing`]
//! → [`verify`] and [`plan`] → [`report`] → [`cli`]. No module reaches back
//! up this chain.

pub mod cli;
pub mod coefficients;
pub mod commands;
pub mod exact;
pub mod findings;
pub mod fit;
pub mod fsio;
pub mod lines;
pub mod plan;
pub mod points;
pub mod policy;
pub mod pricing;
pub mod registry;
pub mod report;
pub mod units;
pub mod verify;
pub mod vocab;
pub mod workspace;
