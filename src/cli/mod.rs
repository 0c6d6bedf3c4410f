//! Command-line parsing. Arguments become typed options here, once; the core
//! never sees clap. Exit codes are a contract: 0 success, 1 findings (a
//! failed check, a `--fail-on` verdict), 2 usage or input error.

mod bar;
pub mod terminal;

use crate::commands::{self, ingest, plan, reserve};
use crate::plan::Verdict;
use crate::points::invokeai::InvokeaiContext;
use crate::points::summary::PointFilter;
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::{Choice, Query};
use crate::report::{self, Format};
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
use clap::{Args, Parser, Subcommand, ValueEnum};
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

#[derive(Parser, Debug)]
#[command(
    name = "vramfit",
    version,
    about = "Fit, ship and audit the VRAM a diffusion app reserves before a VAE decode or encode",
    after_help = "Examples:\n  vramfit ingest measurements/raw/*.csv\n  vramfit fit\n  vramfit emit --check\n  vramfit verify\n  vramfit reserve sdxl decode 1024x1024 --dtype fp16\n  vramfit plan sdxl decode 1024x1024 --batch 8 --dtype fp16 --free 12GiB\n  vramfit points --vae sdxl --op decode\n\n\
Exit codes: 0 success, 1 findings, 2 usage or input error."
)]
struct Cli {
    /// Folder holding measurements/ and fits/ [default: the current folder;
    /// `reserve` and `plan` use the compiled-in coefficients unless given].
    #[arg(long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Output format (each subcommand below lists the ones it prints).
    #[arg(long, global = true, value_enum, default_value_t = FormatArg::Table)]
    format: FormatArg,
    /// Colour errors and warnings: auto (on a terminal; NO_COLOR and CLICOLOR_FORCE are honoured), always, never.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    color: ColorChoice,
    #[command(subcommand)]
    command: Command,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum FormatArg {
    Table,
    Json,
    Github,
    Markdown,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Read measurement files into measurements/vae.json.
    #[command(
        after_help = "Examples:\n  vramfit ingest measurements/raw/*.csv\n  vramfit ingest --check measurements/raw/*.csv\n  \
vramfit ingest --from invokeai-benchmark --source URL --conv-backend cudnn --allocator native --os linux \\\n      \
--device 'NVIDIA GeForce RTX 4090' --id-prefix i7785061 all_benchmark_results.json"
    )]
    Ingest(IngestArgs),
    /// Fit every line of the included points and show it (writes nothing).
    #[command(
        after_help = "Examples:\n  vramfit fit\n  vramfit fit --format json | jq '.lines[] | select(.vae == \"sd\")'"
    )]
    Fit,
    /// Write fits/vae.json from the points and the policy; show what changed.
    #[command(
        after_help = "Examples:\n  vramfit emit\n  vramfit emit --check    # exit 1 if fits/vae.json is not current"
    )]
    Emit(EmitArgs),
    /// Prove the shipped coefficients reproduce from the points and every rule holds.
    #[command(
        after_help = "Examples:\n  vramfit verify\n  vramfit verify --format github   # ::error annotations for CI\n  vramfit verify --format json\n\n\
Exit codes: 0 no findings, 1 findings, 2 usage or input error."
    )]
    Verify,
    /// What would this decode or encode reserve? Priced from the shipped coefficients.
    #[command(after_help = "Examples:\n  vramfit reserve sdxl decode 1024x1024 --dtype fp16\n  \
vramfit reserve sdxl decode 1024x1024 --fp32 false --loaded-dtype fp32\n  \
vramfit reserve sdxl decode 1024x1024 --dtype fp32 --backend miopen --allocator auto --os windows\n  \
vramfit reserve flux1 decode 1024x1024 --dtype bf16 --legacy\n  \
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync vramfit reserve sd15 decode 512x512 --dtype fp32 --format json")]
    Reserve(ReserveArgs),
    /// Does the work fit in the free memory, and how should it run? (full / chunked / tiled / host)
    #[command(after_help = "Examples:\n  vramfit plan sdxl decode 1024x1024 --batch 16 --dtype fp16 --free 12GiB\n  \
vramfit plan sdxl decode 2048x2048 --dtype fp32 --free 8GiB --share 0.5 --fail-on host\n  \
vramfit plan canvas 1280x720 --frames 240 --upscale 4 --free 20GiB --share 0.25 --cap 1GiB --transient 9\n\n\
Exit codes: 0 planned, 1 the verdict meets --fail-on, 2 usage or input error.")]
    Plan(PlanArgs),
    /// Reservations before and after a change of coefficients, per line key and size.
    #[command(after_help = "Sides: a coefficients file, `embedded` (compiled in), `legacy` (the v1 estimator), \
