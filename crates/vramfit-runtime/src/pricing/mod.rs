//! Answering "what would this decode reserve?" (docs/DESIGN.md, "Pricing") from the shipped
//! coefficients. `reserve`, `plan` and `verify` all price through
//! [`Pricer`], so the check that guards the numbers and the command that
//! shows them run the same code.

mod answer;
mod attention;
mod index;
pub mod legacy;
mod monotone;
pub mod platform;
pub mod source;
mod steps;
pub mod warning;
pub use steps::order as pricing_order;
pub use warning::Warning;
mod tiled;
mod traced;
mod video;

pub use answer::{
    AttentionTerms, Choice, ChosenAllocator, EstimateTerm, FirstUseTerm, FollowsTrace, Lifted, Price, Pricer, Query,
    Quote, ReserveReport, Resolved, Rule, Slope, TileTerms, TracedTerms, VideoTerms,
};

use crate::contract::{is_os_specific, LineKey};
use crate::error::{Error, Result};
use crate::exact::MIB;
use crate::vocab::{Dtype, Os};
use crate::words;
use attention::AttnOn;
pub use index::{Coefficients, LineCoef, TILE_STEP};
use platform::{choose_allocator, detect_os, Detected, EnvSnapshot};
use steps::{Ask, Candidate};
use tiled::TileOn;
pub use video::measured_here;

impl Coefficients {
    /// The run dtype: `--dtype`; else the SD nodes' `fp32` switch; else the loaded dtype.
    fn run_dtype(&self, q: &Query, family: &str) -> Result<Detected<Dtype>> {
        if let Some(f) = q.fp32 {
            if !self.registry.0.get(family).is_some_and(|e| e.fp32_switch) {
                crate::error::refuse!(words::FP32_SWITCH.fill(&[("family", &family)]));
            }
            let by_switch = if f { Dtype::Fp32 } else { Dtype::Fp16 };
            if let Some(d) = q.dtype.filter(|d| *d != by_switch) {
                crate::error::refuse!(words::DTYPE_CONTRADICTS_FP32.fill(&[
                    ("dtype", &d),
                    ("fp32", &f),
                    ("runs", &by_switch)
                ]));
            }
            return Ok(Detected { value: by_switch, from: format!("fp32 = {f} (SD node rule)").into() });
        }
        if let Some(d) = q.dtype {
            return Ok(Detected { value: d, from: "flag".into() });
        }
        if let Some(d) = q.loaded_dtype {
            return Ok(Detected { value: d, from: "the loaded dtype".into() });
        }
        crate::error::refuse!(words::NO_DTYPE.text)
    }

    /// The tile that prices a query: a tile at least as large as both sides
    /// of the image does nothing, so it prices as untiled (whatever its
    /// size); any other tile is a whole number of latent pixels (a multiple
    /// of 8 output pixels), measured or not: a tile with no line of its own
    /// is priced by the derived tile rule or the unmeasured rule.
    pub fn effective_tile(&self, q: &Query) -> Result<u32> {
        if q.tile != 0 && u64::from(q.tile) >= q.width && u64::from(q.tile) >= q.height {
            return Ok(0);
        }
        if !q.tile.is_multiple_of(TILE_STEP) {
            crate::error::refuse!(words::TILE_STEP.fill(&[
                ("tile", &q.tile),
                ("step", &TILE_STEP),
                // In u64: the multiple above a tile past 2³² − 8 does not fit a u32.
                ("below", &(u64::from(q.tile / TILE_STEP) * u64::from(TILE_STEP))),
                ("above", &((u64::from(q.tile / TILE_STEP) + 1) * u64::from(TILE_STEP))),
            ]));
        }
        Ok(q.tile)
    }

