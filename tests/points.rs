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
