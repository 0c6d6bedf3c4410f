//! One set of refusals: the table `tests/fixtures/refusals.json`, run by
//! the CLI and by the Python package. Each case the CLI can express is
//! refused by both, in the same words (the CLI's first error line is the
//! package's message, or ends with it where clap names the flag around
//! it); each wrong type (no command line can give one) is refused by the
//! package with a `ValueError`, never another exception. And every
//! spelling the Rust vocabularies accept, any case, padded, is accepted
//! by both and answered alike.

use crate::common::*;
use serde_json::{json, Value};

fn table_path() -> std::path::PathBuf {
    repo().join("tests/fixtures/refusals.json")
}

fn python_side() -> Vec<Value> {
    let out = crate::python_package::python()
        .arg(repo().join("tests/python/refuse.py"))
        .arg(table_path())
        .output()
        .expect("python3 is needed for the refusal table");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_cli_and_the_package_refuse_the_same_things_in_the_same_words() {
    let table: Value = serde_json::from_str(&std::fs::read_to_string(table_path()).unwrap()).unwrap();
    let cases = table["cases"].as_array().unwrap();
    let answers = python_side();
    assert_eq!(answers.len(), cases.len());
    let (mut both, mut python_only) = (0, 0);
    for (case, py) in cases.iter().zip(&answers) {
        let name = case["name"].as_str().unwrap();
        assert!(py.get("crash").is_none(), "{name}: the package raised something else than ValueError: {py}");
        let Some(message) = py["error"].as_str() else { panic!("{name}: the package accepted it: {py}") };
        match case.get("cli").and_then(Value::as_array) {
            Some(args) => {
                let mut args: Vec<String> = args.iter().map(|a| a.as_str().unwrap().to_string()).collect();
                if args[0] == "reserve" && !args.iter().any(|a| a == "--os") {
                    args.extend(["--os".into(), "linux".into()]);
                }
                let ran = run_in_process(&args).unwrap();
                assert_eq!(ran.code, 2, "{name}: the CLI answered {}", ran.out);
                let first = ran.err.lines().next().unwrap_or_default();
                let same = first == format!("error: {message}") || first.ends_with(&format!(": {message}"));
                assert!(same, "{name}:\n  CLI:    {first}\n  Python: {message}");
                both += 1;
            }
            None => {
                let words = case["words"].as_str().unwrap();
                assert!(message.contains(words), "{name}: {message}");
                python_only += 1;
            }
        }
    }
    assert!(both >= 40 && python_only >= 8, "{both} shared, {python_only} Python-only");
}

/// Every dtype, backend, OS and op spelling vramfit accepts (its own
/// vocabularies, so a new alias is compared the day it is added), in lower
/// and upper case and padded: both sides accept it and answer alike.
#[test]
fn every_spelling_is_accepted_alike() {
    use vramfit::vocab::{ConvBackend, Dtype, Op, Os};
    let mut queries = Vec::new();
    let forms = |s: &str| vec![s.to_string(), s.to_uppercase(), format!("  {s}\t")];
    for d in Dtype::SPELLINGS {
        for f in forms(d) {
            queries.push(("sdxl", "decode", vec!["--dtype".to_string(), f.clone()], json!({"dtype": f})));
        }
    }
    for b in ConvBackend::SPELLINGS {
        for f in forms(b) {
            queries.push((
                "sdxl",
                "decode",
                vec!["--dtype".into(), "fp16".into(), "--backend".into(), f.clone()],
                json!({"dtype": "fp16", "backend": f}),
            ));
        }
    }
    for o in Os::SPELLINGS {
        for f in forms(o) {
            queries.push((
                "flux2-dev",
                "decode",
                vec!["--dtype".into(), "bf16".into(), "--backend".into(), "miopen".into(), "--os".into(), f.clone()],
                json!({"dtype": "bf16", "backend": "miopen", "os": f}),
            ));
        }
    }
    for op in Op::SPELLINGS {
        for f in forms(op) {
            queries.push(("sdxl", "op", vec!["--dtype".to_string(), "fp16".into()], json!({"dtype": "fp16", "op": f})));
        }
    }
    let input: Vec<Value> = queries
        .iter()
        .map(|(model, op, _, kw)| {
            let mut kw = kw.clone();
            let op = kw.as_object_mut().unwrap().remove("op").map_or(op.to_string(), |v| v.as_str().unwrap().into());
            kw.as_object_mut().unwrap().entry("os").or_insert(json!("linux"));
            json!({"model": model, "op": op, "width": 1024, "height": 1024, "kw": kw, "env": {}, "coefficients": null})
        })
        .collect();
    let path = repo().join("fits/vae.json").display().to_string();
    let input: Vec<Value> = input
        .into_iter()
        .map(|mut q| {
            q["coefficients"] = json!(path);
            q
        })
        .collect();
    let answers = crate::python_package::python_answers(&Value::Array(input.clone()));
    for (((model, _, flags, _), q), py) in queries.iter().zip(&input).zip(&answers) {
        let mut args = vec!["--format".to_string(), "json".into(), "reserve".into(), model.to_string()];
        args.push(q["op"].as_str().unwrap().to_string());
        args.push("1024x1024".into());
        args.extend(flags.iter().cloned());
        args.extend(["--coefficients".into(), path.clone()]);
        if !flags.iter().any(|f| f == "--os") {
            args.extend(["--os".into(), "linux".into()]);
        }
        let ran = run_in_process(&args).unwrap();
        assert_eq!(ran.code, 0, "{args:?}: {}", ran.err);
        let cli: Value = serde_json::from_str(&ran.out).unwrap();
        assert_eq!(Some(&cli), py.get("ok"), "{args:?}");
    }
    assert!(queries.len() > 60, "{}", queries.len());
}
