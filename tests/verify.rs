//! The tamper matrix: each case copies the shipped files to a scratch root,
//! makes one mistake, runs verify and expects exit 1 with its own code.

use crate::common::*;
use std::fs;
use std::path::Path;
use vramfit::pricing::platform::EnvSnapshot;
use vramfit::pricing::{Choice, Coefficients, Price, Pricer, Query};
use vramfit::vocab::{Allocator, Dtype, Os};

fn verify_json(root: &Path) -> (i32, serde_json::Value) {
    let out = vramfit().arg("--root").arg(root).args(["--format", "json", "verify"]).output().unwrap();
    (out.status.code().unwrap(), json_of(&out))
}

fn codes(j: &serde_json::Value) -> Vec<String> {
    j["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap().to_string()).collect()
}

/// Runs verify on a root and expects exit 1 with `code` among the findings.
fn caught(root: &Path, code: &str) -> serde_json::Value {
    let (rc, j) = verify_json(root);
    assert_eq!(rc, 1, "verify must fail; findings: {:?}", codes(&j));
    for c in codes(&j) {
        assert!(vramfit::findings::Code::ALL.iter().any(|k| k.as_str() == c), "'{c}' is not a code");
    }
    assert!(codes(&j).iter().any(|c| c == code), "expected '{code}' in {:?}", codes(&j));
    j
}

/// The findings with one code.
fn with_code(j: &serde_json::Value, code: &str) -> Vec<serde_json::Value> {
    j["findings"].as_array().unwrap().iter().filter(|f| f["code"] == code).cloned().collect()
}

/// The first finding with one code.
fn first(j: &serde_json::Value, code: &str) -> serde_json::Value {
    with_code(j, code).into_iter().next().unwrap_or_else(|| panic!("no '{code}' finding"))
}

/// The messages of the findings with one code.
fn messages(j: &serde_json::Value, code: &str) -> Vec<String> {
    with_code(j, code).iter().map(|f| f["message"].as_str().unwrap().to_string()).collect()
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} does not contain {from:?}", path.display());
    fs::write(path, text.replacen(from, to, 1)).unwrap();
}

