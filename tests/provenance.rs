//! Every answer says where it came from: `plan` names the rule and line of
//! each pricing it rests on, `--strict` refuses estimates, tiles are
//! validated, and canvas and budget arithmetic is exact.

use crate::common::*;
use std::fs;

fn run(args: &[&str]) -> std::process::Output {
    on_data_root().args(args).output().unwrap()
}

fn json(args: &[&str]) -> serde_json::Value {
    let mut a = vec!["--format", "json"];
    a.extend_from_slice(args);
    let out = run(&a);
    assert!(out.status.code().unwrap() <= 1, "{args:?}: {}", stderr_of(&out));
    json_of(&out)
}

#[test]
fn a_plan_names_the_rule_and_line_of_each_pricing() {
    let args = ["plan", "sdxl", "decode", "2048x2048", "--dtype", "fp16", "--free", "8GiB", "--os", "linux"];
    let j = json(&args);
    assert_eq!(j["verdict"], "tiled");
    let t = j["tile"].as_u64().unwrap();
    let steps = j["steps"].as_array().unwrap();
    let tile = steps.iter().find(|s| s["role"] == "tile" && s["tile"] == t).unwrap();
    // No line of its own: the untiled line at one tile, plus the copies.
    assert_eq!(tile["rule"], "derived-tile");
    assert_eq!(tile["line"]["tile"], t);
    assert_eq!(tile["priced_by"]["tile"], 0);
    assert_eq!(tile["fits"], true);
    assert_eq!(tile["bytes"], j["peak_bytes"]);
    let whole = steps.iter().find(|s| s["role"] == "all").unwrap();
    assert_eq!(whole["rule"], "fitted-line");
    let text = stdout_of(&run(&args));
    assert!(text.contains(&format!("derived tile sd/decode/0/cudnn/native/any/fp16 (for sd/decode/{t}/")), "{text}");
}

