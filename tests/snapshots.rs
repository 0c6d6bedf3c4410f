//! Snapshot tests of the human output: what a person reads in a terminal
//! changes only on purpose. Regenerate with `VRAMFIT_UPDATE_SNAPSHOTS=1 cargo test`
//! and review the diff.

use crate::common::*;
use std::fs;
use vramfit::cli::terminal::Terminal;
use vramfit::pricing::platform::EnvSnapshot;
use vramfit::vocab::Os;

/// Runs a command as on a terminal (boxed tables, at their natural width)
/// and compares its stdout with a stored snapshot. The exit code is part of
/// the contract: a snapshot of a failing run never passes for a successful
/// one. A missing snapshot fails (it is never read as "").
fn snapshot_of(name: &str, args: &[&str], code: i32) {
    // In-process, from the repository root (the test's working folder)
    // with relative paths, so the output does not depend on where the
    // checkout lives; a terminal with no colour variables and no allocator
    // variables, on Linux.
    let terminal = Terminal { stdout_is_terminal: true, ..Terminal::default() };
    let env = EnvSnapshot::default().on(Os::Linux);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    // On the tests' own root (`data_root`), so a new measurement in the
    // repository never changes a snapshot.
    let argv = ["vramfit", "--root", "tests/fixtures/root"].into_iter().chain(args.iter().copied());
    let got_code = vramfit::cli::run_on(argv, &env, &terminal, &mut out, &mut err);
    assert_eq!(i32::from(got_code), code, "{name}: exit code; stderr: {}", String::from_utf8_lossy(&err));
    let got = String::from_utf8(out).unwrap();
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
            "tests/fixtures/root/fits/vae.json",
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
    let canvas: Vec<&str> = std::iter::once("plan").chain(README_CANVAS.iter().copied()).collect();
    snapshot_of("plan-canvas", &canvas, 0);
}

#[test]
fn emit_check_table() {
    snapshot_of("emit-check", &["emit", "--check"], 0);
}

#[test]
fn through_a_pipe_the_same_tables_are_plain_columns() {
    let out = vramfit().current_dir(data_root()).arg("fit").output().unwrap();
    let plain = stdout_of(&out);
    assert!(!plain.contains(['│', '─', '╭', '╰']), "{plain}");
    // The same cells, in the same order, as the boxed snapshot.
    let cells = |t: &str| -> Vec<String> {
        t.split(|c: char| c.is_whitespace() || "│─╭╮╰╯├┤┬┴┼".contains(c))
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect()
    };
    assert_eq!(cells(&plain), cells(&stored_snapshot("fit")));
}

#[test]
fn on_a_narrow_terminal_a_table_wraps_to_its_width() {
    let terminal = Terminal { stdout_is_terminal: true, width: Some(110), ..Terminal::default() };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = vramfit::cli::run_on(
        ["vramfit", "--root", "tests/fixtures/root", "fit"],
        &EnvSnapshot::default(),
        &terminal,
        &mut out,
        &mut err,
    );
    assert_eq!(code, 0);
    let text = String::from_utf8(out).unwrap();
    for line in text.lines().filter(|l| l.starts_with(['│', '╭', '├', '╰'])) {
        assert!(unicode_width::UnicodeWidthStr::width(line) <= 110, "{line}");
    }
    assert!(
        stored_snapshot("fit").lines().any(|l| unicode_width::UnicodeWidthStr::width(l) > 110),
        "the natural table is wider"
    );
}

#[test]
fn errors_are_coloured_as_asked() {
    let run = |args: &[&str], envs: &[(&str, &str)]| {
        let mut c = vramfit();
        c.args(["reserve", "nope", "decode", "512x512", "--dtype", "fp16"]).args(args);
        c.env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
        for (k, v) in envs {
            c.env(k, v);
        }
        stderr_of(&c.output().unwrap())
    };
    let red = "\x1b[1;31merror:\x1b[0m unknown vae";
    assert!(run(&[], &[]).starts_with("error: unknown vae"), "a pipe is not coloured");
    assert!(run(&["--color", "always"], &[]).starts_with(red));
    assert!(run(&[], &[("CLICOLOR_FORCE", "1")]).starts_with(red));
    assert!(run(&[], &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]).starts_with("error:"), "NO_COLOR wins");
    assert!(run(&["--color=always"], &[("NO_COLOR", "1")]).starts_with(red), "the flag wins");
    assert!(run(&["--color", "never"], &[("CLICOLOR_FORCE", "1")]).starts_with("error:"));
    // clap's own errors follow the same choice.
    let out = vramfit().args(["--color", "always", "reserve", "--nope"]).output().unwrap();
    assert!(stderr_of(&out).contains("\x1b["), "{}", stderr_of(&out));
    let out = vramfit().args(["--color", "never", "reserve", "--nope"]).output().unwrap();
    assert!(!stderr_of(&out).contains('\x1b'));
}
