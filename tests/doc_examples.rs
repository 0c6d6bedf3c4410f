//! Every example the documentation shows, run as written: each `console`
//! block of README.md, docs/*.md and benches/README.md whose commands are
//! `vramfit …` runs on a scratch copy of the data it was written from
//! (`tests/fixtures/docs`, or `tests/fixtures/video` for the video
//! examples), and every line it shows (but the elided `…`, and the
//! `coefficients` line, which names where the answer came from) must be in
//! what vramfit prints. New measurements in `measurements/` never move
//! these figures; an example that drifts from the code fails here.
//!
//! A block may be preceded by `<!-- example-setup: SHELL -->` (run first,
//! in the scratch root: a hand edit the example shows the answer to),
//! `<!-- example-root: NAME -->` (another fixture root) and
//! `<!-- example-compiled-in: yes -->` (run without `--root`, to show what
//! the compiled-in coefficients answer: such a block elides its figures).
//! `VRAMFIT_UPDATE_DOCS=1` rewrites a drifted block with what vramfit
//! prints now.

use crate::common::*;
use std::fs;
use std::path::PathBuf;

struct Block {
    /// Byte range of the block's body (after the opening fence line, up to the closing fence).
    body: std::ops::Range<usize>,
    /// 1-based line of the opening fence.
    line: usize,
    setup: Option<String>,
    root: String,
    /// Run without `--root`: the compiled-in coefficients answer.
    compiled_in: bool,
}

fn docs() -> Vec<PathBuf> {
    let mut out = vec![repo().join("README.md"), repo().join("benches/README.md")];
    let mut more: Vec<PathBuf> = fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    more.sort();
    out.extend(more);
    out
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = text[at..].find("```console\n") {
        let open = at + i;
        let start = open + "```console\n".len();
        let end = start + text[start..].find("```").expect("a closed block");
        let before = &text[..open];
        // The directive lines right above the block.
        let directives: Vec<&str> =
            before.trim_end().lines().rev().take_while(|l| l.starts_with("<!-- example-")).collect();
        let comment = |tag: &str| {
            directives.iter().find_map(|l| {
                l.strip_prefix(&format!("<!-- {tag}: ")).and_then(|r| r.strip_suffix(" -->")).map(str::to_string)
            })
        };
        let first = text[start..end].lines().next().unwrap_or("");
        if first.starts_with("$ vramfit ") || first.contains(" vramfit ") && first.starts_with("$ ") {
            out.push(Block {
                body: start..end,
                line: before.lines().count() + 1,
                setup: comment("example-setup"),
                root: comment("example-root").unwrap_or_else(|| "docs".into()),
                compiled_in: comment("example-compiled-in").is_some(),
            });
        }
        at = end + 3;
    }
    out
}

/// Runs one block's commands, in one shell, in a fresh copy of its root;
/// what each printed (standard output and error, in order).
fn run(block: &Block, text: &str) -> Vec<(String, String)> {
    const MARK: &str = "@@vramfit-example@@";
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture(&block.root), dir.path());
    let bin = assert_cmd::cargo::cargo_bin("vramfit");
    let commands: Vec<String> =
        text[block.body.clone()].lines().filter_map(|l| l.strip_prefix("$ ")).map(str::to_string).collect();
    let mut script = format!(
        "exec 2>&1\nvramfit() {{ '{}' {} \"$@\"; }}\n",
        bin.display(),
        if block.compiled_in { "" } else { "--root ." }
    );
    if let Some(setup) = &block.setup {
        script.push_str(&format!("{{ {setup}\n}} >/dev/null\n"));
    }
    for c in &commands {
        // The mark keeps the last command's status for an `echo $?`.
        script.push_str(&format!("__rc=$?; echo '{MARK}'; (exit $__rc)\n{c}\n"));
    }
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(dir.path())
        .env_remove("PYTORCH_ALLOC_CONF")
        .env_remove("PYTORCH_CUDA_ALLOC_CONF")
        .env_remove("PYTORCH_HIP_ALLOC_CONF")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    let mark = format!("{MARK}\n");
    let parts = printed.split(&mark).skip(1).map(str::to_string);
    commands.into_iter().zip(parts).collect()
}

