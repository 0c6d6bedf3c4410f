//! Video VAEs (docs/DESIGN.md, "Video"): frames and temporal tiles survive
//! ingest → store → fit → emit → verify → reserve/plan; a video line prices
//! its working set plus the clip copies; an unmeasured video key never
//! prices below its hosts' estimates; `verify` catches edits of the new
//! fields. Figures come from the tests' own video root
//! (`tests/fixtures/video`: LTX-2.5's eleven published W7900 figures).

use crate::common::*;
use serde_json::Value;
use std::fs;
use std::path::Path;

fn video_root() -> std::path::PathBuf {
    fixture("video")
}

fn on_video_root() -> assert_cmd::Command {
    let mut c = vramfit();
    c.arg("--root").arg(video_root());
    c
}

fn reserve_json(args: &[&str]) -> Value {
    let out = on_video_root().args(["--format", "json", "reserve"]).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr_of(&out));
    json_of(&out)
}

const LTX_DECODE: [&str; 11] =
    ["ltx2", "decode", "1248x704", "--dtype", "bf16", "--backend", "miopen", "--os", "linux", "--tile", "512"];

#[test]
fn the_store_keeps_frames_and_temporal_tiles_and_the_ids_say_them() {
    let store: Value = serde_json::from_slice(&fs::read(video_root().join("measurements/vae.json")).unwrap()).unwrap();
    let points = store["points"].as_array().unwrap();
    assert_eq!(points.len(), 11);
    let p = points.iter().find(|p| p["id"] == "invokeai-ltx25-decode-bf16-1248x704x121-t512-tt16").unwrap();
    assert_eq!(
        (p["frames"].as_u64(), p["temporal_tile"].as_u64(), p["tile"].as_u64()),
        (Some(121), Some(16), Some(512))
    );
    // pixels stays width × height × batch.
    assert_eq!(p["pixels"].as_u64(), Some(1248 * 704));
    let untiled = points.iter().find(|p| p["id"] == "invokeai-ltx25-encode-bf16-1248x704x1-untiled").unwrap();
    assert!(untiled.get("frames").is_none() && untiled.get("temporal_tile").is_none(), "{untiled}");
    // The store is what ingest writes from the CSV, byte for byte.
    let root = scratch_of(&video_root());
    let csv = root.path().join("measurements/raw/video-ltx25-w7900.csv");
    let out = vramfit().arg("--root").arg(root.path()).args(["ingest", "--check"]).arg(&csv).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    // A row without an id gets one that names its frames and temporal tile.
    let text = fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let row = lines.find(|l| l.contains("x121-t512-tt16")).unwrap();
    let row = row.replacen("invokeai-ltx25-decode-bf16-1248x704x121-t512-tt16", "", 1);
    let one = root.path().join("one.csv");
    fs::write(&one, format!("{header}\n{row}\n")).unwrap();
    let out = vramfit().arg("--root").arg(root.path()).args(["--format", "json", "ingest"]).arg(&one).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let store: Value = serde_json::from_slice(&fs::read(root.path().join("measurements/vae.json")).unwrap()).unwrap();
    let ids: Vec<&str> = store["points"].as_array().unwrap().iter().filter_map(|p| p["id"].as_str()).collect();
    assert!(ids.iter().any(|id| id.starts_with("ltx2-decode-t512-bf16-1248x704x121-tt16-miopen-native-")), "{ids:?}");
}

