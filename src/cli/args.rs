//! The command line as clap reads it: the arguments of every subcommand,
//! the formats each prints, and the definition the help, the completions
//! and the man page are drawn from. Nothing here runs a command.

use super::terminal::ColorChoice;
use crate::report::Format;
use crate::vocab::{Allocator, ConvBackend, Dtype, Op, Os};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "vramfit",
    version,
    about = "Fit, ship and audit the VRAM a diffusion app reserves before a VAE decode or encode",
    after_help = "Examples:\n  vramfit ingest measurements/raw/*.csv\n  vramfit fit\n  vramfit emit --check\n  vramfit verify\n  vramfit reserve sdxl decode 1024x1024 --dtype fp16\n  vramfit plan sdxl decode 1024x1024 --batch 8 --dtype fp16 --free 12GiB\n  vramfit points --vae sdxl --op decode\n\n\
Exit codes: 0 success, 1 findings, 2 usage or input error."
)]
pub(super) struct Cli {
    /// Folder holding measurements/ and fits/ [default: the current folder;
    /// `reserve` and `plan` use the compiled-in coefficients unless given].
    #[arg(long, global = true, value_name = "DIR", display_order = 1000)]
    pub(super) root: Option<PathBuf>,
    /// Output format (each subcommand below lists the ones it prints).
    #[arg(long, global = true, value_enum, default_value_t = FormatArg::Table, display_order = 1001)]
    pub(super) format: FormatArg,
    /// Colour errors and warnings: auto (on a terminal; NO_COLOR and CLICOLOR_FORCE are honoured), always, never.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN", display_order = 1002)]
    pub(super) color: ColorChoice,
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FormatArg {
    Table,
    Json,
    Github,
    Markdown,
}

#[derive(Subcommand, Debug)]
pub(super) enum Command {
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
    /// Register a VAE nobody measured from its traces (`python3 -m harness trace`), priced by the traced rule.
    #[command(after_help = "Examples:\n  python3 -m harness trace --config vae/config.json --family myvae\n  \
vramfit family add myvae --traces measurements/traced/myvae.csv\n  \
vramfit reserve myvae decode 1024x1024 --dtype bf16 --root .\n\n\
Exit codes: 0 registered, 2 usage or input error (nothing is written).")]
    Family {
        #[command(subcommand)]
        action: FamilyAction,
    },
    /// The shipped lines as a host's own constants (InvokeAI's or ComfyUI's formula), with provenance.
    #[command(after_help = "Examples:\n  vramfit export --host invokeai --out vramfit_invokeai.json\n  \
vramfit export --host comfyui --format json\n\n\
Each entry, priced by the export's `formula`, is `vramfit reserve` for its own key inside its measured range \
(docs/hosts.md).")]
    Export(ExportArgs),
}

#[derive(Subcommand, Debug)]
pub(super) enum FamilyAction {
    /// Add NAME to fits/policy.toml from its traces, copy them to measurements/traced/NAME.csv, and emit.
    Add(FamilyAddArgs),
}

#[derive(Args, Debug)]
pub(super) struct FamilyAddArgs {
    /// The family's name (what `reserve` and the traces' `vae` column call it).
    pub(super) name: String,
    /// The traced rows (`python3 -m harness trace --config FILE --family NAME`).
    #[arg(long, value_name = "FILE")]
    pub(super) traces: PathBuf,
    /// The architecture class, where the traced one is not what you mean (kl-2d, causal-3d, dc-ae,
    /// tiny, wavelet; the last three have no calibration until one of their families is measured).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::registry::ArchClass::ALL.map(|c| c.as_str())))]
    pub(super) class: Option<String>,
    /// Seconds to wait for another writer of the same data (0: do not wait).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub(super) wait: u64,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SchemaArg {
    Coefficients,
    Points,
    Policy,
    Reserve,
    Plan,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FromArg {
    /// vramfit's measurement CSV (columns: see the README).
    Csv,
    /// InvokeAI's vae_benchmarks/all_benchmark_results.json.
    InvokeaiBenchmark,
}

#[derive(Args, Debug)]
pub(super) struct IngestArgs {
    /// Measurement files (`-` reads standard input).
    #[arg(required = true, value_name = "FILE")]
    pub(super) files: Vec<PathBuf>,
    /// Seconds to wait for another writer of the same data (0: do not wait).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub(super) wait: u64,
    /// Do not write: exit 1 when the store is not up to date with FILEs.
    #[arg(long)]
    pub(super) check: bool,
    /// Take rows made on a simulated device (`device = fake`, "SIMULATED"):
    /// refused otherwise; every answer priced from them says so.
    #[arg(long)]
    pub(super) allow_simulated: bool,
    /// Input format.
    #[arg(long, value_enum, default_value_t = FromArg::Csv)]
    pub(super) from: FromArg,
    /// (invokeai-benchmark) Where the figures come from.
    #[arg(long)]
    pub(super) source: Option<String>,
    /// (invokeai-benchmark) GPU name.
    #[arg(long)]
    pub(super) device: Option<String>,
    /// (invokeai-benchmark) torch version.
    #[arg(long)]
    pub(super) torch: Option<String>,
    /// (invokeai-benchmark) cudnn, miopen, mps, xpu or cpu.
    #[arg(long)]
    pub(super) conv_backend: Option<String>,
    /// (invokeai-benchmark) native, cudaMallocAsync or expandable_segments.
    #[arg(long)]
    pub(super) allocator: Option<String>,
    /// (invokeai-benchmark) linux, windows or macos (empty = any).
    #[arg(long)]
    pub(super) os: Option<String>,
    /// (invokeai-benchmark) Prefix of the generated ids.
    #[arg(long, default_value = "invokeai")]
    pub(super) id_prefix: String,
    /// (invokeai-benchmark) Runs behind each average.
    #[arg(long)]
    pub(super) runs: Option<u32>,
}

/// What to price: `MODEL OP WxH`.
#[derive(Args, Debug, Clone)]
pub(super) struct QueryArgs {
    /// Model or family (sdxl, sd15, sd, flux1, …).
    #[arg(value_name = "MODEL", value_parser = model_names(), hide_possible_values = true)]
    pub(super) model: String,
    /// decode or encode.
    #[arg(value_name = "OP")]
    pub(super) op: Op,
    /// Output size (decode) or input size (encode), WIDTHxHEIGHT.
    // A leading `-` is a size to refuse in its own words, not a flag.
    #[arg(value_name = "WxH", allow_hyphen_values = true)]
    pub(super) size: String,
    #[command(flatten)]
    pub(super) flags: QueryFlags,
}

/// The flags of a query, shared by `reserve` and `plan`.
#[derive(Args, Debug, Clone)]
pub(super) struct QueryFlags {
    /// Images priced together.
    #[arg(long, default_value_t = 1)]
    pub(super) batch: u64,
    /// Tile edge in pixels (0 = untiled; a multiple of 8).
    #[arg(long, default_value_t = 0)]
    pub(super) tile: u32,
    /// Frames of the clip: a video VAE's (default 1); for `plan canvas`, frames of uint8.
    #[arg(long)]
    pub(super) frames: Option<u64>,
    /// A video decode's temporal tile in frames (0 = every frame at once;
    /// default: the family's own walk).
    #[arg(long, value_name = "FRAMES")]
    pub(super) temporal_tile: Option<u32>,
    /// Whose tiled decode a tile without a line of its own is priced for:
    /// diffusers, invokeai-flux or comfyui (the policy's hosts; default diffusers).
    #[arg(long)]
    pub(super) host: Option<String>,
    /// The dtype the VAE runs in (fp16, bf16, fp32, or PyTorch names).
    #[arg(long, value_parser = dtypes())]
    pub(super) dtype: Option<Dtype>,
    /// The dtype the weights are loaded in (default: the run dtype).
    #[arg(long, value_parser = dtypes())]
    pub(super) loaded_dtype: Option<Dtype>,
    /// SD nodes' switch: false runs fp16 whatever the loaded dtype, true runs fp32.
    #[arg(long, value_name = "true|false", action = clap::ArgAction::Set)]
    pub(super) fp32: Option<bool>,
    /// cudnn (CUDA), miopen (ROCm), mps, xpu or cpu.
    #[arg(long = "backend", alias = "conv-backend", default_value = "cudnn", value_parser = backends())]
    pub(super) backend: ConvBackend,
    /// auto (read PYTORCH_*_ALLOC_CONF as PyTorch does), native, cudaMallocAsync, expandable_segments.
    #[arg(long, default_value = "auto", value_parser = query_allocators())]
    pub(super) allocator: String,
    /// auto (the host), linux, windows, macos, or any (priced by the lines measured without an OS).
    #[arg(long, default_value = "auto", value_parser = query_oses())]
    pub(super) os: String,
    /// A coefficients file to price with (default: fits/vae.json under --root, else the compiled-in copy).
    #[arg(long, value_name = "FILE")]
    pub(super) coefficients: Option<PathBuf>,
    /// Exit 1 when the answer rests on an estimate: the legacy floor, the
    /// unmeasured rule, or a size outside the line's measured range.
    #[arg(long)]
    pub(super) strict: bool,
    /// The host has already run this op in this process: leave out the
    /// platform's first-use term (the default adds it: a fresh process's
    /// first decode must fit).
    #[arg(long)]
    pub(super) warm: bool,
}

#[derive(Args, Debug)]
pub(super) struct ReserveArgs {
    #[command(flatten)]
    pub(super) query: QueryArgs,
    /// Price with the previous (v1) estimator instead.
    #[arg(long, conflicts_with_all = ["strict", "max_tile_for"])]
    pub(super) legacy: bool,
    /// Answer the inverse: the largest tile whose price fits this budget
    /// (bytes, KiB/MiB/GiB, K/M/G), measured and derived prices first.
    #[arg(long, value_name = "BUDGET", conflicts_with = "tile")]
    pub(super) max_tile_for: Option<String>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FailOnArg {
    Chunked,
    Tiled,
    Host,
}

#[derive(Args, Debug)]
pub(super) struct PlanArgs {
    /// `MODEL OP WxH` (a VAE query whose --batch is the item count) or `canvas WxH`.
    #[arg(value_name = "WORKLOAD", num_args = 2..=3, required = true)]
    pub(super) workload: Vec<String>,
    #[command(flatten)]
    pub(super) flags: QueryFlags,
    /// Free device memory (bytes, KiB/MiB/GiB, K/M/G) or `unknown`.
    #[arg(long, default_value = "unknown", allow_hyphen_values = true)]
    pub(super) free: String,
    /// Share of the free memory the work may use, 0 < F ≤ 1.
    #[arg(long, default_value = "1", allow_hyphen_values = true)]
    pub(super) share: String,
    /// Upper bound on the budget (bytes, KiB/MiB/GiB, K/M/G).
    #[arg(long, allow_hyphen_values = true)]
    pub(super) cap: Option<String>,
    /// (canvas) Upscale factor of each frame.
    #[arg(long, default_value_t = 1)]
    pub(super) upscale: u64,
    /// (canvas) Channels per pixel (uint8).
    #[arg(long, default_value_t = 3)]
    pub(super) channels: u64,
    /// (canvas) Peak multiple of a step over its uint8 input, e.g. 9 for a float convert-out.
    #[arg(long)]
    pub(super) transient: Option<String>,
    /// Exit 1 when the verdict is this or worse (full < chunked < tiled < host).
    #[arg(long, value_enum)]
    pub(super) fail_on: Option<FailOnArg>,
}

#[derive(Args, Debug)]
pub(super) struct DiffArgs {
    /// The side before [default: git:HEAD].
    #[arg(value_name = "BEFORE")]
    pub(super) before: Option<String>,
    /// The side after [default: fits/vae.json under --root].
    #[arg(value_name = "AFTER")]
    pub(super) after: Option<String>,
    /// Sizes, comma-separated WxH [default: 512x512,768x768,1024x1024,1536x1536,2048x2048].
    #[arg(long, value_delimiter = ',')]
    pub(super) sizes: Vec<String>,
    /// Images per query.
    #[arg(long, default_value_t = 1)]
    pub(super) batch: u64,
    /// Only keys containing one of these substrings (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub(super) keys: Vec<String>,
    /// Exit 1 when any reservation grows by more than this many percent.
    #[arg(long, value_name = "PCT")]
    pub(super) fail_over: Option<String>,
    /// List the unchanged reservations too (by default they are counted).
    #[arg(long)]
    pub(super) all: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ByArg {
    /// Leave every point of one measured size out.
    Size,
    /// Leave every point of one source out.
    Source,
    /// Price every measured tile from its platform's untiled line alone (the derived tile rule).
    Tile,
    /// Price each family's points from its trace, calibrated on the other families of its class.
    Family,
    /// Price each class's points from its families' traces, calibrated on the other classes alone.
    Class,
}

#[derive(Args, Debug)]
pub(super) struct CrossvalArgs {
    /// What each fold leaves out.
    #[arg(long, value_enum, default_value_t = ByArg::Size)]
    pub(super) by: ByArg,
    /// Exit 1 when fewer than this many percent of the held-out points are covered.
    #[arg(long, value_name = "PCT")]
    pub(super) fail_under: Option<String>,
    /// Instead: price every measured point by this host's own estimator (the policy's
    /// `[[host_estimator]]`s and video estimates) and by vramfit, side by side.
    #[arg(long, value_name = "HOST", conflicts_with_all = ["by", "fail_under"])]
    pub(super) against: Option<String>,
    /// Instead: every measured point beside the allocator replay of the trace at its own
    /// configuration (measurements/traced/points/points.csv), measured ÷ simulated per class and platform.
    #[arg(long, conflicts_with_all = ["by", "fail_under", "against"])]
    pub(super) simulated: bool,
}

#[derive(Args, Debug)]
pub(super) struct ExportArgs {
    /// The host whose formula the constants are for: invokeai or comfyui.
    #[arg(long, value_name = "HOST")]
    pub(super) host: String,
    /// Write the export (JSON) to this file, atomically [default: print it].
    #[arg(long, value_name = "FILE")]
    pub(super) out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(super) struct PlotArgs {
    /// Folder for the SVGs and index.html [default: plots under --root].
    #[arg(long, value_name = "DIR")]
    pub(super) out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(super) struct ReportArgs {
    /// Folder for report.md and plots/ [default: vramfit-report under --root].
    #[arg(long, value_name = "DIR")]
    pub(super) out: Option<PathBuf>,
    /// The side to diff against: a coefficients file, `embedded`, `legacy` or `git:REV`.
    #[arg(long, value_name = "REF", default_value = "git:HEAD")]
    pub(super) before: String,
    /// List every reservation in the diff and plot every line inline (by
    /// default: the changed reservations, and the changed lines' plots).
    #[arg(long)]
    pub(super) all: bool,
    /// Instead of the bundle: how the ops hosts observed (`vramfit_vae.Observer`
    /// rows, or any measurement CSV) sit against the shipped lines, the lines
    /// they would change and the rows the policy would refuse. Writes nothing;
    /// exit 1 when an op took more than its answer.
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with_all = ["out", "all"])]
    pub(super) observed: Vec<PathBuf>,
    /// With --observed: count a simulated device's rows, as `ingest --allow-simulated` would.
    #[arg(long, requires = "observed")]
    pub(super) allow_simulated: bool,
}

#[derive(Args, Debug)]
pub(super) struct EmitArgs {
    /// Do not write: exit 1 if the shipped file would change.
    #[arg(long)]
    pub(super) check: bool,
    /// Seconds to wait for another writer of the same data (0: do not wait).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub(super) wait: u64,
    /// Write even when verify would report findings on the new file (still exits 1).
    #[arg(long, conflicts_with = "check")]
    pub(super) force: bool,
}

#[derive(Args, Debug)]
pub(super) struct PointsArgs {
    /// Family or model name (sd, sdxl, flux1, …).
    #[arg(long, value_parser = model_names(), hide_possible_values = true)]
    pub(super) vae: Option<String>,
    /// decode or encode.
    #[arg(long)]
    pub(super) op: Option<Op>,
    /// Tile edge in pixels (0: untiled points only).
    #[arg(long)]
    pub(super) tile: Option<u32>,
    /// cudnn, miopen, mps, xpu, cpu.
    #[arg(long = "backend", alias = "conv-backend", value_parser = backends())]
    pub(super) backend: Option<ConvBackend>,
    /// native, cudaMallocAsync, expandable_segments.
    #[arg(long, value_parser = allocators())]
    pub(super) allocator: Option<Allocator>,
    /// linux, windows, macos, any.
    #[arg(long, value_parser = oses())]
    pub(super) os: Option<Os>,
    /// fp16, bf16, fp32 (or PyTorch names).
    #[arg(long, value_parser = dtypes())]
    pub(super) dtype: Option<Dtype>,
    /// Substring of the point id.
    #[arg(long)]
    pub(super) id: Option<String>,
    /// One line, `vae/op/tile/backend/allocator/os/dtype` (as `fit` names it): its points exactly as
    /// the fit groups them (the OS folds into `any` off OS-specific platforms; excluded points are named apart).
    #[arg(long, value_name = "KEY", conflicts_with_all = ["vae", "op", "tile", "backend", "allocator", "os", "dtype"])]
    pub(super) line: Option<String>,
}

/// The formats each subcommand prints, as its result type declares them
/// (`Report::FORMATS`): any other is refused before the command runs
/// (exit 2), and the help lists them per subcommand. `schema`,
/// `completions` and `man` print one fixed form (None).
pub(super) fn formats_of(command: &str) -> Option<&'static [Format]> {
    use crate::report::Report;
    Some(match command {
        "ingest" => <crate::points::summary::IngestReport as Report>::FORMATS,
        "fit" => <crate::lines::FitReport as Report>::FORMATS,
        "emit" => <crate::coefficients::emit::EmitReport as Report>::FORMATS,
        "verify" => <crate::verify::VerifyReport as Report>::FORMATS,
        "reserve" => <crate::pricing::ReserveReport as Report>::FORMATS,
        "plan" => <crate::plan::Plan as Report>::FORMATS,
        "diff" => <crate::diff::DiffReport as Report>::FORMATS,
        "crossval" => <crate::crossval::CrossvalReport as Report>::FORMATS,
        "plot" => <crate::plot::PlotReport as Report>::FORMATS,
        "report" => <crate::evidence::BundleReport as Report>::FORMATS,
        "points" => <crate::points::summary::PointList as Report>::FORMATS,
        "family" => <crate::family::FamilyAddReport as Report>::FORMATS,
        "export" => <crate::export::Export as Report>::FORMATS,
        _ => return None,
    })
}

/// The subcommands that print a result in a choice of formats, in help order.
const FORMATTED: &[&str] = &[
    "ingest", "fit", "emit", "verify", "reserve", "plan", "diff", "crossval", "plot", "report", "points", "family",
    "export",
];

pub(super) fn format_names(formats: &[Format]) -> Vec<String> {
    formats.iter().map(|f| f.as_str().to_string()).collect()
}

/// The command line definition, with each subcommand's formats in its
/// one-line description (what the top-level help lists).
pub(super) fn command() -> clap::Command {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let format = cmd.get_arguments().find(|a| a.get_id() == "format").cloned().expect("--format is global");
    // Each subcommand gets its own copy of the global `--format` (clap then
    // propagates no other), saying which formats it prints.
    for name in FORMATTED {
        let names = format_names(formats_of(name).unwrap_or_default()).join("|");
        let own =
            format.clone().help(format!("Output format: {names} (any other is refused)")).hide_possible_values(true);
        cmd = cmd.mut_subcommand(*name, |c| {
            let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
            let c = c.about(format!("{about} [--format {names}]")).arg(own);
            match *name {
                "plan" => {
                    c.mut_arg("batch", |a| a.help("Items to run: the plan groups them so each group fits the budget"))
                }
                _ => c,
            }
        });
    }
    for fixed in ["schema", "completions", "man"] {
        cmd = cmd.mut_subcommand(fixed, |c| c.arg(format.clone().hide(true)));
    }
    cmd
}

/// Completions and help offer the values each option takes: the
/// vocabularies (dtypes, backends, OSes, allocators) and the registered
/// families and model names, read from the compiled-in coefficients.
/// Parsing is unchanged: PyTorch's spellings (`torch.float16`,
/// `backend:cudaMallocAsync`) are still accepted; only the canonical
/// names are offered.
fn dtypes() -> Spelled<Dtype> {
    Spelled::new(Dtype::ALL.iter().map(Dtype::as_str).collect())
}

fn backends() -> Spelled<ConvBackend> {
    Spelled::new(ConvBackend::ALL.iter().map(ConvBackend::as_str).collect())
}

fn allocators() -> Spelled<Allocator> {
    Spelled::new(Allocator::ALL.iter().map(Allocator::as_str).collect())
}

fn oses() -> Spelled<Os> {
    Spelled::new(Os::ALL.iter().map(Os::as_str).collect())
}

/// `auto` or a name: what `--allocator` and `--os` of a query take (a
/// conf string is accepted too, and read as PyTorch reads it).
fn auto_or(names: &[&'static str]) -> Offered {
    Offered::Fixed(std::iter::once("auto").chain(names.iter().copied()).map(String::from).collect())
}

fn query_allocators() -> Offered {
    auto_or(&Allocator::ALL.iter().map(Allocator::as_str).collect::<Vec<_>>())
}

fn query_oses() -> Offered {
    auto_or(&Os::ALL.iter().map(Os::as_str).collect::<Vec<_>>())
}

/// The model names are read from the compiled-in coefficients only when
/// help or a completion script asks for them, not on every run.
fn model_names() -> Offered {
    Offered::Models
}

/// Every family and model name of the compiled-in coefficients.
fn models() -> Vec<String> {
    let Ok(file) = serde_json::from_str::<crate::contract::CoefficientsFile>(crate::contract::EMBEDDED) else {
        return Vec::new();
    };
    let mut names: Vec<String> =
        file.registry.iter().flat_map(|(f, e)| std::iter::once(f.clone()).chain(e.models.iter().cloned())).collect();
    names.sort();
    names.dedup();
    names
}

/// A text option whose values are offered to completions but not
/// enforced: the command reads it (a model name, `auto`, a conf string).
#[derive(Clone)]
enum Offered {
    Fixed(Vec<String>),
    /// Every family and model name (`models`).
    Models,
}

impl clap::builder::TypedValueParser for Offered {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let values = match self {
            Offered::Fixed(v) => v.clone(),
            Offered::Models => models(),
        };
        Some(Box::new(values.into_iter().map(clap::builder::PossibleValue::new)))
    }
}

/// A vocabulary option: parsed with every spelling the vocabulary accepts,
/// its canonical names offered.
#[derive(Clone)]
struct Spelled<T> {
    names: Vec<&'static str>,
    kind: std::marker::PhantomData<fn() -> T>,
}

impl<T> Spelled<T> {
    fn new(names: Vec<&'static str>) -> Spelled<T> {
        Spelled { names, kind: std::marker::PhantomData }
    }
}

impl<T> clap::builder::TypedValueParser for Spelled<T>
where
    T: std::str::FromStr + Clone + Send + Sync + 'static,
    T::Err: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        // The same parse and message as an option typed by `FromStr`.
        (|s: &str| s.parse::<T>()).parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(self.names.iter().map(|n| clap::builder::PossibleValue::new(*n))))
    }
}

impl Command {
    /// The subcommand's name on the command line.
    pub(super) fn name(&self) -> &'static str {
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
            Command::Export(_) => "export",
            Command::Schema { .. } => "schema",
            Command::Completions { .. } => "completions",
            Command::Man => "man",
            Command::Family { .. } => "family",
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
