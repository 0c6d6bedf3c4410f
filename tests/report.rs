//! `vramfit report`: the file a maintainer attaches to a pull request.

use crate::common::*;
use std::fs;

#[test]
fn report_bundles_lines_verify_diff_crossval_and_plots() {
    let out_dir = tempfile::tempdir().unwrap();
    let out = vramfit()
        .current_dir(data_root())
        .args(["report", "--before", "legacy", "--out"])
        .arg(out_dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let md = fs::read_to_string(out_dir.path().join("report.md")).unwrap();
    for section in ["## Lines", "## Verify", "## Before and after", "## Cross-validation", "## Plots"] {
        assert!(md.contains(section), "{section} missing");
    }
    assert!(md.contains("verify: **green**"));
    assert!(md.contains("### Reservations: `legacy` → `fits/vae.json`"));
    assert!(md.contains("120 of 123 held-out points covered (97.5%)"), "the crossval summary");
    // Every plot link points at a file that was written.
    let mut links = 0;
    for part in md.split("](plots/").skip(1) {
        let file = part.split(')').next().unwrap();
        assert!(out_dir.path().join("plots").join(file).exists(), "{file}");
        links += 1;
    }
    // Against the v1 estimator no line changed: the 18 plots linked, none inline.
    assert_eq!(links, 18 + 1, "18 plots and the index: {md}");
    assert!(md.contains("no plot is shown inline"), "{md}");
    assert!(!md.contains("!["));
    // --all shows every line's PNG inline.
    let all = tempfile::tempdir().unwrap();
    vramfit()
        .current_dir(data_root())
        .args(["report", "--all", "--before", "legacy", "--out"])
        .arg(all.path())
        .assert()
        .code(0);
    let md_all = fs::read_to_string(all.path().join("report.md")).unwrap();
    assert_eq!(md_all.lines().filter(|l| l.starts_with("![") && l.ends_with(".png)")).count(), 18);
    // The same inputs, the same report.
    let again = tempfile::tempdir().unwrap();
    vramfit()
        .current_dir(data_root())
        .args(["report", "--before", "legacy", "--out"])
        .arg(again.path())
        .assert()
        .code(0);
    assert_eq!(fs::read(again.path().join("report.md")).unwrap(), md.as_bytes());
}

#[test]
fn outside_a_repository_the_report_says_why_there_is_no_diff() {
    let root = scratch();
    let out = vramfit().arg("--root").arg(root.path()).arg("report").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let md = fs::read_to_string(root.path().join("vramfit-report/report.md")).unwrap();
    assert!(md.contains("No diff: git:HEAD:") && md.contains("not inside a git repository"), "{md}");
}
