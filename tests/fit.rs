//! `vramfit fit` and `vramfit emit`: the shipped coefficients cover every
//! point, reproduce byte for byte, and show what changed.

use crate::common::*;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

fn points_by_id(root: &std::path::Path) -> BTreeMap<String, serde_json::Value> {
    let store: serde_json::Value =
        serde_json::from_slice(&fs::read(root.join("measurements/vae.json")).unwrap()).unwrap();
    store["points"].as_array().unwrap().iter().map(|p| (p["id"].as_str().unwrap().to_string(), p.clone())).collect()
}

fn centi(slope: &str) -> u128 {
    let (i, f) = slope.split_once('.').unwrap();
    assert_eq!(f.len(), 2, "two decimals: {slope}");
    i.parse::<u128>().unwrap() * 100 + f.parse::<u128>().unwrap()
}

/// The evaluation of docs/DESIGN.md, "The exact fit", written again here from the spec.
fn reserve(slope: &str, base_mib: u64, x: u64) -> u128 {
    (centi(slope) * x as u128).div_ceil(100) + base_mib as u128 * 1_048_576
}

#[test]
fn every_fitted_line_covers_its_points_with_the_margin_at_the_support() {
    let out = vramfit().arg("--root").arg(data_root()).args(["--format", "json", "fit"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let j = json_of(&out);
    let pts = points_by_id(&data_root());
    let mut fitted = 0;
    for l in j["lines"].as_array().unwrap() {
        if l["kind"] != "fitted" {
            assert!(l["slope"].is_null() && l["base_mib"].is_null());
            continue;
        }
        fitted += 1;
        let slope = l["slope"].as_str().unwrap();
        let base = l["base_mib"].as_u64().unwrap();
        let support: Vec<&str> = l["support"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
        assert!(!support.is_empty() && support.len() <= 2);
        for id in l["points"].as_array().unwrap() {
            let p = &pts[id.as_str().unwrap()];
            let x = p["pixels"].as_u64().unwrap();
            let y = p["demand_bytes"].as_u64().unwrap() as u128;
            let r = reserve(slope, base, x);
            assert!(r >= y, "{id}: reserve {r} < demand {y}");
            if support.contains(&id.as_str().unwrap()) {
                assert!(r * 100 >= y * 105, "{id}: support point below 1.05× ({r} vs {y})");
            }
        }
    }
    assert_eq!(fitted, 18);
}

#[test]
fn the_table_shows_the_json_numbers() {
    let json = json_of(&vramfit().arg("--root").arg(data_root()).args(["--format", "json", "fit"]).output().unwrap());
    let table = stdout_of(&vramfit().arg("--root").arg(data_root()).arg("fit").output().unwrap());
    for l in json["lines"].as_array().unwrap().iter().filter(|l| l["kind"] == "fitted") {
        let key = key_of(l);
        // Through a pipe the table is plain columns (no cell holds a space here).
        let row =
            table.lines().find(|r| r.starts_with(&format!("{key} "))).unwrap_or_else(|| panic!("{key} not in table"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[4], l["slope"].as_str().unwrap(), "{key} slope");
        assert_eq!(cells[5], l["base_mib"].to_string(), "{key} base");
        assert_eq!(cells[6], l["max_ratio"].as_str().unwrap(), "{key} max ratio");
        assert_eq!(cells[2], l["points"].as_array().unwrap().len().to_string(), "{key} points");
    }
    assert!(table.contains("Not fitted:"));
    assert!(table.contains("sd/decode/0/cudnn/cudaMallocAsync/any/fp16"));
}

#[test]
fn the_sdxl_fp16_decode_line_is_the_readme_example() {
    let j = json_of(&vramfit().arg("--root").arg(data_root()).args(["--format", "json", "fit"]).output().unwrap());
    let l = j["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| {
            l["vae"] == "sd"
                && l["op"] == "decode"
                && l["tile"] == 0
                && l["allocator"] == "native"
                && l["dtype"] == "fp16"
        })
        .unwrap();
    // Edge 1024² → 1536² of the SDXL points: (9574 − 4274) MiB over 1 310 720 px
    // = 4240 B/px, base 34 MiB; × 1.05 rounded up: 4452.00 and 36.
    assert_eq!(l["support"][0], "i7785061-sdxl-decode-fp16-1024x1024");
    assert_eq!(l["support"][1], "i7785061-sdxl-decode-fp16-1536x1536");
    assert_eq!(l["slope"], "4452.00");
    assert_eq!(l["base_mib"], 36);
}

#[test]
fn emit_reproduces_the_shipped_file_and_check_passes() {
    let root = scratch();
    let shipped = fs::read(data_root().join("fits/vae.json")).unwrap();
    fs::remove_file(root.path().join("fits/vae.json")).unwrap();
    vramfit().arg("--root").arg(root.path()).arg("emit").assert().code(0);
    assert_eq!(fs::read(root.path().join("fits/vae.json")).unwrap(), shipped);
    vramfit().arg("--root").arg(root.path()).args(["emit", "--check"]).assert().code(0);
}

#[test]
fn a_store_out_of_id_order_is_refused_and_nothing_is_written() {
    // The store is kept sorted by id; a merge or hand edit that reorders it
    // is an input error (exit 2) naming the id, never a silent re-sort.
    let root = scratch();
    let path = root.path().join("measurements/vae.json");
    let mut store: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let arr = store["points"].as_array_mut().unwrap();
    arr.swap(0, 1);
    let moved = arr[0]["id"].as_str().unwrap().to_string();
    fs::write(&path, serde_json::to_vec_pretty(&store).unwrap()).unwrap();
    let before = snapshot(root.path());
    for cmd in [&["emit"][..], &["fit"], &["verify"], &["points"]] {
        let out = vramfit().arg("--root").arg(root.path()).args(cmd).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {}", stderr_of(&out));
        let err = stderr_of(&out);
        assert!(err.contains("measurements/vae.json") && err.contains(&moved) && err.contains("id:"), "{err}");
    }
    assert_eq!(snapshot(root.path()), before);
}

#[test]
fn emit_check_fails_and_shows_the_change_when_a_point_moves_a_line() {
    let root = scratch();
    let csv = "id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_mib\n\
               new-hi,test,cudnn,native,linux,sd,decode,0,fp16,1280,1280,1,9000\n";
    let f = root.path().join("new.csv");
    fs::write(&f, csv).unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).assert().code(0);
    let before = snapshot(&root.path().join("fits"));
    let out = vramfit().arg("--root").arg(root.path()).args(["emit", "--check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let s = stdout_of(&out);
    assert!(s.contains("OUT OF DATE"), "{s}");
    assert!(s.contains("sd/decode/0/cudnn/native/any/fp16") && s.contains("4452.00 → "), "{s}");
    assert_eq!(before, snapshot(&root.path().join("fits")), "--check writes nothing");
    // For CI: an annotation on the file naming the line, and the findings.
    let out = vramfit().arg("--root").arg(root.path()).args(["--format", "github", "emit", "--check"]).output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(1));
    let s = stdout_of(&out);
    let shipped = format!("{}", root.path().join("fits/vae.json").display()).replace(':', "%3A").replace(',', "%2C");
    let first = s.lines().next().unwrap();
    // The line of the file where the changed line is written.
    let text = fs::read_to_string(root.path().join("fits/vae.json")).unwrap();
    let at = text.lines().position(|l| l.contains("\"slope\": \"4452.00\"")).unwrap() - 8 + 1;
    assert_eq!(text.lines().nth(at - 1).unwrap().trim(), "\"vae\": \"sd\",");
    assert!(
        first.starts_with(&format!("::error file={shipped},line={at},title=vramfit emit --check::a fresh emit")),
        "{first}"
    );
    assert!(first.contains("%0Asd/decode/0/cudnn/native/any/fp16: changed, slope 4452.00 → "), "{first}");
    // A ratio-bound finding with no policy entry yet points at the bound itself.
    let policy = fs::read_to_string(root.path().join("fits/policy.toml")).unwrap();
    let bound = policy.lines().position(|l| l.starts_with("ratio_bound")).unwrap() + 1;
    let want = format!("::error file=fits/policy.toml,line={bound},title=vramfit ratio-bound::");
    assert!(s.lines().any(|l| l.starts_with(&want)), "{s}");
    assert!(s.trim_end().ends_with("OUT OF DATE"), "{s}");
    // The 9000 MiB point lifts the line so far that the small decodes are
    // over-reserved beyond 1.3×: emit says what verify would, writes nothing.
    let out = vramfit().arg("--root").arg(root.path()).args(["--format", "json", "emit"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let j = json_of(&out);
    assert_eq!(j["written"], false);
    let codes: Vec<&str> = j["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    // The lifted untiled line also over-reserves the tiled points it derives
    // (derived-tile); it can no longer make a smaller tile price above a
    // larger one: the pricer composes its rules monotonically.
    assert!(codes.contains(&"ratio-bound"), "{codes:?}");
    assert!(codes.iter().all(|c| ["ratio-bound", "derived-tile"].contains(c)), "{codes:?}");
    assert_eq!(before, snapshot(&root.path().join("fits")), "findings: nothing written");
    let table = stdout_of(&vramfit().arg("--root").arg(root.path()).arg("emit").output().unwrap());
    assert!(table.contains("NOT written") && table.contains("ratio-bound") && table.contains("--force"), "{table}");
    // --force writes anyway, and still exits 1.
    let out = vramfit().arg("--root").arg(root.path()).args(["--format", "json", "emit", "--force"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let j = json_of(&out);
    assert_eq!(j["written"], true);
    let changed: Vec<_> = j["changes"].as_array().unwrap().iter().filter(|c| c["change"] == "changed").collect();
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0]["old_slope"], "4452.00");
    // Up to date, but the findings remain: --check and verify both exit 1.
    let out = vramfit().arg("--root").arg(root.path()).args(["emit", "--check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout_of(&out).contains("up to date"));
    vramfit().arg("--root").arg(root.path()).arg("verify").assert().code(1);
    vramfit().arg("--root").arg(root.path()).arg("fit").assert().code(1);
}

#[test]
fn carried_lines_are_shipped_with_their_reason() {
    let root = scratch();
    add_carry(root.path(), "7500.25", 64);
    let out = vramfit().arg("--root").arg(root.path()).arg("emit").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains("sd/decode/0/miopen/native/linux/fp16"));
    let f: serde_json::Value = serde_json::from_slice(&fs::read(root.path().join("fits/vae.json")).unwrap()).unwrap();
    let l = f["lines"].as_array().unwrap().iter().find(|l| l["conv_backend"] == "miopen" && l["vae"] == "sd").unwrap();
    assert_eq!(l["kind"], "carried");
    assert_eq!(l["slope"], "7500.25");
    assert_eq!(l["base_mib"], 64);
    assert_eq!(l["os"], "linux");
    assert!(l["reason"].as_str().unwrap().contains("earlier fit"));
}

fn policy_error(edit: impl Fn(String) -> String, expect: &str) {
    let root = scratch();
    let policy = root.path().join("fits/policy.toml");
    fs::write(&policy, edit(fs::read_to_string(&policy).unwrap())).unwrap();
    let before = snapshot(root.path());
    for cmd in ["fit", "emit"] {
        let out = vramfit().arg("--root").arg(root.path()).arg(cmd).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", stderr_of(&out));
        assert!(stderr_of(&out).contains(expect), "{cmd}: expected '{expect}' in: {}", stderr_of(&out));
    }
    assert_eq!(before, snapshot(root.path()));
}

#[test]
fn policy_unknown_key_is_an_error() {
    policy_error(|t| t.replace("ratio_bound = 1.3", "ratio_bound = 1.3\nratio_bund = 1.2"), "unknown key 'ratio_bund'");
}

#[test]
fn policy_exclusion_without_reason_is_an_error() {
    policy_error(|t| format!("{t}\n[[exclude]]\nid = \"i7785061-sd15-decode-fp16-512x512\"\n"), "missing reason");
}

#[test]
fn policy_exclusion_of_no_point_is_an_error() {
    policy_error(
        |t| format!("{t}\n[[exclude]]\nid = \"no-such-point\"\nreason = \"x\"\n"),
        "'no-such-point' names no point",
    );
}

#[test]
fn policy_exception_of_no_point_is_an_error() {
    policy_error(|t| format!("{t}\n[[exception]]\nid = \"ghost\"\nreason = \"x\"\n"), "'ghost' names no point");
}

#[test]
fn policy_carry_with_three_decimals_is_an_error() {
    policy_error(
        |t| {
            format!(
                "{t}{}",
                fs::read_to_string(fixture("policy/carry_miopen.toml")).unwrap().replace("7500.25", "7500.251")
            )
        },
        "at most two decimal places",
    );
}

#[test]
fn policy_toml_syntax_error_names_the_file_and_line() {
    policy_error(|t| t.replace("min_sizes = 3", "min_sizes = = 3"), "policy.toml:6: TOML syntax error: ");
}

/// The fitted lines of `root` as an independent Python refit computes them,
/// beside the ones its `fits/vae.json` ships.
fn python_refit_and_shipped(root: &Path) -> (BTreeMap<String, serde_json::Value>, BTreeMap<String, serde_json::Value>) {
    let out = std::process::Command::new("python3")
        .arg(repo().join("tests/python/vramfit_refit.py"))
        .arg(root)
        .output()
        .expect("python3 is needed for the cross-check");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let py: BTreeMap<String, serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let shipped: serde_json::Value = serde_json::from_slice(&fs::read(root.join("fits/vae.json")).unwrap()).unwrap();
    let mut rust = BTreeMap::new();
    for l in shipped["lines"].as_array().unwrap().iter().filter(|l| l["kind"] == "fitted") {
        // The key as vramfit writes it (a video line's tile segment: `16f`).
        let key: vramfit::points::LineKey = serde_json::from_value(l.clone()).unwrap();
        let key = key.to_string();
        rust.insert(key, serde_json::json!([l["slope"], l["base_mib"]]));
    }
    (py, rust)
}

#[test]
fn an_independent_python_fit_agrees_to_the_last_digit() {
    let (py, rust) = python_refit_and_shipped(&data_root());
    assert_eq!(rust.len(), 18);
    assert_eq!(py, rust);
}

#[test]
fn the_shipped_lines_agree_with_the_independent_python_fit_whatever_the_data() {
    let (py, rust) = python_refit_and_shipped(&repo());
    assert!(!rust.is_empty());
    assert_eq!(py, rust, "fits/vae.json against tests/python/vramfit_refit.py on measurements/ and fits/policy.toml");
}

#[test]
fn emit_writes_the_runtime_crates_copy_and_check_fails_while_it_differs() {
    let root = scratch();
    let copy = root.path().join("crates/vramfit-runtime/vae.json");
    fs::create_dir_all(copy.parent().unwrap()).unwrap();
    // A maintainer who copied nothing: the crate's file is some other one.
    fs::write(&copy, "{}\n").unwrap();
    let check = vramfit().arg("--root").arg(root.path()).args(["emit", "--check"]).output().unwrap();
    assert_eq!(check.status.code(), Some(1), "{}", stdout_of(&check));
    let said = stdout_of(&check);
    assert!(
        said.contains("crates/vramfit-runtime/vae.json: OUT OF DATE") && said.contains("run `vramfit emit`"),
        "{said}"
    );
    let github =
        vramfit().arg("--root").arg(root.path()).args(["--format", "github", "emit", "--check"]).output().unwrap();
    assert!(stdout_of(&github).contains("::error file="), "{}", stdout_of(&github));
    // One emit writes both, and then they agree.
    let out = vramfit().arg("--root").arg(root.path()).arg("emit").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains("crates/vramfit-runtime/vae.json: written"), "{}", stdout_of(&out));
    assert_eq!(fs::read(&copy).unwrap(), fs::read(root.path().join("fits/vae.json")).unwrap());
    vramfit().arg("--root").arg(root.path()).args(["emit", "--check"]).assert().code(0);
    // A root without the crate has nothing to say about it.
    let bare = scratch();
    let out = vramfit().arg("--root").arg(bare.path()).args(["emit", "--check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!stdout_of(&out).contains("python"));
}