    /// The query's line key with dtype, allocator and OS resolved.
    pub fn resolve(&self, q: &Query, env: &EnvSnapshot) -> Result<Resolved> {
        let mut tile = self.effective_tile(q)?;
        let family_text = self.family_text(&q.vae)?;
        // One architecture, one price: a family nobody measured whose traces
        // equal a measured family's is priced as that family (`twins`).
        let family_text = match self.twin_of(family_text.as_str()) {
            Some(twin) => self.family_text(&twin.of)?,
            None => family_text,
        };
        let family = family_text.as_str();
        let temporal_tile = self.temporal_tile(q, family)?;
        if temporal_tile.is_some() {
            tile = 0; // a video line's spatial tile is in its working set
        }
        let run = self.run_dtype(q, family)?;
        let os = match q.os {
            Choice::Given(o) => Detected { value: o, from: "flag".into() },
            Choice::Auto => detect_os(env).ok_or_else(|| crate::error::refused!(words::NO_OS.text))?,
        };
        let allocator = match q.allocator {
            Choice::Given(a) => ChosenAllocator { value: a, why: None },
            Choice::Auto => {
                let defaults = &self.file.allocator_defaults;
                let (value, why) =
                    choose_allocator(q.conv_backend, os.value, env, defaults, self.file.default_allocator);
                ChosenAllocator { value, why: Some(why) }
            }
        };
        let key_os =
            if is_os_specific(&self.file.os_specific, q.conv_backend, allocator.value) { os.value } else { Os::Any };
        let key = LineKey {
            // The query's own name when it is the family's (every point
            // `verify` prices): threads pricing side by side then count
            // references on their own points' names, not all on the one
            // shared name (that contention made two threads no faster than one).
            vae: if q.vae.as_str() == family { q.vae.clone() } else { family_text.clone() },
            op: q.op,
            tile,
            temporal_tile,
            conv_backend: q.conv_backend,
            allocator: allocator.value,
            os: key_os,
            dtype: run.value,
        };
        Ok(Resolved { key, run, allocator, os })
    }

    /// The temporal tile of a query's key: None for an image family (which
    /// takes no frames and no temporal tile); for a video family, the one
    /// asked for or the walk's default.
    fn temporal_tile(&self, q: &Query, family: &str) -> Result<Option<u32>> {
        let Some(facts) = self.registry.video(family) else {
            if q.frames != 1 {
                crate::error::refuse!(words::IMAGE_FRAMES.fill(&[("frames", &q.frames), ("family", &family)]));
            }
            if let Some(t @ 1..) = q.temporal_tile {
                crate::error::refuse!(words::IMAGE_TEMPORAL_TILE.fill(&[("tt", &t), ("family", &family)]));
            }
            return Ok(None);
        };
        match (facts.walk, q.temporal_tile) {
            (crate::registry::Walk::Causal, Some(t @ 1..)) => {
                crate::error::refuse!(words::CAUSAL_TEMPORAL_TILE.fill(&[
                    ("tt", &t),
                    ("family", &family),
                    ("frames", &facts.frames)
                ]))
            }
            (crate::registry::Walk::All, Some(t @ 1..)) => {
                crate::error::refuse!(words::WHOLE_CLIP_TEMPORAL_TILE.fill(&[("tt", &t), ("family", &family)]))
            }
            _ => {}
        }
        Ok(Some(facts.key_temporal_tile(q.temporal_tile, q.frames)))
    }

    /// A video query's frame count held to its family's grammar
    /// (`VideoFacts::frame_count`): a count the VAE cannot run (off
    /// `k·t + 1`, or one frame where its decoder needs a clip) is refused
    /// with the nearest counts it runs, on every surface (docs/video.md).
    pub(super) fn check_frames(&self, q: &Query) -> Result<()> {
        let family = self.family_text(&q.vae)?;
        let Some(facts) = self.registry.video(family) else { return Ok(()) };
        if q.frames == 0 {
            crate::error::refuse!(words::FRAMES_POSITIVE.text);
        }
        let Err(off) = facts.frame_count(q.frames, q.op == crate::vocab::Op::Decode) else { return Ok(()) };
        let nearest = match (off.below, off.above) {
            (Some(b), Some(a)) => format!("{b} or {a}"),
            (Some(n), None) | (None, Some(n)) => n.to_string(),
            (None, None) => "none".into(),
        };
        crate::error::refuse!(words::FRAMES_OFF_GRAMMAR.fill(&[
            ("frames", &q.frames),
            ("family", family),
            ("op", &q.op.as_str()),
            ("grammar", &off.grammar),
            ("nearest", &nearest),
        ]))
    }

