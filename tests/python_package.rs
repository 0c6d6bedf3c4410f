//! The Python package (`python/vramfit_vae`, the `vramfit-vae` wheel: the
//! runtime crate compiled by maturin) answers like the CLI: the same JSON,
//! field for field, on thousands of generated queries (every line and every
//! rule, each dtype, batch, tile, allocator setting and OS), and the same
//! refusals. `.ci/run` builds the abi3 wheel once and points
//! `VRAMFIT_PYTHON` at a fresh virtual environment holding it; without it
//! the tests install the package from this checkout under `target/`
//! (`common::python`).

use crate::common::*;
use serde_json::{json, Value};
use std::io::Write as _;
use std::path::PathBuf;
use vramfit::pricing::platform::EnvSnapshot;
use vramfit::vocab::Os;

/// One query, for both sides.
#[derive(Debug, Clone)]
struct Q {
    model: String,
    op: &'static str,
    width: u64,
    height: u64,
    batch: u64,
    tile: u32,
    dtype: Option<String>,
    loaded: Option<String>,
    fp32: Option<bool>,
    backend: String,
    allocator: String,
    os: String,
    env: Vec<(&'static str, String)>,
    /// `--host` (None: the file's default host).
    host: Option<String>,
    /// `--frames` (a video family's clip; 1 for an image).
    frames: u64,
    /// `--temporal-tile` (None: the family's own walk).
    temporal_tile: Option<u32>,
    /// The words both refusals must contain, for a query that must fail.
    refused: Option<&'static str>,
    /// `--warm` / `warm=True`: the first use left out.
    warm: bool,
}

impl Q {
    fn cli_args(&self, coefficients: &str) -> Vec<String> {
        let mut a: Vec<String> = ["vramfit", "--format", "json", "reserve"].iter().map(|s| s.to_string()).collect();
        a.extend([self.model.clone(), self.op.to_string(), format!("{}x{}", self.width, self.height)]);
        a.extend(["--batch".into(), self.batch.to_string(), "--tile".into(), self.tile.to_string()]);
        if let Some(d) = &self.dtype {
            a.extend(["--dtype".into(), d.clone()]);
        }
        if let Some(d) = &self.loaded {
            a.extend(["--loaded-dtype".into(), d.clone()]);
        }
        if let Some(f) = self.fp32 {
            a.extend(["--fp32".into(), f.to_string()]);
        }
        a.extend(["--backend".into(), self.backend.clone(), "--allocator".into(), self.allocator.clone()]);
        a.extend(["--os".into(), self.os.clone(), "--coefficients".into(), coefficients.to_string()]);
        if let Some(h) = &self.host {
            a.extend(["--host".into(), h.clone()]);
        }
        if self.frames != 1 {
            a.extend(["--frames".into(), self.frames.to_string()]);
        }
        if let Some(t) = self.temporal_tile {
            a.extend(["--temporal-tile".into(), t.to_string()]);
        }
        if self.warm {
            a.push("--warm".into());
        }
        a
    }

    fn python(&self, coefficients: &str) -> Value {
        let env: serde_json::Map<String, Value> = self.env.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        json!({
            "model": self.model, "op": self.op, "width": self.width, "height": self.height,
            "coefficients": coefficients, "env": env,
            "kw": {
                "batch": self.batch, "tile": self.tile, "dtype": self.dtype, "loaded_dtype": self.loaded,
                "fp32": self.fp32, "backend": self.backend, "allocator": self.allocator, "os": self.os,
                "host": self.host, "frames": self.frames, "temporal_tile": self.temporal_tile, "warm": self.warm,
            },
        })
    }
}

impl Q {
    /// An SDXL decode of 1024x1024 in fp16 on CUDA, native allocator,
    /// Linux: the query the refusals and the spellings vary one field of.
    fn plain() -> Q {
        Q {
            model: "sdxl".into(),
            op: "decode",
            width: 1024,
            height: 1024,
            batch: 1,
            tile: 0,
            dtype: Some("fp16".into()),
            loaded: None,
            fp32: None,
            backend: "cudnn".into(),
            allocator: "native".into(),
            os: "linux".into(),
            env: vec![],
            host: None,
            frames: 1,
            temporal_tile: None,
            refused: None,
            warm: false,
        }
    }
}

/// A small deterministic generator (xorshift), so the queries are the same on every run.
struct Pick(u64);

impl Pick {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn of<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[(self.next() % xs.len() as u64) as usize]
    }
}

