//! A video family's price (docs/DESIGN.md, "Video"): its line over one
//! spatio-temporal tile's working set plus the clip copies; with no line of
//! its own, the most demanding line of the same family, op, temporal tile
//! and dtype, never below the hosts' published estimates.

use super::answer::{EstimateTerm, VideoTerms};
use super::{Coefficients, LineCoef, Rule};
use crate::contract::video::{Estimate, Run};
use crate::contract::LineKey;
use crate::exact::Ratio;
use crate::registry::VideoFacts;
use anyhow::{anyhow, bail, Result};

/// A video run as priced: its terms, and the estimate consulted.
#[derive(Debug, Clone)]
pub(super) struct VideoOn<'a> {
    pub facts: &'a VideoFacts,
    pub run: Run,
    pub working_set: u64,
    pub copies: Ratio,
    pub clip_bytes: u64,
    pub estimate: Option<(&'a Estimate, u64)>,
}

impl VideoOn<'_> {
    pub fn terms(&self) -> VideoTerms {
        VideoTerms {
            frames: self.run.frames,
            tile: self.run.tile,
            temporal_tile: self.run.temporal_tile,
            walk: self.facts.walk,
            temporal_compression: self.facts.temporal,
            working_frames: self.facts.working_frames(self.run.frames, self.run.temporal_tile),
            working_set: self.working_set,
            clip_copies: crate::exact::exact_decimal(&self.copies),
            clip_bytes: self.clip_bytes,
            estimate: self.estimate.map(|(e, bytes)| EstimateTerm {
                host: e.host.clone(),
                bytes,
                source: e.source.clone(),
            }),
        }
    }
}

/// What priced a video key: rule, the line (if any), its bytes at the
/// working set, and the total before cast growth.
pub(super) struct VideoPrice<'a> {
    pub rule: Rule,
    pub line: Option<(&'a LineKey, &'a LineCoef, u64)>,
    pub legacy: Option<u64>,
    pub total: u64,
}

impl Coefficients {
    /// The run of a video query: its spatial tile (as `effective_tile`
    /// decides) and the temporal tile of its key.
    pub(super) fn video_on<'a>(
        &'a self,
        facts: &'a VideoFacts,
        key: &LineKey,
        q: &super::Query,
        tile: u32,
    ) -> Result<VideoOn<'a>> {
        let (width, height, frames, batch) = (q.width, q.height, q.frames, q.batch);
        if frames == 0 {
            bail!("--frames must be positive");
        }
        let run =
            Run { width, height, frames, batch, tile, temporal_tile: key.temporal_tile.unwrap_or(0), dtype: key.dtype };
        let too_large =
            || super::too_large(format!("{width}x{height} × {frames} frames × batch {batch} is too large to price"));
        let working_set = run.working_set(facts).ok_or_else(too_large)?;
        let copies = self.file.video.as_ref().map_or(Ratio::zero(), |v| v.clip_copies(key.op));
        let clip_bytes = run.clip_bytes(copies).ok_or_else(too_large)?;
        Ok(VideoOn { facts, run, working_set, copies, clip_bytes, estimate: None })
    }

    /// Prices a video key: its own line (or its any-OS twin); else the
    /// larger of the most demanding candidate line and the largest
    /// applicable host estimate; else the legacy estimate at the working set.
    pub(super) fn video_price<'a>(&'a self, key: &mut LineKey, on: &mut VideoOn<'a>) -> Result<VideoPrice<'a>> {
        let add = |a: u64, b: u64| a.checked_add(b).ok_or_else(|| super::too_large("reservation too large"));
        if let Some((rule, k, c, b)) = self.measured_line(key, on.working_set)? {
            return Ok(VideoPrice { rule, line: Some((k, c, b)), legacy: None, total: add(b, on.clip_bytes)? });
        }
        let mut best: Option<(&LineKey, &LineCoef, u64)> = None;
        let mut platform_measured = false;
        for (k, c) in self.unmeasured_candidates(key) {
            let b = c.at(on.working_set)?;
            platform_measured |= measured_here(k, key);
            if best.is_none_or(|(bk, _, bb)| b > bb || (b == bb && k < bk)) {
                best = Some((k, c, b));
            }
        }
        // A platform that measured this family, op and dtype at another
        // temporal tile is measured: its lines price the working set, and
        // a host's guess is no floor there (as a derived spatial tile takes
        // no legacy floor), or a guess at a temporal tile nobody measured
        // would price above the measured one next to it.
        if platform_measured {
            let total = best.map(|(_, _, b)| add(b, on.clip_bytes)).transpose()?.unwrap_or(0);
            return Ok(VideoPrice { rule: Rule::UnmeasuredRule, line: best, legacy: None, total });
        }
        if let Some(v) = self.file.video.as_ref() {
            for (e, bytes) in v.estimates(&key.vae, key.op, on.facts, on.run) {
                let bytes = bytes.ok_or_else(|| {
                    super::too_large(format!("the {} estimate for {key} is too large to price", e.host))
                })?;
                if on.estimate.is_none_or(|(_, b)| bytes > b) {
                    on.estimate = Some((e, bytes));
                }
            }
        }
        let line_total = best.map(|(_, _, b)| add(b, on.clip_bytes)).transpose()?;
        Ok(match (line_total, on.estimate) {
            (Some(t), Some((_, e))) if t >= e => {
                VideoPrice { rule: Rule::UnmeasuredRule, line: best, legacy: None, total: t }
            }
            (_, Some((_, e))) => VideoPrice { rule: Rule::VideoEstimate, line: best, legacy: None, total: e },
            (Some(t), None) => VideoPrice { rule: Rule::UnmeasuredRule, line: best, legacy: None, total: t },
            (None, None) => {
                let l = self
                    .legacy_at(&LineKey { tile: 0, ..key.clone() }, super::legacy::Shape::pixels(on.working_set))
                    .ok_or_else(|| anyhow!("no line, no declared estimate and no legacy value for {key}"))?;
                VideoPrice { rule: Rule::LegacyFloor, line: None, legacy: Some(l), total: l }
            }
        })
    }
}

/// Whether a candidate line was measured on the query key's own platform
/// and dtype (any temporal tile; a line without an OS counts for every OS).
pub fn measured_here(line: &LineKey, key: &LineKey) -> bool {
    line.vae == key.vae
        && line.op == key.op
        && line.dtype == key.dtype
        && line.conv_backend == key.conv_backend
        && line.allocator == key.allocator
        && (line.os == key.os || line.os == crate::vocab::Os::Any)
}
