//! The maintainer's declared rules (`fits/policy.toml`; `docs/DESIGN.md`, "The policy").
//!
//! Read once, by serde, into the types that are also its schema
//! (`document`): a wrong value or a missing `reason` is an error on its line;
//! unknown keys and ids that name no point are collected as [`Problem`]s. `fit` and `emit` refuse to run with problems; `verify`
//! reports them as findings, so CI names every one of them at once.

pub mod document;
pub mod hosts;
mod read;
pub mod values;

pub use crate::contract::rules::{
    is_os_specific, AllocatorDefault, Attention, AttentionPlatform, Legacy, LegacyK, OsSpecific, Tiling, TilingHost,
    ATTENTION_FORMULA, DERIVED_TILE_FORMULA,
};
pub use crate::contract::video;

pub use read::parse;

use crate::exact::Ratio;
use crate::findings::Code;
use crate::points::{LineKey, Point};
use crate::registry::Registry;
use crate::vocab::{Allocator, ConvBackend, Os};

use serde::Serialize;
use std::collections::BTreeSet;

pub use crate::contract::UNMEASURED_RULE;

/// A point id listed in `[[exclude]]` or `[[exception]]`, with its reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listed {
    pub id: String,
    pub reason: String,
}

/// A line whose values are declared, not fitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carry {
    pub key: LineKey,
    /// Slope in hundredths of a byte per pixel.
    pub slope_centi: u64,
    pub base_mib: u64,
    pub reason: String,
}

/// The parsed policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub margin: Ratio,
    pub ratio_bound: Ratio,
    pub min_sizes: usize,
    pub unmeasured: String,
    pub excludes: Vec<Listed>,
    /// Points kept in their line on purpose where another source disagrees
    /// at the same size (the envelope then covers the higher figure): a
    /// visible decision with its reason, checked to name real points.
    pub keeps: Vec<Listed>,
    pub exceptions: Vec<Listed>,
    /// The ids of `excludes` and of `exceptions`, for the per-point
    /// questions (a policy may list hundreds of points, and `verify` asks
    /// for each of 10^6; a walk of the list per point was quadratic).
    /// Built with the lists, by the parser, the one place a policy is made.
    excluded_ids: BTreeSet<String>,
    excepted_ids: BTreeSet<String>,
    pub carries: Vec<Carry>,
    pub os_specific: Vec<OsSpecific>,
    pub allocator_defaults: Vec<AllocatorDefault>,
    /// The allocator when no `[[allocator_default]]` matches.
    pub default_allocator: Allocator,
    pub legacy: Option<Legacy>,
    pub registry: Registry,
    /// `(width, height)` sizes for tables and floor checks.
    pub grid: Vec<(u64, u64)>,
    /// Tile edges `plan` may fall back to, largest first.
    pub tiles: Vec<u32>,
    /// The derived-tile rule's hosts (None: tiles without a line of their
    /// own are priced by the unmeasured rule, as before the rule existed).
    pub tiling: Option<Tiling>,
    /// The attention phase of platforms whose SDPA runs the math kernel.
    pub attention: Option<Attention>,
    /// The clip copies and host estimates of video families (None: none declared).
    pub video: Option<video::VideoPolicy>,
    /// The traced price's margin and why (None: not declared).
    pub traced: Option<TracedMargin>,
    /// The hosts' own image estimators (`crossval --against`).
    pub host_estimators: Vec<hosts::HostEstimator>,
    /// Each platform's declared first use (docs/fit.md, "First use").
    pub first_use: Vec<DeclaredFirstUse>,
}

impl crate::contract::first_use::Platformed for DeclaredFirstUse {
    fn platform(&self) -> crate::vocab::Platform {
        crate::vocab::Platform::new(self.conv_backend, self.allocator, self.os)
    }
    fn mib(&self) -> u64 {
        self.mib
    }
}

/// `[[first_use]]` as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredFirstUse {
    pub conv_backend: ConvBackend,
    pub allocator: Allocator,
    pub os: Os,
    pub mib: u64,
    pub source: String,
}

/// Output pixels, frames and batch of a run or a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub width: u64,
    pub height: u64,
    pub frames: u64,
    pub batch: u64,
}

/// `[traced]`: the margin of a price scaled from a trace, with its figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedMargin {
    pub margin: Ratio,
    pub reason: String,
    /// Why the legacy value no longer floors a traced price (None: it does).
    pub lift_legacy_floor: Option<String>,
}

/// A problem verify reports as a finding and fit/emit treat as an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `unknown-key`, `unknown-id` or `stale-exception`.
    pub code: Code,
    pub ids: Vec<String>,
    pub message: String,
}