    fn growth(&self, family: &str, run: Dtype, loaded: Dtype) -> Result<u64> {
        if run.elem_bytes() <= loaded.elem_bytes() {
            return Ok(0);
        }
        let params = self.file.registry.get(family).and_then(|e| e.params).ok_or_else(|| {
            crate::error::refused!(words::NO_WEIGHT_COUNT.fill(&[
                ("loaded", &loaded),
                ("run", &run),
                ("family", &family)
            ]))
        })?;
        params
            .checked_mul(run.elem_bytes() - loaded.elem_bytes())
            .ok_or_else(|| Error::too_large(format!("cast growth of {family} overflows")))
    }

    /// The traced margin as shipped, exact decimal ("0" when none).
    fn traced_margin(&self) -> String {
        self.file.traced.as_ref().map_or_else(|| "0".into(), |t| crate::exact::exact_decimal(&t.margin))
    }

    fn legacy_at(&self, key: &LineKey, shape: legacy::Shape) -> Option<u64> {
        let l = self.file.legacy.as_ref()?;
        legacy::legacy_bytes(l, &key.vae, key.op, key.tile, key.conv_backend, key.dtype, shape)
    }

    /// `--legacy`: the v1 estimator alone.
    pub fn price_legacy(&self, q: &Query, env: &EnvSnapshot) -> Result<Price> {
        let Resolved { key, run, allocator, os } = self.resolve(q, env)?;
        let pixels = pixels(q)?;
        let bytes = self.legacy_at(&key, legacy::Shape::of(q)).ok_or_else(|| {
            crate::error::refused!("the legacy table has no value for {key} (no element size for {})", key.dtype)
        })?;
        Ok(Price {
            bytes,
            mib: bytes.div_ceil(MIB),
            rule: Rule::Legacy,
            priced_by: None,
            slope: None,
            base_mib: None,
            pixels,
            line_bytes: None,
            weight_growth_bytes: 0,
            legacy_bytes: Some(bytes),
            op_bytes: bytes,
            first_use: None,
            extrapolated: false,
            size_range: None,
            measured_on: vec![],
            loaded_dtype: q.loaded_dtype.unwrap_or(run.value),
            run_dtype: run,
            allocator: allocator.detected(),
            os,
            tile_asked: tile_asked(q, &key),
            warnings: tile_warning(q, &key).into_iter().collect(),
            tiled: None,
            attention: None,
            video: None,
            follows_trace: None,
            traced: None,
            lifted: None,
            line: key,
        })
    }
}

/// What a fresh process's answer must say about its first use: a term
/// borrowed from another platform, or none known for the backend.
fn first_use_warning(r: &Resolved, term: Option<&FirstUseTerm>, warm: bool) -> Option<Warning> {
    let here = r.platform();
    match term {
        _ if warm => None,
        None => Some(Warning::FirstUseUnknown { here }),
        Some(t) if t.matched != crate::contract::first_use::FirstUseMatch::Own => {
            Some(Warning::FirstUseBorrowed { here, mib: t.mib, there: t.declared_for.clone() })
        }
        Some(_) => None,
    }
}

fn tile_asked(q: &Query, key: &LineKey) -> Option<u32> {
    (q.tile != key.tile).then_some(q.tile)
}

fn tile_warning(q: &Query, key: &LineKey) -> Option<String> {
    tile_asked(q, key).map(|tile| Warning::TileCoversImage { tile, width: q.width, height: q.height }.to_string())
}

fn pixels(q: &Query) -> Result<u64> {
    if q.width == 0 || q.height == 0 || q.batch == 0 {
        crate::error::refuse!("width, height and batch must be positive");
    }
    crate::exact::pixels(q.width, q.height, q.batch).ok_or_else(|| {
        Error::too_large(words::TOO_LARGE.fill(&[("width", &q.width), ("height", &q.height), ("batch", &q.batch)]))
    })
}

