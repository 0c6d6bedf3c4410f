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

/// The exit code once both streams are flushed: a failed write is exit 2,
/// said on whichever stream still works (a reader that closed the pipe on
/// purpose, `| head`, gets no message, only the code).
pub(super) fn settle(code: u8, out: &mut Checked, err: &mut Checked) -> u8 {
    let _ = out.flush();
    let _ = err.flush();
    let said = |e: &std::io::Error| e.kind() != ErrorKind::BrokenPipe;
    match (&out.failed, &err.failed) {
        (None, None) => code,
        (Some(e), None) => {
            if said(e) {
                let text = format!("error: cannot write to standard output: {e}\n");
                err.last_words(&text);
            }
            super::EXIT_INPUT
        }
        (None, Some(e)) => {
            if said(e) {
                let text = format!("error: cannot write to standard error: {e}\n");
                out.last_words(&text);
            }
            super::EXIT_INPUT
        }
        (Some(_), Some(_)) => super::EXIT_INPUT,
    }
}
