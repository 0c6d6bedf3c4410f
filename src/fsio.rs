//! File writes that either happen whole or not at all, the lock that keeps
//! two writers from losing each other's rows, and content digests.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use vramfit_runtime::io::{
    duplicate_key, open_regular, read_bytes, read_if_regular, read_text, refuse_duplicate_keys, shown, writes_exactly,
    Bounded, TEXT_LIMIT,
};

/// The prefix of every temporary file vramfit writes beside its target.
fn tmp_prefix(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    format!(".{name}.tmp-")
}

fn folder_of(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

// The one write rule (docs/cli.md, "Where vramfit writes"): every file
// vramfit writes lies under a folder the user chose (the root, or an
// `--out`), and nothing on the way from that folder to the file may be a
// symbolic link: not the `--out` folder or file itself, not a folder under
// the root or the output folder, not the file's own name (a dangling link
// included). A link there is refused by name, with exit 2, before anything
// is written. The root itself may be reached through a link (it is how the
// user named it); nothing below it is followed. Files are replaced through
// an exclusively created temporary file and a rename, which replaces a
// directory entry and never writes through one.

/// Refuses `path` when it is a symbolic link (dangling or not).
fn refuse_link(path: &Path, what: &str) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => anyhow::bail!(
            "{}: a symbolic link where vramfit writes {what}: refused (vramfit never writes through a link); \
             remove it or choose another path",
            shown(path)
        ),
        _ => Ok(()),
    }
}

/// A name no other process can predict: the process id and 64 random bits.
fn unpredictable_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    format!("{}-{:016x}", std::process::id(), h.finish())
}

/// Writes `bytes` to the file `path` a user named (`export --out FILE`):
/// `path` itself must not be a link; a missing folder is created. The
/// temporary file is created exclusively under an unpredictable name and
/// renamed over `path`, and the folder synced after the rename so a power
/// cut cannot bring the old file back.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    refuse_link(path, "a file")?;
    let dir = folder_of(path);
    fs::create_dir_all(dir).with_context(|| format!("cannot create folder {}", dir.display()))?;
    replace_entry(path, &mut |w| w.write_all(bytes))
}

/// Writes `bytes` to `folder/rel` and never outside `folder`: a folder
/// output (`plot --out`, `report --out`) is written where the user chose,
/// whatever links someone planted in it. The folder itself, every folder on
/// the way and the file's own name must not be a symbolic link (refused,
/// naming it, before anything is written there); missing folders are
/// created one by one without following anything. `rel` holds plain names
/// only.
pub fn write_in(folder: &Path, rel: &Path, bytes: &[u8]) -> Result<()> {
    let at = walk_in(folder, rel, true, true)?;
    replace_entry(&at, &mut |w| w.write_all(bytes))
}

/// Whether [`write_in`] would refuse `folder/rel` (a link on the way or at
/// the name), checked before a command writes any of its files, so a
/// refusal leaves the folder as it was.
pub fn check_in(folder: &Path, rel: &Path) -> Result<()> {
    walk_in(folder, rel, false, true).map(|_| ())
}

/// Writes a file of the root (`rel`: `fits/vae.json`, …) under the same
/// rule as [`write_in`], except that the root itself may be reached
/// through a link.
pub fn write_in_root(
    root: &Path,
    rel: &Path,
    fill: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let at = walk_in(root, rel, true, false)?;
    replace_entry(&at, fill)
}

/// Whether [`write_in_root`] would refuse `root/rel`.
pub fn check_in_root(root: &Path, rel: &Path) -> Result<()> {
    walk_in(root, rel, false, false).map(|_| ())
}

/// The walk of the writers: each name on the way, never a link; with
/// `create`, missing folders are made; with `output`, `folder` itself (an
/// `--out` the user named) must not be a link either.
fn walk_in(folder: &Path, rel: &Path, create: bool, output: bool) -> Result<PathBuf> {
    use std::path::Component;
    if rel.as_os_str().is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        anyhow::bail!("{}: not a plain name inside the output folder", rel.display());
    }
    if output {
        refuse_link(folder, "its output folder")?;
    }
    if create {
        fs::create_dir_all(folder).with_context(|| format!("cannot create folder {}", folder.display()))?;
    }
    let mut at = folder.to_path_buf();
    let names: Vec<_> = rel.components().collect();
    for (i, c) in names.iter().enumerate() {
        at.push(c.as_os_str());
        let last = i + 1 == names.len();
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => anyhow::bail!(
                "{}: a symbolic link where vramfit writes {}: refused (vramfit never writes through a link); \
                 remove it or choose another {}",
                shown(&at),
                if last { "a file" } else { "a folder" },
                if output { "--out" } else { "root" }
            ),
            Ok(m) if !last && !m.is_dir() => anyhow::bail!("{}: not a folder", at.display()),
            Ok(m) if last && !m.is_file() => anyhow::bail!("{}: not a regular file", at.display()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !last && create => {
                fs::create_dir(&at).with_context(|| format!("cannot create folder {}", at.display()))?
            }
            // Nothing there yet: nothing below it can be a link either.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(folder.join(rel)),
            Err(e) => return Err(e).with_context(|| format!("cannot inspect {}", at.display())),
        }
    }
    Ok(at)
}

