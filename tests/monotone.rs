//! Trust at the edges: for any fixed query, the price never falls when the
//! width, the height, the batch, the frames, the spatial tile or the
//! temporal tile grows (a tile at least the image is untiled, a temporal
//! tile at least the clip is the whole clip), whatever rules price the two
//! sides (docs/DESIGN.md, "Monotone composition"). Driven through the real
//! pricer over random queries on the shipped file and on each test root's
//! file; the Python package is held to the same property.

use crate::common::*;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use vramfit::pricing::platform::EnvSnapshot;
use vramfit::pricing::{Choice, Coefficients, Pricer, Query};
use vramfit::vocab::{Allocator, ConvBackend, Dtype, Op, Os};

/// The files the property runs on: the shipped one and every test root's.
fn files() -> Vec<(String, Coefficients)> {
    let mut out = vec![(
        "embedded".to_string(),
        Coefficients::new(
            vramfit::coefficients::parse(vramfit::coefficients::EMBEDDED, "embedded").unwrap(),
            "embedded".into(),
        )
        .unwrap(),
    )];
    for root in ["tests/fixtures/root", "tests/fixtures/video", "tests/fixtures/docs"] {
        let path = repo().join(root).join("fits/vae.json");
        if let Ok(file) = vramfit::coefficients::load(&path) {
            out.push((root.to_string(), Coefficients::new(file, root.into()).unwrap()));
        }
    }
    out
}

/// Every family and model name of a file (a name that covers two VAEs is
/// refused by design, and asks nothing of the property).
fn names(c: &Coefficients) -> Vec<String> {
    let mut out = Vec::new();
    for (family, entry) in &c.file.registry {
        out.push(family.clone());
        out.extend(entry.models.iter().filter(|m| !entry.ambiguous.contains_key(*m)).take(1).cloned());
    }
    out
}

/// Which input grows.
#[derive(Debug, Clone, Copy)]
enum Grow {
    Width,
    Height,
    Batch,
    Frames,
    Tile,
    TemporalTile,
}

/// A side length: mostly ordinary, sometimes tiny or absurd.
fn side() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => 8u64..4096,
        2 => 1u64..64,
        2 => 4096u64..70_000,
        1 => 70_000u64..(1 << 32),
    ]
}

/// A tile: 0 (untiled), a multiple of 8 near the tiles hosts use and
/// data measures, any multiple of 8 up to past most images, or (`NEAR`)
/// one just short of the image's longer side, where tiled meets untiled.
fn tile() -> impl Strategy<Value = u32> {
    prop_oneof![
        2 => Just(0u32),
        4 => prop::sample::select(vec![8u32, 248, 256, 264, 448, 504, 512, 520, 576, 760, 768, 1016, 1024, 2048]),
        4 => (1u32..1024).prop_map(|t| t * 8),
        3 => Just(NEAR),
        1 => (1u32..(u32::MAX / 8)).prop_map(|t| t * 8),
    ]
}

/// A tile marker: the largest tile below the image's longer side.
const NEAR: u32 = 1;

#[derive(Debug, Clone)]
struct Case {
    file: usize,
    name: usize,
    op: Op,
    dtype: Dtype,
    backend: ConvBackend,
    allocator: Allocator,
    os: Os,
    width: u64,
    height: u64,
    batch: u64,
    frames: u64,
    tile: u32,
    temporal_tile: Option<u32>,
    grow: Grow,
    by: u64,
    /// Even: a line of the file lends its family, op, dtype and platform.
    line: usize,
}

fn case() -> impl Strategy<Value = Case> {
    let platform = (
        prop::sample::select(Op::ALL.to_vec()),
        prop::sample::select(Dtype::ALL.to_vec()),
        prop::sample::select(vec![ConvBackend::Cudnn, ConvBackend::Miopen, ConvBackend::Mps]),
        prop::sample::select(Allocator::ALL.to_vec()),
        prop::sample::select(vec![Os::Linux, Os::Windows, Os::Macos]),
    );
    let size = (side(), side(), 1u64..=64, 1u64..=2000, tile());
    let temporal = prop_oneof![1 => Just(None), 1 => Just(Some(0u32)), 4 => (1u32..2000).prop_map(Some)];
    let grow = prop::sample::select(vec![
        Grow::Width,
        Grow::Height,
        Grow::Batch,
        Grow::Frames,
        Grow::Tile,
        Grow::TemporalTile,
    ]);
    let by = prop_oneof![4 => 1u64..64, 2 => 64u64..4096, 1 => 4096u64..(1 << 31)];
    (0usize..4, 0usize..64, platform, size, temporal, grow, by, 0usize..1000).prop_map(
        |(
            file,
            name,
            (op, dtype, backend, allocator, os),
            (width, height, batch, frames, tile),
            temporal_tile,
            grow,
            by,
            line,
        )| {
            Case {
                file,
                name,
                op,
                dtype,
                backend,
                allocator,
                os,
                width,
                height,
                batch,
                frames,
                tile,
                temporal_tile,
                grow,
                by,
                line,
            }
        },
    )
}

