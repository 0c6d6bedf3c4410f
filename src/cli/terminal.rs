//! What the process writes to: whether each stream is a terminal, how wide
//! it is, and what the environment says about colour. Read once, in
//! `main`, and passed in, so an in-process run (the tests) is never
//! coloured or boxed by the terminal the test runner happens to have.

use crate::report::TableStyle;
use std::io::IsTerminal;

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour a stream that is a terminal, unless `NO_COLOR` is set or
    /// `TERM=dumb`; `CLICOLOR_FORCE` colours a stream that is not.
    #[default]
    Auto,
    Always,
    Never,
}

/// The facts about the process's streams and environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Terminal {
    pub stdout_is_terminal: bool,
    pub stderr_is_terminal: bool,
    /// The terminal's columns, when stdout is one.
    pub width: Option<usize>,
    /// `NO_COLOR` set and not empty (<https://no-color.org>).
    pub no_color: bool,
    /// `CLICOLOR_FORCE` set, not empty and not `0`.
    pub clicolor_force: bool,
    /// `TERM=dumb`.
    pub dumb: bool,
}

impl Terminal {
    /// The real process's streams and environment; only `main` calls this.
    pub fn detect() -> Terminal {
        let set = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty());
        let stdout_is_terminal = std::io::stdout().is_terminal();
        Terminal {
            stdout_is_terminal,
            stderr_is_terminal: std::io::stderr().is_terminal(),
            width: if stdout_is_terminal {
                terminal_size::terminal_size().map(|(w, _)| usize::from(w.0))
            } else {
                None
            },
            no_color: set("NO_COLOR"),
            clicolor_force: set("CLICOLOR_FORCE") && std::env::var_os("CLICOLOR_FORCE").is_some_and(|v| v != "0"),
            dumb: std::env::var_os("TERM").is_some_and(|t| t == "dumb"),
        }
    }

    /// Whether to colour a stream, as clap and cargo decide it: the flag
    /// first; then `NO_COLOR` (which beats `CLICOLOR_FORCE`), then
    /// `CLICOLOR_FORCE`, then whether the stream is a terminal that is not
    /// `TERM=dumb`.
    pub fn colors(&self, choice: ColorChoice, is_terminal: bool) -> bool {
        match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto if self.no_color => false,
            ColorChoice::Auto if self.clicolor_force => true,
            ColorChoice::Auto => is_terminal && !self.dumb,
        }
    }

    /// Tables: boxed and fitted to the width on a terminal, plain columns
    /// elsewhere.
    pub fn table_style(&self) -> TableStyle {
        if self.stdout_is_terminal {
            TableStyle { boxed: true, width: self.width }
        } else {
            TableStyle::PLAIN
        }
    }
}

/// A message prefix (`error:`, `warning:`) in clap's style when coloured:
/// bold red for errors, bold yellow for warnings.
pub fn prefix(word: &str, color: bool) -> String {
    if !color {
        return format!("{word}:");
    }
    let code = if word == "error" { "31" } else { "33" };
    format!("\x1b[1;{code}m{word}:\x1b[0m")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_then_no_color_then_clicolor_force_then_the_terminal() {
        let t = Terminal::default();
        assert!(t.colors(ColorChoice::Always, false));
        assert!(!t.colors(ColorChoice::Never, true));
        assert!(t.colors(ColorChoice::Auto, true));
        assert!(!t.colors(ColorChoice::Auto, false));
        let no = Terminal { no_color: true, clicolor_force: true, ..Terminal::default() };
        assert!(!no.colors(ColorChoice::Auto, true), "NO_COLOR beats CLICOLOR_FORCE and the terminal");
        assert!(no.colors(ColorChoice::Always, false), "an explicit flag beats the environment");
        let force = Terminal { clicolor_force: true, ..Terminal::default() };
        assert!(force.colors(ColorChoice::Auto, false));
        let dumb = Terminal { dumb: true, ..Terminal::default() };
        assert!(!dumb.colors(ColorChoice::Auto, true));
        assert_eq!(prefix("error", false), "error:");
        assert_eq!(prefix("warning", true), "\x1b[1;33mwarning:\x1b[0m");
    }
}
