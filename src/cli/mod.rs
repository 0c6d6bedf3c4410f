//! Command-line parsing. Arguments become typed options here, once; the core
//! never sees clap. Exit codes are a contract: 0 success, 1 findings (a
//! failed check, a `--fail-on` verdict), 2 usage or input error.

mod args;
mod bar;
mod streams;
pub mod terminal;

use crate::commands::{self, ingest, plan, reserve};
use crate::plan::Verdict;
use crate::points::invokeai::InvokeaiContext;
use crate::points::summary::PointFilter;
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::{Choice, Query};
use crate::report::{self, Format};
use crate::vocab::Op;
// The argument types (args.rs) are this module's vocabulary.
use args::*;
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

fn ingest_options(a: IngestArgs) -> anyhow::Result<ingest::IngestOptions> {
    let from = match a.from {
        FromArg::Csv => {
            for (flag, v) in
                [("--source", &a.source), ("--conv-backend", &a.conv_backend), ("--allocator", &a.allocator)]
            {
                if v.is_some() {
                    anyhow::bail!("{flag} is for --from invokeai-benchmark; a CSV says it in its columns");
                }
            }
            ingest::InputFormat::Csv
        }
        FromArg::InvokeaiBenchmark => {
            let need = |flag: &str, v: Option<String>| {
                v.ok_or_else(|| {
                    anyhow::anyhow!("--from invokeai-benchmark needs {flag}: the format does not record it")
                })
            };
            ingest::InputFormat::InvokeaiBenchmark(InvokeaiContext {
                source: need("--source", a.source)?,
                device: a.device,
                torch: a.torch,
                conv_backend: need("--conv-backend", a.conv_backend)?,
                allocator: need("--allocator", a.allocator)?,
                os: a.os.unwrap_or_default(),
                id_prefix: a.id_prefix,
                runs: a.runs,
            })
        }
    };
    if a.files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        anyhow::bail!("`-` (standard input) can be read only once: give it once");
    }
    Ok(ingest::IngestOptions {
        files: a.files,
        from,
        check: a.check,
        allow_simulated: a.allow_simulated,
        wait: std::time::Duration::from_secs(a.wait),
    })
}

/// Runs one command line with an explicit environment and output streams,
/// and returns the exit code: the whole binary, callable in-process (the
/// fuzz tests drive thousands of command lines through it). Neither stream
/// counts as a terminal: no colour, plain tables.
pub fn run_from<I, T>(args: I, env: &EnvSnapshot, out: &mut dyn Write, err: &mut dyn Write) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    run_on(args, env, &Terminal::default(), out, err)
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
    let code = run_checked(args, env, terminal, &mut out, &mut err);
    streams::settle(code, &mut out, &mut err)
}

fn run_checked<I, T>(args: I, env: &EnvSnapshot, terminal: &Terminal, out: &mut dyn Write, err: &mut dyn Write) -> u8
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
        emit(out, &long_version());
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
    let streams = Streams { color: color_err, progress: progress.as_ref() };
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
                emit(out, &error_annotation(&message));
            }
            EXIT_INPUT
        }
    }
}

/// An input error as a GitHub annotation: on the `FILE:LINE` it starts
/// with; on the store line of the point it names; on the line a TOML error
/// gives; else on the file's first line; with no file, on none.
fn error_annotation(message: &str) -> String {
    let title = "vramfit: input error";
    let Some((file, line)) = crate::places::message_place(message) else {
        return crate::report::annotation_without_file("error", title, message);
    };
    let line = line.or_else(|| {
        let point = message.split("point '").nth(1).and_then(|r| r.split('\'').next());
        let text = || std::fs::read_to_string(&file).ok();
        match point {
            Some(id) => text().and_then(|t| crate::places::store_line(&t, id)),
            None => message
                .split("at line ")
                .nth(1)
                .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next().and_then(|n| n.parse().ok())),
        }
    });
    crate::report::annotation("error", &file, line.unwrap_or(1), title, message)
}

