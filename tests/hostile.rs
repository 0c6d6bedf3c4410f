//! Hostile input (issue 61, docs/cli.md "Hostile input"): every numeric
//! argument of `reserve` and `plan` at the edges of u32 and u64, for every
//! family and op, and every numeric field of a coefficients file at 0, 1
//! and the largest values: no panic, exit 0, 1 or 2.
//!
//! These are properties, not figures: they read the shipped
//! `fits/vae.json` (every family, video ones included) rather than the
//! tests' frozen root, so new measurements can only make them fail by
//! exposing a real defect.

use crate::common::*;

/// The edges of the integer types a query's numbers pass through: 0, 1,
/// around 2³¹ and 2³², 2⁶³, 2⁶⁴ − 1 and 2⁶⁴ (one past what a u64 holds).
pub const EDGES: &[&str] = &[
    "0",
    "1",
    "2",
    "2147483647",
    "2147483648",
    "2147483649",
    "4294967289",
    "4294967290",
    "4294967291",
    "4294967292",
    "4294967293",
    "4294967294",
    "4294967295",
    "4294967296",
    "4294967297",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
];

fn families() -> Vec<(String, bool)> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(repo().join("fits/vae.json")).unwrap()).unwrap();
    v["registry"].as_object().unwrap().iter().map(|(k, e)| (k.clone(), e.get("video").is_some())).collect()
}

/// What broke, one example per distinct failure (a panic's message or an
/// exit code), so one run names every kind at once.
#[derive(Default)]
struct Broken(std::collections::BTreeMap<String, Vec<String>>);

impl Broken {
    /// One command line run in process: it must not panic and must exit 0, 1 or 2.
    fn run(&mut self, args: &[String]) {
        let what = match run_in_process(args) {
            Ok(r) if r.code <= 2 => return,
            Ok(r) => format!("exit {}", r.code),
            Err(p) => format!("panic: {p}"),
        };
        self.0.entry(what).or_insert_with(|| args.to_vec());
    }

    fn assert_none(self) {
        let all: Vec<String> = self.0.iter().map(|(what, args)| format!("{what}\n    e.g. {args:?}")).collect();
        assert!(all.is_empty(), "{} kind(s) of failure:\n{}", all.len(), all.join("\n"));
    }
}

#[test]
fn every_numeric_argument_at_every_edge_exits_0_1_or_2() {
    let mut broken = Broken::default();
    for (family, video) in families() {
        for op in ["decode", "encode"] {
            let frames = if video { "17" } else { "1" };
            for command in ["reserve", "plan"] {
                let base = |size: &str| -> Vec<String> {
                    let mut a: Vec<String> = [command, family.as_str(), op, size, "--dtype", "bf16", "--os", "linux"]
                        .iter()
                        .map(|s| s.to_string())
                        .collect();
                    if video {
                        a.extend(["--frames".into(), frames.into()]);
                    }
                    if command == "plan" {
                        a.extend(["--free".into(), "24GiB".into()]);
                    }
                    a
                };
                for e in EDGES {
                    broken.run(&base(&format!("{e}x512")));
                    broken.run(&base(&format!("512x{e}")));
                    broken.run(&base(&format!("{e}x{e}")));
                    let mut flags = vec!["--batch", "--tile", "--frames", "--temporal-tile"];
                    if command == "plan" {
                        flags.extend(["--free", "--cap"]);
                    }
                    for flag in flags {
                        for size in ["512x512", &format!("{e}x{e}"), "8x4294967296", "18446744073709551615x8"] {
                            let mut a = base(size);
                            a.extend([flag.to_string(), e.to_string()]);
                            broken.run(&a);
                        }
                    }
                }
            }
        }
    }
    broken.assert_none();
}

