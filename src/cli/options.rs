//! Arguments as clap read them (`args`) into the typed options each
//! command takes: sizes, amounts and percentages parsed, flags that mean
//! nothing together refused, defaults made explicit. Nothing here runs.

use super::args::*;
use crate::commands::schema::SchemaKind;
use crate::commands::{self, ingest, plan, report::ReportOptions};
use crate::crossval::HoldOut;
use crate::diff::{DiffOptions, SideSpec};
use crate::evidence::BundleOptions;
use crate::exact::Ratio;
use crate::plan::Verdict;
use crate::points::invokeai::InvokeaiContext;
use crate::points::summary::PointFilter;
use crate::pricing::source::QueryOptions;
use crate::pricing::{Choice, Query};
use crate::vocab::Op;
use std::path::{Path, PathBuf};

pub(super) fn ingest_options(a: IngestArgs) -> anyhow::Result<ingest::IngestOptions> {
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
pub(super) fn query_options(
    model: &str,
    op: Op,
    size: &str,
    a: &QueryFlags,
    root: &Option<PathBuf>,
) -> anyhow::Result<QueryOptions> {
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
        warm: a.warm,
    };
    Ok(QueryOptions { query, source: commands::coefficient_source(a.coefficients.clone(), root.as_deref()) })
}

pub(super) fn plan_options(a: &PlanArgs, root: &Option<PathBuf>) -> anyhow::Result<plan::PlanOptions> {
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
            ("--warm", f.warm),
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
    let fail_on = a.fail_on.map(|f| match f {
        FailOnArg::Chunked => Verdict::Chunked,
        FailOnArg::Tiled => Verdict::Tiled,
        FailOnArg::Host => Verdict::Host,
    });
    Ok(plan::PlanOptions { work, free, share, cap, fail_on, strict: a.flags.strict })
}

/// A percentage flag (`--fail-over 5`, `--fail-under 90%`), typed.
pub(super) fn factor(flag: &str, text: Option<&str>) -> anyhow::Result<Option<Ratio>> {
    text.map(|p| crate::units::parse_factor(p).map_err(|e| anyhow::anyhow!("{flag} {e}"))).transpose()
}

/// `diff`'s sides, grid and `--fail-over`, typed.
pub(super) fn diff_options(a: DiffArgs, root: &Path) -> anyhow::Result<(DiffOptions, Option<Ratio>)> {
    let sizes = if a.sizes.is_empty() {
        crate::diff::DEFAULT_SIZES.to_vec()
    } else {
        a.sizes.iter().map(|s| crate::units::parse_size(s)).collect::<Result<_, _>>()?
    };
    let opts = DiffOptions {
        before: SideSpec::parse(a.before.as_deref().unwrap_or("git:HEAD")),
        after: match &a.after {
            Some(s) => SideSpec::parse(s),
            None => SideSpec::File(crate::workspace::Workspace::new(root).coefficients_path()),
        },
        grid: crate::diff::Grid { sizes, batch: a.batch, keys: a.keys, all: a.all },
    };
    Ok((opts, factor("--fail-over", a.fail_over.as_deref())?))
}

/// An amount of bytes (`--max-tile-for 6GiB`), typed.
pub(super) fn bytes(flag: &str, text: Option<&str>) -> anyhow::Result<Option<u64>> {
    text.map(|b| crate::units::parse_bytes(b).map_err(|e| anyhow::anyhow!("{flag} {e}"))).transpose()
}

/// `crossval --by`.
pub(super) fn hold_out(by: ByArg) -> HoldOut {
    match by {
        ByArg::Size => HoldOut::Size,
        ByArg::Source => HoldOut::Source,
        ByArg::Tile => HoldOut::Tile,
        ByArg::Family => HoldOut::Family,
        ByArg::Class => HoldOut::Class,
    }
}

/// `report`'s side before, `--all` and folder (`vramfit-report` under the root).
pub(super) fn report_options(a: ReportArgs, root: &Path) -> ReportOptions {
    ReportOptions {
        bundle: BundleOptions { before: SideSpec::parse(&a.before), all: a.all },
        out: a.out.unwrap_or_else(|| root.join("vramfit-report")),
    }
}

/// `schema KIND`.
pub(super) fn schema_kind(kind: SchemaArg) -> SchemaKind {
    match kind {
        SchemaArg::Coefficients => SchemaKind::Coefficients,
        SchemaArg::Points => SchemaKind::Points,
        SchemaArg::Policy => SchemaKind::Policy,
        SchemaArg::Reserve => SchemaKind::Reserve,
        SchemaArg::Plan => SchemaKind::Plan,
    }
}

/// `points`' filters.
pub(super) fn point_filter(a: PointsArgs) -> PointFilter {
    PointFilter {
        vae: a.vae,
        op: a.op,
        tile: a.tile,
        conv_backend: a.backend,
        allocator: a.allocator,
        os: a.os,
        dtype: a.dtype,
        id: a.id,
        line: a.line,
    }
}
