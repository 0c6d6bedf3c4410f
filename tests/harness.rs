//! The measurement harness (`harness/`, Python) end to end on its fake
//! device, with the machine's own python3 and no torch: the grid, a child
//! process per run with the allocator in its environment, the CSV that
//! `vramfit ingest` accepts, resuming, and the out-of-memory log.

use crate::common::*;
use std::path::Path;

fn harness(args: &[&str]) -> std::process::Output {
    std::process::Command::new("python3")
        .args(["-m", "harness"])
        .args(args)
        .current_dir(repo())
        .env_remove("PYTORCH_ALLOC_CONF")
        .env_remove("PYTORCH_CUDA_ALLOC_CONF")
        .output()
        .expect("python3 is needed for the harness tests")
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

const PLAN: &str = r#"
runs = 2
[[grid]]
families = ["sdxl", "flux1", "cogview4", "qwen_image", "flux2", "sd3", "sd15"]
ops = ["decode", "tiled-decode"]
tiles = [512]
dtypes = ["fp16"]
sizes = ["1024x1024"]
allocators = ["native", "cudaMallocAsync"]

[[grid]]
families = ["sdxl"]
ops = ["encode"]
dtypes = ["bf16", "fp32"]
sizes = ["512x512", "768x768"]
batches = [1, 2]
allocators = ["expandable_segments"]
"#;

/// `vramfit ingest --allow-simulated CSV` into `root`: its JSON report.
fn ingest_simulated(root: &Path, csv: &str) -> serde_json::Value {
    let out = vramfit()
        .arg("--root")
        .arg(root)
        .args(["--format", "json", "ingest", "--allow-simulated", csv])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    json_of(&out)
}

/// The stored point `id` of `root` (its line of `measurements/vae.json`).
fn stored_point(root: &Path, id: &str) -> serde_json::Value {
    let points = std::fs::read_to_string(root.join("measurements/vae.json")).unwrap();
    let line = points.lines().find(|l| l.contains(&format!("\"id\":\"{id}\""))).unwrap_or_else(|| panic!("{id}"));
    serde_json::from_str(line.trim_end_matches(',')).unwrap()
}

fn rows(csv: &str) -> Vec<Vec<String>> {
    std::fs::read_to_string(csv)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| vec![l.split(',').next().unwrap().to_string()])
        .collect()
}

#[test]
fn dry_run_prints_the_grid_and_its_count() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(dir.path(), "plan.toml", PLAN);
    let out = harness(&["--plan", &plan, "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    // 7 families × (decode + tiled decode at 512) × 2 allocators, and
    // 2 dtypes × 2 sizes × 2 batches of SDXL encodes: 36 points, 2 runs each.
    assert!(
        text.trim_end()
            .ends_with("72 runs (36 points × 2 runs), families: cogview4, flux1, flux2, qwen_image, sd15, sd3, sdxl"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 74);
    // One child per run of a point: 72 children of about 19.7 s each.
    assert!(text.contains("72 child processes, about 1418 s on one GPU"), "{text}");
    assert!(text.contains("sdxl-decode-t512-fp16-1024x1024-b1-cudaMallocAsync-r2\n"));
}

#[test]
fn a_fake_run_is_ingested_resumed_and_keeps_oom_points_apart() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(dir.path(), "plan.toml", PLAN);
    let csv = dir.path().join("points.csv").display().to_string();
    let out = harness(&["--device", "fake", "--plan", &plan, "--out", &csv]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let first = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows(&csv).len(), 72, "one row per run");
    // vramfit takes the file as it is.
    let root = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("fits"), &root.path().join("fits"));
    // Simulated rows never reach a store by accident: refused, naming the rows, nothing written.
    let before = snapshot(root.path());
    let refused = vramfit().arg("--root").arg(root.path()).args(["ingest", &csv]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let err = stderr_of(&refused);
    assert!(err.contains(&format!("{csv}:2: device: 72 row(s) were made on a simulated device")), "{err}");
    assert!(err.contains("--allow-simulated"), "{err}");
    assert_eq!(before, snapshot(root.path()));
    // vramfit takes the file as it is when asked to.
    let report = ingest_simulated(root.path(), &csv);
    assert_eq!(report["added"], 72);
    // Each run names its index, and the allocator reached the child: the
    // same point under two allocators gives two different reserves.
    let find = |id: &str| stored_point(root.path(), id);
    let native = find("h-fake/sdxl-decode-fp16-1024x1024-b1-native-r1");
    let pool = find("h-fake/sdxl-decode-fp16-1024x1024-b1-cudaMallocAsync-r1");
    assert_eq!((native["allocator"].as_str(), pool["allocator"].as_str()), (Some("native"), Some("cudaMallocAsync")));
    assert_ne!(native["reserved_bytes"], pool["reserved_bytes"]);
    assert_eq!(find("h-fake/sdxl-decode-fp16-1024x1024-b1-native-r2")["run"], 2);
    // One fresh process per run: every row says so (docs/data.md, "Context").
    assert_eq!((native["context"].as_str(), pool["context"].as_str()), (Some("fresh"), Some("fresh")));
    assert_eq!(native["metadata"]["harness"], "0.1.0");
    assert!(native["metadata"]["config_source"].as_str().unwrap().contains("stable-diffusion-xl-base-1.0"));
    // A restart writes nothing new; a lost last row is measured again.
    let again = harness(&["--device", "fake", "--plan", &plan, "--out", &csv]);
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("0 written, 0 out of memory"),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), first);
    let mut lines: Vec<&str> = first.lines().collect();
    let lost = lines.pop().unwrap().split(',').next().unwrap().to_string();
    std::fs::write(&csv, lines.join("\n") + "\n").unwrap();
    let resumed = harness(&["--device", "fake", "--plan", &plan, "--out", &csv]);
    assert!(String::from_utf8_lossy(&resumed.stdout).contains("1 written"));
    assert!(std::fs::read_to_string(&csv).unwrap().lines().last().unwrap().starts_with(&lost));
    // An out-of-memory point goes to its log, never into the CSV.
    let big = write(dir.path(), "big.toml", "runs = 1\n[[grid]]\nfamilies = [\"sdxl\"]\nops = [\"decode\"]\ndtypes = [\"fp32\"]\nsizes = [\"512x512\", \"8192x8192\"]\n");
    let csv2 = dir.path().join("big.csv").display().to_string();
    let out = harness(&["--device", "fake", "--plan", &big, "--out", &csv2]);
    assert_eq!(out.status.code(), Some(0));
    let written = std::fs::read_to_string(&csv2).unwrap();
    assert!(written.contains("512x512") && !written.contains("8192x8192"));
    let log = std::fs::read_to_string(format!("{csv2}.oom.jsonl")).unwrap();
    assert!(log.contains("\"key\": \"sdxl-decode-fp32-8192x8192-b1-native-r1\""), "{log}");
}

