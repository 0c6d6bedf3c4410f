//! `vramfit diff`: reservations before and after, per key and size.

use crate::common::*;
use std::fs;
use std::path::Path;

fn diff_json(root: Option<&Path>, args: &[&str]) -> (i32, serde_json::Value) {
    let mut c = vramfit();
    match root {
        Some(r) => c.arg("--root").arg(r),
        // The tests' own root, so the figures never move with the shipped data.
        None => c.current_dir(data_root()),
    };
    let out = c.args(["--format", "json", "diff"]).args(args).output().unwrap();
    let code = out.status.code().unwrap();
    assert!(code <= 1, "{args:?}: {}", stderr_of(&out));
    (code, json_of(&out))
}

fn case<'a>(j: &'a serde_json::Value, key: &str, w: u64) -> &'a serde_json::Value {
    j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            let k = &c["key"];
            let s = key_of(k);
            s == key && c["width"] == w
        })
        .unwrap_or_else(|| panic!("no case {key} at {w}"))
}

#[test]
fn legacy_against_the_shipped_file_per_platform_case() {
    let (code, j) = diff_json(None, &["legacy", "fits/vae.json", "--sizes", "1024x1024,2048x2048"]);
    assert_eq!(code, 0);
    assert_eq!((j["before"].as_str(), j["after"].as_str()), (Some("legacy"), Some("fits/vae.json")));
    // The v1 figures the tests already pin, against today's answers.
    let c = case(&j, "sd/decode/0/cudnn/native/any/fp32", 1024);
    assert_eq!((c["before"]["mib"].as_u64(), c["before"]["rule"].as_str()), (Some(9050), Some("legacy")));
    assert_eq!((c["after"]["mib"].as_u64(), c["after"]["rule"].as_str()), (Some(5973), Some("fitted-line")));
    assert_eq!(c["change_pct"], "-34.0%");
    // A default platform nothing was measured on: ROCm on Windows (its v1
    // figures: unchanged, so listed with --all).
    let (_, every) = diff_json(None, &["legacy", "fits/vae.json", "--sizes", "1024x1024,2048x2048", "--all"]);
    let c = case(&every, "sd/decode/0/miopen/expandable_segments/windows/fp32", 1024);
    assert_eq!(c["before"]["mib"], 14650);
    assert_eq!(c["after"]["rule"], "legacy-floor");
    // Only what changed is listed, the rest counted; no line changes against the v1 estimator.
    let cases = j["cases"].as_array().unwrap();
    assert!(cases.iter().all(|c| c["before"] != c["after"]), "an unchanged case was listed");
    let unchanged = j["unchanged"].as_u64().unwrap();
    assert!(unchanged > 0);
    assert_eq!(every["unchanged"], 0);
    assert_eq!(every["cases"].as_array().unwrap().len() as u64, cases.len() as u64 + unchanged);
    assert_eq!(every["cases"].as_array().unwrap().len() % 2, 0, "every case at both sizes");
    assert!(j["lines"].as_array().unwrap().is_empty());
    // --fail-over: the fp16 SD decode grows 2.0% over v1.
    let out = vramfit()
        .args(["diff", "legacy", "fits/vae.json", "--sizes", "1024x1024", "--fail-over", "1.5"])
        .current_dir(data_root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = vramfit()
        .args(["diff", "legacy", "fits/vae.json", "--sizes", "1024x1024", "--fail-over", "50"])
        .current_dir(data_root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn markdown_is_a_pull_request_table() {
    let out = vramfit()
        .current_dir(data_root())
        .args(["--format", "markdown", "diff", "legacy", "fits/vae.json", "--sizes", "1024x1024", "--keys", "qwen"])
        .output()
        .unwrap();
    let s = stdout_of(&out);
    assert!(s.starts_with("### Reservations: `legacy` → `fits/vae.json`"), "{s}");
    assert!(
        s.contains("| qwen_image/decode/0/cudnn/native/any/fp16 | 1024² | 4400 (legacy) | 5676 (fitted) | +29.0% |"),
        "{s}"
    );
    assert!(!s.contains("flux1"), "--keys filters");
}

#[test]
fn git_revisions_in_a_repository_and_a_clear_error_outside_one() {
    let root = scratch();
    let r = root.path();
    // Outside a repository: exit 2, saying so.
    let out = vramfit().arg("--root").arg(r).arg("diff").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("not inside a git repository"), "{}", stderr_of(&out));
    git(r, &["init", "-q"]);
    git(r, &["add", "-A"]);
    git(r, &["commit", "-q", "-m", "shipped"]);
    // A new measurement moves the SD fp16 decode line.
    let f = r.join("new.csv");
    fs::write(
        &f,
        "id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_mib\n\
         new-2k,test,cudnn,native,linux,sd,decode,0,fp16,2048,2048,1,18500\n",
    )
    .unwrap();
    vramfit().arg("--root").arg(r).arg("ingest").arg(&f).assert().code(0);
    assert!(vramfit().arg("--root").arg(r).arg("emit").output().unwrap().status.code().unwrap() <= 1);
    // The table a reviewer reads: the changed rows, and a count of the rest.
    let table = vramfit().arg("--root").arg(r).arg("diff").output().unwrap();
    let text = stdout_of(&table);
    let rows: Vec<&str> =
        text.lines().filter(|l| l.starts_with("sd/") || l.starts_with("flux") || l.starts_with("qwen")).collect();
    assert!(!rows.is_empty() && rows.iter().all(|l| !l.contains(" 0.0%")), "{text}");
    assert!(rows.iter().all(|l| l.starts_with("sd/decode/")), "only the cases the moved line prices: {text}");
    assert!(text.contains("other reservation(s) unchanged (--all lists them too)"), "{text}");
    let (_, j) = diff_json(Some(r), &["--sizes", "2048x2048", "--keys", "sd/decode/0/cudnn/native"]);
    assert_eq!(j["before"], "git:HEAD");
    assert_eq!(j["points_added"], serde_json::json!(["new-2k"]));
    // The report shows that line's plot inline, as PNG, and no other.
    let out = vramfit().arg("--root").arg(r).arg("report").output().unwrap();
    assert!(out.status.code().unwrap() <= 1, "{}", stderr_of(&out));
    let md = fs::read_to_string(r.join("vramfit-report/report.md")).unwrap();
    let inline: Vec<&str> = md.lines().filter(|l| l.starts_with("![")).collect();
    assert_eq!(inline, ["![sd/decode/0/cudnn/native/any/fp16](plots/sd-decode-0-cudnn-native-any-fp16.png)"], "{md}");
    let png = fs::read(r.join("vramfit-report/plots/sd-decode-0-cudnn-native-any-fp16.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    let changed: Vec<&str> = j["lines"].as_array().unwrap().iter().map(|l| l["key"].as_str().unwrap()).collect();
    assert_eq!(changed, ["sd/decode/0/cudnn/native/any/fp16"]);
    let c = case(&j, "sd/decode/0/cudnn/native/any/fp16", 2048);
    assert!(c["after"]["bytes"].as_u64() > c["before"]["bytes"].as_u64());
    assert!(c["after"]["bytes"].as_u64().unwrap() >= 18500 << 20, "the new point is covered");
    // An unknown revision: exit 2 with git's reason.
    let out = vramfit().arg("--root").arg(r).args(["diff", "git:no-such-rev"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("git:no-such-rev"), "{}", stderr_of(&out));
    // A batch of zero is a usage error.
    let out = vramfit().arg("--root").arg(r).args(["diff", "--batch", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // Two legacy sides cannot be priced.
    let out = vramfit().arg("--root").arg(r).args(["diff", "legacy", "legacy"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