/// The temporary file and rename of every writer, on `path` as it
/// is (no link resolved: the caller has checked there is none).
fn replace_entry(path: &Path, fill: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let dir = folder_of(path);
    let tmp: PathBuf = dir.join(format!("{}{}", tmp_prefix(path), unpredictable_suffix()));
    let keep = fs::symlink_metadata(path).ok().filter(|m| m.is_file()).map(|m| m.permissions());
    let result = (|| -> Result<()> {
        let f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        fill(&mut w).and_then(|()| w.flush()).with_context(|| format!("cannot write {}", tmp.display()))?;
        let f =
            w.into_inner().map_err(|e| e.into_error()).with_context(|| format!("cannot write {}", tmp.display()))?;
        f.sync_all().with_context(|| format!("cannot sync {}", tmp.display()))?;
        drop(f);
        if let Some(perms) = keep {
            fs::set_permissions(&tmp, perms).with_context(|| format!("cannot set permissions of {}", tmp.display()))?;
        }
        fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))?;
        sync_folder(dir);
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Makes a rename in `dir` durable (Unix; elsewhere the rename is what the
/// file system gives).
fn sync_folder(dir: &Path) {
    if cfg!(unix) {
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

/// Removes temporary files of `path` left by a run that was killed between
/// creating and renaming them. Only [`RootLock::write`] calls it: under the
/// lock no other writer of the data can be mid-write. Only regular files of
/// the exact pattern go (a link of that name is left alone, never followed).
fn remove_stale_temps(path: &Path) {
    let prefix = tmp_prefix(path);
    let Ok(entries) = fs::read_dir(folder_of(path)) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let is_temp = name.strip_prefix(&prefix).is_some_and(|rest| {
            let (pid, random) = rest.split_once('-').unwrap_or((rest, ""));
            !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) && random.bytes().all(|b| b.is_ascii_hexdigit())
        });
        if is_temp && e.file_type().map(|t| t.is_file()).unwrap_or(false) {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// An exclusive lock on the data a writer changes, held by `ingest` and
/// `emit` for their whole read–modify–write, so two writers never both read
/// the old file and the second rename drops the first one's rows. The lock
/// is on the folder that really holds each written file (the root's own
/// link resolved), so every spelling of the same root — relative,
/// absolute, through a link — takes the same lock. Released when dropped
/// (and by the OS when the process dies, so a killed run never leaves it
/// stuck).
pub struct RootLock {
    root: PathBuf,
    _folders: Vec<fs::File>,
}

/// How long a writer waits quietly before it says it is waiting.
const QUIET_WAIT: Duration = Duration::from_secs(1);

/// How long a writer waits for the lock by default (`--wait`).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(60);

impl RootLock {
    /// Takes the lock on the folders of `files` (paths under `root`, the
    /// files the writer will replace), waiting at most `wait` for another
    /// writer; after a second of waiting it says so on stderr. Past `wait`
    /// it fails naming the folder and, where the system says, the process
    /// holding it. A link under the root, on the way to any of the files,
    /// is refused before anything is locked or written.
    pub fn acquire(root: &Path, files: &[PathBuf], wait: Duration) -> Result<RootLock> {
        let mut folders: Vec<PathBuf> = Vec::new();
        for f in files {
            let rel = f.strip_prefix(root).with_context(|| format!("{} is not under the root", f.display()))?;
            check_in_root(root, rel)?;
            let dir = folder_of(f);
            if let Some(rel_dir) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
                // Made one folder at a time, never through a link.
                walk_in(root, &rel_dir.join("x"), true, false)?;
            }
            folders.push(fs::canonicalize(dir).with_context(|| format!("cannot resolve {}", dir.display()))?);
        }
        // One order for every writer, so two never wait on each other.
        folders.sort();
        folders.dedup();
        let start = Instant::now();
        let mut held = Vec::with_capacity(folders.len());
        for dir in &folders {
            held.push(lock_folder(dir, start, wait)?);
        }
        Ok(RootLock { root: root.to_path_buf(), _folders: held })
    }

    /// Writes a file of the locked data (a path under the root) atomically,
    /// first removing the temporary files a killed writer left beside it.
    pub fn write(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.write_with(path, &mut |w| w.write_all(bytes))
    }

    /// [`RootLock::write`] for content written as it is made.
    pub fn write_with(&self, path: &Path, fill: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
        let rel = path.strip_prefix(&self.root).with_context(|| format!("{} is not under the root", path.display()))?;
        check_in_root(&self.root, rel)?;
        remove_stale_temps(path);
        write_in_root(&self.root, rel, fill)
    }
}

fn lock_folder(dir: &Path, start: Instant, wait: Duration) -> Result<fs::File> {
    let file = lock_target(dir)?;
    let mut said = false;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(fs::TryLockError::WouldBlock) => {
                let waited = start.elapsed();
                if waited >= wait {
                    let holder = holder_of(dir).map(|h| format!(", held by {h}")).unwrap_or_default();
                    anyhow::bail!(
                        "{}: the write lock on this folder is taken{holder}; gave up after {} s (--wait SECONDS to \
                         wait longer, 0 not to wait)",
                        shown(dir),
                        wait.as_secs()
                    );
                }
                if waited >= QUIET_WAIT && !said {
                    let holder = holder_of(dir).map(|h| format!(" ({h})")).unwrap_or_default();
                    eprintln!(
                        "vramfit: waiting up to {} s for the write lock on {}{holder} …",
                        wait.as_secs(),
                        shown(dir)
                    );
                    said = true;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(fs::TryLockError::Error(e)) => {
                anyhow::bail!("{}: cannot lock the folder for writing: {e}", shown(dir))
            }
        }
    }
}

/// The process holding a lock on `dir`, where the system says (Linux:
/// `/proc/locks` names the pid by the folder's inode): `pid 123 (vramfit ingest …)`.
fn holder_of(dir: &Path) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let inode = fs::metadata(dir).ok()?.ino();
        let locks = fs::read_to_string("/proc/locks").ok()?;
        let me = std::process::id().to_string();
        for l in locks.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (Some(pid), Some(id)) = (f.get(4), f.get(5)) else { continue };
            if *pid == me || id.rsplit(':').next() != Some(&inode.to_string()) {
                continue;
            }
            let cmd = fs::read(format!("/proc/{pid}/cmdline")).ok().map(|c| {
                let words: Vec<String> = c
                    .split(|b| *b == 0)
                    .filter(|w| !w.is_empty())
                    .map(|w| String::from_utf8_lossy(w).into_owned())
                    .collect();
                words.join(" ").escape_debug().take(120).collect::<String>()
            });
            return Some(match cmd {
                Some(c) if !c.is_empty() => format!("pid {pid} ({c})"),
                _ => format!("pid {pid}"),
            });
        }
        None
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        None
    }
}

/// The folder itself on Unix (nothing new appears in the tree); a lock file
/// in it elsewhere, where a folder cannot be opened as a file.
fn lock_target(dir: &Path) -> Result<fs::File> {
    if cfg!(unix) {
        fs::File::open(dir).with_context(|| format!("{}: cannot open the folder to lock it", shown(dir)))
    } else {
        fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(".vramfit.lock"))
            .with_context(|| format!("{}: cannot create .vramfit.lock", shown(dir)))
    }
}