#[test]
fn a_bad_plan_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (text, words) in [
        ("[[grid]]\nfamilies = [\"sdxxl\"]\nops = [\"decode\"]\ndtypes = [\"fp16\"]\nsizes = [\"512x512\"]\n", "unknown family 'sdxxl'"),
        ("[[grid]]\nfamilies = [\"sdxl\"]\nops = [\"decode\"]\ndtypes = [\"fp64\"]\nsizes = [\"512x512\"]\n", "unknown dtype 'fp64'"),
        ("[[grid]]\nfamilies = [\"sdxl\"]\nops = [\"tiled-decode\"]\ndtypes = [\"fp16\"]\nsizes = [\"512x512\"]\n", "missing 'tiles'"),
        ("[[grid]]\nfamilies = [\"sdxl\"]\nops = [\"decode\"]\ndtypes = [\"fp16\"]\nsizes = [\"500x512\"]\n", "multiples of 8"),
        ("[[grid]]\nfamilies = [\"sdxl\"]\nops = [\"decode\"]\ndtypes = [\"fp16\"]\nsizes = [\"512x512\"]\nallocator = [\"native\"]\n", "unknown key 'allocator'"),
        // Clip lengths belong to video families, and to the lengths they decode.
        ("[[grid]]\nfamilies = [\"sdxl\"]\nops = [\"decode\"]\ndtypes = [\"fp16\"]\nsizes = [\"512x512\"]\nframes = [9]\n", "sdxl is an image VAE"),
        ("[[grid]]\nfamilies = [\"wan21\"]\nops = [\"decode\"]\ndtypes = [\"bf16\"]\nsizes = [\"512x320\"]\nframes = [10]\n", "10 is not (9 or 13 is)"),
        // A class with its own clip lengths (MiniMax-H3: 17n + 5) is held to them, not to k x 4 + 1.
        ("[[grid]]\nfamilies = [\"minimax_h3\"]\nops = [\"decode\"]\ndtypes = [\"bf16\"]\nsizes = [\"512x512\"]\nframes = [21]\n", "takes 17 x n + 5 frames; 21 is not (22 is)"),
        ("[[grid]]\nfamilies = [\"sdxl\"]\nops = [\"host-tiled-decode\"]\ndtypes = [\"fp16\"]\nsizes = [\"512x512\"]\n", "sdxl is an image VAE"),
        ("[[grid]]\nfamilies = [\"sdxl\"]\nops = [\"decode\"]\ndtypes = [\"fp16\"]\nsizes = [\"512x512\"]\ncontexts = [\"warm\"]\n", "a warm run needs the fresh one"),
        ("[[grid]]\nfamilies = [\"sdxl\"]\nops = [\"decode\"]\ndtypes = [\"fp16\"]\nsizes = [\"512x512\"]\ncontexts = [\"fresh\", \"warm\"]\nprocess = \"grid\"\n", "leave contexts out"),
        ("[[grid]]\nfamilies = [\"sdxl\"]\nops = [\"decode\"]\ndtypes = [\"fp16\"]\nsizes = [\"512x512\"]\nprocess = \"one\"\n", "process: 'one'"),
    ] {
        let plan = write(dir.path(), "bad.toml", text);
        let out = harness(&["--plan", &plan, "--dry-run"]);
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&plan) && err.contains(words), "{err}");
    }
}