/// The smaller query and the larger one of a case (the larger differs in
/// one input; a tile grows to a larger tile or to 0, untiled). A video
/// family's frame counts are the clips its VAE runs (the shortest at least
/// as long as drawn): any other count is refused, not priced.
fn pair(c: &Case, family: &str, facts: Option<&vramfit::registry::VideoFacts>) -> (Query, Query) {
    let video = facts.is_some();
    let clip = |f: u64| facts.and_then(|v| v.clip_at_least(f, c.op == Op::Decode)).unwrap_or(f);
    let frames = if video { clip(c.frames) } else { 1 };
    let tile = match c.tile {
        NEAR => u32::try_from((c.width.max(c.height).saturating_sub(1) / 8 * 8).max(8)).unwrap_or(u32::MAX / 8 * 8),
        t => t,
    };
    // A temporal tile near the clip as often as not.
    let temporal_tile = match c.temporal_tile {
        Some(t) if t % 2 == 1 => Some(u32::try_from(frames.saturating_sub(u64::from(t % 5))).unwrap_or(1).max(1)),
        t => t,
    };
    let small = Query {
        vae: family.into(),
        op: c.op,
        tile,
        width: c.width,
        height: c.height,
        batch: c.batch,
        frames,
        temporal_tile: if video { temporal_tile } else { None },
        dtype: Some(c.dtype),
        loaded_dtype: None,
        fp32: None,
        conv_backend: c.backend,
        allocator: Choice::Given(c.allocator),
        os: Choice::Given(c.os),
        host: None,
        // Whether the first use is added or not, the composition is monotone.
        warm: c.width.is_multiple_of(2),
    };
    let mut large = small.clone();
    match c.grow {
        Grow::Width if c.by.is_multiple_of(2) => large.width = large.width.saturating_add(c.by % 16 + 1),
        Grow::Width => large.width = large.width.saturating_add(c.by),
        Grow::Height if c.by.is_multiple_of(2) => large.height = large.height.saturating_add(c.by % 16 + 1),
        Grow::Height => large.height = large.height.saturating_add(c.by),
        Grow::Batch => large.batch = (large.batch + c.by % 64).min(64),
        Grow::Frames if video => large.frames = clip((large.frames + c.by % 2000).min(2000)),
        Grow::Frames => {}
        Grow::Tile => {
            large.tile = match small.tile {
                0 => 0,
                t if c.by.is_multiple_of(5) => {
                    let _ = t;
                    0
                }
                t if c.by.is_multiple_of(3) => {
                    t.saturating_add(u32::try_from(c.by * 8).unwrap_or(u32::MAX / 8 * 8)) / 8 * 8
                }
                t => t.saturating_add(8 * u32::try_from(c.by % 16 + 1).unwrap()),
            }
        }
        Grow::TemporalTile if video => {
            large.temporal_tile = match small.temporal_tile {
                Some(0) | None => Some(0),
                Some(t) if c.by.is_multiple_of(5) => {
                    let _ = t;
                    Some(0)
                }
                Some(t) if c.by.is_multiple_of(3) => Some(t.saturating_add(u32::try_from(c.by % 4000).unwrap_or(1))),
                Some(t) => Some(t.saturating_add(u32::try_from(c.by % 8 + 1).unwrap())),
            }
        }
        Grow::TemporalTile => {}
    }
    (small, large)
}

/// The answer a pricer gives before the monotone composition: each
/// query's own rule alone (what `Quote::own` holds). The mistake the
/// property exists to catch.
struct OwnRuleOnly<'a>(&'a Coefficients);

