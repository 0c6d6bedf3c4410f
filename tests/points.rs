//! `vramfit points`: filtering and the two output forms agree.

use crate::common::*;

#[test]
fn filters_by_model_alias_and_key_fields() {
    let out = vramfit()
        .arg("--root")
        .arg(data_root())
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
        .arg(data_root())
        .args(["--format", "json", "points", "--allocator", "backend:cudaMallocAsync"])
        .output()
        .unwrap();
    assert_eq!(json_of(&out)["points"].as_array().unwrap().len(), 5);
}

#[test]
fn table_lists_the_same_points() {
    let out = vramfit()
        .arg("--root")
        .arg(data_root())
        .args(["points", "--vae", "flux1", "--dtype", "bf16"])
        .output()
        .unwrap();
    let s = stdout_of(&out);
    assert!(s.contains("10 of 138 points"), "{s}");
    assert!(s.contains("i7785061-flux1-decode-bf16-2048x2048"));
    // 16928 MiB reserved is the demand of that point.
    assert!(s.contains("16928.00"));
}

#[test]
fn unknown_model_lists_registered() {
    let out = vramfit().arg("--root").arg(data_root()).args(["points", "--vae", "wan21"]).output().unwrap();
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

#[test]
fn a_line_lists_exactly_the_points_the_fit_grouped_into_it() {
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data_root().join("fits/vae.json")).unwrap()).unwrap();
    let key = |l: &serde_json::Value| {
        ["vae", "op", "tile", "conv_backend", "allocator", "os", "dtype"]
            .iter()
            .map(|f| match &l[*f] {
                serde_json::Value::String(s) => s.clone(),
                v => v.to_string(),
            })
            .collect::<Vec<_>>()
            .join("/")
    };
    let lines: Vec<&serde_json::Value> =
        file["lines"].as_array().unwrap().iter().chain(file["insufficient"].as_array().unwrap()).collect();
    assert!(lines.len() >= 10);
    for l in lines {
        let k = key(l);
        let out = on_data_root().args(["--format", "json", "points", "--line", &k]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{k}");
        let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut ids: Vec<&str> = got["points"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap()).collect();
        ids.sort_unstable();
        let want: Vec<&str> = l["point_ids"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(ids, want, "{k}");
        assert_eq!(got["line"], k.as_str());
    }
    // A model name stands for its family, and PyTorch spellings are read.
    let a =
        on_data_root().args(["--format", "json", "points", "--line", "sdxl/decode/0/cuda/native/any/float16"]).output();
    let b = on_data_root().args(["--format", "json", "points", "--line", "sd/decode/0/cudnn/native/any/fp16"]).output();
    assert_eq!(a.unwrap().stdout, b.unwrap().stdout);
    // A malformed key names the part at fault; the key fields cannot be mixed in.
    let bad = vramfit().args(["points", "--line", "sd/decode/0/cudnn/native/any"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("7 parts"));
    let bad = vramfit().args(["points", "--line", "sd/decode/zero/cudnn/native/any/fp16"]).output().unwrap();
    assert!(String::from_utf8_lossy(&bad.stderr).contains("tile: 'zero'"));
    vramfit().args(["points", "--line", "sd/decode/0/cudnn/native/any/fp16", "--os", "linux"]).assert().code(2);
}

#[test]
fn a_line_of_fresh_and_warm_points_says_so_and_each_point_shows_its_context() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("fits")).unwrap();
    std::fs::write(root.path().join("fits/policy.toml"), "[vae.sd]\nmodels = [\"sdxl\"]\n").unwrap();
    let mut csv = String::from(
        "id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,context,reserved_bytes\n",
    );
    for (id, context, side, demand) in [
        ("w1", "warm", 512u64, 1_000_000_000u64),
        ("w2", "warm", 1024, 4_000_000_000),
        ("f1", "fresh-process", 768, 2_500_000_000),
        ("u1", "", 1536, 9_000_000_000),
    ] {
        csv.push_str(&format!("{id},t,cudnn,native,linux,sd,decode,0,fp16,{side},{side},1,{context},{demand}\n"));
    }
    std::fs::write(root.path().join("p.csv"), csv).unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(root.path().join("p.csv")).assert().code(0);
    // `fresh-process` is stored as `fresh`; an empty cell says nothing.
    let listed = vramfit().arg("--root").arg(root.path()).args(["--format", "json", "points"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let context = |id: &str| v["points"].as_array().unwrap().iter().find(|p| p["id"] == id).unwrap()["context"].clone();
    assert_eq!((context("f1"), context("w1"), context("u1")), ("fresh".into(), "warm".into(), serde_json::Value::Null));
    let table = stdout_of(
        &vramfit()
            .arg("--root")
            .arg(root.path())
            .args(["points", "--line", "sd/decode/0/cudnn/native/any/fp16"])
            .output()
            .unwrap(),
    );
    assert!(table.contains(" fresh "), "{table}");
    assert!(table.contains("taken in more than one context (fresh 1, unsaid 1, warm 2)"), "{table}");
    let fit = vramfit().arg("--root").arg(root.path()).arg("fit").output().unwrap();
    let text = stdout_of(&fit);
    assert!(text.contains("note: sd/decode/0/cudnn/native/any/fp16 mixes points taken in different contexts (fresh 1, unsaid 1, warm 2)"), "{text}");
    let fit = vramfit().arg("--root").arg(root.path()).args(["--format", "json", "fit"]).output().unwrap();
    let j: serde_json::Value = serde_json::from_slice(&fit.stdout).unwrap();
    assert_eq!(j["lines"][0]["contexts"], serde_json::json!({"fresh": 1, "unsaid": 1, "warm": 2}));
    // A line of one context says nothing.
    let one = tempfile::tempdir().unwrap();
    copy_dir(&root.path().join("fits"), &one.path().join("fits"));
    let csv = std::fs::read_to_string(root.path().join("p.csv"))
        .unwrap()
        .replace("fresh-process", "warm")
        .replace(",,", ",warm,");
    std::fs::write(one.path().join("p.csv"), csv).unwrap();
    vramfit().arg("--root").arg(one.path()).arg("ingest").arg(one.path().join("p.csv")).assert().code(0);
    let text = stdout_of(&vramfit().arg("--root").arg(one.path()).arg("fit").output().unwrap());
    assert!(!text.contains("mixes points"), "{text}");
}