const DTYPES: &[&str] = &["fp16", "bf16", "fp32", "float16", "torch.bfloat16", "float32", "half"];
const OSES: &[&str] = &["linux", "windows", "macos", "auto"];
/// Allocator settings: a name, a conf string given as the value, or `auto`
/// with a variable set (or none) for detection.
const ALLOCATORS: &[(&str, Option<(&str, &str)>)] = &[
    ("native", None),
    ("cudaMallocAsync", None),
    ("expandable_segments", None),
    ("backend:cudaMallocAsync", None),
    ("expandable_segments:True", None),
    ("auto", None),
    ("auto", Some(("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync"))),
    ("auto", Some(("PYTORCH_ALLOC_CONF", "expandable_segments:True,max_split_size_mb:512"))),
    ("auto", Some(("PYTORCH_HIP_ALLOC_CONF", "expandable_segments:False"))),
    ("auto", Some(("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:256"))),
];

fn coefficients_path() -> PathBuf {
    repo().join("fits/vae.json")
}

/// Every line and too-thin key of the shipped file, at sizes inside, below
/// and above its measured range, with every allocator setting, OS, batch,
/// tile and dtype spelling, plus casts, the SD switch and refusals.
fn queries() -> Vec<Q> {
    let file = vramfit::coefficients::load(&coefficients_path()).unwrap();
    let mut keys: Vec<(vramfit::points::LineKey, Option<[u64; 2]>)> =
        file.lines.iter().map(|l| (l.key.clone(), l.size_range)).collect();
    keys.extend(file.insufficient.iter().map(|l| (l.key.clone(), None)));
    let names: Vec<String> =
        file.registry.iter().flat_map(|(f, e)| std::iter::once(f.clone()).chain(e.models.iter().cloned())).collect();
    let mut pick = Pick(0x9E37_79B9_7F4A_7C15);
    let mut out = Vec::new();
    for (key, range) in &keys {
        // The family itself and one of its model names.
        let mut models = vec![key.vae.to_string()];
        models.extend(file.registry.get(key.vae.as_str()).into_iter().flat_map(|e| e.models.iter().cloned()));
        let side = |px: u64| ((px as f64).sqrt() as u64 / 8 * 8).max(8);
        let mut sides = vec![512u64, 1024, 1536];
        if let Some([lo, hi]) = range {
            sides.extend([side(*lo), side(*hi), side(*lo) / 2 + 8, side(*hi) + 64]);
        }
        for s in sides {
            for _ in 0..3 {
                let (allocator, var) = *pick.of(ALLOCATORS);
                let os = if key.os == Os::Any { pick.of(OSES).to_string() } else { key.os.to_string() };
                let dtype = match pick.next() % 4 {
                    0 => pick.of(DTYPES).to_string(),
                    _ => key.dtype.to_string(),
                };
                // Untiled keys also ask tiles nobody measured: the derived tile.
                let tile = match pick.next() % 5 {
                    0 => 4096, // covers the whole image: priced untiled
                    1 | 2 if key.tile == 0 => *pick.of(&[256, 384, 640, 768, 1152]),
                    _ => key.tile,
                };
                let host = match pick.next() % 4 {
                    0 => Some(pick.of(&["diffusers", "invokeai-flux", "comfyui"]).to_string()),
                    _ => None,
                };
                let (width, height) = if pick.next().is_multiple_of(3) { (s, s / 2 + 8) } else { (s, s) };
                // A video key: clips of several lengths, its own temporal tile or another.
                let (frames, temporal_tile) = match key.temporal_tile {
                    None => (1, None),
                    Some(t) => (
                        *pick.of(&[1, 9, 33, 81, 121, 241]),
                        *pick.of(&[Some(t), Some(t), None, Some(0), Some(8), Some(32)]),
                    ),
                };
                let walk_is_causal = file
                    .registry
                    .get(key.vae.as_str())
                    .and_then(|e| e.video.as_ref())
                    .is_some_and(|v| v.walk == vramfit::registry::Walk::Causal);
                let temporal_tile = if walk_is_causal { None } else { temporal_tile };
                out.push(Q {
                    model: pick.of(&models).clone(),
                    op: key.op.as_str(),
                    width,
                    height,
                    batch: *pick.of(&[1, 1, 2, 4]),
                    tile,
                    dtype: Some(dtype),
                    loaded: None,
                    fp32: None,
                    backend: key.conv_backend.to_string(),
                    allocator: if allocator == "auto" && var.is_none() && pick.next().is_multiple_of(2) {
                        key.allocator.to_string()
                    } else {
                        allocator.to_string()
                    },
                    os,
                    env: var.map(|(k, v)| vec![(k, v.to_string())]).unwrap_or_default(),
                    host,
                    frames,
                    temporal_tile,
                    refused: None,
                    warm: false,
                });
            }
        }
    }
    // Keys nobody measured: every backend and OS, so the unmeasured rule,
    // the legacy floor and the lines measured without an OS all price.
    for _ in 0..600 {
        let (allocator, var) = *pick.of(ALLOCATORS);
        let s = *pick.of(&[256u64, 512, 768, 1024, 2048, 4096]);
        let model = pick.of(&names).clone();
        let video = file
            .registry
            .iter()
            .find(|(f, e)| **f == model || e.models.contains(&model))
            .and_then(|(_, e)| e.video.as_ref());
        let (frames, temporal_tile) = match video {
            None => (1, None),
            Some(v) => (
                *pick.of(&[1, 17, 49, 121]),
                if v.walk == vramfit::registry::Walk::Causal { None } else { *pick.of(&[None, Some(0), Some(16)]) },
            ),
        };
        out.push(Q {
            model,
            op: if pick.next().is_multiple_of(2) { "decode" } else { "encode" },
            width: s,
            height: s,
            batch: *pick.of(&[1, 2, 3]),
            tile: *pick.of(&[0, 0, 256, 512, 640, 1024, 8192]),
            dtype: Some(pick.of(DTYPES).to_string()),
            loaded: if pick.next().is_multiple_of(4) { Some(pick.of(DTYPES).to_string()) } else { None },
            fp32: None,
            backend: pick.of(&["cudnn", "miopen", "rocm", "mps", "xpu", "cpu"]).to_string(),
            allocator: allocator.to_string(),
            os: pick.of(OSES).to_string(),
            env: var.map(|(k, v)| vec![(k, v.to_string())]).unwrap_or_default(),
            host: None,
            frames,
            temporal_tile,
            refused: None,
            warm: pick.next().is_multiple_of(3),
        });
    }
    // The SD nodes' switch, and casts from a narrower loaded dtype.
    for fp32 in [true, false] {
        for loaded in ["fp16", "bf16", "fp32"] {
            for model in ["sdxl", "sd15", "flux1"] {
                out.push(Q {
                    model: model.into(),
                    op: "decode",
                    width: 1024,
                    height: 1024,
                    batch: 1,
                    tile: 0,
                    dtype: None,
                    loaded: Some(loaded.into()),
                    fp32: Some(fp32),
                    backend: "cudnn".into(),
                    allocator: "auto".into(),
                    os: "linux".into(),
                    env: vec![],
                    host: None,
                    frames: 1,
                    temporal_tile: None,
                    refused: (model == "flux1").then_some("SD nodes' switch"),
                    warm: false,
                });
            }
        }
    }
    // Refusals: an unknown model, an unknown tile, no dtype, a contradiction,
    // a cast of a family without a weight count.
    let refuse = |model: &str, tile: u32, dtype: Option<&str>, loaded: Option<&str>, fp32, words| Q {
        model: model.into(),
        tile,
        dtype: dtype.map(str::to_string),
        loaded: loaded.map(str::to_string),
        fp32,
        refused: Some(words),
        ..Q::plain()
    };
    out.push(refuse("sdxxl", 0, Some("fp16"), None, None, "unknown vae or model"));
    out.push(refuse("sdxl", 300, Some("fp16"), None, None, "a tile is a multiple of 8 pixels"));
    out.push(Q { tile: 512, host: Some("gimp".into()), ..refuse("sdxl", 512, Some("fp16"), None, None, "not a host") });
    out.push(refuse("sdxl", 0, None, None, None, "say which dtype the VAE runs in"));
    out.push(refuse("sdxl", 0, Some("fp16"), None, Some(true), "contradicts"));
    out.push(refuse("cogview4", 0, Some("fp32"), Some("fp16"), None, "no weight count"));
    // Frames and temporal tiles where they mean nothing.
    out.push(Q { frames: 9, ..refuse("sdxl", 0, Some("fp16"), None, None, "is an image VAE") });
    out.push(Q {
        temporal_tile: Some(16),
        ..refuse("flux1", 0, Some("bf16"), None, None, "only a video family has a temporal tile")
    });
    out.push(Q {
        frames: 81,
        temporal_tile: Some(16),
        ..refuse("wan2.1", 0, Some("bf16"), None, None, "takes no temporal tile")
    });
    out
}