impl Pricer for OwnRuleOnly<'_> {
    fn price(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<vramfit::pricing::Price> {
        self.0.price(q, env)
    }
    fn quote(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<vramfit::pricing::Quote> {
        self.0.quote(q, env).map(|q| vramfit::pricing::Quote { bytes: q.own.1, rule: q.own.0, ..q })
    }
}

/// Prices both sides of a case; an inversion is an error naming both
/// queries. Ok(true) when both sides priced.
fn check(files: &[(String, Coefficients)], c: &Case, own_only: bool) -> Result<bool, TestCaseError> {
    let (source, coef) = &files[c.file % files.len()];
    let names = names(coef);
    let mut name = &names[c.name % names.len()];
    let mut c = c.clone();
    if c.line.is_multiple_of(2) && !coef.file.lines.is_empty() {
        let k = &coef.file.lines[c.line / 2 % coef.file.lines.len()].key;
        (c.op, c.dtype, c.backend, c.allocator) = (k.op, k.dtype, k.conv_backend, k.allocator);
        if k.os != Os::Any {
            c.os = k.os;
        }
        name = names.iter().find(|n| n.as_str() == k.vae.as_str()).unwrap_or(name);
        if k.tile > 0 && c.tile.is_multiple_of(3) {
            c.tile = k.tile;
        }
    }
    let c = &c;
    let family = coef.family(name).unwrap().to_string();
    let facts = coef.file.registry.get(&family).and_then(|e| e.video.as_ref());
    let (small, large) = pair(c, name, facts);
    let env = EnvSnapshot::default();
    let pricer: &dyn Pricer = if own_only { &OwnRuleOnly(coef) } else { coef };
    let (Ok(a), Ok(b)) = (pricer.quote(&small, &env), pricer.quote(&large, &env)) else { return Ok(false) };
    prop_assert!(
        b.bytes >= a.bytes,
        "{source}: {small:?} prices {} B ({:?}), but the larger {large:?} prices {} B ({:?})",
        a.bytes,
        a.rule,
        b.bytes,
        b.rule
    );
    Ok(true)
}

/// The same generator over 6 000 cases: the real pricer compares most of
/// them and finds no inversion; the pricer without the composition (each
/// query's own rule) is caught.
#[test]
fn the_property_catches_a_pricer_without_the_composition() {
    let files = files();
    // A fixed seed: the same 6 000 cases on every run.
    let rng = proptest::test_runner::TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha);
    let mut runner = proptest::test_runner::TestRunner::new_with_rng(ProptestConfig::with_cases(6000), rng);
    let (mut compared, mut caught, mut real_inversions) = (0, 0, 0);
    for _ in 0..6000 {
        let c = case().new_tree(&mut runner).unwrap().current();
        match check(&files, &c, false) {
            Ok(true) => compared += 1,
            Ok(false) => {}
            Err(e) => {
                eprintln!("{e}");
                real_inversions += 1
            }
        }
        if check(&files, &c, true).is_err() {
            caught += 1;
        }
    }
    assert_eq!(real_inversions, 0);
    assert!(compared > 3000, "only {compared} of 6000 cases priced on both sides");
    eprintln!("{compared} compared, the own-rule pricer caught {caught} times");
    assert!(caught > 60, "the own-rule pricer inverted only {caught} times");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6000, failure_persistence: None, ..ProptestConfig::default() })]

    /// No inversion over random queries in every dimension.
    #[test]
    fn no_price_falls_when_an_input_grows(c in case()) {
        thread_local! { static FILES: Vec<(String, Coefficients)> = files(); }
        FILES.with(|f| check(f, &c, false))?;
    }
}

