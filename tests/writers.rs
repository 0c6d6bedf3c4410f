//! Writers never lose data: concurrent ingests keep every row, a second
//! writer waits (and says so), temporary files never outlive a run, and a
//! rewrite keeps the file's permission bits.

use crate::common::*;
use std::fs;
use std::path::Path;
use std::process::{Child, Stdio};

fn rows_csv(prefix: &str, n: usize) -> String {
    let mut s =
        String::from("id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_mib\n");
    for i in 0..n {
        s.push_str(&format!(
            "{prefix}-{i},concurrency test,cudnn,native,linux,sd,decode,0,fp16,{},512,1,{}\n",
            512 + 8 * i,
            1000 + i
        ));
    }
    s
}

fn spawn_ingest(root: &Path, file: &Path) -> Child {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("vramfit"));
    c.arg("--root").arg(root).arg("ingest").arg(file).stdout(Stdio::null()).stderr(Stdio::piped());
    c.spawn().unwrap()
}

/// Points in the shipped store.
fn shipped_count() -> usize {
    stored_ids(&data_root()).len()
}

fn stored_ids(root: &Path) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_slice(&fs::read(root.join("measurements/vae.json")).unwrap()).unwrap();
    v["points"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap().to_string()).collect()
}

/// Starts `writers` ingests at once, each with `rows` new rows, and checks
/// that every row is in the store afterwards and every process exited 0.
fn concurrent_ingests(writers: usize, rows: usize) {
    let root = scratch();
    let before = stored_ids(root.path()).len();
    let files: Vec<_> = (0..writers)
        .map(|w| {
            let f = root.path().join(format!("w{w}.csv"));
            fs::write(&f, rows_csv(&format!("w{w}"), rows)).unwrap();
            f
        })
        .collect();
    let children: Vec<Child> = files.iter().map(|f| spawn_ingest(root.path(), f)).collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let ids = stored_ids(root.path());
    assert_eq!(ids.len(), before + writers * rows, "every row of every writer is kept");
    for w in 0..writers {
        for i in 0..rows {
            assert!(ids.contains(&format!("w{w}-{i}")), "row w{w}-{i} lost");
        }
    }
    vramfit().arg("--root").arg(root.path()).arg("points").assert().code(0);
}

#[test]
fn twenty_concurrent_ingests_keep_all_two_hundred_rows() {
    concurrent_ingests(20, 10);
}

#[test]
fn two_concurrent_ingests_never_lose_a_row() {
    for _ in 0..10 {
        concurrent_ingests(2, 10);
    }
}

#[test]
fn an_emit_beside_ingests_sees_a_whole_store() {
    let root = scratch();
    let f = root.path().join("a.csv");
    fs::write(&f, rows_csv("a", 10)).unwrap();
    let ingest = spawn_ingest(root.path(), &f);
    let emit = std::process::Command::new(assert_cmd::cargo::cargo_bin("vramfit"))
        .arg("--root")
        .arg(root.path())
        .args(["emit", "--force"])
        .output()
        .unwrap();
    assert!(emit.status.code().unwrap() <= 1, "{}", String::from_utf8_lossy(&emit.stderr));
    assert_eq!(ingest.wait_with_output().unwrap().status.code(), Some(0));
    assert_eq!(stored_ids(root.path()).len(), shipped_count() + 10);
}

#[test]
fn a_second_writer_waits_and_says_so() {
    let root = scratch();
    let f = root.path().join("a.csv");
    fs::write(&f, rows_csv("wait", 3)).unwrap();
    let before = shipped_count();
    let lock = vramfit::fsio::RootLock::acquire(root.path()).unwrap();
    let child = spawn_ingest(root.path(), &f);
    std::thread::sleep(std::time::Duration::from_millis(1800));
    assert_eq!(stored_ids(root.path()).len(), before, "the writer waits while the lock is held");
    drop(lock);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("waiting for another vramfit"), "{err}");
    assert_eq!(stored_ids(root.path()).len(), before + 3);
}

#[test]
fn stale_temporary_files_from_a_killed_run_are_removed_by_the_next_write() {
    let root = scratch();
    let stale_store = root.path().join("measurements/.vae.json.tmp-4242");
    let stale_fits = root.path().join("fits/.vae.json.tmp-77");
    let unrelated = root.path().join("measurements/.vae.json.tmp-notes");
    fs::write(&stale_store, vec![b'x'; 1000]).unwrap();
    fs::write(&stale_fits, "half a file").unwrap();
    fs::write(&unrelated, "not ours").unwrap();
    let f = root.path().join("a.csv");
    fs::write(&f, rows_csv("t", 1)).unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).assert().code(0);
    assert!(!stale_store.exists(), "ingest removes its target's stale temp files");
    assert!(unrelated.exists(), "only files named like vramfit's own temp files are removed");
    // The new point moves no line over the bound, so emit writes.
    let out = vramfit().arg("--root").arg(root.path()).args(["emit", "--force"]).output().unwrap();
    assert!(out.status.code().unwrap() <= 1);
    assert!(!stale_fits.exists(), "emit removes its target's stale temp files");
}

#[test]
fn a_failed_write_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    // The target is a folder: the rename fails after the temp file was written.
    let target = dir.path().join("vae.json");
    fs::create_dir(&target).unwrap();
    fs::write(target.join("keep"), "x").unwrap();
    assert!(vramfit::fsio::write_atomic(&target, b"{}").is_err());
    let left: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("vae.json")], "only the target is left: {left:?}");
}

#[cfg(unix)]
#[test]
fn a_rewrite_keeps_the_permission_bits() {
    use std::os::unix::fs::PermissionsExt;
    for mode in [0o444, 0o640] {
        let root = scratch();
        let store = root.path().join("measurements/vae.json");
        fs::set_permissions(&store, fs::Permissions::from_mode(mode)).unwrap();
        let f = root.path().join("a.csv");
        fs::write(&f, rows_csv("perm", 2)).unwrap();
        vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).assert().code(0);
        assert_eq!(stored_ids(root.path()).len(), shipped_count() + 2);
        assert_eq!(fs::metadata(&store).unwrap().permissions().mode() & 0o777, mode);
    }
}