/// `sha256:<hex>` of some bytes: the digest form used in shipped files.
///
/// The runtime names files the same way with a SHA-256 of its own
/// (`vramfit_runtime::digest`, no hashing crate linked); tests hold the two equal.
pub fn sha256_tag(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

/// A digest fed in pieces: the same tag as [`sha256_tag`] of the pieces
/// joined, without ever joining them.
#[derive(Default)]
pub struct DigestWriter(Sha256);

impl DigestWriter {
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish(self) -> String {
        format!("sha256:{}", hex(&self.0.finalize()))
    }
}

/// Reads a file through `read` (given the reader and the file's length)
/// while a second thread hashes every byte of it: the result of `read` and
/// the file's `sha256:` tag. Whatever `read` leaves unread is read and
/// hashed after it, so the tag is always of the whole file. On two cores
/// the hash of a large store costs no wall time.
pub fn read_hashed<T>(
    path: &Path,
    read: impl FnOnce(&mut dyn std::io::BufRead, u64) -> Result<T>,
) -> Result<(T, String)> {
    let file = Bounded::open(path, STORE_LIMIT)?;
    let meta = file.inner.metadata().ok();
    let len = meta.as_ref().map_or(0, |m| m.len());
    // A device or a pipe says 0 bytes: streamed, so a bad first line ends it.
    if len < SMALL && meta.is_some_and(|m| m.is_file()) {
        // A small file is read whole and hashed here: a thread would cost
        // more than the hash.
        let mut bytes = Vec::with_capacity(len as usize);
        std::io::Read::read_to_end(&mut { file }, &mut bytes)
            .with_context(|| format!("{}: cannot read file", path.display()))?;
        let result = read(&mut bytes.as_slice(), len)?;
        return Ok((result, sha256_tag(&bytes)));
    }
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(16);
        // Emptied chunks go back to the reader: no fresh pages per chunk.
        let (back_tx, back) = std::sync::mpsc::channel::<Vec<u8>>();
        let hasher = scope.spawn(move || {
            let mut digest = DigestWriter::default();
            for chunk in rx {
                digest.update(&chunk);
                let _ = back_tx.send(chunk);
            }
            digest.finish()
        });
        let mut r = std::io::BufReader::with_capacity(1 << 20, Tee { inner: file, tx, back });
        let result = read(&mut r, len);
        // The tag is of the whole file; a file `read` refused is not read on.
        let rest = if result.is_ok() { std::io::copy(&mut r, &mut std::io::sink()).map(|_| ()) } else { Ok(()) };
        drop(r);
        let digest = hasher.join().map_err(|_| anyhow::anyhow!("{}: the hashing thread failed", path.display()))?;
        rest.with_context(|| format!("{}: cannot read file", path.display()))?;
        Ok((result?, digest))
    })
}