/// A row that gives frames or a temporal tile where they mean nothing is
/// refused with its file, line and field, exit 2, and nothing written.
#[test]
fn frames_where_they_mean_nothing_are_input_errors() {
    let header =
        "source,conv_backend,allocator,os,vae,op,run_dtype,width,height,frames,temporal_tile,tile,reserved_mib";
    let cases = [
        ("manual,cudnn,native,linux,sd,decode,fp16,1024,1024,9,0,0,4000", "frames", "image VAE"),
        ("manual,cudnn,native,linux,sd,decode,fp16,1024,1024,1,16,0,4000", "temporal_tile", "image VAE"),
        ("manual,cudnn,native,linux,wan21,decode,fp16,832,480,81,16,0,4000", "temporal_tile", "causal step"),
        ("manual,cudnn,native,linux,ltx2,decode,bf16,832,480,0,16,0,4000", "frames", "positive integer"),
        ("manual,cudnn,native,linux,ltx2,decode,bf16,832,480,33,-8,0,4000", "temporal_tile", "non-negative integer"),
        ("manual,cudnn,native,linux,ltx2,decode,bf16,832,480,33,16.5,0,4000", "temporal_tile", "digits only"),
    ];
    for (row, field, words) in cases {
        let root = scratch_of(&video_root());
        let csv = root.path().join("bad.csv");
        fs::write(&csv, format!("{header}\n{row}\n")).unwrap();
        let before = snapshot(root.path());
        let out = vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&csv).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{row}");
        let err = stderr_of(&out);
        assert!(err.contains("bad.csv:2") && err.contains(&format!("{field}:")) && err.contains(words), "{row}: {err}");
        assert_eq!(snapshot(root.path()), before, "{row}: nothing is written");
    }
}