/// A tile at least as large as the image is the untiled price, and a
/// temporal tile at least the clip is the whole clip.
#[test]
fn a_covering_tile_prices_as_no_tile() {
    let files = files();
    let env = EnvSnapshot::default();
    let mut compared = 0;
    for (source, c) in &files {
        for name in names(c) {
            let family = c.family(&name).unwrap().to_string();
            let video = c.file.registry.get(&family).is_some_and(|e| e.video.is_some());
            for (w, h) in [(512u64, 512u64), (1024, 4096), (4096, 1024), (1248, 704)] {
                let q = Query {
                    vae: name.as_str().into(),
                    op: Op::Decode,
                    tile: 0,
                    width: w,
                    height: h,
                    batch: 1,
                    // 49 frames, or the shortest clip of at least 49 the family runs.
                    frames: c
                        .file
                        .registry
                        .get(&family)
                        .and_then(|e| e.video.as_ref())
                        .and_then(|v| v.clip_at_least(49, true))
                        .unwrap_or(1),
                    temporal_tile: if video { Some(0) } else { None },
                    dtype: Some(Dtype::Bf16),
                    loaded_dtype: None,
                    fp32: None,
                    conv_backend: ConvBackend::Cudnn,
                    allocator: Choice::Given(Allocator::Native),
                    os: Choice::Given(Os::Linux),
                    host: None,
                    warm: false,
                };
                let Ok(untiled) = c.quote(&q, &env) else { continue };
                for t in [w.max(h), w.max(h) + 8, 1 << 20] {
                    let tiled = c.quote(&Query { tile: u32::try_from(t).unwrap(), ..q.clone() }, &env).unwrap();
                    assert_eq!(tiled.bytes, untiled.bytes, "{source}: tile {t} of {w}x{h} ({name})");
                    compared += 1;
                }
                let walks_tiles = c
                    .file
                    .registry
                    .get(&family)
                    .and_then(|e| e.video.as_ref())
                    .is_some_and(|v| v.takes_temporal_tile());
                if walks_tiles {
                    let clip = u32::try_from(q.frames).unwrap();
                    for tt in [clip, clip + 1, 99_999] {
                        let long = c.quote(&Query { temporal_tile: Some(tt), ..q.clone() }, &env).unwrap();
                        assert_eq!(long.bytes, untiled.bytes, "{source}: temporal tile {tt} of {clip} frames ({name})");
                        compared += 1;
                    }
                }
            }
        }
    }
    assert!(compared > 100, "{compared}");
}

/// The inversions found when this was tried as an adversary would, each
/// now in order (and the two ends of each named in the answer).
#[test]
fn the_reported_inversions_are_in_order() {
    let chains: &[(&str, &str)] = &[
        (
            "reserve sd3 decode 1024x4096 --dtype fp16 --tile 4088",
            "reserve sd3 decode 1024x4096 --dtype fp16 --tile 4096",
        ),
        (
            "reserve sdxl decode 4096x4096 --dtype fp16 --tile 512",
            "reserve sdxl decode 4096x4096 --dtype fp16 --tile 576",
        ),
        (
            "reserve sdxl decode 2048x2048 --dtype fp32 --tile 448",
            "reserve sdxl decode 2048x2048 --dtype fp32 --tile 512",
        ),
        ("reserve sdxl decode 512x512 --dtype fp16 --tile 512", "reserve sdxl decode 520x520 --dtype fp16 --tile 512"),
        (
            "reserve ltx-2 decode 1248x704 --frames 121 --tile 512 --temporal-tile 16 --dtype bf16",
            "reserve ltx-2 decode 1248x704 --frames 121 --tile 512 --temporal-tile 99999 --dtype bf16",
        ),
        // A tile with a calibration of its own (kl-2d's 512 px encode) beside
        // the next, priced by the untiled calibration: the calibration's
        // tile is a corner too (found by the property, 2026-12-07).
        (
            "reserve hunyuanimage encode 8x4096 --dtype fp32 --tile 512 --warm",
            "reserve hunyuanimage encode 8x4096 --dtype fp32 --tile 528 --warm",
        ),
        // A temporal tile MiniMax-H3 was not traced at is priced from its
        // traced temporal tile's shape, not by the legacy floor.
        (
            "reserve minimax-h3 decode 256x256 --frames 243 --temporal-tile 27 --dtype fp32",
            "reserve minimax-h3 decode 768x1344 --frames 243 --tile 256 --dtype fp32",
        ),
    ];
    for (small, large) in chains {
        let price = |cmd: &str| {
            let mut args: Vec<&str> = vec!["--format", "json"];
            args.extend(cmd.split(' '));
            args.extend(["--os", "linux", "--backend", "cudnn"]);
            let ran = run_in_process(&args).unwrap();
            assert_eq!(ran.code, 0, "{cmd}: {}", ran.err);
            serde_json::from_str::<serde_json::Value>(&ran.out).unwrap()["bytes"].as_u64().unwrap()
        };
        let (a, b) = (price(small), price(large));
        assert!(b >= a, "{small} → {a} B, but {large} → {b} B");
    }
    // The 24 TB temporal tile: a temporal tile longer than the clip is the whole clip.
    let whole = run_in_process(&[
        "--format",
        "json",
        "reserve",
        "ltx-2",
        "decode",
        "1248x704",
        "--frames",
        "121",
        "--tile",
        "512",
        "--temporal-tile",
        "0",
        "--dtype",
        "bf16",
        "--os",
        "linux",
    ])
    .unwrap();
    let long = run_in_process(&[
        "--format",
        "json",
        "reserve",
        "ltx-2",
        "decode",
        "1248x704",
        "--frames",
        "121",
        "--tile",
        "512",
        "--temporal-tile",
        "99999",
        "--dtype",
        "bf16",
        "--os",
        "linux",
    ])
    .unwrap();
    let bytes = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap()["bytes"].as_u64().unwrap();
    assert_eq!(bytes(&long.out), bytes(&whole.out));
}