/// Reads a file as a stream, not hashing it: what `read` returns.
pub fn read_streamed<T>(path: &Path, read: impl FnOnce(&mut dyn std::io::BufRead, u64) -> Result<T>) -> Result<T> {
    let file = Bounded::open(path, STORE_LIMIT)?;
    let len = file.inner.metadata().map(|m| m.len()).unwrap_or(0);
    read(&mut std::io::BufReader::with_capacity(1 << 20, file), len)
}

/// Below this many bytes, reading on one thread is faster than starting
/// another (the shipped store is 60 KiB).
pub const SMALL: u64 = 1 << 20;

/// A reader that hands a copy of every byte it reads to the hashing thread.
struct Tee {
    inner: Bounded,
    tx: std::sync::mpsc::SyncSender<Vec<u8>>,
    back: std::sync::mpsc::Receiver<Vec<u8>>,
}

impl std::io::Read for Tee {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 {
            // The hasher only stops when this side is dropped.
            let mut chunk = self.back.try_recv().unwrap_or_default();
            chunk.clear();
            chunk.extend_from_slice(&buf[..n]);
            let _ = self.tx.send(chunk);
        }
        Ok(n)
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The largest points store read (as a measurement CSV): 4 GiB.
pub const STORE_LIMIT: u64 = 4 << 30;

/// Pretty JSON with a trailing newline: the byte form of every file vramfit
/// writes. Keys come out in struct-field or `BTreeMap` order, so the bytes
/// are stable.
pub fn to_json_bytes<T: serde::Serialize>(value: &T) -> Result<Vec<u8>> {
    let mut v = serde_json::to_vec_pretty(value)?;
    v.push(b'\n');
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::{to_json_bytes, writes_exactly};

    #[test]
    fn writes_exactly_agrees_with_the_bytes_written() {
        let value = serde_json::json!({"a": [1, 2, {"b": "é\n"}], "c": null});
        let bytes = to_json_bytes(&value).unwrap();
        assert!(writes_exactly(&value, &bytes).unwrap());
        // Any one byte changed, a byte missing or one more: not the same.
        for i in 0..bytes.len() {
            let mut other = bytes.clone();
            other[i] ^= 1;
            assert!(!writes_exactly(&value, &other).unwrap(), "byte {i}");
        }
        assert!(!writes_exactly(&value, &bytes[..bytes.len() - 1]).unwrap());
        let mut longer = bytes.clone();
        longer.push(b'\n');
        assert!(!writes_exactly(&value, &longer).unwrap());
    }
}
