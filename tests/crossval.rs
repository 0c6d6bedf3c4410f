//! `vramfit crossval`, checked against an independent brute-force refit
//! written here: every candidate line (through two points, through the
//! origin, flat) that covers the training points, the least total
//! over-reservation, the margin and rounding applied from the README's
//! formulas. No fit code of the library is used; only its exact rationals.

use crate::common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use vramfit::exact::Ratio;

#[derive(Clone)]
struct P {
    x: i128,
    y: i128,
}

fn r(n: i128) -> Ratio {
    Ratio::int(n)
}

fn ge(a: &Ratio, b: &Ratio) -> bool {
    a.cmp_exact(b).unwrap() != std::cmp::Ordering::Less
}

/// The least-total covering line `(a, b)`, `a, b ≥ 0`; ties to the steeper.
fn brute_force(train: &[P]) -> (Ratio, Ratio) {
    let mut cands: Vec<(Ratio, Ratio)> = Vec::new();
    let ymax = train.iter().map(|p| p.y).max().unwrap();
    cands.push((r(0), r(ymax)));
    for p in train {
        cands.push((Ratio::new(p.y, p.x).unwrap(), r(0)));
        for q in train.iter().filter(|q| q.x > p.x) {
            let a = Ratio::new(q.y - p.y, q.x - p.x).unwrap();
            let b = r(p.y).checked_sub(a.checked_mul(r(p.x)).unwrap()).unwrap();
            cands.push((a, b));
        }
    }
    let sx: i128 = train.iter().map(|p| p.x).sum();
    let n = train.len() as i128;
    let mut best: Option<(Ratio, Ratio, Ratio)> = None;
    for (a, b) in cands {
        if a.is_negative() || b.is_negative() {
            continue;
        }
        let covers = train.iter().all(|p| ge(&a.checked_mul(r(p.x)).unwrap().checked_add(b).unwrap(), &r(p.y)));
        if !covers {
            continue;
        }
        let cost = a.checked_mul(r(sx)).unwrap().checked_add(b.checked_mul(r(n)).unwrap()).unwrap();
        let better = match &best {
            None => true,
            Some((bc, ba, _)) => match cost.cmp_exact(bc).unwrap() {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Equal => a.cmp_exact(ba).unwrap() == std::cmp::Ordering::Greater,
                std::cmp::Ordering::Greater => false,
            },
        };
        if better {
            best = Some((cost, a, b));
        }
    }
    let (_, a, b) = best.unwrap();
    (a, b)
}

/// The shipped rounding: `ceil(a × 1.05 × 100)` hundredths of a byte per
/// pixel and `ceil(b × 1.05 / 2^20)` MiB, priced `ceil(centi × x / 100) + base × 2^20`.
fn price((a, b): &(Ratio, Ratio), x: i128) -> i128 {
    let centi = a.checked_mul(r(105)).unwrap().ceil();
    let base = b.checked_mul(Ratio::new(21, 20 << 20).unwrap()).unwrap().ceil();
    (centi * x + 99) / 100 + base * (1 << 20)
}

fn floor4(num: i128, den: i128) -> String {
    let s = num * 10_000 / den;
    format!("{}.{:04}", s / 10_000, s % 10_000)
}

