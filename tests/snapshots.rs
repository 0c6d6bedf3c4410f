//! Snapshot tests of the human output: what a person reads in a terminal
//! changes only on purpose. Regenerate with `VRAMFIT_UPDATE_SNAPSHOTS=1 cargo test`
//! and review the diff.

use crate::common::*;
use std::fs;

/// Runs a command and compares its stdout with a stored snapshot. The exit
/// code is part of the contract: a snapshot of a failing run never passes
/// for a successful one. A missing snapshot fails (it is never read as "").
fn snapshot_of(name: &str, args: &[&str], code: i32) {
    // Run from the repository root with relative paths, so the output does
    // not depend on where the checkout lives.
    let out = vramfit().current_dir(repo()).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(code), "{name}: exit code; stderr: {}", stderr_of(&out));
    let got = stdout_of(&out);
    assert!(!got.trim().is_empty(), "{name}: no output");
    let path = fixture(&format!("snapshots/{name}.txt"));
    if std::env::var_os("VRAMFIT_UPDATE_SNAPSHOTS").is_some() {
        fs::write(&path, &got).unwrap();
    }
    assert_eq!(got, stored_snapshot(name), "{name}: human output changed (VRAMFIT_UPDATE_SNAPSHOTS=1 to accept)");
}

/// A stored snapshot; a missing one is a failure, never an empty string.
fn stored_snapshot(name: &str) -> String {
    let path = fixture(&format!("snapshots/{name}.txt"));
    fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{name}: no snapshot at {} ({e}); run with VRAMFIT_UPDATE_SNAPSHOTS=1", path.display())
    })
}

#[test]
#[should_panic(expected = "exit code")]
fn a_snapshot_run_with_another_exit_code_fails() {
    snapshot_of("verify", &["verify"], 1);
}

#[test]
#[should_panic(expected = "no snapshot")]
fn a_missing_snapshot_fails() {
    stored_snapshot("no-such-snapshot");
}

#[test]
fn fit_table() {
    snapshot_of("fit", &["fit"], 0);
}

#[test]
fn verify_table() {
    snapshot_of("verify", &["verify"], 0);
}

#[test]
fn reserve_answer() {
    snapshot_of(
        "reserve",
        &[
            "reserve",
            "sdxl",
            "decode",
            "1024x1024",
            "--fp32",
            "true",
            "--loaded-dtype",
            "fp16",
            "--os",
            "linux",
            "--coefficients",
            "fits/vae.json",
        ],
        0,
    );
}

#[test]
fn plan_answers() {
    snapshot_of(
        "plan-vae",
        &[
            "plan",
            "sdxl",
            "decode",
            "1024x1024",
            "--batch",
            "16",
            "--dtype",
            "fp16",
            "--os",
            "linux",
            "--free",
            "24GiB",
        ],
        0,
    );
    snapshot_of(
        "plan-canvas",
        &[
            "plan",
            "canvas",
            "1280x720",
            "--frames",
            "240",
            "--upscale",
            "4",
            "--free",
            "20GiB",
            "--share",
            "0.25",
            "--cap",
            "1GiB",
            "--transient",
            "9",
        ],
        0,
    );
}

#[test]
fn emit_check_table() {
    snapshot_of("emit-check", &["emit", "--check"], 0);
}
