//! `vramfit ingest`: bad input is refused with file, line and column and
//! nothing written; good input is idempotent and order-free.

use crate::common::*;
use std::fs;

/// Runs `ingest` on a fixture in a scratch root and checks the refusal.
fn refused(fixture_name: &str, expect_line: &str, expect_in_message: &[&str]) {
    let root = scratch();
    let before = snapshot(root.path());
    let out = vramfit()
        .arg("--root")
        .arg(root.path())
        .arg("ingest")
        .arg(fixture(&format!("ingest/{fixture_name}")))
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{fixture_name}: exit code; stderr: {err}");
    let located = format!("{fixture_name}:{expect_line}");
    assert!(err.contains(&located), "{fixture_name}: message must name file:line '{located}': {err}");
    for part in expect_in_message {
        assert!(err.contains(part), "{fixture_name}: message must contain '{part}': {err}");
    }
    assert_eq!(before, snapshot(root.path()), "{fixture_name}: nothing may be written");
}

#[test]
fn missing_required_column() {
    refused("bad_missing_column.csv", "1", &["op: missing column `op`;", "required: `source`"]);
}

#[test]
fn every_missing_column_is_named_in_one_message_with_the_whole_list() {
    let root = scratch();
    let f = root.path().join("few.csv");
    fs::write(&f, "source,width,height\nme,512,512\n").unwrap();
    let before = snapshot(root.path());
    let out = vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(
        err.contains(
            "few.csv:1: conv_backend: missing columns `conv_backend`, `allocator`, `op`, `run_dtype`, `vae` or \
             `model`, a demand column;"
        ),
        "{err}"
    );
    for every in ["`source`", "`width`", "`height`", "`vae` (a family) or `model`", "reserved_mib", "driver_bytes"] {
        assert!(err.contains(every), "the message lists {every}: {err}");
    }
    assert_eq!(before, snapshot(root.path()), "nothing written");
}

#[test]
fn os_tile_and_batch_may_be_left_out_of_the_header() {
    let root = scratch();
    let f = root.path().join("short.csv");
    fs::write(
        &f,
        "source,conv_backend,allocator,model,op,run_dtype,width,height,reserved_mib\n\
         my rtx 3090,cudnn,cudaMallocAsync,sdxl,decode,fp16,1024,1024,3000\n",
    )
    .unwrap();
    let out = vramfit().arg("--root").arg(root.path()).args(["--format", "json", "ingest"]).arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = vramfit()
        .arg("--root")
        .arg(root.path())
        .args(["--format", "json", "points", "--allocator", "cudaMallocAsync", "--vae", "sdxl"])
        .output()
        .unwrap();
    let j = json_of(&out);
    let p = j["points"].as_array().unwrap().iter().find(|p| p["source"] == "my rtx 3090").expect("the new point");
    assert_eq!((p["os"].as_str(), p["tile"].as_u64(), p["batch"].as_u64()), (Some("any"), Some(0), Some(1)));
}

#[test]
fn missing_every_demand_column() {
    refused("bad_no_demand_column.csv", "1", &["reserved_mib: missing column a demand column", "driver_bytes"]);
}

#[test]
fn zero_size() {
    refused("bad_width_zero.csv", "3", &["width: '0' is not a positive integer"]);
}

#[test]
fn fractional_size() {
    refused("bad_width_fraction.csv", "3", &["width: '512.5' is not a positive integer"]);
}

#[test]
fn negative_batch() {
    refused("bad_batch_negative.csv", "3", &["batch: '-2' is not a positive integer"]);
}

#[test]
fn no_demand_filled() {
    refused("bad_no_demand.csv", "3", &["no demand", "reserved_mib"]);
}

#[test]
fn negative_demand() {
    refused("bad_negative_demand.csv", "3", &["reserved_mib", "negative"]);
}

#[test]
fn non_numeric_demand() {
    refused("bad_nonnumeric_demand.csv", "3", &["reserved_mib: '12GB': not a decimal number"]);
}

#[test]
fn unknown_dtype_lists_accepted() {
    refused("bad_dtype.csv", "3", &["run_dtype: unknown dtype 'fp8'", "accepted: fp16, bf16, fp32"]);
}

