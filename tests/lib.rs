//! The one integration-test binary: every module drives the real `vramfit`
//! binary (or, where a test must hand in a broken part, the library).

mod architecture;
mod common;
mod crossval;
mod diff;
mod doc_examples;
mod edges;
mod first_use;
mod fit;
mod fuzz;
mod hand_edits;
mod harness;
mod hosts;
mod ingest;
mod input_edges;
mod monotone;
mod newcomer;
mod plan;
mod plot;
mod points;
mod provenance;
mod public_data;
mod python_package;
mod refusals;
mod report;
mod reserve;
mod scale;
mod schemas;
mod shell;
mod snapshots;
mod streams;
mod traced;
mod verify;
mod video;
mod walkthrough;
mod writers;
