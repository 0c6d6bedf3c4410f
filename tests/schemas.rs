//! The JSON Schemas under `schemas/` are what `vramfit schema` prints
//! (`VRAMFIT_UPDATE_SCHEMAS=1` rewrites them after a reviewed change), and
//! each describes the real documents: the shipped files and the answers
//! validate against them, with a small validator of the keywords schemars
//! emits, which a broken document fails.

use crate::common::*;
use serde_json::{json, Value};

const KINDS: &[&str] = &["coefficients", "points", "policy", "reserve", "plan"];

fn printed(kind: &str) -> String {
    let out = vramfit().args(["schema", kind]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8(out.stdout).unwrap()
}

fn schema(kind: &str) -> Value {
    serde_json::from_str(&printed(kind)).unwrap()
}

#[test]
fn the_committed_schemas_are_current() {
    let update = std::env::var_os("VRAMFIT_UPDATE_SCHEMAS").is_some();
    let mut stale = Vec::new();
    for kind in KINDS {
        let path = repo().join(format!("schemas/{kind}.json"));
        let now = printed(kind);
        if update {
            std::fs::write(&path, &now).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(now.as_str()) {
            stale.push(path.display().to_string());
        }
    }
    assert!(stale.is_empty(), "stale: {stale:?}; run `VRAMFIT_UPDATE_SCHEMAS=1 cargo test schemas` and review");
}

/// The instance's problems against the schema (empty: valid).
fn problems(root: &Value, s: &Value, v: &Value, at: &str, out: &mut Vec<String>) {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        return problems(root, &root["$defs"][name], v, at, out);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = s.get(key).and_then(Value::as_array) {
            let ok = alts.iter().any(|a| {
                let mut p = Vec::new();
                problems(root, a, v, at, &mut p);
                p.is_empty()
            });
            if !ok {
                out.push(format!("{at}: matches none of {key}"));
            }
        }
    }
    if let Some(all) = s.get("allOf").and_then(Value::as_array) {
        for a in all {
            problems(root, a, v, at, out);
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            out.push(format!("{at}: {v} is not the constant {c}"));
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            out.push(format!("{at}: {v} is not one of {e:?}"));
        }
    }
    if let Some(t) = s.get("type") {
        let types: Vec<&str> = match t {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let kind = match v {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        if !types.iter().any(|t| *t == kind || (*t == "number" && kind == "integer")) {
            out.push(format!("{at}: a {kind}, expected {types:?}"));
            return;
        }
    }
    if let (Some(min), Some(n)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if n < min {
            out.push(format!("{at}: {n} below {min}"));
        }
    }
    if let Value::Object(o) = v {
        let props = s.get("properties").and_then(Value::as_object);
        for req in s.get("required").and_then(Value::as_array).into_iter().flatten() {
            if !o.contains_key(req.as_str().unwrap()) {
                out.push(format!("{at}: missing {req}"));
            }
        }
        for (k, val) in o {
            match (props.and_then(|p| p.get(k)), s.get("additionalProperties")) {
                (Some(ps), _) => problems(root, ps, val, &format!("{at}.{k}"), out),
                (None, Some(Value::Bool(false))) => out.push(format!("{at}: unknown key {k}")),
                (None, Some(extra @ Value::Object(_))) => problems(root, extra, val, &format!("{at}.{k}"), out),
                (None, _) => {}
            }
        }
    }
    if let (Value::Array(items), Some(each)) = (v, s.get("items")) {
        for (i, item) in items.iter().enumerate() {
            problems(root, each, item, &format!("{at}[{i}]"), out);
        }
    }
}

fn check(kind: &str, instance: &Value) -> Vec<String> {
    let s = schema(kind);
    let mut out = Vec::new();
    problems(&s, &s, instance, kind, &mut out);
    out
}

fn json_of(args: &[&str]) -> Value {
    let out = vramfit().args(args).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_shipped_files_and_the_answers_validate() {
    let read =
        |rel: &str| -> Value { serde_json::from_str(&std::fs::read_to_string(repo().join(rel)).unwrap()).unwrap() };
    assert_eq!(check("coefficients", &read("fits/vae.json")), Vec::<String>::new());
    assert_eq!(check("points", &read("measurements/vae.json")), Vec::<String>::new());
    let policy: toml::Value = std::fs::read_to_string(repo().join("fits/policy.toml")).unwrap().parse().unwrap();
    assert_eq!(check("policy", &serde_json::to_value(policy).unwrap()), Vec::<String>::new());
    for args in [
        &["--format", "json", "reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16"][..],
        &[
            "--format",
            "json",
            "reserve",
            "sdxl",
            "decode",
            "1024x1024",
            "--dtype",
            "fp32",
            "--backend",
            "miopen",
            "--os",
            "windows",
        ],
        &["--format", "json", "reserve", "flux2", "encode", "2048x2048", "--dtype", "bf16", "--tile", "4096"],
    ] {
        assert_eq!(check("reserve", &json_of(args)), Vec::<String>::new(), "{args:?}");
    }
    for args in [
        &[
            "--format",
            "json",
            "plan",
            "sdxl",
            "decode",
            "1024x1024",
            "--batch",
            "16",
            "--dtype",
            "fp16",
            "--free",
            "12GiB",
        ][..],
        &["--format", "json", "plan", "sdxl", "decode", "2048x2048", "--dtype", "fp32", "--free", "2GiB"],
        &[&["--format", "json", "plan"][..], README_CANVAS].concat(),
    ] {
        assert_eq!(check("plan", &json_of(args)), Vec::<String>::new(), "{args:?}");
    }
}

#[test]
fn a_broken_document_fails_its_schema() {
    let mut file: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("fits/vae.json")).unwrap()).unwrap();
    let line = file["lines"][0].as_object_mut().unwrap();
    line.remove("base_mib");
    line.insert("slope_typo".into(), json!("1.00"));
    file["lines"][0]["dtype"] = json!("fp64");
    file["format"] = json!("something-else");
    let found = check("coefficients", &file).join("\n");
    for words in ["missing \"base_mib\"", "unknown key slope_typo", "\"fp64\" is not one of", "not the constant"] {
        assert!(found.contains(words), "{words}: {found}");
    }
    let mut answer = json_of(&["--format", "json", "reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16"]);
    answer["bytes"] = json!("4706009088");
    assert!(check("reserve", &answer).iter().any(|p| p.contains("reserve.bytes: a string")));
}
