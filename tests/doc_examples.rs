//! The examples the documentation shows, run as written: every line a
//! marked `console` block shows (but the elided `…` and the `coefficients`
//! line, which names where the answer came from) is in what vramfit prints.
//! They run on a frozen copy of the data they were written from
//! (`tests/fixtures/docs`, or the video root), with `--root` pointing at it,
//! so new measurements in `measurements/` never move their figures.

use crate::common::*;
use std::fs;

/// Every `console` block after `mark` in `doc`, run on `root`.
fn run_marked(doc: &str, mark: &str, root: &std::path::Path) {
    let text = fs::read_to_string(repo().join(doc)).unwrap();
    let block = text.split(mark).nth(1).unwrap_or_else(|| panic!("{doc} marks {mark}"));
    let block = block.split("```console").nth(1).unwrap().split("```").next().unwrap();
    let mut lines = block.lines().filter(|l| !l.trim().is_empty());
    let command = lines.next().unwrap().strip_prefix("$ vramfit ").unwrap();
    let out = vramfit().arg("--root").arg(root).args(command.split_whitespace()).output().unwrap();
    let printed = format!("{}{}", stdout_of(&out), stderr_of(&out));
    for shown in lines.filter(|l| !l.trim_start().starts_with("coefficients")) {
        for part in shown.split('…').map(str::trim).filter(|p| !p.is_empty()) {
            assert!(printed.contains(part), "{doc} {mark}: `{command}` shows `{part}`; vramfit printed:\n{printed}");
        }
    }
}

#[test]
fn the_readme_quick_start_is_what_vramfit_prints() {
    for mark in ["<!-- quick-reserve -->", "<!-- quick-plan -->"] {
        run_marked("README.md", mark, &fixture("docs"));
    }
}

#[test]
fn the_video_examples_are_what_vramfit_prints() {
    for mark in ["<!-- video-reserve -->", "<!-- video-plan -->"] {
        run_marked("docs/video.md", mark, &fixture("video"));
    }
}

#[test]
fn the_plan_reference_examples_are_what_vramfit_prints() {
    run_marked("docs/plan.md", "<!-- plan-chunked -->", &fixture("docs"));
}
