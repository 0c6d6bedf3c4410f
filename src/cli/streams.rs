//! Standard output and standard error as the commands see them: every
//! write is checked, so a command whose output could not be written (a full
//! disk, a closed pipe) never exits 0 as if it had been.

use std::io::{ErrorKind, Write};

/// A stream that remembers its first write error and drops what follows
/// (a command keeps running to its end; the error decides the exit code).
pub(super) struct Checked<'a> {
    inner: &'a mut dyn Write,
    pub(super) failed: Option<std::io::Error>,
}

impl<'a> Checked<'a> {
    pub(super) fn new(inner: &'a mut dyn Write) -> Checked<'a> {
        Checked { inner, failed: None }
    }

    /// Writes a last message straight to the stream, ignoring the outcome.
    pub(super) fn last_words(&mut self, text: &str) {
        let _ = self.inner.write_all(text.as_bytes());
        let _ = self.inner.flush();
    }
}

impl Write for Checked<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.failed.is_some() {
            return Ok(buf.len());
        }
        match self.inner.write(buf) {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == ErrorKind::Interrupted => Err(e),
            Err(e) => {
                self.failed = Some(e);
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.failed.is_none() {
            if let Err(e) = self.inner.flush() {
                self.failed = Some(e);
            }
        }
        Ok(())
    }
}

/// The exit code once both streams are flushed: a failed write is exit 2
/// when the command wrote no file, said on whichever stream still works (a
/// reader that closed the pipe on purpose, `| head`, gets no message, only
/// the code). When it did write (`wrote`: `ingest`, `emit`, `plot`,
/// `report`), exit 2 would claim nothing was written: the code is 1 and the
/// message names what was written.
pub(super) fn settle(code: u8, out: &mut Checked, err: &mut Checked, wrote: &[String]) -> u8 {
    let _ = out.flush();
    let _ = err.flush();
    let said = |e: &std::io::Error| e.kind() != ErrorKind::BrokenPipe;
    let written = if wrote.is_empty() { String::new() } else { format!(" (written: {})", wrote.join(", ")) };
    let failed_code = if wrote.is_empty() { super::EXIT_INPUT } else { super::EXIT_FINDINGS };
    match (&out.failed, &err.failed) {
        (None, None) => code,
        (Some(e), None) => {
            if said(e) || !wrote.is_empty() {
                let text = format!("error: cannot write to standard output: {e}{written}\n");
                err.last_words(&text);
            }
            failed_code
        }
        (None, Some(e)) => {
            if said(e) || !wrote.is_empty() {
                let text = format!("error: cannot write to standard error: {e}{written}\n");
                out.last_words(&text);
            }
            failed_code
        }
        (Some(_), Some(_)) => failed_code,
    }
}
