//! Helpers shared by the integration tests.

#![allow(dead_code)]

use assert_cmd::Command;
use std::fs;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// The README's canvas plan (after `vramfit plan`): a 720p clip of 240
/// frames upscaled 4×, with a share, a cap and a transient factor.
pub const README_CANVAS: &[&str] = &[
    "canvas",
    "1280x720",
    "--frames",
    "240",
    "--upscale",
    "4",
    "--free",
    "20GiB",
    "--share",
    "0.25",
    "--cap",
    "1GiB",
    "--transient",
    "9",
];

/// The repository root (where the shipped files live).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The tests' own root: a frozen copy of the data as it was when the tests
/// that need exact figures were written (`measurements/vae.json`, its raw
/// CSVs, `fits/policy.toml`, `fits/vae.json`). New measurements in the
/// repository's `measurements/` never change it, so they never break a test;
/// the tests over the shipped data assert properties instead.
pub fn data_root() -> PathBuf {
    fixture("root")
}

pub fn fixture(rel: &str) -> PathBuf {
    repo().join("tests/fixtures").join(rel)
}

/// The binary, with every allocator variable cleared so a developer's own
/// environment never changes a result.
pub fn vramfit() -> Command {
    let mut c = Command::cargo_bin("vramfit").expect("binary builds");
    for v in ["PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF"] {
        c.env_remove(v);
    }
    c
}

/// The binary on the tests' own root (`data_root`): `reserve` and `plan`
/// then price from its `fits/vae.json`, not the compiled-in copy, so their
/// exact figures never move with the shipped data.
pub fn on_data_root() -> Command {
    let mut c = vramfit();
    c.arg("--root").arg(data_root());
    c
}

/// A scratch root holding copies of the fixture root's `measurements/` and `fits/`.
pub fn scratch() -> TempDir {
    scratch_of(&data_root())
}

/// A scratch root holding copies of `root`'s `measurements/` and `fits/`.
pub fn scratch_of(root: &Path) -> TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(&root.join("measurements"), &dir.path().join("measurements"));
    copy_dir(&root.join("fits"), &dir.path().join("fits"));
    dir
}

pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// Every file under a folder with its bytes, to prove nothing was written.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

pub fn stdout_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn json_of(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", stdout_of(out)))
}

/// Appends the fixture `[[carry]]` (sd decode fp16 on ROCm native Linux) to
/// a scratch root's policy, with the given slope and base.
pub fn add_carry(root: &Path, slope: &str, base_mib: u64) {
    let policy = root.join("fits/policy.toml");
    let carry = fs::read_to_string(fixture("policy/carry_miopen.toml"))
        .unwrap()
        .replace("7500.25", slope)
        .replace("base_mib = 64", &format!("base_mib = {base_mib}"));
    let text = fs::read_to_string(&policy).unwrap();
    fs::write(&policy, format!("{text}{carry}")).unwrap();
}

/// What one in-process command line did.
pub struct Ran {
    pub code: u8,
    pub out: String,
    pub err: String,
}

/// Runs one command line through the library's `run_from` (the whole
/// binary, in-process) on a fixed Linux host with no allocator variables.
/// A panic is returned as `Err` with its message, never propagated.
pub fn run_in_process<S: AsRef<str>>(args: &[S]) -> Result<Ran, String> {
    run_in_process_on(vramfit::vocab::Os::Linux, args)
}

/// `run_in_process` on a given host OS.
pub fn run_in_process_on<S: AsRef<str>>(host: vramfit::vocab::Os, args: &[S]) -> Result<Ran, String> {
    let mut argv = vec!["vramfit".to_string()];
    argv.extend(args.iter().map(|a| a.as_ref().to_string()));
    let env = vramfit::pricing::platform::EnvSnapshot::default().on(host);
    std::panic::catch_unwind(|| {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = vramfit::cli::run_from(argv.clone(), &env, &mut out, &mut err);
        Ran { code, out: String::from_utf8_lossy(&out).into_owned(), err: String::from_utf8_lossy(&err).into_owned() }
    })
    .map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".to_string())
    })
}