#[test]
fn crossval_by_size_matches_a_brute_force_refit() {
    let out = vramfit().current_dir(data_root()).args(["--format", "json", "crossval"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let cv = json_of(&out);
    let fit = json_of(&vramfit().current_dir(data_root()).args(["--format", "json", "fit"]).output().unwrap());
    assert_eq!(fit["margin"], "0.05");
    let store: serde_json::Value =
        serde_json::from_slice(&fs::read(data_root().join("measurements/vae.json")).unwrap()).unwrap();
    let by_id: BTreeMap<String, P> = store["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let id = p["id"].as_str().unwrap().to_string();
            let q = P { x: p["pixels"].as_u64().unwrap() as i128, y: p["demand_bytes"].as_u64().unwrap() as i128 };
            (id, q)
        })
        .collect();
    let (mut held, mut covered) = (0usize, 0usize);
    let mut lines_checked = 0;
    let mut positions = BTreeMap::new();
    for line in fit["lines"].as_array().unwrap().iter().filter(|l| l["kind"] == "fitted") {
        let pts: Vec<P> =
            line["points"].as_array().unwrap().iter().map(|id| by_id[id.as_str().unwrap()].clone()).collect();
        let sizes: BTreeSet<i128> = pts.iter().map(|p| p.x).collect();
        let (mut l_held, mut l_cov) = (0usize, 0usize);
        let mut worst: Option<(i128, i128)> = None;
        for &s in &sizes {
            let train: Vec<P> = pts.iter().filter(|p| p.x != s).cloned().collect();
            if train.iter().map(|p| p.x).collect::<BTreeSet<_>>().len() < 2 {
                continue;
            }
            let line_fit = brute_force(&train);
            let left: BTreeSet<i128> = train.iter().map(|p| p.x).collect();
            for (i, p) in pts.iter().enumerate().filter(|(_, p)| p.x == s) {
                positions.insert(ids_of(line)[i].clone(), expected_position(p.x, &left));
                let res = price(&line_fit, p.x);
                l_held += 1;
                l_cov += usize::from(res >= p.y);
                if worst.is_none_or(|(wn, wd)| res * wd < wn * p.y) {
                    worst = Some((res, p.y));
                }
            }
        }
        let key = key_of(line);
        let c = cv["lines"].as_array().unwrap().iter().find(|c| key_of(c) == key).unwrap();
        assert_eq!(c["points"].as_array().unwrap().len(), l_held, "{key}: held out");
        assert_eq!(c["covered"].as_u64().unwrap() as usize, l_cov, "{key}: covered");
        assert_eq!(c["worst_ratio"].as_str(), worst.map(|(n, d)| floor4(n, d)).as_deref(), "{key}: worst ratio");
        held += l_held;
        covered += l_cov;
        lines_checked += 1;
    }
    assert_eq!(lines_checked, 18);
    // Each held-out point says where its size sat among the sizes left.
    let mut kinds = BTreeSet::new();
    for p in cv["lines"].as_array().unwrap().iter().flat_map(|c| c["points"].as_array().unwrap()) {
        let want = &positions[p["id"].as_str().unwrap()];
        let mut got = p["position"].clone();
        got.as_object_mut().unwrap().remove("traced");
        assert_eq!(got.as_object_mut().unwrap().remove("unit"), Some("pixels".into()), "{}", p["id"]);
        assert_eq!(&got, want, "{}", p["id"]);
        kinds.insert(want["kind"].as_str().unwrap().to_string());
    }
    assert!(kinds.contains("between") && kinds.contains("past") && kinds.contains("below"), "{kinds:?}");
    assert_eq!((cv["held_out"].as_u64().unwrap() as usize, cv["covered"].as_u64().unwrap() as usize), (held, covered));
    assert!(covered < held, "the shipped data has under-reserved held-out points, and they come first");
    assert!(cv["lines"][0]["covered"].as_u64() < Some(cv["lines"][0]["points"].as_array().unwrap().len() as u64));
}

fn ids_of(line: &serde_json::Value) -> Vec<String> {
    line["points"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

/// Where `x` sits among the training sizes `left`, as crossval's JSON says.
fn expected_position(x: i128, left: &BTreeSet<i128>) -> serde_json::Value {
    let (lo, hi) = (*left.first().unwrap(), *left.last().unwrap());
    if x < lo {
        serde_json::json!({"kind": "below", "smallest": lo})
    } else if x > hi {
        serde_json::json!({"kind": "past", "largest": hi})
    } else {
        let below = left.iter().filter(|s| **s < x).max().unwrap();
        let above = left.iter().filter(|s| **s > x).min().unwrap();
        serde_json::json!({"kind": "between", "below": below, "above": above})
    }
}

/// A miss says what would settle it: the table names the sizes either
/// side of an interior miss, or the largest size past which it was priced.
#[test]
fn a_miss_names_the_sizes_around_it() {
    let run = |args: &[&str]| vramfit().current_dir(data_root()).args(args).output().unwrap();
    let j = json_of(&run(&["--format", "json", "crossval"]));
    let table = stdout_of(&run(&["crossval"]));
    let misses = crossval_misses(&j);
    assert!(!misses.is_empty());
    let px = |v: &serde_json::Value| vramfit::units::thousands(v.as_u64().unwrap());
    for m in &misses {
        let pos = &m["position"];
        let said = match pos["kind"].as_str().unwrap() {
            "between" => format!("between {} and {} px", px(&pos["below"]), px(&pos["above"])),
            "past" => format!("past the largest size left ({} px", px(&pos["largest"])),
            "below" => format!("below the smallest size left ({} px)", px(&pos["smallest"])),
            k => panic!("{k}"),
        };
        let row = table.lines().find(|l| l.contains(m["id"].as_str().unwrap())).unwrap();
        assert!(row.contains(&said), "{row} lacks {said}");
    }
    let n = |k: &str| misses.iter().filter(|m| m["position"]["kind"] == k).count();
    let tally = table.lines().find(|l| l.starts_with("under-reserved:")).unwrap();
    for (k, words) in [("between", "between two measured sizes"), ("past", "past the largest size left")] {
        if n(k) > 0 {
            assert!(tally.contains(&format!("{} {words}", n(k))), "{tally}");
        }
    }
}

#[test]
fn fail_under_and_by_source() {
    let run = |args: &[&str]| vramfit().current_dir(data_root()).args(args).output().unwrap();
    assert_eq!(run(&["crossval", "--fail-under", "99"]).status.code(), Some(1), "97.5% < 99%");
    assert_eq!(run(&["crossval", "--fail-under", "90"]).status.code(), Some(0));
    let j = json_of(&run(&["--format", "json", "crossval", "--by", "source"]));
    assert_eq!(j["by"], "source");
    let nv: Vec<&str> = j["not_validated"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(nv.iter().any(|n| n.contains("only one source")), "{nv:?}");
    let md = stdout_of(&run(&["--format", "markdown", "crossval"]));
    assert!(md.starts_with("| line | folds | held out | covered |"), "{md}");
}

/// A root of two families of one class, written here: traced shapes of
/// 1 000 and 2 000 bytes a pixel, and measured demands of 2× and 3× their
/// traces. Leaving a family out must price it from the other family's
/// calibration alone (its own points would hide the difference).
fn two_family_root(traced_margin: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("fits")).unwrap();
    fs::create_dir_all(root.join("measurements/traced")).unwrap();
    fs::write(
        root.join("fits/policy.toml"),
        format!(
            "[vae.sd]\nclass = \"kl-2d\"\n\n[vae.flux1]\nclass = \"kl-2d\"\n\n\
             [traced]\nmargin = \"{traced_margin}\"\nreason = \"a test\"\n"
        ),
    )
    .unwrap();
    let head = "family,vae,op,dtype,tile,temporal_tile,width,height,frames,batch,traced_bytes,config_source\n";
    let mut csv =
        String::from("id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_bytes\n");
    for (family, per_pixel, times) in [("sd", 1000u64, 2u64), ("flux1", 2000, 3)] {
        let mut traced = head.to_string();
        for side in [512u64, 1024, 2048] {
            let bytes = per_pixel * side * side;
            traced.push_str(&format!("{family},{family},decode,fp16,0,0,{side},{side},1,1,{bytes},\"made, here\"\n"));
            if side < 2048 {
                csv.push_str(&format!(
                    "{family}-{side},test,cudnn,native,linux,{family},decode,0,fp16,{side},{side},1,{}\n",
                    times * bytes
                ));
            }
        }
        fs::write(root.join(format!("measurements/traced/{family}.csv")), traced).unwrap();
    }
    fs::write(root.join("points.csv"), csv).unwrap();
    vramfit().arg("--root").arg(root).arg("ingest").arg(root.join("points.csv")).assert().code(0);
    dir
}

/// `crossval --by family --format json` on a root: its exit code and answer.
fn family_folds(dir: &tempfile::TempDir) -> (Option<i32>, serde_json::Value) {
    let out = vramfit()
        .arg("--root")
        .arg(dir.path())
        .args(["--format", "json", "crossval", "--by", "family"])
        .output()
        .unwrap();
    (out.status.code(), serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn a_family_is_priced_from_the_other_families_calibration() {
    let dir = two_family_root("0");
    let (code, j) = family_folds(&dir);
    assert_eq!(j["by"], "family");
    let mut seen = BTreeMap::new();
    for line in j["lines"].as_array().unwrap() {
        for p in line["points"].as_array().unwrap() {
            seen.insert(p["id"].as_str().unwrap().to_string(), (p["ratio"].clone(), p["fold"].clone()));
        }
    }
    // FLUX.1 (3× its trace) priced by SD's 2×: two thirds; SD (2×) by FLUX.1's 3×: one and a half.
    for side in [512, 1024] {
        assert_eq!(seen[&format!("flux1-{side}")].0, "0.6666", "{j}");
        assert_eq!(seen[&format!("sd-{side}")].0, "1.5000", "{j}");
        assert_eq!(seen[&format!("sd-{side}")].1, "family sd");
    }
    assert_eq!(j["covered"], 2);
    assert_eq!(code, Some(0));
    // The declared margin grows the calibration: 2 × 1.6 = 3.2 covers FLUX.1.
    let dir = two_family_root("0.6");
    let (_, j) = family_folds(&dir);
    assert_eq!(j["covered"], 4, "{j}");
}

/// A family alone in its class on a platform cannot be validated, and says so.
#[test]
fn a_family_alone_in_its_class_is_not_validated() {
    let dir = two_family_root("0");
    let policy = dir.path().join("fits/policy.toml");
    let text = fs::read_to_string(&policy).unwrap();
    fs::write(&policy, text.replacen("[vae.flux1]\nclass = \"kl-2d\"", "[vae.flux1]\nclass = \"causal-3d\"", 1))
        .unwrap();
    let (_, j) = family_folds(&dir);
    assert_eq!(j["held_out"], 0, "{j}");
    let why = j["not_validated"].to_string();
    assert!(why.contains("no other family of class kl-2d") && why.contains("causal-3d"), "{why}");
}

/// `verify` flags a family whose demand over its trace lies outside its
/// class's band (the other families', widened by the traced margin), and
/// only then: SD at 2× its trace and FLUX.1 at 3× are 1.5× apart.
#[test]
fn verify_flags_a_family_outside_its_class_band() {
    for (margin, flagged) in [("0.2", true), ("0.6", false)] {
        let dir = two_family_root(margin);
        vramfit().arg("--root").arg(dir.path()).args(["emit", "--force"]).output().unwrap();
        let out = vramfit().arg("--root").arg(dir.path()).args(["--format", "json", "verify"]).output().unwrap();
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let bands: Vec<&serde_json::Value> =
            j["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "traced-band").collect();
        if flagged {
            assert_eq!(out.status.code(), Some(1), "{j}");
            assert_eq!(bands.len(), 2, "each family outside the other's band: {j}");
            let flux = bands.iter().find(|f| f["message"].as_str().unwrap().starts_with("family flux1")).unwrap();
            // 3.000 against SD's 2.000, widened by 1.2 to 1.666–2.400.
            assert!(flux["message"].as_str().unwrap().contains("3.000–3.000"), "{flux}");
            assert!(flux["message"].as_str().unwrap().contains("1.666–2.400"), "{flux}");
            assert_eq!(flux["points"].as_array().unwrap().len(), 2);
        } else {
            assert!(bands.is_empty(), "{j}");
        }
    }
}
