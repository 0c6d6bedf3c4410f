//! The traced rule end to end (docs/traced.md): a family nobody measured is
//! priced from its own trace by its class's calibration; `family add`
//! registers one from its traces alone; `verify` proves every traced byte
//! of the shipped file.

use crate::common::{json_of, snapshot, vramfit};
use serde_json::Value;
use std::fs;
use std::path::Path;

const HEAD: &str =
    "family,vae,op,dtype,tile,temporal_tile,width,height,frames,batch,traced_bytes,config_source,facts\n";
const SIDES: [u64; 3] = [512, 1024, 2048];

/// Traced rows of `family`: `per_pixel` bytes a pixel plus `fixed`, at three sizes.
fn traces(family: &str, per_pixel: u64, fixed: u64, facts: &str) -> String {
    let mut t = HEAD.to_string();
    for side in SIDES {
        let bytes = per_pixel * side * side + fixed;
        t.push_str(&format!(
            "{family},{family},decode,fp16,0,0,{side},{side},1,1,{bytes},\"a config, here\",{facts}\n"
        ));
    }
    t
}

/// An empty root with `policy` and a `measurements/traced/` folder.
fn root_with(policy: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("fits")).unwrap();
    fs::create_dir_all(dir.path().join("measurements/traced")).unwrap();
    fs::write(dir.path().join("fits/policy.toml"), policy).unwrap();
    dir
}

/// `points.csv` of `root` ingested, then emitted.
fn ingest_and_emit(root: &Path) {
    vramfit().arg("--root").arg(root).arg("ingest").arg(root.join("points.csv")).assert().code(0);
    vramfit().arg("--root").arg(root).arg("emit").assert().code(0);
}

/// A root of two measured kl-2d families (SD at 2× its trace, FLUX.1 at 3×)
/// and a traced margin of 0.5 (which their bands need), emitted.
fn measured_root() -> tempfile::TempDir {
    let dir = root_with(
        "[vae.sd]\nclass = \"kl-2d\"\nmodels = [\"sdxl\"]\n\n[vae.flux1]\nclass = \"kl-2d\"\n\n\
         [traced]\nmargin = \"0.5\"\nreason = \"a test\"\n",
    );
    let root = dir.path();
    let mut csv =
        String::from("id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_bytes\n");
    for (family, per_pixel, times) in [("sd", 1000u64, 2u64), ("flux1", 2000, 3)] {
        fs::write(
            root.join(format!("measurements/traced/{family}.csv")),
            traces(family, per_pixel, 0, "class=kl-2d;spatial=8"),
        )
        .unwrap();
        for side in SIDES {
            csv.push_str(&format!(
                "{family}-{side},test,cudnn,native,linux,{family},decode,0,fp16,{side},{side},1,{}\n",
                times * per_pixel * side * side
            ));
        }
    }
    fs::write(root.join("points.csv"), csv).unwrap();
    ingest_and_emit(root);
    dir
}