#[test]
fn strict_refuses_answers_that_rest_on_estimates() {
    let base = ["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "linux"];
    let with = |cmd: &str, extra: &[&str]| {
        let mut a = vec![cmd];
        a.extend_from_slice(&base);
        a.extend_from_slice(extra);
        a.push("--strict");
        run(&a)
    };
    // A fitted line inside its measured range: strict passes.
    assert_eq!(with("reserve", &[]).status.code(), Some(0));
    assert_eq!(with("plan", &["--free", "24GiB"]).status.code(), Some(0));
    // The legacy floor, the unmeasured rule, an extrapolated size: exit 1, saying why.
    for (cmd, extra, why) in [
        ("reserve", vec!["--backend", "miopen"], "legacy floor"),
        ("reserve", vec!["--allocator", "cudaMallocAsync"], "priced by the"),
        ("plan", vec!["--backend", "miopen", "--free", "24GiB"], "legacy floor"),
        ("plan", vec!["--free", "8GiB", "--batch", "16"], "outside the measured range"),
    ] {
        let out = with(cmd, &extra);
        assert_eq!(out.status.code(), Some(1), "{cmd} {extra:?}");
        assert!(stderr_of(&out).contains("strict:") && stderr_of(&out).contains(why), "{}", stderr_of(&out));
        // The same answer without --strict exits 0.
        let mut a = vec![cmd];
        a.extend_from_slice(&base);
        a.extend_from_slice(&extra);
        assert_eq!(run(&a).status.code(), Some(0));
    }
    let out = run(&["reserve", "sdxl", "decode", "3072x3072", "--dtype", "fp16", "--strict"]);
    assert_eq!(out.status.code(), Some(1), "extrapolated");
    assert_eq!(
        run(&["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--strict", "--legacy"]).status.code(),
        Some(2)
    );
}

#[test]
fn a_tile_off_the_latent_grid_is_refused_and_any_other_is_priced() {
    for t in ["1", "300", "1020"] {
        let out = run(&["reserve", "sdxl", "decode", "4096x1024", "--dtype", "fp16", "--tile", t]);
        assert_eq!(out.status.code(), Some(2), "--tile {t}");
        assert!(stderr_of(&out).contains("a tile is a multiple of 8 pixels"), "{}", stderr_of(&out));
    }
    // A tile nobody measured, on a measured platform: the derived tile.
    for t in ["640", "2048"] {
        let j = json(&["reserve", "sdxl", "decode", "4096x1024", "--dtype", "fp16", "--tile", t]);
        assert_eq!(j["rule"], "derived-tile", "--tile {t}");
        let tile: u64 = t.parse().unwrap();
        assert_eq!(j["tiled"]["tile_pixels"], tile.min(4096) * tile.min(1024));
    }
}

#[test]
fn a_tile_that_covers_the_image_prices_the_untiled_work_and_says_so() {
    let untiled = json(&["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16"]);
    for t in ["1024", "2048", "5000"] {
        let tiled = json(&["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--tile", t]);
        assert_eq!(tiled["bytes"], untiled["bytes"], "--tile {t}");
        assert_eq!(tiled["line"]["tile"], 0);
        assert_eq!(tiled["tile_asked"].to_string(), t);
        assert!(tiled["warnings"][0].as_str().unwrap().contains("covers the whole 1024x1024 image"));
    }
    // A tile smaller than one side is tiled work.
    let wide = json(&["reserve", "sdxl", "decode", "2048x512", "--dtype", "fp16", "--tile", "512"]);
    assert_eq!(wide["line"]["tile"], 512);
}

#[test]
fn a_plan_with_a_tile_is_labelled_tiled() {
    let j = json(&["plan", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--tile", "256", "--free", "8GiB"]);
    assert_eq!((j["verdict"].as_str(), j["tile"].as_u64()), (Some("tiled"), Some(256)));
    let text =
        stdout_of(&run(&["plan", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--tile", "256", "--free", "8GiB"]));
    assert!(text.starts_with("TILED: 256-pixel tiles, all 1 item(s) at once"), "{text}");
    // Chunked tiled work: groups of the asked tile.
    let args = [
        "plan",
        "sdxl",
        "decode",
        "2048x2048",
        "--dtype",
        "fp32",
        "--tile",
        "512",
        "--batch",
        "8",
        "--free",
        "2000MiB",
    ];
    let j = json(&args);
    assert_eq!((j["verdict"].as_str(), j["tile"].as_u64()), (Some("tiled"), Some(512)));
    assert!(j["groups"].as_u64().unwrap() > 1, "{j}");
    assert!(stdout_of(&run(&args)).contains("512-pixel tiles,"), "{}", stdout_of(&run(&args)));
}

#[test]
fn a_tiled_legacy_price_scales_with_the_batch() {
    // XPU: a platform nobody measured, so the legacy floor prices its tiles.
    let one = json(&["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--tile", "256", "--backend", "xpu"]);
    let three = json(&[
        "reserve",
        "sdxl",
        "decode",
        "1024x1024",
        "--dtype",
        "fp16",
        "--tile",
        "256",
        "--backend",
        "xpu",
        "--batch",
        "3",
    ]);
    assert_eq!(one["rule"], "legacy-floor");
    assert_eq!(three["bytes"].as_u64().unwrap(), 3 * one["bytes"].as_u64().unwrap());
    let plan = json(&[
        "plan",
        "sdxl",
        "decode",
        "1024x1024",
        "--dtype",
        "fp16",
        "--tile",
        "256",
        "--backend",
        "xpu",
        "--batch",
        "3",
        "--free",
        "8GiB",
    ]);
    assert_eq!(plan["per_item_bytes"], one["bytes"], "one more item costs one more tile");
}

#[test]
fn canvas_transient_arithmetic_is_exact_for_tiny_factors() {
    for factor in ["0.000000000000000001", "1e-16"] {
        let args = [
            "plan",
            "canvas",
            "1280x720",
            "--frames",
            "240",
            "--upscale",
            "4",
            "--free",
            "20GiB",
            "--transient",
            factor,
        ];
        let j = json(&args);
        assert_eq!(j["verdict"], "full", "{factor}");
        assert_eq!(j["transient_verdict"], "full", "{factor}");
        assert_eq!(j["subchunk_frames"], 240, "{factor}");
    }
}

#[test]
fn zero_free_memory_or_cap_is_a_usage_error() {
    for args in [
        vec!["plan", "canvas", "64x64", "--frames", "2", "--free", "0"],
        vec!["plan", "canvas", "64x64", "--frames", "2", "--cap", "0"],
        vec!["plan", "canvas", "64x64", "--frames", "2", "--free", "0GiB", "--cap", "1GiB"],
        vec!["plan", "sdxl", "decode", "512x512", "--dtype", "fp16", "--free", "0"],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr_of(&out).contains("more than 0"), "{}", stderr_of(&out));
    }
}

#[test]
fn reserve_and_plan_refuse_a_malformed_coefficients_file() {
    let dir = tempfile::tempdir().unwrap();
    let shipped: serde_json::Value =
        serde_json::from_slice(&fs::read(data_root().join("fits/vae.json")).unwrap()).unwrap();
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let edits: Vec<(&str, Edit)> = vec![
        ("unknown field", Box::new(|v| v["lines"][0]["scale"] = serde_json::json!(2))),
        (
            "missing field",
            Box::new(|v| {
                v["lines"][0].as_object_mut().unwrap().remove("size_range");
            }),
        ),
        ("canonical form", Box::new(|v| v["lines"][0]["dtype"] = serde_json::json!("float16"))),
        ("canonical form", Box::new(|v| v["margin"] = serde_json::json!("0.050"))),
        ("unknown field", Box::new(|v| v["legacy"]["k"]["cudnn"]["tiled"] = serde_json::json!(1))),
        ("more than two decimals", Box::new(|v| v["lines"][0]["slope"] = serde_json::json!("4435.201"))),
        ("unmeasured.rule", Box::new(|v| v["unmeasured"]["rule"] = serde_json::json!("max-measured"))),
        (
            "a line appears twice",
            Box::new(|v| {
                let l = v["lines"][0].clone();
                v["lines"].as_array_mut().unwrap().insert(0, l);
            }),
        ),
    ];
    for (what, edit) in edits {
        let mut v = shipped.clone();
        edit(&mut v);
        let f = dir.path().join("c.json");
        fs::write(&f, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
        let f = f.display().to_string();
        for cmd in [
            vec!["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--coefficients", &f],
            vec!["plan", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--free", "8GiB", "--coefficients", &f],
        ] {
            let out = run(&cmd);
            assert_eq!(out.status.code(), Some(2), "{what}: {cmd:?}");
            assert!(stderr_of(&out).contains(what), "{what}: {}", stderr_of(&out));
        }
    }
}

#[test]
fn version_names_the_compiled_in_coefficients() {
    // The compiled-in copy is the repository's file, whatever it holds.
    let shipped = fs::read(repo().join("fits/vae.json")).unwrap();
    let file: serde_json::Value = serde_json::from_slice(&shipped).unwrap();
    let lines = file["lines"].as_array().unwrap();
    let points: u64 = lines.iter().map(|l| l["points"].as_u64().unwrap()).sum();
    for flag in ["--version", "-V"] {
        let out = vramfit().arg(flag).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.starts_with(&format!("vramfit {}\n", env!("CARGO_PKG_VERSION"))), "{text}");
        assert!(text.contains(&vramfit::fsio::sha256_tag(&shipped)), "the file's digest: {text}");
        assert!(text.contains(&format!("{} lines (", lines.len())), "{text}");
        assert!(text.contains(&format!(" on {points} points")), "{text}");
        assert!(text.contains(file["digests"]["points"].as_str().unwrap()), "{text}");
    }
}

#[test]
fn a_file_as_emit_writes_it_and_the_same_values_laid_out_otherwise_load_alike() {
    let text = fs::read_to_string(data_root().join("fits/vae.json")).unwrap();
    let fast = vramfit::coefficients::parse(&text, "vae.json").unwrap();
    let raw = vramfit::coefficients::read_json(&text, "vae.json").unwrap();
    assert_eq!(fast, vramfit::coefficients::parse_read(&text, &raw, "vae.json").unwrap());
    // Compact JSON: other bytes, the same values: still canonical, the same file.
    let compact = serde_json::to_string(&raw).unwrap();
    assert_eq!(vramfit::coefficients::parse(&compact, "c.json").unwrap(), fast);
    // The same bytes but for one value: refused, naming the field.
    let edited = text.replacen("\"min_sizes\": 3", "\"min_sizes\": 4", 1);
    assert_ne!(edited, text);
    let e = vramfit::coefficients::parse(&edited, "e.json");
    assert!(e.is_ok_and(|f| f.min_sizes == 4), "a different value still loads if canonical (verify compares it)");
    let typo = text.replacen("\"min_sizes\": 3", "\"min_sizes\": 3, \"min_size\": 3", 1);
    let e = vramfit::coefficients::parse(&typo, "t.json").unwrap_err().to_string();
    assert!(e.contains("min_size") && e.contains("unknown field"), "{e}");
}