impl Coefficients {
    /// One query priced by its own rules (the steps of `steps::STEPS`, in
    /// order), before the monotone composition (`monotone::settle`)
    /// compares it with the smaller requests it contains.
    fn settle_one(&self, q: &Query, env: &EnvSnapshot) -> Result<Settled<'_>> {
        let mut ask = self.ask(q, env)?;
        let price = steps::compose(self, q, &mut ask)?;
        Ok(Settled { ask, price, lifted: None })
    }

    /// A query resolved for the steps: its key, sizes, cast growth, and
    /// where its lines are evaluated (the image, one tile, a video run).
    fn ask(&self, q: &Query, env: &EnvSnapshot) -> Result<Ask<'_>> {
        let resolved = self.resolve(q, env)?;
        let pixels = pixels(q)?;
        let loaded = q.loaded_dtype.unwrap_or(resolved.run.value);
        let growth = self.growth(&resolved.key.vae, resolved.run.value, loaded)?;
        let tile = resolved.key.tile;
        let mut ask = Ask {
            resolved,
            pixels,
            loaded,
            growth,
            tile,
            at: pixels,
            clip: 0,
            tile_on: None,
            video: None,
            legacy: None,
            attention: None,
            traced: None,
        };
        if let Some(facts) = self.registry.video(&ask.resolved.key.vae) {
            // A video line's spatial tile is in its working set.
            ask.tile = self.effective_tile(q)?;
            let on = self.video_on(facts, &ask.resolved.key, q, ask.tile)?;
            (ask.at, ask.clip) = (on.working_set, on.clip_bytes);
            ask.video = Some(on);
        } else {
            ask.tile_on = self.tile_on(q, &ask.resolved.key, pixels)?;
        }
        Ok(ask)
    }
}

/// What [`Coefficients::settle`] decides: the resolved query with the
/// terms its steps consulted, and the answer; the line that priced it is
/// borrowed from the coefficients (`quote` never copies it).
struct Settled<'a> {
    ask: Ask<'a>,
    price: Candidate<'a>,
    /// The smaller request whose higher price this query takes, settled by
    /// its own rules (`monotone::settle`).
    lifted: Option<Box<(Query, Settled<'a>)>>,
}

impl<'a> Settled<'a> {
    fn key(&self) -> &LineKey {
        self.ask.key()
    }

    /// The query's own rule and reservation.
    fn rule(&self) -> Rule {
        self.price.rule
    }

    fn bytes(&self) -> u64 {
        self.price.bytes
    }

    fn priced_by(&self) -> Option<&'a LineKey> {
        self.price.line.map(|(k, _, _)| k)
    }

    fn coef(&self) -> Option<&'a LineCoef> {
        self.price.line.map(|(_, c, _)| c)
    }

    fn line_bytes(&self) -> Option<u64> {
        self.price.line.map(|(_, _, b)| b)
    }

    /// A tile priced from an untiled line: its inputs.
    fn tiled(&self) -> Option<&TileOn<'a>> {
        self.ask.tile_on.as_ref().filter(|_| self.price.derived)
    }

    /// The rule that priced the line phase (the attention phase may have
    /// set the price above it): what the line's warnings are about.
    fn line_rule(&self) -> Rule {
        self.ask.attention.as_ref().filter(|_| self.rule() == Rule::AttentionPhase).map_or(self.rule(), |a| a.line_rule)
    }

    /// Where the line that priced it was evaluated: one tile's pixels for a
    /// tile priced from an untiled line, the working set for a video run,
    /// else the query's pixels.
    fn line_at(&self) -> u64 {
        match (self.tiled(), &self.ask.video) {
            (Some(t), _) => t.tile_pixels,
            (_, Some(v)) => v.working_set,
            _ => self.ask.pixels,
        }
    }

    /// Whether the line that priced it is evaluated outside its measured range.
    fn extrapolated(&self) -> bool {
        let at = self.line_at();
        !matches!(self.line_rule(), Rule::LegacyFloor | Rule::VideoEstimate)
            && self.coef().and_then(|c| c.size_range).is_some_and(|[lo, hi]| at < lo || at > hi)
    }

    /// The reservation after the monotone composition.
    fn final_bytes(&self) -> u64 {
        self.lifted.as_ref().map_or(self.bytes(), |l| l.1.bytes())
    }

    /// The rule that set the final reservation.
    fn final_rule(&self) -> Rule {
        if self.lifted.is_some() {
            Rule::MonotoneFloor
        } else {
            self.rule()
        }
    }
}

impl Coefficients {
    /// The trace a measured line followed past its measured range to set
    /// this answer's line bytes (None where no line set them, or the
    /// line's formula did).
    fn follows_trace<'a>(&'a self, s: &Settled<'a>) -> Result<Option<traced::PastRange<'a>>> {
        if matches!(s.line_rule(), Rule::Traced | Rule::VideoEstimate | Rule::LegacyFloor) {
            return Ok(None);
        }
        let (Some((k, c, b)), at) = (s.price.line, s.line_at()) else { return Ok(None) };
        Ok(self.past_range(k, c, at)?.filter(|p| p.bytes == b))
    }
}

