//! What a runtime reads: a bounded text file, a path as people see it, and
//! whether a value serialises to exactly the bytes of a file.

use crate::error::{Code, Error, Result};
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
        let inner = fs::File::open(path)
            .map_err(|e| Error::new(Code::File, format!("{}: cannot read file: {e}", path.display())))?;
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
        .map_err(|e| Error::new(Code::File, format!("{}: cannot read file: {e}", path.display())))?;
    String::from_utf8(bytes).map_err(|e| Error::new(Code::File, format!("{}: not UTF-8 text ({e})", path.display())))
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
    serde_json::to_writer_pretty(&mut c, value).map_err(|e| Error::new(Code::File, e.to_string()))?;
    Ok(c.same && c.rest == b"\n")
}

/// A path as shown to people: without a leading `./`.
pub fn shown(p: &Path) -> String {
    let s = p.display().to_string();
    s.strip_prefix("./").map(str::to_string).unwrap_or(s)
}

/// The input error type lives with the runtime's error (`crate::error`).
pub use crate::error::InputError;