impl Policy {
    /// Whether lines of this `(conv_backend, allocator)` pair keep their OS.
    pub fn is_os_specific(&self, backend: ConvBackend, allocator: Allocator) -> bool {
        is_os_specific(&self.os_specific, backend, allocator)
    }

    /// The line a point belongs to: its key, with `os = any` unless the
    /// pair is OS-specific.
    /// A video point's line keeps its temporal tile (0 for a causal walk)
    /// and folds its spatial tile into the working set (tile 0).
    pub fn line_key(&self, p: &Point) -> LineKey {
        let mut k = p.key();
        if !self.is_os_specific(k.conv_backend, k.allocator) {
            k.os = Os::Any;
        }
        if let Some(facts) = self.registry.video(&k.vae) {
            k.temporal_tile = Some(facts.key_temporal_tile(Some(k.temporal_tile.unwrap_or(0)), p.frames));
            k.tile = 0;
        }
        k
    }

    /// Where a point sits on its line: `(x, clip bytes)`. An image point's x
    /// is its pixels and it holds no clip term; a video point's x is its
    /// working set and its clip term is `ceil(copies × 3 × element bytes ×
    /// W × H × F × batch)`, so the line is fitted to `demand − clip` and
    /// prices `line(x) + clip` (docs/DESIGN.md, "Video"). None: too large.
    pub fn fit_coordinates(&self, p: &Point) -> Option<(u64, u64)> {
        let Some(facts) = self.registry.video(&p.key.vae) else { return Some((p.pixels, 0)) };
        let geometry = Geometry { width: p.width, height: p.height, frames: p.frames, batch: p.batch };
        let (x, clip, _) =
            self.video_coordinates(facts, p.key.op, p.key.dtype, p.key.tile, p.key.temporal_tile, geometry)?;
        Some((x, clip))
    }

    /// A video run's `(working set, clip bytes, key temporal tile)`, as a
    /// point of that geometry sits on its line. None: too large.
    pub fn video_coordinates(
        &self,
        facts: &crate::registry::VideoFacts,
        op: crate::vocab::Op,
        dtype: crate::vocab::Dtype,
        tile: u32,
        temporal_tile: Option<u32>,
        g: Geometry,
    ) -> Option<(u64, u64, u32)> {
        let key_tt = facts.key_temporal_tile(Some(temporal_tile.unwrap_or(0)), g.frames);
        let run = video::Run {
            width: g.width,
            height: g.height,
            frames: g.frames,
            batch: g.batch,
            tile,
            temporal_tile: key_tt,
            dtype,
        };
        let copies = self.video.as_ref().map_or(Ratio::zero(), |v| v.clip_copies(op));
        Some((run.working_set(facts)?, run.clip_bytes(copies)?, key_tt))
    }

    /// A family's declared architecture class (None: not declared).
    pub fn class_of(&self, family: &str) -> Option<document::ArchClass> {
        self.registry.0.get(family).and_then(|e| e.class)
    }

    pub fn is_excluded(&self, id: &str) -> bool {
        self.excluded_ids.contains(id)
    }

    /// Whether a point's demand is explained by the attention phase: on a
    /// math-kernel platform, the phase at the point's own size (per tile when
    /// tiled) is at least its demand. Such a point is left out of its line's
    /// fit (an S² demand would bend a straight line in pixels) and still
    /// checked: its price is the larger of the two phases.
    pub fn explained_by_attention(&self, p: &Point) -> bool {
        let Some(attention) = self.attention.as_ref() else { return false };
        if self.registry.video(&p.key.vae).is_some() {
            return false; // a video family is priced in working-set units, with no attention phase
        }
        let Some(platform) = attention.on(p.key.conv_backend) else { return false };
        let Some(block) = self.registry.0.get(p.key.vae.as_str()).and_then(|e| e.attention) else { return false };
        let (w, h) = match p.key.tile {
            0 => (p.width, p.height),
            t => (u64::from(t).min(p.width), u64::from(t).min(p.height)),
        };
        let Some(sequence) = block.sequence(w, h) else { return true };
        match platform.phase(&block, attention.held_tensors, p.key.dtype, sequence, p.batch) {
            Some((scores, held)) => scores.saturating_add(held) >= self.own_demand(p),
            None => true,
        }
    }

    /// The first use a fresh point's answer adds, bytes: its platform's
    /// term (`contract::first_use::first_use_for`, the pricer's lookup);
    /// 0 for any other point and where none is declared for its backend.
    pub fn first_use_bytes(&self, p: &Point) -> u64 {
        if p.context != Some(crate::vocab::Context::Fresh) {
            return 0;
        }
        let k = &p.key;
        crate::contract::first_use::first_use_for(&self.first_use, k.platform())
            .map_or(0, |(t, _)| t.mib.saturating_mul(crate::exact::MIB))
    }

