//! A video family's price (docs/DESIGN.md, "Video"): its line over one
//! spatio-temporal tile's working set plus the clip copies; with no line of
//! its own, the most demanding line of the same family, op, temporal tile
//! and dtype, never below the hosts' published estimates.

use super::answer::{EstimateTerm, VideoTerms};
use super::Coefficients;
use crate::contract::video::{Estimate, Run};
use crate::contract::LineKey;
use crate::error::Result;
use crate::exact::Ratio;
use crate::registry::VideoFacts;

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
            crate::error::refuse!(crate::words::FRAMES_POSITIVE.text);
        }
        let run =
            Run { width, height, frames, batch, tile, temporal_tile: key.temporal_tile.unwrap_or(0), dtype: key.dtype };
        let too_large = || {
            let at: [(&str, &dyn std::fmt::Display); 4] =
                [("width", &width), ("height", &height), ("frames", &frames), ("batch", &batch)];
            crate::error::Error::too_large(crate::words::CLIP_TOO_LARGE.fill(&at))
        };
        let working_set = run.working_set(facts).ok_or_else(too_large)?;
        let copies = self.file.video.as_ref().map_or(Ratio::zero(), |v| v.clip_copies(key.op));
        let clip_bytes = run.clip_bytes(copies).ok_or_else(too_large)?;
        Ok(VideoOn { facts, run, working_set, copies, clip_bytes, estimate: None })
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
