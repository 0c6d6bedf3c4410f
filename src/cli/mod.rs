//! Command-line parsing. Arguments become typed options here, once; the core
//! never sees clap. Exit codes are a contract: 0 success, 1 findings (a
//! failed check, a `--fail-on` verdict), 2 usage or input error.

mod args;
mod bar;
mod man;
mod options;
mod streams;
pub mod terminal;

use crate::commands::{self, Found, Note, Outcome};
use crate::pricing::platform::EnvSnapshot;
use crate::report::{self, Format, Report};
// The argument types (args.rs) are this module's vocabulary.
use args::*;
use options::*;
use std::io::Write;
use std::path::PathBuf;
use terminal::{prefix, ColorChoice, Terminal};

/// Exit code: success.
pub const EXIT_OK: u8 = 0;
/// Exit code: the command ran and found something (verify findings, a
/// `--check` that is out of date, a `--fail-on` verdict).
pub const EXIT_FINDINGS: u8 = 1;
/// Exit code: bad usage or bad input; nothing was written.
pub const EXIT_INPUT: u8 = 2;

/// Runs one command line with an explicit environment and output streams,
/// and returns the exit code: the whole binary, callable in-process (the
/// fuzz tests drive thousands of command lines through it). Neither stream
/// counts as a terminal: no colour, plain tables.
/// The names of every subcommand (and their aliases): words a family name
/// must not shadow.
pub fn command_words() -> Vec<String> {
    use clap::CommandFactory;
    let cmd = args::Cli::command();
    let mut words = Vec::new();
    for sub in cmd.get_subcommands() {
        words.push(sub.get_name().to_string());
        words.extend(sub.get_all_aliases().map(str::to_string));
        for inner in sub.get_subcommands() {
            words.push(inner.get_name().to_string());
        }
    }
    words
}

pub fn run_from<I, T>(args: I, env: &EnvSnapshot, out: &mut dyn Write, err: &mut dyn Write) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    run_on(args, env, &Terminal::default(), out, err)
}

/// Where the last panic happened (`file:line`), kept by the hook
/// [`quiet_panics`] installs, for [`guarded`]'s one line.
static PANICKED_AT: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Replaces the default panic message (a thread name, a note about
/// backtraces) with nothing: [`guarded`] says it once, in the runtime's
/// words. `RUST_BACKTRACE` set keeps the default hook, for a developer.
pub fn quiet_panics() {
    if std::env::var_os("RUST_BACKTRACE").is_some() {
        return;
    }
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
        if let Ok(mut slot) = PANICKED_AT.lock() {
            *slot = at;
        }
    }));
}

/// Runs a whole command line (`run`) so that no panic leaves the process:
/// a panic, which is a bug in vramfit and never an answer, is said in one
/// line on `err` and exits [`EXIT_INPUT`], because the exit codes are a
/// contract of three (0, 1, 2) and 2 is the one that means "nothing here to
/// trust". A file being written is left whole or as it was (every write
/// goes through a temporary file and a rename, `fsio`).
pub fn guarded(err: &mut dyn Write, run: impl FnOnce() -> u8) -> u8 {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(code) => code,
        Err(payload) => {
            let at = PANICKED_AT.lock().ok().and_then(|mut s| s.take());
            let e = crate::error::internal(&crate::error::panic_words(payload.as_ref()), at.as_deref());
            let _ = writeln!(err, "error: {e}");
            EXIT_INPUT
        }
    }
}

/// `--color` as typed, read before parsing, so that a parse error is
/// coloured (or not) as asked.
fn color_flag(args: &[std::ffi::OsString]) -> ColorChoice {
    let mut choice = ColorChoice::Auto;
    let mut it = args.iter().map(|a| a.to_string_lossy());
    while let Some(a) = it.next() {
        let value = match a.strip_prefix("--color") {
            Some("") => it.next().map(|v| v.to_string()),
            Some(rest) => rest.strip_prefix('=').map(str::to_string),
            None => None,
        };
        choice = match value.as_deref() {
            Some("always") => ColorChoice::Always,
            Some("never") => ColorChoice::Never,
            Some("auto") => ColorChoice::Auto,
            _ => choice,
        };
    }
    choice
}

/// [`run_from`] on the streams `terminal` describes (what `main` calls).
pub fn run_on<I, T>(args: I, env: &EnvSnapshot, terminal: &Terminal, out: &mut dyn Write, err: &mut dyn Write) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let (mut out, mut err) = (streams::Checked::new(out), streams::Checked::new(err));
    let wrote = std::cell::RefCell::new(Vec::new());
    let code = run_checked(args, env, terminal, &mut out, &mut err, &wrote);
    let wrote = wrote.into_inner();
    streams::settle(code, &mut out, &mut err, &wrote)
}