/// A small seeded generator (xorshift64*): the same seed, the same cases.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The `vae/op/tile/backend/allocator/os/dtype` key of a JSON object that
/// carries the seven key fields.
pub fn key_of(v: &serde_json::Value) -> String {
    let s = |k: &str| v[k].as_str().map(str::to_string).unwrap_or_else(|| v[k].to_string());
    ["vae", "op", "tile", "conv_backend", "allocator", "os", "dtype"].map(s).join("/")
}

/// Runs git in `dir` as a throwaway committer, failing the test on an error.
pub fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// The held-out points `crossval --format json` left uncovered.
pub fn crossval_misses(j: &serde_json::Value) -> Vec<&serde_json::Value> {
    j["lines"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["points"].as_array().unwrap())
        .filter(|p| p["covered"] == false)
        .collect()
}

/// The Python that has the `vramfit-vae` package installed, to run
/// `tests/python/*.py` with: `VRAMFIT_PYTHON` where set (CI points it at a
/// fresh virtual environment holding the wheel it built), else a virtual
/// environment under `target/` where `pip install ./python` built the
/// package from this checkout, re-installed only when a file the wheel is
/// built from changed since.
pub fn python() -> std::process::Command {
    static PYTHON: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let path = PYTHON.get_or_init(|| match std::env::var_os("VRAMFIT_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => local_python(),
    });
    std::process::Command::new(path)
}

fn local_python() -> PathBuf {
    use sha2::{Digest, Sha256};
    let repo = repo();
    let venv = repo.join("target/vramfit-python-tests");
    let bin = if cfg!(windows) { venv.join("Scripts/python.exe") } else { venv.join("bin/python") };
    let mut files = Vec::new();
    for dir in ["python", "crates/vramfit-python", "crates/vramfit-runtime"] {
        collect_files(&repo.join(dir), &mut files);
    }
    files.push(repo.join("Cargo.lock"));
    files.sort();
    let mut h = Sha256::new();
    for f in &files {
        h.update(f.strip_prefix(&repo).unwrap().to_string_lossy().as_bytes());
        h.update(fs::read(f).unwrap_or_default());
    }
    let stamp: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let stamp_file = venv.join("built-from");
    if bin.exists() && fs::read_to_string(&stamp_file).is_ok_and(|s| s == stamp) {
        return bin;
    }
    let run = |cmd: &mut std::process::Command, what: &str| {
        let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(out.status.success(), "{what} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    };
    if !bin.exists() {
        run(std::process::Command::new("python3").args(["-m", "venv"]).arg(&venv), "python3 -m venv");
    }
    run(
        std::process::Command::new(&bin)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .arg(repo.join("python")),
        "pip install ./python (the tests' own environment; set VRAMFIT_PYTHON to use another)",
    );
    fs::write(&stamp_file, stamp).unwrap();
    bin
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        if name == "target" || name == "__pycache__" || name.to_string_lossy().ends_with(".egg-info") {
            continue;
        }
        if p.is_dir() {
            collect_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The shortest clip of at least `wanted` frames a video family runs for
/// `op`, from its registry entry in a coefficients file's JSON (`clips`,
/// `temporal`, `decodes_single_frame`): a test asks for a length near the
/// one it means, never one the pricer refuses.
pub fn clip_at_least(video: &serde_json::Value, op: &str, wanted: u64) -> u64 {
    let (step, offset, first) = match video.get("clips") {
        Some(c) => (c[0].as_u64().unwrap(), c[1].as_u64().unwrap(), 1),
        None => (video["temporal"].as_u64().unwrap(), 1, 0),
    };
    if wanted <= 1 && (op != "decode" || video["decodes_single_frame"] != false) {
        return 1;
    }
    let start = step * first + offset;
    if wanted <= start {
        return start;
    }
    offset + (wanted - offset).div_ceil(step) * step
}
