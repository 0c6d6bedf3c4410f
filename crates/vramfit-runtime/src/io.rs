//! What a runtime reads: a bounded text file, a path as people see it, and
//! whether a value serialises to exactly the bytes of a file.

use anyhow::{Context, Result};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The largest text input read whole (a coefficients file or a policy;
/// the shipped ones are tens of KiB): past it, reading stops with an error.
pub const TEXT_LIMIT: u64 = 16 << 20;

/// A file that stops with an error past `limit` bytes: no input is read
/// without end (a link to `/dev/zero`, a device, a runaway file).
pub struct Bounded {
    /// The open file, for its metadata.
    pub inner: fs::File,
    left: u64,
    limit: u64,
    path: PathBuf,
}

impl Bounded {
    pub fn open(path: &Path, limit: u64) -> Result<Bounded> {
        let inner = fs::File::open(path).with_context(|| format!("{}: cannot read file", path.display()))?;
        Ok(Bounded { inner, left: limit, limit, path: path.to_path_buf() })
    }
}

impl std::io::Read for Bounded {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // One byte more says whether the file goes on.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("larger than {} bytes: refused (is {} the file meant?)", self.limit, self.path.display()),
                )),
            };
        }
        let want = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// Reads a file as UTF-8 text (at most [`TEXT_LIMIT`] bytes), naming the
/// file on failure.
pub fn read_text(path: &Path) -> Result<String> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut Bounded::open(path, TEXT_LIMIT)?, &mut bytes)
        .map_err(|e| anyhow::anyhow!("{}: cannot read file: {e}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| anyhow::anyhow!("{}: not UTF-8 text ({e})", path.display()))
}

/// Whether `value` serialises, as [`to_json_bytes`] writes it, to exactly
/// `bytes`: compared piece by piece as it is written, never built (a
/// shipped file of 10^6 point ids is 23 MB, and building it to compare it
/// was a sixth of `verify`'s peak memory).
pub fn writes_exactly<T: serde::Serialize>(value: &T, bytes: &[u8]) -> Result<bool> {
    struct Compare<'a> {
        rest: &'a [u8],
        same: bool,
    }
    impl Write for Compare<'_> {
        fn write(&mut self, piece: &[u8]) -> std::io::Result<usize> {
            match self.rest.strip_prefix(piece) {
                Some(rest) if self.same => self.rest = rest,
                _ => self.same = false,
            }
            Ok(piece.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Compare { rest: bytes, same: true };
    serde_json::to_writer_pretty(&mut c, value)?;
    Ok(c.same && c.rest == b"\n")
}

/// A path as shown to people: without a leading `./`.
pub fn shown(p: &Path) -> String {
    let s = p.display().to_string();
    s.strip_prefix("./").map(str::to_string).unwrap_or(s)
}

/// An input error and where it lies, as data: the file, the line
/// (1-based) where one is known, the stored point it names, the field.
/// It shows as its words, which name the place as people read it; the CLI
/// makes a GitHub annotation from the data, never from the words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub file: String,
    pub line: Option<u64>,
    /// The id of the stored point at fault (its line is looked up in the store).
    pub point: Option<String>,
    /// The field, column or policy entry at fault.
    pub field: Option<String>,
    pub words: String,
}

impl InputError {
    /// An error in `file` (at `line` where known), in these words.
    pub fn new(file: impl AsRef<str>, line: Option<u64>, words: impl Into<String>) -> InputError {
        InputError { file: file.as_ref().to_string(), line, point: None, field: None, words: words.into() }
    }

    /// `FILE:LINE: what`, at that line.
    pub fn at_line<L: TryInto<u64>>(file: impl AsRef<str>, line: L, what: impl std::fmt::Display) -> InputError {
        let file = file.as_ref();
        let line = line.try_into().unwrap_or(u64::MAX);
        InputError::new(file, Some(line), format!("{file}:{line}: {what}"))
    }

    /// `FILE: what`, in the file.
    pub fn in_file(file: impl AsRef<str>, what: impl std::fmt::Display) -> InputError {
        let file = file.as_ref();
        InputError::new(file, None, format!("{file}: {what}"))
    }

    pub fn field(mut self, field: &str) -> InputError {
        self.field = Some(field.to_string());
        self
    }

    pub fn point(mut self, id: &str) -> InputError {
        self.point = Some(id.to_string());
        self
    }

    /// The input error an error is or wraps, if any.
    pub fn of(e: &anyhow::Error) -> Option<&InputError> {
        e.chain().find_map(|c| c.downcast_ref::<InputError>())
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.words)
    }
}

impl std::error::Error for InputError {}