/// The program's version and the coefficients compiled into it: the
/// file's digest, its lines and the points they rest on, and the digest of
/// the store they were fitted from.
fn long_version() -> String {
    let text = crate::coefficients::EMBEDDED;
    let mut s = format!("vramfit {}\n", env!("CARGO_PKG_VERSION"));
    match crate::coefficients::parse(text, "embedded fits/vae.json") {
        Ok(file) => {
            let points: usize = file.lines.iter().map(|l| l.points).sum();
            let fitted = file.lines.iter().filter(|l| l.kind == crate::lines::LineKind::Fitted).count();
            s.push_str(&format!(
                "coefficients: embedded fits/vae.json {}\n  {} lines ({fitted} fitted, {} carried) on {points} \
                 points; {} keys too thin to fit\n  points digest {}\n  policy digest {}\n",
                crate::fsio::sha256_tag(text.as_bytes()),
                file.lines.len(),
                file.lines.len() - fitted,
                file.insufficient.len(),
                file.digests.points,
                file.digests.policy,
            ));
        }
        Err(e) => s.push_str(&format!("coefficients: embedded fits/vae.json does not load: {e:#}\n")),
    }
    s
}

fn emit(out: &mut dyn Write, text: &str) {
    let _ = out.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
}

/// `--strict`: exit 1, saying why, when an answer rests on estimates.
/// What a command that ran found, typed: the one place it becomes an exit
/// code is [`Found::code`] (docs/cli.md, "Exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// Nothing to report: exit 0.
    Nothing,
    /// `verify` findings (and the same from `fit`, `emit`, `report`).
    Findings,
    /// `ingest --check` or `emit --check`: the file is not up to date.
    OutOfDate,
    /// `--strict`: the answer rests on an estimate.
    Estimate,
    /// `plan --fail-on`: the verdict is that bad or worse.
    VerdictMet,
    /// `reserve --max-tile-for`: no tile fits.
    NoTileFits,
    /// `diff --fail-over`: a reservation grew more than allowed.
    Growth,
    /// `crossval --fail-under`: coverage below the floor.
    CoverageBelow,
}

impl Found {
    fn code(self) -> u8 {
        match self {
            Found::Nothing => EXIT_OK,
            Found::Findings
            | Found::OutOfDate
            | Found::Estimate
            | Found::VerdictMet
            | Found::NoTileFits
            | Found::Growth
            | Found::CoverageBelow => EXIT_FINDINGS,
        }
    }

    /// `found` when `cond`, else nothing.
    fn when(cond: bool, found: Found) -> Found {
        if cond {
            found
        } else {
            Found::Nothing
        }
    }
}

/// `--strict`: says on standard error which estimates an answer rests on.
fn strict_found(strict: bool, estimates: &[String], color: bool, err: &mut dyn Write) -> Found {
    if !strict || estimates.is_empty() {
        return Found::Nothing;
    }
    for e in estimates {
        let _ = writeln!(err, "{} {e}", prefix("strict", color));
    }
    Found::Estimate
}

/// `auto` or a value.
fn choice<T: std::str::FromStr>(text: &str) -> anyhow::Result<Choice<T>>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    Ok(match text.trim() {
        "auto" => Choice::Auto,
        other => Choice::Given(other.parse::<T>()?),
    })
}

/// `MODEL OP WxH` and the shared flags, typed.
fn query_options(
    model: &str,
    op: Op,
    size: &str,
    a: &QueryFlags,
    root: &Option<PathBuf>,
) -> anyhow::Result<reserve::QueryOptions> {
    let (width, height) = crate::units::parse_size(size)?;
    let query = Query {
        vae: model.into(),
        op,
        tile: a.tile,
        width,
        height,
        batch: a.batch,
        frames: a.frames.unwrap_or(1),
        temporal_tile: a.temporal_tile,
        dtype: a.dtype,
        loaded_dtype: a.loaded_dtype,
        fp32: a.fp32,
        conv_backend: a.backend,
        allocator: choice(&a.allocator)?,
        os: choice(&a.os)?,
        host: a.host.clone(),
    };
    Ok(reserve::QueryOptions { query, coefficients: a.coefficients.clone(), root: root.clone() })
}

/// Says on standard error when the compiled-in coefficients answer while
/// the folder's own `fits/vae.json` differs from them.
fn warn_if_local_copy_differs(source: &commands::reserve::CoefficientSource, color: bool, err: &mut dyn Write) {
    if let Some(local) = commands::reserve::local_copy_differs(source) {
        let warning = prefix("warning", color);
        let _ = writeln!(
            err,
            "{warning} answered from the compiled-in coefficients; {} here differs from them (emitted since this \
             vramfit was built?): `--root .` prices with it",
            local.display()
        );
    }
}