fn run_checked<I, T>(
    args: I,
    env: &EnvSnapshot,
    terminal: &Terminal,
    out: &mut dyn Write,
    err: &mut dyn Write,
    wrote: &std::cell::RefCell<Vec<String>>,
) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let choice = color_flag(&args);
    let (color_out, color_err) =
        (terminal.colors(choice, terminal.stdout_is_terminal), terminal.colors(choice, terminal.stderr_is_terminal));
    // `--version` names the coefficients compiled in, not only the program.
    if args.len() == 2 && (args[1] == "--version" || args[1] == "-V") {
        emit(out, &report::long_version());
        return EXIT_OK;
    }
    let parsed = command().try_get_matches_from(args).and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_INPUT } else { EXIT_OK };
            let color = if e.use_stderr() { color_err } else { color_out };
            let styled = e.render();
            let text = if color { styled.ansi().to_string() } else { styled.to_string() };
            let _ = if e.use_stderr() { err.write_all(text.as_bytes()) } else { out.write_all(text.as_bytes()) };
            return code;
        }
    };
    // A bar on standard error only when that is a terminal.
    let progress: Box<dyn crate::progress::Progress> =
        if terminal.stderr_is_terminal { Box::new(bar::Bar::new()) } else { Box::new(crate::progress::Silent) };
    let streams = Streams { color: color_err, progress: progress.as_ref(), wrote };
    let github = matches!(cli.format, FormatArg::Github);
    match crate::report::with_style(terminal.table_style(), || run(cli, env, &streams, out, err)) {
        Ok(code) => code,
        Err(e) => {
            // Whatever a user supplied is shown escaped: a control character
            // in a name or a path cannot clear a screen or retitle a terminal.
            let message: String = format!("{e:#}")
                .chars()
                .flat_map(|c| {
                    let keep = !c.is_control() || c == '\n' || c == '\t';
                    let shown: Vec<char> = if keep { vec![c] } else { c.escape_default().collect() };
                    shown
                })
                .collect();
            let _ = writeln!(err, "{} {message}", prefix("error", color_err));
            // In CI the same error is an annotation on the file and line at fault.
            if github {
                emit(out, &error_annotation(&e, &message));
            }
            EXIT_INPUT
        }
    }
}

/// An input error as a GitHub annotation, placed by the error's own data
/// (`places::InputError`: file, line, the stored point it names), never
/// by reading its words: on its line; a stored point's on the store line
/// that holds it; else on the file's first line. An error that names no
/// file (a flag out of range) is an annotation on none.
fn error_annotation(e: &anyhow::Error, message: &str) -> String {
    let title = "vramfit: input error";
    let Some(place) = crate::places::input_of(e) else {
        return crate::report::annotation_without_file("error", title, message);
    };
    let line = place.line.or_else(|| {
        let id = place.point.as_deref()?;
        crate::places::store_line(&crate::fsio::read_text(std::path::Path::new(&place.file)).ok()?, id)
    });
    crate::report::annotation("error", &place.file, line.unwrap_or(1), title, message)
}

fn emit(out: &mut dyn Write, text: &str) {
    let _ = out.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
}

/// The exit code of what a command found: the one place a typed finding
/// becomes a number (docs/cli.md, "Exit codes").
fn code(found: Found) -> u8 {
    match found {
        Found::Nothing => EXIT_OK,
        Found::Findings
        | Found::OutOfDate
        | Found::Estimate
        | Found::VerdictMet
        | Found::NoTileFits
        | Found::Growth
        | Found::CoverageBelow
        | Found::UnderReserved => EXIT_FINDINGS,
    }
}

/// What a command may do on standard error beside its messages.
struct Streams<'a> {
    /// Colour the prefixes of its messages.
    color: bool,
    /// Where long work reports how far it has got.
    progress: &'a dyn crate::progress::Progress,
    /// The files the command wrote (`Outcome::wrote`), for the exit code.
    wrote: &'a std::cell::RefCell<Vec<String>>,
}

/// Where and how a command's outcome is shown.
struct Showing<'a> {
    /// The asked format.
    format: Format,
    /// The command's name, for messages.
    name: &'static str,
    /// Colour the prefixes of notes.
    color: bool,
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    /// Where the files the command wrote are recorded.
    wrote: &'a std::cell::RefCell<Vec<String>>,
}

impl Showing<'_> {
    /// Writes the answer and the notes around it, frees a large result off
    /// this thread, and says what was found.
    fn show<R: Report + Send + 'static>(&mut self, o: Outcome<R>) -> anyhow::Result<Found> {
        self.wrote.borrow_mut().extend(o.wrote.iter().cloned());
        let text = report::render(&o.result, self.format, self.name)?;
        for note in &o.notes {
            if let Note::Warning(w) = note {
                let _ = writeln!(self.err, "{} {w}", prefix("warning", self.color));
            }
        }
        emit(self.out, &text);
        for note in &o.notes {
            if let Note::Strict(e) = note {
                let _ = writeln!(self.err, "{} {e}", prefix("strict", self.color));
            }
        }
        crate::par::drop_later(o.result, o.weight);
        Ok(o.found)
    }
}