/// A lifted answer says so: its rule, the smaller request and both prices.
#[test]
fn a_lifted_answer_names_the_smaller_request() {
    let ran = run_in_process(&[
        "--format", "json", "reserve", "sdxl", "decode", "520x520", "--tile", "512", "--dtype", "fp16", "--os", "linux",
    ])
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&ran.out).unwrap();
    let own = run_in_process(&[
        "--format", "json", "reserve", "sdxl", "decode", "512x512", "--dtype", "fp16", "--os", "linux",
    ])
    .unwrap();
    let own: serde_json::Value = serde_json::from_str(&own.out).unwrap();
    assert_eq!(v["rule"], "monotone-floor");
    assert_eq!(v["bytes"], own["bytes"], "the 512x512 untiled price, one tile of the 520x520 image");
    assert_eq!(v["lifted"]["width"], 512);
    assert_eq!(v["lifted"]["tile"], 0);
    assert_eq!(v["lifted"]["own_rule"], "fitted-line");
    assert!(v["lifted"]["own_bytes"].as_u64().unwrap() < v["bytes"].as_u64().unwrap());
    assert!(v["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("never reserves less")));
    // --strict refuses a price set by an extrapolated or estimated smaller request, and takes a measured one.
    let strict = run_in_process(&[
        "reserve", "sdxl", "decode", "520x520", "--tile", "512", "--dtype", "fp16", "--os", "linux", "--strict",
    ])
    .unwrap();
    assert_eq!(strict.code, 0, "{}", strict.err);
}

/// The Python package, driven by its own generator (tests/python/monotone.py)
/// over the shipped file and each test root's: no inversion; and the same
/// run without the composition is caught.
#[test]
fn the_python_package_holds_the_same_property() {
    let run = |path: &std::path::Path, own: bool| -> serde_json::Value {
        let mut cmd = crate::python_package::python();
        cmd.arg(repo().join("tests/python/monotone.py")).arg(path).arg("20261205").arg("2500");
        if own {
            cmd.arg("own");
        }
        let out = cmd.output().expect("python3 is needed for the monotone test");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let mut caught = 0;
    for root in [".", "tests/fixtures/root", "tests/fixtures/video"] {
        let path = repo().join(root).join("fits/vae.json");
        let real = run(&path, false);
        assert_eq!(real["inversion_count"], 0, "{root}: {}", real["inversions"]);
        assert!(real["compared"].as_u64().unwrap() > 1500, "{root}: {real}");
        caught += run(&path, true)["inversion_count"].as_u64().unwrap();
    }
    assert!(caught > 20, "the Python pricer without the composition inverted only {caught} times");
}

/// Random chains in every dimension, priced by the CLI and by the Python
/// package: the same JSON or the same refusal, word for word, and no
/// inversion on either side.
#[test]
fn the_python_package_answers_random_chains_like_the_cli() {
    let files = files();
    let rng = proptest::test_runner::TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha);
    let mut runner = proptest::test_runner::TestRunner::new_with_rng(ProptestConfig::with_cases(800), rng);
    let path = repo().join("fits/vae.json").display().to_string();
    let mut queries = Vec::new();
    for _ in 0..800 {
        let mut c = case().new_tree(&mut runner).unwrap().current();
        c.file = 0; // the shipped file, which the CLI prices with --coefficients
        let coef = &files[0].1;
        let names = names(coef);
        let name = names[c.name % names.len()].clone();
        let family = coef.family(&name).unwrap().to_string();
        let facts = coef.file.registry.get(&family).and_then(|e| e.video.as_ref());
        let (small, large) = pair(&c, &name, facts);
        queries.push(small);
        queries.push(large);
    }
    let as_python = |q: &Query| {
        serde_json::json!({
            "model": q.vae.as_str(), "op": q.op.to_string(), "width": q.width, "height": q.height,
            "coefficients": path, "env": {},
            "kw": {
                "batch": q.batch, "tile": q.tile, "dtype": q.dtype.map(|d| d.to_string()),
                "backend": q.conv_backend.to_string(),
                "allocator": match q.allocator { Choice::Given(a) => a.to_string(), Choice::Auto => "auto".into() },
                "os": match q.os { Choice::Given(o) => o.to_string(), Choice::Auto => "auto".into() },
                "frames": q.frames, "temporal_tile": q.temporal_tile,
            },
        })
    };
    let answers =
        crate::python_package::python_answers(&serde_json::Value::Array(queries.iter().map(as_python).collect()));
    let mut agreed = 0;
    let mut bytes = Vec::new();
    for (q, py) in queries.iter().zip(&answers) {
        let mut args = vec![
            "--format".to_string(),
            "json".into(),
            "reserve".into(),
            q.vae.to_string(),
            q.op.to_string(),
            format!("{}x{}", q.width, q.height),
            "--batch".into(),
            q.batch.to_string(),
            "--tile".into(),
            q.tile.to_string(),
            "--dtype".into(),
            q.dtype.unwrap().to_string(),
            "--backend".into(),
            q.conv_backend.to_string(),
            "--coefficients".into(),
            path.clone(),
        ];
        if let Choice::Given(a) = q.allocator {
            args.extend(["--allocator".into(), a.to_string()]);
        }
        if let Choice::Given(o) = q.os {
            args.extend(["--os".into(), o.to_string()]);
        }
        if q.frames != 1 {
            args.extend(["--frames".into(), q.frames.to_string()]);
        }
        if let Some(t) = q.temporal_tile {
            args.extend(["--temporal-tile".into(), t.to_string()]);
        }
        let ran = run_in_process(&args).unwrap();
        match (ran.code, py.get("ok"), py.get("error")) {
            (0, Some(p), None) => {
                let cli: serde_json::Value = serde_json::from_str(&ran.out).unwrap();
                assert_eq!(&cli, p, "{args:?}");
                bytes.push(cli["bytes"].as_u64());
                agreed += 1;
            }
            (2, None, Some(serde_json::Value::String(p))) => {
                assert_eq!(ran.err.trim_end(), format!("error: {p}"), "{args:?}");
                bytes.push(None);
            }
            _ => panic!("{args:?}: the CLI exits {} ({}), Python answers {py}", ran.code, ran.err),
        }
    }
    for (i, pair) in bytes.chunks(2).enumerate() {
        if let [Some(a), Some(b)] = pair {
            assert!(b >= a, "{:?} → {a}, {:?} → {b}", queries[2 * i], queries[2 * i + 1]);
        }
    }
    assert!(agreed > 1000, "{agreed} of {} priced", queries.len());
}

/// Where a family has no line of its own on a platform, a borrowed line
/// (the unmeasured rule) and its trace both guess; the legacy floor, which
/// the policy lifts off traced prices, must stay lifted whichever guess is
/// higher. Found by the property above: it was lifted only where the trace
/// out-bid the borrowed line, so SD's fp32 encode under
/// cudaMallocAsync priced 14x1 at 262 MB and 14x504 at 34 MB. Here every
/// height of a thin image, in every file that lifts the floor.
#[test]
fn a_price_does_not_fall_where_the_trace_overtakes_a_borrowed_line() {
    let env = EnvSnapshot::default();
    let mut lifting = 0;
    for (source, coef) in files() {
        if coef.file.traced.as_ref().is_none_or(|t| t.lifts_legacy_floor.is_none()) {
            continue;
        }
        lifting += 1;
        for warm in [false, true] {
            for tile in [0, 504] {
                let mut last: Option<(u64, u64)> = None;
                for height in (1..=2048).step_by(7) {
                    let q = Query {
                        vae: "sd".into(),
                        op: Op::Encode,
                        tile,
                        width: 14,
                        height,
                        batch: 1,
                        frames: 1,
                        temporal_tile: None,
                        dtype: Some(Dtype::Fp32),
                        loaded_dtype: None,
                        fp32: None,
                        conv_backend: ConvBackend::Cudnn,
                        allocator: Choice::Given(Allocator::CudaMallocAsync),
                        os: Choice::Given(Os::Linux),
                        host: None,
                        warm,
                    };
                    let bytes = coef.quote(&q, &env).unwrap().bytes;
                    if let Some((h, b)) = last {
                        assert!(bytes >= b, "{source}: 14x{height} tile {tile} prices {bytes} B < 14x{h}'s {b} B");
                    }
                    last = Some((height, bytes));
                }
            }
        }
    }
    assert!(lifting >= 1, "no file lifts the legacy floor: the case is not exercised");
}
