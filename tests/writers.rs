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
    let store = root.path().join("measurements/vae.json");
    let lock = vramfit::fsio::RootLock::acquire(root.path(), &[store], vramfit::fsio::DEFAULT_WAIT).unwrap();
    let child = spawn_ingest(root.path(), &f);
    std::thread::sleep(std::time::Duration::from_millis(1800));
    assert_eq!(stored_ids(root.path()).len(), before, "the writer waits while the lock is held");
    drop(lock);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("waiting up to 60 s for the write lock on"), "{err}");
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
    assert!(vramfit::fsio::write_file(&target, b"{}").is_err());
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

// --- Hostile surroundings ----------------------------------------------------

/// One root named two ways (its own path, and a link to it): concurrent
/// ingests through both lose no row, because the lock is on the folder
/// that holds the data, whatever the root's spelling.
#[cfg(unix)]
#[test]
fn two_spellings_of_one_root_lose_no_row() {
    let shared = scratch();
    let links = tempfile::tempdir().unwrap();
    let (a, b) = (shared.path().to_path_buf(), links.path().join("via-link"));
    std::os::unix::fs::symlink(shared.path(), &b).unwrap();
    let before = shipped_count();
    let mut children = Vec::new();
    for i in 0..8 {
        let f = shared.path().join(format!("c{i}.csv"));
        fs::write(&f, rows_csv(&format!("r{i}"), 5)).unwrap();
        children.push(spawn_ingest(if i % 2 == 0 { &a } else { &b }, &f));
    }
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(stored_ids(shared.path()).len(), before + 40, "no row lost through either route");
}

/// A held lock and `--wait 1`: exit 2 after about a second, naming the
/// folder and the holder; nothing written.
#[cfg(target_os = "linux")]
#[test]
fn a_held_lock_gives_up_after_wait_and_names_the_holder() {
    let root = scratch();
    let f = root.path().join("a.csv");
    fs::write(&f, rows_csv("held", 2)).unwrap();
    let store = root.path().join("measurements");
    // Held by this test process, as `flock DIR sleep 30` would hold it.
    let holder = fs::File::open(&store).unwrap();
    holder.lock().unwrap();
    let before = fs::read(store.join("vae.json")).unwrap();
    let started = std::time::Instant::now();
    let out = vramfit().arg("--root").arg(root.path()).args(["ingest", "--wait", "1"]).arg(&f).output().unwrap();
    let took = started.elapsed();
    drop(holder);
    assert_eq!(out.status.code(), Some(2));
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the write lock on this folder is taken") && err.contains("gave up after 1 s"), "{err}");
    assert!(err.contains(&format!("held by pid {}", std::process::id())), "the holder is named: {err}");
    assert_eq!(fs::read(store.join("vae.json")).unwrap(), before, "nothing written");
}

/// A link planted at any temporary name is never followed, and a store that
/// is itself a link is refused (exit 2, nothing written through it), as is
/// a `measurements/` folder that is a link.
#[cfg(unix)]
#[test]
fn planted_links_are_never_followed_and_a_linked_store_is_refused() {
    let root = scratch();
    let victim = root.path().join("victim.txt");
    fs::write(&victim, "precious").unwrap();
    for name in [".vae.json.tmp-1", ".vae.json.tmp-99999", ".vae.json.tmp-123-00000000deadbeef"] {
        std::os::unix::fs::symlink(&victim, root.path().join("measurements").join(name)).unwrap();
    }
    let f = root.path().join("a.csv");
    fs::write(&f, rows_csv("link", 2)).unwrap();
    // With the links only at temporary names, the ingest goes through.
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).assert().code(0);
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious", "no write through a planted link");
    // The planted links are not vramfit's temporary files: left alone.
    assert!(fs::symlink_metadata(root.path().join("measurements/.vae.json.tmp-1")).is_ok());
    // The store itself a link to a file elsewhere: refused, the target untouched.
    let real = root.path().join("elsewhere.json");
    fs::rename(root.path().join("measurements/vae.json"), &real).unwrap();
    std::os::unix::fs::symlink(&real, root.path().join("measurements/vae.json")).unwrap();
    let before = fs::read(&real).unwrap();
    let g = root.path().join("b.csv");
    fs::write(&g, rows_csv("again", 2)).unwrap();
    let out = vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&g).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("measurements/vae.json: a symbolic link"));
    assert_eq!(fs::read(&real).unwrap(), before, "nothing written through the link");
    assert!(fs::symlink_metadata(root.path().join("measurements/vae.json")).unwrap().file_type().is_symlink());
}

