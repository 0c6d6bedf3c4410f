//! A family's `video = { … }` facts and `[video]`: the clip copies and the
//! hosts' estimates, checked across their fields.

use super::Place;
use crate::exact::Ratio;
use crate::policy::document::{EstimateEntry, VideoEntry, VideoFactsEntry};
use crate::policy::values::At;
use crate::policy::video::{Estimate, VideoPolicy, When, VIDEO_FORMULA};
use crate::registry::{Registry, VideoFacts, Walk};
use anyhow::{bail, Result};
use std::ops::Range;

impl Place<'_> {
    /// A family's facts: a walk in steps or tiles needs its frames.
    pub(super) fn video_facts(&self, v: VideoFactsEntry, span: &Range<usize>, family: &str) -> Result<VideoFacts> {
        let facts = VideoFacts {
            spatial: v.spatial.0,
            temporal: v.temporal.0,
            walk: v.walk,
            frames: v.frames.map_or(0, |f| f.0),
            overlap: v.overlap.map_or(0, |f| f.0),
            // A Count is at most 10^6: a tile edge fits.
            tile: v.tile.map_or(0, |t| t.0 as u32),
            source: v.source.0,
            clips: v.clips.map(|[p, e]| [p.0, e.0]),
            decodes_single_frame: v.decodes_single_frame.unwrap_or(true),
        };
        if facts.walk != Walk::All && facts.frames == 0 {
            let what = format!("frames: a '{}' walk needs its frames (above 0)", facts.walk.as_str());
            bail!(self.err(span, &format!("{family}.video"), what));
        }
        Ok(facts)
    }

    /// `[video]`: the clip copies and the hosts' estimates.
    pub(super) fn video(&self, At { value: v, .. }: At<VideoEntry>, registry: &Registry) -> Result<VideoPolicy> {
        let estimates = v
            .estimate
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, e)| self.estimate(e, &format!("video.estimate[{}]", i + 1), registry))
            .collect::<Result<_>>()?;
        Ok(VideoPolicy {
            decode_clip_copies: v.clip_copies.decode.0,
            encode_clip_copies: v.clip_copies.encode.0,
            reason: v.reason.0,
            estimates,
            formula: VIDEO_FORMULA.into(),
        })
    }

    fn estimate(&self, At { span, value: e }: At<EstimateEntry>, field: &str, registry: &Registry) -> Result<Estimate> {
        if registry.video(&e.vae.0).is_none() {
            let what = format!("vae: '{}' is not a registered video family (one with `video` facts)", e.vae.0);
            bail!(self.err(&span, field, what));
        }
        let count = |c: Option<crate::policy::values::Count>| c.map_or(0, |c| c.0);
        let estimate = Estimate {
            vae: e.vae.0,
            op: e.op,
            host: e.host.0,
            base_mib: count(e.base_mib),
            per_element: e.per_element.0,
            frames: e.frames,
            min_frames: count(e.min_frames),
            max_frames: count(e.max_frames),
            min_clip: count(e.min_clip),
            max_clip: count(e.max_clip),
            when: e.when.unwrap_or(When::Any),
            tile_factor: e.tile_factor.map_or(Ratio::int(1), |r| r.0),
            clip_copies: e.clip_copies.map_or(Ratio::zero(), |r| r.0),
            source: e.source.0,
        };
        if estimate.max_clip > 0 && estimate.max_clip < estimate.min_clip {
            bail!(self.err(&span, field, "max_clip is below min_clip: the estimate applies to no clip"));
        }
        if estimate.max_frames > 0 && estimate.max_frames < estimate.min_frames {
            bail!(self.err(&span, field, "max_frames is below min_frames"));
        }
        let exact = [
            ("per_element", estimate.per_element),
            ("tile_factor", estimate.tile_factor),
            ("clip_copies", estimate.clip_copies),
        ];
        for (name, r) in exact {
            if !super::build::bounded(r, 1_000_000) {
                bail!(self.err(&span, field, format!("{name}: at most 1000000, with at most 6 decimal places")));
            }
        }
        Ok(estimate)
    }
}
