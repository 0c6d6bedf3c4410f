//! `vramfit plan`: pinned plans for every verdict and budget branch, `plan`
//! agreeing with `reserve`, and verdicts that are never silent.

use crate::common::*;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// sd fp16 decode line: 4452.00 B/px × 1024² = 4 668 260 352 B an image, + 36 MiB.
const SDXL_FP16_1024_ITEM: u64 = 4_668_260_352;
const SDXL_FP16_BASE: u64 = 36 * MIB;

fn plan(args: &[&str]) -> (i32, serde_json::Value, String) {
    let out = on_data_root().args(["--format", "json", "plan"]).args(args).output().unwrap();
    let code = out.status.code().unwrap();
    let j = if code == 2 { serde_json::Value::Null } else { json_of(&out) };
    (code, j, stderr_of(&out))
}

fn plan_ok(args: &[&str]) -> serde_json::Value {
    let (code, j, err) = plan(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    j
}

fn reserve_bytes(args: &[&str]) -> u64 {
    let out = on_data_root().args(["--format", "json", "reserve"]).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    json_of(&out)["bytes"].as_u64().unwrap()
}

#[test]
fn full_when_the_whole_batch_fits() {
    let j = plan_ok(&[
        "sdxl",
        "decode",
        "1024x1024",
        "--batch",
        "2",
        "--dtype",
        "fp16",
        "--os",
        "linux",
        "--free",
        "24GiB",
    ]);
    assert_eq!(j["verdict"], "full");
    assert_eq!(j["budget_bytes"], 24 * GIB);
    assert_eq!(j["budget_from"], "share");
    assert_eq!(j["group_size"], 2);
    assert_eq!(j["groups"], 1);
    assert_eq!(j["boundaries"], serde_json::json!([[0, 2]]));
    assert_eq!(j["peak_bytes"], 2 * SDXL_FP16_1024_ITEM + SDXL_FP16_BASE);
    assert_eq!(j["tile"], serde_json::Value::Null);
}

#[test]
fn chunked_with_the_largest_group_that_fits_and_reserve_agrees() {
    let args = ["sdxl", "decode", "1024x1024", "--batch", "16", "--dtype", "fp16", "--os", "linux", "--free", "24GiB"];
    let j = plan_ok(&args);
    // floor((24 GiB − 36 MiB) / 4 668 260 352) = 5 fit: 4 passes, so 4 groups of 4.
    assert_eq!(j["verdict"], "chunked");
    assert_eq!(j["group_size"], 4);
    assert_eq!(j["groups"], 4);
    assert_eq!(j["boundaries"], serde_json::json!([[0, 4], [12, 16]]));
    assert_eq!(j["peak_bytes"], 4 * SDXL_FP16_1024_ITEM + SDXL_FP16_BASE);
    let base = ["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "linux"];
    let at = |b: &str| {
        let mut a = base.to_vec();
        a.extend(["--batch", b]);
        reserve_bytes(&a)
    };
    assert_eq!(j["peak_bytes"].as_u64().unwrap(), at("4"), "plan and reserve agree for a group");
    assert!(at("5") <= 24 * GIB && at("6") > 24 * GIB, "5 is the largest group that fits");
}

#[test]
fn chunked_on_the_unmeasured_rule_agrees_with_reserve_too() {
    // cudaMallocAsync has no line of its own: the search goes through the same pricer.
    let args = [
        "sdxl",
        "decode",
        "768x768",
        "--batch",
        "9",
        "--dtype",
        "fp16",
        "--allocator",
        "cudaMallocAsync",
        "--os",
        "linux",
        "--free",
        "10GiB",
    ];
    let j = plan_ok(&args);
    assert_eq!(j["verdict"], "chunked");
    let g = j["group_size"].as_u64().unwrap().to_string();
    let r = reserve_bytes(&[
        "sdxl",
        "decode",
        "768x768",
        "--dtype",
        "fp16",
        "--allocator",
        "cudaMallocAsync",
        "--os",
        "linux",
        "--batch",
        &g,
    ]);
    assert_eq!(j["peak_bytes"].as_u64().unwrap(), r);
}

#[test]
fn tiled_when_not_even_one_item_fits() {
    let j = plan_ok(&[
        "sdxl",
        "decode",
        "2048x2048",
        "--dtype",
        "fp32",
        "--os",
        "linux",
        "--free",
        "8GiB",
        "--share",
        "0.5",
    ]);
    assert_eq!(j["verdict"], "tiled");
    assert_eq!(j["budget_bytes"], 4 * GIB);
    assert_eq!(j["budget_from"], "share");
    // The largest tile (a multiple of 64) whose own `reserve` fits the
    // budget, and the next one up does not.
    let tile = j["tile"].as_u64().unwrap();
    assert!(tile.is_multiple_of(64) && tile < 2048, "{tile}");
    let at = |t: u64| {
        let t = t.to_string();
        reserve_bytes(&["sdxl", "decode", "2048x2048", "--dtype", "fp32", "--os", "linux", "--tile", &t])
    };
    assert_eq!(j["peak_bytes"].as_u64().unwrap(), at(tile));
    assert!(at(tile) <= 4 * GIB && at(tile + 64) > 4 * GIB, "{} {}", at(tile), at(tile + 64));
    let reasons = j["reasons"].to_string();
    assert!(reasons.contains(&format!("tile {tile} is the largest of")), "{reasons}");
    assert!(reasons.contains(&format!("tile {} reserves", tile + 64)), "{reasons}");
}

/// A tile that fits only by the legacy floor's guess is passed over for a
/// smaller one priced from a measured line.
#[test]
fn a_measured_or_derived_tile_is_preferred_to_a_legacy_guess() {
    let root = scratch();
    // A root with no tiling rule: unmeasured tiles of a measured platform
    // fall back to the legacy floor.
    let policy = root.path().join("fits/policy.toml");
    let text = std::fs::read_to_string(&policy).unwrap();
    let start = text.find("[tiling]").unwrap();
    let end = text.find("# --- Points left out").unwrap();
    std::fs::write(&policy, format!("{}{}", &text[..start], &text[end..])).unwrap();
    let out = vramfit().arg("--root").arg(root.path()).arg("emit").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // Without the rule every unmeasured tile of this platform is the legacy
    // floor's guess; the measured 512 line is chosen over a larger guess.
    // Legacy: 576-px tiles 3731 MiB (fit 4000 MiB), 640 px 4650 MiB (do not);
    // the measured 512 line: 1645 MiB.
    let args = ["plan", "sdxl", "decode", "2048x2048", "--dtype", "fp32", "--os", "linux", "--free", "4000MiB"];
    let out = vramfit().arg("--root").arg(root.path()).args(["--format", "json"]).args(args).output().unwrap();
    let j = json_of(&out);
    assert_eq!(j["tile"], 512, "{j}");
    let reasons = j["reasons"].to_string();
    assert!(reasons.contains("fits only by the legacy floor's guess"), "{reasons}");
}

#[test]
fn host_is_never_silent_and_fail_on_host_exits_1() {
    let args = ["sdxl", "decode", "2048x2048", "--dtype", "fp32", "--os", "linux", "--free", "512MiB"];
    let (code, j, err) = plan(&args);
    assert_eq!(code, 0);
    assert_eq!(j["verdict"], "host");
    assert_eq!(j["group_size"], serde_json::Value::Null);
    assert!(err.contains("warning: part of this work cannot run on the device"), "{err}");
    let smallest = reserve_bytes(&["sdxl", "decode", "2048x2048", "--dtype", "fp32", "--os", "linux", "--tile", "64"]);
    let want = format!("no tile fits: even tile 64 reserves {} MiB > budget 512 MiB", smallest.div_ceil(MIB));
    assert!(err.contains(&want), "the numbers that forced it: {err}");
    let mut failing = args.to_vec();
    failing.extend(["--fail-on", "host"]);
    assert_eq!(plan(&failing).0, 1);
    let out = on_data_root().arg("plan").args(args).output().unwrap();
    assert!(stdout_of(&out).starts_with("HOST"), "{}", stdout_of(&out));
}

#[test]
fn fail_on_is_a_threshold() {
    let chunked =
        ["sdxl", "decode", "1024x1024", "--batch", "16", "--dtype", "fp16", "--os", "linux", "--free", "24GiB"];
    for (level, code) in [("chunked", 1), ("tiled", 0), ("host", 0)] {
        let mut a = chunked.to_vec();
        a.extend(["--fail-on", level]);
        assert_eq!(plan(&a).0, code, "chunked plan with --fail-on {level}");
    }
    let mut full = ["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "linux", "--free", "24GiB"].to_vec();
    full.extend(["--fail-on", "chunked"]);
    assert_eq!(plan(&full).0, 0);
}

#[test]
fn budget_from_cap_and_from_unknown_free_memory() {
    let j = plan_ok(&["canvas", "640x480", "--frames", "10", "--free", "8GiB", "--cap", "100MiB"]);
    assert_eq!(j["budget_from"], "cap");
    assert_eq!(j["budget_bytes"], 100 * MIB);
    let j = plan_ok(&["canvas", "640x480", "--frames", "10", "--cap", "2MiB"]);
    assert_eq!(j["budget_from"], "cap-unknown-free");
    assert_eq!(j["budget_bytes"], 2 * MIB);
    // 640 × 480 × 3 = 921 600 B a frame: floor(2 MiB / frame) = 2.
    assert_eq!(j["verdict"], "chunked");
    assert_eq!(j["group_size"], 2);
    assert_eq!(j["groups"], 5);
}

#[test]
fn readme_canvas_example_720p_upscale_4() {
    let j = plan_ok(README_CANVAS);
    // 1280 × 720 × 3 × 4² = 44 236 800 B a frame (about 44 MB).
    assert_eq!(j["per_item_bytes"], 44_236_800);
    // min(1 GiB, 0.25 × 20 GiB) = 1 GiB, from the cap.
    assert_eq!(j["budget_bytes"], GIB);
    assert_eq!(j["budget_from"], "cap");
    assert_eq!(j["verdict"], "chunked");
    assert_eq!(j["group_size"], 24);
    assert_eq!(j["groups"], 10);
    assert_eq!(j["boundaries"], serde_json::json!([[0, 24], [216, 240]]));
    assert_eq!(j["peak_bytes"], 24 * 44_236_800u64);
    // floor(1 GiB / (9 × 44 236 800)) = 2 frames a sub-chunk.
    assert_eq!(j["subchunk_frames"], 2);
    assert_eq!(j["transient_verdict"], "chunked");
}

#[test]
fn canvas_full_and_host() {
    let j = plan_ok(&["canvas", "1280x720", "--frames", "10", "--free", "1GiB"]);
    assert_eq!(j["verdict"], "full");
    assert_eq!(j["peak_bytes"], 10 * 1280 * 720 * 3);
    assert_eq!(j["subchunk_frames"], serde_json::Value::Null);
    let (code, j, err) =
        plan(&["canvas", "3840x2160", "--frames", "10", "--upscale", "4", "--cap", "100MiB", "--fail-on", "host"]);
    assert_eq!(code, 1);
    assert_eq!(j["verdict"], "host");
    assert!(err.contains("one frame (398131200 B) > budget (104857600 B)"), "{err}");
}

#[test]
fn a_transient_step_that_cannot_fit_goes_to_the_host_loudly() {
    let args = ["canvas", "1280x720", "--frames", "8", "--upscale", "4", "--cap", "300MiB", "--transient", "9"];
    let (code, j, err) = plan(&args);
    assert_eq!(code, 0);
    assert_eq!(j["verdict"], "chunked", "the frames themselves fit in groups");
    assert_eq!(j["transient_verdict"], "host");
    assert_eq!(j["subchunk_frames"], serde_json::Value::Null);
    assert!(err.contains("transient step (9× a frame = 398131200 B) > budget (314572800 B)"), "{err}");
    let mut failing = args.to_vec();
    failing.extend(["--fail-on", "host"]);
    assert_eq!(plan(&failing).0, 1);
}

#[test]
fn groups_do_not_depend_on_the_clip_length() {
    let at = |frames: u64| plan_ok(&["canvas", "1920x1080", "--frames", &frames.to_string(), "--cap", "50MiB"]);
    let short = at(37);
    let long = at(100);
    assert_eq!(short["group_size"], long["group_size"]);
    assert_eq!(short["boundaries"][0], long["boundaries"][0]);
    let g = short["group_size"].as_u64().unwrap();
    assert_eq!(short["boundaries"][1], serde_json::json!([36 / g * g, 37]));
}

#[test]
fn bad_budgets_are_usage_errors() {
    for (args, expect) in [
        (vec!["--share", "0", "--free", "1GiB"], "--share must be greater than 0"),
        (vec!["--share", "1.5", "--free", "1GiB"], "at most 1"),
        (vec!["--share", "NaN", "--free", "1GiB"], "not a decimal number"),
        (vec!["--free", "-1GiB"], "negative"),
        (vec!["--free", "99999999999999TiB"], "too large"),
        (vec!["--free", "unknown"], "give --free SIZE or --cap SIZE"),
        (vec!["--cap", "12 parsecs"], "unknown unit"),
    ] {
        let mut a = vec!["canvas", "640x480", "--frames", "4"];
        a.extend(args.iter());
        let (code, _, err) = plan(&a);
        assert_eq!(code, 2, "{args:?}");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
    // --frames on an image VAE: only a video family decodes frames.
    let (code, _, err) = plan(&["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--frames", "3", "--free", "1GiB"]);
    assert_eq!(code, 2);
    assert!(err.contains("'sd' is an image VAE; only a video family decodes frames"), "{err}");
    let (code, _, err) = plan(&["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--upscale", "2", "--free", "1GiB"]);
    assert_eq!(code, 2);
    assert!(err.contains("--upscale, --channels and --transient are for `plan canvas`"), "{err}");
    let (code, _, err) = plan(&["canvas", "640x480", "--frames", "4", "--temporal-tile", "8", "--free", "1GiB"]);
    assert_eq!(code, 2);
    assert!(err.contains("--temporal-tile") && err.contains("mean nothing to `plan canvas`"), "{err}");
    // And the other way: options that price a VAE mean nothing to a canvas.
    for extra in [&["--dtype", "fp16"][..], &["--backend", "miopen"], &["--tile", "512"], &["--batch", "2"]] {
        let mut a = vec!["canvas", "640x480", "--frames", "4", "--free", "1GiB"];
        a.extend(extra.iter());
        let (code, _, err) = plan(&a);
        assert_eq!(code, 2, "{extra:?}");
        assert!(err.contains(extra[0]) && err.contains("mean nothing to `plan canvas`"), "{extra:?}: {err}");
    }
    let (code, _, _) = plan(&["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--upscale", "2", "--free", "1GiB"]);
    assert_eq!(code, 2);
}

/// `schema`, `completions` and `man` print one fixed form: any other
/// `--format` is refused, as for every command.
#[test]
fn fixed_form_commands_refuse_a_format() {
    for args in [&["schema", "coefficients"][..], &["completions", "bash"], &["man"]] {
        for format in ["json", "github", "markdown"] {
            let out = vramfit().args(["--format", format]).args(args).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?} --format {format}");
            assert!(stderr_of(&out).contains("takes no --format"), "{}", stderr_of(&out));
            // Under github the error is also an annotation on stdout, as for every input error.
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(if format == "github" { stdout.starts_with("::error") } else { stdout.is_empty() }, "{stdout}");
        }
        assert_eq!(vramfit().args(args).output().unwrap().status.code(), Some(0), "{args:?}");
    }
}

/// Whole numbers are digits only, in a CSV as on the command line: a sign
/// or a decimal point is refused; spaces around a CSV value are trimmed.
#[test]
fn whole_numbers_are_digits_only() {
    let root = scratch();
    let header = "source,conv_backend,allocator,os,vae,op,run_dtype,width,height,reserved_mib\n";
    for (value, ok) in [("+512", false), ("512.0", false), ("5e2", false), (" 512 ", true), ("512", true)] {
        let f = root.path().join("n.csv");
        std::fs::write(&f, format!("{header}digits,cudnn,native,linux,sd,decode,fp16,{value},512,900\n")).unwrap();
        let out = vramfit().arg("--root").arg(root.path()).args(["ingest", "--check"]).arg(&f).output().unwrap();
        let code = out.status.code().unwrap();
        assert_eq!(code == 2, !ok, "{value:?}: {}", stderr_of(&out));
        if !ok {
            assert!(
                stderr_of(&out).contains("width") && stderr_of(&out).contains("digits only"),
                "{}",
                stderr_of(&out)
            );
        }
    }
    let (code, _, err) = plan(&["sdxl", "decode", "+1024x1024", "--dtype", "fp16", "--free", "8GiB"]);
    assert_eq!(code, 2);
    assert!(err.contains("digits only"), "{err}");
}

#[test]
fn table_output_names_the_verdict_and_budget() {
    let out = on_data_root()
        .args([
            "plan",
            "canvas",
            "1280x720",
            "--frames",
            "240",
            "--upscale",
            "4",
            "--free",
            "20GiB",
            "--share",
            "0.25",
            "--cap",
            "1GiB",
        ])
        .output()
        .unwrap();
    let s = stdout_of(&out);
    assert!(s.starts_with("CHUNKED: 10 groups of up to 24 items (240 in all)\n"), "{s}");
    assert!(s.contains("budget     1024 MiB (1073741824 B) from cap (below share 0.25 × free 20480 MiB)"), "{s}");
}

/// On a math-kernel platform the untiled decode's S² scores can make it
/// unaffordable where a line alone would fit; plan tiles, each tile's S
/// being the tile's.
#[test]
fn rocm_attention_makes_plan_tile() {
    let args = ["flux2", "decode", "2048x2048", "--dtype", "bf16", "--backend", "miopen", "--os", "linux"];
    let mut a = args.to_vec();
    a.extend(["--free", "40GiB"]);
    let j = plan_ok(&a);
    assert_eq!(j["verdict"], "tiled", "{j}");
    let all = j["steps"].as_array().unwrap().iter().find(|s| s["role"] == "all").unwrap().clone();
    assert_eq!(all["rule"], "attention-phase");
    // The line alone (28 634 MiB) would have fitted 40 GiB.
    let line =
        reserve_bytes(&["flux2", "decode", "2048x2048", "--dtype", "bf16", "--os", "linux", "--backend", "miopen"]);
    assert!(line > 40 * GIB, "the untiled price is the attention phase: {line}");
    let tile = j["tile"].as_u64().unwrap();
    let t = tile.to_string();
    let mut ta = args.to_vec();
    ta.extend(["--tile", &t]);
    assert_eq!(j["peak_bytes"].as_u64().unwrap(), reserve_bytes(&ta));
    assert!(j["peak_bytes"].as_u64().unwrap() <= 40 * GIB);
}

/// `plan`'s words say what each pricing was for: no "groups of up to 1",
/// and no two "priced by" rows that read the same.
#[test]
fn plan_rows_are_unambiguous() {
    for batch in ["2", "4", "16"] {
        for free in ["6GiB", "12GiB", "24GiB"] {
            let out = on_data_root()
                .args(["plan", "sdxl", "decode", "2048x2048", "--dtype", "fp16", "--os", "linux"])
                .args(["--batch", batch, "--free", free])
                .output()
                .unwrap();
            let text = stdout_of(&out);
            assert!(!text.contains("up to 1 "), "{batch} in {free}: {text}");
            let rows: Vec<&str> = text
                .lines()
                .skip_while(|l| !l.contains("priced by:"))
                .skip(1)
                .take_while(|l| l.starts_with("    "))
                .collect();
            assert!(!rows.is_empty(), "{text}");
            let labels: Vec<&str> = rows.iter().map(|r| r.trim().split("  ").next().unwrap()).collect();
            let distinct: std::collections::BTreeSet<&&str> = labels.iter().collect();
            assert_eq!(distinct.len(), labels.len(), "{batch} in {free}: {text}");
        }
    }
}

/// A chunked plan runs the fewest passes the budget allows, at the lowest
/// peak among groupings of that many passes: groups as even as can be
/// (8 items where 5 fit run as 4 + 4, not 5 + 3), and says why.
#[test]
fn chunks_are_the_fewest_passes_at_the_lowest_peak() {
    let price = |batch: u64| {
        let b = batch.to_string();
        reserve_bytes(&["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "linux", "--batch", &b])
    };
    let mut checked = 0;
    for n in 2u64..=13 {
        for free_gib in [9u64, 14, 19, 24, 40] {
            let (nt, free) = (n.to_string(), format!("{free_gib}GiB"));
            let args =
                ["sdxl", "decode", "1024x1024", "--batch", &nt, "--dtype", "fp16", "--os", "linux", "--free", &free];
            let (_, j, _) = plan(&args);
            if j["verdict"] != "chunked" {
                continue;
            }
            let budget = free_gib << 30;
            let largest = (1..=n).take_while(|g| price(*g) <= budget).last().unwrap();
            let passes = n.div_ceil(largest);
            let g = j["group_size"].as_u64().unwrap();
            assert_eq!(n.div_ceil(g), passes, "{n} items, {free}: the fewest passes");
            assert_eq!(g, n.div_ceil(passes), "{n} items, {free}: the most even groups of {passes} passes");
            assert_eq!(j["peak_bytes"].as_u64(), Some(price(g)));
            // No grouping of as few passes peaks lower: its largest group is at least ceil(n / passes).
            assert!((1..g).all(|smaller| n.div_ceil(smaller) > passes));
            if g < largest {
                assert!(j["reasons"].to_string().contains("lowest peak"), "{j}");
            }
            checked += 1;
        }
    }
    assert!(checked > 10, "{checked}");
    let (_, j, _) =
        plan(&["sdxl", "decode", "1024x1024", "--batch", "8", "--dtype", "fp16", "--os", "linux", "--free", "24GiB"]);
    assert_eq!(j["group_size"], 4, "{j}");
}