fn emit(root: &Path) {
    let out = vramfit().arg("--root").arg(root).arg("emit").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

/// `emit --force` for a mistake verify must catch: emit itself already
/// reports `code` (exit 1) and writes the file anyway, so verify can be
/// shown to catch the same mistake in the shipped file.
fn emit_forced(root: &Path, code: &str) {
    let out = vramfit().arg("--root").arg(root).args(["--format", "json", "emit", "--force"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr_of(&out));
    let j = json_of(&out);
    assert!(codes(&j).iter().any(|c| c == code), "emit reports {code}: {:?}", codes(&j));
    assert!(j["written"] == true || j["changed"] == false);
}

#[test]
fn the_untouched_copy_passes() {
    let root = scratch();
    let (rc, j) = verify_json(root.path());
    assert_eq!(rc, 0, "{:?}", j["findings"]);
    assert_eq!(j["ok"], true);
    assert_eq!(j["points"], 138);
    assert_eq!(j["included"], 128, "138 points less the 10 excluded in the policy");
    assert_eq!(j["lines"], 18);
    assert_eq!(j["insufficient"], 2);
    // 128 points for coverage. The query path: 13 untiled lines off MIOpen ×
    // 6 grid sizes × batch 1, 2 × (given, detected) = 312; the 2 tile-512
    // lines skip 512² (a tile that covers the image prices untiled): 40; the
    // MIOpen Linux line: 24; the 2 MIOpen lines measured without an OS are
    // asked on Linux, on Windows and as `any`: 144; 520 in all. The floor: 6
    // families × 2 ops × 2 tiles (0, 512) × 3 dtypes × 5 backends × 2 OS × 6
    // grid sizes = 4320, less tile 512 at 512² (360): 3960. The other-dtype
    // floor: every line in each dtype it lacks on its platform, at each grid
    // size a tile does not cover, counted here from the file.
    let file: serde_json::Value =
        serde_json::from_slice(&fs::read(root.path().join("fits/vae.json")).unwrap()).unwrap();
    let lines = file["lines"].as_array().unwrap();
    let keys: std::collections::BTreeSet<String> = lines.iter().map(key_of).collect();
    let mut other_dtype = 0;
    for l in lines {
        for d in ["fp16", "bf16", "fp32"].iter().filter(|d| **d != l["dtype"]) {
            let k = key_of(l);
            let other = format!("{}/{d}", k.rsplit_once('/').unwrap().0);
            if !keys.contains(&other) {
                let tile = l["tile"].as_u64().unwrap();
                other_dtype += [512u64, 768, 1024, 1280, 1536, 2048].iter().filter(|s| tile == 0 || **s > tile).count();
            }
        }
    }
    // The derived-tile checks: every untiled line's platform asked each
    // tile it has no line of, and every platform (lines and thin keys)
    // priced at each tile, at each grid size the tile does not cover.
    let thin = file["insufficient"].as_array().unwrap();
    let tile_of = |l: &serde_json::Value| l["tile"].as_u64().unwrap();
    let mut tiles: std::collections::BTreeSet<u64> =
        file["tiles"].as_array().unwrap().iter().map(|t| t.as_u64().unwrap()).collect();
    tiles.extend(lines.iter().chain(thin).map(tile_of).filter(|t| *t != 0));
    let grid = [512u64, 768, 1024, 1280, 1536, 2048];
    let tiling = |t: u64| grid.iter().filter(|s| **s > t).count();
    let platform = |l: &serde_json::Value| {
        let k = key_of(l);
        let parts: Vec<&str> = k.split('/').collect();
        format!("{}/{}/{}", parts[..2].join("/"), parts[3..].join("/"), "")
    };
    let mut unmeasured_tiles = 0;
    for l in lines.iter().filter(|l| tile_of(l) == 0) {
        for t in &tiles {
            let own = lines.iter().any(|o| platform(o) == platform(l) && tile_of(o) == *t);
            let os_less = lines.iter().any(|o| {
                tile_of(o) == *t && o["os"] == "any" && {
                    let mut a = l.clone();
                    a["os"] = "any".into();
                    platform(o) == platform(&a)
                }
            });
            if !own && !os_less {
                unmeasured_tiles += tiling(*t);
            }
        }
    }
    let platforms: std::collections::BTreeSet<String> = lines.iter().chain(thin).map(platform).collect();
    // The monotone check: every platform at the grid and past the largest
    // measured size (twice and four times its side), each tile that tiles
    // the image and then no tile; and each line's own key along the grid's
    // squares and two squares past the range.
    let hi = lines.iter().filter_map(|l| l["size_range"][1].as_u64()).max().unwrap();
    let side = hi.isqrt().div_ceil(8) * 8;
    let mut around: Vec<(u64, u64)> = grid.iter().map(|g| (*g, *g)).collect();
    around.extend([(2 * side, 2 * side), (4 * side, side), (side, 4 * side)]);
    // And where rules' domains meet: the tiles beside each measured tile,
    // the image one step wider than it.
    let measured: std::collections::BTreeSet<u64> = lines.iter().map(tile_of).filter(|t| *t != 0).collect();
    let mut edge_tiles = tiles.clone();
    for t in &measured {
        edge_tiles.extend([t - 8, t + 8]);
        around.push((t + 8, t + 8));
    }
    let tiles_of = |(w, h): (u64, u64)| edge_tiles.iter().filter(|t| **t < w || **t < h).count() + 1;
    let per_platform: usize = around.iter().map(|s| tiles_of(*s)).sum();
    let sides: std::collections::BTreeSet<u64> =
        grid.iter().copied().chain([2 * side, 4 * side]).chain(measured.iter().flat_map(|t| [*t, t + 8])).collect();
    let along: usize = lines.iter().map(|l| sides.iter().filter(|s| tile_of(l) == 0 || **s > tile_of(l)).count()).sum();
    let monotone: usize = platforms.len() * per_platform + along;
    // The attention check: each math-kernel platform and CUDA, every family,
    // op and dtype, untiled and each policy tile, at the grid and the large
    // sizes (2048², 3072², 4096×2304) a tile does not cover.
    let mut sizes: Vec<(u64, u64)> = grid.iter().map(|s| (*s, *s)).collect();
    sizes.extend([(3072, 3072), (4096, 2304)]);
    let platforms_with_phase = file["attention"]["platforms"].as_array().unwrap().len() + 1;
    let families = file["registry"].as_object().unwrap().len();
    let per_tile = |t: u64| sizes.iter().filter(|(w, h)| t == 0 || t < *w || t < *h).count();
    let policy_tiles: Vec<u64> = file["tiles"].as_array().unwrap().iter().map(|t| t.as_u64().unwrap()).collect();
    let attention = platforms_with_phase
        * families
        * 2
        * 3
        * (per_tile(0) + policy_tiles.iter().map(|t| per_tile(*t)).sum::<usize>());
    assert_eq!(j["pricings"], 128 + 520 + 3960 + other_dtype + unmeasured_tiles + monotone + attention);
    let out = vramfit().arg("--root").arg(root.path()).arg("verify").output().unwrap();
    assert!(stdout_of(&out).contains("0 finding(s)"));
}

#[test]
fn slope_edited_by_a_hundredth() {
    let root = scratch();
    edit(&root.path().join("fits/vae.json"), "\"slope\": \"4452.00\"", "\"slope\": \"4452.01\"");
    let j = caught(root.path(), "reproduce");
    let f = first(&j, "reproduce");
    assert_eq!(f["line"], "sd/decode/0/cudnn/native/any/fp16");
    assert_eq!(f["path"], "lines[sd/decode/0/cudnn/native/any/fp16].slope");
    assert_eq!(f["expected"], "\"4452.00\"");
    assert_eq!(f["found"], "\"4452.01\"");
    assert_eq!(f["file"], "fits/vae.json");
}

#[test]
fn base_edited() {
    let root = scratch();
    let path = root.path().join("fits/vae.json");
    let text = fs::read_to_string(&path).unwrap();
    let at = text.find("\"slope\": \"4452.00\"").unwrap();
    let rest = &text[at..];
    let base_at = at + rest.find("\"base_mib\": 36").unwrap();
    let edited = format!("{}\"base_mib\": 35{}", &text[..base_at], &text[base_at + "\"base_mib\": 36".len()..]);
    fs::write(&path, edited).unwrap();
    let j = caught(root.path(), "reproduce");
    // A lower base also leaves the support points short of the margin.
    assert!(codes(&j).contains(&"certificate".to_string()));
}

#[test]
fn envelope_edited_breaks_the_certificate() {
    let root = scratch();
    edit(&root.path().join("fits/vae.json"), "\"base\": \"37748736\"", "\"base\": \"37748735\"");
    let j = caught(root.path(), "certificate");
    let msgs = messages(&j, "certificate");
    assert!(msgs.iter().any(|m| m.contains("does not lie on the envelope")), "{msgs:?}");
    assert!(msgs.iter().any(|m| m.contains("lies above the envelope")), "{msgs:?}");
}

#[test]
fn a_feasible_but_not_optimal_edge_breaks_the_certificate() {
    // flux1 fp16 decode: the edge 512² → 1024² (4256 B/px + 4 MiB) covers
    // every point and passes through both support points, but the mean size
    // (about 1300²) lies outside it, so it is not the least over-reservation.
    let root = scratch();
    let f = root.path().join("fits/vae.json");
    edit(
        &f,
        "\"slope\": \"4224\",\n        \"base\": \"37748736\"",
        "\"slope\": \"4256\",\n        \"base\": \"4194304\"",
    );
    edit(
        &f,
        "\"i7785061-flux1-decode-fp16-1024x1024\",\n        \"i7785061-flux1-decode-fp16-2048x2048\"\n      ],\n      \"support_kind\"",
        "\"i7785061-flux1-decode-fp16-512x512\",\n        \"i7785061-flux1-decode-fp16-1024x1024\"\n      ],\n      \"support_kind\"",
    );
    let j = caught(root.path(), "certificate");
    let msgs = messages(&j, "certificate");
    assert!(msgs.iter().any(|m| m.contains("the mean size lies outside the support edge")), "{msgs:?}");
    assert!(!msgs.iter().any(|m| m.contains("lies above") || m.contains("does not lie on")), "{msgs:?}");
}

#[test]
fn a_negative_envelope_breaks_the_certificate() {
    let root = scratch();
    edit(&root.path().join("fits/vae.json"), "\"base\": \"37748736\"", "\"base\": \"-37748736\"");
    let j = caught(root.path(), "certificate");
    assert!(j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["message"].as_str().unwrap().contains("negative envelope")));
}

#[test]
fn carried_stand_in_below_legacy() {
    let root = scratch();
    add_carry(root.path(), "1.00", 64);
    emit_forced(root.path(), "floor");
    let j = caught(root.path(), "floor");
    let f = first(&j, "floor");
    assert_eq!(f["line"], "sd/decode/0/miopen/native/linux/fp16");
    assert_eq!(f["file"], "fits/policy.toml");
}

#[test]
fn a_carried_line_at_or_above_legacy_passes() {
    let root = scratch();
    add_carry(root.path(), "7500.25", 64);
    emit(root.path());
    let (rc, j) = verify_json(root.path());
    assert_eq!(rc, 0, "{:?}", j["findings"]);
}

fn store_without(root: &Path, id: &str) {
    let path = root.join("measurements/vae.json");
    let mut store: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let pts = store["points"].as_array_mut().unwrap();
    let before = pts.len();
    pts.retain(|p| p["id"] != id);
    assert_eq!(pts.len(), before - 1);
    fs::write(&path, serde_json::to_vec_pretty(&store).unwrap()).unwrap();
}

#[test]
fn point_deleted_from_the_store() {
    let root = scratch();
    store_without(root.path(), "i7785061-flux1-decode-fp16-768x768");
    let j = caught(root.path(), "points-changed");
    let f = first(&j, "points-changed");
    assert_eq!(f["line"], "flux1/decode/0/cudnn/native/any/fp16");
    assert_eq!(f["points"][0], "i7785061-flux1-decode-fp16-768x768");
    assert_eq!(f["file"], "measurements/vae.json");
}

#[test]
fn point_added_above_a_line() {
    let root = scratch();
    let f = root.path().join("high.csv");
    fs::write(
        &f,
        "id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_mib\n\
         high-1,test,cudnn,native,linux,flux1,decode,0,bf16,1280,1280,1,12000\n",
    )
    .unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).assert().code(0);
    let j = caught(root.path(), "coverage");
    assert!(codes(&j).contains(&"points-changed".to_string()));
    let cov = first(&j, "coverage");
    assert_eq!(cov["points"][0], "high-1");
    assert_eq!(cov["line"], "flux1/decode/0/cudnn/native/any/bf16");
}

