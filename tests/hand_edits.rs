//! A green `verify` proves every answer: any edit of `fits/vae.json` that
//! changes what `reserve` or `plan` answer is caught, field by field.

use crate::common::*;
use serde_json::Value;
use std::fs;
use std::path::Path;
use vramfit::pricing::platform::EnvSnapshot;
use vramfit::pricing::{Choice, Coefficients, Pricer, Query};
use vramfit::vocab::{ConvBackend, Dtype, Op, Os};

fn shipped() -> Value {
    serde_json::from_slice(&fs::read(data_root().join("fits/vae.json")).unwrap()).unwrap()
}

fn write_json(path: &Path, v: &Value) {
    let mut b = serde_json::to_vec_pretty(v).unwrap();
    b.push(b'\n');
    fs::write(path, b).unwrap();
}

fn verify_in_process(root: &Path) -> Ran {
    let root = root.display().to_string();
    run_in_process(&["--root", &root, "--format", "json", "verify"]).unwrap()
}

/// Every answer a grid of `reserve` and `plan` queries gets from a file, or
/// None when the file is refused (so nothing is priced from it).
fn answers(text: &str) -> Option<Vec<String>> {
    let file = vramfit::coefficients::parse(text, "edited").ok()?;
    let c = Coefficients::new(file, "edited".into()).ok()?;
    let env = EnvSnapshot::default().on(Os::Linux);
    let budget = vramfit::plan::budget(Some(6 << 30), vramfit::exact::Ratio::int(1), None).unwrap();
    let mut out = Vec::new();
    for vae in ["sdxl", "sd15", "flux1", "flux2", "sd3", "cogview4", "qwen-image"] {
        for op in [Op::Decode, Op::Encode] {
            for tile in [0, 512, 768] {
                for dtype in [Dtype::Fp16, Dtype::Bf16, Dtype::Fp32] {
                    for backend in [ConvBackend::Cudnn, ConvBackend::Miopen] {
                        for os in [Os::Linux, Os::Windows] {
                            for (w, batch) in [(512, 1), (1024, 2), (2048, 1)] {
                                let q = Query {
                                    vae: vae.into(),
                                    op,
                                    tile,
                                    width: w,
                                    height: w,
                                    batch,
                                    frames: 1,
                                    temporal_tile: None,
                                    dtype: Some(dtype),
                                    loaded_dtype: Some(Dtype::Fp16),
                                    fp32: None,
                                    conv_backend: backend,
                                    allocator: Choice::Auto,
                                    os: Choice::Given(os),
                                    host: None,
                                    warm: false,
                                };
                                out.push(match c.price(&q, &env) {
                                    Ok(p) => format!("{p:?}"),
                                    Err(e) => format!("error {e}"),
                                });
                                if w == 2048 && tile == 0 && os == Os::Linux {
                                    let q = Query { batch: 3, ..q };
                                    out.push(match vramfit::plan::vae(&c, &q, &env, &budget, &c.file.tiles) {
                                        Ok(p) => format!("{p:?}"),
                                        Err(e) => format!("error {e}"),
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Some(out)
}

fn set(v: &mut Value, path: &[&str], to: Value) {
    let mut cur = v;
    for k in &path[..path.len() - 1] {
        cur = match k.parse::<usize>() {
            Ok(i) if cur.is_array() => &mut cur[i],
            _ => &mut cur[*k],
        };
    }
    let last = path[path.len() - 1];
    match last.parse::<usize>() {
        Ok(i) if cur.is_array() => cur[i] = to,
        _ => cur[last] = to,
    }
}

/// The edits a reviewer tried by hand: each passed `verify` before, and
/// most of them change an answer.
#[test]
fn each_reviewer_edit_is_caught_with_its_path() {
    let line = |v: &Value, dtype: &str, vae: &str| {
        v["lines"].as_array().unwrap().iter().position(|l| l["dtype"] == dtype && l["vae"] == vae).unwrap().to_string()
    };
    let base = shipped();
    let sd16 = line(&base, "fp16", "sd");
    let cases: Vec<(&str, Vec<String>, Value, &str)> = vec![
        (
            "legacy element size",
            vec!["legacy".into(), "elem_bytes".into(), "fp32".into()],
            Value::from(2),
            "legacy.elem_bytes.fp32",
        ),
        (
            "legacy k",
            vec!["legacy".into(), "k".into(), "miopen".into(), "decode".into()],
            Value::from(1),
            "legacy.k.miopen.decode",
        ),
        (
            "registry weight count",
            vec!["registry".into(), "sd".into(), "params".into()],
            Value::from(1),
            "registry.sd.params",
        ),
        (
            "model alias",
            vec!["registry".into(), "flux1".into(), "models".into()],
            serde_json::json!(["sdxl2"]),
            "registry.flux1.models",
        ),
        ("default allocator", vec!["default_allocator".into()], Value::from("cudaMallocAsync"), "default_allocator"),
        (
            "allocator default",
            vec!["allocator_defaults".into(), "0".into(), "allocator".into()],
            Value::from("native"),
            "allocator_defaults[0].allocator",
        ),
        ("os-specific pair", vec!["os_specific".into()], serde_json::json!([]), "os_specific"),
        ("tiles", vec!["tiles".into()], serde_json::json!([1024, 768, 512]), "tiles"),
        (
            "size range",
            vec!["lines".into(), sd16.clone(), "size_range".into()],
            serde_json::json!([1, 99999999]),
            "size_range",
        ),
        ("max ratio", vec!["lines".into(), sd16.clone(), "max_ratio".into()], Value::from("1.0001"), "max_ratio"),
        ("insufficient keys", vec!["insufficient".into()], serde_json::json!([]), "insufficient"),
        ("unmeasured rule", vec!["unmeasured".into(), "rule".into()], Value::from("max-measured"), "unmeasured.rule"),
        ("unknown key in a line", vec!["lines".into(), sd16.clone(), "scale".into()], Value::from(2), "scale"),
        ("margin text", vec!["formula".into()], Value::from("reserve_bytes = 0"), "formula"),
        (
            "a host's output copies",
            vec!["tiling".into(), "hosts".into(), "diffusers".into(), "copies".into()],
            Value::from("0.5"),
            "tiling.hosts.diffusers.copies",
        ),
        (
            "the default host",
            vec!["tiling".into(), "default_host".into()],
            Value::from("comfyui"),
            "tiling.default_host",
        ),
        (
            "bytes per attention score",
            vec!["attention".into(), "platforms".into(), "0".into(), "bytes_per_score".into()],
            Value::from("9.5"),
            "attention.platforms[0].bytes_per_score",
        ),
        (
            "a family's mid-block head width",
            vec!["registry".into(), "flux2".into(), "attention".into(), "head_dim".into()],
            Value::from(256),
            "registry.flux2.attention.head_dim",
        ),
    ];
    let mut changed_answers = 0;
    for (what, path, to, expect_path) in cases {
        let root = scratch();
        let f = root.path().join("fits/vae.json");
        let mut v = base.clone();
        let p: Vec<&str> = path.iter().map(String::as_str).collect();
        set(&mut v, &p, to);
        write_json(&f, &v);
        if answers(&fs::read_to_string(&f).unwrap())
            != answers(&fs::read_to_string(data_root().join("fits/vae.json")).unwrap())
        {
            changed_answers += 1;
        }
        let ran = verify_in_process(root.path());
        assert_eq!(ran.code, 1, "{what}: verify must fail: {}", ran.out);
        let j: Value = serde_json::from_str(&ran.out).unwrap();
        let paths: Vec<String> =
            j["findings"].as_array().unwrap().iter().filter_map(|f| f["path"].as_str().map(str::to_string)).collect();
        assert!(paths.iter().any(|p| p.contains(expect_path)), "{what}: no finding at {expect_path}: {paths:?}");
    }
    // The rest (max ratio, formula text, an alias the grid does not use, the
    // too-thin list) change what a reader of the file is told, not a price.
    assert!(changed_answers >= 13, "most of these edits change an answer: {changed_answers}");
}

fn all_paths(v: &Value, at: Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(at.clone());
    match v {
        Value::Object(o) => o.iter().for_each(|(k, c)| {
            let mut p = at.clone();
            p.push(k.clone());
            all_paths(c, p, out)
        }),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, c)| {
            let mut p = at.clone();
            p.push(i.to_string());
            all_paths(c, p, out)
        }),
        _ => {}
    }
}

/// One edit of the value at `path`: numbers move, strings change, booleans
/// flip, nulls fill, containers lose or gain an element or key.
fn edit_at(v: &mut Value, path: &[String], rng: &mut Rng) {
    let (parent_path, last) = match path.split_last() {
        Some((l, p)) => (p, Some(l)),
        None => (&path[..0], None),
    };
    let mut parent = &mut *v;
    for k in parent_path {
        parent = if parent.is_array() { &mut parent[k.parse::<usize>().unwrap()] } else { &mut parent[k.as_str()] };
    }
    let target = match last {
        None => parent,
        Some(k) if parent.is_array() => &mut parent[k.parse::<usize>().unwrap()],
        Some(k) => {
            if rng.below(5) == 0 {
                parent.as_object_mut().unwrap().remove(k.as_str());
                return;
            }
            &mut parent[k.as_str()]
        }
    };
    *target = match target.take() {
        Value::Number(n) => match (n.as_u64(), rng.below(3)) {
            (Some(u), 0) => Value::from(u + 1),
            (Some(u), 1) if u > 0 => Value::from(u - 1),
            (Some(u), _) => Value::from(u * 2 + 1),
            (None, _) => Value::from(0),
        },
        Value::String(s) => match rng.below(3) {
            0 => Value::from(format!("{s}0")),
            1 if s.len() > 1 => Value::from(s[..s.len() - 1].to_string()),
            _ => Value::from(
                s.replace('1', "2").replace("native", "cudaMallocAsync") + if s.contains('1') { "" } else { " " },
            ),
        },
        Value::Bool(b) => Value::Bool(!b),
        Value::Null => Value::from(1),
        Value::Array(mut a) => {
            if a.is_empty() || rng.below(2) == 0 {
                a.push(a.first().cloned().unwrap_or(Value::from(0)));
            } else {
                a.pop();
            }
            Value::Array(a)
        }
        Value::Object(mut o) => {
            o.insert("extra".into(), Value::from(0));
            Value::Object(o)
        }
    };
}

/// The property: every single-field edit of the shipped file (every path,
/// one seeded edit each) that changes an answer on the grid is caught by
/// verify; and so is every edit at all, since verify compares the whole
/// file with what `emit` builds.
#[test]
fn any_single_field_edit_that_changes_an_answer_is_caught() {
    let base = shipped();
    let base_text = fs::read_to_string(data_root().join("fits/vae.json")).unwrap();
    let before = answers(&base_text).expect("the shipped file loads");
    let mut paths = Vec::new();
    all_paths(&base, vec![], &mut paths);
    let extra = std::env::var("VRAMFIT_FUZZ_SEED").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    let mut rng = Rng::new(0xED17 ^ extra);
    let root = scratch();
    let f = root.path().join("fits/vae.json");
    let (mut edits, mut changing, mut refused) = (0, 0, 0);
    for path in paths.iter().skip(1) {
        let mut v = base.clone();
        edit_at(&mut v, path, &mut rng);
        if v == base {
            continue;
        }
        edits += 1;
        write_json(&f, &v);
        let after = answers(&fs::read_to_string(&f).unwrap());
        let changes_answers = after.as_ref() != Some(&before);
        changing += usize::from(changes_answers);
        refused += usize::from(after.is_none());
        let ran = verify_in_process(root.path());
        assert_ne!(
            ran.code,
            0,
            "edit at {} ({}) passed verify",
            path.join("."),
            if changes_answers { "it changes an answer" } else { "answers unchanged" }
        );
    }
    eprintln!("{edits} single-field edits: {changing} change an answer ({refused} of them are refused by reserve)");
    assert!(edits > 400, "{edits}");
    assert!(changing > 50, "the grid must see the edits that matter: {changing}");
}