#[test]
fn the_video_root_verifies_and_every_point_is_within_the_bound_or_excepted() {
    let out = on_video_root().args(["--format", "json", "verify"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout_of(&out));
    let policy = fs::read_to_string(video_root().join("fits/policy.toml")).unwrap();
    let store: Value = serde_json::from_slice(&fs::read(video_root().join("measurements/vae.json")).unwrap()).unwrap();
    for p in store["points"].as_array().unwrap() {
        let id = p["id"].as_str().unwrap();
        let size = format!("{}x{}", p["width"], p["height"]);
        let (frames, tile) = (p["frames"].as_u64().unwrap_or(1).to_string(), p["tile"].to_string());
        let tt = p["temporal_tile"].as_u64().unwrap_or(0).to_string();
        let a = reserve_json(&[
            "ltx2",
            p["op"].as_str().unwrap(),
            &size,
            "--dtype",
            "bf16",
            "--backend",
            "miopen",
            "--os",
            "linux",
            "--tile",
            &tile,
            "--frames",
            &frames,
            "--temporal-tile",
            &tt,
        ]);
        let (reserve, demand) = (a["bytes"].as_u64().unwrap(), p["demand_bytes"].as_u64().unwrap());
        assert!(reserve >= demand, "{id}: {reserve} < {demand}");
        let excepted = policy.contains(&format!("id = \"{id}\""));
        assert!(excepted || reserve * 10 <= demand * 13, "{id}: {reserve} / {demand} above 1.3 and not excepted");
        assert_eq!(a["video"]["frames"].as_u64(), p["frames"].as_u64().or(Some(1)), "{id}");
    }
}

/// A fitted video line prices the working set of one spatio-temporal tile
/// plus the clip copies: restated here from the shipped file.
#[test]
fn a_video_answer_is_its_line_at_the_working_set_plus_the_clip() {
    let file: Value = serde_json::from_slice(&fs::read(video_root().join("fits/vae.json")).unwrap()).unwrap();
    let line =
        file["lines"].as_array().unwrap().iter().find(|l| l["vae"] == "ltx2" && l["temporal_tile"] == 16).unwrap();
    let slope_centi: u64 = line["slope"].as_str().unwrap().replace('.', "").parse().unwrap();
    let base = line["base_mib"].as_u64().unwrap();
    let copies: u64 = file["video"]["decode_clip_copies"].as_str().unwrap().parse().unwrap();
    for (frames, batch) in [(33u64, 1u64), (121, 1), (121, 2), (9, 1)] {
        let (f, b) = (frames.to_string(), batch.to_string());
        let mut args = LTX_DECODE.to_vec();
        args.extend(["--frames", &f, "--batch", &b, "--temporal-tile", "16"]);
        let a = reserve_json(&args);
        let working_frames = frames.min(16);
        let x = 512 * 512 * working_frames * batch;
        let clip = copies * 3 * 2 * 1248 * 704 * frames * batch;
        let expected = (slope_centi * x).div_ceil(100) + base * (1 << 20) + clip;
        assert_eq!(a["bytes"].as_u64(), Some(expected), "{frames} frames × {batch}");
        assert_eq!(a["video"]["working_set"].as_u64(), Some(x));
        assert_eq!(a["video"]["clip_bytes"].as_u64(), Some(clip));
        // A clip the temporal tile covers is the whole clip: its key is 0f,
        // priced (the platform being measured) by the same 16f line.
        assert_eq!(a["line"]["temporal_tile"], if frames > 16 { 16 } else { 0 }, "{frames} frames");
        // The human answer shows the working set and the copies term.
        let human = on_video_root().arg("reserve").args(&args).output().unwrap();
        let text = stdout_of(&human);
        assert!(text.contains("working set") && text.contains("clip copies"), "{text}");
    }
}

/// A key nobody measured takes the larger of its family's lines at its
/// working set and the largest host estimate; the estimate names its host.
#[test]
fn an_unmeasured_video_key_never_prices_below_its_hosts_estimate() {
    // On the measured platform (MIOpen), a 32-frame temporal tile is priced
    // by the measured 16f line at its working set: no host's guess there.
    let mut args = LTX_DECODE.to_vec();
    args.extend(["--frames", "121", "--temporal-tile", "32"]);
    let a = reserve_json(&args);
    assert_eq!(a["rule"], "unmeasured-rule");
    assert_eq!(a["priced_by"]["temporal_tile"], 16);
    assert_eq!(a["video"]["estimate"], Value::Null);
    // On a platform nobody measured (cuDNN), the host's estimate is the floor.
    let mut args = LTX_DECODE.to_vec();
    args[6] = "cudnn";
    args.extend(["--frames", "121", "--temporal-tile", "32"]);
    let a = reserve_json(&args);
    assert_eq!(a["rule"], "video-estimate");
    // InvokeAI's LTX-2 decode: 512 MiB + 466 × 2 × 512² × 32 + 3 × 3 × 2 × 1248 × 704 × 121.
    let invokeai = 512 * (1u64 << 20) + 466 * 2 * 512 * 512 * 32 + 3 * 3 * 2 * 1248 * 704 * 121;
    assert_eq!(a["bytes"].as_u64(), Some(invokeai));
    assert_eq!(a["video"]["estimate"]["host"], "invokeai");
    // Every other family answers from a declared rule, never an error.
    for model in ["wan", "wan2.1", "ltx-video"] {
        let out = on_video_root()
            .args(["--format", "json", "reserve", model, "decode", "832x480", "--frames", "81", "--dtype", "bf16"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{model}: {}", stderr_of(&out));
        let j = json_of(&out);
        assert!(
            ["fitted-line", "carried-line", "unmeasured-rule", "video-estimate"].contains(&j["rule"].as_str().unwrap())
        );
    }
}

#[test]
fn frames_and_temporal_tiles_are_refused_where_they_mean_nothing() {
    for (args, words) in [
        (&["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--frames", "2"][..], "is an image VAE"),
        (&["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--temporal-tile", "8"], "only a video family"),
        (
            &["wan", "decode", "832x480", "--dtype", "bf16", "--frames", "81", "--temporal-tile", "16"],
            "takes no temporal tile",
        ),
        (&["ltx2", "decode", "832x480", "--dtype", "bf16", "--frames", "0"], "--frames must be positive"),
    ] {
        let out = on_video_root().arg("reserve").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr_of(&out).contains(words), "{args:?}: {}", stderr_of(&out));
    }
}

/// `plan` falls back to the spatial × temporal tile pair with the largest
/// working set whose price fits, and says which pair did not.
#[test]
fn plan_picks_the_largest_tile_pair_that_fits() {
    let mut args = vec!["--format", "json", "plan"];
    args.extend(["ltx2", "decode", "1920x1088", "--dtype", "bf16", "--backend", "miopen", "--os", "linux"]);
    args.extend(["--frames", "121", "--tile", "768", "--temporal-tile", "32", "--free", "8GiB"]);
    let out = on_video_root().args(&args).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let plan = json_of(&out);
    assert_eq!(plan["verdict"], "tiled");
    let (tile, tt) = (plan["tile"].as_u64().unwrap(), plan["temporal_tile"].as_u64().unwrap());
    let peak = plan["peak_bytes"].as_u64().unwrap();
    assert!(peak <= 8 << 30, "{peak}");
    // Every pair with a larger working set (other than the one asked) reserves more than the budget.
    let chosen = tile.min(1920) * tile.min(1088) * tt;
    for t in (64..768).step_by(64) {
        for f in [8u64, 16, 32] {
            let ws = u64::from(t as u32).min(1920) * u64::from(t as u32).min(1088) * f;
            if ws <= chosen || (t, f) == (768, 32) {
                continue;
            }
            let (ts, fs) = (t.to_string(), f.to_string());
            let mut q = LTX_DECODE.to_vec();
            q[2] = "1920x1088";
            q[10] = &ts;
            q.extend(["--frames", "121", "--temporal-tile", &fs]);
            let a = reserve_json(&q);
            assert!(a["bytes"].as_u64().unwrap() > 8 << 30, "tile {t} × {f} frames ({ws} px) fits but was not chosen");
        }
    }
    let human = on_video_root().args(&args[2..]).output().unwrap();
    assert!(stdout_of(&human).contains(&format!("{tile}-pixel × {tt}-frame tiles")), "{}", stdout_of(&human));
}

fn write_json(path: &Path, v: &Value) {
    let mut b = serde_json::to_vec_pretty(v).unwrap();
    b.push(b'\n');
    fs::write(path, b).unwrap();
}

/// An edit of any new field of the shipped file is a finding at its path.
#[test]
fn verify_catches_an_edit_of_each_video_field() {
    let base: Value = serde_json::from_slice(&fs::read(video_root().join("fits/vae.json")).unwrap()).unwrap();
    let line = base["lines"].as_array().unwrap().iter().position(|l| l["vae"] == "ltx2").unwrap();
    let est = base["video"]["estimates"].as_array().unwrap().iter().position(|e| e["vae"] == "ltx2").unwrap();
    let cases: Vec<(Vec<String>, Value, &str)> = vec![
        (vec!["video".into(), "decode_clip_copies".into()], Value::from("0"), "video.decode_clip_copies"),
        (vec!["video".into(), "encode_clip_copies".into()], Value::from("2"), "video.encode_clip_copies"),
        (
            vec!["video".into(), "estimates".into(), est.to_string(), "per_element".into()],
            Value::from("46"),
            "per_element",
        ),
        (vec!["video".into(), "estimates".into(), est.to_string(), "frames".into()], Value::from("one"), "frames"),
        (
            vec!["registry".into(), "ltx2".into(), "video".into(), "frames".into()],
            Value::from(8),
            "registry.ltx2.video.frames",
        ),
        (
            vec!["registry".into(), "ltx2".into(), "video".into(), "walk".into()],
            Value::from("all"),
            "registry.ltx2.video.walk",
        ),
        (
            vec!["registry".into(), "wan21".into(), "video".into(), "frames".into()],
            Value::from(1),
            "registry.wan21.video.frames",
        ),
        // A line's key moved: the finding names the line that is gone.
        (vec!["lines".into(), line.to_string(), "temporal_tile".into()], Value::from(32), "lines[ltx2/decode/16f/"),
    ];
    for (path, to, expect) in cases {
        let root = scratch_of(&video_root());
        let f = root.path().join("fits/vae.json");
        let mut v = base.clone();
        let mut cur = &mut v;
        for k in &path[..path.len() - 1] {
            cur = match k.parse::<usize>() {
                Ok(i) if cur.is_array() => &mut cur[i],
                _ => &mut cur[k.as_str()],
            };
        }
        cur[path.last().unwrap().as_str()] = to;
        write_json(&f, &v);
        let out = vramfit().arg("--root").arg(root.path()).args(["--format", "json", "verify"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{path:?}: {}", stdout_of(&out));
        let j = json_of(&out);
        let paths: Vec<&str> = j["findings"].as_array().unwrap().iter().filter_map(|f| f["path"].as_str()).collect();
        assert!(paths.iter().any(|p| p.contains(expect)), "{path:?}: no finding at {expect}: {paths:?}");
    }
}

/// A point's frames or temporal tile edited in the store moves its line:
/// verify names the line whose points changed.
#[test]
fn verify_catches_an_edit_of_a_points_frames() {
    for (field, to) in [("frames", 241), ("temporal_tile", 8)] {
        let root = scratch_of(&video_root());
        let store = root.path().join("measurements/vae.json");
        let mut v: Value = serde_json::from_slice(&fs::read(&store).unwrap()).unwrap();
        let p = v["points"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|p| p["id"] == "invokeai-ltx25-decode-bf16-1248x704x33-t768-tt16")
            .unwrap();
        p[field] = Value::from(to);
        write_json(&store, &v);
        let out = vramfit().arg("--root").arg(root.path()).args(["--format", "json", "verify"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{field}: {}", stdout_of(&out));
    }
}

/// The pricer the checks audit: a pricer that drops the clip copies is caught.
#[test]
fn verify_catches_a_pricer_that_drops_the_clip_term() {
    use vramfit::pricing::platform::EnvSnapshot;
    use vramfit::pricing::{Coefficients, Price, Pricer, Query};
    struct NoClip(Coefficients);
    impl Pricer for NoClip {
        fn price(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<Price> {
            let mut p = self.0.price(q, env)?;
            if let Some(v) = &p.video {
                p.bytes -= v.clip_bytes.min(p.bytes);
            }
            Ok(p)
        }
    }
    let root = video_root();
    let real = vramfit::verify::audit(&root).unwrap();
    assert!(real.ok, "the real pricer passes: {:?}", real.findings);
    let broken = vramfit::verify::audit_with(&root, &|c| Box::new(NoClip(c)) as Box<dyn Pricer>).unwrap();
    let codes: Vec<vramfit::findings::Code> = broken.findings.iter().map(|f| f.code).collect();
    assert!(codes.contains(&vramfit::findings::Code::QueryPath), "{codes:?}");
    assert!(!broken.ok);
}

/// Mistakes in the policy's video declarations are refused with the table
/// that holds them, before anything is fitted.
#[test]
fn video_declarations_are_checked_where_they_are_written() {
    let cases = [
        (
            "vae = \"ltx2\"\nop = \"decode\"\nhost = \"invokeai\"",
            "vae = \"sd\"\nop = \"decode\"\nhost = \"invokeai\"",
            "not a registered video family",
        ),
        (
            "walk = \"causal\"",
            "walk = \"sideways\"",
            "video.walk: unknown variant 'sideways', expected one of 'tiles', 'causal', 'all'",
        ),
        (
            "frames = \"tile\"",
            "frames = \"forever\"",
            "].frames: unknown variant 'forever', expected one of 'one', 'clip', 'latent', 'tile'",
        ),
        ("clip_copies = { decode = \"1\", encode = \"1\" }", "clip_copies = { decode = \"1\" }", "missing encode"),
        (
            "min_frames = 8\nclip_copies = \"3\"",
            "min_frames = 8\nclip_copies = \"3\"\nmax_clip = 1\nmin_clip = 2",
            "applies to no clip",
        ),
    ];
    for (from, to, words) in cases {
        let root = scratch_of(&video_root());
        let policy = root.path().join("fits/policy.toml");
        let text = fs::read_to_string(&policy).unwrap();
        assert!(text.contains(from), "{from}");
        fs::write(&policy, text.replacen(from, to, 1)).unwrap();
        let out = vramfit().arg("--root").arg(root.path()).arg("fit").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{to}: {}", stdout_of(&out));
        let err = stderr_of(&out);
        assert!(err.contains("policy.toml") && err.contains(words), "{to}: {err}");
    }
}

/// A video line's crossval miss says where it sat on the line's own axis,
/// the working set, not the image's pixels (the LTX-2.5 decode's 878 592
/// pixels lie below both kept working sets it sits between).
#[test]
fn a_video_miss_sits_between_working_sets() {
    let out = on_video_root().args(["--format", "json", "crossval"]).output().unwrap();
    let j = json_of(&out);
    let misses = crossval_misses(&j);
    assert!(!misses.is_empty());
    for m in misses {
        let pos = &m["position"];
        assert_eq!(pos["unit"], "working-set", "{m}");
        if pos["kind"] == "between" {
            let (lo, hi) = (pos["below"].as_u64().unwrap(), pos["above"].as_u64().unwrap());
            assert!(lo < hi && m["pixels"].as_u64().unwrap() < lo, "{m}");
        }
    }
    let table = String::from_utf8(on_video_root().arg("crossval").output().unwrap().stdout).unwrap();
    assert!(table.contains("px of working set, above the line through those sizes"), "{table}");
}
