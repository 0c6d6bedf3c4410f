//! `vramfit_vae.Observer` and `vramfit report --observed` (docs/hosts.md,
//! "Observe"): a host-style loop of ops through the drop-ins, observed on
//! the harness's simulated device (`harness/fake.py`, `Cuda`), writes rows
//! `ingest` stores unchanged, from several processes at once; an
//! under-reserved op is logged once; the file is bounded; without a device
//! nothing is recorded and the op's output is the same.

use crate::common::*;
use serde_json::{json, Value};
use std::fs;
use std::path::Path;

/// Runs `tests/python/observe_host.py` with `args`: its JSON answer and its log.
fn host(args: &Value) -> (Value, String) {
    let out = host_command(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let answer = serde_json::from_slice(&out.stdout).unwrap();
    (answer, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn host_command(args: &Value) -> std::process::Command {
    let mut c = python();
    c.arg(repo().join("tests/python/observe_host.py")).arg(args.to_string()).env("VRAMFIT_REPO", repo());
    c
}

/// `vramfit ingest --allow-simulated FILE` into `root`, answering in JSON.
fn ingest_simulated(root: &Path, file: &Path) -> std::process::Output {
    vramfit()
        .arg("--root")
        .arg(root)
        .args(["--format", "json", "ingest", "--allow-simulated"])
        .arg(file)
        .output()
        .unwrap()
}

/// `vramfit report --observed FILE --allow-simulated` on `root`, answering in JSON.
fn report_simulated(root: &Path, file: &Path) -> std::process::Output {
    vramfit()
        .arg("--root")
        .arg(root)
        .args(["--format", "json", "report", "--allow-simulated", "--observed"])
        .arg(file)
        .output()
        .unwrap()
}

/// The rows of a CSV file (header first), split on commas outside quotes.
fn rows(path: &Path) -> Vec<Vec<String>> {
    let text = fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'), "a torn last row");
    text.lines()
        .map(|l| {
            let (mut fields, mut cur, mut quoted) = (Vec::new(), String::new(), false);
            for c in l.chars() {
                match c {
                    '"' => quoted = !quoted,
                    ',' if !quoted => fields.push(std::mem::take(&mut cur)),
                    _ => cur.push(c),
                }
            }
            fields.push(cur);
            fields
        })
        .collect()
}

#[test]
fn four_host_processes_write_rows_that_ingest_stores_unchanged() {
    let dir = scratch();
    let file = dir.path().join("observed.csv");
    let ops = 24;
    // Four hosts at once, one file: none lost, none torn.
    let children: Vec<_> = (0..4)
        .map(|_| {
            host_command(&json!({"out": file, "ops": ops}))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["counts"]["rows"], ops, "{v}");
        assert_eq!(v["counts"]["under"], 0, "{v}");
    }
    let table = rows(&file);
    assert_eq!(table.len(), 1 + 4 * ops, "one header, one row per op");
    let header = &table[0];
    assert_eq!(header, &vramfit::observe::COLUMNS.map(str::to_string).to_vec());
    assert!(table[1..].iter().all(|r| r.len() == header.len()), "a torn row");
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    // Each process's first decode and first encode are fresh, the rest warm.
    let fresh = table[1..].iter().filter(|r| r[col("context")] == "fresh").count();
    assert_eq!(fresh, 4 * 2);
    assert!(table[1..].iter().all(|r| ["fresh", "warm"].contains(&r[col("context")].as_str())));
    // Nothing about the user: the model column is the family.
    assert!(table[1..].iter().all(|r| r[col("model")] == "sd" && r[col("vae")] == "sd"));

    // A simulated device's rows are refused by a plain ingest, taken by --allow-simulated.
    let root = dir.path();
    let plain = vramfit().arg("--root").arg(root).arg("ingest").arg(&file).output().unwrap();
    assert_eq!(plain.status.code(), Some(2), "{}", String::from_utf8_lossy(&plain.stdout));
    let ingest = ingest_simulated(root, &file);
    assert_eq!(ingest.status.code(), Some(0), "{}", String::from_utf8_lossy(&ingest.stderr));
    let listed =
        vramfit().arg("--root").arg(root).args(["--format", "json", "points", "--vae", "sd"]).output().unwrap();
    let points: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let stored: std::collections::BTreeMap<String, &Value> =
        points["points"].as_array().unwrap().iter().map(|p| (p["id"].as_str().unwrap().to_string(), p)).collect();
    // Every row stored as written: its id, context and three figures.
    for r in &table[1..] {
        let p = stored.get(&r[col("id")]).unwrap_or_else(|| panic!("{} not stored", r[col("id")]));
        assert_eq!(p["context"], r[col("context")]);
        for f in ["reserved_bytes", "allocated_bytes", "driver_bytes"] {
            assert_eq!(p[f].as_u64().unwrap().to_string(), r[col(f)], "{f}");
        }
        assert_eq!(p["metadata"]["reservation_bytes"], r[col("reservation_bytes")].as_str());
    }
    // Ingesting the same file again adds nothing.
    let again = ingest_simulated(root, &file);
    let said: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(said["files"][0]["added"], 0, "{said}");
}

#[test]
fn an_under_reserved_op_is_logged_once_with_its_figures() {
    let dir = scratch();
    let file = dir.path().join("observed.csv");
    let (v, log) = host(&json!({"out": file, "ops": 6, "spike": 2, "extra": 8_000_000_000u64}));
    assert_eq!(v["counts"]["under"], 1, "{v}");
    assert_eq!(v["counts"]["covered"], 5, "{v}");
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("under-reserved")).collect();
    assert_eq!(lines.len(), 1, "{log}");
    let table = rows(&file);
    let col = |name: &str| table[0].iter().position(|h| h == name).unwrap();
    let spike = &table[3];
    let demand: u64 = ["reserved_bytes", "allocated_bytes", "driver_bytes"]
        .iter()
        .map(|f| spike[col(f)].parse::<u64>().unwrap())
        .max()
        .unwrap();
    let reserved: u64 = spike[col("reservation_bytes")].parse().unwrap();
    assert!(demand > reserved);
    // The key, both figures and their ratio, rounded up.
    let ratio = vramfit::observe::ratio_text(demand, reserved);
    assert!(lines[0].contains("sd/decode/0/cudnn/native/any/fp16"), "{}", lines[0]);
    assert!(lines[0].contains(&format!("took {demand} B, {reserved} B were reserved ({ratio}")), "{}", lines[0]);

    // `report --observed` names it, and exits 1.
    let out = report_simulated(dir.path(), &file);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["rows"], 6);
    assert_eq!(r["under"].as_array().unwrap().len(), 1);
    assert_eq!(r["under"][0]["id"], spike[col("id")].as_str());
    assert_eq!(r["under"][0]["demand_bytes"], demand);
    // Coverage per key, device and context: every op counted once.
    let groups = r["groups"].as_array().unwrap();
    assert_eq!(groups.iter().map(|g| g["rows"].as_u64().unwrap()).sum::<u64>(), 6);
    assert_eq!(groups.iter().map(|g| g["covered"].as_u64().unwrap()).sum::<u64>(), 5);
    assert!(groups.iter().all(|g| g["device"] == "fake"));
    // The spike is above the shipped decode line: it would change it, and it is named.
    let change = r["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["key"] == "sd/decode/0/cudnn/native/any/fp16")
        .unwrap_or_else(|| panic!("{}", r["changes"]));
    assert!(change["rows"].as_array().unwrap().iter().any(|id| *id == spike[col("id")].as_str()), "{change}");
    assert_ne!(change["before"], change["after"]);
    // Without --allow-simulated every row is refused, and says why.
    let out = vramfit()
        .arg("--root")
        .arg(dir.path())
        .args(["--format", "json", "report", "--observed"])
        .arg(&file)
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let refused = r["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 6);
    assert!(refused.iter().all(|x| x["why"].as_str().unwrap().contains("simulated device")));
    assert!(r["changes"].as_array().unwrap().is_empty());
}

/// The same answers from the same rows in any order and from any spelling of the root.
#[test]
fn report_observed_is_the_same_in_any_row_order() {
    let dir = scratch();
    let file = dir.path().join("observed.csv");
    host(&json!({"out": file, "ops": 8, "spike": 3, "extra": 4_000_000_000u64}));
    let text = fs::read_to_string(&file).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let header = lines.remove(0);
    lines.reverse();
    let reversed = dir.path().join("reversed.csv");
    fs::write(&reversed, format!("{header}\n{}\n", lines.join("\n"))).unwrap();
    let report = |f: &Path| {
        let out = vramfit()
            .current_dir(dir.path())
            .args(["--root", ".", "--format", "json", "report", "--allow-simulated", "--observed"])
            .arg(f.file_name().unwrap())
            .output()
            .unwrap();
        let mut v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["files"] = Value::Null;
        v
    };
    assert_eq!(report(&file), report(&reversed));
}

#[test]
fn the_file_is_bounded_and_a_torn_row_is_cut() {
    let dir = scratch();
    let file = dir.path().join("observed.csv");
    // A row torn by a host that died mid-write: cut before the next append.
    fs::write(&file, format!("{}o-fake/torn,half a row", vramfit::observe::header())).unwrap();
    let bound = 4096;
    let (v, log) = host(&json!({"out": file, "ops": 12, "max_bytes": bound}));
    let written = v["counts"]["rows"].as_u64().unwrap();
    let dropped = v["counts"]["dropped"].as_u64().unwrap();
    assert!(written >= 1 && dropped >= 1 && written + dropped == 12, "{v}");
    assert!(fs::metadata(&file).unwrap().len() <= bound);
    assert_eq!(log.lines().filter(|l| l.contains("would pass its bound")).count(), 1, "{log}");
    let table = rows(&file);
    assert_eq!(table.len() as u64, 1 + written);
    assert!(table.iter().all(|r| !r[0].contains("torn")));
    let ingest =
        vramfit().arg("--root").arg(dir.path()).args(["ingest", "--allow-simulated"]).arg(&file).output().unwrap();
    assert_eq!(ingest.status.code(), Some(0), "{}", String::from_utf8_lossy(&ingest.stderr));
}

/// A file the host cannot write costs the rows, never the op: the ops run,
/// the rows are counted as dropped, and the log says why once.
#[test]
fn a_file_that_cannot_be_written_never_fails_the_op() {
    let dir = scratch();
    let file = dir.path().join("no-such-folder/observed.csv");
    let (v, log) = host(&json!({"out": file, "ops": 4}));
    assert_eq!(v["outputs"].as_array().unwrap().len(), 4);
    assert_eq!(v["counts"]["dropped"], 4, "{v}");
    assert_eq!(v["counts"]["rows"], 0, "{v}");
    let said: Vec<&str> = log.lines().filter(|l| l.contains("cannot be written")).collect();
    assert_eq!(said.len(), 1, "{log}");
    assert!(said[0].contains("No such file or directory"), "{log}");
}

#[test]
fn without_a_device_observe_records_nothing_says_so_once_and_changes_no_output() {
    let dir = scratch();
    let file = dir.path().join("observed.csv");
    // No torch at all, and a torch whose torch.cuda is not available (CPU, MPS).
    for cpu in [json!(true), json!("torch-cpu")] {
        let (with, log) = host(&json!({"out": file, "ops": 5, "cpu": cpu}));
        let (without, _) = host(&json!({"ops": 5, "cpu": cpu, "observe": false}));
        assert_eq!(with["outputs"], without["outputs"]);
        assert_eq!(with["counts"]["unobserved"], 5, "{with}");
        assert_eq!(with["counts"]["rows"], 0);
        assert!(!file.exists(), "a row was written without a device");
        assert_eq!(log.lines().filter(|l| l.contains("no CUDA or ROCm device")).count(), 1, "{log}");
    }
    // On the simulated device the op's output is the same with and without it.
    let (on, _) = host(&json!({"out": file, "ops": 5}));
    let (off, _) = host(&json!({"ops": 5, "observe": false}));
    assert_eq!(on["outputs"], off["outputs"]);
}

/// What a host can get wrong is refused with words: no reservation, a
/// context other than `generation`, a drop-in's `observe=` that is not an
/// Observer; `context="generation"` is written as said, and `batch=`
/// re-prices the answer for the items the host runs at once.
#[test]
fn the_observer_refuses_what_it_cannot_record() {
    let script = r#"
import json, sys, os
sys.path.insert(0, os.environ["VRAMFIT_REPO"])
from harness import fake, configs
import vramfit_vae
from vramfit_vae.hosts import comfyui
cuda = fake.Cuda()
out = sys.argv[1]
o = vramfit_vae.Observer(out, device=cuda)
said = []
for bad in [lambda: o(), lambda: o(vramfit_vae.reserve("sdxl", "decode", 512, 512, dtype="fp16"), context="warm"),
            lambda: comfyui.memory_used_decode("sdxl", [1, 4, 64, 64], "torch.float16", observe=object())]:
    try:
        bad()
        said.append("accepted")
    except (ValueError, TypeError) as e:
        said.append(type(e).__name__ + ": " + str(e))
one = vramfit_vae.reserve("sdxl", "decode", 512, 512, dtype="fp16")
four = one.with_batch(4)
with o(one):
    pass  # an op the device saw nothing of: covered, no row
with o(one, context="generation", batch=4):
    cuda.run(configs.load("sdxl")["config"], "decode", "fp16", 512, 512, batch=4)
# ComfyUI: one estimate, then its batches decoded in chunks, each observed under the drop-in's answer.
comfyui.memory_used_decode("sdxl", [6, 4, 64, 64], "torch.float16", observe=o)
for chunk in (4, 2):
    with o(batch=chunk):
        cuda.run(configs.load("sdxl")["config"], "decode", "fp16", 512, 512, batch=chunk)
print(json.dumps({"said": said, "one": one.bytes, "four": four.bytes, "counts": o.counts}))
"#;
    let dir = scratch();
    let file = dir.path().join("o.csv");
    let out = python().args(["-c", script]).arg(&file).env("VRAMFIT_REPO", repo()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let said: Vec<&str> = v["said"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(said[0].starts_with("ValueError: observe: no reservation"), "{said:?}");
    assert!(said[1].starts_with("ValueError: context 'warm'"), "{said:?}");
    assert!(said[2].starts_with("TypeError: observe: expected a vramfit_vae.Observer"), "{said:?}");
    assert!(v["four"].as_u64().unwrap() > v["one"].as_u64().unwrap());
    assert_eq!((v["counts"]["covered"].as_u64(), v["counts"]["rows"].as_u64()), (Some(4), Some(3)), "{v}");
    let table = rows(&file);
    let col = |name: &str| table[0].iter().position(|h| h == name).unwrap();
    assert_eq!(table[1][col("context")], "generation");
    assert_eq!(table[1][col("batch")], "4");
    assert_eq!(table[1][col("reservation_bytes")], v["four"].to_string());
    // The two chunks: 4 items under the 4-item answer, then 2.
    assert_eq!([&table[2][col("batch")], &table[3][col("batch")]], ["4", "2"]);
    assert_eq!(table[2][col("reservation_bytes")], v["four"].to_string());
    assert_eq!([&table[2][col("context")], &table[3][col("context")]], ["warm", "warm"]);
}

/// The prepared GPU check (`python3 -m harness observe`) on the simulated
/// device, then the maintainer's walk-through on its rows: `report
/// --observed`, `ingest`.
#[test]
fn the_prepared_gpu_check_runs_its_walk_through_on_the_simulated_device() {
    let dir = scratch();
    let file = dir.path().join("observed.csv");
    let out = python()
        .args(["-m", "harness", "observe", "--device", "fake", "--out"])
        .arg(&file)
        .current_dir(repo())
        .env("PYTHONPATH", repo())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    let counts: Value = serde_json::from_str(said.lines().next().unwrap()).unwrap();
    assert_eq!(counts["rows"], 6, "{said}");
    let table = rows(&file);
    let col = |name: &str| table[0].iter().position(|h| h == name).unwrap();
    let contexts: Vec<&str> = table[1..].iter().map(|r| r[col("context")].as_str()).collect();
    assert_eq!(contexts, ["fresh", "warm", "warm", "warm", "warm", "warm"]);
    let report = report_simulated(dir.path(), &file);
    let r: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(r["rows"], 6, "{r}");
    let ingest =
        vramfit().arg("--root").arg(dir.path()).args(["ingest", "--allow-simulated"]).arg(&file).output().unwrap();
    assert_eq!(ingest.status.code(), Some(0), "{}", String::from_utf8_lossy(&ingest.stderr));
}

/// The platform read off the host's own torch (already imported; the
/// package never imports it): a ROCm build's HIP and MIOpen versions, the
/// allocator from `PYTORCH_HIP_ALLOC_CONF` as PyTorch reads it on ROCm.
/// A stand-in `torch` module plays the host's, with the harness's card.
#[test]
fn the_row_names_the_hosts_torch_platform_and_allocator() {
    let script = r#"
import json, sys, os, types
sys.path.insert(0, os.environ["VRAMFIT_REPO"])
from harness import fake, configs
torch = types.ModuleType("torch")
torch.__version__ = "2.11.0+rocm6.4"
torch.version = types.SimpleNamespace(hip="6.4.43482", cuda=None)
torch.backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(is_available=lambda: True, version=lambda: 3004000))
card = fake.Cuda()
card.facts = None  # the host's torch.cuda gives no facts of its own
card.get_device_name = lambda: "AMD Radeon PRO W7900"
torch.cuda = card
sys.modules["torch"] = torch
import vramfit_vae
o = vramfit_vae.Observer(sys.argv[1])
need = vramfit_vae.reserve("flux1", "decode", 1024, 1024, dtype="bf16", backend="miopen")
with o(need):
    card.run(configs.load("flux1")["config"], "decode", "bf16", 1024, 1024)
print(json.dumps(o.counts))
"#;
    let dir = scratch();
    let file = dir.path().join("o.csv");
    let out = python()
        .args(["-c", script])
        .arg(&file)
        .env("VRAMFIT_REPO", repo())
        .env("PYTORCH_HIP_ALLOC_CONF", "expandable_segments:True")
        .env_remove("PYTORCH_CUDA_ALLOC_CONF")
        .env_remove("PYTORCH_ALLOC_CONF")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = rows(&file);
    let col = |name: &str| table[0].iter().position(|h| h == name).unwrap();
    let r = &table[1];
    assert_eq!(r[col("device")], "AMD Radeon PRO W7900");
    assert_eq!(r[col("torch")], "2.11.0+rocm6.4");
    assert_eq!(r[col("conv_backend")], "miopen");
    assert_eq!(r[col("accelerator")], "HIP 6.4.43482");
    assert_eq!(r[col("conv_library")], "MIOpen 3004000");
    assert_eq!(r[col("allocator")], "expandable_segments");
    assert_eq!(r[col("allocator_conf")], "expandable_segments:True");
    assert!(r[col("id")]
        .starts_with("o-amd-radeon-pro-w7900/flux1-decode-bf16-1024x1024-b1-miopen-expandable_segments-fresh-"));
}

/// The rows the policy would refuse, each with why: one listed under
/// `[[exclude]]` (stored, excluded, and sent again), and the rows of a line they would push past the ratio
/// bound (a spike far above the line raises it until an existing point is
/// over-reserved by more than 1.3×, which `fit` refuses).
#[test]
fn report_observed_names_the_rows_the_policy_would_refuse() {
    let dir = scratch();
    let file = dir.path().join("observed.csv");
    host(&json!({"out": file, "ops": 3, "spike": 2, "extra": 40_000_000_000u64}));
    let table = rows(&file);
    let col = |name: &str| table[0].iter().position(|h| h == name).unwrap();
    let (excluded, spike) = (table[1][col("id")].clone(), table[3][col("id")].clone());
    // A row a maintainer took, then excluded, and a host sent again: the
    // policy names only stored points, so it is ingested first.
    let text = fs::read_to_string(&file).unwrap();
    let first = dir.path().join("first.csv");
    fs::write(&first, text.lines().take(2).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    assert_eq!(ingest_simulated(dir.path(), &first).status.code(), Some(0));
    let policy = dir.path().join("fits/policy.toml");
    let mut text = fs::read_to_string(&policy).unwrap();
    text.push_str(&format!("\n[[exclude]]\nid = \"{excluded}\"\nreason = \"a test: this op ran beside another\"\n"));
    fs::write(&policy, text).unwrap();
    let out = report_simulated(dir.path(), &file);
    let r: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    let refused = r["refused"].as_array().unwrap();
    let why = |id: &str| -> Vec<String> {
        refused.iter().filter(|x| x["id"] == id).map(|x| x["why"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(why(&excluded), ["listed under [[exclude]] in fits/policy.toml: a test: this op ran beside another"]);
    let spiked = why(&spike);
    assert_eq!(spiked.len(), 1, "{refused:?}");
    assert!(spiked[0].contains("over-reserve point") && spiked[0].contains("1.30 bound"), "{spiked:?}");
    // The excluded row changes no line; the spike does.
    let changes = r["changes"].as_array().unwrap();
    assert!(changes.iter().all(|c| c["rows"].as_array().unwrap().iter().all(|id| *id != excluded.as_str())));
    assert!(changes.iter().any(|c| c["rows"].as_array().unwrap().iter().any(|id| *id == spike.as_str())));
    // Once ingested, the rows are stored: sent again, they add nothing and change no line.
    assert_eq!(ingest_simulated(dir.path(), &file).status.code(), Some(0));
    let again = report_simulated(dir.path(), &file);
    let r: Value =
        serde_json::from_slice(&again.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&again.stderr)));
    assert_eq!(r["stored"], 2, "{r}");
    assert!(r["changes"].as_array().unwrap().is_empty(), "{r}");
}