#[test]
fn unknown_op_lists_accepted() {
    refused("bad_op.csv", "3", &["op: unknown op 'upscale'", "accepted: decode, encode"]);
}

#[test]
fn unknown_backend_lists_accepted() {
    refused("bad_backend.csv", "3", &["conv_backend: unknown conv_backend 'vulkan'", "cudnn, miopen, mps, xpu, cpu"]);
}

#[test]
fn unknown_allocator_lists_accepted() {
    refused("bad_allocator.csv", "3", &["allocator: unknown allocator 'pinned'", "cudaMallocAsync"]);
}

#[test]
fn unknown_vae_lists_registered() {
    refused("bad_vae.csv", "3", &["vae: unknown vae 'wan'", "registered: ", "flux1"]);
}

#[test]
fn duplicate_id_with_different_content_in_one_file() {
    refused("bad_duplicate_id.csv", "3", &["duplicate id 't-ok-1'", "bad_duplicate_id.csv:2", "demand_bytes"]);
}

#[test]
fn ragged_row() {
    refused("bad_ragged.csv", "3", &["row has 15 fields, the header has 17"]);
}

#[test]
fn empty_file_is_refused() {
    refused("empty.csv", "1", &["empty file"]);
}

#[test]
fn duplicate_id_against_the_store() {
    let root = scratch();
    let shipped = fs::read_to_string(data_root().join("measurements/raw/invokeai-pr7673-pr7674.csv")).unwrap();
    let edited = shipped.replacen(",3200,2593,", ",3300,2593,", 1);
    assert_ne!(shipped, edited);
    let f = root.path().join("edited.csv");
    fs::write(&f, edited).unwrap();
    let before = snapshot(&root.path().join("measurements"));
    let out = vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(
        err.contains("edited.csv:2: id: duplicate id 'pr7673-sdxl-decode-fp16-1024x1024-cudaMallocAsync'"),
        "{err}"
    );
    assert!(err.contains("stored point"), "{err}");
    assert_eq!(before, snapshot(&root.path().join("measurements")));
}