/// A write that cannot happen (standard output a full device) is exit 2 with
/// a message, never a silent exit 0.
#[cfg(target_os = "linux")]
#[test]
fn output_to_a_full_device_is_an_error() {
    for args in [
        &["--format", "json", "verify"][..],
        &["points"],
        &["--format", "json", "reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16"],
    ] {
        let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let bin = assert_cmd::cargo::cargo_bin("vramfit");
        let out =
            std::process::Command::new(bin).arg("--root").arg(data_root()).args(args).stdout(full).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write to standard output"), "{args:?}");
    }
}

/// Past the limits: a field over 64 KiB, a line over 1 MiB, a file with no
/// line end: exit 2 naming the file and line, nothing written, no abort.
#[test]
fn oversized_input_is_refused_cleanly() {
    let root = scratch();
    let before = fs::read(root.path().join("measurements/vae.json")).unwrap();
    let header = "id,source,conv_backend,allocator,os,vae,op,run_dtype,width,height,reserved_mib,note\n";
    let cases = [
        (
            "field.csv",
            format!("{header}big,test,cudnn,native,linux,sd,decode,fp16,512,512,900,{}\n", "n".repeat(70_000)),
            "note: 70000 bytes",
        ),
        ("line.csv", format!("{header}{}\n", "x,".repeat(600_000)), "longer than"),
        ("noend.csv", format!("{header}{}", "y".repeat(3 << 20)), "longer than"),
        (
            "control.csv",
            format!("{header}a\u{1b}[2J,test,cudnn,native,linux,sd,decode,fp16,512,512,900,x\n"),
            "a control character",
        ),
    ];
    for (name, text, words) in cases {
        let f = root.path().join(name);
        fs::write(&f, text).unwrap();
        let out = vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(name) && err.contains(words), "{name}: {err}");
        assert!(!err.contains('\u{1b}'), "{name}: printed escaped");
        assert_eq!(fs::read(root.path().join("measurements/vae.json")).unwrap(), before, "{name}: nothing written");
    }
}

/// `emit --force` never writes a file its own loader refuses: extreme but
/// valid points (demands at the store's limit) make a base too large to
/// price, and emit says so with exit 2, writing nothing.
#[test]
fn emit_never_writes_a_file_vramfit_cannot_load() {
    let root = scratch();
    let top = 1u64 << 56;
    let csv = format!(
        "id,source,conv_backend,allocator,os,vae,op,run_dtype,width,height,reserved_bytes\n\
         x1,t,cudnn,native,linux,flux2,encode,fp32,8,8,{top}\nx2,t,cudnn,native,linux,flux2,encode,fp32,16,8,{top}\n\
         x3,t,cudnn,native,linux,flux2,encode,fp32,16,16,{top}\n"
    );
    let f = root.path().join("x.csv");
    fs::write(&f, csv).unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(&f).assert().code(0);
    let before = fs::read(root.path().join("fits/vae.json")).unwrap();
    let out = vramfit().arg("--root").arg(root.path()).args(["emit", "--force"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not load, so nothing was written"));
    assert_eq!(fs::read(root.path().join("fits/vae.json")).unwrap(), before);
    assert_eq!(
        on_data_root()
            .args(["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(0)
    );
}

/// What a user typed is shown escaped in an error: an escape sequence in a
/// model name cannot drive the terminal.
#[test]
fn control_characters_in_arguments_are_shown_escaped() {
    let out = on_data_root()
        .args(["reserve", "sd\u{1b}]0;pwned\u{7}xl", "decode", "1024x1024", "--dtype", "fp16"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(err.contains("sd\\u{1b}]0;pwned\\u{7}xl"), "{err}");
}

/// A control character in any policy string (decoded from a TOML escape)
/// is refused: reasons and sources are shipped and shown.
#[test]
fn control_characters_in_the_policy_are_refused() {
    let root = scratch();
    let policy = root.path().join("fits/policy.toml");
    let text = fs::read_to_string(&policy).unwrap();
    fs::write(
        &policy,
        format!("{text}\n[[exception]]\nid = \"i7785061-sd15-decode-fp16-512x512\"\nreason = \"x \\u001b[2J\"\n"),
    )
    .unwrap();
    for cmd in ["fit", "emit", "verify"] {
        let out = vramfit().arg("--root").arg(root.path()).arg(cmd).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("exception[1].reason: a control character"), "{cmd}: {err}");
        assert!(!err.contains('\u{1b}'));
    }
}
