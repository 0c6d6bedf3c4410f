//! The observation file: rows appended by several processes under a lock,
//! and nothing else ever touched. What the Python `Observer` writes
//! through (docs/hosts.md, "Observe"): a file vramfit did not write is
//! refused, never cut or appended to.
//!
//! The rules, each checked on the open file so the file checked is the
//! file written: the path is not a link (the open does not follow one, so
//! a dangling link's target is never created); it is a regular file (a
//! FIFO or a device is refused, and the open does not block on one); a
//! file with content starts with the observation header (or is a prefix of
//! it, a header a writer died writing); the only bytes ever cut are a last
//! row without its line end, which a writer that died mid-row left, and
//! only where that tail is no longer than a row can be.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

/// The longest row the runtime writes is a few KiB (every field is
/// bounded, `observe::FIELD_LIMIT`): a tail longer than this without a
/// line end is not a torn row of this format, and is left alone.
pub const TORN_LIMIT: u64 = 64 * 1024;

/// What one append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    Written,
    /// The row would take the file past its bound: nothing was written.
    Full,
}

/// Why a row was not appended.
#[derive(Debug)]
pub enum AppendError {
    /// The path names something the observer did not write (a link, a
    /// FIFO, a device, another file's content): left exactly as it is.
    NotOurs(String),
    /// The file system refused (no space, no permission).
    Io(std::io::Error),
}

impl std::fmt::Display for AppendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppendError::NotOurs(w) => f.write_str(w),
            AppendError::Io(e) => write!(f, "cannot be written ({e})"),
        }
    }
}

impl From<std::io::Error> for AppendError {
    fn from(e: std::io::Error) -> AppendError {
        AppendError::Io(e)
    }
}

/// A file's name without its folders: how a refusal and a log line name
/// it (they hold no path).
fn name_of(path: &Path) -> String {
    path.file_name().map_or_else(|| "the observation file".into(), |n| n.to_string_lossy().into_owned())
}

fn not_ours(path: &Path, what: impl std::fmt::Display) -> AppendError {
    AppendError::NotOurs(format!("observe: {} {what}", name_of(path)))
}

fn kind_words(t: std::fs::FileType) -> &'static str {
    if t.is_symlink() {
        return "is a symbolic link: the observer writes only a file of its own, never through a link";
    }
    if t.is_dir() {
        return "is a folder, not a regular file";
    }
    "is not a regular file (a FIFO, a device or a socket)"
}

/// Whether `path` may be the observer's file, checked when the observer is
/// set up (misuse is refused then, never around an op): absent, or a
/// regular file (not a link) holding an observation file.
pub fn check_path(path: &Path, header: &str) -> Result<(), AppendError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(AppendError::Io(e)),
    };
    if !meta.file_type().is_file() {
        return Err(not_ours(path, kind_words(meta.file_type())));
    }
    let file = open(path, false)?;
    check_content(&file, path, header)
}

/// Opens the file for reading and appending (created when `create`),
/// never through a link and without blocking, and refuses it unless it is
/// a regular file.
fn open(path: &Path, create: bool) -> Result<File, AppendError> {
    let mut o = OpenOptions::new();
    o.read(true).append(true).create(create);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC).mode(0o644);
    }
    #[cfg(not(unix))]
    {
        // No O_NOFOLLOW: the link is looked for first.
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(not_ours(path, kind_words(std::fs::symlink_metadata(path)?.file_type())));
        }
    }
    let file = match o.open(path) {
        Ok(f) => f,
        // ELOOP: the last component is a link (O_NOFOLLOW).
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(not_ours(
                path,
                "is a symbolic link: the observer writes only a file of its own, never through a link",
            ))
        }
        Err(e) => return Err(AppendError::Io(e)),
    };
    let t = file.metadata()?.file_type();
    if !t.is_file() {
        return Err(not_ours(path, kind_words(t)));
    }
    Ok(file)
}

fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_at(file, buf, at)
    }
    #[cfg(windows)]
    {
        std::os::windows::fs::FileExt::seek_read(file, buf, at)
    }
}

/// Reads `len` bytes at `at` (fewer at the end of the file).
fn bytes_at(file: &File, at: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let mut got = 0;
    while got < len {
        match read_at(file, &mut buf[got..], at + got as u64)? {
            0 => break,
            n => got += n,
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// The file's own bytes say it is an observation file: its first line is
/// the header, or the whole file is a prefix of it.
fn check_content(file: &File, path: &Path, header: &str) -> Result<(), AppendError> {
    let size = file.metadata()?.len();
    let head = bytes_at(file, 0, header.len())?;
    let ours = size == 0
        || if size >= header.len() as u64 { head == header.as_bytes() } else { header.as_bytes().starts_with(&head) };
    if ours {
        Ok(())
    } else {
        Err(not_ours(
            path,
            "is not an observation file (its first line is not vramfit's observation header): the observer \
             appends only to a file of its own format, and leaves this one as it is",
        ))
    }
}

/// Appends one row (the header first into an empty file) under an
/// exclusive lock; [`Appended::Full`] when the file would pass
/// `max_bytes`. A row torn by a writer that died mid-write is cut first.
pub fn append(path: &Path, header: &str, row: &str, max_bytes: u64) -> Result<Appended, AppendError> {
    let mut file = open(path, true)?;
    file.lock()?;
    let result = append_locked(&mut file, path, header, row, max_bytes);
    let _ = file.unlock();
    result
}

fn append_locked(
    file: &mut File,
    path: &Path,
    header: &str,
    row: &str,
    max_bytes: u64,
) -> Result<Appended, AppendError> {
    check_content(file, path, header)?;
    let mut size = file.metadata()?.len();
    if size > 0 && size < header.len() as u64 {
        // A header a writer died writing: the file holds nothing else.
        file.set_len(0)?;
        size = 0;
    } else if size > 0 {
        let window = size.min(TORN_LIMIT);
        let tail = bytes_at(file, size - window, window as usize)?;
        if tail.last() != Some(&b'\n') {
            let Some(end) = tail.iter().rposition(|b| *b == b'\n') else {
                return Err(not_ours(
                    path,
                    format!("ends in {window} bytes without a line end: not a row this observer wrote, so it is left as it is"),
                ));
            };
            size = size - window + end as u64 + 1;
            file.set_len(size)?;
        }
    }
    let data = if size == 0 { format!("{header}{row}") } else { row.to_string() };
    if size.saturating_add(data.len() as u64) > max_bytes {
        return Ok(Appended::Full);
    }
    file.write_all(data.as_bytes())?;
    Ok(Appended::Written)
}