#[test]
fn a_bad_file_after_good_ones_writes_nothing() {
    let root = scratch();
    let before = snapshot(root.path());
    let out = vramfit()
        .arg("--root")
        .arg(root.path())
        .args(["ingest"])
        .arg(fixture("ingest/good.csv"))
        .arg(fixture("ingest/bad_dtype.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(before, snapshot(root.path()));
}

#[test]
fn header_only_bom_and_crlf_are_accepted() {
    let root = scratch();
    let out = vramfit()
        .arg("--root")
        .arg(root.path())
        .args(["--format", "json", "ingest"])
        .arg(fixture("ingest/header_only.csv"))
        .arg(fixture("ingest/bom_crlf.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let j = json_of(&out);
    assert_eq!(j["files"][0]["rows"], 0);
    assert_eq!(j["files"][1]["rows"], 1);
    assert_eq!(j["files"][1]["added"], 1);
    assert_eq!(j["points"], 139);
    let store = fs::read_to_string(root.path().join("measurements/vae.json")).unwrap();
    // The BOM did not leak into the first column name: the row's own id was used.
    assert!(store.contains("{\"id\":\"t-ok-1\","), "one point a line");
    assert!(!store.contains('\r'));
}

#[test]
fn aliases_are_stored_canonically_and_unknown_columns_kept() {
    let root = scratch();
    let out =
        vramfit().arg("--root").arg(root.path()).arg("ingest").arg(fixture("ingest/aliases.csv")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let out = vramfit()
        .arg("--root")
        .arg(root.path())
        .args(["--format", "json", "points", "--id=decode-fp32-1024x1024-cudnn-cudaMallocAsync-"])
        .output()
        .unwrap();
    let j = json_of(&out);
    let p = &j["points"][0];
    assert_eq!(p["vae"], "sd", "model SDXL resolves to the sd family");
    assert_eq!(p["conv_backend"], "cudnn");
    assert_eq!(p["allocator"], "cudaMallocAsync");
    assert_eq!(p["os"], "any");
    assert_eq!(p["dtype"], "fp32");
    assert_eq!(p["loaded_dtype"], "fp16");
    assert_eq!(p["tile"], 0);
    assert_eq!(p["batch"], 1);
    assert_eq!(p["pixels"], 1024 * 1024);
    assert_eq!(p["demand_bytes"], 5_000_000_000u64);
    assert_eq!(p["metadata"]["harness_commit"], "abc123");
    let id = p["id"].as_str().unwrap();
    assert!(id.starts_with("SDXL-decode-fp32-1024x1024-cudnn-cudaMallocAsync-"), "a readable derived id: {id}");
}

#[test]
fn demand_is_the_largest_delta_rounded_up_to_bytes() {
    let root = scratch();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(fixture("ingest/good.csv")).assert().code(0);
    let out = vramfit()
        .arg("--root")
        .arg(root.path())
        .args(["--format", "json", "points", "--id", "t-ok-"])
        .output()
        .unwrap();
    let j = json_of(&out);
    let pts = j["points"].as_array().unwrap();
    assert_eq!(pts.len(), 3);
    // 1100.5 MiB reserved beats 700 MiB allocated.
    assert_eq!(pts[0]["demand_bytes"], 1100u64 * 1048576 + 524288);
    assert_eq!(pts[0]["allocated_bytes"], 700u64 * 1048576);
    assert_eq!(pts[1]["reserved_bytes"], 2400u64 * 1048576);
    assert_eq!(pts[1]["allocated_bytes"], serde_json::Value::Null);
    // Size is width × height × batch.
    assert_eq!(pts[2]["pixels"], 1024 * 1024 * 2);
}

#[test]
fn reingest_is_a_no_op_and_check_passes() {
    let root = scratch();
    let store = root.path().join("measurements/vae.json");
    let before = fs::read(&store).unwrap();
    let raw: Vec<_> = ["invokeai-7785061-rtx4090-linux.csv", "invokeai-pr7673-pr7674.csv", "invokeai-flux2-qwen.csv"]
        .iter()
        .map(|f| root.path().join("measurements/raw").join(f))
        .collect();
    let out =
        vramfit().arg("--root").arg(root.path()).args(["--format", "json", "ingest"]).args(&raw).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let j = json_of(&out);
    assert_eq!(j["points"], 138);
    assert_eq!(j["added"], 0);
    assert_eq!(j["written"], false);
    assert_eq!(before, fs::read(&store).unwrap());
    vramfit().arg("--root").arg(root.path()).args(["ingest", "--check"]).args(&raw).assert().code(0);
}

#[test]
fn check_fails_when_rows_are_not_ingested_or_points_are_orphaned() {
    let root = scratch();
    let raw = root.path().join("measurements/raw");
    let all = [
        raw.join("invokeai-7785061-rtx4090-linux.csv"),
        raw.join("invokeai-pr7673-pr7674.csv"),
        raw.join("invokeai-flux2-qwen.csv"),
    ];
    // A file with rows the store lacks: exit 1, and the store untouched.
    let before = snapshot(root.path());
    let out = vramfit()
        .arg("--root")
        .arg(root.path())
        .args(["ingest", "--check"])
        .args(&all)
        .arg(fixture("ingest/good.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout_of(&out).contains("3 row(s) not ingested yet"), "{}", stdout_of(&out));
    assert_eq!(before, snapshot(root.path()));
    // One new file alone: only what it lacks, not the others' points.
    let out = vramfit()
        .arg("--root")
        .arg(root.path())
        .args(["ingest", "--check"])
        .arg(fixture("ingest/good.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let said = stdout_of(&out);
    assert!(said.contains("3 row(s) not ingested yet") && said.contains("good.csv:"), "{said}");
    assert!(!said.contains("come from none"), "{said}");
    let out = vramfit().arg("--root").arg(root.path()).args(["ingest", "--check"]).arg(&all[0]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "a file already ingested: {}", stdout_of(&out));
    // Every raw file, one of them with a row removed: that point is an orphan, on its store line.
    let text = fs::read_to_string(&all[1]).unwrap();
    let removed = text.lines().nth(1).unwrap().split(',').next().unwrap().to_string();
    let kept: Vec<&str> = text.lines().enumerate().filter(|(i, _)| *i != 1).map(|(_, l)| l).collect();
    fs::write(&all[1], kept.join("\n") + "\n").unwrap();
    let out = vramfit().arg("--root").arg(root.path()).args(["ingest", "--check"]).args(&all).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let store = fs::read_to_string(root.path().join("measurements/vae.json")).unwrap();
    let at = store.lines().position(|l| l.contains(&format!("\"id\":\"{removed}\""))).unwrap() + 1;
    assert!(stdout_of(&out).contains("1 stored point(s) come from none of these files: "), "{}", stdout_of(&out));
    assert!(stdout_of(&out).contains(&format!("vae.json:{at} ({removed})")), "{}", stdout_of(&out));
}

#[test]
fn output_is_byte_identical_in_any_row_order() {
    let src = fs::read_to_string(data_root().join("measurements/raw/invokeai-7785061-rtx4090-linux.csv")).unwrap();
    let mut lines: Vec<&str> = src.lines().collect();
    let header = lines.remove(0);
    let mut stores = Vec::new();
    for seed in [1u64, 7, 42] {
        // A deterministic shuffle (xorshift) of the rows, and the files in reverse order.
        let mut rows = lines.clone();
        let mut s = seed;
        for i in (1..rows.len()).rev() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            rows.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let root = tempfile::tempdir().unwrap();
        copy_dir(&data_root().join("fits"), &root.path().join("fits"));
        let f = root.path().join("shuffled.csv");
        fs::write(&f, format!("{header}\n{}\n", rows.join("\n"))).unwrap();
        let pr = data_root().join("measurements/raw/invokeai-pr7673-pr7674.csv");
        let fq = data_root().join("measurements/raw/invokeai-flux2-qwen.csv");
        let mut cmd = vramfit();
        cmd.arg("--root").arg(root.path()).arg("ingest");
        if seed % 2 == 1 {
            cmd.arg(&pr).arg(&fq).arg(&f);
        } else {
            cmd.arg(&f).arg(&fq).arg(&pr);
        }
        cmd.assert().code(0);
        stores.push(fs::read(root.path().join("measurements/vae.json")).unwrap());
    }
    assert_eq!(stores[0], stores[1]);
    assert_eq!(stores[1], stores[2]);
    assert_eq!(
        stores[0],
        fs::read(data_root().join("measurements/vae.json")).unwrap(),
        "the shipped store is canonical"
    );
}

#[test]
fn invokeai_importer_matches_the_reshaped_csv() {
    let root = tempfile::tempdir().unwrap();
    copy_dir(&data_root().join("fits"), &root.path().join("fits"));
    let raw = repo().join("tests/fixtures/invokeai/all_benchmark_results.json");
    let out = vramfit()
        .arg("--root")
        .arg(root.path())
        .args([
            "ingest",
            "--from",
            "invokeai-benchmark",
            "--source",
            "InvokeAI 7785061e vae_benchmarks",
            "--device",
            "NVIDIA GeForce RTX 4090",
            "--conv-backend",
            "cudnn",
            "--allocator",
            "native",
            "--os",
            "linux",
            "--id-prefix",
            "i7785061",
            "--runs",
            "5",
        ])
        .arg(&raw)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let imported: serde_json::Value =
        serde_json::from_slice(&fs::read(root.path().join("measurements/vae.json")).unwrap()).unwrap();
    // The benchmark averages its runs after warm-ups: every point is warm.
    assert!(imported["points"].as_array().unwrap().iter().all(|p| p["context"] == "warm"));
    let shipped: serde_json::Value =
        serde_json::from_slice(&fs::read(data_root().join("measurements/vae.json")).unwrap()).unwrap();
    let fields = [
        "id",
        "vae",
        "op",
        "tile",
        "conv_backend",
        "allocator",
        "os",
        "dtype",
        "loaded_dtype",
        "pixels",
        "demand_bytes",
        "reserved_bytes",
        "allocated_bytes",
    ];
    let project = |v: &serde_json::Value| -> Vec<Vec<serde_json::Value>> {
        v["points"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["id"].as_str().unwrap().starts_with("i7785061-"))
            .map(|p| fields.iter().map(|f| p[*f].clone()).collect())
            .collect()
    };
    let a = project(&imported);
    let b = project(&shipped);
    assert_eq!(a.len(), 98);
    assert_eq!(a, b, "importer and CSV must give the same points");
}

#[test]
fn importer_needs_the_facts_the_format_lacks() {
    let root = scratch();
    let out = vramfit()
        .arg("--root")
        .arg(root.path())
        .args(["ingest", "--from", "invokeai-benchmark", "--conv-backend", "cudnn", "--allocator", "native"])
        .arg(fixture("invokeai/all_benchmark_results.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("needs --source"));
}

/// The ingest report of `ingest/no_id.csv` into `root`, and the ids its rows have there, sorted.
fn derived_ids_of_no_id_rows(root: &std::path::Path) -> (serde_json::Value, Vec<String>) {
    let out = vramfit()
        .arg("--root")
        .arg(root)
        .args(["--format", "json", "ingest"])
        .arg(fixture("ingest/no_id.csv"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let all = json_of(&vramfit().arg("--root").arg(root).args(["--format", "json", "points"]).output().unwrap());
    let mut ids: Vec<String> = all["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["source"] == "no id test")
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    (json_of(&out), ids)
}

#[test]
fn derived_ids_are_readable_and_never_change() {
    // Rows without an id get what was measured and a short content hash.
    // A store keeps ids it derived long ago, so these must come out the
    // same forever (the hash is the one the first vramfit took, before the
    // point's fields were reordered).
    let root = scratch();
    let (report, ids) = derived_ids_of_no_id_rows(root.path());
    assert_eq!(report["added"], 2);
    assert_eq!(
        ids,
        [
            "flux1-encode-t512-bf16-1024x768-b2-miopen-native-3b07c20a",
            "sdxl-decode-fp16-640x640-cudnn-native-linux-722db82b"
        ]
    );
}

#[test]
fn a_store_with_the_old_derived_ids_keeps_them() {
    // Before readable ids, the same rows got `p-` and 16 hex digits of the
    // same hash. A store that holds them under those ids gains nothing when
    // the CSV is ingested again.
    let root = scratch();
    let text = fs::read_to_string(fixture("ingest/no_id.csv")).unwrap();
    let mut lines = text.lines();
    let header = format!("id,{}", lines.next().unwrap());
    let old: Vec<String> =
        ["p-722db82b1f8d6abc", "p-3b07c20a4b278976"].iter().zip(lines).map(|(id, l)| format!("{id},{l}")).collect();
    let f = root.path().join("old.csv");
    fs::write(&f, format!("{header}\n{}\n", old.join("\n"))).unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).assert().code(0);
    let (report, ids) = derived_ids_of_no_id_rows(root.path());
    assert_eq!(report["added"], 0, "{report}");
    assert_eq!(ids, ["p-3b07c20a4b278976", "p-722db82b1f8d6abc"]);
}

#[test]
fn a_dash_reads_standard_input_like_a_file() {
    let csv = data_root().join("measurements/raw/invokeai-pr7673-pr7674.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let (by_file, by_stdin) = (scratch(), scratch());
    for d in [&by_file, &by_stdin] {
        std::fs::remove_file(d.path().join("measurements/vae.json")).unwrap();
    }
    vramfit().arg("--root").arg(by_file.path()).arg("ingest").arg(&csv).assert().success();
    vramfit().arg("--root").arg(by_stdin.path()).args(["ingest", "-"]).write_stdin(text.clone()).assert().success();
    let read = |d: &tempfile::TempDir| std::fs::read(d.path().join("measurements/vae.json")).unwrap();
    assert!(read(&by_file) == read(&by_stdin), "the same store from a file and from standard input");
    // A bad row on standard input is named by line, as in a file.
    let broken = text.replacen(",cudnn,", ",vulkan,", 1);
    let line = broken.lines().position(|l| l.contains(",vulkan,")).unwrap() + 1;
    let err = vramfit().arg("--root").arg(by_stdin.path()).args(["ingest", "-"]).write_stdin(broken).assert().code(2);
    let stderr = String::from_utf8(err.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains(&format!("<stdin>:{line}: conv_backend")), "{stderr}");
    // Standard input can be read once.
    vramfit().arg("--root").arg(by_stdin.path()).args(["ingest", "-", "-"]).write_stdin(text).assert().code(2);
}

#[test]
fn a_row_given_twice_is_reported_and_counted_once() {
    let csv = data_root().join("measurements/raw/invokeai-pr7673-pr7674.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // The second data row again, at the end: line N + 1 repeats line 3.
    let doubled = format!("{}\n{}\n", lines.join("\n"), lines[2]);
    let root = scratch();
    std::fs::remove_file(root.path().join("measurements/vae.json")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("twice.csv");
    std::fs::write(&file, &doubled).unwrap();
    let out = vramfit().arg("--root").arg(root.path()).args(["--format", "json", "ingest"]).arg(&file).output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["points"], lines.len() - 1, "the repeat is counted once");
    let notes: Vec<&str> = report["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    let shown = file.display().to_string();
    let want = format!("{shown}:{}: repeats the row at {shown}:3 exactly", lines.len() + 1);
    assert!(notes.iter().any(|n| n.starts_with(&want)), "{notes:?}");
    // The same rows once each: no note.
    let again = vramfit().arg("--root").arg(root.path()).args(["--format", "json", "ingest"]).arg(&csv).output();
    let again: serde_json::Value = serde_json::from_slice(&again.unwrap().stdout).unwrap();
    assert!(!again["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("repeats")));
}

#[test]
fn the_readme_invokeai_example_runs_on_a_fresh_clone() {
    let readme = std::fs::read_to_string(repo().join("docs/data.md")).unwrap();
    let after = readme.split("<!-- invokeai-example -->").nth(1).expect("the README marks the example");
    let script = after.split("```sh\n").nth(1).and_then(|b| b.split("```").next()).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let demo = scratch.path().join("invokeai-demo");
    let bin = assert_cmd::cargo::cargo_bin("vramfit");
    // The block as written, with its scratch folder in a temporary one and
    // `vramfit` the binary under test; run from the repository root.
    let script = script.replace("/tmp/invokeai-demo", &demo.display().to_string());
    let out = std::process::Command::new("bash")
        .args(["-euc", &script])
        .current_dir(repo())
        .env("PATH", format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("(98 added)"), "{stdout}");
}

#[test]
fn check_with_format_github_annotates_the_drift() {
    let root = scratch();
    let raw = data_root().join("measurements/raw");
    let csvs: Vec<_> = std::fs::read_dir(&raw)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    let run = |files: &[std::path::PathBuf]| {
        vramfit().arg("--root").arg(root.path()).args(["--format", "github", "ingest", "--check"]).args(files).output()
    };
    let ok = run(&csvs).unwrap();
    assert_eq!(ok.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&ok.stdout).contains("::error"));
    // One new row in a copy of a file: one `::error` naming it, exit 1.
    let dir = tempfile::tempdir().unwrap();
    let extra = dir.path().join("more.csv");
    let text = std::fs::read_to_string(raw.join("invokeai-pr7673-pr7674.csv")).unwrap();
    let header = text.lines().next().unwrap();
    let row = text.lines().nth(1).unwrap().replacen("pr7673-", "new-row-", 1);
    std::fs::write(&extra, format!("{header}\n{row}\n")).unwrap();
    let mut files = csvs.clone();
    files.push(extra);
    let out = run(&files).unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let error = text.lines().find(|l| l.starts_with("::error ")).expect("an annotation");
    // On the row itself.
    let file = files.last().unwrap().display().to_string().replace(':', "%3A");
    let want = format!("::error file={file},line=2,title=vramfit ingest --check::row new-row-");
    assert!(error.starts_with(&want), "{error}");
    assert!(error.contains("run `vramfit ingest` on this file"), "{error}");
}
