//! Input edge cases: CSV quoting, byte-order marks and line counting; the
//! InvokeAI importer's weight size; and the store's invariants, checked by
//! every command that loads it.

use crate::common::*;
use std::fs;
use std::path::Path;

const HEADER: &str = "id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_mib,note";

fn row(id: &str, note: &str) -> String {
    format!("{id},edge test,cudnn,native,linux,sd,decode,0,fp16,640,640,1,1200,{note}")
}

/// Ingests `bytes` as a CSV in a scratch root; returns exit code, stderr,
/// and whether the root changed.
fn ingest_bytes(bytes: &[u8]) -> (i32, String, bool) {
    let root = scratch();
    let f = root.path().join("in.csv");
    fs::write(&f, bytes).unwrap();
    let before = snapshot(root.path());
    let out = vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).output().unwrap();
    (out.status.code().unwrap(), stderr_of(&out), snapshot(root.path()) != before)
}

fn refused_at(bytes: &[u8], line: u32, words: &[&str]) {
    let (code, err, changed) = ingest_bytes(bytes);
    assert_eq!(code, 2, "{err}");
    assert!(!changed, "nothing is written on exit 2");
    assert!(err.contains(&format!("in.csv:{line}:")), "expected line {line}: {err}");
    for w in words {
        assert!(err.contains(w), "expected '{w}' in: {err}");
    }
}

#[test]
fn an_unclosed_quote_is_refused_at_the_line_where_it_opens() {
    let text =
        [HEADER.to_string(), row("a", "fine"), row("b", "\"5 inch"), row("c", "swallowed?"), row("d", "x")].join("\n");
    refused_at(text.as_bytes(), 3, &["note:", "does not close"]);
}

#[test]
fn quoted_fields_with_commas_and_doubled_quotes_are_read() {
    let root = scratch();
    let f = root.path().join("in.csv");
    fs::write(&f, format!("{HEADER}\n{}\n", row("q1", "\"a, \"\"b\"\" c\""))).unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).assert().code(0);
    let out =
        vramfit().arg("--root").arg(root.path()).args(["--format", "json", "points", "--id", "q1"]).output().unwrap();
    assert_eq!(json_of(&out)["points"][0]["note"], "a, \"b\" c");
}

#[test]
fn text_after_a_closing_quote_is_refused() {
    let text = format!("{HEADER}\n{}\n", row("q", "\"a\"b"));
    refused_at(text.as_bytes(), 2, &["note:", "after the closing quote"]);
}

#[test]
fn more_than_one_byte_order_mark_is_refused() {
    let text = format!("\u{FEFF}\u{FEFF}\u{FEFF}{HEADER}\n{}\n", row("a", ""));
    refused_at(text.as_bytes(), 1, &["byte-order mark"]);
    let text = format!("\u{FEFF}{HEADER}\n\u{FEFF}{}\n", row("a", ""));
    refused_at(text.as_bytes(), 2, &["byte-order mark"]);
}

#[test]
fn messages_count_physical_lines_blank_ones_included() {
    let bad = row("bad", "").replace("640,640", "640,0");
    let text = format!("{HEADER}\n\n{}\n\n{bad}\n", row("a", ""));
    refused_at(text.as_bytes(), 5, &["height"]);
    // CRLF and CR-only line ends count the same way.
    refused_at(text.replace('\n', "\r\n").as_bytes(), 5, &["height"]);
    refused_at(text.replace('\n', "\r").as_bytes(), 5, &["height"]);
    // A header after blank lines is found, and named by its own line.
    let text = format!("\n\n{}\n", HEADER.replace(",op", ",operation"));
    refused_at(text.as_bytes(), 3, &["op: missing column `op`"]);
}

#[test]
fn cr_only_files_are_read_row_by_row() {
    let text = format!("{HEADER}\r{}\r{}\r", row("cr1", ""), row("cr2", ""));
    let (code, err, changed) = ingest_bytes(text.as_bytes());
    assert_eq!((code, changed), (0, true), "{err}");
}

