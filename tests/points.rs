//! `vramfit points`: filtering and the two output forms agree.

use crate::common::*;

#[test]
fn filters_by_model_alias_and_key_fields() {
    let out = vramfit()
        .arg("--root")
        .arg(repo())
        .args(["--format", "json", "points", "--vae", "sdxl", "--op", "decode", "--dtype", "float16", "--tile", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let j = json_of(&out);
    let pts = j["points"].as_array().unwrap();
    // 5 sizes from 7785061 plus the 3 SDXL fp16 decodes of the PRs.
    assert_eq!(pts.len(), 8);
    for p in pts {
        assert_eq!(p["model"], "sdxl");
        assert_eq!(p["dtype"], "fp16");
        assert_eq!(p["op"], "decode");
    }
    assert_eq!(j["total"], 138);
}

#[test]
fn allocator_filter_takes_pytorch_spelling() {
    let out = vramfit()
        .arg("--root")
        .arg(repo())
        .args(["--format", "json", "points", "--allocator", "backend:cudaMallocAsync"])
        .output()
        .unwrap();
    assert_eq!(json_of(&out)["points"].as_array().unwrap().len(), 5);
}

#[test]
fn table_lists_the_same_points() {
    let out =
        vramfit().arg("--root").arg(repo()).args(["points", "--vae", "flux1", "--dtype", "bf16"]).output().unwrap();
    let s = stdout_of(&out);
    assert!(s.contains("10 of 138 points"), "{s}");
    assert!(s.contains("i7785061-flux1-decode-bf16-2048x2048"));
    // 16928 MiB reserved is the demand of that point.
    assert!(s.contains("16928.00"));
}

#[test]
fn unknown_model_lists_registered() {
    let out = vramfit().arg("--root").arg(repo()).args(["points", "--vae", "wan21"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("registered: "));
}

#[test]
fn every_help_shows_an_example() {
    for sub in ["ingest", "points", "fit", "emit", "verify", "reserve", "plan"]
        .iter()
        .map(|s| vec![*s, "--help"])
        .chain(std::iter::once(vec!["--help"]))
    {
        let out = vramfit().args(&sub).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert!(stdout_of(&out).contains("Examples:"), "{sub:?}");
    }
}
