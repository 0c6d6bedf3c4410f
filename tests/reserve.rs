//! `vramfit reserve`: every rule branch, detection from each variable, the
//! SD fp32 rule, cast growth, extrapolation, errors, `--legacy`, and a
//! byte-for-byte cross-check against a stdlib-only Python reader.

use crate::common::*;
use std::fs;
use std::io::Write;
use std::process::Stdio;

fn reserve_json(args: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
    let mut c = on_data_root();
    c.args(["--format", "json", "reserve"]).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr_of(&out));
    json_of(&out)
}

fn reserve_err(args: &[&str]) -> String {
    let out = on_data_root().arg("reserve").args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?} must fail: {}", stdout_of(&out));
    stderr_of(&out)
}

const MIB: u64 = 1 << 20;

#[test]
fn fitted_line_with_its_formula() {
    let j = reserve_json(&["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "linux"], &[]);
    assert_eq!(j["rule"], "fitted-line");
    assert_eq!(j["slope"], "4452.00");
    assert_eq!(j["base_mib"], 36);
    // ceil(445200 × 1048576 / 100) + 36 MiB.
    assert_eq!(j["bytes"], 4452 * 1_048_576 + 36 * MIB);
    assert_eq!(j["mib"], (4452 * 1_048_576 + 36 * MIB).div_ceil(MIB));
    assert_eq!(j["line"]["vae"], "sd");
    assert_eq!(j["line"]["os"], "any");
    assert_eq!(j["weight_growth_bytes"], 0);
    assert_eq!(j["extrapolated"], false);
    assert!(
        j["coefficients"].as_str().unwrap().ends_with("tests/fixtures/root/fits/vae.json"),
        "{}",
        j["coefficients"]
    );
}

#[test]
fn batch_scales_the_pixel_term_only() {
    let one = reserve_json(&["sd15", "encode", "768x768", "--dtype", "fp32", "--os", "linux"], &[]);
    let three = reserve_json(&["sd15", "encode", "768x768", "--dtype", "fp32", "--os", "linux", "--batch", "3"], &[]);
    let base = one["base_mib"].as_u64().unwrap() * MIB;
    let per = one["bytes"].as_u64().unwrap() - base;
    let three_bytes = three["bytes"].as_u64().unwrap();
    assert_eq!(three["pixels"], 768 * 768 * 3);
    // ceil rounding of the pixel term can add at most one byte per step.
    assert!(three_bytes - base >= 3 * per - 2 && three_bytes - base <= 3 * per, "{three_bytes}");
}

#[test]
fn carried_line_prices_by_its_own_values() {
    let root = scratch();
    add_carry(root.path(), "7500.25", 64);
    vramfit().arg("--root").arg(root.path()).arg("emit").assert().code(0);
    let r = root.path().to_str().unwrap();
    let j = reserve_json(
        &[
            "--root",
            r,
            "sdxl",
            "decode",
            "512x512",
            "--dtype",
            "fp16",
            "--backend",
            "miopen",
            "--allocator",
            "native",
            "--os",
            "linux",
        ],
        &[],
    );
    assert_eq!(j["rule"], "carried-line");
    assert_eq!(j["bytes"], (750025u64 * 262_144).div_ceil(100) + 64 * MIB);
    assert!(j["coefficients"].as_str().unwrap().ends_with("fits/vae.json"));
}

#[test]
fn unmeasured_rule_takes_the_largest_same_dtype_line() {
    // cudaMallocAsync SD fp16 decodes have one size only: no line of their own.
    let j = reserve_json(
        &["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--allocator", "cudaMallocAsync", "--os", "linux"],
        &[],
    );
    assert_eq!(j["rule"], "unmeasured-rule");
    assert_eq!(j["priced_by"]["allocator"], "native");
    assert_eq!(j["bytes"], 4452 * 1_048_576 + 36 * MIB);
    // Legacy (cuDNN: 2 × 2200 B/px) is lower and was consulted.
    assert_eq!(j["legacy_bytes"], 4400 * MIB);
    assert!(j["warnings"][0].as_str().unwrap().contains("no line measured"));
}

#[test]
fn legacy_floor_on_an_unmeasured_platform() {
    let j = reserve_json(
        &["sdxl", "decode", "1024x1024", "--dtype", "fp32", "--backend", "miopen", "--os", "windows"],
        &[],
    );
    assert_eq!(j["rule"], "legacy-floor");
    assert_eq!(j["mib"], 14650);
    assert_eq!(j["allocator"]["value"], "expandable_segments");
    assert!(j["allocator"]["from"].as_str().unwrap().contains("platform default"));
    assert_eq!(j["line"]["os"], "windows", "miopen lines are OS-specific");
}

#[test]
fn no_line_and_no_legacy_value_names_the_missing_key() {
    let root = scratch();
    let policy = root.path().join("fits/policy.toml");
    let text = fs::read_to_string(&policy)
        .unwrap()
        .replace("elem_bytes = { fp16 = 2, bf16 = 2, fp32 = 4 }", "elem_bytes = { fp16 = 2, fp32 = 4 }");
    fs::write(&policy, text).unwrap();
    vramfit().arg("--root").arg(root.path()).arg("emit").assert().code(0);
    let err = reserve_err(&[
        "--root",
        root.path().to_str().unwrap(),
        "sdxl",
        "decode",
        "1024x1024",
        "--dtype",
        "bf16",
        "--backend",
        "miopen",
        "--allocator",
        "native",
        "--os",
        "linux",
    ]);
    // (On cuDNN the fp16 and fp32 lines of the same VAE now price bf16.)
    assert!(err.contains("no coefficient line for sd/decode/0/miopen/native/linux/bf16"), "{err}");
    assert!(err.contains("no element size for bf16"), "{err}");
}

#[test]
fn allocator_detected_from_each_variable() {
    let args = ["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "linux"];
    let j = reserve_json(&args, &[]);
    assert_eq!(j["allocator"]["value"], "native");
    let j = reserve_json(&args, &[("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync")]);
    assert_eq!(j["allocator"]["value"], "cudaMallocAsync");
    assert_eq!(j["allocator"]["from"], "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync");
    assert_eq!(j["rule"], "unmeasured-rule");
    let j = reserve_json(
        &args,
        &[("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync"), ("PYTORCH_ALLOC_CONF", "expandable_segments:True")],
    );
    assert_eq!(j["allocator"]["value"], "expandable_segments");
    assert_eq!(j["allocator"]["from"], "PYTORCH_ALLOC_CONF=expandable_segments:True");
    // The HIP variable is read on ROCm only, and first there.
    let hip =
        [("PYTORCH_HIP_ALLOC_CONF", "backend:cudaMallocAsync"), ("PYTORCH_ALLOC_CONF", "expandable_segments:True")];
    assert_eq!(reserve_json(&args, &hip)["allocator"]["value"], "expandable_segments");
    let rocm = ["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "linux", "--backend", "miopen"];
    let j = reserve_json(&rocm, &hip);
    assert_eq!(j["allocator"]["value"], "cudaMallocAsync");
    assert_eq!(j["allocator"]["from"], "PYTORCH_HIP_ALLOC_CONF=backend:cudaMallocAsync");
    // An explicit flag wins over every variable.
    let j = reserve_json(
        &["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "linux", "--allocator", "native"],
        &hip,
    );
    assert_eq!(j["allocator"]["value"], "native");
    assert_eq!(j["allocator"]["from"], "flag");
}

#[test]
fn os_auto_is_the_host() {
    // The host comes from an injected environment, so this test says the
    // same on every machine: a Windows host with ROCm gets Windows and its
    // platform default allocator; a Linux host gets Linux.
    for (host, os, allocator) in [
        (vramfit::vocab::Os::Windows, "windows", "expandable_segments"),
        (vramfit::vocab::Os::Linux, "linux", "native"),
    ] {
        let ran = run_in_process_on(
            host,
            &["--format", "json", "reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--backend", "miopen"],
        )
        .unwrap();
        assert_eq!(ran.code, 0, "{}", ran.err);
        let j: serde_json::Value = serde_json::from_str(&ran.out).unwrap();
        assert_eq!((j["os"]["value"].as_str(), j["os"]["from"].as_str()), (Some(os), Some("host")));
        assert_eq!(j["allocator"]["value"], allocator);
        assert_eq!(j["line"]["os"], os, "MIOpen keys keep the host's OS");
    }
}

#[test]
fn sd_fp32_false_runs_fp16_whatever_is_loaded() {
    let j = reserve_json(
        &["sdxl", "decode", "1024x1024", "--fp32", "false", "--loaded-dtype", "fp32", "--os", "linux"],
        &[],
    );
    assert_eq!(j["run_dtype"]["value"], "fp16");
    assert_eq!(j["line"]["dtype"], "fp16");
    assert_eq!(j["weight_growth_bytes"], 0, "narrowing a cast adds nothing");
    assert_eq!(j["bytes"], 4452 * 1_048_576 + 36 * MIB);
}

#[test]
fn cast_growth_is_added_for_an_upcast() {
    let plain = reserve_json(&["sdxl", "decode", "1024x1024", "--dtype", "fp32", "--os", "linux"], &[]);
    let cast = reserve_json(
        &["sdxl", "decode", "1024x1024", "--fp32", "true", "--loaded-dtype", "fp16", "--os", "linux"],
        &[],
    );
    // 83 653 863 weights × (4 − 2) bytes: about 160 MiB.
    assert_eq!(cast["weight_growth_bytes"], 167_307_726);
    assert_eq!(cast["bytes"].as_u64().unwrap(), plain["bytes"].as_u64().unwrap() + 167_307_726);
    assert_eq!(cast["loaded_dtype"], "fp16");
}

#[test]
fn extrapolation_is_flagged() {
    let j = reserve_json(&["sdxl", "decode", "3072x3072", "--dtype", "fp16", "--os", "linux"], &[]);
    assert_eq!(j["extrapolated"], true);
    assert!(j["warnings"][0].as_str().unwrap().contains("outside the measured range"));
    let out = on_data_root()
        .args(["reserve", "sdxl", "decode", "256x256", "--dtype", "fp16", "--os", "linux"])
        .output()
        .unwrap();
    assert!(stdout_of(&out).contains("warning: 65536 px lies outside the measured range"));
}

#[test]
fn errors_are_clear() {
    assert!(reserve_err(&["wan21", "decode", "1024x1024", "--dtype", "fp16"]).contains("known: "));
    assert!(reserve_err(&["flux1", "decode", "1024x1024", "--fp32", "true"]).contains("SD nodes' switch"));
    assert!(reserve_err(&["sdxl", "decode", "1024x1024"]).contains("--dtype"));
    assert!(reserve_err(&["sdxl", "decode", "1024x1024", "--fp32", "true", "--dtype", "fp16"]).contains("contradicts"));
    assert!(reserve_err(&["sdxl", "decode", "1024", "--dtype", "fp16"]).contains("WIDTHxHEIGHT"));
    assert!(
        reserve_err(&["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--allocator", "pinned"]).contains("accepted")
    );
    assert!(reserve_err(&["sd3", "decode", "1024x1024", "--dtype", "fp32", "--loaded-dtype", "fp16"])
        .contains("no weight count"));
}

#[test]
fn legacy_gives_the_six_published_values() {
    for (args, mib) in [
        (vec!["sdxl", "decode", "1024x1024", "--dtype", "fp32", "--backend", "miopen"], 14650),
        (vec!["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--backend", "miopen"], 7200),
        (vec!["sdxl", "decode", "1024x1024", "--dtype", "fp32", "--backend", "cudnn"], 9050),
        (vec!["flux1", "decode", "1024x1024", "--dtype", "bf16", "--backend", "cudnn"], 4400),
        (vec!["cogview4", "decode", "1024x1024", "--dtype", "bf16", "--backend", "cudnn"], 4400),
        (vec!["flux1", "decode", "1024x1024", "--dtype", "bf16", "--backend", "miopen"], 7200),
    ] {
        let mut a = args.clone();
        a.extend(["--legacy", "--os", "linux"]);
        let j = reserve_json(&a, &[]);
        assert_eq!(j["rule"], "legacy");
        assert_eq!(j["mib"], mib, "{args:?}");
        assert_eq!(j["bytes"].as_u64().unwrap() % MIB, 0);
    }
}

#[test]
fn embedded_coefficients_work_from_any_folder_and_files_override() {
    let empty = tempfile::tempdir().unwrap();
    let out = vramfit()
        .current_dir(empty.path())
        .args(["--format", "json", "reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(json_of(&out)["coefficients"].as_str().unwrap().starts_with("embedded"));
    // The embedded copy is the repository's shipped file, whatever it holds.
    assert_eq!(vramfit::coefficients::EMBEDDED.as_bytes(), fs::read(repo().join("fits/vae.json")).unwrap());
    // --coefficients names another file, and the answer says so.
    let root = scratch();
    let f = root.path().join("fits/vae.json");
    let text = fs::read_to_string(&f).unwrap().replacen("\"slope\": \"4452.00\"", "\"slope\": \"5000.00\"", 1);
    fs::write(&f, text).unwrap();
    let j = reserve_json(
        &["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "linux", "--coefficients", f.to_str().unwrap()],
        &[],
    );
    assert_eq!(j["slope"], "5000.00");
    assert_eq!(j["coefficients"], f.to_str().unwrap());
}

#[test]
fn human_output_starts_with_the_reservation() {
    let out = on_data_root()
        .args(["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "linux"])
        .output()
        .unwrap();
    let s = stdout_of(&out);
    assert!(s.starts_with("4488 MiB  (4 706 009 088 bytes)\n"), "{s}");
    assert!(s.contains("rule          fitted line"));
    assert!(s.contains("formula       4452.00 B/px × 1 048 576 px + 36 MiB"));
}

/// Queries spread over every shipped line, the unmeasured rule, the legacy
/// floor, casts and batch sizes 1–4.
fn cross_check_queries() -> Vec<serde_json::Value> {
    let shipped: serde_json::Value =
        serde_json::from_slice(&fs::read(data_root().join("fits/vae.json")).unwrap()).unwrap();
    let sizes =
        [(512u64, 512u64), (768, 768), (1024, 1024), (1280, 720), (1536, 1536), (2048, 2048), (3000, 2000), (640, 480)];
    let mut qs = Vec::new();
    let mut i = 0usize;
    let mut push = |qs: &mut Vec<serde_json::Value>,
                    vae: &str,
                    op: &str,
                    tile: u64,
                    backend: &str,
                    alloc: &str,
                    os: &str,
                    dtype: &str,
                    loaded: &str| {
        let (w, h) = sizes[i % sizes.len()];
        let batch = 1 + (i % 4) as u64;
        i += 1;
        qs.push(serde_json::json!({"vae": vae, "op": op, "tile": tile, "width": w, "height": h, "batch": batch,
            "dtype": dtype, "loaded_dtype": loaded, "conv_backend": backend, "allocator": alloc, "os": os}));
    };
    for l in shipped["lines"].as_array().unwrap() {
        let s = |k: &str| l[k].as_str().unwrap().to_string();
        let os = if s("os") == "any" { "linux".to_string() } else { s("os") };
        for _ in 0..8 {
            push(
                &mut qs,
                &s("vae"),
                &s("op"),
                l["tile"].as_u64().unwrap(),
                &s("conv_backend"),
                &s("allocator"),
                &os,
                &s("dtype"),
                &s("dtype"),
            );
        }
        if l["vae"] == "sd" || l["vae"] == "flux1" {
            push(
                &mut qs,
                &s("vae"),
                &s("op"),
                l["tile"].as_u64().unwrap(),
                &s("conv_backend"),
                &s("allocator"),
                &os,
                "fp32",
                "fp16",
            );
        }
    }
    for vae in ["sdxl", "sd15", "flux1", "cogview4", "sd3", "qwen_image"] {
        for (backend, alloc, os) in [
            ("miopen", "native", "linux"),
            ("miopen", "expandable_segments", "windows"),
            ("cudnn", "cudaMallocAsync", "linux"),
            ("xpu", "native", "linux"),
            ("mps", "native", "macos"),
        ] {
            for (op, dtype) in [("decode", "fp16"), ("decode", "bf16"), ("encode", "fp32"), ("decode", "fp32")] {
                push(&mut qs, vae, op, 0, backend, alloc, os, dtype, dtype);
            }
            push(&mut qs, vae, "decode", 512, backend, alloc, os, "fp16", "fp16");
        }
    }
    qs
}

#[test]
fn python_reader_agrees_to_the_byte() {
    let queries = cross_check_queries();
    assert!(queries.len() >= 200, "{}", queries.len());
    let mut child = python()
        .arg(repo().join("tests/python/vramfit_reader.py"))
        .arg(data_root().join("fits/vae.json"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 is needed for the cross-check");
    child.stdin.take().unwrap().write_all(serde_json::to_string(&queries).unwrap().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let py: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut rules = std::collections::BTreeSet::new();
    assert_eq!(py.len(), queries.len(), "one answer per query");
    for (q, p) in queries.iter().zip(&py) {
        let s = |k: &str| q[k].as_str().unwrap().to_string();
        let (w, h, b, t) =
            (q["width"].to_string(), q["height"].to_string(), q["batch"].to_string(), q["tile"].to_string());
        let size = format!("{w}x{h}");
        let args = [
            s("vae"),
            s("op"),
            size,
            "--batch".into(),
            b,
            "--tile".into(),
            t,
            "--dtype".into(),
            s("dtype"),
            "--loaded-dtype".into(),
            s("loaded_dtype"),
            "--backend".into(),
            s("conv_backend"),
            "--allocator".into(),
            s("allocator"),
            "--os".into(),
            s("os"),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = reserve_json(&args, &[]);
        assert_eq!(r["bytes"], p["bytes"], "query {q}");
        assert_eq!(r["rule"], p["rule"], "query {q}");
        assert_eq!(r["weight_growth_bytes"], p["weight_growth_bytes"], "query {q}");
        rules.insert(p["rule"].as_str().unwrap().to_string());
    }
    for rule in ["fitted-line", "unmeasured-rule", "legacy-floor"] {
        assert!(rules.contains(rule), "the queries must reach the {rule}: {rules:?}");
    }
}

#[test]
fn inside_a_root_whose_file_differs_the_compiled_in_answer_says_so() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("fits")).unwrap();
    let local = dir.path().join("fits/vae.json");
    let ask = |extra: &[&str]| {
        vramfit()
            .current_dir(dir.path())
            .args(extra)
            .args(["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "linux"])
            .output()
            .unwrap()
    };
    // The same file as compiled in: nothing to say.
    fs::write(&local, vramfit::coefficients::EMBEDDED).unwrap();
    assert_eq!(stderr_of(&ask(&[])), "");
    // A freshly emitted one that differs: the answer warns, and names the way to use it.
    let file: serde_json::Value = serde_json::from_str(vramfit::coefficients::EMBEDDED).unwrap();
    let slope = file["lines"].as_array().unwrap().iter().find(|l| l["vae"] == "sd" && l["op"] == "decode").unwrap()
        ["slope"]
        .as_str()
        .unwrap()
        .to_string();
    let edited =
        vramfit::coefficients::EMBEDDED.replacen(&format!("\"slope\": \"{slope}\""), "\"slope\": \"9999.00\"", 1);
    assert_ne!(edited, vramfit::coefficients::EMBEDDED);
    fs::write(&local, &edited).unwrap();
    let out = ask(&[]);
    assert_eq!(out.status.code(), Some(0));
    let err = stderr_of(&out);
    assert!(err.contains("answered from the compiled-in coefficients") && err.contains("--root ."), "{err}");
    let plan = vramfit()
        .current_dir(dir.path())
        .args(["plan", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--free", "24GiB"])
        .output()
        .unwrap();
    assert!(stderr_of(&plan).contains("--root ."), "plan warns too: {}", stderr_of(&plan));
    // A query the compiled-in copy cannot answer (a model emitted since, say)
    // says in its error that the folder's file differs, and only then.
    let unknown = |dir: &std::path::Path| {
        vramfit()
            .current_dir(dir)
            .args(["reserve", "no-such-vae", "decode", "512x512", "--dtype", "fp16"])
            .output()
            .unwrap()
    };
    let failed = unknown(dir.path());
    assert_eq!(failed.status.code(), Some(2));
    let said = stderr_of(&failed);
    assert!(
        said.contains("compiled-in coefficients") && said.contains("--root .") && said.contains("no-such-vae"),
        "{said}"
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let said = stderr_of(&unknown(elsewhere.path()));
    assert!(said.contains("no-such-vae") && !said.contains("compiled-in"), "{said}");
    // `--root .` prices with the local file, and then there is nothing to warn about.
    let out = ask(&["--root", "."]);
    assert_eq!(stderr_of(&out), "");
    assert_ne!(stdout_of(&out), stdout_of(&ask(&[])));
}

#[test]
fn an_unmeasured_dtype_is_never_priced_below_another_dtype_measured_on_its_platform() {
    // Qwen-Image was measured in fp16 only, FLUX.2 on cuDNN in bf16 only.
    for (model, asked, measured) in
        [("qwen-image", "bf16", "fp16"), ("flux2", "fp16", "bf16"), ("qwen-image", "fp32", "fp16")]
    {
        let other = reserve_json(&[model, "decode", "1024x1024", "--dtype", measured, "--os", "linux"], &[]);
        let j = reserve_json(&[model, "decode", "1024x1024", "--dtype", asked, "--os", "linux"], &[]);
        assert!(j["bytes"].as_u64() >= other["bytes"].as_u64(), "{model} {asked}: {j}");
        if j["rule"] == "unmeasured-rule" {
            assert_eq!(j["priced_by"]["dtype"], measured, "{j}");
            let w = j["warnings"].as_array().unwrap();
            assert!(
                w.iter().any(|w| w
                    .as_str()
                    .unwrap()
                    .contains(&format!("measured in {measured} on this platform, sets the floor"))),
                "{w:?}"
            );
        } else {
            assert_eq!(j["rule"], "legacy-floor", "the legacy estimate is higher still: {j}");
        }
    }
    // Before, the bf16 Qwen-Image decode was the legacy 4400 MiB, below the 5380 MiB measured in fp16.
    let j = reserve_json(&["qwen-image", "decode", "1024x1024", "--dtype", "bf16", "--os", "linux"], &[]);
    assert!(j["mib"].as_u64().unwrap() > 5380, "{j}");
}

/// `--max-tile-for`: the largest tile whose own `reserve` fits, the next
/// one up does not, and no tile fitting is exit 1 with the smallest price.
#[test]
fn max_tile_for_answers_the_inverse_of_reserve() {
    let price = |t: u64| {
        let t = t.to_string();
        let out = on_data_root()
            .args(["--format", "json", "reserve", "sdxl", "decode", "4096x4096", "--dtype", "fp16", "--os", "linux"])
            .args(["--tile", &t])
            .output()
            .unwrap();
        json_of(&out)["bytes"].as_u64().unwrap()
    };
    let budget: u64 = 6 << 30;
    let out = on_data_root()
        .args(["--format", "json", "reserve", "sdxl", "decode", "4096x4096", "--dtype", "fp16", "--os", "linux"])
        .args(["--max-tile-for", "6GiB"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let j = json_of(&out);
    let tile = j["chosen"]["line"]["tile"].as_u64().unwrap();
    assert_eq!(j["chosen"]["bytes"].as_u64().unwrap(), price(tile));
    assert!(price(tile) <= budget && price(tile + 64) > budget, "{tile}");
    assert_eq!(j["next_larger"]["line"]["tile"].as_u64().unwrap(), tile + 64);
    assert_eq!(j["budget_bytes"].as_u64().unwrap(), budget);
    let none = on_data_root()
        .args(["reserve", "sdxl", "decode", "4096x4096", "--dtype", "fp16", "--os", "linux", "--max-tile-for", "1MiB"])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(1));
    let want = format!("even tile 64 reserves {} MiB > budget", price(64).div_ceil(1 << 20));
    assert!(stdout_of(&none).contains(&want), "{}", stdout_of(&none));
    // It is the inverse of a price: --tile and --legacy make no sense with it.
    let both = on_data_root()
        .args(["reserve", "sdxl", "decode", "4096x4096", "--dtype", "fp16", "--tile", "512", "--max-tile-for", "6GiB"])
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2));
}

/// On ROCm the attention phase prices a large decode at least at its
/// scores' bytes and says so; on CUDA there is no such term.
#[test]
fn the_attention_phase_prices_rocm_and_not_cuda() {
    let ask = |backend: &str, size: &str| {
        let out = on_data_root()
            .args(["--format", "json", "reserve", "flux2", "decode", size, "--dtype", "bf16", "--os", "linux"])
            .args(["--backend", backend])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
        json_of(&out)
    };
    let rocm = ask("miopen", "2048x2048");
    assert_eq!(rocm["rule"], "attention-phase");
    let a = &rocm["attention"];
    assert_eq!(a["sequence"], 65536);
    // 11.99 B × 65536²: the scores alone, rounded up.
    let scores = (1199u128 * 65536 * 65536).div_ceil(100) as u64;
    assert_eq!(a["score_bytes"].as_u64().unwrap(), scores);
    assert!(rocm["bytes"].as_u64().unwrap() >= scores);
    assert_eq!(rocm["bytes"], a["phase_bytes"]);
    assert!(a["line_phase_bytes"].as_u64().unwrap() < scores);
    assert_eq!(a["line_rule"], "fitted-line");
    assert!(a["source"].as_str().unwrap().contains("gfx1201"));
    // At 1024² the line is the larger phase.
    let small = ask("miopen", "1024x1024");
    assert_eq!(small["rule"], "fitted-line");
    assert!(small["attention"]["phase_bytes"].as_u64().unwrap() < small["bytes"].as_u64().unwrap());
    // Tiled: S is the tile's, which is what makes tiling pay off.
    let out = on_data_root()
        .args(["--format", "json", "reserve", "flux2", "decode", "2048x2048", "--dtype", "bf16", "--os", "linux"])
        .args(["--backend", "miopen", "--tile", "1024"])
        .output()
        .unwrap();
    assert_eq!(json_of(&out)["attention"]["sequence"], 16384);
    // CUDA: no attention term at any size.
    let cuda = ask("cudnn", "2048x2048");
    assert!(cuda["attention"].is_null());
    assert_ne!(cuda["rule"], "attention-phase");
}

/// On MPS, one attention matrix of 2³¹ elements returns wrong output: the
/// answer warns and `plan` tiles even when the untiled work fits.
#[test]
fn mps_past_two_to_the_31_warns_and_plan_tiles() {
    let out = on_data_root()
        .args(["--format", "json", "reserve", "sdxl", "decode", "1728x1728", "--dtype", "fp16"])
        .args(["--backend", "mps", "--os", "macos"])
        .output()
        .unwrap();
    let j = json_of(&out);
    assert_eq!(j["attention"]["wrong_output"], true, "216² × 216² = 2 176 782 336 ≥ 2³¹");
    assert!(j["warnings"].to_string().contains("silently returns wrong output"), "{}", j["warnings"]);
    let small = json_of(
        &on_data_root()
            .args(["--format", "json", "reserve", "sdxl", "decode", "1712x1712", "--dtype", "fp16"])
            .args(["--backend", "mps", "--os", "macos"])
            .output()
            .unwrap(),
    );
    assert_eq!(small["attention"]["wrong_output"], false, "214² × 214² < 2³¹");
    let plan = json_of(
        &on_data_root()
            .args(["--format", "json", "plan", "sdxl", "decode", "1728x1728", "--dtype", "fp16"])
            .args(["--backend", "mps", "--os", "macos", "--free", "128GiB"])
            .output()
            .unwrap(),
    );
    assert_eq!(plan["verdict"], "tiled", "{plan}");
    assert!(plan["reasons"][0].as_str().unwrap().contains("wrong output"), "{}", plan["reasons"]);
}

/// An answer says which measured devices the line that priced it rests on:
/// exactly the devices of that line's points, and an edit of a shipped
/// line's `devices` is a `verify` finding.
#[test]
fn an_answer_names_the_devices_its_line_was_measured_on() {
    let out = on_data_root()
        .args(["--format", "json", "reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let answer = json_of(&out);
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data_root().join("fits/vae.json")).unwrap()).unwrap();
    let line = file["lines"].as_array().unwrap().iter().find(|l| key_of(l) == key_of(&answer["priced_by"])).unwrap();
    let store: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data_root().join("measurements/vae.json")).unwrap()).unwrap();
    let ids: Vec<&str> = line["point_ids"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
    let mut devices: Vec<String> = store["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| ids.contains(&p["id"].as_str().unwrap()))
        .filter_map(|p| p["device"].as_str().map(str::to_string))
        .collect();
    devices.sort();
    devices.dedup();
    assert!(!devices.is_empty());
    assert_eq!(answer["measured_on"], serde_json::json!(devices));
    let human = on_data_root().args(["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16"]).output().unwrap();
    assert!(stdout_of(&human).contains(&format!("measured on   {}", devices.join("; "))), "{}", stdout_of(&human));
    // A hand edit of the devices is caught.
    let root = scratch();
    let f = root.path().join("fits/vae.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
    v["lines"][0]["devices"] = serde_json::json!(["NVIDIA GeForce RTX 5090"]);
    std::fs::write(&f, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let out = vramfit().arg("--root").arg(root.path()).args(["--format", "json", "verify"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout_of(&out).contains("devices"), "{}", stdout_of(&out));
}

/// Which families take the SD nodes' `--fp32` switch is data (the
/// registry's `fp32_switch`), not a family name in the code.
#[test]
fn the_fp32_switch_follows_the_registry() {
    let root = scratch();
    let policy = root.path().join("fits/policy.toml");
    let text = std::fs::read_to_string(&policy).unwrap();
    assert!(text.contains("fp32_switch = true"));
    let moved = text.replace("fp32_switch = true\n", "").replace("[vae.flux1]\n", "[vae.flux1]\nfp32_switch = true\n");
    std::fs::write(&policy, moved).unwrap();
    vramfit().arg("--root").arg(root.path()).args(["emit", "--force"]).output().unwrap();
    let run = |model: &str| {
        vramfit()
            .arg("--root")
            .arg(root.path())
            .args(["reserve", model, "decode", "1024x1024", "--fp32", "true", "--os", "linux"])
            .output()
            .unwrap()
    };
    let sd = run("sdxl");
    assert_eq!(sd.status.code(), Some(2));
    assert!(stderr_of(&sd).contains("for family 'sd' give --dtype"), "{}", stderr_of(&sd));
    let flux = run("flux1");
    assert!(flux.status.success(), "{}", stderr_of(&flux));
    assert!(stdout_of(&flux).contains("fp32 (fp32 = true (SD node rule))"), "{}", stdout_of(&flux));
}
