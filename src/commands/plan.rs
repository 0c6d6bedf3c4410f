//! `vramfit plan`: will the work fit, and how should it run? Builds the
//! budget and the workload from typed options, then plans.

use super::{Found, Note, Outcome};
use crate::exact::Ratio;
use crate::plan::{self, Canvas, Plan, Verdict};
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::source::QueryOptions;
use anyhow::{bail, Result};

/// The work to plan.
#[derive(Debug, Clone)]
pub enum Work {
    /// A VAE query; its batch is the number of items.
    Vae(QueryOptions),
    /// A frame canvas.
    Canvas {
        /// Frame size in pixels before upscaling.
        size: (u64, u64),
        /// Frames in the clip.
        frames: Option<u64>,
        /// Upscale factor of each frame.
        upscale: u64,
        /// Channels per pixel (uint8).
        channels: u64,
        /// Peak multiple of a step over its uint8 input.
        transient: Option<Ratio>,
    },
}

/// Typed options of `plan`.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    pub work: Work,
    /// Free device memory in bytes (None: unknown).
    pub free: Option<u64>,
    /// Share of the free memory the work may use.
    pub share: Ratio,
    /// Upper bound on the budget, bytes.
    pub cap: Option<u64>,
    /// `--fail-on`: a verdict this bad or worse is a finding.
    pub fail_on: Option<Verdict>,
    /// `--strict`: a plan resting on an estimate is a finding.
    pub strict: bool,
}

pub fn run(opts: &PlanOptions, env: &EnvSnapshot) -> Result<Outcome<Plan>> {
    let p = match &opts.work {
        Work::Vae(q) => super::or_local_copy(&q.source, plan(opts, env))?,
        Work::Canvas { .. } => plan(opts, env)?,
    };
    let mut notes = match &opts.work {
        Work::Vae(q) => super::local_copy_note(&q.source),
        Work::Canvas { .. } => Vec::new(),
    };
    if p.any_host() {
        notes.push(Note::Warning(format!("part of this work cannot run on the device: {}", p.reasons.join("; "))));
    }
    let (strict, strict_notes) = super::strict(opts.strict, p.estimates());
    notes.extend(strict_notes);
    let found = if opts.fail_on.is_some_and(|f| p.worst() >= f) { Found::VerdictMet } else { strict };
    Ok(Outcome { notes, ..Outcome::of(p).found(found) })
}

fn plan(opts: &PlanOptions, env: &EnvSnapshot) -> Result<Plan> {
    let budget = plan::budget(opts.free, opts.share, opts.cap)?;
    match &opts.work {
        Work::Vae(q) => {
            let c = q.source.load()?;
            let tiles = c.file.tiles.clone();
            Ok(plan::vae(&c, &q.query()?, env, &budget, &tiles)?)
        }
        Work::Canvas { size: (width, height), frames, upscale, channels, transient } => {
            let frames = frames.ok_or_else(|| anyhow::anyhow!("plan canvas needs --frames N"))?;
            if frames == 0 || *upscale == 0 || *channels == 0 {
                bail!("--frames, --upscale and --channels must be at least 1");
            }
            let c = Canvas {
                width: *width,
                height: *height,
                channels: *channels,
                upscale: *upscale,
                frames,
                transient: *transient,
            };
            Ok(plan::canvas(&c, &budget)?)
        }
    }
}
