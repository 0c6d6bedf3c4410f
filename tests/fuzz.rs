//! Seeded mutation fuzzing of every file vramfit reads: measurement CSVs,
//! InvokeAI benchmark JSON, the points store, the policy and the shipped
//! coefficients. Each case mutates one file in a scratch root and runs the
//! whole command line in-process; it must not panic, must exit 0, 1 or 2,
//! must leave every file byte-identical when it exits 2, and must never
//! leave a temporary file behind.
//!
//! The cases are deterministic (fixed seeds), so a failure reproduces; the
//! message names the seed, the case and the command.

use crate::common::*;
use serde_json::Value;
use std::fs;
use std::path::Path;

/// Cases per file kind; five kinds, so at least 5 000 cases in all.
const CASES: usize = 1100;

/// Byte strings that tend to break parsers: quotes, separators, line ends,
/// a BOM, signs, exponents, huge numbers, NUL, a multi-byte character.
const INTERESTING: &[&str] = &[
    "\"",
    ",",
    "\n",
    "\r",
    "\r\n",
    "{",
    "}",
    "[",
    "]",
    "-",
    "0",
    "-1",
    "1e309",
    "18446744073709551616",
    "340282366920938463463374607431768211457",
    "\u{FEFF}",
    ".",
    "x",
    "\0",
    "é",
    "NaN",
    ":",
    "=",
    " ",
    "\t",
    "#",
    "null",
    "true",
    "\"\"",
    "0.0000000000000000001",
    "99999999999999999999",
    "fp8",
    "any",
    "float16",
];

fn lines_of(b: &[u8]) -> Vec<Vec<u8>> {
    b.split(|c| *c == b'\n').map(<[u8]>::to_vec).collect()
}

/// One to three byte-level mutations.
fn mutate_bytes(rng: &mut Rng, text: &[u8]) -> Vec<u8> {
    let mut b = text.to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = if b.is_empty() { 0 } else { rng.below(b.len() + 1) };
        match rng.below(9) {
            0 => {
                let end = (at + 1 + rng.below(8)).min(b.len());
                b.drain(at.min(end)..end);
            }
            1 | 2 => {
                let ins = rng.pick(INTERESTING).as_bytes().to_vec();
                b.splice(at..at, ins);
            }
            3..=5 => {
                let mut ls = lines_of(&b);
                let i = rng.below(ls.len());
                match rng.below(3) {
                    0 => {
                        let dup = ls[i].clone();
                        ls.insert(i, dup);
                    }
                    1 => {
                        ls.remove(i);
                    }
                    _ => {
                        let j = rng.below(ls.len());
                        ls.swap(i, j);
                    }
                }
                b = ls.join(&b'\n');
            }
            6 => b.truncate(at),
            7 => {
                // Replace the digit run at or after `at` with an odd number.
                if let Some(s) = b.iter().skip(at).position(u8::is_ascii_digit).map(|p| p + at) {
                    let e = b[s..].iter().position(|c| !c.is_ascii_digit()).map_or(b.len(), |p| p + s);
                    let num = rng.pick(&["0", "-1", "1.5", "18446744073709551616", "1e5", "00", "4294967296"]);
                    b.splice(s..e, num.bytes());
                }
            }
            _ => {
                if !b.is_empty() {
                    let i = rng.below(b.len());
                    b[i] ^= 1 << rng.below(8);
                }
            }
        }
    }
    b
}

/// Every path to a value inside a JSON document.
fn paths(v: &Value, at: Vec<Value>, out: &mut Vec<Vec<Value>>) {
    out.push(at.clone());
    match v {
        Value::Object(o) => o.iter().for_each(|(k, c)| {
            let mut p = at.clone();
            p.push(Value::String(k.clone()));
            paths(c, p, out)
        }),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, c)| {
            let mut p = at.clone();
            p.push(Value::from(i));
            paths(c, p, out)
        }),
        _ => {}
    }
}

fn at_mut<'a>(v: &'a mut Value, path: &[Value]) -> &'a mut Value {
    path.iter().fold(v, |v, k| match k {
        Value::String(s) => &mut v[s.as_str()],
        k => &mut v[k.as_u64().unwrap() as usize],
    })
}

/// One structure-aware mutation: a value replaced, removed, duplicated, or
/// an unknown key added.
pub(crate) fn mutate_json(rng: &mut Rng, text: &[u8]) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<Value>(text) else { return mutate_bytes(rng, text) };
    let mut all = Vec::new();
    paths(&v, vec![], &mut all);
    let path = rng.pick(&all).clone();
    let replacements = [
        Value::Null,
        Value::Bool(true),
        Value::from(0),
        Value::from(-1),
        Value::from(1.5),
        Value::from(u64::MAX),
        Value::from(""),
        Value::from("x"),
        Value::from("fp16"),
        Value::from("9999.99"),
        Value::Array(vec![]),
        Value::Object(Default::default()),
    ];
    match (rng.below(4), path.split_last()) {
        (0, Some((last, parent))) => match (at_mut(&mut v, parent), last) {
            (Value::Object(o), Value::String(k)) => {
                o.remove(k);
            }
            (Value::Array(a), k) => {
                let i = k.as_u64().unwrap() as usize;
                if rng.below(2) == 0 {
                    a.remove(i);
                } else {
                    let dup = a[i].clone();
                    a.insert(i, dup);
                }
            }
            _ => {}
        },
        (1, _) => {
            if let Value::Object(o) = at_mut(&mut v, &path) {
                o.insert("unexpected".into(), Value::from(1));
            } else {
                *at_mut(&mut v, &path) = rng.pick(&replacements).clone();
            }
        }
        _ => *at_mut(&mut v, &path) = rng.pick(&replacements).clone(),
    }
    let mut out = serde_json::to_vec_pretty(&v).unwrap();
    out.push(b'\n');
    out
}