impl Coefficients {
    /// The first-use term of a resolved query's platform (docs/fit.md,
    /// "First use"), included unless the host is warm.
    pub fn first_use_of(&self, r: &Resolved, warm: bool) -> Option<FirstUseTerm> {
        use crate::contract::first_use::{first_use_for, Platformed};
        let (t, matched) = first_use_for(&self.file.first_use, r.platform())?;
        Some(FirstUseTerm {
            declared_for: t.platform().to_string(),
            matched,
            mib: t.mib,
            bytes: t.mib.saturating_mul(MIB),
            included: !warm,
            source: t.source.clone(),
        })
    }

    /// The answer's bytes: the op's own price plus the first use it includes.
    fn with_first_use(op_bytes: u64, term: Option<&FirstUseTerm>) -> Result<u64> {
        let add = term.filter(|t| t.included).map_or(0, |t| t.bytes);
        op_bytes.checked_add(add).ok_or_else(|| Error::too_large(words::RESERVATION_TOO_LARGE.text))
    }
}

impl Pricer for Coefficients {
    fn quote(&self, q: &Query, env: &EnvSnapshot) -> Result<Quote> {
        let s = self.settle(q, env)?;
        let term = self.first_use_of(&s.ask.resolved, q.warm);
        let bytes = Self::with_first_use(s.final_bytes(), term.as_ref())?;
        Ok(Quote { bytes, rule: s.final_rule(), own: (s.rule(), s.bytes()), line: s.ask.resolved.key })
    }