or `git:REV` (fits/vae.json at a revision).\n\nExamples:\n  vramfit diff                      # git:HEAD against the working tree\n  \
vramfit diff legacy               # the v1 estimator against fits/vae.json\n  \
vramfit diff git:HEAD~3 --sizes 1024x1024,2048x2048 --keys miopen --format markdown\n  \
vramfit diff --fail-over 10       # exit 1 if any reservation grows by more than 10%\n\n\
Exit codes: 0 done, 1 a reservation grew by more than --fail-over, 2 usage or input error.")]
    Diff(DiffArgs),
    /// Do the lines generalise? Leave one size (or source) out, refit, price the held-out points.
    #[command(after_help = "Examples:\n  vramfit crossval\n  vramfit crossval --by source\n  \
vramfit crossval --fail-under 95 --format markdown\n\n\
Exit codes: 0 done, 1 coverage below --fail-under, 2 usage or input error.")]
    Crossval(CrossvalArgs),
    /// One SVG per line (points, envelope, shipped line, band, legacy) and an index.html.
    #[command(
        after_help = "Examples:\n  vramfit plot                 # writes plots/*.svg and plots/index.html\n  vramfit plot --out /tmp/p"
    )]
    Plot(PlotArgs),
    /// Write report.md (lines, verify, diff, crossval, plot links) and the plots, for a pull request.
    #[command(
        after_help = "Examples:\n  vramfit report                          # vramfit-report/report.md against git:HEAD\n  \
vramfit report --out /tmp/r --before legacy\n\n\
Exit codes: 0 written and verify green, 1 written but verify has findings, 2 usage or input error."
    )]
    Report(ReportArgs),
    /// Print the JSON Schema of a file vramfit reads or writes, or of an answer it prints.
    #[command(after_help = "Kinds: coefficients (fits/vae.json), points (measurements/vae.json), \