/// Every numeric argument drawn at once, from the edges and from ordinary
/// values, for a fixed seed: the combinations one edge at a time misses (a
/// tile past 2³² − 8 on an image wider than it).
#[test]
fn numeric_arguments_drawn_together_exit_0_1_or_2() {
    let mut broken = Broken::default();
    let families = families();
    let ordinary = ["8", "64", "512", "1024", "17", "121", "4096"];
    let mut rng = Rng::new(61);
    for case in 0..6000 {
        let (family, _) = rng.pick(&families).clone();
        let draw = |rng: &mut Rng| -> String {
            if rng.below(2) == 0 {
                rng.pick(EDGES).to_string()
            } else {
                rng.pick(&ordinary).to_string()
            }
        };
        let command = if case % 2 == 0 { "reserve" } else { "plan" };
        let size = format!("{}x{}", draw(&mut rng), draw(&mut rng));
        let mut a: Vec<String> = vec![command.into(), family, rng.pick(&["decode", "encode"]).to_string(), size];
        a.extend(["--dtype".into(), rng.pick(&["fp16", "bf16", "fp32"]).to_string(), "--os".into(), "linux".into()]);
        let mut flags = vec!["--batch", "--tile", "--frames", "--temporal-tile"];
        if command == "plan" {
            flags.extend(["--free", "--cap"]);
        }
        for flag in flags {
            if rng.below(3) != 0 {
                a.extend([flag.to_string(), draw(&mut rng)]);
            }
        }
        if command == "plan" && !a.iter().any(|x| x == "--free") {
            a.extend(["--free".into(), "24GiB".into()]);
        }
        broken.run(&a);
    }
    broken.assert_none();
}

/// `plan canvas` and the budget's numbers at every edge.
#[test]
fn canvas_and_budget_numbers_at_every_edge_exit_0_1_or_2() {
    let mut broken = Broken::default();
    for e in EDGES {
        for size in [format!("{e}x512"), format!("{e}x{e}"), "512x512".into()] {
            broken.run(&strings(&["plan", "canvas", &size, "--free", "24GiB"]));
            for flag in ["--frames", "--upscale", "--channels", "--transient", "--free", "--cap", "--batch"] {
                broken.run(&strings(&["plan", "canvas", &size, "--free", "24GiB", flag, e]));
            }
        }
        for flag in ["--free", "--cap"] {
            broken.run(&strings(&["plan", "sdxl", "decode", "1024x1024", "--dtype", "fp16", flag, e, "--free", e]));
        }
        broken.run(&strings(&["plan", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--free", e, "--share", e]));
    }
    broken.assert_none();
}

fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// Every numeric leaf of a JSON document, as a path of keys and indices,
/// with whether it is a decimal held as text (`"4510.80"`).
fn numeric_leaves(
    v: &serde_json::Value,
    at: &mut Vec<serde_json::Value>,
    out: &mut Vec<(Vec<serde_json::Value>, bool)>,
) {
    use serde_json::Value;
    match v {
        Value::Object(o) => o.iter().for_each(|(k, c)| {
            at.push(Value::from(k.as_str()));
            numeric_leaves(c, at, out);
            at.pop();
        }),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, c)| {
            at.push(Value::from(i));
            numeric_leaves(c, at, out);
            at.pop();
        }),
        Value::Number(_) => out.push((at.clone(), false)),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b'/') => {
            out.push((at.clone(), true))
        }
        _ => {}
    }
}

/// A leaf's pattern: its path with every index as `[]` (one pattern, many lines).
fn pattern(path: &[serde_json::Value]) -> String {
    path.iter().map(|k| k.as_str().map_or("[]".to_string(), str::to_string)).collect::<Vec<_>>().join("/")
}