/// A scratch root with the fixture store, policy and coefficients (the
/// files the mutations start from: one consistent set).
fn small_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for rel in ["measurements/vae.json", "fits/policy.toml", "fits/vae.json"] {
        let to = dir.path().join(rel);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(data_root().join(rel), to).unwrap();
    }
    dir
}

fn no_temp_files(root: &Path) -> bool {
    snapshot(root).iter().all(|(p, _)| !p.to_string_lossy().contains(".tmp-"))
}

/// Runs the cases of one file kind and checks the contract of each.
fn fuzz(seed: u64, file: &str, base: &[&Path], json: bool, commands: &dyn Fn(usize, &Path) -> Vec<Vec<String>>) {
    // `VRAMFIT_FUZZ_SEED=N cargo test fuzz` explores other cases; CI runs the fixed ones.
    let seed = seed ^ std::env::var("VRAMFIT_FUZZ_SEED").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    let mut rng = Rng::new(seed);
    let bases: Vec<Vec<u8>> = base.iter().map(|p| fs::read(p).unwrap()).collect();
    let mut codes = [0usize; 3];
    for case in 0..CASES {
        let root = small_root();
        let text = rng.pick(&bases).clone();
        let mutated =
            if json && rng.below(2) == 0 { mutate_json(&mut rng, &text) } else { mutate_bytes(&mut rng, &text) };
        let target = root.path().join(file);
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::write(&target, &mutated).unwrap();
        for args in commands(case, root.path()) {
            let before = snapshot(root.path());
            let ran = run_in_process(&args)
                .unwrap_or_else(|p| panic!("seed {seed} case {case}: `{}` panicked: {p}", args.join(" ")));
            assert!(ran.code <= 2, "seed {seed} case {case}: `{}` exited {}", args.join(" "), ran.code);
            codes[usize::from(ran.code)] += 1;
            if ran.code == 2 {
                assert!(!ran.err.trim().is_empty(), "seed {seed} case {case}: exit 2 without a message");
                assert!(
                    snapshot(root.path()) == before,
                    "seed {seed} case {case}: `{}` exited 2 but changed files: {}",
                    args.join(" "),
                    ran.err
                );
            }
            assert!(no_temp_files(root.path()), "seed {seed} case {case}: a temporary file was left behind");
        }
    }
    eprintln!("fuzz {file}: {CASES} cases; exits 0/1/2: {codes:?}");
    // The mutations must reach past the parsers, or the fuzz proves little.
    assert!(codes[2] > 0 && codes[0] + codes[1] > CASES / 20, "{file}: exits {codes:?}");
}

fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn rooted(root: &Path, a: &[&str]) -> Vec<String> {
    let mut v = vec!["--root".to_string(), root.display().to_string()];
    v.extend(strings(a));
    v
}

#[test]
fn mutated_measurement_csvs() {
    let raw = [data_root().join("measurements/raw/invokeai-pr7673-pr7674.csv"), fixture("ingest/good.csv")];
    let bases: Vec<&Path> = raw.iter().map(|p| p.as_path()).collect();
    fuzz(0xC5F, "in.csv", &bases, false, &|_, r| {
        let f = r.join("in.csv").display().to_string();
        vec![rooted(r, &["ingest", &f]), rooted(r, &["ingest", "--check", &f])]
    });
}

#[test]
fn mutated_invokeai_benchmark_json() {
    let src = fixture("invokeai/all_benchmark_results.json");
    fuzz(0x1A1, "in.json", &[src.as_path()], true, &|_, r| {
        let f = r.join("in.json").display().to_string();
        vec![rooted(
            r,
            &[
                "ingest",
                "--from",
                "invokeai-benchmark",
                "--source",
                "fuzz",
                "--conv-backend",
                "cudnn",
                "--allocator",
                "native",
                &f,
            ],
        )]
    });
}

#[test]
fn mutated_points_stores() {
    let store = data_root().join("measurements/vae.json");
    fuzz(0x5707E, "measurements/vae.json", &[store.as_path()], true, &|case, r| {
        let mut c = vec![rooted(r, &["points"])];
        if case % 6 == 0 {
            c.push(rooted(r, &["verify"]));
            c.push(rooted(r, &["emit"]));
        }
        c
    });
}

#[test]
fn mutated_policies() {
    let policy = data_root().join("fits/policy.toml");
    fuzz(0x9011C7, "fits/policy.toml", &[policy.as_path()], false, &|case, r| {
        let mut c = vec![rooted(r, &["points", "--vae", "sdxl"])];
        if case % 6 == 0 {
            c.push(rooted(r, &["fit"]));
            c.push(rooted(r, &["emit"]));
        }
        c
    });
}

#[test]
fn mutated_coefficient_files() {
    let shipped = data_root().join("fits/vae.json");
    fuzz(0xC0EF, "fits/vae.json", &[shipped.as_path()], true, &|case, r| {
        let f = r.join("fits/vae.json").display().to_string();
        let mut c = vec![
            strings(&["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--coefficients", &f]),
            strings(&[
                "reserve",
                "flux1",
                "decode",
                "768x768",
                "--dtype",
                "bf16",
                "--backend",
                "miopen",
                "--coefficients",
                &f,
            ]),
            strings(&[
                "plan",
                "sdxl",
                "decode",
                "2048x2048",
                "--batch",
                "3",
                "--dtype",
                "fp32",
                "--free",
                "6GiB",
                "--coefficients",
                &f,
            ]),
        ];
        if case % 6 == 0 {
            c.push(rooted(r, &["verify"]));
        }
        c
    });
}
