//! vramfit: fit, ship and audit the GPU-memory coefficients a diffusion app
//! reserves before a VAE decode or encode.
//!
//! Data flows one way (`docs/DESIGN.md`, "The house", the table of every
//! module and its floor), and no module uses one on its own floor or above
//! (`tests/architecture.rs` reads that table and checks it): the ground
//! ([`exact`], [`vocab`], [`registry`], [`findings`], [`fsio`], [`text`],
//! [`par`], [`heap`], [`progress`]) → [`contract`] (what a runtime
//! shares), [`units`], [`fit`] (pure math),
//! [`places`] (where in a file a finding is) → [`points`] → [`policy`] →
//! [`workspace`], [`lines`] (the fit of each key under the policy) →
//! [`crossval`], [`coefficients`] (the shipped file) → [`pricing`] →
//! [`verify`], [`plan`], [`diff`], [`plot`] → [`evidence`], [`family`] (what a
//! reviewer reads) → [`report`] (renderers) → [`commands`] → [`cli`].

// The runtime crate's modules, at the paths the rest of the house names
// them by (`crate::pricing`, `crate::contract`, …): the floors below
// `points` are a crate of their own, and this crate only uses them.
pub use vramfit_runtime::{
    contract, digest, error, exact, observe, plan, pricing, registry, text, units, vocab, words,
};

pub mod cli;
pub mod coefficients;
pub mod commands;
pub mod crossval;
pub mod diff;
pub mod evidence;
pub mod export;
pub mod family;
pub mod findings;
pub mod fit;
pub mod fsio;
pub mod heap;
pub mod ingest;
pub mod lines;
pub mod observed;
pub mod par;
pub mod places;
pub mod plot;
pub mod points;
pub mod policy;
pub mod progress;
pub mod report;
pub mod traced;
pub mod verify;
pub mod workspace;
