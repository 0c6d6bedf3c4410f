//! The allocator replay in the price (docs/traced.md, "What the allocator
//! adds"): shapes drawn through the simulated reserved peak, every
//! measured point beside its replay (`crossval --simulated`), and each
//! class held out and priced by the others (`crossval --by class`).

use crate::common::*;
use serde_json::Value;
use std::fs;
use std::path::Path;

const HEAD: &str =
    "family,vae,op,dtype,tile,temporal_tile,width,height,frames,batch,traced_bytes,simulated,config_source,facts\n";
const SIDES: [u64; 3] = [512, 1024, 2048];

/// Traced rows of `family`: `live` bytes a pixel live, `reserved` bytes a
/// pixel reserved by the native allocator's replay on cuDNN.
fn traces(family: &str, live: u64, reserved: u64, class: &str) -> String {
    let mut t = HEAD.to_string();
    for side in SIDES {
        let (l, r) = (live * side * side, reserved * side * side);
        t.push_str(&format!(
            "{family},{family},decode,fp16,0,0,{side},{side},1,1,{l},cudnn/native={l}:{r};miopen/native={l}:{},\
             \"a config\",class={class};spatial=8\n",
            2 * r
        ));
    }
    t
}

/// A root of `families` (name, class, live and reserved bytes a pixel,
/// measured bytes a pixel), every family measured at its three sizes, emitted.
fn root_of(families: &[(&str, &str, u64, u64, Option<u64>)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("fits")).unwrap();
    fs::create_dir_all(root.join("measurements/traced")).unwrap();
    let mut policy = String::new();
    let mut csv =
        String::from("id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_bytes\n");
    for (family, class, live, reserved, measured) in families {
        policy.push_str(&format!("[vae.{family}]\nclass = \"{class}\"\n\n"));
        fs::write(root.join(format!("measurements/traced/{family}.csv")), traces(family, *live, *reserved, class))
            .unwrap();
        if let Some(per) = measured {
            for side in SIDES {
                csv.push_str(&format!(
                    "{family}-{side},test,cudnn,native,linux,{family},decode,0,fp16,{side},{side},1,{}\n",
                    per * side * side
                ));
            }
        }
    }
    policy.push_str("[traced]\nmargin = \"0.25\"\nreason = \"a test\"\n");
    fs::write(root.join("fits/policy.toml"), policy).unwrap();
    fs::write(root.join("points.csv"), csv).unwrap();
    vramfit().arg("--root").arg(root).arg("ingest").arg(root.join("points.csv")).assert().code(0);
    vramfit().arg("--root").arg(root).arg("emit").assert().code(0);
    dir
}