policy (fits/policy.toml as parsed TOML), reserve and plan (their --format json answers).\n\
The same schemas are committed under schemas/.\n\nExamples:\n  vramfit schema coefficients > vae.schema.json")]
    Schema {
        #[arg(value_enum)]
        kind: SchemaArg,
    },
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    #[command(
        after_help = "Install:\n  vramfit completions bash > ~/.local/share/bash-completion/completions/vramfit\n  \
vramfit completions zsh > ~/.zfunc/_vramfit          # with fpath+=(~/.zfunc) before compinit\n  \
vramfit completions fish > ~/.config/fish/completions/vramfit.fish\n  \
vramfit completions powershell >> $PROFILE"
    )]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff).
    #[command(after_help = "Install:\n  vramfit man > ~/.local/share/man/man1/vramfit.1\n  man vramfit")]
    Man,
    /// List stored points, filtered by any key field.
    #[command(
        after_help = "Examples:\n  vramfit points --vae sdxl --op decode --dtype fp16\n  vramfit points --allocator cudaMallocAsync --format json\n  vramfit points --line sd/decode/0/cudnn/native/any/fp16"
    )]
    Points(PointsArgs),
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum SchemaArg {
    Coefficients,
    Points,
    Policy,
    Reserve,
    Plan,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum FromArg {
    /// vramfit's measurement CSV (columns: see the README).
    Csv,
    /// InvokeAI's vae_benchmarks/all_benchmark_results.json.
    InvokeaiBenchmark,
}

#[derive(Args, Debug)]
struct IngestArgs {
    /// Measurement files (`-` reads standard input).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Do not write: exit 1 when the store is not up to date with FILEs.
    #[arg(long)]
    check: bool,
    /// Input format.
    #[arg(long, value_enum, default_value_t = FromArg::Csv)]
    from: FromArg,
    /// (invokeai-benchmark) Where the figures come from.
    #[arg(long)]
    source: Option<String>,
    /// (invokeai-benchmark) GPU name.
    #[arg(long)]
    device: Option<String>,
    /// (invokeai-benchmark) torch version.
    #[arg(long)]
    torch: Option<String>,
    /// (invokeai-benchmark) cudnn, miopen, mps, xpu or cpu.
    #[arg(long)]
    conv_backend: Option<String>,
    /// (invokeai-benchmark) native, cudaMallocAsync or expandable_segments.
    #[arg(long)]
    allocator: Option<String>,
    /// (invokeai-benchmark) linux, windows or macos (empty = any).
    #[arg(long)]
    os: Option<String>,
    /// (invokeai-benchmark) Prefix of the generated ids.
    #[arg(long, default_value = "invokeai")]
    id_prefix: String,
    /// (invokeai-benchmark) Runs behind each average.
    #[arg(long)]
    runs: Option<u32>,
}

/// What to price: `MODEL OP WxH`.
#[derive(Args, Debug, Clone)]
struct QueryArgs {
    /// Model or family (sdxl, sd15, sd, flux1, …).
    #[arg(value_name = "MODEL")]
    model: String,
    /// decode or encode.
    #[arg(value_name = "OP")]
    op: Op,
    /// Output size (decode) or input size (encode), WIDTHxHEIGHT.
    #[arg(value_name = "WxH")]
    size: String,
    #[command(flatten)]
    flags: QueryFlags,
}

/// The flags of a query, shared by `reserve` and `plan`.
#[derive(Args, Debug, Clone)]
struct QueryFlags {
    /// Images in the batch (for `plan`: the number of items).
    #[arg(long, default_value_t = 1)]
    batch: u64,
    /// Tile edge in pixels (0 = untiled).
    #[arg(long, default_value_t = 0)]
    tile: u32,
    /// The dtype the VAE runs in (fp16, bf16, fp32, or PyTorch names).
    #[arg(long)]
    dtype: Option<Dtype>,
    /// The dtype the weights are loaded in (default: the run dtype).
    #[arg(long)]
    loaded_dtype: Option<Dtype>,
    /// SD nodes' switch: false runs fp16 whatever the loaded dtype, true runs fp32.
    #[arg(long, value_name = "true|false", action = clap::ArgAction::Set)]
    fp32: Option<bool>,
    /// cudnn (CUDA), miopen (ROCm), mps, xpu or cpu.
    #[arg(long = "backend", alias = "conv-backend", default_value = "cudnn")]
    backend: ConvBackend,
    /// auto (read PYTORCH_*_ALLOC_CONF as PyTorch does), native, cudaMallocAsync, expandable_segments.
    #[arg(long, default_value = "auto")]
    allocator: String,
    /// auto (the host), linux, windows or macos.
    #[arg(long, default_value = "auto")]
    os: String,
    /// A coefficients file to price with (default: fits/vae.json under --root, else the compiled-in copy).
    #[arg(long, value_name = "FILE")]
    coefficients: Option<PathBuf>,
    /// Exit 1 when the answer rests on an estimate: the legacy floor, the
    /// unmeasured rule, or a size outside the line's measured range.
    #[arg(long)]
    strict: bool,
}

#[derive(Args, Debug)]
struct ReserveArgs {
    #[command(flatten)]
    query: QueryArgs,
    /// Price with the previous (v1) estimator instead.
    #[arg(long, conflicts_with = "strict")]
    legacy: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum FailOnArg {
    Chunked,
    Tiled,
    Host,
}

#[derive(Args, Debug)]
struct PlanArgs {
    /// `MODEL OP WxH` (a VAE query whose --batch is the item count) or `canvas WxH`.
    #[arg(value_name = "WORKLOAD", num_args = 2..=3, required = true)]
    workload: Vec<String>,
    #[command(flatten)]
    flags: QueryFlags,
    /// Free device memory (bytes, KiB/MiB/GiB, K/M/G) or `unknown`.
    #[arg(long, default_value = "unknown", allow_hyphen_values = true)]
    free: String,
    /// Share of the free memory the work may use, 0 < F ≤ 1.
    #[arg(long, default_value = "1", allow_hyphen_values = true)]
    share: String,
    /// Upper bound on the budget (bytes, KiB/MiB/GiB, K/M/G).
    #[arg(long, allow_hyphen_values = true)]
    cap: Option<String>,
    /// (canvas) Frames in the clip.
    #[arg(long)]
    frames: Option<u64>,
    /// (canvas) Upscale factor of each frame.
    #[arg(long, default_value_t = 1)]
    upscale: u64,
    /// (canvas) Channels per pixel (uint8).
    #[arg(long, default_value_t = 3)]
    channels: u64,
    /// (canvas) Peak multiple of a step over its uint8 input, e.g. 9 for a float convert-out.
    #[arg(long)]
    transient: Option<String>,
    /// Exit 1 when the verdict is this or worse (full < chunked < tiled < host).
    #[arg(long, value_enum)]
    fail_on: Option<FailOnArg>,
}

#[derive(Args, Debug)]
struct DiffArgs {
    /// The side before [default: git:HEAD].
    #[arg(value_name = "BEFORE")]
    before: Option<String>,
    /// The side after [default: fits/vae.json under --root].
    #[arg(value_name = "AFTER")]
    after: Option<String>,
    /// Sizes, comma-separated WxH [default: 512x512,768x768,1024x1024,1536x1536,2048x2048].
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<String>,
    /// Images per query.
    #[arg(long, default_value_t = 1)]
    batch: u64,
    /// Only keys containing one of these substrings (comma-separated).
    #[arg(long, value_delimiter = ',')]
    keys: Vec<String>,
    /// Exit 1 when any reservation grows by more than this many percent.
    #[arg(long, value_name = "PCT")]
    fail_over: Option<String>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ByArg {
    /// Leave every point of one measured size out.
    Size,
    /// Leave every point of one source out.
    Source,
}

#[derive(Args, Debug)]
struct CrossvalArgs {
    /// What each fold leaves out.
    #[arg(long, value_enum, default_value_t = ByArg::Size)]
    by: ByArg,
    /// Exit 1 when fewer than this many percent of the held-out points are covered.
    #[arg(long, value_name = "PCT")]
    fail_under: Option<String>,
}

#[derive(Args, Debug)]
struct PlotArgs {
    /// Folder for the SVGs and index.html [default: plots under --root].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct ReportArgs {
    /// Folder for report.md and plots/ [default: vramfit-report under --root].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// The side to diff against: a coefficients file, `embedded`, `legacy` or `git:REV`.
    #[arg(long, value_name = "REF", default_value = "git:HEAD")]
    before: String,
}

#[derive(Args, Debug)]
struct EmitArgs {
    /// Do not write: exit 1 if the shipped file would change.
    #[arg(long)]
    check: bool,
    /// Write even when verify would report findings on the new file (still exits 1).
    #[arg(long, conflicts_with = "check")]
    force: bool,
}

#[derive(Args, Debug)]
struct PointsArgs {
    /// Family or model name (sd, sdxl, flux1, …).
    #[arg(long)]
    vae: Option<String>,
    #[arg(long)]
    op: Option<Op>,
    #[arg(long)]
    tile: Option<u32>,
    /// cudnn, miopen, mps, xpu, cpu.
    #[arg(long = "backend", alias = "conv-backend")]
    backend: Option<ConvBackend>,
    /// native, cudaMallocAsync, expandable_segments.
    #[arg(long)]
    allocator: Option<Allocator>,
    /// linux, windows, macos, any.
    #[arg(long)]
    os: Option<Os>,
    /// fp16, bf16, fp32 (or PyTorch names).
    #[arg(long)]
    dtype: Option<Dtype>,
    /// Substring of the point id.
    #[arg(long)]
    id: Option<String>,
    /// One line, `vae/op/tile/backend/allocator/os/dtype` (as `fit` names it): its points exactly as
    /// the fit groups them (the OS folds into `any` off OS-specific platforms; excluded points are named apart).
    #[arg(long, value_name = "KEY", conflicts_with_all = ["vae", "op", "tile", "backend", "allocator", "os", "dtype"])]
    line: Option<String>,
}

/// The formats each subcommand prints. Any other is refused before the
/// command runs (exit 2), and the top-level help lists these per
/// subcommand; `schema`, `completions` and `man` print one fixed form.
const FORMATS: &[(&str, &[FormatArg])] = {
    use FormatArg::{Github, Json, Markdown, Table};
    &[
        ("ingest", &[Table, Json, Github]),
        ("fit", &[Table, Json, Markdown]),
        ("emit", &[Table, Json, Markdown, Github]),
        ("verify", &[Table, Json, Github, Markdown]),
        ("reserve", &[Table, Json]),
        ("plan", &[Table, Json]),
        ("diff", &[Table, Json, Markdown]),
        ("crossval", &[Table, Json, Markdown]),
        ("plot", &[Table, Json]),
        ("report", &[Table, Json]),
        ("points", &[Table, Json]),
    ]
};

fn formats_of(command: &str) -> Option<&'static [FormatArg]> {
    FORMATS.iter().find(|(name, _)| *name == command).map(|(_, f)| *f)
}

fn format_names(formats: &[FormatArg]) -> Vec<String> {
    formats.iter().filter_map(|f| f.to_possible_value()).map(|v| v.get_name().to_string()).collect()
}

/// The command line definition, with each subcommand's formats in its
/// one-line description (what the top-level help lists).
fn command() -> clap::Command {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    for (name, formats) in FORMATS {
        cmd = cmd.mut_subcommand(*name, |c| {
            let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
            c.about(format!("{about} [--format {}]", format_names(formats).join("|")))
        });
    }
    cmd
}

impl Command {
    /// The subcommand's name on the command line.
    fn name(&self) -> &'static str {
        match self {
            Command::Ingest(_) => "ingest",
            Command::Fit => "fit",
            Command::Emit(_) => "emit",
            Command::Verify => "verify",
            Command::Reserve(_) => "reserve",
            Command::Plan(_) => "plan",
            Command::Diff(_) => "diff",
            Command::Crossval(_) => "crossval",
            Command::Plot(_) => "plot",
            Command::Report(_) => "report",
            Command::Points(_) => "points",
            Command::Schema { .. } => "schema",
            Command::Completions { .. } => "completions",
            Command::Man => "man",
        }
    }
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Table => Format::Table,
            FormatArg::Json => Format::Json,
            FormatArg::Github => Format::Github,
            FormatArg::Markdown => Format::Markdown,
        }
    }
}

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
    Ok(ingest::IngestOptions { files: a.files, from, check: a.check })
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
    match crate::report::with_style(terminal.table_style(), || run(cli, env, &streams, out, err)) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(err, "{} {e:#}", prefix("error", color_err));
            EXIT_INPUT
        }
    }
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
fn strict_code(strict: bool, estimates: &[String], color: bool, err: &mut dyn Write) -> u8 {
    if !strict || estimates.is_empty() {
        return EXIT_OK;
    }
    for e in estimates {
        let _ = writeln!(err, "{} {e}", prefix("strict", color));
    }
    EXIT_FINDINGS
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
        dtype: a.dtype,
        loaded_dtype: a.loaded_dtype,
        fp32: a.fp32,
        conv_backend: a.backend,
        allocator: choice(&a.allocator)?,
        os: choice(&a.os)?,
    };
    Ok(reserve::QueryOptions { query, coefficients: a.coefficients.clone(), root: root.clone() })
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
        let transient = a
            .transient
            .as_deref()
            .map(|t| crate::units::parse_factor(t).map_err(|e| anyhow::anyhow!("--transient {e}")))
            .transpose()?;
        plan::Work::Canvas {
            size: crate::units::parse_size(&w[1])?,
            frames: a.frames,
            upscale: a.upscale,
            channels: a.channels,
            transient,
        }
    } else {
        if w.len() != 3 {
            anyhow::bail!("usage: vramfit plan MODEL OP WxH [--batch N …] (or plan canvas WxH …)");
        }
        if a.frames.is_some() || a.transient.is_some() {
            anyhow::bail!("--frames and --transient are for `plan canvas`; a VAE plan counts items with --batch");
        }
        plan::Work::Vae(query_options(&w[0], w[1].parse()?, &w[2], &a.flags, root)?)
    };
    Ok(plan::PlanOptions { work, free, share, cap })
}