fn plan_options(a: &PlanArgs, root: &Option<PathBuf>) -> anyhow::Result<plan::PlanOptions> {
    let free = match a.free.trim() {
        "unknown" | "" => None,
        v => Some(crate::units::parse_bytes(v).map_err(|e| anyhow::anyhow!("--free {e}"))?),
    };
    let share = crate::units::parse_factor(&a.share).map_err(|e| anyhow::anyhow!("--share {e}"))?;
    let cap = a.cap.as_deref().map(crate::units::parse_bytes).transpose().map_err(|e| anyhow::anyhow!("--cap {e}"))?;
    let w = &a.workload;
    let work = if w[0] == "canvas" {
        if w.len() != 2 {
            anyhow::bail!("usage: vramfit plan canvas WxH --frames N [--upscale U] [--channels C] [--transient M]");
        }
        let f = &a.flags;
        let vae_only = [
            ("--dtype", f.dtype.is_some()),
            ("--loaded-dtype", f.loaded_dtype.is_some()),
            ("--fp32", f.fp32.is_some()),
            ("--tile", f.tile != 0),
            ("--temporal-tile", f.temporal_tile.is_some()),
            ("--host", f.host.is_some()),
            ("--backend", f.backend != crate::vocab::ConvBackend::Cudnn),
            ("--allocator", f.allocator.trim() != "auto"),
            ("--os", f.os.trim() != "auto"),
            ("--coefficients", f.coefficients.is_some()),
            ("--batch", f.batch != 1),
            ("--strict", f.strict),
        ];
        let given: Vec<&str> = vae_only.iter().filter(|(_, on)| *on).map(|(name, _)| *name).collect();
        if !given.is_empty() {
            anyhow::bail!(
                "{} price a VAE and mean nothing to `plan canvas` (frames of uint8: --frames, --upscale, --channels, \
                 --transient)",
                given.join(", ")
            );
        }
        let transient = a
            .transient
            .as_deref()
            .map(|t| crate::units::parse_factor(t).map_err(|e| anyhow::anyhow!("--transient {e}")))
            .transpose()?;
        plan::Work::Canvas {
            size: crate::units::parse_size(&w[1])?,
            frames: f.frames,
            upscale: a.upscale,
            channels: a.channels,
            transient,
        }
    } else {
        if w.len() != 3 {
            anyhow::bail!("usage: vramfit plan MODEL OP WxH [--batch N …] (or plan canvas WxH …)");
        }
        if a.transient.is_some() || a.upscale != 1 || a.channels != 3 {
            anyhow::bail!(
                "--upscale, --channels and --transient are for `plan canvas`; a VAE plan counts items with --batch \
                 (and a video VAE's clip with --frames)"
            );
        }
        plan::Work::Vae(query_options(&w[0], w[1].parse()?, &w[2], &a.flags, root)?)
    };
    Ok(plan::PlanOptions { work, free, share, cap })
}

/// `vramfit man`: one page that documents every subcommand and its
/// options (no `vramfit-SUBCOMMAND(1)` page is referred to: none is
/// installed), each subcommand's examples after them.
fn man_page() -> anyhow::Result<Vec<u8>> {
    let cmd = command();
    let page = clap_mangen::Man::new(cmd.clone());
    let mut bytes = Vec::new();
    page.render_title(&mut bytes)?;
    page.render_name_section(&mut bytes)?;
    page.render_synopsis_section(&mut bytes)?;
    page.render_description_section(&mut bytes)?;
    page.render_options_section(&mut bytes)?;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("vramfit {}", sub.get_name());
        bytes.extend_from_slice(format!(".SH \"{}\"\n", name.to_uppercase()).as_bytes());
        let one = clap_mangen::Man::new(sub.clone().name(name).bin_name(format!("vramfit {}", sub.get_name())));
        let mut part = Vec::new();
        one.render_description_section(&mut part)?;
        one.render_synopsis_section(&mut part)?;
        one.render_options_section(&mut part)?;
        if sub.get_after_help().is_some() {
            one.render_extra_section(&mut part)?;
        }
        // Each subcommand's sections become subsections of its own.
        let part = String::from_utf8_lossy(&part)
            .replace(".SH DESCRIPTION", ".SS Description")
            .replace(".SH SYNOPSIS", ".SS Usage")
            .replace(".SH OPTIONS", ".SS Options")
            .replace(".SH EXTRA", ".SS Examples");
        bytes.extend_from_slice(part.as_bytes());
    }
    let mut tail = Vec::new();
    page.render_extra_section(&mut tail)?;
    page.render_version_section(&mut tail)?;
    bytes.extend_from_slice(&tail);
    Ok(bytes)
}

/// What a command may do on standard error beside its messages.
struct Streams<'a> {
    /// Colour the prefixes of its messages.
    color: bool,
    /// Where long work reports how far it has got.
    progress: &'a dyn crate::progress::Progress,
}