    fn price(&self, q: &Query, env: &EnvSnapshot) -> Result<Price> {
        let s = self.settle(q, env)?;
        let base = s.line_rule();
        let size_range = s.coef().and_then(|c| c.size_range);
        let at = s.line_at();
        let extrapolated = s.extrapolated();
        let priced_by = || s.priced_by().map(|k| k.to_string()).unwrap_or_default();
        let tile_asked = match &s.ask.video {
            Some(v) => (q.tile != v.run.tile).then_some(q.tile),
            None => tile_asked(q, s.key()),
        };
        // Each warning is a value; its words are made in `warning.rs` alone.
        let key = || s.key().to_string();
        let mut warnings: Vec<Warning> = Vec::new();
        warnings.extend(tile_asked.map(|tile| Warning::TileCoversImage { tile, width: q.width, height: q.height }));
        if let (true, Some([lo, hi])) = (extrapolated, size_range) {
            warnings.push(Warning::Extrapolated { at, line: priced_by(), lo, hi });
        }
        match s.ask.video.as_ref().and_then(|v| v.estimate).filter(|_| base == Rule::VideoEstimate) {
            Some((e, _)) => warnings.push(Warning::VideoEstimate { key: key(), host: e.host.to_string() }),
            None if matches!(base, Rule::UnmeasuredRule | Rule::LegacyFloor) => {
                warnings.push(Warning::NoLine { key: key(), rule: base.as_str() })
            }
            None => {}
        }
        if let Some(t) = s.ask.traced.as_ref().filter(|_| base == Rule::Traced) {
            warnings.push(Warning::Traced {
                key: key(),
                traced: t.traced,
                at: t.at,
                unit: t.shape.unit.words(),
                class: t.calibration.class.to_string(),
                families: t.calibration.families.join(", "),
                slope: t.calibration.slope.to_string(),
                base_mib: t.calibration.base_mib,
                margin: self.traced_margin(),
            });
            if let Some(class) = t.borrowed_from_class {
                let c = t.calibration;
                let calibration =
                    format!("{}/{}/{}/{}/{}/{}/{}", c.class, c.op, c.tile, c.conv_backend, c.allocator, c.os, c.dtype);
                warnings.push(Warning::UncalibratedClass {
                    family: s.key().vae.to_string(),
                    class: class.as_str(),
                    calibration,
                });
            }
            if t.extrapolated() {
                let [lo, hi] = t.shape.size_range;
                warnings.push(Warning::TraceExtrapolated { at: t.at, family: s.key().vae.to_string(), lo, hi });
            }
        }
        if let Some(by) = s.priced_by().filter(|k| base == Rule::UnmeasuredRule && k.dtype != s.key().dtype) {
            warnings.push(Warning::OtherDtypeFloor { by: by.to_string(), by_dtype: by.dtype, dtype: s.key().dtype });
        }
        let family = || s.key().vae.to_string();
        if !self.family_measured(&s.key().vae) && base == Rule::Traced {
            warnings.push(Warning::FamilyTraced { family: family() });
        } else if !self.family_measured(&s.key().vae) {
            warnings.push(Warning::FamilyUnmeasured { family: family() });
        }
        if let Some(n) = s.coef().map(|c| c.simulated_points).filter(|n| *n > 0) {
            let line = s.priced_by().map_or_else(key, |k| k.to_string());
            warnings.push(Warning::Simulated { line, points: n as u64 });
        }
        if base == Rule::AnyOsLine {
            warnings.push(Warning::AnyOsLine { line: priced_by() });
        }
        if let Some(a) = s.ask.attention.as_ref().filter(|a| a.wrong_output) {
            warnings.push(Warning::AttentionWrongOutput {
                sequence: a.sequence,
                at: a.platform.wrong_output_at.unwrap_or(0),
                backend: s.key().conv_backend,
            });
        }
        let follows = self.follows_trace(&s)?;
        if let Some(f) = &follows {
            warnings.push(Warning::FollowsTrace {
                at,
                unit: f.shape.unit.words(),
                line: priced_by(),
                end: f.end,
                family: f.shape.vae.to_string(),
                line_at_end: f.line_at_end,
                traced_at_end: f.traced_at_end,
                traced_at: f.traced_at,
                bytes: f.bytes,
            });
        }
        if let Some((asked, twin)) = self.family_text(&q.vae).ok().and_then(|a| Some((a, self.twin_of(a.as_str())?))) {
            warnings.push(Warning::Twin { family: asked.to_string(), of: twin.of.clone(), rows: twin.rows });
        }
        let lifted = s.lifted.as_ref().map(|l| monotone::lifted(&s, &l.0, &l.1));
        if let Some(l) = &lifted {
            warnings.push(Warning::Lifted { words: monotone::lifted_warning(l) });
        }
        let first_use = self.first_use_of(&s.ask.resolved, q.warm);
        warnings.extend(first_use_warning(&s.ask.resolved, first_use.as_ref(), q.warm));
        // Extrapolated whenever anything the answer rests on is used
        // outside its range: the line, the trace, or the corner that lifted
        // it (issue 62: a warning that said so beside `extrapolated: false`).
        let extrapolated = extrapolated
            || lifted.as_ref().is_some_and(|l| l.extrapolated)
            || warnings.iter().any(|w| matches!(w, Warning::TraceExtrapolated { .. } | Warning::Extrapolated { .. }));
        let warnings: Vec<String> = warnings.iter().map(Warning::to_string).collect();
        let bytes = Self::with_first_use(s.final_bytes(), first_use.as_ref())?;
        Ok(Price {
            bytes,
            mib: bytes.div_ceil(MIB),
            op_bytes: s.final_bytes(),
            first_use,
            rule: s.final_rule(),
            slope: s.coef().map(|c| Slope(c.slope_centi)),
            base_mib: s.coef().map(|c| c.base_mib),
            pixels: s.ask.pixels,
            line_bytes: s.line_bytes(),
            weight_growth_bytes: s.ask.growth,
            legacy_bytes: s.ask.legacy,
            extrapolated,
            size_range,
            measured_on: s.coef().map(|c| c.devices.clone()).unwrap_or_default(),
            loaded_dtype: s.ask.loaded,
            tile_asked,
            warnings,
            video: s.ask.video.as_ref().map(video::VideoOn::terms),
            traced: s.ask.traced.as_ref().map(|t| t.terms(self.traced_margin())),
            follows_trace: follows.as_ref().map(traced::PastRange::terms),
            tiled: s.tiled().map(|t| t.terms(s.line_bytes().unwrap_or(0))),
            attention: s.ask.attention.as_ref().map(AttnOn::terms),
            lifted,
            priced_by: s.priced_by().cloned(),
            run_dtype: s.ask.resolved.run,
            allocator: s.ask.resolved.allocator.detected(),
            os: s.ask.resolved.os,
            line: s.ask.resolved.key,
        })
    }
}
