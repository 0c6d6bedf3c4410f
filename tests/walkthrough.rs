//! The walk-through of docs/harness.md "I measured a new GPU", run as written on a
//! copy of the shipped files with a generated new GPU, then the checks CI
//! runs on the data: new measurements must pass without touching a test.

use crate::common::*;
use std::fs;
use std::process::Command as Process;

/// The commands of docs/harness.md's block marked `<!-- walkthrough -->`.
fn walkthrough_commands() -> Vec<Vec<String>> {
    let readme = fs::read_to_string(repo().join("docs/harness.md")).unwrap();
    let block = readme.split("<!-- walkthrough -->").nth(1).expect("the README marks its walk-through");
    let body = block.split("```sh\n").nth(1).unwrap().split("```").next().unwrap();
    body.lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

/// A checkout's data: the shipped measurements, fits and the runtime
/// crate's copy, committed, as a maintainer's clone has them.
fn checkout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("measurements"), &dir.path().join("measurements"));
    copy_dir(&repo().join("fits"), &dir.path().join("fits"));
    fs::create_dir_all(dir.path().join("crates/vramfit-runtime")).unwrap();
    fs::copy(repo().join("crates/vramfit-runtime/vae.json"), dir.path().join("crates/vramfit-runtime/vae.json"))
        .unwrap();
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "shipped"]);
    dir
}

/// Rows of a GPU nobody measured: a platform with no line in the shipped
/// file at four sizes (a straight demand with a little seeded noise), and
/// one new size on an existing fitted line, below its envelope.
fn new_gpu_csv(shipped: &serde_json::Value, seed: u64) -> (String, String, String) {
    let mut rng = Rng::new(seed);
    let has = |key: &str| {
        let all = shipped["lines"].as_array().unwrap().iter().chain(shipped["insufficient"].as_array().unwrap());
        all.map(key_of).any(|k| k == key)
    };
    let (backend, allocator) =
        [("xpu", "native"), ("mps", "native"), ("cudnn", "cudaMallocAsync"), ("cudnn", "expandable_segments")]
            .into_iter()
            .find(|(b, a)| !has(&format!("sd/decode/0/{b}/{a}/any/fp16")))
            .expect("a platform the shipped file lacks");
    let new_key = format!("sd/decode/0/{backend}/{allocator}/any/fp16");
    let mut csv = String::from("source,device,conv_backend,allocator,model,op,run_dtype,width,height,reserved_mib\n");
    let (slope, base) = (2900 + rng.below(600) as u64, 150 + rng.below(200) as u64);
    for side in [512u64, 768, 1024, 1536] {
        let px = side * side;
        let mib = (slope * px) / (1 << 20) + base;
        let noisy = mib * (1000 + rng.below(30) as u64) / 1000;
        csv.push_str(&format!(
            "walkthrough test,New GPU,{backend},{allocator},sdxl,decode,fp16,{side},{side},{noisy}\n"
        ));
    }
    // A new size on the first fitted untiled cuDNN line, at 90% of what it reserves there.
    let line = shipped["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["kind"] == "fitted" && l["tile"] == 0 && l["conv_backend"] == "cudnn" && l["os"] == "any")
        .expect("a fitted cuDNN line");
    let (w, h) = (1216u64, 832u64);
    let slope_centi: u64 = line["slope"].as_str().unwrap().replace('.', "").parse().unwrap();
    let reserve = (slope_centi * w * h).div_ceil(100) + line["base_mib"].as_u64().unwrap() * (1 << 20);
    csv.push_str(&format!(
        "walkthrough test,New GPU,cudnn,{},{},{},{},{w},{h},{}\n",
        line["allocator"].as_str().unwrap(),
        line["vae"].as_str().unwrap(),
        line["op"].as_str().unwrap(),
        line["dtype"].as_str().unwrap(),
        reserve * 9 / 10 / (1 << 20)
    ));
    (csv, new_key, key_of(line))
}

#[test]
fn a_new_gpu_passes_the_walkthrough_and_every_data_check() {
    let root = checkout();
    let r = root.path();
    let shipped: serde_json::Value = serde_json::from_slice(&fs::read(r.join("fits/vae.json")).unwrap()).unwrap();
    let (csv, new_key, moved_key) = new_gpu_csv(&shipped, 0x3090);
    fs::write(r.join("measurements/raw/my-gpu.csv"), csv).unwrap();

    // The README's commands, as written, in the checkout.
    let commands = walkthrough_commands();
    assert!(commands.len() >= 5 && commands.iter().all(|c| c[0] == "vramfit"), "{commands:?}");
    for c in &commands {
        let out = vramfit().current_dir(r).args(&c[1..]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}: {}{}", c.join(" "), stdout_of(&out), stderr_of(&out));
    }

    // What CI checks on the data.
    let raw: Vec<_> = fs::read_dir(r.join("measurements/raw"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    let ci = |args: &[&str], files: &[std::path::PathBuf]| {
        let out = vramfit().current_dir(r).args(args).args(files).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}{}", stdout_of(&out), stderr_of(&out));
    };
    ci(&["--format", "github", "ingest", "--check"], &raw);
    ci(&["--format", "github", "emit", "--check"], &[]);
    ci(&["verify", "--format", "github"], &[]);
    // The new platform has its line, and the existing line did not move.
    let after: serde_json::Value = serde_json::from_slice(&fs::read(r.join("fits/vae.json")).unwrap()).unwrap();
    let line_of =
        |f: &serde_json::Value, k: &str| f["lines"].as_array().unwrap().iter().find(|l| key_of(l) == k).cloned();
    assert_eq!(line_of(&after, &new_key).expect("the new GPU's line")["kind"], "fitted");
    let (before_line, after_line) = (line_of(&shipped, &moved_key).unwrap(), line_of(&after, &moved_key).unwrap());
    assert_eq!((&before_line["slope"], &before_line["base_mib"]), (&after_line["slope"], &after_line["base_mib"]));
    assert_eq!(after_line["points"].as_u64().unwrap(), before_line["points"].as_u64().unwrap() + 1);
    // The runtime crate's copy (what the crate and the wheel compile in) is the new file, and an independent
    // refit agrees with it.
    assert_eq!(
        fs::read(r.join("crates/vramfit-runtime/vae.json")).unwrap(),
        fs::read(r.join("fits/vae.json")).unwrap()
    );
    let refit = Process::new("python3").arg(repo().join("tests/python/vramfit_refit.py")).arg(r).output().unwrap();
    assert!(refit.status.success(), "{}", String::from_utf8_lossy(&refit.stderr));
    let py: serde_json::Value = serde_json::from_slice(&refit.stdout).unwrap();
    assert_eq!(
        py[&new_key],
        serde_json::json!([
            line_of(&after, &new_key).unwrap()["slope"],
            line_of(&after, &new_key).unwrap()["base_mib"]
        ])
    );
    // The reviewer's evidence: the report shows the new line's plot inline, as PNG.
    let md = fs::read_to_string(r.join("vramfit-report/report.md")).unwrap();
    let png = format!("plots/{}.png", new_key.replace('/', "-"));
    assert!(md.contains(&format!("![{new_key}]({png})")), "{md}");
    assert!(r.join("vramfit-report").join(&png).exists());
    // The derived ids say what was measured.
    let store = fs::read_to_string(r.join("measurements/vae.json")).unwrap();
    assert!(
        store.contains(&format!("\"id\":\"sdxl-decode-fp16-1536x1536-{}-", new_key.split('/').nth(3).unwrap())),
        "readable ids"
    );
}
