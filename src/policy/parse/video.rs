//! Parsing `[video]` and a family's `video = { … }` facts.

use super::Parser;
use crate::exact::Ratio;
use crate::policy::video::{CountedFrames, Estimate, VideoPolicy, When, VIDEO_FORMULA};
use crate::registry::{Registry, VideoFacts, Walk};
use crate::vocab::Op;
use anyhow::{bail, Result};
use toml::{Table, Value};

use crate::policy::schema::keys as known;
use crate::policy::schema::{ClipCopiesEntry, EstimateEntry, VideoEntry, VideoFactsEntry};

impl Parser<'_> {
    fn count(&self, t: &Table, key: &str, at: &str) -> Result<u64> {
        match t.get(key) {
            None => Ok(0),
            Some(Value::Integer(v)) if (0..=1_000_000).contains(v) => Ok(*v as u64),
            Some(v) => bail!(self.err(at, format!("{key}: expected an integer from 0 to 1000000, found {v}"))),
        }
    }

    fn choice<T: Copy>(&self, t: &Table, key: &str, at: &str, all: &[T], name: fn(&T) -> &'static str) -> Result<T> {
        let v = self.string(t, key, at)?;
        all.iter().copied().find(|c| name(c) == v).ok_or_else(|| {
            let known: Vec<&str> = all.iter().map(name).collect();
            self.err(at, format!("{key}: '{v}' is not one of {}", known.join(", ")))
        })
    }

    /// A family's `video = { spatial, temporal, walk, frames, overlap, tile, source }`.
    pub(super) fn video_facts(&mut self, t: &Table, at: &str) -> Result<VideoFacts> {
        let at = format!("{at} video");
        self.unknown_keys(t, known::<VideoFactsEntry>(), &at);
        let facts = VideoFacts {
            spatial: self.positive(t, "spatial", &at)?,
            temporal: self.positive(t, "temporal", &at)?,
            walk: self.choice(t, "walk", &at, Walk::ALL, Walk::as_str)?,
            frames: self.count(t, "frames", &at)?,
            overlap: self.count(t, "overlap", &at)?,
            tile: u32::try_from(self.count(t, "tile", &at)?).unwrap_or(u32::MAX),
            source: self.string(t, "source", &at)?,
        };
        if facts.walk != Walk::All && facts.frames == 0 {
            bail!(self.err(&at, format!("frames: a '{}' walk needs its frames (above 0)", facts.walk.as_str())));
        }
        if facts.frames > u64::from(u32::MAX) {
            bail!(self.err(&at, "frames: too large"));
        }
        Ok(facts)
    }

    /// `[video]`: the clip copies and the hosts' estimates.
    pub(super) fn video(&mut self, t: &Table, registry: &Registry) -> Result<VideoPolicy> {
        let at = "[video]";
        self.unknown_keys(t, known::<VideoEntry>(), at);
        let reason = self.reason(t, at)?;
        let copies = match t.get("clip_copies") {
            Some(Value::Table(c)) => c,
            _ => bail!(self.err(at, "clip_copies: expected a table { decode = \"…\", encode = \"…\" }")),
        };
        self.unknown_keys(copies, known::<ClipCopiesEntry>(), "[video] clip_copies");
        let copy = |op: &str| -> Result<Ratio> {
            self.number(copies, op, "[video] clip_copies")?
                .ok_or_else(|| self.err("[video] clip_copies", format!("missing {op}")))
        };
        let (decode_clip_copies, encode_clip_copies) = (copy("decode")?, copy("encode")?);
        let mut estimates = Vec::new();
        for (i, e) in self.tables(t, "estimate")?.into_iter().enumerate() {
            estimates.push(self.estimate(e, &format!("[[video.estimate]] #{}", i + 1), registry)?);
        }
        Ok(VideoPolicy { decode_clip_copies, encode_clip_copies, reason, estimates, formula: VIDEO_FORMULA.into() })
    }

    fn estimate(&mut self, t: &Table, at: &str, registry: &Registry) -> Result<Estimate> {
        self.unknown_keys(t, known::<EstimateEntry>(), at);
        let vae = self.string(t, "vae", at)?;
        if registry.video(&vae).is_none() {
            bail!(self.err(at, format!("vae: '{vae}' is not a registered video family (one with `video` facts)")));
        }
        let ratio_or =
            |s: &Self, key: &str, default: Ratio| -> Result<Ratio> { Ok(s.number(t, key, at)?.unwrap_or(default)) };
        let e = Estimate {
            op: self.parsed::<Op>(t, "op", at)?,
            host: self.string(t, "host", at)?,
            base_mib: self.count(t, "base_mib", at)?,
            per_element: self.number(t, "per_element", at)?.ok_or_else(|| self.err(at, "missing per_element"))?,
            frames: self.choice(t, "frames", at, CountedFrames::ALL, CountedFrames::as_str)?,
            min_frames: self.count(t, "min_frames", at)?,
            max_frames: self.count(t, "max_frames", at)?,
            min_clip: self.count(t, "min_clip", at)?,
            max_clip: self.count(t, "max_clip", at)?,
            when: match t.get("when") {
                None => When::Any,
                Some(_) => self.choice(t, "when", at, &[When::Any, When::Tiled, When::Untiled], |w| match w {
                    When::Any => "any",
                    When::Tiled => "tiled",
                    When::Untiled => "untiled",
                })?,
            },
            tile_factor: ratio_or(self, "tile_factor", Ratio::int(1))?,
            clip_copies: ratio_or(self, "clip_copies", Ratio::zero())?,
            source: self.string(t, "source", at)?,
            vae,
        };
        if e.max_clip > 0 && e.max_clip < e.min_clip {
            bail!(self.err(at, "max_clip is below min_clip: the estimate applies to no clip"));
        }
        if e.max_frames > 0 && e.max_frames < e.min_frames {
            bail!(self.err(at, "max_frames is below min_frames"));
        }
        let big = Ratio::int(1_000_000);
        for (name, r) in
            [("per_element", e.per_element), ("tile_factor", e.tile_factor), ("clip_copies", e.clip_copies)]
        {
            if r.den() > 1_000_000 || r.cmp_exact(&big).map_or(true, |o| o == std::cmp::Ordering::Greater) {
                bail!(self.err(at, format!("{name}: at most 1000000, with at most 6 decimal places")));
            }
        }
        Ok(e)
    }
}