#[test]
fn every_registered_family_has_a_config_that_names_its_source() {
    let registry = vramfit::workspace::Workspace::new(&repo()).policy().unwrap().registry;
    let dir = repo().join("harness/configs");
    let mut covered = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(e.unwrap().path()).unwrap()).unwrap();
        let source = doc["source"].as_str().unwrap();
        // A model repository's config, the model's original YAML config,
        // diffusers' conversion script, the architecture a host reads off
        // the released weights, or the diffusers class's own defaults (said so).
        let named = ["vae/config.json", ".yaml @", "convert_", "from the released weights", "class defaults"];
        assert!(named.iter().any(|n| source.contains(n)), "{source}");
        assert!(doc["config"]["_class_name"].as_str().unwrap().starts_with("Autoencoder"));
        let family = registry.resolve(doc["model"].as_str().unwrap()).unwrap();
        assert_eq!(family, doc["vae"].as_str().unwrap());
        // A video family's compression is the registry's.
        if let Some(facts) = registry.video(family) {
            assert_eq!(doc["spatial"].as_u64(), Some(facts.spatial), "{family}");
            assert_eq!(doc["temporal"].as_u64(), Some(facts.temporal), "{family}");
        }
        covered.insert(family.to_string());
    }
    let registered: std::collections::BTreeSet<String> = registry.0.keys().cloned().collect();
    assert_eq!(covered, registered, "every registered family, the video ones included");
}

#[test]
fn an_answer_priced_from_simulated_points_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        "plan.toml",
        "runs = 1\n[[grid]]\nfamilies = [\"sdxl\"]\nops = [\"decode\"]\ndtypes = [\"fp16\"]\n\
         sizes = [\"512x512\", \"1024x1024\", \"1536x1536\"]\nallocators = [\"expandable_segments\"]\n",
    );
    let csv = dir.path().join("fake.csv").display().to_string();
    assert_eq!(harness(&["--device", "fake", "--plan", &plan, "--out", &csv]).status.code(), Some(0));
    let root = scratch();
    ingest_simulated(root.path(), &csv);
    vramfit().arg("--root").arg(root.path()).args(["emit", "--force"]).output().unwrap();
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.path().join("fits/vae.json")).unwrap()).unwrap();
    let line = file["lines"].as_array().unwrap().iter().find(|l| l["allocator"] == "expandable_segments").unwrap();
    assert_eq!(line["simulated_points"], 3);
    let out = vramfit()
        .arg("--root")
        .arg(root.path())
        .args(["--format", "json", "reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16"])
        .args(["--allocator", "expandable_segments"])
        .output()
        .unwrap();
    let j = json_of(&out);
    let warnings = j["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w.as_str().unwrap().contains("3 point(s) made on a simulated device")), "{j}");
    // Lines of real measurements carry no such field.
    let shipped = std::fs::read_to_string(repo().join("fits/vae.json")).unwrap();
    let shipped_fake = shipped.contains("simulated_points");
    let store = std::fs::read_to_string(repo().join("measurements/vae.json")).unwrap();
    assert_eq!(shipped_fake, store.contains("\"device\":\"fake\""));
}

#[test]
fn a_real_run_without_torch_stops_before_the_first_child_in_one_line() {
    // `-S`: no site-packages, so neither torch nor diffusers, whatever this machine has.
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("out.csv");
    let out = std::process::Command::new("python3")
        .args(["-S", "-m", "harness", "--plan", "harness/plans/quick.toml", "--out"])
        .arg(&csv)
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one line, no traceback: {err}");
    assert!(err.starts_with("error: the real device needs torch") && err.contains("diffusers==0.42.1"), "{err}");
    assert!(!csv.exists(), "nothing written");
    // So does the meta check of a plan, which needs no GPU but torch.
    let meta = std::process::Command::new("python3")
        .args(["-S", "-m", "harness", "--plan", "harness/plans/next-gpu.toml", "--check-meta"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(meta.status.code(), Some(2));
    let err = String::from_utf8_lossy(&meta.stderr);
    assert!(err.starts_with("error: --check-meta needs torch") && err.lines().count() == 1, "{err}");
    // The CPU smoke run says the same.
    let smoke = std::process::Command::new("python3").args(["-S", "-m", "harness.smoke"]).current_dir(repo()).output();
    let smoke = smoke.unwrap();
    assert_eq!(smoke.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&smoke.stderr).starts_with("error: the real device needs torch"));
}

#[test]
fn rows_of_an_unconfirmed_config_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        "plan.toml",
        "runs = 1\n[[grid]]\nfamilies = [\"cogview4\", \"sdxl\"]\nops = [\"decode\"]\ndtypes = [\"fp16\"]\nsizes = [\"512x512\"]\n",
    );
    let csv = dir.path().join("out.csv").display().to_string();
    assert_eq!(harness(&["--device", "fake", "--plan", &plan, "--out", &csv]).status.code(), Some(0));
    let text = std::fs::read_to_string(&csv).unwrap();
    for line in text.lines().skip(1) {
        let unconfirmed =
            line.contains("UNCONFIRMED: ") && line.contains("config UNCONFIRMED against the model repository");
        assert_eq!(unconfirmed, line.starts_with("h-fake/cogview4-"), "{line}");
    }
}

