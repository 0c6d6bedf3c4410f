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
        Ok(Bounded { inner: open_regular(path)?, left: limit, limit, path: path.to_path_buf() })
    }
}

/// What a path names when it is not a regular file, in the words a refusal uses.
fn kind_of(t: fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
    }
    if t.is_dir() {
        "a folder"
    } else {
        "not a regular file"
    }
}

/// Opens an input for reading, refused unless it is a regular file (a link
/// to one is followed): a FIFO, a device, a socket or a folder is named and
/// refused, never waited on. On Unix the open itself does not block
/// (`O_NONBLOCK`: opening a FIFO with no writer would wait forever, and a
/// caller holding the root's lock would hold it as long), and the kind is
/// read from the open file (`fstat`), so the file checked is the file read.
/// Every path vramfit reads goes through here (docs/cli.md, "Hostile input").
pub fn open_regular(path: &Path) -> Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file =
        options.open(path).map_err(|e| Error::new(Code::File, format!("{}: cannot read file: {e}", path.display())))?;
    let kind = file
        .metadata()
        .map_err(|e| Error::new(Code::File, format!("{}: cannot read file: {e}", path.display())))?
        .file_type();
    if !kind.is_file() {
        return Err(Error::new(
            Code::File,
            format!(
                "{}: {}, not a regular file: refused (vramfit reads only regular files)",
                path.display(),
                kind_of(kind)
            ),
        ));
    }
    Ok(file)
}

/// A regular file's bytes, at most `limit` of them (an input past it is
/// refused, not read on), through [`open_regular`].
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut Bounded::open(path, limit)?, &mut bytes)
        .map_err(|e| Error::new(Code::File, format!("{}: cannot read file: {e}", path.display())))?;
    Ok(bytes)
}

/// [`read_bytes`] where a file that cannot be read (absent, not regular,
/// too large) counts as none: for comparisons ("does the file on disk
/// differ?"), never for input.
pub fn read_if_regular(path: &Path, limit: u64) -> Option<Vec<u8>> {
    read_bytes(path, limit).ok()
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
    let bytes = read_bytes(path, TEXT_LIMIT)?;
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

/// The first key that appears twice in one JSON object of `text`, with
/// the line it appears again on. serde (into a map or a `Value`) keeps the
/// last of two and says nothing, so every loader of a JSON file asks this
/// first and refuses such a file with the key and the line (docs/cli.md,
/// "Hostile input"). Keys compare as JSON decodes them (`"a"` and
/// `"\u0061"` are one key). Text that is not JSON gives None: the parser
/// that follows says what is wrong with it.
pub fn duplicate_key(text: &str) -> Option<(String, u64)> {
    use std::collections::HashSet;
    enum Frame<'a> {
        Object { keys: HashSet<std::borrow::Cow<'a, str>>, expect_key: bool },
        Array,
    }
    let b = text.as_bytes();
    let (mut stack, mut line, mut i) = (Vec::<Frame>::new(), 1u64, 0usize);
    while i < b.len() {
        match b[i] {
            b'\n' => line += 1,
            b'{' => stack.push(Frame::Object { keys: HashSet::new(), expect_key: true }),
            b'[' => stack.push(Frame::Array),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some(Frame::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = true;
                }
            }
            b':' => {
                if let Some(Frame::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = false;
                }
            }
            b'"' => {
                let start = i;
                let mut escaped = false;
                i += 1;
                while i < b.len() && (b[i] != b'"' || escaped) {
                    escaped = !escaped && b[i] == b'\\';
                    i += 1;
                }
                let raw = text.get(start..=i.min(b.len() - 1))?;
                if let Some(Frame::Object { keys, expect_key: true }) = stack.last_mut() {
                    let key: std::borrow::Cow<str> = if raw.contains('\\') {
                        serde_json::from_str::<String>(raw).ok()?.into()
                    } else {
                        raw.get(1..raw.len().saturating_sub(1))?.into()
                    };
                    if !keys.insert(key.clone()) {
                        return Some((key.into_owned(), line));
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// [`duplicate_key`] as a refusal naming the file, the line and the key.
pub fn refuse_duplicate_keys(text: &str, file: &str) -> Result<()> {
    match duplicate_key(text) {
        None => Ok(()),
        Some((key, line)) => Err(InputError::at_line(
            file,
            line,
            format!(
                "key '{}' appears twice in one object: refused (a reader would keep one of the two without a word)",
                crate::text::escaped(&key, 80)
            ),
        )
        .into()),
    }
}

/// A path as shown to people: without a leading `./`.
pub fn shown(p: &Path) -> String {
    let s = p.display().to_string();
    s.strip_prefix("./").map(str::to_string).unwrap_or(s)
}

/// The input error type lives with the runtime's error (`crate::error`).
pub use crate::error::InputError;

#[cfg(test)]
mod tests {
    use super::duplicate_key;

    #[test]
    fn a_key_twice_in_one_object_is_found_with_its_line() {
        assert_eq!(duplicate_key("{\"a\": 1, \"b\": 2}"), None);
        assert_eq!(duplicate_key("{\"a\": 1,\n \"a\": 2}"), Some(("a".into(), 2)));
        // The same key in two objects, or as a value, is no duplicate.
        assert_eq!(duplicate_key("[{\"a\": 1}, {\"a\": \"a\"}]"), None);
        assert_eq!(duplicate_key("{\"x\": {\"a\": 1}, \"a\": {\"a\": 2}}"), None);
        // Nested, escaped, after a string holding braces and quotes.
        assert_eq!(
            duplicate_key("{\"s\": \"{\\\"a\\\": }\", \"m\": {\"k\": 1, \"\\u006b\": 2}}"),
            Some(("k".into(), 1))
        );
        assert_eq!(duplicate_key("{\"a\\\\\": 1, \"a\\\\\": 2}"), Some(("a\\".into(), 1)));
    }
}