/// The coefficients fuzz target (issue 61): every numeric field of the
/// shipped file, one at a time, set to 0, 1 and the largest values a u32 and a u64
/// hold; the file loaded by the strict loader and, where it loads,
/// priced on drawn queries of every family, planned, and asked once through
/// the command line. A fixed seed and a fixed budget: up to twelve leaves of
/// each pattern (every line's `base_mib` is one pattern), each at 0, 1, 2³² − 1
/// and 2⁶⁴ − 1 (a decimal held as text likewise). Nothing may panic; a refusal names the file.
#[test]
fn coefficient_files_with_every_numeric_field_at_0_1_and_max_never_panic() {
    use vramfit::pricing::{Choice, Pricer, Query};
    use vramfit::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
    let text = std::fs::read_to_string(repo().join("fits/vae.json")).unwrap();
    let base: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut leaves = Vec::new();
    numeric_leaves(&base, &mut vec![], &mut leaves);
    let mut by_pattern: std::collections::BTreeMap<String, Vec<_>> = Default::default();
    for l in leaves {
        by_pattern.entry(pattern(&l.0)).or_default().push(l);
    }
    let families: Vec<String> = base["registry"].as_object().unwrap().keys().cloned().collect();
    let mut rng = Rng::new(6101);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("vae.json");
    let (mut loaded, mut refused, mut priced) = (0usize, 0usize, 0usize);
    let mut broken: Vec<String> = Vec::new();
    for (pat, all) in &by_pattern {
        for _ in 0..all.len().min(12) {
            let (path, decimal) = rng.pick(all).clone();
            for value in 0..4 {
                let mut v = base.clone();
                let slot = path.iter().fold(&mut v, |v, k| match k {
                    serde_json::Value::String(s) => &mut v[s.as_str()],
                    k => &mut v[k.as_u64().unwrap() as usize],
                });
                *slot = match (decimal, value) {
                    (false, 0) => 0.into(),
                    (false, 1) => 1.into(),
                    (false, 2) => u32::MAX.into(),
                    (false, _) => u64::MAX.into(),
                    (true, 0) => "0".into(),
                    (true, 1) => "1".into(),
                    (true, 2) => "4294967295".into(),
                    (true, _) => "18446744073709551615".into(),
                };
                let case = format!("{pat} = {slot}");
                let mut bytes = serde_json::to_vec_pretty(&v).unwrap();
                bytes.push(b'\n');
                std::fs::write(&file, &bytes).unwrap();
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    assert!(reserve_on(&file, "sdxl").code <= 2, "the command line on {case}");
                    let c = match vramfit::pricing::source::CoefficientSource::File(file.clone()).load() {
                        Ok(c) => c,
                        Err(e) => {
                            assert!(e.words().contains("vae.json"), "a refusal names the file: {}", e.words());
                            return (false, 0usize);
                        }
                    };
                    let env = vramfit::pricing::platform::EnvSnapshot::default().on(Os::Linux);
                    let mut rng = Rng::new(priced as u64 + 1);
                    let mut n = 0;
                    for _ in 0..64 {
                        let family = rng.pick(&families).as_str();
                        let video = c.file.registry.get(family).is_some_and(|e| e.video.is_some());
                        let q = Query {
                            vae: family.into(),
                            op: *rng.pick(&[Op::Decode, Op::Encode]),
                            tile: *rng.pick(&[0, 256, 512, 4294967288]),
                            width: *rng.pick(&[8, 64, 1024, 4096, u64::from(u32::MAX)]),
                            height: *rng.pick(&[8, 64, 1024, 2048]),
                            batch: *rng.pick(&[1, 2, 8]),
                            frames: if video { *rng.pick(&[1, 17, 121]) } else { 1 },
                            temporal_tile: *rng.pick(&[None, Some(0), Some(16)]),
                            dtype: Some(*rng.pick(&[Dtype::Fp16, Dtype::Bf16, Dtype::Fp32])),
                            loaded_dtype: *rng.pick(&[None, Some(Dtype::Fp16)]),
                            fp32: None,
                            conv_backend: *rng.pick(&[ConvBackend::Cudnn, ConvBackend::Miopen, ConvBackend::Mps]),
                            allocator: *rng.pick(&[Choice::Auto, Choice::Given(Allocator::ExpandableSegments)]),
                            os: Choice::Given(Os::Linux),
                            host: None,
                            warm: rng.below(2) == 0,
                        };
                        if c.price(&q, &env).is_ok() {
                            n += 1;
                        }
                        let b = vramfit::plan::budget(Some(24 << 30), vramfit::exact::Ratio::int(1), None).unwrap();
                        let _ = vramfit::plan::vae(&c, &q, &env, &b, &c.file.tiles.clone());
                    }
                    (true, n)
                }));
                match outcome {
                    Ok((true, n)) => {
                        loaded += 1;
                        priced += n;
                    }
                    Ok((false, _)) => refused += 1,
                    Err(p) => broken.push(format!(
                        "{case}: {}",
                        p.downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default()
                    )),
                }
            }
        }
    }
    assert!(broken.is_empty(), "{} mutated file(s) panicked:\n{}", broken.len(), broken.join("\n"));
    eprintln!("coefficients fuzz: {loaded} files loaded, {refused} refused, {priced} queries priced");
    // The target exercised the pricer, not only the loader's refusals.
    assert!(loaded > 100 && priced > 1000, "loaded {loaded}, refused {refused}, priced {priced}");
}

/// `reserve FAMILY decode 1024x1024 --dtype fp16` priced by the coefficients file `file`, in process.
fn reserve_on(file: &std::path::Path, family: &str) -> Ran {
    let file = file.to_str().unwrap();
    run_in_process(&["reserve", family, "decode", "1024x1024", "--dtype", "fp16", "--coefficients", file]).unwrap()
}