#[test]
fn the_harness_no_longer_installs_torch_and_pins_the_diffusers_ci_tested() {
    let text = std::fs::read_to_string(repo().join("harness/pyproject.toml")).unwrap();
    let deps = text.lines().find(|l| l.starts_with("dependencies")).unwrap();
    assert_eq!(deps, "dependencies = [\"diffusers==0.42.1\"]");
    // CI installs the pins harness/preflight.py states (once: .ci/run reads them there).
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    assert!(
        ci.contains("preflight.DIFFUSERS_TESTED")
            && ci.contains("preflight.TORCH_TRACED")
            && ci.contains("\"diffusers==$diffusers_pin\"")
            && ci.contains("\"torch==$torch_pin\"")
            && ci.contains("-m harness.smoke"),
        "CI tests the pinned versions"
    );
    let preflight = std::fs::read_to_string(repo().join("harness/preflight.py")).unwrap();
    assert!(preflight.contains("DIFFUSERS_TESTED = \"0.42.1\""));
}

#[test]
fn the_smoke_check_names_a_config_key_its_class_does_not_take() {
    // The check itself, without torch: a stand-in class with diffusers' way
    // of declaring its config (keyword arguments of `__init__`).
    let script = r#"
from harness.smoke import config_keys_problems
class AutoencoderKL:
    def __init__(self, in_channels=3, block_out_channels=(64,), latent_channels=4, *, layers_per_block): pass
doc = {"config": {"_class_name": "AutoencoderKL", "in_channels": 3, "force_upcast": True}}
print(config_keys_problems(doc, AutoencoderKL))
doc = {"config": {"_class_name": "AutoencoderKL", "layers_per_block": 2}}
print(config_keys_problems(doc, AutoencoderKL))
"#;
    let out = std::process::Command::new("python3").args(["-S", "-c", script]).current_dir(repo()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "[\"unknown key 'force_upcast'\", \"missing key 'layers_per_block'\"]\n[]\n"
    );
}