pub(crate) use crate::common::python;

pub(crate) fn python_answers(input: &Value) -> Vec<Value> {
    python_json("agree.py", input)
}

/// Runs `tests/python/SCRIPT` with `input` as JSON on standard input and
/// reads the JSON list it prints.
pub(crate) fn python_json(script: &str, input: &Value) -> Vec<Value> {
    let mut child = python()
        .arg(repo().join("tests/python").join(script))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 is needed for the agreement tests");
    child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the Python side of {script} failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_package_answers_like_the_cli_on_every_line_rule_dtype_allocator_and_os() {
    let qs = queries();
    assert!(qs.len() >= 1000, "{} queries", qs.len());
    let path = coefficients_path().display().to_string();
    let mut agreed = agree(&qs, &vec![path; qs.len()]);
    // The shipped file lifts the legacy floor off traced prices; every third
    // query again on a copy without the lift, so the floor under a trace and
    // a borrowed line is agreed on too.
    let dir = tempfile::tempdir().unwrap();
    let mut unlifted: Value = serde_json::from_slice(&std::fs::read(coefficients_path()).unwrap()).unwrap();
    assert!(unlifted["traced"].as_object_mut().unwrap().remove("lifts_legacy_floor").is_some());
    let unlifted_path = dir.path().join("unlifted.json");
    std::fs::write(&unlifted_path, serde_json::to_vec(&unlifted).unwrap()).unwrap();
    let thirds: Vec<Q> = qs.iter().step_by(3).cloned().collect();
    let thirds_agreed = agree(&thirds, &vec![unlifted_path.display().to_string(); thirds.len()]);
    let qs: Vec<Q> = qs.iter().cloned().chain(thirds).collect();
    agreed.extend(thirds_agreed);
    let mut rules = std::collections::BTreeSet::new();
    let mut refusals = 0;
    let mut videos = 0;
    for (q, a) in qs.iter().zip(&agreed) {
        match a {
            Agreed::Answer(cli) => {
                assert!(q.refused.is_none(), "{q:?} should be refused");
                rules.insert(cli["rule"].as_str().unwrap().to_string());
                if q.frames > 1 {
                    videos += 1;
                }
            }
            Agreed::Refused { cli, python } => {
                // The same refusal, word for word.
                assert_eq!(cli, &format!("error: {python}"), "{q:?}");
                refusals += 1;
                if let Some(words) = q.refused {
                    assert!(python.contains(words), "{q:?}: {python}");
                }
            }
        }
    }
    assert!(refusals >= 20, "{refusals} refusals of {}", qs.len());
    assert!(videos >= 100, "{videos} video answers of {}", qs.len());
    // Every rule the pricer has (but `--legacy`'s) was exercised.
    let all = [
        "fitted-line",
        "carried-line",
        "any-os-line",
        "unmeasured-rule",
        "derived-tile",
        "attention-phase",
        "legacy-floor",
        "video-estimate",
    ];
    let shipped_kinds: Vec<String> = vramfit::coefficients::load(&coefficients_path())
        .unwrap()
        .lines
        .iter()
        .map(|l| format!("{:?}", l.kind))
        .collect();
    for r in all {
        if r == "carried-line" && !shipped_kinds.iter().any(|k| k == "Carried") {
            continue; // nothing is carried in this file
        }
        if r == "any-os-line" && rules.iter().all(|x| x != r) && !has_any_os_platform() {
            continue;
        }
        assert!(rules.contains(r), "rule {r} never priced: {rules:?}");
    }
}

/// Whether the shipped file has an OS-specific platform with a line measured without an OS.
fn has_any_os_platform() -> bool {
    let file = vramfit::coefficients::load(&coefficients_path()).unwrap();
    file.lines.iter().any(|l| {
        l.key.os == Os::Any && vramfit::policy::is_os_specific(&file.os_specific, l.key.conv_backend, l.key.allocator)
    })
}

/// The package holds no copy of the coefficients: the wheel prices with the
/// runtime crate's compiled-in copy (`crates/vramfit-runtime/vae.json`,
/// kept identical to `fits/vae.json` by `emit` and checked by `verify`).
#[test]
fn the_package_carries_no_coefficients_of_its_own() {
    let mut files = Vec::new();
    collect(&repo().join("python"), &mut files);
    let copies: Vec<_> = files.iter().filter(|p| p.extension().is_some_and(|e| e == "json")).collect();
    assert!(copies.is_empty(), "{copies:?}");
}

fn collect(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        if name == "target" || name == "__pycache__" || name.ends_with(".egg-info") {
            continue;
        }
        if p.is_dir() {
            collect(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn the_bundled_copy_prices_like_the_embedded_one_and_says_so() {
    let q = json!([{ "model": "sdxl", "op": "decode", "width": 1024, "height": 1024, "coefficients": null,
        "env": {}, "kw": { "dtype": "fp16", "allocator": "native", "os": "linux" } }]);
    let py = &python_answers(&q)[0]["ok"];
    let out = vramfit()
        .args(["--format", "json", "reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16"])
        .args(["--allocator", "native", "--os", "linux"])
        .output()
        .unwrap();
    let mut cli: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(py["coefficients"], "bundled fits/vae.json (vramfit 0.1.0)");
    cli["coefficients"] = py["coefficients"].clone();
    cli["os"] = py["os"].clone();
    assert_eq!(&cli, py);
}

#[test]
fn budget_is_the_plan_budget() {
    let script = r#"
import json
import vramfit_vae as vramfit
cases = [(10_000, "0.5", None), (10_001, "0.5", 4000), (None, 1, 77), (999, 0.9, None), (12 << 30, "1e-3", None)]
out = []
for free, share, cap in cases:
    b = vramfit.budget(free=free, share=share, cap=cap)
    out.append([b.bytes, b.bound])
for bad in [dict(free=None, cap=None), dict(free=10, share=0), dict(free=10, share="1.5"), dict(free=0)]:
    try:
        vramfit.budget(**bad)
        out.append("accepted")
    except ValueError as e:
        out.append(str(e))
print(json.dumps(out))
"#;
    let out = python().args(["-c", script]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got[0], json!([5000, "share"]));
    assert_eq!(got[1], json!([4000, "cap"]));
    assert_eq!(got[2], json!([77, "cap-unknown-free"]));
    assert_eq!(got[3], json!([899, "share"]), "0.9 × 999 = 899.1 rounds down, read as the decimal 0.9");
    assert_eq!(got[4], json!([12_884_901, "share"]));
    for (i, words) in [(5, "no --cap"), (6, "greater than 0"), (7, "at most 1"), (8, "--free 0")] {
        assert!(got[i].as_str().unwrap().contains(words), "{}", got[i]);
    }
    // The same figure from `vramfit plan` (the CLI's budget).
    let plan = vramfit()
        .args(["--format", "json", "plan", "sdxl", "decode", "512x512", "--dtype", "fp16", "--os", "linux"])
        .args(["--allocator", "native", "--free", "999", "--share", "0.9"])
        .output()
        .unwrap();
    let plan: Value = serde_json::from_slice(&plan.stdout).unwrap();
    assert_eq!(plan["budget"]["bytes"], 899);
}

#[test]
fn the_readme_three_lines_answer_like_the_cli() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let after = readme.split("<!-- python-three-lines -->").nth(1).expect("the README marks the three lines");
    let code = after.split("```python\n").nth(1).and_then(|b| b.split("```").next()).unwrap();
    assert_eq!(code.lines().count(), 3, "{code}");
    let mut py = python();
    for v in ["PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF"] {
        py.env_remove(v);
    }
    let out = py.args(["-c", code]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8(out.stdout).unwrap();
    let cli =
        vramfit().args(["--format", "json", "reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16"]).output();
    let cli: Value = serde_json::from_slice(&cli.unwrap().stdout).unwrap();
    let rule = cli["rule"].as_str().unwrap();
    let want = format!(
        "{} {rule} {} [] {}",
        cli["bytes"],
        key_text(&cli["line"]),
        if cli["extrapolated"] == true { "True" } else { "False" }
    );
    assert_eq!(printed.trim_end(), want);
}

fn key_text(k: &Value) -> String {
    ["vae", "op", "tile", "conv_backend", "allocator", "os", "dtype"]
        .iter()
        .map(|f| match &k[*f] {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The Python the package ships is glue: Python 3.9 syntax, imports of the
/// standard library and of the package's own modules only (torch is never
/// imported: the drop-ins duck-type tensors), and outside the host drop-ins
/// and the stubs under 400 lines, none of which prices: no refusal's words,
/// rule label or vocabulary alias is written in it (they are the runtime's).
#[test]
fn the_package_python_is_glue_over_the_runtime() {
    let script = r#"
import ast, os, sys
path, package = sys.argv[1], sys.argv[2]
own = {n.split(".")[0] for n in os.listdir(package)} | {"hosts"}
tree = ast.parse(open(path).read(), feature_version=(3, 9))
stdlib = {"json", "os", "re", "sys", "dataclasses", "fractions", "typing", "importlib", "logging", "threading",
          "datetime", "time", "fcntl", "msvcrt", "errno", "stat", "functools"}
for node in ast.walk(tree):
    names = []
    if isinstance(node, ast.Import):
        names = [a.name.split(".")[0] for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level >= 1:
        assert node.module is None or node.module.split(".")[0] in own, node.module
        continue
    elif isinstance(node, ast.ImportFrom):
        names = [(node.module or "").split(".")[0]]
    for n in names:
        assert n in stdlib, n
print("ok")
"#;
    let package = repo().join("python/vramfit_vae");
    let mut files = Vec::new();
    collect(&package, &mut files);
    let modules: Vec<&PathBuf> = files.iter().filter(|p| p.extension().is_some_and(|x| x == "py")).collect();
    assert!(modules.len() >= 4, "{modules:?}");
    let mut glue_lines = 0;
    for module in &modules {
        let out =
            std::process::Command::new("python3").args(["-c", script]).arg(module).arg(&package).output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(said.trim(), "ok", "{}: {}", module.display(), String::from_utf8_lossy(&out.stderr));
        if module.components().any(|c| c.as_os_str() == "hosts") {
            continue;
        }
        let text = std::fs::read_to_string(module).unwrap();
        glue_lines += text.lines().count();
        // The code, less its docstrings (prose may say what a refusal says).
        let code: String = text.split("\"\"\"").step_by(2).collect();
        for w in vramfit::words::ALL {
            let head = w.text.split(['{', '}']).step_by(2).max_by_key(|s| s.len()).unwrap();
            if head.len() >= 16 {
                assert!(!code.contains(head), "{} repeats the words of {}: {head:?}", module.display(), w.id);
            }
        }
        for r in vramfit::pricing::Rule::ALL {
            assert!(!code.contains(&format!("\"{}\"", r.as_str())), "{} repeats the label of {r:?}", module.display());
        }
        for alias in ["torch.bfloat16", "\"osx\"", "\"hip\"", "\"f16\""] {
            assert!(!code.contains(alias), "{} repeats a vocabulary: {alias}", module.display());
        }
    }
    assert!(glue_lines < 400, "the package's own Python is {glue_lines} lines: pricing belongs in the runtime");
    // The stubs and the typed marker ship beside it.
    assert!(package.join("py.typed").exists() && package.join("_native.pyi").exists());
}

/// Every function the package exports comes from the native module (the
/// runtime), not from Python.
#[test]
fn the_pricer_is_the_native_module() {
    let script = r#"
import vramfit_vae as v
for name in ["reserve", "plan", "budget", "load", "bundled", "allocator_of_conf"]:
    f = getattr(v, name)
    print(name, type(f).__name__, f.__module__)
for name in ["Reservation", "Coefficients", "LineKey", "Budget", "Detected", "Refusal"]:
    print(name, getattr(v, name).__module__)
print(issubclass(v.Refusal, ValueError), sorted(v.REFUSAL_CODES))
"#;
    let out = python().args(["-c", script]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8(out.stdout).unwrap();
    for line in said.lines().take(6) {
        assert!(line.ends_with("builtin_function_or_method vramfit_vae._native"), "{line}");
    }
    for line in said.lines().skip(6).take(5) {
        assert!(line.ends_with(" vramfit_vae"), "{line}");
    }
    let mut codes: Vec<&str> = vramfit::error::Code::ALL.iter().map(|c| c.as_str()).collect();
    codes.sort_unstable();
    assert!(said.contains(&format!("True {codes:?}").replace('"', "'")), "{said}");
}

/// Every spelling the CLI accepts of a dtype, backend, allocator and OS
/// (each alias, in other cases and with spaces around it), and a few it
/// refuses: both sides read them alike.
fn spelling_queries() -> Vec<Q> {
    use vramfit::vocab::{ConvBackend, Dtype};
    let base = Q::plain();
    let variants = |s: &str| vec![s.to_string(), s.to_uppercase(), format!(" {s}\t"), s.to_string() + "x"];
    let mut out = Vec::new();
    for s in Dtype::SPELLINGS {
        for v in variants(s) {
            out.push(Q { dtype: Some(v.clone()), ..base.clone() });
            out.push(Q { loaded: Some(v), dtype: None, ..base.clone() });
        }
    }
    for s in ConvBackend::SPELLINGS {
        out.extend(variants(s).into_iter().map(|v| Q { backend: v, ..base.clone() }));
    }
    for s in Os::SPELLINGS.iter().chain(&["auto"]) {
        out.extend(variants(s).into_iter().map(|v| Q { os: v, allocator: "auto".into(), ..base.clone() }));
    }
    let allocators = [
        "native",
        "cudaMallocAsync",
        "expandable_segments",
        "expandable-segments",
        "backend:native",
        "backend:cudaMallocAsync",
        "expandable_segments:True",
        "expandable_segments:False",
        "auto",
    ];
    for s in allocators {
        out.extend(variants(s).into_iter().map(|v| Q { allocator: v, ..base.clone() }));
    }
    out
}

/// What both sides agreed a query gets.
enum Agreed {
    /// The same answer (the CLI's JSON).
    Answer(Value),
    /// Both refused: the CLI's first error line and the package's message.
    Refused { cli: String, python: String },
}

/// The answers of both sides, query by query (each on its own coefficients
/// file): the same JSON, or both refusing, the file or the query, the
/// package in the CLI's words (which clap may wrap around a flag).
fn agree(qs: &[Q], paths: &[String]) -> Vec<Agreed> {
    let input = Value::Array(qs.iter().zip(paths).map(|(q, p)| q.python(p)).collect());
    let answers = python_answers(&input);
    assert_eq!(answers.len(), qs.len());
    let host = EnvSnapshot::from_process().host_os;
    let mut agreed = Vec::new();
    let mut disagree = Vec::new();
    for ((q, path), answer) in qs.iter().zip(paths).zip(&answers) {
        let env = EnvSnapshot { vars: q.env.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(), host_os: host };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = vramfit::cli::run_from(q.cli_args(path), &env, &mut out, &mut err);
        let err = String::from_utf8_lossy(&err).trim_end().to_string();
        // The CLI refuses a file it cannot load before it reads the query,
        // naming the file first.
        let file_refused = code == 2 && err.starts_with(&format!("error: {path}"));
        let py_file_refused = answer.get("load").is_some();
        match (code, answer.get("ok"), answer.get("error")) {
            (0, Some(py), None) => {
                let cli: Value = serde_json::from_slice(&out).unwrap();
                if &cli == py {
                    agreed.push(Agreed::Answer(cli));
                } else {
                    disagree.push(format!("{q:?} on {path}: CLI {cli} / Python {py}"));
                }
            }
            (2, None, Some(Value::String(py)))
                if (file_refused && py_file_refused)
                    || (!file_refused
                        && !py_file_refused
                        && err.starts_with("error: ")
                        && err.contains(py.as_str())) =>
            {
                agreed.push(Agreed::Refused { cli: err, python: py.clone() })
            }
            _ => {
                let said = answer.get("ok").map_or_else(|| answer.to_string(), |_| "an answer".to_string());
                disagree.push(format!("{q:?} on {path}: the CLI exits {code} ({err}), Python gives {said}"));
            }
        }
    }
    assert!(
        disagree.is_empty(),
        "{} disagreements, the first:\n{}",
        disagree.len(),
        disagree[..disagree.len().min(12)].join("\n")
    );
    agreed
}

/// How many of the agreed queries were answered and refused.
fn counts(agreed: &[Agreed]) -> (usize, usize) {
    let answered = agreed.iter().filter(|a| matches!(a, Agreed::Answer(_))).count();
    (answered, agreed.len() - answered)
}

#[test]
fn every_spelling_is_read_alike() {
    let qs = spelling_queries();
    let path = coefficients_path().display().to_string();
    let (answered, refused) = counts(&agree(&qs, &vec![path; qs.len()]));
    // Each spelling as written, upper-cased and padded answers; with a
    // letter added it is refused.
    assert!(answered >= 3 * (qs.len() / 4) - 8, "{answered} of {}", qs.len());
    assert!(refused >= qs.len() / 4 - 4, "{refused} of {}", qs.len());
}

/// The shipped file mutated as the fuzz test mutates it (a field removed,
/// duplicated or replaced by another value): where the CLI loads it, the
/// package answers every query the same, or refuses it in the same words;
/// where the CLI refuses the file, so does the package.
#[test]
fn mutated_coefficient_files_are_priced_alike() {
    let dir = scratch();
    let shipped = std::fs::read(coefficients_path()).unwrap();
    let base = queries();
    let mut rng = Rng::new(0xA9_2EE5);
    let (mut qs, mut paths) = (Vec::new(), Vec::new());
    for case in 0..400 {
        let path = dir.path().join(format!("vae-{case}.json"));
        // Every other file keeps its shape and has one figure changed, so
        // it loads and prices: a slope, a base, a tile, a count of copies.
        let bytes =
            if case % 2 == 0 { crate::fuzz::mutate_json(&mut rng, &shipped) } else { nudge(&mut rng, &shipped) };
        std::fs::write(&path, bytes).unwrap();
        for _ in 0..4 {
            qs.push(rng.pick(&base).clone());
            paths.push(path.display().to_string());
        }
    }
    let (answered, refused) = counts(&agree(&qs, &paths));
    assert!(answered >= 600, "{answered} answered, {refused} refused of {}", qs.len());
}

/// The file with one figure changed, written as `emit` writes: an integer
/// halved, doubled, raised by one or set to 0, or a decimal doubled or set
/// to 0 or 1.5.
fn nudge(rng: &mut Rng, text: &[u8]) -> Vec<u8> {
    fn figures(v: &Value, at: &mut Vec<String>, out: &mut Vec<String>) {
        match v {
            Value::Object(o) => o.iter().for_each(|(k, x)| {
                at.push(k.replace('~', "~0").replace('/', "~1"));
                figures(x, at, out);
                at.pop();
            }),
            Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| {
                at.push(i.to_string());
                figures(x, at, out);
                at.pop();
            }),
            Value::Number(_) => out.push(format!("/{}", at.join("/"))),
            Value::String(s) if s.parse::<f64>().is_ok() => out.push(format!("/{}", at.join("/"))),
            _ => {}
        }
    }
    let mut v: Value = serde_json::from_slice(text).unwrap();
    let mut all = Vec::new();
    figures(&v, &mut Vec::new(), &mut all);
    let at = rng.pick(&all).clone();
    let slot = v.pointer_mut(&at).unwrap();
    *slot = match slot.clone() {
        Value::Number(n) => {
            let n = n.as_u64().unwrap_or(1);
            json!(*rng.pick(&[0, n / 2, n.saturating_mul(2), n + 1]))
        }
        Value::String(s) => {
            let doubled = format!("{}", s.parse::<f64>().unwrap() * 2.0);
            json!(*rng.pick(&["0", "1.5", doubled.as_str()]))
        }
        other => other,
    };
    let mut out = serde_json::to_vec_pretty(&v).unwrap();
    out.push(b'\n');
    out
}

/// A refusal carries the runtime's code (a host branches on it, not on the
/// words), and a keyword a call does not take is a `TypeError` naming it.
#[test]
fn refusals_carry_the_runtimes_code_and_unknown_keywords_are_type_errors() {
    let script = r#"
import json, os, tempfile
import vramfit_vae as v
def code(f):
    try:
        f()
    except v.Refusal as e:
        return e.code
    except TypeError as e:
        return "TypeError: %s" % e
    return "accepted"
d = tempfile.mkdtemp()
bad = os.path.join(d, "bad.json")
open(bad, "w").write("{}")
q = dict(dtype="fp16", os="linux", env={})
print(json.dumps([
    code(lambda: v.reserve("nosuch", "decode", 512, 512, **q)),
    code(lambda: v.reserve("sd", "decode", 1 << 40, 1 << 40, batch=1 << 40, **q)),
    code(lambda: v.budget(free=0)),
    code(lambda: v.plan("sd", "decode", 512, 512, share="1.5", free=1 << 30, **q)),
    code(lambda: v.load(bad)),
    code(lambda: v.reserve("sd", "decode", 512, 512, colour=1, **q)),
    code(lambda: v.bundled().reserve("sd", "decode", 512, 512, coefficients=bad, **q)),
    code(lambda: v.reserve("sd", "decode", 512, 512, **q)),
]))
"#;
    let out = python().args(["-c", script]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got[0], "refused");
    assert_eq!(got[1], "too-large");
    assert_eq!(got[2], "budget");
    assert_eq!(got[3], "budget");
    assert_eq!(got[4], "file");
    assert_eq!(got[5], "TypeError: got an unexpected keyword argument 'colour'");
    assert_eq!(got[6], "TypeError: got an unexpected keyword argument 'coefficients'");
    assert_eq!(got[7], "accepted");
}