fn reserve(root: &Path, family: &str, side: u64, backend: &str) -> Value {
    let out = vramfit()
        .arg("--root")
        .arg(root)
        .args(["--format", "json", "reserve", family, "decode", &format!("{side}x{side}")])
        .args(["--dtype", "fp16", "--backend", backend, "--allocator", "native", "--os", "linux"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    json_of(&out)
}

/// `ceil(slope_centi × traced / 100) + base_mib × 2^20`, from an answer's own terms.
fn calibrated(t: &Value) -> u64 {
    let slope: f64 = t["slope"].as_str().unwrap().parse().unwrap();
    let centi = (slope * 100.0).round() as u128;
    let traced = u128::from(t["traced_bytes"].as_u64().unwrap());
    let per = (centi * traced).div_ceil(100);
    u64::try_from(per).unwrap() + t["base_mib"].as_u64().unwrap() * 1_048_576
}

fn add(root: &Path, name: &str, file: &Path) -> std::process::Output {
    vramfit().arg("--root").arg(root).args(["family", "add", name, "--traces"]).arg(file).output().unwrap()
}

#[test]
fn two_configs_added_from_their_traces_price_in_their_traces_ratio() {
    let dir = measured_root();
    let root = dir.path();
    // Two AutoencoderKL-style configs: the wide one's trace is twice the
    // narrow one's at every size.
    let made = tempfile::tempdir().unwrap();
    let facts = "class=kl-2d;latent_channels=4;spatial=8;params=1000;attention=1x256";
    for (name, per_pixel) in [("narrow", 700u64), ("wide", 1400)] {
        let file = made.path().join(format!("{name}.csv"));
        fs::write(&file, traces(name, per_pixel, 0, facts)).unwrap();
        let out = add(root, name, &file);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(root.join(format!("measurements/traced/{name}.csv")).exists());
    }
    let policy: toml::Table = fs::read_to_string(root.join("fits/policy.toml")).unwrap().parse().unwrap();
    let wide = &policy["vae"]["wide"];
    assert_eq!((wide["class"].as_str(), wide["params"].as_integer()), (Some("kl-2d"), Some(1000)), "{wide}");
    assert_eq!(wide["models"].as_array().map(Vec::len), Some(0), "{wide}");
    for side in [768u64, 1024, 1536] {
        let (n, w) = (reserve(root, "narrow", side, "cudnn"), reserve(root, "wide", side, "cudnn"));
        for a in [&n, &w] {
            assert_eq!(a["rule"], "traced", "{a}");
            assert_eq!(a["traced"]["calibration"], "kl-2d/decode/0/cudnn/native/any/fp16");
            assert_eq!(a["traced"]["families"], serde_json::json!(["flux1", "sd"]));
            assert_eq!(a["bytes"].as_u64().unwrap(), calibrated(&a["traced"]), "{a}");
        }
        let (tn, tw) = (n["traced"]["traced_bytes"].as_u64().unwrap(), w["traced"]["traced_bytes"].as_u64().unwrap());
        assert_eq!((tn, tw), (700 * side * side, 1400 * side * side));
        // The calibration is FLUX.1's 3× (× 1.5) with no base: the prices' ratio is the traces'.
        assert_eq!(n["traced"]["base_mib"], 0);
        assert_eq!(w["bytes"].as_u64().unwrap(), 2 * n["bytes"].as_u64().unwrap());
    }
    // The answer says where it came from.
    let text = vramfit()
        .arg("--root")
        .arg(root)
        .args(["reserve", "wide", "decode", "1024x1024", "--dtype", "fp16", "--backend", "cudnn"])
        .output()
        .unwrap();
    let words = String::from_utf8_lossy(&text.stdout);
    assert!(words.contains("traced rule") && words.contains("class kl-2d's calibration on flux1, sd"), "{words}");
    assert!(words.contains("nothing has been measured for the wide VAE"), "{words}");
    // verify proves the new traced lines from the traces, the points and the policy.
    vramfit().arg("--root").arg(root).arg("verify").assert().code(0);
}

#[test]
fn a_traced_price_never_undercuts_a_measured_line_and_an_uncalibrated_class_borrows_one() {
    let dir = measured_root();
    let root = dir.path();
    // A measured family's own platform: its line, the trace not consulted.
    let own = reserve(root, "sd", 1024, "cudnn");
    assert_eq!(own["rule"], "fitted-line");
    assert!(own.get("traced").is_none());
    // On MIOpen nothing is measured: the unmeasured rule offers SD's cuDNN
    // line, and the class's cuDNN calibration (borrowed, the only one in
    // fp16) raises it; the answer is never below that line.
    let rocm = reserve(root, "sd", 1024, "miopen");
    assert!(rocm["bytes"].as_u64().unwrap() >= own["bytes"].as_u64().unwrap(), "{rocm}");
    assert_eq!(rocm["traced"]["calibration"], "kl-2d/decode/0/cudnn/native/any/fp16", "{rocm}");
    // A class nobody measured has no calibration of its own: a causal-3d
    // family with traces alone is priced from its trace under the most
    // cautious calibration there is (kl-2d's here), and the answer says so
    // (docs/traced.md, "A class nobody measured").
    let made = tempfile::tempdir().unwrap();
    let file = made.path().join("c3.csv");
    fs::write(&file, traces("c3", 500, 0, "class=causal-3d;spatial=8")).unwrap();
    let out = add(root, "c3", &file);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let c3 = reserve(root, "c3", 1024, "cudnn");
    assert_eq!(c3["rule"], "traced", "{c3}");
    assert!(c3["traced"]["calibration"].as_str().unwrap().starts_with("kl-2d/"), "{c3}");
    let warned = c3["warnings"].to_string();
    assert!(warned.contains("no family of c3's class, causal-3d, has been measured"), "{warned}");
}

#[test]
fn verify_proves_every_traced_byte() {
    let dir = measured_root();
    let root = dir.path();
    let path = root.join("fits/vae.json");
    let shipped: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(shipped["traced"]["calibrations"][0]["families"], serde_json::json!(["flux1", "sd"]));
    for (field, value) in [
        ("/traced/calibrations/0/slope", Value::from("9.99")),
        ("/traced/calibrations/0/base_mib", Value::from(7)),
        ("/traced/shapes/0/slope", Value::from("1/1")),
        ("/traced/margin", Value::from("0.75")),
    ] {
        let mut tampered = shipped.clone();
        *tampered.pointer_mut(field).unwrap() = value;
        fs::write(&path, serde_json::to_vec_pretty(&tampered).unwrap()).unwrap();
        let out = vramfit().arg("--root").arg(root).args(["--format", "json", "verify"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{field}: {}", String::from_utf8_lossy(&out.stdout));
        let j = json_of(&out);
        let paths: Vec<String> =
            j["findings"].as_array().unwrap().iter().filter_map(|f| f["path"].as_str().map(String::from)).collect();
        assert!(paths.iter().any(|p| p.starts_with("traced")), "{field}: {paths:?}");
    }
    // A traced row changed under the shipped file is caught too (its digest and its shape).
    fs::write(&path, serde_json::to_vec_pretty(&shipped).unwrap()).unwrap();
    vramfit().arg("--root").arg(root).arg("verify").assert().code(0);
    let csv = root.join("measurements/traced/sd.csv");
    let text = fs::read_to_string(&csv).unwrap().replace(",262144000,", ",262144001,");
    fs::write(&csv, text).unwrap();
    vramfit().arg("--root").arg(root).arg("verify").assert().code(1);
}

#[test]
fn a_refused_family_add_writes_nothing() {
    let dir = measured_root();
    let root = dir.path();
    let made = tempfile::tempdir().unwrap();
    let before = snapshot(root);
    let cases: Vec<(&str, String, &str)> = vec![
        ("sd", traces("sd", 1, 0, "class=kl-2d;spatial=8"), "registered already"),
        ("sdxl", traces("sdxl", 1, 0, "class=kl-2d;spatial=8"), "a model name of family 'sd'"),
        ("mine", traces("other", 1, 0, "class=kl-2d;spatial=8"), "vae: the row prices 'other', not 'mine'"),
        ("mine", traces("mine", 1, 0, "class=kl-3d;spatial=8"), "facts: class: 'kl-3d'"),
        ("mine", traces("mine", 1, 0, "").replace(",facts\n", "\n").replace(",\n", "\n"), "no 'facts' column"),
        ("bad name", traces("bad name", 1, 0, "class=kl-2d;spatial=8"), "letters, digits"),
    ];
    for (name, text, words) in cases {
        let file = made.path().join("t.csv");
        fs::write(&file, text).unwrap();
        let out = add(root, name, &file);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(words), "{name}: {err}");
        assert_eq!(snapshot(root), before, "{name}: a refused add wrote something");
    }
}

/// Every answer on CUDA for a registered family: its rule, and whether the
/// traced rule was consulted (its terms shown).
fn shipped_answer(args: &[&str]) -> Value {
    let out = vramfit()
        .arg("--root")
        .arg(crate::common::repo())
        .args(["--format", "json", "reserve"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    json_of(&out)
}

#[test]
fn no_image_family_answers_by_the_legacy_floor_alone_on_cuda() {
    let file: Value = serde_json::from_slice(&fs::read(crate::common::repo().join("fits/vae.json")).unwrap()).unwrap();
    let registry = file["registry"].as_object().unwrap();
    let mut asked = 0;
    for (family, entry) in registry.iter().filter(|(_, e)| e.get("video").is_none()) {
        for op in ["decode", "encode"] {
            for dtype in ["fp16", "bf16", "fp32"] {
                for allocator in ["native", "cudaMallocAsync", "expandable_segments"] {
                    let a = shipped_answer(&[
                        family,
                        op,
                        "1024x1024",
                        "--dtype",
                        dtype,
                        "--backend",
                        "cudnn",
                        "--allocator",
                        allocator,
                        "--os",
                        "linux",
                    ]);
                    asked += 1;
                    let rule = a["rule"].as_str().unwrap();
                    assert!(
                        rule != "legacy-floor" || a.get("traced").is_some(),
                        "{family} {op} {dtype} {allocator}: {a}"
                    );
                    if entry.get("class").is_some() && rule != "fitted-line" && rule != "carried-line" {
                        assert!(
                            a.get("traced").is_some(),
                            "{family} {op} {dtype} {allocator}: no trace consulted: {a}"
                        );
                    }
                }
            }
        }
    }
    assert!(asked >= 6 * 18, "{asked}");
}

#[test]
fn every_video_family_answers_from_a_line_or_its_trace() {
    let file: Value = serde_json::from_slice(&fs::read(crate::common::repo().join("fits/vae.json")).unwrap()).unwrap();
    let registry = file["registry"].as_object().unwrap();
    let videos: Vec<&String> = registry.iter().filter(|(_, e)| e.get("video").is_some()).map(|(f, _)| f).collect();
    assert!(videos.len() >= 6, "{videos:?}");
    for family in videos {
        // The temporal tile its traced decode walks (a causal walk names none).
        let shape = file["traced"]["shapes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| {
                s["vae"] == family.as_str()
                    && s["op"] == "decode"
                    && s["dtype"] == "bf16"
                    && s.get("one_frame").is_none()
            })
            .unwrap_or_else(|| panic!("{family}: no traced decode"));
        let tt = shape["temporal_tile"].as_u64().unwrap().to_string();
        let walk = registry[family]["video"]["walk"].as_str().unwrap();
        let frames = crate::common::clip_at_least(&registry[family]["video"], "decode", 49).to_string();
        let mut args =
            vec![family.as_str(), "decode", "832x480", "--frames", frames.as_str(), "--dtype", "bf16", "--os", "linux"];
        if walk != "causal" {
            args.extend(["--temporal-tile", tt.as_str()]);
        }
        let a = shipped_answer(&args);
        let rule = a["rule"].as_str().unwrap();
        let measured = matches!(rule, "fitted-line" | "carried-line");
        assert!(measured || a.get("traced").is_some(), "{family}: {a}");
        if rule == "traced" {
            // The clip term rides on the calibrated trace.
            let clip = a["video"]["clip_bytes"].as_u64().unwrap();
            assert_eq!(a["op_bytes"].as_u64().unwrap(), a["traced"]["bytes"].as_u64().unwrap() + clip, "{family}: {a}");
        }
    }
}

/// A root where SD's decode line (measured 512²–1024², a 2 GiB base)
/// grows more slowly than its trace (1500 B/px, no base), and its encode
/// line (no base) faster than its trace (a 3 GiB traced base), emitted.
fn past_range_root() -> tempfile::TempDir {
    let dir = root_with("[vae.sd]\nclass = \"kl-2d\"\n\n[traced]\nmargin = \"0.5\"\nreason = \"a test\"\n");
    let root = dir.path();
    let mut csv =
        String::from("id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_bytes\n");
    let mut t = HEAD.to_string();
    for (op, per_pixel, base, traced_per_pixel, traced_base) in
        [("decode", 1000u64, 2u64 << 30, 1500u64, 0u64), ("encode", 2000, 0, 1000, 3 << 30)]
    {
        for side in [512u64, 1024, 2048, 4096] {
            let bytes = traced_per_pixel * side * side + traced_base;
            t.push_str(&format!("sd,sd,{op},fp16,0,0,{side},{side},1,1,{bytes},\"a config\",class=kl-2d;spatial=8\n"));
        }
        for side in [512u64, 768, 1024] {
            let demand = per_pixel * side * side + base;
            csv.push_str(&format!("sd-{op}-{side},test,cudnn,native,linux,sd,{op},0,fp16,{side},{side},1,{demand}\n"));
        }
    }
    fs::write(root.join("measurements/traced/sd.csv"), t).unwrap();
    fs::write(root.join("points.csv"), csv).unwrap();
    ingest_and_emit(root);
    dir
}

fn reserve_op(root: &Path, op: &str, side: u64) -> Value {
    let out = vramfit()
        .arg("--root")
        .arg(root)
        .args(["--format", "json", "reserve", "sd", op, &format!("{side}x{side}")])
        .args(["--dtype", "fp16", "--backend", "cudnn", "--allocator", "native", "--os", "linux"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    json_of(&out)
}

/// The line's formula at `px`, from an answer's own slope and base.
fn formula(a: &Value, px: u64) -> u64 {
    let slope = a["slope"].as_str().unwrap().replace('.', "");
    let centi: u128 = slope.parse().unwrap();
    u64::try_from((centi * u128::from(px)).div_ceil(100)).unwrap() + a["base_mib"].as_u64().unwrap() * 1_048_576
}

#[test]
fn a_line_past_its_measured_range_follows_a_trace_that_grows_faster() {
    let dir = past_range_root();
    let root = dir.path();
    let end = 1024 * 1024;
    // Inside the measured range: the formula, whatever the trace does.
    for op in ["decode", "encode"] {
        let a = reserve_op(root, op, 1024);
        assert_eq!(a["rule"], "fitted-line", "{a}");
        assert_eq!(a["bytes"].as_u64().unwrap(), formula(&a, end), "{op}");
        assert!(a.get("follows_trace").is_none(), "{a}");
    }
    // Past it, the decode's trace grows 4× from 1024² to 2048² (no traced
    // base), faster than a line with a 2 GiB base: the line's price at its
    // end, 4×.
    let a = reserve_op(root, "decode", 2048);
    let at_end = formula(&a, end);
    assert_eq!(a["bytes"].as_u64().unwrap(), 4 * at_end, "{a}");
    assert!(a["bytes"].as_u64().unwrap() > formula(&a, 4 * end), "the trace must set it here: {a}");
    let f = &a["follows_trace"];
    assert_eq!(f["measured_to"], end);
    assert_eq!(f["line_bytes_at_end"], at_end);
    assert_eq!(f["traced_at_end"], 1500 * end);
    assert_eq!(f["traced_at"], 1500 * 4 * end);
    assert_eq!(f["shape"], "sd/decode/0/fp16");
    assert!(a["warnings"].to_string().contains("grows faster than the line"), "{a}");
    // A trace that grows more slowly than the line leaves the formula.
    let b = reserve_op(root, "encode", 2048);
    assert_eq!(b["bytes"].as_u64().unwrap(), formula(&b, 4 * end), "{b}");
    assert!(b.get("follows_trace").is_none(), "{b}");
    // Monotone past the end: every larger size prices at least as high.
    let mut last = 0;
    for side in [1024u64, 1100, 1536, 2048, 3000, 4096] {
        let bytes = reserve_op(root, "decode", side)["bytes"].as_u64().unwrap();
        assert!(bytes >= last, "{side}: {bytes} < {last}");
        last = bytes;
    }
    // verify restates the followed price from the file and passes; the
    // Python package answers the same, field for field.
    vramfit().arg("--root").arg(root).arg("verify").assert().code(0);
    let file = root.join("fits/vae.json").display().to_string();
    let asked = [("decode", 2048u64), ("decode", 3000), ("encode", 2048), ("decode", 1024)];
    let queries: Vec<Value> = asked
        .iter()
        .map(|(op, side)| {
            serde_json::json!({
                "model": "sd", "op": op, "width": side, "height": side, "coefficients": file, "env": {},
                "kw": {"dtype": "fp16", "backend": "cudnn", "allocator": "native", "os": "linux"},
            })
        })
        .collect();
    let answers = crate::python_package::python_answers(&Value::Array(queries));
    for ((op, side), py) in asked.iter().zip(answers) {
        let mut cli = reserve_op(root, op, *side);
        let mut py = py["ok"].clone();
        py.as_object_mut().unwrap().remove("coefficients");
        cli.as_object_mut().unwrap().remove("coefficients");
        assert_eq!(cli, py, "{op} {side}");
    }
}

/// A family of a class no family of which is measured (`dc-ae`, `tiny`,
/// `wavelet`) is priced by the traced rule under the most cautious
/// calibration of another class (here the only one, kl-2d, with FLUX.1's 3×
/// setting it), with a warning naming its class; `crossval --by family`
/// lists it as not validated. Its own class's calibration, once measured,
/// takes over.
#[test]
fn a_family_of_a_class_nobody_measured_borrows_the_most_cautious_calibration_and_says_so() {
    let dir = measured_root();
    let root = dir.path();
    for (family, class) in [("dcae", "dc-ae"), ("tinyae", "tiny"), ("wavelets", "wavelet")] {
        let file = root.join(format!("{family}.csv"));
        fs::write(&file, traces(family, 500, 0, &format!("class={class};spatial=32"))).unwrap();
        let out = add(root, family, &file);
        assert_eq!(out.status.code(), Some(0), "{family}: {}", String::from_utf8_lossy(&out.stderr));
        let policy = fs::read_to_string(root.join("fits/policy.toml")).unwrap();
        assert!(policy.contains(&format!("[vae.{family}]\nclass = \"{class}\"")), "{policy}");
        let a = reserve(root, family, 1024, "cudnn");
        assert_eq!(a["rule"], "traced", "{family}");
        let t = &a["traced"];
        assert!(t["calibration"].as_str().unwrap().starts_with("kl-2d/decode/0/cudnn"), "{family}: {t}");
        assert_eq!(a["op_bytes"].as_u64(), Some(calibrated(t)), "{family}");
        let warned: Vec<&str> = a["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
        let says = format!("no family of {family}'s class, {class}, has been measured");
        assert!(warned.iter().any(|w| w.contains(&says)), "{warned:?}");
        // Its own class has no calibration: the most cautious of the others priced it, never nothing.
        let cv = vramfit().arg("--root").arg(root).args(["crossval", "--by", "family"]).output().unwrap();
        let said = String::from_utf8_lossy(&cv.stdout);
        let listed = format!("not validated: {family}: no family of class {class} is measured");
        assert!(said.contains(&listed), "{said}");
    }
    // A family of a calibrated class gets no such warning.
    let sd = reserve(root, "sd", 1024, "cudnn");
    assert!(sd["warnings"].as_array().unwrap().iter().all(|w| !w.as_str().unwrap().contains("has been measured")));
}

/// A root where SD is measured at three sizes on cuDNN (2× its trace) and
/// on MIOpen (3×), and the causal-3d family `c3` once on MIOpen at 1024²
/// with a demand of `demand(trace)`; `c4`, causal-3d too, is traced only.
fn few_sizes_root(demand: impl Fn(u64) -> u64) -> tempfile::TempDir {
    let dir = root_with(
        "[vae.sd]\nclass = \"kl-2d\"\n\n[vae.c3]\nclass = \"causal-3d\"\n\n[vae.c4]\nclass = \"causal-3d\"\n\n\
         [traced]\nmargin = \"0.5\"\nreason = \"a test\"\n",
    );
    let root = dir.path();
    let mut csv =
        String::from("id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_bytes\n");
    for (family, per_pixel) in [("sd", 1000u64), ("c3", 500), ("c4", 700)] {
        let t = traces(
            family,
            per_pixel,
            0,
            &format!("class={};spatial=8", if family == "sd" { "kl-2d" } else { "causal-3d" }),
        );
        fs::write(root.join(format!("measurements/traced/{family}.csv")), t).unwrap();
    }
    for (backend, times) in [("cudnn", 2u64), ("miopen", 3)] {
        for side in SIDES {
            let demand = times * 1000 * side * side;
            csv.push_str(&format!(
                "sd-{backend}-{side},test,{backend},native,linux,sd,decode,0,fp16,{side},{side},1,{demand}\n"
            ));
        }
    }
    let c3 = demand(500 * 1024 * 1024);
    csv.push_str(&format!("c3-once,test,miopen,native,linux,c3,decode,0,fp16,1024,1024,1,{c3}\n"));
    fs::write(root.join("points.csv"), csv).unwrap();
    ingest_and_emit(root);
    dir
}

fn calibration_of(root: &Path, id: &str) -> Value {
    let file: Value = serde_json::from_slice(&fs::read(root.join("fits/vae.json")).unwrap()).unwrap();
    let found = file["traced"]["calibrations"].as_array().unwrap().iter().find(|c| {
        let key = ["class", "op", "tile", "conv_backend", "allocator", "os", "dtype"].map(|f| match &c[f] {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        });
        key.join("/") == id
    });
    found.unwrap_or_else(|| panic!("no calibration {id}")).clone()
}

#[test]
fn a_calibration_on_one_size_takes_the_nearest_slope_and_lifts_its_base() {
    const MIB: u64 = 1 << 20;
    // c3's one MIOpen decode is its trace plus 2 GiB of workspace: read
    // through the origin (the mistake), that is 5.1× its trace, and every
    // larger causal-3d trace on MIOpen would be multiplied by it.
    let workspace = 2048 * MIB;
    let dir = few_sizes_root(|t| t + workspace);
    let root = dir.path();
    let t = 500 * 1024 * 1024;
    let c = calibration_of(root, "causal-3d/decode/0/miopen/native/any/fp16");
    assert_eq!((c["points"].as_u64(), c["sizes"].as_u64()), (Some(1), Some(1)), "{c}");
    // The nearest fitted calibration on its platform: SD's MIOpen line, 3 × 1.5.
    assert_eq!(c["slope_from"], "kl-2d/decode/0/miopen/native/any/fp16", "{c}");
    assert_eq!(c["slope"], "4.50", "{c}");
    // The least whole MiB covering the point with the margin.
    let need = (3 * (t + workspace)).div_ceil(2);
    let base = (need - 450 * t / 100).div_ceil(MIB);
    assert_eq!(c["base_mib"].as_u64(), Some(base), "{c}");
    assert_eq!(c["support"], serde_json::json!(["c3-once"]));
    // c3 itself, priced by the traced rule, covers its point with the margin.
    let own = reserve(root, "c3", 1024, "miopen");
    assert_eq!(own["traced"]["calibration"], "causal-3d/decode/0/miopen/native/any/fp16", "{own}");
    assert!(own["traced"]["bytes"].as_u64().unwrap() >= need, "{own}");
    assert_eq!(own["traced"]["slope_from"], "kl-2d/decode/0/miopen/native/any/fp16", "{own}");
    // c4 at 2048² pays the borrowed slope on its trace plus the base, under
    // two thirds of what the through-origin ratio would charge it.
    let c4 = reserve(root, "c4", 2048, "miopen");
    let t4 = 700 * 2048 * 2048;
    assert_eq!(c4["traced"]["traced_bytes"].as_u64(), Some(t4), "{c4}");
    assert_eq!(c4["traced"]["bytes"].as_u64(), Some((450 * t4).div_ceil(100) + base * MIB), "{c4}");
    let through_origin = u128::from(t4) * u128::from(need) / u128::from(t);
    assert!(u128::from(c4["traced"]["bytes"].as_u64().unwrap()) * 3 < through_origin * 2, "{c4}");
    // The table says where the slope came from.
    let out = vramfit()
        .arg("--root")
        .arg(root)
        .args(["reserve", "c4", "decode", "2048x2048", "--dtype", "fp16", "--backend", "miopen", "--os", "linux"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("kl-2d/decode/0/miopen/native/any/fp16's slope, the base lifted to cover them"), "{table}");
    // verify holds the borrowed slope and its source to the points.
    let path = root.join("fits/vae.json");
    let shipped: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let i =
        shipped["traced"]["calibrations"].as_array().unwrap().iter().position(|x| x["class"] == "causal-3d").unwrap();
    for (field, value) in [("slope_from", Value::Null), ("sizes", Value::from(3)), ("base_mib", Value::from(base - 1))]
    {
        let mut tampered = shipped.clone();
        tampered["traced"]["calibrations"][i][field] = value;
        fs::write(&path, serde_json::to_vec_pretty(&tampered).unwrap()).unwrap();
        let out = vramfit().arg("--root").arg(root).arg("verify").output().unwrap();
        assert_ne!(out.status.code(), Some(0), "{field}: {}", String::from_utf8_lossy(&out.stdout));
    }
}

#[test]
fn a_calibration_on_one_size_keeps_its_own_slope_where_the_nearest_is_steeper() {
    // c3's point at 1× its trace: SD's MIOpen slope (4.50) would price it
    // 3× over, so its own envelope stands (1.50 through the origin).
    let dir = few_sizes_root(|t| t);
    let c = calibration_of(dir.path(), "causal-3d/decode/0/miopen/native/any/fp16");
    assert_eq!((c["slope"].as_str(), c["base_mib"].as_u64()), (Some("1.50"), Some(0)), "{c}");
    assert!(c.get("slope_from").is_none(), "{c}");
    // Three sizes fit their own envelope whatever the neighbours: SD's.
    let sd = calibration_of(dir.path(), "kl-2d/decode/0/miopen/native/any/fp16");
    assert_eq!((sd["slope"].as_str(), sd["sizes"].as_u64()), (Some("4.50"), Some(3)), "{sd}");
    assert!(sd.get("slope_from").is_none(), "{sd}");
}

/// Traced rows of a causal video family `v`: clips (17 and 49 frames at
/// 832×480 and 1280×720) at `clip` bytes a frame pixel, and, where
/// `one_frame`, one-frame rows at 512², 1024² and 2048² with a large fixed
/// term, as a one-frame run's steps have.
fn video_traces(one_frame: bool) -> String {
    let facts = "class=causal-3d;spatial=8;temporal=4;walk=causal;walk_frames=4;tile=0";
    let mut t = HEAD.to_string();
    for (w, h) in [(832u64, 480u64), (1280, 720)] {
        for f in [17u64, 49] {
            let bytes = 600 * w * h * f;
            t.push_str(&format!("v,v,decode,fp16,0,0,{w},{h},{f},1,{bytes},\"a config\",{facts}\n"));
        }
    }
    if one_frame {
        for side in SIDES {
            let bytes = 3000 * side * side + 900_000_000;
            t.push_str(&format!("v,v,decode,fp16,0,0,{side},{side},1,1,{bytes},\"a config\",{facts}\n"));
        }
    }
    t
}

#[test]
fn one_frame_of_a_video_family_is_its_own_shape_and_leaves_the_clips_alone() {
    let answers: Vec<(Value, Value)> = [false, true]
        .into_iter()
        .map(|one_frame| {
            let dir = measured_root();
            let root = dir.path();
            let file = root.join("v.csv");
            fs::write(&file, video_traces(one_frame)).unwrap();
            let out = add(root, "v", &file);
            assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
            let ask = |frames: &str| {
                let out = vramfit()
                    .arg("--root")
                    .arg(root)
                    .args(["--format", "json", "reserve", "v", "decode", "1024x1024", "--frames", frames])
                    .args(["--dtype", "fp16", "--os", "linux"])
                    .output()
                    .unwrap();
                assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
                json_of(&out)
            };
            (ask("1"), ask("17"))
        })
        .collect();
    let [(frame_before, clip_before), (frame, clip)] = [answers[0].clone(), answers[1].clone()];
    // A clip is priced as it was: the one-frame rows do not tilt its shape.
    assert_eq!(clip["traced"], clip_before["traced"], "{clip}");
    assert_eq!(clip["bytes"], clip_before["bytes"]);
    // One frame reads its own shape, exactly its row at a traced size.
    let t = &frame["traced"];
    assert_eq!(t["shape"], "v/decode/one-frame/fp16", "{t}");
    assert_eq!(t["traced_bytes"].as_u64(), Some(3000 * 1024 * 1024 + 900_000_000), "{t}");
    assert_eq!(t["extrapolated"], false, "{t}");
    // Without it, one frame was the clips' line extrapolated to one frame.
    let before = &frame_before["traced"];
    assert!(before["shape"].as_str().unwrap().ends_with("/0f/fp16"), "{before}");
    assert_eq!(before["extrapolated"], true, "{before}");
    assert_ne!(before["traced_bytes"], t["traced_bytes"], "{before}");
}

#[test]
fn leaving_a_family_out_calibrates_the_rest_as_emit_would() {
    const MIB: u64 = 1 << 20;
    // c3 once on MIOpen (its trace plus 2 GiB, 5.1× it) and c4 at three
    // sizes (4× its trace): held out in turn, each is priced by the
    // other's calibration alone; c3's one point borrows SD's MIOpen slope.
    let dir = few_sizes_root(|t| t + 2048 * MIB);
    let root = dir.path();
    let mut csv =
        String::from("id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_bytes\n");
    for side in SIDES {
        csv.push_str(&format!(
            "c4-{side},test,miopen,native,linux,c4,decode,0,fp16,{side},{side},1,{}\n",
            4 * 700 * side * side
        ));
    }
    fs::write(root.join("c4.csv"), csv).unwrap();
    let out = vramfit().arg("--root").arg(root).arg("ingest").arg(root.join("c4.csv")).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    vramfit().arg("--root").arg(root).arg("emit").assert().code(0);
    let out =
        vramfit().arg("--root").arg(root).args(["--format", "json", "crossval", "--by", "family"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let j = json_of(&out);
    let line = |vae: &str| {
        j["lines"].as_array().unwrap().iter().find(|l| l["vae"] == vae && l["conv_backend"] == "miopen").cloned()
    };
    let c4 = line("c4").unwrap_or_else(|| panic!("c4 not held out: {j}"));
    let t = 500 * 1024 * 1024;
    let base = ((3 * (t + 2048 * MIB)).div_ceil(2) - 450 * t / 100).div_ceil(MIB);
    for p in c4["points"].as_array().unwrap() {
        let side: u64 = p["id"].as_str().unwrap().trim_start_matches("c4-").parse().unwrap();
        let want = (450 * 700 * side * side).div_ceil(100) + base * MIB;
        assert_eq!(p["reserve_bytes"].as_u64(), Some(want), "{p}");
    }
    // c3 held out: c4's own three sizes, fitted (4 × 1.5 = 6.00, no base).
    let c3 = line("c3").unwrap_or_else(|| panic!("c3 not held out: {j}"));
    let p = &c3["points"][0];
    assert_eq!(p["reserve_bytes"].as_u64(), Some(6 * t), "{p}");
    assert_eq!(p["covered"], true, "{p}");
}

#[test]
fn a_temporal_tile_without_a_shape_reads_the_familys_traced_one_not_the_legacy_floor() {
    // MiniMax-H3 is traced at its own 28-frame chunks (and whole clips up to
    // 28 frames); a run naming 27 is priced from the 28-frame shape at its
    // working set, as a video line of another temporal tile prices it.
    let a = shipped_answer(&[
        "minimax-h3",
        "decode",
        "256x256",
        "--frames",
        "243",
        "--temporal-tile",
        "27",
        "--dtype",
        "fp32",
        "--os",
        "linux",
    ]);
    // (A measured line would price it first; the trace is consulted either way.)
    assert!(!["legacy-floor", "monotone-floor"].contains(&a["rule"].as_str().unwrap()), "{a}");
    let t = &a["traced"];
    assert_eq!(t["shape"], "minimax_h3/decode/28f/fp32", "{t}");
    assert_eq!(t["at"].as_u64(), Some(256 * 256 * 27), "{t}");
}