#[test]
fn demand_edited_in_the_store() {
    let root = scratch();
    let path = root.path().join("measurements/vae.json");
    let mut store: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    for p in store["points"].as_array_mut().unwrap() {
        if p["id"] == "i7785061-sd15-encode-fp16-512x512" {
            // A consistent hand edit: the largest delta and the demand together
            // (an edit of the demand alone breaks the store's invariant: exit 2).
            let d = p["demand_bytes"].as_u64().unwrap();
            p["demand_bytes"] = serde_json::json!(d - 1_000_000);
            for delta in ["reserved_bytes", "allocated_bytes", "driver_bytes"] {
                if p[delta].as_u64() == Some(d) {
                    p[delta] = serde_json::json!(d - 1_000_000);
                }
            }
        }
    }
    fs::write(&path, serde_json::to_vec_pretty(&store).unwrap()).unwrap();
    let j = caught(root.path(), "points-changed");
    let f = first(&j, "points-changed");
    assert_eq!(f["line"], "sd/encode/0/cudnn/native/any/fp16");
    assert!(f["message"].as_str().unwrap().contains("size or demand was edited"));
}

#[test]
fn margin_changed_in_the_shipped_file() {
    let root = scratch();
    edit(&root.path().join("fits/vae.json"), "\"margin\": \"0.05\"", "\"margin\": \"0.04\"");
    let j = caught(root.path(), "margin");
    let f = first(&j, "margin");
    assert_eq!(f["expected"], "0.05");
    assert_eq!(f["found"], "0.04");
}

#[test]
fn margin_changed_in_the_policy_only() {
    let root = scratch();
    edit(&root.path().join("fits/policy.toml"), "margin = 0.05", "margin = 0.06");
    let j = caught(root.path(), "margin");
    assert!(codes(&j).contains(&"reproduce".to_string()));
}

/// A policy with a tighter bound and every point over it listed as an
/// exception; verify passes on it before the mistake is made.
fn with_exceptions(root: &Path) -> Vec<String> {
    let policy = root.join("fits/policy.toml");
    edit(&policy, "ratio_bound = 1.3", "ratio_bound = 1.2");
    let fit = json_of(&vramfit().arg("--root").arg(root).args(["--format", "json", "fit"]).output().unwrap());
    let over: Vec<String> = fit["lines"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["over_bound"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()))
        .collect();
    assert!(over.len() >= 2, "{over:?}");
    let mut text = fs::read_to_string(&policy).unwrap();
    for id in &over {
        text.push_str(&format!("\n[[exception]]\nid = \"{id}\"\nreason = \"over 1.2 on the published data\"\n"));
    }
    fs::write(&policy, &text).unwrap();
    // The tiled points the derived tile price reserves over 1.2× too.
    let emitted = json_of(&vramfit().arg("--root").arg(root).args(["--format", "json", "emit"]).output().unwrap());
    for f in emitted["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "derived-tile") {
        let id = f["points"][0].as_str().unwrap();
        text.push_str(&format!("\n[[exception]]\nid = \"{id}\"\nreason = \"derived tile over 1.2\"\n"));
    }
    fs::write(&policy, text).unwrap();
    emit(root);
    let (rc, j) = verify_json(root);
    assert_eq!(rc, 0, "{:?}", j["findings"]);
    over
}

#[test]
fn exception_removed_leaves_a_point_over_the_bound() {
    let root = scratch();
    let over = with_exceptions(root.path());
    let policy = root.path().join("fits/policy.toml");
    let block = format!("\n[[exception]]\nid = \"{}\"\nreason = \"over 1.2 on the published data\"\n", over[0]);
    edit(&policy, &block, "");
    emit_forced(root.path(), "ratio-bound");
    let j = caught(root.path(), "ratio-bound");
    let f = first(&j, "ratio-bound");
    assert_eq!(f["points"][0], over[0].as_str());
    assert_eq!(f["file"], "fits/policy.toml");
}

#[test]
fn stale_exception() {
    let root = scratch();
    let policy = root.path().join("fits/policy.toml");
    let text = fs::read_to_string(&policy).unwrap();
    fs::write(
        &policy,
        format!("{text}\n[[exception]]\nid = \"i7785061-flux1-decode-fp16-1024x1024\"\nreason = \"was high once\"\n"),
    )
    .unwrap();
    emit_forced(root.path(), "stale-exception");
    let j = caught(root.path(), "stale-exception");
    let f = first(&j, "stale-exception");
    assert_eq!(f["points"][0], "i7785061-flux1-decode-fp16-1024x1024");
}

#[test]
fn excluded_id_that_names_no_point() {
    let root = scratch();
    edit(
        &root.path().join("fits/policy.toml"),
        "id = \"i7785061-sd15-encode-fp16-1536x1536\"",
        "id = \"i7785061-sd15-encode-fp16-1536x1563\"",
    );
    let j = caught(root.path(), "unknown-id");
    let f = first(&j, "unknown-id");
    assert_eq!(f["points"][0], "i7785061-sd15-encode-fp16-1536x1563");
    // The tiled encode it should have excluded is now in the line and over-reserved.
    assert!(codes(&j).contains(&"points-changed".to_string()));
}

#[test]
fn unknown_policy_key() {
    let root = scratch();
    edit(&root.path().join("fits/policy.toml"), "min_sizes = 3", "min_sizes = 3\nmin_size = 4");
    let j = caught(root.path(), "unknown-key");
    let f = first(&j, "unknown-key");
    assert!(f["message"].as_str().unwrap().contains("'min_size'"));
    assert_eq!(f["file"], "fits/policy.toml");
    assert!(f["hint"].as_str().unwrap().contains("spelling"), "{f}");
}