fn invokeai_with(edit: &dyn Fn(&mut serde_json::Value)) -> (i32, String) {
    let root = scratch();
    let mut v: serde_json::Value =
        serde_json::from_slice(&fs::read(fixture("invokeai/all_benchmark_results.json")).unwrap()).unwrap();
    edit(&mut v);
    let f = root.path().join("bench.json");
    fs::write(&f, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let before = snapshot(root.path());
    let out = vramfit()
        .arg("--root")
        .arg(root.path())
        .args(["ingest", "--from", "invokeai-benchmark", "--source", "t", "--conv-backend", "cudnn"])
        .args(["--allocator", "native", "--id-prefix", "edge"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(out.status.code() != Some(2) || snapshot(root.path()) == before);
    (out.status.code().unwrap(), stderr_of(&out))
}

#[test]
fn the_importer_refuses_a_weight_size_that_is_not_a_positive_number() {
    for bad in [serde_json::json!("159.6 MB"), serde_json::json!(-159.6), serde_json::json!(0), serde_json::json!(null)]
    {
        let (code, err) = invokeai_with(&|v| v[3]["model_size_mb"] = bad.clone());
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("model_size_mb") && err.contains("bench.json:"), "{err}");
    }
    let (code, err) = invokeai_with(&|_| {});
    assert_eq!(code, 0, "{err}");
}

// --- the store's invariants ----------------------------------------------

const ID: &str = "i7785061-sdxl-decode-fp16-1024x1024";

fn corrupt(root: &Path, edit: &dyn Fn(&mut serde_json::Map<String, serde_json::Value>)) {
    let path = root.join("measurements/vae.json");
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    for p in v["points"].as_array_mut().unwrap() {
        if p["id"] == ID {
            edit(p.as_object_mut().unwrap());
        }
    }
    fs::write(&path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

#[test]
fn a_broken_store_is_refused_by_every_command_naming_the_id_and_field() {
    type Edit = Box<dyn Fn(&mut serde_json::Map<String, serde_json::Value>)>;
    let cases: Vec<(&str, Edit)> = vec![
        ("demand_bytes", Box::new(|p| p["demand_bytes"] = serde_json::json!(p["demand_bytes"].as_u64().unwrap() + 1))),
        ("pixels", Box::new(|p| p["pixels"] = serde_json::json!(999))),
        // A width that no longer gives the stored pixels: the pixels are named.
        ("pixels", Box::new(|p| p["width"] = serde_json::json!(2048))),
        ("dtype", Box::new(|p| p["dtype"] = serde_json::json!("float16"))),
        ("allocator", Box::new(|p| p["allocator"] = serde_json::json!("backend:native"))),
        (
            "scale",
            Box::new(|p| {
                p.insert("scale".into(), serde_json::json!(2));
            }),
        ),
        (
            "note",
            Box::new(|p| {
                p.remove("note");
            }),
        ),
        ("vae", Box::new(|p| p["vae"] = serde_json::json!("sdxl"))),
        ("source", Box::new(|p| p["source"] = serde_json::json!(""))),
    ];
    for (field, edit) in cases {
        let root = scratch();
        corrupt(root.path(), &*edit);
        let raw = root.path().join("measurements/raw").display().to_string();
        let csvs: Vec<String> = fs::read_dir(&raw)
            .unwrap()
            .map(|e| e.unwrap().path().display().to_string())
            .filter(|p| p.ends_with(".csv"))
            .collect();
        let before = snapshot(root.path());
        let mut ingest = vec!["ingest".to_string()];
        ingest.extend(csvs);
        for cmd in [vec!["points".to_string()], vec!["fit".into()], vec!["emit".into()], vec!["verify".into()], ingest]
        {
            let out = vramfit().arg("--root").arg(root.path()).args(&cmd).output().unwrap();
            let err = stderr_of(&out);
            assert_eq!(out.status.code(), Some(2), "{field} / {cmd:?}: {err}");
            assert!(
                err.contains("measurements/vae.json") && err.contains(ID) && err.contains(&format!("{field}:")),
                "{field} / {cmd:?}: {err}"
            );
        }
        assert_eq!(snapshot(root.path()), before, "{field}: nothing written");
    }
}

#[test]
fn a_duplicate_id_in_the_store_is_refused() {
    let root = scratch();
    let path = root.path().join("measurements/vae.json");
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let arr = v["points"].as_array_mut().unwrap();
    let i = arr.iter().position(|p| p["id"] == ID).unwrap();
    let dup = arr[i].clone();
    arr.insert(i, dup);
    fs::write(&path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let out = vramfit().arg("--root").arg(root.path()).arg("verify").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("appears twice") && stderr_of(&out).contains(ID), "{}", stderr_of(&out));
}

// --- the store's byte form -------------------------------------------------

#[test]
fn the_store_is_one_point_a_line_and_an_old_store_is_converted_by_the_next_write() {
    let root = scratch();
    let path = root.path().join("measurements/vae.json");
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "{\"format\":\"vramfit-points\",\"version\":1,\"points\":[");
    assert_eq!(lines.len(), 138 + 2, "one line a point");
    assert_eq!(*lines.last().unwrap(), "]}");
    // The first format, one pretty-printed document, still loads …
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    fs::write(&path, serde_json::to_string_pretty(&v).unwrap() + "\n").unwrap();
    vramfit().arg("--root").arg(root.path()).arg("verify").assert().code(0);
    // … and the next write converts it.
    fs::write(root.path().join("a.csv"), format!("{HEADER}\n{}\n", row("convert-1", ""))).unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(root.path().join("a.csv")).assert().code(0);
    let after = fs::read_to_string(&path).unwrap();
    assert_eq!(after.lines().count(), 139 + 2);
    assert!(after.contains("{\"id\":\"convert-1\","));
}

#[test]
fn a_store_line_out_of_form_or_a_truncated_store_is_refused_with_its_line() {
    let root = scratch();
    let path = root.path().join("measurements/vae.json");
    let text = fs::read_to_string(&path).unwrap();
    // A space after a colon: the same JSON, not the canonical bytes.
    let spaced = text.replacen("\"tile\":0,", "\"tile\": 0,", 1);
    fs::write(&path, &spaced).unwrap();
    let out = vramfit().arg("--root").arg(root.path()).arg("points").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("measurements/vae.json:2:") && stderr_of(&out).contains("canonical"),
        "{}",
        stderr_of(&out)
    );
    // Cut after the 10th point.
    let cut: String = text.lines().take(11).map(|l| format!("{l}\n")).collect();
    fs::write(&path, cut).unwrap();
    let out = vramfit().arg("--root").arg(root.path()).arg("points").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("truncated") || stderr_of(&out).contains(":11:"), "{}", stderr_of(&out));
}