/// What a command may do on standard error beside its messages.
struct Streams<'a> {
    /// Colour the prefixes of its messages.
    color: bool,
    /// Where long work reports how far it has got.
    progress: &'a dyn crate::progress::Progress,
}

fn run(cli: Cli, env: &EnvSnapshot, streams: &Streams, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<u8> {
    let color = streams.color;
    let name = cli.command.name();
    if let Some(formats) = formats_of(name) {
        if !formats.contains(&cli.format) {
            let asked = format_names(&[cli.format]).join("");
            anyhow::bail!("`{name}` has no {asked} output (it prints {})", format_names(formats).join(", "));
        }
    }
    let format: Format = cli.format.into();
    let explicit_root = cli.root.clone();
    let root = cli.root.unwrap_or_else(|| PathBuf::from("."));
    match cli.command {
        Command::Ingest(a) => {
            let opts = ingest_options(a)?;
            let r = commands::ingest::run(&root, &opts, streams.progress)?;
            emit(out, &report::render(&r, format, "ingest")?);
            Ok(if opts.check && !r.up_to_date { EXIT_FINDINGS } else { EXIT_OK })
        }
        Command::Fit => {
            let r = commands::fit::run(&root)?;
            emit(out, &report::render(&r, format, "fit")?);
            Ok(if r.findings.is_empty() { EXIT_OK } else { EXIT_FINDINGS })
        }
        Command::Emit(a) => {
            let r = commands::emit::run(&root, a.check, a.force)?;
            emit(out, &report::render(&r, format, "emit")?);
            Ok(if (a.check && r.changed) || !r.findings.is_empty() { EXIT_FINDINGS } else { EXIT_OK })
        }
        Command::Verify => {
            let r = commands::verify::run(&root)?;
            emit(out, &report::render(&r, format, "verify")?);
            Ok(if r.ok { EXIT_OK } else { EXIT_FINDINGS })
        }
        Command::Reserve(a) => {
            let q = &a.query;
            let opts = query_options(&q.model, q.op, &q.size, &q.flags, &explicit_root)?;
            let r = commands::reserve::run(&opts, env, a.legacy)?;
            emit(out, &report::render(&r, format, "reserve")?);
            Ok(strict_code(a.query.flags.strict, &r.price.estimates(), color, err))
        }
        Command::Plan(a) => {
            let p = commands::plan::run(&plan_options(&a, &explicit_root)?, env)?;
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
            let strict = strict_code(a.flags.strict, &p.estimates(), color, err);
            Ok(if fail.is_some_and(|f| p.worst() >= f) { EXIT_FINDINGS } else { strict })
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
                grid: crate::diff::Grid { sizes, batch: a.batch, keys: a.keys },
            };
            let r = commands::diff::run(&root, &opts)?;
            emit(out, &report::render(&r, format, "diff")?);
            Ok(if fail_over.is_some_and(|p| r.grows_more_than(p)) { EXIT_FINDINGS } else { EXIT_OK })
        }
        Command::Crossval(a) => {
            let by = match a.by {
                ByArg::Size => crate::crossval::HoldOut::Size,
                ByArg::Source => crate::crossval::HoldOut::Source,
            };
            let fail_under = a
                .fail_under
                .as_deref()
                .map(|p| crate::units::parse_factor(p).map_err(|e| anyhow::anyhow!("--fail-under {e}")))
                .transpose()?;
            let r = commands::crossval::run(&root, by, streams.progress)?;
            emit(out, &report::render(&r, format, "crossval")?);
            Ok(if fail_under.is_some_and(|p| r.below(p)) { EXIT_FINDINGS } else { EXIT_OK })
        }
        Command::Plot(a) => {
            let dir = a.out.unwrap_or_else(|| root.join("plots"));
            let r = report::plot::write_plots(&dir, commands::plot::run(&root)?)?;
            emit(out, &report::render(&r, format, "plot")?);
            Ok(EXIT_OK)
        }
        Command::Report(a) => {
            let ws = crate::workspace::Workspace::new(&root);
            let diff_opts = commands::diff::DiffOptions {
                before: commands::diff::SideSpec::parse(&a.before),
                after: commands::diff::SideSpec::File(ws.coefficients_path()),
                grid: crate::diff::Grid::default(),
            };
            let bundle = report::bundle::Bundle {
                fit: commands::fit::run(&root)?,
                verify: commands::verify::run(&root)?,
                diff: commands::diff::run(&root, &diff_opts).map_err(|e| format!("{e:#}")),
                crossval: commands::crossval::run(&root, crate::crossval::HoldOut::Size, streams.progress)?,
                plots: commands::plot::run(&root)?,
            };
            let dir = a.out.unwrap_or_else(|| root.join("vramfit-report"));
            let r = report::bundle::write(&dir, bundle)?;
            emit(out, &report::render(&r, format, "report")?);
            Ok(if r.verify_ok { EXIT_OK } else { EXIT_FINDINGS })
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
            Ok(EXIT_OK)
        }
        Command::Completions { shell } => {
            let mut cmd = command();
            let mut bytes = Vec::new();
            clap_complete::generate(shell, &mut cmd, "vramfit", &mut bytes);
            out.write_all(&bytes)?;
            Ok(EXIT_OK)
        }
        Command::Man => {
            let mut bytes = Vec::new();
            clap_mangen::Man::new(command()).render(&mut bytes)?;
            out.write_all(&bytes)?;
            Ok(EXIT_OK)
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
            Ok(EXIT_OK)
        }
    }
}