fn reserve(root: &Path, family: &str, side: u64) -> Value {
    let out = vramfit()
        .arg("--root")
        .arg(root)
        .args(["--format", "json", "reserve", family, "decode", &format!("{side}x{side}")])
        .args(["--dtype", "fp16", "--backend", "cudnn", "--allocator", "native", "--os", "linux"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    json_of(&out)
}

#[test]
fn an_unmeasured_family_is_priced_through_its_simulated_reserved_peak_not_its_live_bytes() {
    // `a` is measured at exactly its simulated reserved peak (1 600 B/px),
    // which is twice its live peak; `b` has the same live peak but its
    // replay reserves only 1.2x it. Priced through the live bytes, b would
    // borrow a's 2x; through the replay, it is priced at its own 960 B/px.
    let dir = root_of(&[("a", "kl-2d", 800, 1600, Some(1600)), ("b", "kl-2d", 800, 960, None)]);
    let root = dir.path();
    for side in [768u64, 1536] {
        let answer = reserve(root, "b", side);
        assert_eq!(answer["rule"], "traced", "{answer}");
        let traced = answer["traced"]["traced_bytes"].as_u64().unwrap();
        assert_eq!(traced, 960 * side * side, "the shape is the replay's reserved peak: {answer}");
        let bytes = answer["bytes"].as_u64().unwrap();
        // The calibration is 1.0 x the replay with the 0.25 margin.
        assert!(bytes >= traced && bytes <= traced * 5 / 4 + (1 << 20), "{bytes} against {traced}: {answer}");
        assert!(bytes < 1600 * side * side, "priced as if it reserved what a does: {answer}");
    }
    // verify proves the shapes from the replayed column: a hand edit to one
    // reserved peak is a finding.
    vramfit().arg("--root").arg(root).arg("verify").assert().code(0);
    let path = root.join("measurements/traced/b.csv");
    let text = fs::read_to_string(&path).unwrap();
    let edited = text.replacen(&format!(":{}", 960 * 1024 * 1024), &format!(":{}", 961 * 1024 * 1024), 1);
    assert_ne!(edited, text);
    fs::write(&path, edited).unwrap();
    vramfit().arg("--root").arg(root).arg("verify").assert().code(1);
}

#[test]
fn a_malformed_simulated_field_is_refused_naming_its_file_line_and_field() {
    let dir = root_of(&[("a", "kl-2d", 800, 1600, Some(1600))]);
    let root = dir.path();
    let path = root.join("measurements/traced/a.csv");
    let good = fs::read_to_string(&path).unwrap();
    for (bad, words) in [
        ("cudnn/native=5:4", "expected backend/allocator=ALLOCATED:RESERVED"),
        ("cudnn/native=4", "expected backend/allocator"),
        ("cudnn=4:5", "expected backend/allocator"),
        ("cudnn/native=4:5;cudnn/native=4:5", "given twice"),
        ("cudnn/native=-4:5", "expected backend/allocator"),
    ] {
        let line2 = good.lines().nth(1).unwrap();
        let field = line2.split(',').nth(11).unwrap();
        fs::write(&path, good.replacen(field, bad, 1)).unwrap();
        let out = vramfit().arg("--root").arg(root).arg("verify").output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains("a.csv:2") && err.contains("simulated") && err.contains(words), "{bad}: {err}");
    }
}

#[test]
fn crossval_simulated_puts_every_point_beside_its_replay_in_the_band() {
    let dir = root_of(&[("a", "kl-2d", 800, 1600, Some(1600)), ("b", "kl-2d", 800, 1500, Some(1500))]);
    let root = dir.path();
    // The points' own configurations, replayed: a's at its measured peak
    // (1.000), b's 1.5x under its measured peak (outside the band): the
    // comparison reads points.csv, not the family's grid.
    fs::create_dir_all(root.join("measurements/traced/points")).unwrap();
    let mut rows = HEAD.replace(",config_source,facts", "").to_string();
    for (family, reserved) in [("a", 1600u64), ("b", 1000)] {
        for side in SIDES {
            let r = reserved * side * side;
            rows.push_str(&format!("{family},{family},decode,fp16,0,0,{side},{side},1,1,{r},cudnn/native={r}:{r}\n"));
        }
    }
    fs::write(root.join("measurements/traced/points/points.csv"), rows).unwrap();
    let out = vramfit().arg("--root").arg(root).args(["--format", "json", "crossval", "--simulated"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let j = json_of(&out);
    let all = j["groups"].as_array().unwrap().iter().find(|g| g["group"] == "all").unwrap().clone();
    assert_eq!((all["points"].as_u64(), all["within"].as_u64()), (Some(6), Some(3)), "{j}");
    assert_eq!(all["max"], "1.500");
    let b = j["compared"].as_array().unwrap().iter().find(|c| c["id"] == "b-1024").unwrap().clone();
    assert_eq!(
        (b["ratio"].as_str(), b["within"].as_bool(), b["metric"].as_str()),
        (Some("1.500"), Some(false), Some("reserved"))
    );
    // A point no replay stands for is listed, not dropped.
    let text = fs::read_to_string(root.join("measurements/traced/points/points.csv")).unwrap();
    fs::write(
        root.join("measurements/traced/points/points.csv"),
        text.lines().filter(|l| !l.starts_with("b,b,decode,fp16,0,0,2048")).collect::<Vec<_>>().join("\n") + "\n",
    )
    .unwrap();
    let out = vramfit().arg("--root").arg(root).args(["crossval", "--simulated"]).output().unwrap();
    let words = stdout_of(&out);
    assert!(words.contains("not compared: b-2048: no trace at its configuration"), "{words}");
    assert!(words.contains("3 of 5 points within [0.850, 1.300]"), "{words}");
}

#[test]
fn crossval_by_class_prices_each_class_from_the_others_alone() {
    // Two classes, each measured at 1.0x its replay: held out, each is
    // priced by the other's calibration (1.0x + the margin) and covered.
    let dir = root_of(&[("a", "kl-2d", 800, 1600, Some(1600)), ("c", "dc-ae", 300, 500, Some(500))]);
    let root = dir.path();
    let out =
        vramfit().arg("--root").arg(root).args(["--format", "json", "crossval", "--by", "class"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let j = json_of(&out);
    assert_eq!(j["by"], "class");
    assert_eq!((j["held_out"].as_u64(), j["covered"].as_u64()), (Some(6), Some(6)), "{j}");
    let folds: std::collections::BTreeSet<String> = j["lines"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["points"].as_array().unwrap().iter().map(|p| p["fold"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(folds, ["class dc-ae".to_string(), "class kl-2d".to_string()].into_iter().collect());
    // A class measured at twice what the other's calibration says is not
    // covered: the fold never sees its own points.
    let dir = root_of(&[("a", "kl-2d", 800, 1600, Some(1600)), ("c", "dc-ae", 300, 500, Some(1000))]);
    let out = vramfit()
        .arg("--root")
        .arg(dir.path())
        .args(["--format", "json", "crossval", "--by", "class"])
        .output()
        .unwrap();
    let j = json_of(&out);
    assert_eq!((j["held_out"].as_u64(), j["covered"].as_u64()), (Some(6), Some(3)), "{j}");
}

#[test]
fn a_family_whose_traces_equal_a_measured_familys_is_priced_by_its_lines() {
    // `t` has a's architecture under another name (SD3's VAE is FLUX.1's):
    // the same traced rows, byte for byte, and no point of its own.
    let dir = root_of(&[("a", "kl-2d", 800, 1600, Some(1700)), ("t", "kl-2d", 800, 1600, None)]);
    let root = dir.path();
    for side in [768u64, 1024, 1536] {
        let (a, t) = (reserve(root, "a", side), reserve(root, "t", side));
        assert_eq!(t["bytes"], a["bytes"], "{t}\n{a}");
        assert_eq!(t["rule"], a["rule"], "{t}");
        let words = t["warnings"].to_string();
        assert!(words.contains("its architecture is a's") && words.contains("all 3 rows"), "{words}");
    }
    let shipped: Value = serde_json::from_str(&fs::read_to_string(root.join("fits/vae.json")).unwrap()).unwrap();
    assert_eq!(shipped["traced"]["twins"]["t"], serde_json::json!({"of": "a", "rows": 3}));
    // One byte apart is another architecture: priced by its own trace.
    let dir = root_of(&[("a", "kl-2d", 800, 1600, Some(1700)), ("u", "kl-2d", 800, 1600, None)]);
    let root = dir.path();
    let path = root.join("measurements/traced/u.csv");
    let text = fs::read_to_string(&path).unwrap();
    let r = 1600u64 * 512 * 512;
    fs::write(&path, text.replacen(&format!(":{r};"), &format!(":{};", r + 1), 1)).unwrap();
    vramfit().arg("--root").arg(root).arg("emit").assert().code(0);
    let u = reserve(root, "u", 1024);
    assert_eq!(u["rule"], "traced", "{u}");
    assert!(!u["warnings"].to_string().contains("architecture is"), "{u}");
    // Measured, a family is priced by its own points whatever its traces.
    vramfit().arg("--root").arg(root).arg("verify").assert().code(0);
}