fn run(cli: Cli, env: &EnvSnapshot, streams: &Streams, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<u8> {
    run_command(cli, env, streams, out, err).map(code)
}

/// Checks the asked format against what the command prints.
fn check_format(name: &str, format: Format) -> anyhow::Result<()> {
    match formats_of(name) {
        Some(formats) if !formats.contains(&format) => {
            anyhow::bail!("`{name}` has no {} output (it prints {})", format.as_str(), format_names(formats).join(", "))
        }
        Some(_) => Ok(()),
        // `schema`, `completions` and `man` print one fixed form.
        None if format != Format::Table => {
            anyhow::bail!("`{name}` prints one fixed form and takes no --format (asked: {})", format.as_str())
        }
        None => Ok(()),
    }
}

fn run_command(
    cli: Cli,
    env: &EnvSnapshot,
    streams: &Streams,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Found> {
    let name = cli.command.name();
    let format: Format = cli.format.into();
    check_format(name, format)?;
    let explicit_root = cli.root.clone();
    let root = cli.root.unwrap_or_else(|| PathBuf::from("."));
    let progress = streams.progress;
    let mut s = Showing { format, name, color: streams.color, out, err, wrote: streams.wrote };
    match cli.command {
        Command::Ingest(a) => s.show(commands::ingest::run(&root, &ingest_options(a)?, progress)?),
        Command::Fit => s.show(commands::fit::run(&root)?),
        Command::Emit(a) => {
            s.show(commands::emit::run(&root, a.check, a.force, std::time::Duration::from_secs(a.wait))?)
        }
        Command::Verify => s.show(commands::verify::run(&root)?),
        Command::Reserve(a) => {
            let q = &a.query;
            let opts = query_options(&q.model, q.op, &q.size, &q.flags, &explicit_root)?;
            let strict = q.flags.strict;
            match bytes("--max-tile-for", a.max_tile_for.as_deref())? {
                Some(budget) => s.show(commands::reserve::max_tile(&opts, env, budget, strict)?),
                None => s.show(commands::reserve::run(&opts, env, a.legacy, strict)?),
            }
        }
        Command::Plan(a) => s.show(commands::plan::run(&plan_options(&a, &explicit_root)?, env)?),
        Command::Diff(a) => {
            let (opts, fail_over) = diff_options(a, &root)?;
            s.show(commands::diff::run(&root, &opts, fail_over)?)
        }
        Command::Crossval(a) if a.simulated => s.show(commands::crossval::simulated(&root)?),
        Command::Crossval(a) if a.against.is_some() => {
            s.show(commands::crossval::against(&root, a.against.as_deref().unwrap_or_default())?)
        }
        Command::Crossval(a) => {
            let fail_under = factor("--fail-under", a.fail_under.as_deref())?;
            s.show(commands::crossval::run(&root, hold_out(a.by), fail_under, progress)?)
        }
        Command::Plot(a) => s.show(commands::plot::run(&root, &a.out.unwrap_or_else(|| root.join("plots")))?),
        Command::Report(a) if !a.observed.is_empty() => {
            let opts = crate::observed::ObservedOptions { files: a.observed, allow_simulated: a.allow_simulated };
            s.show(commands::report::observed(&root, &opts, progress)?)
        }
        Command::Report(a) => s.show(commands::report::run(&root, &report_options(a, &root), progress)?),
        Command::Schema { kind } => {
            emit(s.out, &serde_json::to_string_pretty(&commands::schema::schema(schema_kind(kind)))?);
            Ok(Found::Nothing)
        }
        Command::Completions { shell } => {
            let mut cmd = command();
            let mut bytes = Vec::new();
            clap_complete::generate(shell, &mut cmd, "vramfit", &mut bytes);
            s.out.write_all(&bytes)?;
            Ok(Found::Nothing)
        }
        Command::Man => {
            s.out.write_all(&man::man_page()?)?;
            Ok(Found::Nothing)
        }
        Command::Points(a) => s.show(commands::points::run(&root, &point_filter(a))?),
        Command::Export(a) => s.show(commands::export::run(&root, &a.host, a.out.as_deref())?),
        Command::Family { action: args::FamilyAction::Add(a) } => {
            let class =
                a.class.as_deref().and_then(|c| crate::registry::ArchClass::ALL.into_iter().find(|k| k.as_str() == c));
            let wait = std::time::Duration::from_secs(a.wait);
            s.show(commands::family::add(&root, &a.name, &a.traces, class, wait, &command_words())?)
        }
    }
}