/// The CLI's last guard: a panic inside a command line is one line on
/// stderr and exit 2, never Rust's 101.
#[test]
fn a_panic_inside_a_command_exits_2_with_one_line() {
    let mut err = Vec::new();
    let code = vramfit::cli::guarded(&mut err, || panic!("made on purpose"));
    assert_eq!(code, 2);
    let said = String::from_utf8(err).unwrap();
    assert!(said.starts_with("error: internal error"), "{said}");
    assert!(said.contains("made on purpose") && said.contains("a bug in vramfit"), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    let mut err = Vec::new();
    assert_eq!(vramfit::cli::guarded(&mut err, || 1), 1, "a command's own code passes through");
    assert!(err.is_empty());
}

/// A coefficients file whose divisor is 0 is refused at load with the
/// file, the field and the value, by the command line and the loader alike.
#[test]
fn a_zero_divisor_in_a_coefficients_file_is_refused_at_load() {
    let text = std::fs::read_to_string(repo().join("fits/vae.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("vae.json");
    for (family, field, value) in [
        ("sd", &["attention", "latent_factor"][..], 0u64),
        ("sd", &["attention", "heads"][..], 0),
        ("wan21", &["video", "temporal"][..], 0),
        ("wan21", &["video", "spatial"][..], 0),
        ("wan21", &["video", "frames"][..], 0),
        ("sd", &["attention", "latent_factor"][..], 4096),
    ] {
        let mut m = v.clone();
        let slot = field.iter().fold(&mut m["registry"][family], |v, k| &mut v[*k]);
        *slot = value.into();
        std::fs::write(&file, format!("{}\n", serde_json::to_string_pretty(&m).unwrap())).unwrap();
        let r = reserve_on(&file, family);
        assert_eq!(r.code, 2, "{family}.{field:?} = {value}: {}", r.err);
        let named = format!("registry.{family}.{}: {value} is not", field.join("."));
        assert!(r.err.contains("vae.json") && r.err.contains(&named), "{named} in: {}", r.err);
    }
    // The shipped values load.
    std::fs::write(&file, &text).unwrap();
    let r = reserve_on(&file, "sd");
    assert_eq!(r.code, 0, "{}", r.err);
}

/// The Python side (tests/python/hostile.py): every numeric argument of
/// `reserve`, `plan`, `budget`, `with_batch` and each host drop-in at the
/// edges, and arguments whose own `__str__`, `__index__`, `__bool__`,
/// `items()`, `shape` or `parameters()` raise; only `ValueError` and
/// `TypeError` come out, and the boundary turns a panic into a `Refusal`.
#[test]
fn python_raises_only_value_and_type_errors() {
    let out = crate::common::python().arg(repo().join("tests/python/hostile.py")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let broken: Vec<&str> = v["broken"].as_array().unwrap().iter().filter_map(|b| b.as_str()).collect();
    assert!(broken.is_empty(), "{} call(s) raised something else:\n{}", broken.len(), broken.join("\n"));
    assert!(v["calls"].as_u64().unwrap() > 1000, "{}", v["calls"]);
}

/// Runs the binary with a deadline: a command that waits on a FIFO would
/// otherwise hang the suite. Returns its exit code and stderr, or fails
/// when it is still running after `secs`.
#[cfg(unix)]
fn within(secs: u64, cmd: &mut std::process::Command) -> (i32, String) {
    use std::io::Read;
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            return (status.code().unwrap_or(-1), err);
        }
        if start.elapsed().as_secs() >= secs {
            let _ = child.kill();
            panic!("still running after {secs} s (waiting on input?): {cmd:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The binary as a plain process (to spawn and watch), with the
/// allocator variables cleared as `vramfit()` clears them.
#[cfg(unix)]
fn bin() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_vramfit"));
    for v in ["PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF"] {
        c.env_remove(v);
    }
    c
}

#[cfg(unix)]
fn mkfifo(path: &std::path::Path) {
    let ok = std::process::Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

/// A FIFO, a device or a folder given where a file is read is refused at
/// once (exit 2, the path and its kind named), by every reader: `ingest`,
/// `report --observed`, `family add --traces`, `reserve --coefficients`,
/// a root whose policy, store or shipped file is one; and the root is left
/// as it was.
#[cfg(unix)]
#[test]
fn a_fifo_a_device_or_a_folder_is_refused_not_waited_on() {
    let root = scratch_of(&data_root());
    // The FIFO beside the root, not in it: the snapshot below reads every file of the root.
    let aside = tempfile::tempdir().unwrap();
    let fifo = aside.path().join("pipe");
    mkfifo(&fifo);
    let before = snapshot(root.path());
    let r = root.path().to_str().unwrap().to_string();
    let pipe = fifo.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["ingest", pipe], "a FIFO"),
        (vec!["ingest", "/dev/zero"], "a device"),
        (vec!["ingest", "measurements"], "a folder"),
        (
            vec![
                "ingest",
                "--from",
                "invokeai-benchmark",
                "--source",
                "u",
                "--conv-backend",
                "cudnn",
                "--allocator",
                "native",
                "--os",
                "linux",
                "--device",
                "x",
                "--id-prefix",
                "p",
                pipe,
            ],
            "a FIFO",
        ),
        (vec!["report", "--observed", pipe], "a FIFO"),
        (vec!["family", "add", "newfam", "--traces", pipe], "a FIFO"),
        (vec!["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--coefficients", pipe], "a FIFO"),
        (vec!["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--coefficients", "/dev/null"], "a device"),
    ];
    for (args, kind) in cases {
        let (code, err) = within(5, bin().current_dir(root.path()).arg("--root").arg(&r).args(&args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(kind) && err.contains("not a regular file"), "{args:?}: {err}");
    }
    assert_eq!(snapshot(root.path()), before, "nothing written");
    // A root whose own files are FIFOs: every command that reads them refuses.
    for rel in ["fits/policy.toml", "measurements/vae.json", "fits/vae.json"] {
        let root = scratch_of(&data_root());
        let p = root.path().join(rel);
        std::fs::remove_file(&p).unwrap();
        mkfifo(&p);
        for cmd in [&["verify"][..], &["fit"], &["emit", "--wait", "0"], &["points"]] {
            let (code, err) = within(5, bin().arg("--root").arg(root.path()).args(cmd));
            if rel == "fits/vae.json" && cmd[0] != "verify" {
                // `fit`, `emit` and `points` do not read the shipped file (emit replaces it).
                continue;
            }
            assert_eq!(code, 2, "{rel} a FIFO, {cmd:?}: {err}");
            assert!(err.contains("not a regular file"), "{rel}, {cmd:?}: {err}");
        }
    }
}

/// `ingest -` reads standard input before it takes the root's lock: while
/// it waits on a pipe nobody writes, another writer (`emit --wait 0`) runs.
#[cfg(unix)]
#[test]
fn ingest_waiting_on_standard_input_holds_no_lock() {
    use std::io::Write;
    let root = scratch_of(&data_root());
    let mut ingest = bin()
        .arg("--root")
        .arg(root.path())
        .args(["ingest", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (code, err) = within(20, bin().arg("--root").arg(root.path()).args(["emit", "--wait", "0"]));
    assert!(code <= 1, "emit beside a waiting ingest: {err}");
    let mut stdin = ingest.stdin.take().unwrap();
    let csv = std::fs::read_to_string(fixture("ingest/good.csv")).unwrap_or_default();
    let _ = stdin.write_all(csv.as_bytes());
    drop(stdin);
    let status = ingest.wait().unwrap();
    assert!(status.code().is_some_and(|c| c <= 2));
}

/// The Observer writes only its own file (tests/python/observe_files.py):
/// a notes file, a binary file, a link (live or dangling), a FIFO, a
/// device and a folder are refused when the observer is built and left
/// byte for byte; only its own torn last row is ever cut; a file replaced
/// behind it costs the row, never the op; no row or log line holds a path.
#[cfg(unix)]
#[test]
fn the_observer_writes_only_its_own_file() {
    let out = crate::common::python()
        .arg(repo().join("tests/python/observe_files.py"))
        .env("VRAMFIT_REPO", repo())
        .env("VRAMFIT_COEFFICIENTS", repo().join("fits/vae.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let failed: Vec<&str> = v["failed"].as_array().unwrap().iter().filter_map(|b| b.as_str()).collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    assert!(v["cases"].as_u64().unwrap() >= 20, "{}", v["cases"]);
}

/// The runtime's SHA-256 (which names a coefficients file in a row) is the
/// `sha2` crate's, the one the CLI names files with, at every length
/// across the padding's edges.
#[test]
fn the_runtimes_digest_is_the_clis() {
    let mut rng = Rng::new(7);
    for len in (0..300).chain([1000, 4096, 65_537]) {
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        assert_eq!(vramfit::digest::sha256_tag(&bytes), vramfit::fsio::sha256_tag(&bytes), "{len} bytes");
    }
}

/// `export` records the file relative to the root, whatever spelling of
/// the root was typed: the same bytes from every spelling, and no path.
#[test]
fn export_holds_no_path_of_the_machine() {
    let root = scratch_of(&data_root());
    let abs = root.path().canonicalize().unwrap();
    let mut outs = Vec::new();
    for spelling in [abs.display().to_string(), format!("{}/", abs.display()), format!("{}/./fits/..", abs.display())] {
        let out =
            vramfit().args(["--root", &spelling, "--format", "json", "export", "--host", "comfyui"]).output().unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
        let text = stdout_of(&out);
        assert!(!text.contains(&abs.display().to_string()), "a path in the export");
        assert_eq!(json_of(&out)["coefficients"], "fits/vae.json");
        outs.push(text);
    }
    assert!(outs.windows(2).all(|w| w[0] == w[1]));
}

/// Ingests one CSV in a scratch root: exit code, stderr, and whether the
/// root changed.
fn ingest_text(text: &str) -> (i32, String, bool) {
    let root = scratch_of(&data_root());
    let f = root.path().join("rows.csv");
    std::fs::write(&f, text).unwrap();
    let before = snapshot(root.path());
    let out = vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).output().unwrap();
    (out.status.code().unwrap(), stderr_of(&out), snapshot(root.path()) != before)
}

/// What a row may hold: a byte count kept beside a point (an observed
/// `reservation_bytes`) is a whole number within the pricer's range, and
/// an id never begins as a spreadsheet formula; each refused with its
/// file, line and field, nothing written.
#[test]
fn hostile_rows_are_refused_with_file_line_and_field() {
    let header =
        "id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_mib,reservation_bytes";
    let ok = "r-1,test,cudnn,native,linux,sd,decode,0,fp16,512,512,1,1100,1153433600";
    let (code, err, changed) = ingest_text(&format!("{header}\n{ok}\n"));
    assert!(code == 0 && changed, "{err}");
    for bad in ["NaN", "-1", "1e30", "18446744073709551616", "1.5", "inf", "0x10", "99999999999999999999"] {
        let row = ok.replace(",1153433600", &format!(",{bad}"));
        let (code, err, changed) = ingest_text(&format!("{header}\n{ok}\n{row}\n"));
        assert_eq!(code, 2, "reservation_bytes {bad}: {err}");
        assert!(!changed, "nothing written");
        assert!(err.contains("rows.csv:3:") && err.contains("reservation_bytes"), "{bad}: {err}");
    }
    for id in ["=cmd|' /C calc'!A0", "+1", "-x", "@SUM(A1)", "\"\t=x\""] {
        let row = ok.replace("r-1,", &format!("{id},"));
        let (code, err, changed) = ingest_text(&format!("{header}\n{row}\n"));
        assert_eq!(code, 2, "id {id}: {err}");
        assert!(!changed);
        assert!(err.contains("rows.csv:2:") && err.contains("id:") && err.contains("formula"), "{id}: {err}");
    }
}

/// Free text that begins as a formula is written escaped wherever vramfit
/// writes CSV or Markdown: a Markdown cell keeps its table's shape too.
#[test]
fn free_text_is_written_escaped() {
    use vramfit::report::markdown_cell;
    assert_eq!(markdown_cell("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
    assert_eq!(markdown_cell("@x"), "'@x");
    assert_eq!(markdown_cell("a | b\nc"), "a \\| b c");
    // Numbers and the placeholder for none stay as they are.
    for plain in ["-", "-1.5", "+3 %", "−0.2", "1024", "sd/decode/0"] {
        assert_eq!(markdown_cell(plain), plain);
    }
    let table = vramfit::report::markdown_table(&["a", "b"], &[vec!["x|y".into(), "-z\nw".into()]]);
    assert_eq!(table.lines().count(), 3, "{table}");
    assert!(table.contains("x\\|y") && table.contains("'-z w"), "{table}");
    // The harness's measurement rows, the same rule.
    let script = "import sys; sys.path.insert(0, sys.argv[1]); from harness.run import csv_cell as c; \
                  print([c('=1+1'), c('+x'), c('-x'), c('@x'), c('\\t=x'), c('ok'), c(5)])";
    let out = std::process::Command::new("python3").args(["-c", script]).arg(repo()).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), r#"["'=1+1", "'+x", "'-x", "'@x", "'\t=x", 'ok', 5]"#);
}

/// A key given twice in one JSON object is refused by every loader, with
/// the key and its line, where serde would keep the last without a word:
/// a coefficients file (the CLI and Python `load()`), InvokeAI's benchmark
/// JSON, a stored point.
#[test]
fn a_duplicate_json_key_is_refused_by_every_loader() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo().join("fits/vae.json")).unwrap();
    // The registry's first family, again, right after itself: a map key twice.
    let at = text.find("\"registry\": {\n").unwrap() + "\"registry\": {\n".len();
    let end = at + text[at..].find("\n    },\n").unwrap() + "\n    },\n".len();
    let dup = format!("{}{}{}", &text[..end], &text[at..end], &text[end..]);
    let line = dup[..end].lines().count() as u64 + 1;
    let file = dir.path().join("vae.json");
    std::fs::write(&file, &dup).unwrap();
    let r = reserve_on(&file, "sdxl");
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(r.err.contains(&format!("vae.json:{line}:")) && r.err.contains("appears twice"), "line {line}: {}", r.err);
    let script = "import sys, vramfit_vae as v\ntry:\n    v.load(sys.argv[1]); print('loaded')\nexcept ValueError as e:\n    print(e)\n";
    let out = crate::common::python().args(["-c", script]).arg(&file).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("appears twice") && said.contains(&format!(":{line}:")), "{said}");
    // InvokeAI's benchmark JSON.
    let bench = std::fs::read_to_string(fixture("invokeai/all_benchmark_results.json")).unwrap();
    let open = bench.find('{').unwrap();
    let first_key_end = open + bench[open..].find(',').unwrap() + 1;
    let dup = format!("{}{}{}", &bench[..first_key_end], &bench[open + 1..first_key_end], &bench[first_key_end..]);
    let f = dir.path().join("bench.json");
    std::fs::write(&f, dup).unwrap();
    let root = scratch_of(&data_root());
    let out = vramfit()
        .arg("--root")
        .arg(root.path())
        .args(["ingest", "--from", "invokeai-benchmark", "--source", "u", "--conv-backend", "cudnn"])
        .args(["--allocator", "native", "--os", "linux", "--device", "x", "--id-prefix", "p"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("appears twice"), "{}", stderr_of(&out));
    // A stored point whose metadata names a key twice.
    let store = root.path().join("measurements/vae.json");
    let s = std::fs::read_to_string(&store).unwrap();
    let edited = s.replacen("\"metadata\":{}", "\"metadata\":{\"a\":\"1\",\"a\":\"2\"}", 1);
    assert_ne!(edited, s, "a point with empty metadata to edit");
    std::fs::write(&store, edited).unwrap();
    let out = vramfit().arg("--root").arg(root.path()).arg("points").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("appears twice"), "{}", stderr_of(&out));
}

/// A frame count a video family's VAE cannot run is refused with the
/// nearest counts it runs, by the CLI, `plan`, Python and the drop-ins
/// alike; the counts it runs are priced (docs/video.md, "Frame counts").
#[test]
fn frame_counts_off_a_familys_grammar_are_refused_everywhere() {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(repo().join("fits/vae.json")).unwrap()).unwrap();
    let mut checked = 0;
    let mut py_cases = Vec::new();
    for (family, e) in v["registry"].as_object().unwrap() {
        let Some(video) = e.get("video") else { continue };
        let t = video["temporal"].as_u64().unwrap();
        let (step, offset, first) = match video.get("clips") {
            Some(c) => (c[0].as_u64().unwrap(), c[1].as_u64().unwrap(), 1),
            None => (t, 1, 0),
        };
        let on = step * (first + 2) + offset;
        let off = on + 1;
        for op in ["decode", "encode"] {
            for command in ["reserve", "plan"] {
                let mut a: Vec<String> = [command, family.as_str(), op, "512x512", "--dtype", "bf16", "--os", "linux"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                if command == "plan" {
                    a.extend(["--free".into(), "80GiB".into()]);
                }
                let at = |frames: u64| {
                    let mut a = a.clone();
                    a.extend(["--frames".into(), frames.to_string()]);
                    run_in_process(&a).unwrap()
                };
                let r = at(on);
                assert!(r.code <= 1, "{family} {op} {command} at {on} frames: {}", r.err);
                let r = at(off);
                assert_eq!(r.code, 2, "{family} {op} {command} at {off} frames: {}", r.out);
                let nearest = format!("the nearest it {op}s: {on} or {}", on + step);
                assert!(r.err.contains(&nearest), "{family} {op}: {nearest} in {}", r.err);
                checked += 1;
            }
            py_cases.push(serde_json::json!([family, op, off]));
        }
        if video["decodes_single_frame"] == false {
            let r =
                run_in_process(&["reserve", family, "decode", "512x512", "--frames", "1", "--dtype", "bf16"]).unwrap();
            assert_eq!(r.code, 2, "{family}: one frame decoded");
            assert!(r.err.contains("not 1"), "{}", r.err);
            let r =
                run_in_process(&["reserve", family, "encode", "512x512", "--frames", "1", "--dtype", "bf16"]).unwrap();
            assert!(r.code <= 1, "{family}: one frame encoded: {}", r.err);
        }
    }
    assert!(checked >= 40, "{checked}");
    // Python, and the InvokeAI drop-ins that take pixel frames.
    let script = r#"
import json, sys, types
import vramfit_vae as v
from vramfit_vae.hosts import invokeai
out = []
for family, op, frames in json.loads(sys.argv[1]):
    for call in (v.reserve, v.plan):
        kw = dict(dtype="bf16", os="linux", env={}, frames=frames)
        if call is v.plan:
            kw["free"] = 80 << 30
        try:
            call(family, op, 512, 512, **kw)
            out.append("priced %s %s %d" % (family, op, frames))
        except v.Refusal as e:
            out.append(str(e))
class P: dtype = "bfloat16"
class Vae:
    config = types.SimpleNamespace(z_dim=16)
    def parameters(self): return iter([P()])
for call, args in ((invokeai.estimate_vae_working_memory_wan, ("decode", Vae(), 480, 832, 18)),
                   (invokeai.estimate_vae_working_memory_minimax_h3, ("decode", Vae(), 256, 256, 1))):
    try:
        call(*args)
        out.append("priced %s" % call.__name__)
    except v.Refusal as e:
        out.append(str(e))
print(json.dumps(out))
"#;
    let out =
        crate::common::python().args(["-c", script, &serde_json::Value::from(py_cases).to_string()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
    let priced: Vec<&String> = said.iter().filter(|s| s.starts_with("priced")).collect();
    assert!(priced.is_empty(), "{priced:?}");
    assert!(said.iter().all(|s| s.contains("the nearest it")), "{said:?}");
}

/// The frame grammar the pricer holds a query to is the harness's, which
/// the traces were made with (harness/configs/*.json `frame_grammar` and
/// `one_frame_max`): one fact, two readers, held equal here.
#[test]
fn the_shipped_frame_grammar_is_the_harness_configs() {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(repo().join("fits/vae.json")).unwrap()).unwrap();
    for entry in std::fs::read_dir(repo().join("harness/configs")).unwrap() {
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
        let Some(video) = v["registry"][doc["vae"].as_str().unwrap()].get("video") else { continue };
        let family = doc["vae"].as_str().unwrap();
        assert_eq!(video["temporal"], doc["temporal"], "{family}: temporal compression");
        assert_eq!(video.get("clips"), doc.get("frame_grammar").map(|g| &g["pixel"]), "{family}: clips");
        let no_single = doc["one_frame_max"]["pixels"]["decode"] == 0;
        assert_eq!(video["decodes_single_frame"] == false, no_single, "{family}: one-frame decode");
    }
}

/// `report --observed` on more rows than it lists: the under-reserved and
/// refused rows are counted whole and listed to `SHOWN`, the worst first.
#[test]
fn report_observed_counts_every_row_and_lists_a_bounded_few() {
    let root = scratch_of(&data_root());
    let rows = root.path().join("rows.csv");
    let out = std::process::Command::new("python3")
        .arg(repo().join("benches/observed_rows.py"))
        .args(["400"])
        .arg(&rows)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = vramfit()
        .arg("--root")
        .arg(root.path())
        .args(["--format", "json", "report", "--observed"])
        .arg(&rows)
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr_of(&out));
    let r = json_of(&out);
    let shown = vramfit::observed::SHOWN;
    let under = r["under"].as_array().unwrap();
    let under_rows = r["under_rows"].as_u64().unwrap() as usize;
    assert!(under_rows > shown, "the fixture's rows under-reserve more than are shown: {under_rows}");
    assert_eq!(under.len(), shown);
    assert_eq!(r["covered"].as_u64().unwrap() as usize + under_rows, 400, "{}", r["covered"]);
    // The worst first: demand / reservation never rises down the list.
    let ratio = |u: &serde_json::Value| u["demand_bytes"].as_f64().unwrap() / u["reserved_bytes"].as_f64().unwrap();
    assert!(under.windows(2).all(|w| ratio(&w[0]) >= ratio(&w[1])));
    assert!(r["refused"].as_array().unwrap().len() <= shown);
    assert!(r["refused_rows"].as_u64().unwrap() as usize >= r["refused"].as_array().unwrap().len());
    for c in r["changes"].as_array().unwrap() {
        assert!(c["rows"].as_array().unwrap().len() <= shown.min(c["row_count"].as_u64().unwrap() as usize));
    }
}