/// The lines a block shows after each command, in order.
fn shown(body: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for l in body.lines() {
        match l.strip_prefix("$ ") {
            Some(c) => out.push((c.to_string(), Vec::new())),
            None => out.last_mut().unwrap().1.push(l.to_string()),
        }
    }
    out
}

fn missing(shown: &[String], printed: &str) -> Option<String> {
    let names_its_source = |l: &str| l.trim_start().starts_with("coefficients") || l.contains("\"coefficients\":");
    for line in shown.iter().filter(|l| !names_its_source(l) && !l.trim().is_empty()) {
        for part in line.split('…').map(str::trim).filter(|p| !p.is_empty()) {
            if !printed.contains(part) {
                return Some(part.to_string());
            }
        }
    }
    None
}

/// A drifted block's lines brought up to date in its own shape: a line
/// still printed stays; a drifted one becomes the printed line it shares
/// the longest beginning with (at least 4 characters, each printed line
/// used once), else it goes; elisions (`…`) stay. A block that showed
/// everything (no `…`) shows everything printed.
fn refreshed(lines: &[String], printed: &str) -> String {
    if !lines.iter().any(|l| l.contains('…')) {
        return printed.to_string();
    }
    let printed: Vec<&str> = printed.lines().collect();
    let mut used = vec![false; printed.len()];
    let mut out = String::new();
    for l in lines {
        let keep =
            l.contains('…') || l.trim().is_empty() || missing(std::slice::from_ref(l), &printed.join("\n")).is_none();
        let line = if keep {
            Some(l.clone())
        } else {
            let common = |p: &str| l.chars().zip(p.chars()).take_while(|(a, b)| a == b).count();
            printed
                .iter()
                .enumerate()
                .filter(|(i, p)| !used[*i] && common(p) >= 4)
                .max_by_key(|(i, p)| (common(p), std::cmp::Reverse(*i)))
                .map(|(i, p)| {
                    used[i] = true;
                    p.to_string()
                })
        };
        if let Some(line) = line {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn every_documented_example_is_what_vramfit_prints() {
    let update = std::env::var_os("VRAMFIT_UPDATE_DOCS").is_some();
    let mut failures = Vec::new();
    let mut ran = 0;
    for doc in docs() {
        let mut text = fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(repo()).unwrap().display().to_string();
        // From the last block back, so an update keeps the earlier ranges.
        for block in blocks(&text).into_iter().rev() {
            ran += 1;
            let outputs = run(&block, &text);
            let body = text[block.body.clone()].to_string();
            let drift: Vec<String> = shown(&body)
                .iter()
                .zip(&outputs)
                .filter_map(|((command, lines), (_, printed))| {
                    missing(lines, printed).map(|part| format!("`{command}` shows `{part}`"))
                })
                .collect();
            if drift.is_empty() {
                continue;
            }
            if update {
                let fresh: String = shown(&body)
                    .iter()
                    .zip(&outputs)
                    .map(|((c, lines), (_, printed))| format!("$ {c}\n{}", refreshed(lines, printed)))
                    .collect();
                text.replace_range(block.body.clone(), &fresh);
            } else {
                failures.push(format!("{name}:{}: {}", block.line, drift.join("; ")));
            }
        }
        if update {
            fs::write(&doc, &text).unwrap();
        }
    }
    assert!(ran >= 20, "{ran} examples found");
    assert!(failures.is_empty(), "examples that are not what vramfit prints:\n{}", failures.join("\n"));
}

/// The check itself: an example with a wrong figure is caught.
#[test]
fn a_wrong_figure_in_an_example_is_caught() {
    let text = "<!-- example-root: docs -->\n```console\n$ vramfit reserve sdxl decode 1024x1024 --dtype fp16 --os linux\n4727 MiB\n```\n";
    let block = blocks(text).pop().unwrap();
    let outputs = run(&block, text);
    let (_, lines) = &shown(&text[block.body.clone()])[0];
    assert_eq!(missing(lines, &outputs[0].1).as_deref(), Some("4727 MiB"));
    let right = text.replace("4727", "4726");
    assert_eq!(missing(&["4726 MiB".to_string()], &run(&blocks(&right).pop().unwrap(), &right)[0].1), None);
}

/// The steps `.ci/run` takes (its `step "NAME: what"` lines), in order.
fn ci_steps(script: &str) -> Vec<String> {
    script
        .lines()
        .filter_map(|l| l.trim().strip_prefix("step \"")?.strip_suffix('"'))
        .filter(|s| !s.is_empty())
        .map(|s| s.split(['(', ':', ',']).next().unwrap_or(s).trim().to_string())
        .collect()
}

/// docs/development.md lists the CI steps as `.ci/run` takes them: each
/// step's name, in bold, in the script's order, and no other.
#[test]
fn the_development_guide_lists_the_ci_steps_in_order() {
    let steps = ci_steps(&std::fs::read_to_string(repo().join(".ci/run")).unwrap());
    assert!(steps.len() >= 8, "{steps:?}");
    let doc = std::fs::read_to_string(repo().join("docs/development.md")).unwrap();
    let ci = doc.split("- CI: `bash .ci/run`").nth(1).expect("the CI bullet").split("\n- ").next().unwrap();
    let listed: Vec<String> = ci.split("**").skip(1).step_by(2).map(str::to_string).collect();
    assert_eq!(listed, steps, "docs/development.md's CI steps are not .ci/run's");
    // The check sees a step dropped from the script.
    let fewer = ci_steps("step \"format\"\nstep \"tests (the README's test command)\"\nstep \"\"\n");
    assert_eq!(fewer, ["format", "tests"]);
}

/// Why `tests/fixtures/docs` is a copy of the shipped data, not the shipped
/// data itself (most of its files are byte-identical to `measurements/`
/// and `fits/` when it is refreshed): every figure the documentation shows
/// is checked exactly against it, and one new measurement in the shipped
/// store moves such a figure. Read from `measurements/`, a maintainer's
/// `ingest` would fail the documentation's tests; copied, the examples move
/// only when someone refreshes them together (`VRAMFIT_UPDATE_DOCS=1`).
/// This test holds the copy to what it claims to be: a snapshot of the
/// shipped tree (no file the shipped tree lacks), consistent on its own
/// (`verify` passes on it), and one that the shipped data's next point
/// would indeed move.
#[test]
fn the_docs_fixture_is_a_snapshot_that_owns_its_figures() {
    let root = fixture("docs");
    let files: Vec<PathBuf> = ["measurements", "fits"]
        .iter()
        .flat_map(|dir| snapshot(&root.join(dir)))
        .map(|(p, _)| p.strip_prefix(&root).unwrap().to_path_buf())
        .collect();
    assert!(files.len() >= 20, "{files:?}");
    for f in &files {
        assert!(repo().join(f).exists(), "{}: the fixture holds a file the shipped tree does not", f.display());
    }
    vramfit().arg("--root").arg(&root).arg("verify").assert().code(0);
    // One more point, as a measurement would land: a documented figure moves.
    let query = ["--format", "json", "reserve", "sdxl", "decode", "1280x1280", "--dtype", "fp16", "--os", "linux"];
    let before = json_of(&vramfit().arg("--root").arg(&root).args(query).output().unwrap())["bytes"].clone();
    let scratch = scratch_of(&root);
    vramfit().arg("--root").arg(scratch.path()).arg("ingest").arg(fixture("docs/new-point.csv")).assert().code(0);
    vramfit().arg("--root").arg(scratch.path()).args(["emit", "--force"]).assert().code(1);
    let after = json_of(&vramfit().arg("--root").arg(scratch.path()).args(query).output().unwrap())["bytes"].clone();
    assert_ne!(before, after, "a new point would not move the figure: the copy would not be needed");
}