fn run(cli: Cli, env: &EnvSnapshot, streams: &Streams, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<u8> {
    run_command(cli, env, streams, out, err).map(Found::code)
}

fn run_command(
    cli: Cli,
    env: &EnvSnapshot,
    streams: &Streams,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Found> {
    let color = streams.color;
    let name = cli.command.name();
    let format: Format = cli.format.into();
    if let Some(formats) = formats_of(name) {
        if !formats.contains(&format) {
            anyhow::bail!(
                "`{name}` has no {} output (it prints {})",
                format.as_str(),
                format_names(formats).join(", ")
            );
        }
    } else if format != Format::Table {
        // `schema`, `completions` and `man` print one fixed form.
        anyhow::bail!("`{name}` prints one fixed form and takes no --format (asked: {})", format.as_str());
    }
    let explicit_root = cli.root.clone();
    let root = cli.root.unwrap_or_else(|| PathBuf::from("."));
    match cli.command {
        Command::Ingest(a) => {
            let opts = ingest_options(a)?;
            let r = commands::ingest::run(&root, &opts, streams.progress)?;
            emit(out, &report::render(&r, format, "ingest")?);
            Ok(Found::when(opts.check && !r.up_to_date, Found::OutOfDate))
        }
        Command::Fit => {
            let r = commands::fit::run(&root)?;
            emit(out, &report::render(&r, format, "fit")?);
            let found = Found::when(!r.findings.is_empty(), Found::Findings);
            let items = r.lines.iter().map(|l| l.points.len()).sum::<usize>() + r.findings.len();
            crate::par::drop_later(r, items);
            Ok(found)
        }
        Command::Emit(a) => {
            let r = commands::emit::run(&root, a.check, a.force, std::time::Duration::from_secs(a.wait))?;
            emit(out, &report::render(&r, format, "emit")?);
            let found = match (a.check && r.out_of_date(), r.findings.is_empty()) {
                (_, false) => Found::Findings,
                (true, true) => Found::OutOfDate,
                (false, true) => Found::Nothing,
            };
            let items = r.findings.len();
            crate::par::drop_later(r, items);
            Ok(found)
        }
        Command::Verify => {
            let r = commands::verify::run(&root)?;
            emit(out, &report::render(&r, format, "verify")?);
            let found = Found::when(!r.ok, Found::Findings);
            let items = r.findings.len();
            crate::par::drop_later(r, items);
            Ok(found)
        }
        Command::Reserve(a) => {
            let q = &a.query;
            let opts = query_options(&q.model, q.op, &q.size, &q.flags, &explicit_root)?;
            warn_if_local_copy_differs(&opts.source(), color, err);
            if let Some(budget) = &a.max_tile_for {
                let budget = crate::units::parse_bytes(budget).map_err(|e| anyhow::anyhow!("--max-tile-for {e}"))?;
                let r = commands::reserve::max_tile(&opts, env, budget)?;
                emit(out, &report::render(&r, format, "reserve")?);
                let estimates = r.search.chosen.as_ref().map(|p| p.estimates()).unwrap_or_default();
                let strict = strict_found(a.query.flags.strict, &estimates, color, err);
                return Ok(if r.search.chosen.is_none() { Found::NoTileFits } else { strict });
            }
            let r = commands::reserve::run(&opts, env, a.legacy)?;
            emit(out, &report::render(&r, format, "reserve")?);
            Ok(strict_found(a.query.flags.strict, &r.price.estimates(), color, err))
        }
        Command::Plan(a) => {
            let opts = plan_options(&a, &explicit_root)?;
            if let commands::plan::Work::Vae(q) = &opts.work {
                warn_if_local_copy_differs(&q.source(), color, err);
            }
            let p = commands::plan::run(&opts, env)?;
            if p.any_host() {
                let warning = prefix("warning", color);
                let _ = writeln!(err, "{warning} part of this work cannot run on the device: {}", p.reasons.join("; "));
            }
            emit(out, &report::render(&p, format, "plan")?);
            let fail = a.fail_on.map(|f| match f {
                FailOnArg::Chunked => Verdict::Chunked,
                FailOnArg::Tiled => Verdict::Tiled,
                FailOnArg::Host => Verdict::Host,
            });
            let strict = strict_found(a.flags.strict, &p.estimates(), color, err);
            Ok(if fail.is_some_and(|f| p.worst() >= f) { Found::VerdictMet } else { strict })
        }
        Command::Diff(a) => {
            let sizes = if a.sizes.is_empty() {
                crate::diff::DEFAULT_SIZES.to_vec()
            } else {
                a.sizes.iter().map(|s| crate::units::parse_size(s)).collect::<anyhow::Result<_>>()?
            };
            let fail_over = a
                .fail_over
                .as_deref()
                .map(|p| crate::units::parse_factor(p).map_err(|e| anyhow::anyhow!("--fail-over {e}")))
                .transpose()?;
            let opts = commands::diff::DiffOptions {
                before: commands::diff::SideSpec::parse(a.before.as_deref().unwrap_or("git:HEAD")),
                after: match &a.after {
                    Some(s) => commands::diff::SideSpec::parse(s),
                    None => commands::diff::SideSpec::File(crate::workspace::Workspace::new(&root).coefficients_path()),
                },
                grid: crate::diff::Grid { sizes, batch: a.batch, keys: a.keys, all: a.all },
            };
            let r = commands::diff::run(&root, &opts)?;
            emit(out, &report::render(&r, format, "diff")?);
            Ok(Found::when(fail_over.is_some_and(|p| r.grows_more_than(p)), Found::Growth))
        }
        Command::Crossval(a) => {
            let by = match a.by {
                ByArg::Size => crate::crossval::HoldOut::Size,
                ByArg::Source => crate::crossval::HoldOut::Source,
                ByArg::Tile => crate::crossval::HoldOut::Tile,
            };
            let fail_under = a
                .fail_under
                .as_deref()
                .map(|p| crate::units::parse_factor(p).map_err(|e| anyhow::anyhow!("--fail-under {e}")))
                .transpose()?;
            let r = commands::crossval::run(&root, by, streams.progress)?;
            emit(out, &report::render(&r, format, "crossval")?);
            Ok(Found::when(fail_under.is_some_and(|p| r.below(p)), Found::CoverageBelow))
        }
        Command::Plot(a) => {
            let dir = a.out.unwrap_or_else(|| root.join("plots"));
            let r = report::plot::write_plots(&dir, commands::plot::run(&root)?)?;
            emit(out, &report::render(&r, format, "plot")?);
            Ok(Found::Nothing)
        }
        Command::Report(a) => {
            let ws = crate::workspace::Workspace::new(&root);
            let diff_opts = commands::diff::DiffOptions {
                before: commands::diff::SideSpec::parse(&a.before),
                after: commands::diff::SideSpec::File(ws.coefficients_path()),
                grid: crate::diff::Grid { all: a.all, ..crate::diff::Grid::default() },
            };
            let bundle = report::bundle::Bundle {
                fit: commands::fit::run(&root)?,
                verify: commands::verify::run(&root)?,
                diff: commands::diff::run(&root, &diff_opts).map_err(|e| format!("{e:#}")),
                crossval: commands::crossval::run(&root, crate::crossval::HoldOut::Size, streams.progress)?,
                plots: commands::plot::run(&root)?,
            };
            let dir = a.out.unwrap_or_else(|| root.join("vramfit-report"));
            let r = report::bundle::write(&dir, bundle, a.all)?;
            emit(out, &report::render(&r, format, "report")?);
            Ok(Found::when(!r.verify_ok, Found::Findings))
        }
        Command::Schema { kind } => {
            use commands::schema::SchemaKind;
            let kind = match kind {
                SchemaArg::Coefficients => SchemaKind::Coefficients,
                SchemaArg::Points => SchemaKind::Points,
                SchemaArg::Policy => SchemaKind::Policy,
                SchemaArg::Reserve => SchemaKind::Reserve,
                SchemaArg::Plan => SchemaKind::Plan,
            };
            emit(out, &serde_json::to_string_pretty(&commands::schema::schema(kind))?);
            Ok(Found::Nothing)
        }
        Command::Completions { shell } => {
            let mut cmd = command();
            let mut bytes = Vec::new();
            clap_complete::generate(shell, &mut cmd, "vramfit", &mut bytes);
            out.write_all(&bytes)?;
            Ok(Found::Nothing)
        }
        Command::Man => {
            out.write_all(&man_page()?)?;
            Ok(Found::Nothing)
        }
        Command::Points(a) => {
            let f = PointFilter {
                vae: a.vae,
                op: a.op,
                tile: a.tile,
                conv_backend: a.backend,
                allocator: a.allocator,
                os: a.os,
                dtype: a.dtype,
                id: a.id,
                line: a.line,
            };
            let r = commands::points::run(&root, &f)?;
            emit(out, &report::render(&r, format, "points")?);
            Ok(Found::Nothing)
        }
    }
}