/// The shipped traces (`python3 -m harness trace --all`; CI checks they
/// regenerate byte for byte): one file per shipped config, every row a
/// registered family with its provenance, and the shape a trace must have:
/// at one op, dtype and clip, an untiled trace never shrinks as the image
/// grows, and at one size never as the clip grows.
#[test]
fn the_shipped_traces_cover_every_config_and_grow_with_the_work() {
    let registry = vramfit::workspace::Workspace::new(&repo()).policy().unwrap().registry;
    let configs: Vec<String> = std::fs::read_dir(repo().join("harness/configs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".json").to_string())
        .collect();
    assert!(configs.len() >= 12, "{configs:?}");
    for family in &configs {
        let path = repo().join(format!("measurements/traced/{family}.csv"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("{name}"));
        let (vae, op, dtype, tile, w, h, frames, bytes, digest) = (
            col("vae"),
            col("op"),
            col("dtype"),
            col("tile"),
            col("width"),
            col("height"),
            col("frames"),
            col("traced_bytes"),
            col("config_sha256"),
        );
        for c in ["torch", "diffusers", "config_source", "call", "temporal_tile", "batch"] {
            col(c);
        }
        // Untiled rows: "op dtype frames" → [(pixels, bytes)], and "op dtype size" → [(frames, bytes)].
        let mut series: std::collections::BTreeMap<String, Vec<(u64, u64)>> = Default::default();
        let mut n = 0;
        for line in lines {
            let fields = csv_fields(line);
            let f: Vec<&str> = fields.iter().map(String::as_str).collect();
            assert_eq!(f.len(), header.len(), "{line}");
            assert!(registry.0.contains_key(f[vae]), "{family}: {line}");
            assert_eq!(f[digest].len(), 64, "{line}");
            let num = |i: usize| f[i].parse::<u64>().unwrap_or_else(|_| panic!("{line}"));
            assert!(num(bytes) > 0, "{line}");
            if num(tile) == 0 {
                let pixels = num(w) * num(h);
                let (o, d) = (f[op], f[dtype]);
                series.entry(format!("{o} {d} {} frames", num(frames))).or_default().push((pixels, num(bytes)));
                series.entry(format!("{o} {d} {}x{}", num(w), num(h))).or_default().push((num(frames), num(bytes)));
            }
            n += 1;
        }
        assert!(n >= 12, "{family}: {n} rows");
        for (key, mut rows) in series {
            rows.sort();
            for pair in rows.windows(2) {
                // Equal work may trace equal; more work never traces less.
                if pair[1].0 > pair[0].0 {
                    assert!(pair[1].1 >= pair[0].1, "{family} {key}: {:?} then {:?}", pair[0], pair[1]);
                }
            }
        }
    }
}

/// The fields of one CSV line, quotes as Python's csv module writes them.
fn csv_fields(line: &str) -> Vec<String> {
    let (mut out, mut field, mut quoted, mut chars) = (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    out.push(field);
    out
}

/// `python3 -m harness trace` without torch says what to install and exits
/// 2; a raw diffusers config needs a family name, and a name is checked.
#[test]
fn the_trace_says_what_it_needs() {
    let out = std::process::Command::new("python3")
        .args(["-S", "-m", "harness", "trace", "--all"])
        .current_dir(repo())
        .output()
        .expect("python3 is needed for the harness tests");
    // Without site-packages (-S) there is no torch, whatever the machine has.
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tracing needs torch") && err.contains("no GPU"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("config.json");
    std::fs::write(&raw, r#"{"_class_name": "AutoencoderKL", "latent_channels": 4}"#).unwrap();
    let check = format!(
        "from harness import configs\n\
         doc = configs.from_file({raw:?}, 'my-vae')\n\
         assert doc['family'] == 'my-vae' and doc['vae'] == 'my-vae' and doc['config']['latent_channels'] == 4, doc\n\
         for family, words in [(None, 'name the family'), ('a/b', \"letters, digits\")]:\n\
         \x20   try:\n\
         \x20       configs.from_file({raw:?}, family)\n\
         \x20       raise SystemExit('accepted %r' % family)\n\
         \x20   except ValueError as e:\n\
         \x20       assert words in str(e), e\n\
         print('ok')\n",
        raw = raw.display().to_string()
    );
    let out = std::process::Command::new("python3").args(["-S", "-c", &check]).current_dir(repo()).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok", "{}", String::from_utf8_lossy(&out.stderr));
}

/// The next GPU session's plan (issue 41): what it measures, and that it
/// fits eight minutes of one GPU by its count of children and measurements
/// (run on the simulated device for the count).
#[test]
fn the_next_gpu_plan_measures_first_use_video_and_the_unmeasured_families_in_eight_minutes() {
    let plan = repo().join("harness/plans/next-gpu.toml").display().to_string();
    let dry = harness(&["--plan", &plan, "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", String::from_utf8_lossy(&dry.stderr));
    let text = String::from_utf8(dry.stdout).unwrap();
    let estimate = text.lines().find(|l| l.contains("child processes, about")).unwrap();
    let seconds: f64 = estimate.split("about ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(seconds <= 480.0, "{estimate}");
    let keys: Vec<&str> = text.lines().filter(|l| !l.contains(' ')).collect();
    // Per CUDA allocator, the same op fresh and warm at three sizes.
    for allocator in ["native", "expandable_segments", "cudaMallocAsync"] {
        for size in ["512x512", "1024x1024", "1536x1536"] {
            for warm in ["", "-warm"] {
                let key = format!("sdxl-decode-fp16-{size}-b1-{allocator}{warm}-r1");
                assert!(keys.contains(&key.as_str()), "{key}");
            }
        }
    }
    // Each video family at two sizes x two clip lengths, untiled and with
    // the host's tiles (LTX-2 at canvases its class's walk runs on:
    // `--check-meta` in CI's torch job runs every point).
    for family in ["wan21", "wan22", "hunyuanvideo", "cogvideox", "ltx2"] {
        let untiled = keys.iter().filter(|k| k.starts_with(&format!("{family}-decode-bf16-"))).count();
        let tiled = keys.iter().filter(|k| k.starts_with(&format!("{family}-decode-thost-"))).count();
        assert_eq!((untiled, tiled), (4, 4), "{family}");
    }
    for family in ["sd3", "cogview4"] {
        assert_eq!(keys.iter().filter(|k| k.starts_with(&format!("{family}-"))).count(), 6, "{family}");
    }
    // On the simulated device: every point answers (or is out of the fake
    // card's memory), fresh first and warm after, in the CSV vramfit reads.
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("next.csv").display().to_string();
    let out = harness(&["--device", "fake", "--plan", &plan, "--out", &csv]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    let written: usize =
        said.lines().last().unwrap().split(": ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    let oom = std::fs::read_to_string(format!("{csv}.oom.jsonl")).unwrap_or_default().lines().count();
    assert_eq!(written + oom, keys.len(), "{said}");
    let root = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("fits"), &root.path().join("fits"));
    ingest_simulated(root.path(), &csv);
    let find = |id: &str| stored_point(root.path(), id);
    let fresh = find("h-fake/sdxl-decode-fp16-1024x1024-b1-native-r1");
    let warm = find("h-fake/sdxl-decode-fp16-1024x1024-b1-native-warm-r1");
    assert_eq!((fresh["context"].as_str(), warm["context"].as_str()), (Some("fresh"), Some("warm")));
    // The simulated card's first use rides on the fresh driver delta only.
    let gap = |p: &serde_json::Value| p["driver_bytes"].as_u64().unwrap() - p["reserved_bytes"].as_u64().unwrap();
    assert_eq!(gap(&fresh) - gap(&warm), 166 << 20);
    let clip = find("h-fake/wan21-decode-thost-bf16-832x480x25-b1-native-warm-r1");
    assert_eq!((clip["frames"].as_u64(), clip["tile"].as_u64()), (Some(25), Some(256)));
}

/// The sides (square, in pixels) a generated plan measures for one key.
fn plan_sides(plan: &toml::Value, family: &str, op: &str, dtype: &str, tile: i64) -> Vec<u64> {
    let grids = plan["grid"].as_array().unwrap();
    let g = grids
        .iter()
        .find(|g| {
            g["families"][0].as_str() == Some(family)
                && g["ops"][0].as_str() == Some(op)
                && g["dtypes"][0].as_str() == Some(dtype)
                && g.get("tiles").map_or(0, |t| t[0].as_integer().unwrap()) == tile
        })
        .unwrap_or_else(|| panic!("no grid for {family} {op} {dtype} tile {tile}: {plan}"));
    assert_eq!(g["process"].as_str(), Some("grid"));
    g["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let (w, h) = s.as_str().unwrap().split_once('x').unwrap();
            assert_eq!(w, h, "square sizes");
            w.parse::<u64>().unwrap()
        })
        .collect()
}

/// `python3 -m harness gaps` turns each under-reserved held-out point of
/// crossval's JSON into sizes where it sat: inside the stretch of a miss
/// between two kept sizes, beyond a miss past the largest, under a miss
/// below the smallest (each with the missed size and the kept ones either
/// side); what the harness cannot measure is named, not guessed. The plan
/// it writes runs on the simulated device and its rows ingest.
#[test]
fn harness_gaps_plans_sizes_where_crossval_missed() {
    let cv = vramfit().current_dir(data_root()).args(["--format", "json", "crossval"]).output().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cv_path = write(dir.path(), "cv.json", &String::from_utf8(cv.stdout).unwrap());
    let plan_path = dir.path().join("gaps.toml").display().to_string();
    let out = harness(&["gaps", &cv_path, "--out", &plan_path]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let plan: toml::Value = toml::from_str(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
    let cv: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&cv_path).unwrap()).unwrap();
    let mut kinds = std::collections::BTreeSet::new();
    for line in cv["lines"].as_array().unwrap() {
        for p in line["points"].as_array().unwrap().iter().filter(|p| p["covered"] == false) {
            let family = if line["vae"] == "sd" { "sd15" } else { line["vae"].as_str().unwrap() };
            let sides = plan_sides(&plan, family, line["op"].as_str().unwrap(), line["dtype"].as_str().unwrap(), 0);
            let area: Vec<u64> = sides.iter().map(|s| s * s).collect();
            let held = p["pixels"].as_u64().unwrap();
            assert!(area.iter().any(|a| a.abs_diff(held) * 20 < held), "{} not re-measured: {sides:?}", p["id"]);
            let pos = &p["position"];
            let kind = pos["kind"].as_str().unwrap();
            let inside = |lo: u64, hi: u64| area.iter().any(|&a| a > lo && a < hi && a.abs_diff(held) * 20 >= held);
            match kind {
                "between" => {
                    assert!(inside(pos["below"].as_u64().unwrap(), pos["above"].as_u64().unwrap()), "{sides:?}")
                }
                "past" => assert!(inside(held, u64::MAX), "{sides:?}"),
                "below" => assert!(inside(0, held), "{sides:?}"),
                k => panic!("{k}"),
            }
            kinds.insert(kind.to_string());
        }
    }
    assert!(kinds.contains("between") && kinds.contains("past"), "{kinds:?}");
    let csv = dir.path().join("gaps.csv").display().to_string();
    let run = harness(&["--device", "fake", "--plan", &plan_path, "--out", &csv]);
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let root = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("fits"), &root.path().join("fits"));
    ingest_simulated(root.path(), &csv);
    assert_eq!(stored_point(root.path(), "h-fake/flux2-encode-bf16-896x896-b1-native-warm-r1")["context"], "warm");

    // Made-up misses: a tiled one, one below the smallest size, and two the
    // harness cannot measure (ROCm, a video line).
    let line = |vae: &str, tile: u64, backend: &str, extra: serde_json::Value, pos: serde_json::Value| {
        let mut l = serde_json::json!({"vae": vae, "op": "decode", "tile": tile, "conv_backend": backend,
            "allocator": "native", "os": "any", "dtype": "fp16",
            "points": [{"id": format!("{vae}-{backend}-{tile}"), "pixels": 1_048_576u64, "covered": false,
                        "demand_bytes": 100, "under_bytes": 10, "position": pos}]});
        l.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        l
    };
    let made = serde_json::json!({"by": "size", "lines": [
        line("sd", 512, "cudnn", serde_json::json!({}), serde_json::json!({"kind": "between", "below": 262_144, "above": 4_194_304})),
        line("flux1", 0, "cudnn", serde_json::json!({}), serde_json::json!({"kind": "below", "smallest": 2_359_296})),
        // A stretch too narrow for a multiple of 64 (1024² to 1088²) still gets sizes inside it.
        line("qwen_image", 0, "cudnn", serde_json::json!({}), serde_json::json!({"kind": "between", "below": 1_048_576, "above": 1_183_744})),
        line("flux2", 0, "miopen", serde_json::json!({}), serde_json::json!({"kind": "past", "largest": 589_824})),
        line("wan21", 0, "cudnn", serde_json::json!({"temporal_tile": 16}), serde_json::json!({"kind": "past", "largest": 589_824})),
    ]});
    let made_path = write(dir.path(), "made.json", &made.to_string());
    let out = harness(&["gaps", &made_path]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let plan: toml::Value = toml::from_str(&text).unwrap();
    let tiled = plan_sides(&plan, "sd15", "tiled-decode", "fp16", 512);
    assert!(tiled.iter().any(|s| s * s > 262_144 && s * s < 4_194_304 && *s != 1024), "{tiled:?}");
    assert!(plan_sides(&plan, "flux1", "decode", "fp16", 0).iter().any(|s| *s < 1024));
    let narrow = plan_sides(&plan, "qwen_image", "decode", "fp16", 0);
    assert!(narrow.iter().filter(|s| **s > 1024 && **s < 1088).count() >= 2, "{narrow:?}");
    assert_eq!(plan["grid"].as_array().unwrap().len(), 3, "{text}");
    assert!(text.contains("flux2-miopen-0") && text.contains("CUDA (cuDNN) only"), "{text}");
    assert!(text.contains("wan21-cudnn-0 (wan21/decode/16f/") && text.contains("a video line"), "{text}");

    // Only misses the harness cannot measure: no plan; another fold: refused.
    let only = serde_json::json!({"by": "size", "lines": [made["lines"][3].clone()]});
    let only_path = write(dir.path(), "only.json", &only.to_string());
    let none_path = dir.path().join("none.toml");
    let out = harness(&["gaps", &only_path, "--out", &none_path.display().to_string()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no plan written") && !none_path.exists());
    let tile_path = write(dir.path(), "tile.json", r#"{"by": "tile", "lines": []}"#);
    let out = harness(&["gaps", &tile_path]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--by size"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The shipped gaps plan measures each family inside the stretch its miss
/// named, and fits after the next GPU plan in one ten-minute command.
#[test]
fn the_gaps_plan_fits_beside_the_next_gpu_plan() {
    let seconds = |plan: &str| -> f64 {
        let dry = harness(&["--plan", &repo().join(plan).display().to_string(), "--dry-run"]);
        assert_eq!(dry.status.code(), Some(0), "{}", String::from_utf8_lossy(&dry.stderr));
        let text = String::from_utf8(dry.stdout).unwrap();
        let line = text.lines().find(|l| l.contains("child processes, about")).unwrap().to_string();
        line.split("about ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap()
    };
    let (next, gaps) = (seconds("harness/plans/next-gpu.toml"), seconds("harness/plans/gaps.toml"));
    assert!(next + gaps <= 600.0, "{next} + {gaps}");
    let plan: toml::Value =
        toml::from_str(&std::fs::read_to_string(repo().join("harness/plans/gaps.toml")).unwrap()).unwrap();
    let flux2 = plan_sides(&plan, "flux2", "encode", "bf16", 0);
    assert!(flux2.iter().any(|s| *s > 768 && *s < 1328 && *s != 1024), "{flux2:?}");
    assert!(plan_sides(&plan, "flux1", "encode", "fp32", 0).iter().any(|s| *s > 2048));
    assert!(plan_sides(&plan, "sdxl", "decode", "fp32", 0).iter().any(|s| *s < 512));
}

/// `trace --all --check` proves the shipped traces current from the record
/// of their inputs (`measurements/traced/inputs.json`) without tracing; a
/// change to any one input — a config, any tracer module, a pinned torch or
/// diffusers version, the grid, a config added or removed, a trace edited by
/// hand, the record itself — makes it name the change and trace in full
/// (here, without torch, exit 2 after naming it), exactly as CI traced on
/// every run before.
#[test]
fn the_traces_record_catches_a_change_to_any_input() {
    let fresh = || {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&repo().join("harness"), &dir.path().join("harness"));
        copy_dir(&repo().join("measurements/traced"), &dir.path().join("measurements/traced"));
        dir
    };
    let check = |dir: &Path| {
        std::process::Command::new("python3")
            .args(["-S", "-m", "harness", "trace", "--all", "--check"])
            .current_dir(dir)
            .output()
            .expect("python3 is needed for the harness tests")
    };
    let dir = fresh();
    let out = check(dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("traces up to date"));
    let append = |rel: &str, text: &str| {
        let rel = rel.to_string();
        let text = text.to_string();
        move |d: &Path| {
            let p = d.join(&rel);
            let mut s = std::fs::read_to_string(&p).unwrap();
            s.push_str(&text);
            std::fs::write(p, s).unwrap();
        }
    };
    let replace = |rel: &str, from: &str, to: &str| {
        let (rel, from, to) = (rel.to_string(), from.to_string(), to.to_string());
        move |d: &Path| {
            let p = d.join(&rel);
            let s = std::fs::read_to_string(&p).unwrap();
            assert!(s.contains(&from), "{rel} has no {from:?}");
            std::fs::write(p, s.replacen(&from, &to, 1)).unwrap();
        }
    };
    type Change = Box<dyn Fn(&Path)>;
    let changes: Vec<(&str, Change, &str)> = vec![
        ("a config", Box::new(append("harness/configs/sd15.json", " ")), "config sd15.json: changed"),
        ("trace.py", Box::new(append("harness/trace.py", "\n# a change\n")), "tracer's trace.py: changed"),
        ("measure.py", Box::new(append("harness/measure.py", "\n# a change\n")), "tracer's measure.py: changed"),
        ("configs.py", Box::new(append("harness/configs.py", "\n# a change\n")), "tracer's configs.py: changed"),
        (
            "the torch pin",
            Box::new(replace("harness/preflight.py", "TORCH_TRACED = \"2.11.0\"", "TORCH_TRACED = \"2.12.0\"")),
            "torch 2.12.0",
        ),
        (
            "the diffusers pin",
            Box::new(replace("harness/preflight.py", "DIFFUSERS_TESTED = \"0.42.1\"", "DIFFUSERS_TESTED = \"0.43.0\"")),
            "diffusers 0.43.0",
        ),
        (
            "the grid",
            Box::new(replace("harness/trace.py", "VIDEO_FRAMES = (1, 17, 49, 81)", "VIDEO_FRAMES = (1, 17, 49, 97)")),
            "the grid changed",
        ),
        (
            "a config added",
            Box::new(|d: &Path| {
                std::fs::copy(d.join("harness/configs/sd15.json"), d.join("harness/configs/sd15b.json"))
                    .map(|_| ())
                    .unwrap()
            }),
            "config sd15b.json: added",
        ),
        (
            "a config removed",
            Box::new(|d: &Path| std::fs::remove_file(d.join("harness/configs/mochi.json")).unwrap()),
            "config mochi.json: removed",
        ),
        ("a trace edited", Box::new(append("measurements/traced/flux1.csv", "")), ""),
        (
            "a trace edited by hand",
            Box::new(replace("measurements/traced/flux1.csv", ",1,1,", ",1,2,")),
            "flux1.csv: not the file the trace made",
        ),
        (
            "a trace removed",
            Box::new(|d: &Path| std::fs::remove_file(d.join("measurements/traced/sd3.csv")).unwrap()),
            "sd3.csv: missing",
        ),
        (
            "the record's digest",
            Box::new(replace("measurements/traced/inputs.json", "\"digest\": \"", "\"digest\": \"0")),
            "its digest is not the digest of its inputs",
        ),
        (
            "the record removed",
            Box::new(|d: &Path| std::fs::remove_file(d.join("measurements/traced/inputs.json")).unwrap()),
            "no readable record",
        ),
    ];
    for (what, change, named) in changes {
        let dir = fresh();
        change(dir.path());
        let out = check(dir.path());
        let err = String::from_utf8_lossy(&out.stderr);
        if named.is_empty() {
            // Appending nothing changes nothing: still proved current.
            assert_eq!(out.status.code(), Some(0), "{what}: {err}");
            continue;
        }
        // Without torch (-S) the full trace cannot run: exit 2, after the change is named.
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(err.contains("changed: ") && err.contains(named), "{what}: {err}");
        assert!(err.contains("tracing needs torch"), "{what}: {err}");
    }
}

/// The allocator model (`harness/allocator.py`): every rule of PyTorch's
/// caching allocator it replays holds on its hand-computed stream, with the
/// machine's python3 and no torch.
#[test]
fn the_allocator_model_holds_every_rule_on_its_hand_computed_streams() {
    let out = std::process::Command::new("python3")
        .args(["-S", "-m", "harness.allocator"])
        .current_dir(repo())
        .output()
        .expect("python3");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("every rule holds"), "{text}");
}

/// Each rule's test catches its own mistake: a model with a wrong
/// constant, a best fit turned worst fit, coalescing turned off, or
/// expandable segments growing by small pages fails the streams that
/// name that rule.
#[test]
fn the_allocator_selftest_catches_a_wrong_rule() {
    let mistakes = [
        ("a.SMALL_SIZE = 2 * a.MiB", "1 MiB"),
        ("a.LARGE_BUFFER = 2 * a.MiB", "20 MiB"),
        ("a.MIN_BLOCK = 256", "512"),
        ("a.Native._free_block = lambda self, pool, size: next((pool.blocks[k] for k in reversed(pool.keys) if k[0] >= size), None)", "best fit"),
        ("a.Native.free = lambda self, b: (setattr(self, 'allocated', self.allocated - b.size), setattr(b, 'free', True), b.pool.insert(b))", "merge"),
        ("a.ASYNC['pages'] = (20 * a.MiB, 20 * a.MiB)", "cudaMallocAsync"),
    ];
    for (mistake, named) in mistakes {
        let script = format!("import harness.allocator as a\n{mistake}\nimport sys\np = a.selftest()\nprint('\\n'.join(p))\nsys.exit(1 if p else 0)");
        let out =
            std::process::Command::new("python3").args(["-S", "-c", &script]).current_dir(repo()).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(!out.status.success(), "{mistake}: not caught");
        assert!(
            text.to_lowercase().contains(&named.to_lowercase()),
            "{mistake}: caught, but no problem names '{named}': {text}"
        );
    }
}