/// Every unknown key at once, each on its own line, at any depth: one at
/// the top level, one in an array entry, one in a family's table.
#[test]
fn every_unknown_policy_key_is_named_with_its_line() {
    let root = scratch();
    let policy = root.path().join("fits/policy.toml");
    edit(&policy, "min_sizes = 3", "min_sizes = 3\nmin_size = 4");
    let text = fs::read_to_string(&policy).unwrap();
    let family = text.lines().find_map(|l| l.strip_prefix("[vae.")?.strip_suffix(']')).unwrap().to_string();
    edit(&policy, &format!("[vae.{family}]\n"), &format!("[vae.{family}]\nmodles = []\n"));
    let text = fs::read_to_string(&policy).unwrap();
    fs::write(&policy, format!("{text}\n[[exception]]\nid = \"x\"\nreason = \"r\"\nreasno = \"typo\"\n")).unwrap();
    let text = fs::read_to_string(&policy).unwrap();
    let line_of = |needle: &str| text.lines().position(|l| l.starts_with(&format!("{needle} ="))).unwrap() + 1;
    let j = caught(root.path(), "unknown-key");
    let said = messages(&j, "unknown-key");
    assert_eq!(said.len(), 3, "{said:?}");
    for (key, within, guess) in [
        ("min_size", "the top level", "min_sizes"),
        ("modles", &*format!("vae.{family}"), "models"),
        ("reasno", "exception[", "reason"),
    ] {
        let m = said.iter().find(|m| m.contains(&format!("'{key}'"))).unwrap_or_else(|| panic!("{key}: {said:?}"));
        assert!(m.contains(&format!("policy.toml:{}: unknown key '{key}' in {within}", line_of(key))), "{m}");
        assert!(m.contains(&format!("did you mean '{guess}'")), "{m}");
    }
    // fit refuses, naming the first; nothing is written.
    let out = vramfit().arg("--root").arg(root.path()).arg("fit").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn version_mismatch() {
    let root = scratch();
    edit(&root.path().join("fits/vae.json"), "\"version\": 2", "\"version\": 1");
    let j = caught(root.path(), "version");
    assert_eq!(codes(&j), vec!["version"]);
}

#[test]
fn every_github_annotation_carries_a_file_and_a_line() {
    // A store edit, a policy edit and a shipped-file edit at once.
    let root = scratch();
    edit(&root.path().join("fits/vae.json"), "\"base_mib\": 36", "\"base_mib\": 37");
    let policy = root.path().join("fits/policy.toml");
    let text = fs::read_to_string(&policy).unwrap();
    fs::write(&policy, format!("{text}\n[[exclude]]\nid = \"no-such-point\"\nreason = \"test\"\n")).unwrap();
    let out = vramfit().arg("--root").arg(root.path()).args(["--format", "github", "verify"]).output().unwrap();
    let s = stdout_of(&out);
    let annotations: Vec<&str> = s.lines().filter(|l| l.starts_with("::")).collect();
    assert!(annotations.len() >= 2, "{s}");
    for a in &annotations {
        assert!(a.starts_with("::error file=") && a.contains(",line="), "{a}");
    }
    let unknown = annotations.iter().find(|a| a.contains("no-such-point")).expect("the stale id");
    let at = fs::read_to_string(&policy).unwrap().lines().position(|l| l.contains("no-such-point")).unwrap() + 1;
    assert!(unknown.contains(&format!("line={at},")), "{unknown}");
}

#[test]
fn an_input_error_is_an_annotation_on_its_row() {
    let root = scratch();
    let f = root.path().join("new.csv");
    fs::write(
        &f,
        "source,conv_backend,allocator,model,op,run_dtype,width,height,reserved_mib\n\
         me,cudnn,native,sdxl,decode,fp16,512,512,100\n\
         me,cudnn,native,hunyuan,decode,fp16,512,512,100\n",
    )
    .unwrap();
    let out = vramfit().current_dir(root.path()).args(["--format", "github", "ingest", "new.csv"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stdout_of(&out).starts_with("::error file=new.csv,line=3,title=vramfit%3A input error::new.csv:3: model:"),
        "{}",
        stdout_of(&out)
    );
    assert!(stderr_of(&out).contains("error: new.csv:3: model: unknown model 'hunyuan'"));
    // A broken store is annotated on the point's own line.
    let store = root.path().join("measurements/vae.json");
    let text = fs::read_to_string(&store).unwrap();
    let at = text.lines().position(|l| l.contains("\"id\":\"i7785061-sdxl-decode-fp16-1024x1024\"")).unwrap() + 1;
    fs::write(&store, text.replace("\"demand_bytes\":4481613824", "\"demand_bytes\":4481613825")).unwrap();
    let out = vramfit().current_dir(root.path()).args(["--format", "github", "verify"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stdout_of(&out).starts_with(&format!("::error file=measurements/vae.json,line={at},")),
        "{}",
        stdout_of(&out)
    );
}

#[test]
fn github_format_annotates_the_file() {
    let root = scratch();
    edit(&root.path().join("fits/vae.json"), "\"slope\": \"4452.00\"", "\"slope\": \"4452.01\"");
    let out = vramfit().arg("--root").arg(root.path()).args(["--format", "github", "verify"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let s = stdout_of(&out);
    let line = s.lines().find(|l| l.contains("title=vramfit reproduce")).unwrap();
    // `line=` is the edited field's own line in the file.
    let text = fs::read_to_string(root.path().join("fits/vae.json")).unwrap();
    let at = text.lines().position(|l| l.contains("\"slope\": \"4452.01\"")).unwrap() + 1;
    let want =
        format!("::error file=fits/vae.json,line={at},title=vramfit reproduce::[sd/decode/0/cudnn/native/any/fp16]");
    assert!(line.starts_with(&want), "{line}");
    assert!(!line.contains('\n'));
}

// --- Broken pricers: verify takes the pricer as a parameter -----------------

/// The shipped data plus lines for a non-default allocator and per-OS ROCm
/// lines, so that ignoring the allocator or the OS changes a price.
fn platform_root() -> tempfile::TempDir {
    let root = scratch();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(fixture("verify/platforms.csv")).assert().code(0);
    emit(root.path());
    root
}

struct DropBase(Coefficients);
impl Pricer for DropBase {
    fn price(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<Price> {
        let mut p = self.0.price(q, env)?;
        p.bytes -= p.base_mib.unwrap_or(0) * 1_048_576;
        Ok(p)
    }
}

struct IgnoreBatch(Coefficients);
impl Pricer for IgnoreBatch {
    fn price(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<Price> {
        self.0.price(&Query { batch: 1, ..q.clone() }, env)
    }
}

struct IgnoreAllocator(Coefficients);
impl Pricer for IgnoreAllocator {
    fn price(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<Price> {
        self.0.price(&Query { allocator: Choice::Given(Allocator::Native), ..q.clone() }, env)
    }
}

struct IgnoreOs(Coefficients);
impl Pricer for IgnoreOs {
    fn price(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<Price> {
        self.0.price(&Query { os: Choice::Given(Os::Linux), ..q.clone() }, env)
    }
}

fn query_path_caught(root: &Path, make: &dyn Fn(Coefficients) -> Box<dyn Pricer>) -> Vec<String> {
    let real = vramfit::verify::audit(root).unwrap();
    assert!(real.ok, "the real pricer passes: {:?}", real.findings);
    let broken = vramfit::verify::audit_with(root, make).unwrap();
    assert!(!broken.ok);
    let lines: Vec<String> = broken
        .findings
        .iter()
        .filter(|f| f.code == vramfit::findings::Code::QueryPath)
        .filter_map(|f| f.line.clone())
        .collect();
    assert!(!lines.is_empty(), "query-path must catch it: {:?}", broken.findings);
    lines
}

#[test]
fn pricer_that_drops_the_base() {
    let root = scratch();
    let lines = query_path_caught(root.path(), &|c| Box::new(DropBase(c)));
    assert!(lines.contains(&"sd/decode/0/cudnn/native/any/fp16".to_string()));
}

#[test]
fn pricer_that_ignores_batch() {
    let root = scratch();
    let lines = query_path_caught(root.path(), &|c| Box::new(IgnoreBatch(c)));
    assert_eq!(lines.len(), 18, "every line: {lines:?}");
}

#[test]
fn pricer_that_ignores_the_allocator() {
    let root = platform_root();
    let lines = query_path_caught(root.path(), &|c| Box::new(IgnoreAllocator(c)));
    assert!(lines.contains(&"flux1/decode/0/cudnn/cudaMallocAsync/any/fp16".to_string()), "{lines:?}");
    assert!(lines.contains(&"flux1/decode/0/miopen/expandable_segments/windows/fp16".to_string()), "{lines:?}");
}

#[test]
fn pricer_that_ignores_the_os() {
    let root = platform_root();
    let lines = query_path_caught(root.path(), &|c| Box::new(IgnoreOs(c)));
    assert!(lines.contains(&"flux1/decode/0/miopen/native/windows/fp16".to_string()), "{lines:?}");
}

#[test]
fn an_exception_naming_no_point_is_reported_once() {
    let root = scratch();
    let policy = root.path().join("fits/policy.toml");
    let text = fs::read_to_string(&policy).unwrap();
    fs::write(&policy, format!("{text}\n[[exception]]\nid = \"ghost\"\nreason = \"x\"\n")).unwrap();
    let j = caught(root.path(), "stale-exception");
    let stale = with_code(&j, "stale-exception");
    assert_eq!(stale.len(), 1, "{stale:?}");
    assert!(stale[0]["message"].as_str().unwrap().contains("names no point"));
}

#[test]
fn a_carried_line_exactly_at_legacy_passes() {
    // Legacy for MIOpen fp16 decodes is 2 × 3600 = 7200 B/px with no base.
    let root = scratch();
    add_carry(root.path(), "7200.00", 0);
    emit(root.path());
    let (rc, j) = verify_json(root.path());
    assert_eq!(rc, 0, "{:?}", j["findings"]);
}

#[test]
fn new_keys_since_emit_are_named() {
    let root = scratch();
    let f = root.path().join("new.csv");
    fs::write(
        &f,
        "id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_mib\n\
         xpu-1,test,xpu,native,linux,flux1,decode,0,bf16,512,512,1,900\n\
         mps-1,test,mps,native,macos,flux1,decode,0,fp16,512,512,1,1100\n\
         mps-2,test,mps,native,macos,flux1,decode,0,fp16,768,768,1,2300\n\
         mps-3,test,mps,native,macos,flux1,decode,0,fp16,1024,1024,1,4100\n",
    )
    .unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).assert().code(0);
    let j = caught(root.path(), "reproduce");
    let on_line = |line: &str| -> Vec<serde_json::Value> {
        j["findings"].as_array().unwrap().iter().filter(|f| f["line"] == line).cloned().collect()
    };
    let thin = on_line("flux1/decode/0/xpu/native/any/bf16");
    assert_eq!(thin.len(), 1, "{thin:?}");
    assert_eq!(thin[0]["code"], "points-changed");
    assert_eq!(thin[0]["file"], "measurements/vae.json");
    let fitted = on_line("flux1/decode/0/mps/native/any/fp16");
    assert_eq!(fitted.len(), 1, "{fitted:?}");
    let fitted = &fitted[0];
    assert_eq!(fitted["code"], "reproduce");
    assert_eq!(fitted["file"], "fits/vae.json");
    assert_eq!(fitted["points"].as_array().unwrap().len(), 3);
}

/// A pricer whose unmeasured rule forgets the legacy floor.
struct NoLegacyFloor(Coefficients);
impl Pricer for NoLegacyFloor {
    fn price(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<Price> {
        let mut p = self.0.price(q, env)?;
        if let (vramfit::pricing::Rule::LegacyFloor, Some(line)) = (p.rule, p.line_bytes) {
            p.bytes = line;
            p.rule = vramfit::pricing::Rule::UnmeasuredRule;
        }
        Ok(p)
    }
}

#[test]
fn pricer_that_forgets_the_legacy_floor() {
    let root = scratch();
    let broken = vramfit::verify::audit_with(root.path(), &|c| Box::new(NoLegacyFloor(c))).unwrap();
    let floor: Vec<_> = broken.findings.iter().filter(|f| f.code == vramfit::findings::Code::Floor).collect();
    assert!(!floor.is_empty(), "{:?}", broken.findings);
    assert!(floor.iter().any(|f| f.message.contains("sd/decode/0/miopen/fp16")), "{floor:?}");
    assert!(floor.iter().all(|f| f.file == "crates/vramfit-runtime/src/pricing/steps/mod.rs"));
}

#[test]
fn a_support_id_that_names_no_point_breaks_the_certificate() {
    let root = scratch();
    edit(
        &root.path().join("fits/vae.json"),
        "\"i7785061-flux1-decode-fp16-2048x2048\"\n      ],\n      \"support_kind\"",
        "\"i7785061-flux1-decode-fp16-2048x2049\"\n      ],\n      \"support_kind\"",
    );
    let j = caught(root.path(), "certificate");
    let msgs = messages(&j, "certificate");
    assert!(
        msgs.iter().any(|m| m.contains("support point i7785061-flux1-decode-fp16-2048x2049 is not among")),
        "{msgs:?}"
    );
}

#[test]
fn a_hull_edge_right_of_the_mean_is_not_the_optimum() {
    // The SD fp16 decode hull edge 1536² → 2048² covers every point, but the
    // mean size (about 1300²) lies to its left.
    let root = scratch();
    let store: serde_json::Value =
        serde_json::from_slice(&fs::read(root.path().join("measurements/vae.json")).unwrap()).unwrap();
    let demand = |id: &str| -> i128 {
        store["points"].as_array().unwrap().iter().find(|p| p["id"] == id).unwrap()["demand_bytes"].as_u64().unwrap()
            as i128
    };
    let (x1, y1) = (2_359_296i128, demand("i7785061-sdxl-decode-fp16-1536x1536"));
    let (x2, y2) = (4_194_304i128, demand("i7785061-sd15-decode-fp16-2048x2048"));
    let slope = format!("{}/{}", y2 - y1, x2 - x1);
    let base = format!("{}/{}", y1 * (x2 - x1) - (y2 - y1) * x1, x2 - x1);
    let f = root.path().join("fits/vae.json");
    let text = fs::read_to_string(&f).unwrap();
    let at = text.find("\"sd\",\n      \"op\": \"decode\",\n      \"tile\": 0,\n      \"conv_backend\": \"cudnn\",\n      \"allocator\": \"native\",\n      \"os\": \"any\",\n      \"dtype\": \"fp16\"").unwrap();
    let (head, tail) = text.split_at(at);
    let tail = tail
        .replacen(
            "\"i7785061-sdxl-decode-fp16-1024x1024\",\n        \"i7785061-sdxl-decode-fp16-1536x1536\"",
            "\"i7785061-sdxl-decode-fp16-1536x1536\",\n        \"i7785061-sd15-decode-fp16-2048x2048\"",
            1,
        )
        .replacen(
            "\"slope\": \"4240\",\n        \"base\": \"35651584\"",
            &format!("\"slope\": \"{slope}\",\n        \"base\": \"{base}\""),
            1,
        );
    fs::write(&f, format!("{head}{tail}")).unwrap();
    let j = caught(root.path(), "certificate");
    let msgs = messages(&j, "certificate");
    assert!(msgs.iter().any(|m| m.contains("the mean size lies outside the support edge")), "{msgs:?}");
    assert!(!msgs.iter().any(|m| m.contains("lies above") || m.contains("does not lie on")), "{msgs:?}");
}

#[test]
fn a_point_priced_exactly_at_its_demand_is_covered() {
    // A carried line of 7500.25 B/px + 64 MiB and a point at 512² whose
    // demand is exactly ceil(750025 × 262144 / 100) + 64 MiB.
    let root = scratch();
    add_carry(root.path(), "7500.25", 64);
    let f = root.path().join("exact.csv");
    fs::write(
        &f,
        "id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_bytes\n\
         exact-1,test,miopen,native,linux,sd,decode,0,fp16,512,512,1,2033254400\n",
    )
    .unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).assert().code(0);
    emit(root.path());
    let (rc, j) = verify_json(root.path());
    assert_eq!(rc, 0, "{:?}", j["findings"]);
}

/// Forgets that a line measured without an OS is a lower bound for every
/// OS: an OS-specific key is priced by its own line only.
struct OwnOsLineOnly(Coefficients);
impl Pricer for OwnOsLineOnly {
    fn price(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<Price> {
        let p = self.0.price(q, env)?;
        if p.rule != vramfit::pricing::Rule::AnyOsLine {
            return Ok(p);
        }
        // What a pricer without the rule answers: the key's own line if it
        // has one, else the unmeasured rule's largest same-kind line.
        let mut file = self.0.file.clone();
        file.lines.retain(|l| Some(&l.key) != p.priced_by.as_ref());
        Coefficients::new(file, self.0.source.clone())?.price(q, env)
    }
}

#[test]
fn pricer_that_forgets_the_os_less_lower_bound() {
    // The shipped FLUX.2 MIOpen lines: one on Linux, two without an OS.
    let root = scratch();
    let lines = query_path_caught(root.path(), &|c| Box::new(OwnOsLineOnly(c)));
    assert!(lines.contains(&"flux2/encode/0/miopen/native/any/bf16".to_string()), "{lines:?}");
    assert!(lines.contains(&"flux2/decode/0/miopen/native/any/bf16".to_string()), "{lines:?}");
}

#[test]
fn every_code_is_documented_in_the_verify_reference() {
    let readme = fs::read_to_string(repo().join("docs/verify.md")).unwrap();
    for c in vramfit::findings::Code::ALL {
        assert!(readme.contains(&format!("| `{c}` |")), "docs/verify.md lacks a row for `{c}`");
    }
}

/// `verify` prices through `quote` (numbers only); `reserve` through
/// `price`. Over every line key of the shipped file and of a file with
/// per-platform lines, every dtype, sizes inside, below and above the
/// measured ranges, batches 1–3, tiles, detected and given allocators and
/// OSes, and casts, the two give the same bytes, rule and key, or both fail.
#[test]
fn quote_and_price_agree_on_every_rule() {
    let platforms = platform_root();
    let files = [data_root().join("fits/vae.json"), platforms.path().join("fits/vae.json")];
    let mut compared = 0;
    let mut rules = std::collections::BTreeSet::new();
    for file in files {
        let c = Coefficients::new(vramfit::coefficients::load(&file).unwrap(), "test".into()).unwrap();
        let envs = [
            EnvSnapshot::default().on(Os::Linux),
            EnvSnapshot::default().with("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync").on(Os::Windows),
        ];
        let mut keys: Vec<vramfit::points::LineKey> = c.file.lines.iter().map(|l| l.key.clone()).collect();
        keys.extend(c.file.insufficient.iter().map(|l| l.key.clone()));
        for family in ["sd3", "cogview4", "nonexistent"] {
            keys.push(vramfit::points::LineKey { vae: family.into(), ..keys[0].clone() });
        }
        for k in &keys {
            for dtype in [Dtype::Fp16, Dtype::Bf16, Dtype::Fp32] {
                for (w, h) in [(256, 256), (1024, 768), (4096, 4096)] {
                    for batch in [1, 3] {
                        for given in [true, false] {
                            for loaded in [None, Some(Dtype::Fp16)] {
                                let mut q = Query::at_key(k, w, h, batch);
                                q.dtype = Some(dtype);
                                q.loaded_dtype = loaded;
                                if !given {
                                    q.allocator = Choice::Auto;
                                    q.os = Choice::Auto;
                                }
                                for env in &envs {
                                    let price = c.price(&q, env);
                                    let quote = c.quote(&q, env);
                                    match (&price, &quote) {
                                        (Ok(p), Ok(t)) => {
                                            assert_eq!((p.bytes, p.rule, &p.line), (t.bytes, t.rule, &t.line), "{q:?}");
                                            rules.insert(format!("{:?}", p.rule));
                                        }
                                        (Err(_), Err(_)) => {}
                                        _ => panic!("{q:?}: {price:?} vs {quote:?}"),
                                    }
                                    compared += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(compared > 5_000, "{compared}");
    for rule in ["FittedLine", "UnmeasuredRule", "LegacyFloor"] {
        assert!(rules.contains(rule), "{rule} never reached: {rules:?}");
    }
}

/// Answers an unmeasured dtype with the previous estimator, blind to the
/// other dtypes measured on the same platform (what vramfit did before).
struct OtherDtypeBlind(Coefficients);
impl Pricer for OtherDtypeBlind {
    fn price(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<Price> {
        let p = self.0.price(q, env)?;
        if p.rule == vramfit::pricing::Rule::UnmeasuredRule
            && p.priced_by.as_ref().is_some_and(|k| Some(k.dtype) != q.dtype)
        {
            return self.0.price_legacy(q, env);
        }
        Ok(p)
    }
}

#[test]
fn a_pricer_that_prices_an_unmeasured_dtype_below_a_measured_one_is_caught() {
    let root = scratch();
    let real = vramfit::verify::audit(root.path()).unwrap();
    assert!(real.ok, "{:?}", real.findings);
    let broken = vramfit::verify::audit_with(root.path(), &|c| Box::new(OtherDtypeBlind(c))).unwrap();
    let caught: Vec<&str> = broken
        .findings
        .iter()
        .filter(|f| f.message.contains("measured in fp16 on the same platform"))
        .map(|f| f.message.as_str())
        .collect();
    assert!(
        caught.iter().any(|m| m.starts_with("qwen_image/decode/0/cudnn/native/any/bf16 has no line")),
        "{:?}",
        broken.findings.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
}

// --- The derived tile --------------------------------------------------------

/// A pricer that forgets the output copies of a derived tile.
struct DropCopies(Coefficients);
impl Pricer for DropCopies {
    fn price(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<Price> {
        let mut p = self.0.price(q, env)?;
        p.bytes -= p.tiled.as_ref().map_or(0, |t| t.copies_bytes);
        Ok(p)
    }
}

/// A pricer that prices a derived tile at the whole image's pixels.
struct WholeImageTile(Coefficients);
impl Pricer for WholeImageTile {
    fn price(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<Price> {
        let p = self.0.price(q, env)?;
        if p.rule != vramfit::pricing::Rule::DerivedTile {
            return Ok(p);
        }
        self.0.price(&Query { tile: 0, ..q.clone() }, env)
    }
}

fn derived_caught(root: &Path, make: &dyn Fn(Coefficients) -> Box<dyn Pricer>) -> Vec<String> {
    let real = vramfit::verify::audit(root).unwrap();
    assert!(real.ok, "the real pricer passes: {:?}", real.findings);
    let broken = vramfit::verify::audit_with(root, make).unwrap();
    let keys: Vec<String> = broken
        .findings
        .iter()
        .filter(|f| f.code == vramfit::findings::Code::DerivedTile)
        .filter_map(|f| f.line.clone())
        .collect();
    assert!(!keys.is_empty(), "derived-tile must catch it: {:?}", broken.findings);
    keys
}

#[test]
fn pricer_that_drops_the_output_copies() {
    let root = scratch();
    let keys = derived_caught(root.path(), &|c| Box::new(DropCopies(c)));
    assert!(keys.contains(&"sd/decode/768/cudnn/native/any/fp16".to_string()), "{keys:?}");
}

#[test]
fn pricer_that_prices_a_tile_as_the_whole_image() {
    let root = scratch();
    let keys = derived_caught(root.path(), &|c| Box::new(WholeImageTile(c)));
    assert!(keys.contains(&"sd/decode/256/cudnn/native/any/fp16".to_string()), "{keys:?}");
}

/// A measured tile its derived price does not cover is a finding naming
/// the point; so is one it over-reserves past the bound.
#[test]
fn a_tiled_point_above_or_far_below_its_derived_price() {
    let root = scratch();
    let csv = "id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_mib\n\
               t768-hi,test,cudnn,native,linux,sd,decode,768,fp16,2048,2048,1,5000\n\
               t768-lo,test,cudnn,native,linux,sd,decode,768,fp16,1536,1536,1,1000\n";
    let f = root.path().join("tiles.csv");
    fs::write(&f, csv).unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).assert().code(0);
    emit_forced(root.path(), "derived-tile");
    let j = caught(root.path(), "derived-tile");
    let found = with_code(&j, "derived-tile");
    let about = |id: &str| found.iter().find(|f| f["points"][0] == id).unwrap_or_else(|| panic!("{id}: {found:?}"));
    assert!(about("t768-hi")["message"].as_str().unwrap().contains("is not covered by the derived tile price"));
    assert!(about("t768-lo")["message"].as_str().unwrap().contains("is over-reserved"));
    assert_eq!(about("t768-hi")["line"], "sd/decode/768/cudnn/native/any/fp16");
    // Listing the low one as an exception silences its finding; the
    // exception is not stale (the derived price is what is over the bound).
    let policy = root.path().join("fits/policy.toml");
    let text = fs::read_to_string(&policy).unwrap();
    fs::write(&policy, format!("{text}\n[[exception]]\nid = \"t768-lo\"\nreason = \"test\"\n")).unwrap();
    emit_forced(root.path(), "derived-tile");
    let (_, j) = verify_json(root.path());
    let left: Vec<String> = with_code(&j, "derived-tile").iter().map(|f| f["points"][0].to_string()).collect();
    assert_eq!(left, ["\"t768-hi\""]);
    assert!(with_code(&j, "stale-exception").is_empty(), "{:?}", j["findings"]);
}

/// The leave-the-tile-out crossval prices each tile from the untiled line
/// alone, with the same numbers `reserve` gives a tile nobody measured.
#[test]
fn crossval_by_tile_prices_like_reserve() {
    let out = on_data_root().args(["--format", "json", "crossval", "--by", "tile"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let j = json_of(&out);
    assert_eq!(j["by"], "tile");
    assert_eq!(j["held_out"], j["covered"], "every measured tile is covered: {j}");
    assert!(j["held_out"].as_u64().unwrap() >= 18);
    let line = j["lines"].as_array().unwrap().iter().find(|l| l["tile"] == 512 && l["dtype"] == "fp16").unwrap();
    let p = &line["points"][0];
    let id = p["id"].as_str().unwrap();
    // The same point's key on a root with the tile's own line taken out: reserve derives it.
    let root = scratch();
    let policy = root.path().join("fits/policy.toml");
    let text = fs::read_to_string(&policy).unwrap();
    let shown = stdout_of(&on_data_root().args(["--format", "json", "points", "--tile", "512"]).output().unwrap());
    let points: serde_json::Value = serde_json::from_str(&shown).unwrap();
    let mut excluded = String::new();
    let mut size = None;
    for pt in points["points"].as_array().unwrap() {
        if pt["id"] == id {
            size = Some((pt["width"].as_u64().unwrap(), pt["height"].as_u64().unwrap(), pt["run_dtype"].clone()));
        }
        excluded.push_str(&format!("\n[[exclude]]\nid = {}\nreason = \"test\"\n", pt["id"]));
    }
    fs::write(&policy, format!("{text}{excluded}")).unwrap();
    emit(root.path());
    let (w, h, _) = size.unwrap();
    let size = format!("{w}x{h}");
    let r = vramfit()
        .arg("--root")
        .arg(root.path())
        .args([
            "--format", "json", "reserve", "sd", "decode", &size, "--dtype", "fp16", "--tile", "512", "--os", "linux",
        ])
        .output()
        .unwrap();
    let r = json_of(&r);
    assert_eq!(r["rule"], "derived-tile");
    assert_eq!(r["bytes"], p["reserve_bytes"]);
}

// --- The attention phase ------------------------------------------------------

/// A pricer that forgets the attention phase: the line phase alone.
struct DropAttention(Coefficients);
impl Pricer for DropAttention {
    fn price(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<Price> {
        let mut p = self.0.price(q, env)?;
        if let Some(a) = p.attention.take() {
            p.bytes = a.line_phase_bytes;
            p.rule = a.line_rule;
        }
        Ok(p)
    }
}

/// A pricer that sizes a tile's attention by the whole image.
struct WholeImageAttention(Coefficients);
impl Pricer for WholeImageAttention {
    fn price(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<Price> {
        let p = self.0.price(q, env)?;
        let whole = self.0.price(&Query { tile: 0, ..q.clone() }, env)?;
        match (&p.attention, &whole.attention) {
            (Some(a), Some(w)) if w.phase_bytes > p.bytes => {
                let mut p = p.clone();
                p.bytes = w.phase_bytes.max(a.line_phase_bytes);
                Ok(p)
            }
            _ => Ok(p),
        }
    }
}

fn attention_caught(make: &dyn Fn(Coefficients) -> Box<dyn Pricer>) -> Vec<String> {
    let root = scratch();
    let real = vramfit::verify::audit(root.path()).unwrap();
    assert!(real.ok, "the real pricer passes: {:?}", real.findings);
    let broken = vramfit::verify::audit_with(root.path(), make).unwrap();
    let keys: Vec<String> = broken
        .findings
        .iter()
        .filter(|f| f.code == vramfit::findings::Code::Attention)
        .filter_map(|f| f.line.clone())
        .collect();
    assert!(!keys.is_empty(), "attention must catch it: {:?}", broken.findings);
    keys
}

#[test]
fn pricer_that_drops_the_attention_phase() {
    let keys = attention_caught(&|c| Box::new(DropAttention(c)));
    assert!(keys.contains(&"flux2/decode/0/miopen/native/linux/bf16".to_string()), "{keys:?}");
    assert!(keys.iter().any(|k| k.contains("/mps/")), "{keys:?}");
    assert!(keys.iter().all(|k| !k.contains("/cudnn/")), "{keys:?}");
}

#[test]
fn pricer_that_sizes_a_tiles_attention_by_the_image() {
    let keys = attention_caught(&|c| Box::new(WholeImageAttention(c)));
    assert!(keys.iter().all(|k| !k.contains("/0/")), "only tiled keys differ: {keys:?}");
}

/// A point the attention phase explains stays out of the line's fit and is
/// still covered; a point above its phase is fitted as usual.
#[test]
fn a_point_the_attention_phase_explains_is_priced_by_it_not_fitted() {
    let root = scratch();
    let line = "flux2/decode/0/miopen/native/linux/bf16";
    let before = json_of(&vramfit().arg("--root").arg(root.path()).args(["--format", "json", "fit"]).output().unwrap());
    let find =
        |j: &serde_json::Value| j["lines"].as_array().unwrap().iter().find(|l| key_of(l) == line).cloned().unwrap();
    let csv = "id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_mib\n\
               attn-2048,test,miopen,native,linux,flux2,decode,0,bf16,2048,2048,1,45000\n";
    let f = root.path().join("attn.csv");
    fs::write(&f, csv).unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).assert().code(0);
    emit(root.path());
    let after = json_of(&vramfit().arg("--root").arg(root.path()).args(["--format", "json", "fit"]).output().unwrap());
    assert_eq!(find(&before)["slope"], find(&after)["slope"], "the line is not bent by an S² demand");
    assert_eq!(find(&before)["base_mib"], find(&after)["base_mib"]);
    let (rc, j) = verify_json(root.path());
    assert_eq!(rc, 0, "covered by the phase: {:?}", j["findings"]);
    // Above its phase, the same point is a line-phase demand and is fitted.
    let csv = "id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_mib\n\
               attn-1536,test,miopen,native,linux,flux2,decode,0,bf16,1536,1536,1,17000\n";
    fs::write(&f, csv).unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).assert().code(0);
    emit(root.path());
    let shipped: serde_json::Value =
        serde_json::from_slice(&fs::read(root.path().join("fits/vae.json")).unwrap()).unwrap();
    let ids = find(&shipped)["point_ids"].to_string();
    assert!(ids.contains("attn-1536") && !ids.contains("attn-2048"), "{ids}");
}

/// A pricer that answers each query by its own rules alone, without the
/// monotone composition (the mistake the composition exists for): verify's
/// monotone check finds it on the tests' root, naming both requests.
#[test]
fn verify_catches_a_pricer_without_the_monotone_composition() {
    use vramfit::pricing::platform::EnvSnapshot;
    use vramfit::pricing::{Coefficients, Price, Pricer, Query, Quote};
    struct OwnRuleOnly(Coefficients);
    impl Pricer for OwnRuleOnly {
        fn price(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<Price> {
            self.0.price(q, env)
        }
        fn quote(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<Quote> {
            self.0.quote(q, env).map(|q| Quote { bytes: q.own.1, rule: q.own.0, ..q })
        }
    }
    let root = data_root();
    assert!(vramfit::verify::audit(&root).unwrap().ok, "the real pricer passes");
    let broken = vramfit::verify::audit_with(&root, &|c| Box::new(OwnRuleOnly(c)) as Box<dyn Pricer>).unwrap();
    let monotone: Vec<&str> = broken
        .findings
        .iter()
        .filter(|f| f.code == vramfit::findings::Code::Monotone)
        .map(|f| f.message.as_str())
        .collect();
    assert!(!monotone.is_empty(), "{:?}", broken.findings);
    assert!(monotone.iter().any(|m| m.contains("below")), "{monotone:?}");
}

#[test]
fn a_first_use_its_fresh_points_do_not_prove_is_a_finding() {
    // Three fresh points of one platform whose driver delta is 100 MiB
    // (and, at the largest, 120 MiB) above the reserved delta.
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("fits")).unwrap();
    let policy = |mib: u64, allocator: &str| {
        format!(
            "[vae.sd]\nmodels = [\"sdxl\"]\n\n[[first_use]]\nconv_backend = \"cudnn\"\nallocator = \"{allocator}\"\n\
             os = \"linux\"\nmib = {mib}\nsource = \"a test\"\n"
        )
    };
    let mut csv = String::from(
        "id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,context,reserved_bytes,driver_bytes\n",
    );
    for (id, side, reserved, over) in
        [("a", 512u64, 1u64 << 30, 100u64), ("b", 1024, 4 << 30, 100), ("c", 1536, 9 << 30, 120)]
    {
        csv.push_str(&format!(
            "{id},t,cudnn,native,linux,sd,decode,0,fp16,{side},{side},1,fresh,{reserved},{}\n",
            reserved + over * 1_048_576
        ));
    }
    // A warm point with a larger gap proves nothing: only fresh points count.
    csv.push_str(&format!(
        "w,t,cudnn,native,linux,sd,decode,0,fp16,2048,2048,1,warm,{},{}\n",
        16u64 << 30,
        (16u64 << 30) + (500 << 20)
    ));
    std::fs::write(root.path().join("p.csv"), csv).unwrap();
    let run = |policy_text: String| {
        std::fs::write(root.path().join("fits/policy.toml"), policy_text).unwrap();
        vramfit().arg("--root").arg(root.path()).args(["emit", "--force"]).output().unwrap();
        vramfit().arg("--root").arg(root.path()).args(["--format", "json", "verify"]).output().unwrap()
    };
    std::fs::write(root.path().join("fits/policy.toml"), policy(120, "native")).unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(root.path().join("p.csv")).assert().code(0);
    let first_use = |out: &std::process::Output| -> Vec<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "first-use").cloned().collect()
    };
    // 120 MiB is what they prove: no finding; the shipped file says so.
    let ok = run(policy(120, "native"));
    assert!(first_use(&ok).is_empty(), "{}", String::from_utf8_lossy(&ok.stdout));
    let shipped: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.path().join("fits/vae.json")).unwrap()).unwrap();
    assert_eq!(shipped["first_use"][0]["measured_mib"], 120);
    assert_eq!(shipped["first_use"][0]["points"], serde_json::json!(["a", "b", "c"]));
    // Declared low (or high): a finding naming both figures.
    for wrong in [100u64, 166] {
        let bad = run(policy(wrong, "native"));
        let f = first_use(&bad);
        assert_eq!(f.len(), 1, "{wrong}");
        assert!(
            f[0]["message"]
                .as_str()
                .unwrap()
                .contains(&format!("declared {wrong} MiB; its 3 fresh point(s) prove 120 MiB")),
            "{f:?}"
        );
        assert_eq!(bad.status.code(), Some(1));
    }
    // A platform no fresh point measured: nothing proves it; and the
    // platform the fresh points were measured on declares none.
    let none = run(policy(120, "cudaMallocAsync"));
    let f = first_use(&none);
    assert_eq!(f.len(), 2, "{f:?}");
    assert!(f[0]["message"].as_str().unwrap().contains("no included fresh point"), "{f:?}");
    assert!(
        f[1]["message"]
            .as_str()
            .unwrap()
            .contains("3 fresh point(s) on cudnn native linux prove a first use of 120 MiB"),
        "{f:?}"
    );
}