    /// The op's own demand of a point (docs/fit.md, "Demand per context"):
    /// what its line is fitted on. A fresh point's demand less its
    /// platform's first use, never below its allocated or reserved delta
    /// (the term is what the driver counts beyond them); any other point's
    /// demand as measured.
    pub fn own_demand(&self, p: &Point) -> u64 {
        match self.first_use_bytes(p) {
            0 => p.demand_bytes,
            term => p
                .demand_bytes
                .saturating_sub(term)
                .max(p.allocated_bytes.unwrap_or(0))
                .max(p.reserved_bytes.unwrap_or(0)),
        }
    }

    pub fn is_exception(&self, id: &str) -> bool {
        self.excepted_ids.contains(id)
    }

    /// The id sets of the excluded and excepted points.
    pub(super) fn ids_of(list: &[Listed]) -> BTreeSet<String> {
        list.iter().map(|e| e.id.clone()).collect()
    }

    /// Excluded or excepted ids that name no point.
    /// `points` are the store's, sorted by id: each listed id is looked up
    /// by halves (a set of 10^6 ids was built on every load before).
    pub fn unknown_ids(&self, points: &[Point]) -> Vec<Problem> {
        if self.excludes.is_empty() && self.keeps.is_empty() && self.exceptions.is_empty() {
            return Vec::new();
        }
        let sorted = points.is_sorted_by(|a, b| a.id < b.id);
        let unsorted: BTreeSet<&str> =
            if sorted { BTreeSet::new() } else { points.iter().map(|p| p.id.as_str()).collect() };
        let known = |id: &str| {
            if sorted {
                points.binary_search_by(|p| p.id.as_str().cmp(id)).is_ok()
            } else {
                unsorted.contains(id)
            }
        };
        // An excluded id that names no point is a typo that lets a bad point
        // back in; an exception that names no point is stale.
        let lists = [
            (&self.excludes, "exclude", Code::UnknownId),
            (&self.keeps, "keep", Code::UnknownId),
            (&self.exceptions, "exception", Code::StaleException),
        ];
        let mut out = Vec::new();
        for (list, table, code) in lists {
            for e in list.iter().filter(|e| !known(e.id.as_str())) {
                out.push(Problem {
                    code,
                    ids: vec![e.id.clone()],
                    message: format!(
                        "fits/policy.toml: [[{table}]] id '{}' names no point in measurements/vae.json; \
                         fix the id or remove the entry",
                        e.id
                    ),
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    /// The id sets answer what the lists answer, for every listed id and
    /// for ids listed nowhere; unknown ids are found the same way in the
    /// store's sorted points as in the same points out of order.
    #[test]
    fn listed_ids_are_answered_as_the_lists_answer() {
        // The shipped policy and store, read as `Workspace` reads them
        // (the workspace sits above the policy, so not through it).
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(root.join("fits/policy.toml")).unwrap();
        let (policy, problems) = super::parse(&text, "fits/policy.toml").unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        let store = std::fs::read(root.join("measurements/vae.json")).unwrap();
        let (points, _) =
            crate::points::store::read(&mut &store[..], store.len() as u64, "vae.json", &policy.registry).unwrap();
        assert!(!policy.excludes.is_empty(), "the shipped policy excludes points");
        let mut asked: Vec<String> = points.iter().map(|p| p.id.to_string()).collect();
        asked.extend(policy.excludes.iter().chain(&policy.exceptions).map(|e| e.id.clone()));
        asked.extend(["".to_string(), "no-such-point".to_string()]);
        for id in &asked {
            assert_eq!(policy.is_excluded(id), policy.excludes.iter().any(|e| e.id == *id), "{id}");
            assert_eq!(policy.is_exception(id), policy.exceptions.iter().any(|e| e.id == *id), "{id}");
        }
        // Drop a listed point: it is unknown whether the rest is sorted or not.
        let gone = policy.excludes[0].id.clone();
        let mut rest: Vec<_> = points.into_iter().filter(|p| p.id != gone.as_str()).collect();
        let sorted = policy.unknown_ids(&rest);
        rest.reverse();
        let shuffled = policy.unknown_ids(&rest);
        let ids = |ps: &[super::Problem]| ps.iter().flat_map(|p| p.ids.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&sorted), vec![gone.clone()]);
        assert_eq!(ids(&shuffled), vec![gone]);
    }
}
