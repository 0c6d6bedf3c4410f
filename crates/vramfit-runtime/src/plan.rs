//! "Does it fit, and how should it run?" (docs/DESIGN.md, "Plan"). Given a budget, a
//! workload runs `full`, `chunked` in groups, `tiled`, or on the `host`;
//! the verdict always carries the numbers that forced it.
//!
//! VAE work is priced only through the [`Pricer`], by search over batch
//! sizes, never by re-deriving a line's formula: whatever rule prices the
//! query (fitted line, unmeasured rule, legacy floor), the plan agrees with
//! `reserve`.

use crate::contract::LineKey;
use crate::error::{Code, Error, Result};
use crate::exact::Ratio;
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::{Price, Pricer, Query, Rule};
use crate::units::mib_text as mib;
use serde::Serialize;

mod video;

/// How the budget was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetFrom {
    /// `share × free` was the smaller bound.
    Share,
    /// The cap was the smaller bound.
    Cap,
    /// Free memory unknown: the cap alone.
    CapUnknownFree,
}

impl BudgetFrom {
    /// The word the JSON answer uses.
    pub fn as_str(&self) -> &'static str {
        match self {
            BudgetFrom::Share => "share",
            BudgetFrom::Cap => "cap",
            BudgetFrom::CapUnknownFree => "cap-unknown-free",
        }
    }
}

/// The memory a workload may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Budget {
    /// `min(cap, floor(share × free))`, bytes.
    pub bytes: u64,
    /// Which bound set it.
    pub from: BudgetFrom,
    /// Free device memory, bytes (null: unknown).
    pub free: Option<u64>,
    /// Share of the free memory, exact decimal.
    pub share: String,
    /// Cap, bytes (null: none).
    pub cap: Option<u64>,
}

/// Returns a [`Code::Budget`] error with these words.
macro_rules! refuse_budget {
    ($($words:tt)+) => {
        return Err(Error::new(Code::Budget, format!($($words)+)))
    };
}

/// `budget = min(cap, share × free)`; with unknown free memory, the cap.
pub fn budget(free: Option<u64>, share: Ratio, cap: Option<u64>) -> Result<Budget> {
    if share.cmp_exact(&Ratio::zero())? != std::cmp::Ordering::Greater
        || share.cmp_exact(&Ratio::int(1))? == std::cmp::Ordering::Greater
    {
        refuse_budget!("--share must be greater than 0 and at most 1 (got {})", crate::exact::exact_decimal(&share));
    }
    if free == Some(0) {
        refuse_budget!("--free 0: free memory must be more than 0 bytes (or `unknown`)");
    }
    if cap == Some(0) {
        refuse_budget!("--cap 0: a cap must be more than 0 bytes");
    }
    let share_text = crate::exact::exact_decimal(&share);
    let (bytes, from) = match (free, cap) {
        (None, None) => refuse_budget!("free memory is unknown and there is no --cap: give --free SIZE or --cap SIZE"),
        (None, Some(c)) => (c, BudgetFrom::CapUnknownFree),
        (Some(f), cap) => {
            let shared = u64::try_from(share.checked_mul(Ratio::int(i128::from(f)))?.floor())
                .map_err(|_| Error::new(Code::Budget, "budget too large"))?;
            match cap {
                Some(c) if c < shared => (c, BudgetFrom::Cap),
                _ => (shared, BudgetFrom::Share),
            }
        }
    };
    Ok(Budget { bytes, from, free, share: share_text, cap })
}

/// The verdicts, in order of how much they cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Full,
    Chunked,
    Tiled,
    Host,
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Full => "full",
            Verdict::Chunked => "chunked",
            Verdict::Tiled => "tiled",
            Verdict::Host => "host",
        }
    }
}

/// A plan for N items.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Plan {
    /// `vae` or `canvas`.
    pub workload: &'static str,
    /// `full`, `chunked`, `tiled` or `host`.
    pub verdict: Verdict,
    /// The budget, bytes.
    pub budget_bytes: u64,
    /// `share`, `cap` or `cap-unknown-free`.
    pub budget_from: BudgetFrom,
    /// The budget in full.
    pub budget: Budget,
    /// Items (batch elements or frames).
    pub items: u64,
    /// Items per group (null: host).
    pub group_size: Option<u64>,
    /// Number of groups (null: host).
    pub groups: Option<u64>,
    /// First and last group as `[start, end)` (one pair when there is one group).
    pub boundaries: Vec<[u64; 2]>,
    /// The largest reservation the plan makes, bytes (null: host).
    pub peak_bytes: Option<u64>,
    /// The tile edge of a `tiled` verdict.
    pub tile: Option<u32>,
    /// A video run's temporal tile, frames (0: every frame at once; absent for an image VAE).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temporal_tile: Option<u32>,
    /// Bytes per item: a frame's canvas, or what one more batch element adds.
    pub per_item_bytes: Option<u64>,
    /// Frames per sub-chunk of the transient step (canvas with `--transient`; null otherwise or host).
    pub subchunk_frames: Option<u64>,
    /// The transient step's own verdict (`full`, `chunked` or `host`).
    pub transient_verdict: Option<Verdict>,
    /// Why this verdict, with the numbers.
    pub reasons: Vec<String>,
    /// Every pricing the verdict rests on, with the rule and line that
    /// priced it (VAE plans; empty for a canvas).
    pub steps: Vec<PricedStep>,
    /// The warnings of those pricings (legacy floor, unmeasured rule,
    /// extrapolation, a tile that does nothing), each once.
    pub warnings: Vec<String>,
}

/// What a priced step decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum StepRole {
    /// Every item at once.
    All,
    /// One item (when all of them do not fit).
    One,
    /// The chosen group.
    Group,
    /// One more than the chosen group: why the group is not larger.
    NextGroup,
    /// A fallback tile, one item.
    Tile,
}

/// One pricing a plan rests on, and where its number came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PricedStep {
    /// What this pricing decided.
    pub role: StepRole,
    /// Items priced together.
    pub batch: u64,
    /// The tile priced (0 = untiled).
    pub tile: u32,
    /// A video run's temporal tile, frames (0: every frame at once; absent for an image VAE).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temporal_tile: Option<u32>,
    /// The reservation, bytes.
    pub bytes: u64,
    /// Whether it fits the budget.
    pub fits: bool,
    /// The rule that priced it.
    pub rule: Rule,
    /// The key priced.
    pub line: LineKey,
    /// The line whose formula set the price, where one did.
    pub priced_by: Option<LineKey>,
    /// Whether the size lies outside that line's measured range.
    pub extrapolated: bool,
    /// The pricing's own warnings.
    pub warnings: Vec<String>,
    /// Why this number is an estimate (see `Price::estimates`); empty when a
    /// measured line priced it inside its range.
    pub estimates: Vec<String>,
}

impl PricedStep {
    fn of(role: StepRole, batch: u64, p: &Price, budget: u64) -> PricedStep {
        PricedStep {
            role,
            batch,
            tile: p.spatial_tile(),
            temporal_tile: p.temporal_tile(),
            bytes: p.bytes,
            fits: p.bytes <= budget,
            rule: p.rule,
            line: p.line.clone(),
            priced_by: p.priced_by.clone(),
            extrapolated: p.extrapolated,
            warnings: p.warnings.clone(),
            estimates: p.estimates(),
        }
    }
}

impl Plan {
    /// The worst verdict in the plan, the transient step included.
    pub fn worst(&self) -> Verdict {
        self.transient_verdict.map_or(self.verdict, |t| t.max(self.verdict))
    }

    /// Whether any part of the work runs on the host.
    pub fn any_host(&self) -> bool {
        self.worst() == Verdict::Host
    }

    /// Why the plan rests on estimates (what `--strict` refuses), each once.
    pub fn estimates(&self) -> Vec<String> {
        each_once(self.steps.iter().flat_map(|s| s.estimates.iter()))
    }
}

/// Messages in their first order, each once.
fn each_once<'a>(messages: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in messages {
        if !out.contains(m) {
            out.push(m.clone());
        }
    }
    out
}

/// Every group of `g` over `n` items: `[i·g, min((i+1)·g, n))`. The same
/// grouping whatever `n`, so the groups of N items are a prefix of those of
/// N + k (the last one possibly cut short).
pub fn all_groups(n: u64, g: u64) -> Vec<[u64; 2]> {
    let g = g.max(1);
    (0..n.div_ceil(g)).map(|i| [i * g, ((i + 1) * g).min(n)]).collect()
}

/// The first and the last group (one pair when there is one group),
/// computed directly: a plan of 10^18 frames lists two pairs, not 10^18.
pub fn groups(n: u64, g: u64) -> Vec<[u64; 2]> {
    let g = g.max(1);
    let count = n.div_ceil(g);
    let at = |i: u64| [i * g, i.saturating_add(1).saturating_mul(g).min(n)];
    match count {
        0 => vec![],
        1 => vec![at(0)],
        c => vec![at(0), at(c - 1)],
    }
}

fn finish(workload: &'static str, b: &Budget, items: u64, verdict: Verdict, g: Option<u64>) -> Plan {
    Plan {
        workload,
        verdict,
        budget_bytes: b.bytes,
        budget_from: b.from,
        budget: b.clone(),
        items,
        group_size: g,
        groups: g.map(|g| items.div_ceil(g)),
        boundaries: g.map(|g| groups(items, g)).unwrap_or_default(),
        peak_bytes: None,
        tile: None,
        temporal_tile: None,
        per_item_bytes: None,
        subchunk_frames: None,
        transient_verdict: None,
        reasons: vec![],
        steps: vec![],
        warnings: vec![],
    }
}

/// Plans a VAE query whose `batch` is the number of items. A query with a
/// tile runs tiled (and is labelled so) whether or not every item fits.
pub fn vae(pricer: &dyn Pricer, q: &Query, env: &EnvSnapshot, b: &Budget, tiles: &[u32]) -> Result<Plan> {
    let n = q.batch;
    let price = |batch: u64, tile: u32| -> Result<Price> { pricer.price(&Query { batch, tile, ..q.clone() }, env) };
    let mut steps = Vec::new();
    let all = price(n, q.tile)?;
    // The tile that priced it: a tile as large as the image prices untiled.
    let tile = all.spatial_tile();
    let own = if tile == 0 { None } else { Some(tile) };
    steps.push(PricedStep::of(StepRole::All, n, &all, b.bytes));
    let one = if n == 1 { all.clone() } else { price(1, tile)? };
    let per_item = |one: &Price| -> Result<u64> {
        Ok(if n > 1 { price(2, tile)?.bytes.saturating_sub(one.bytes) } else { one.bytes })
    };
    // Where one attention matrix would return wrong output (MPS past 2^31
    // elements), the work must tile whatever the memory says.
    let wrong = |p: &Price| p.attention.as_ref().is_some_and(|a| a.wrong_output);
    if wrong(&all) {
        let reasons = vec![format!(
            "{}one attention matrix has {}² elements, past the {} limit where SDPA returns wrong output: tiled",
            if tile == 0 { "untiled, " } else { "" },
            all.attention.as_ref().map_or(0, |a| a.sequence),
            all.line.conv_backend
        )];
        return tiled_or_host(pricer, q, env, b, tiles, tile, reasons, steps);
    }
    if all.bytes <= b.bytes {
        let mut p = finish("vae", b, n, own.map_or(Verdict::Full, |_| Verdict::Tiled), Some(n));
        p.tile = own;
        p.temporal_tile = all.temporal_tile();
        p.peak_bytes = Some(all.bytes);
        p.per_item_bytes = Some(per_item(&one)?);
        p.reasons.push(format!("all {n} item(s) reserve {} ≤ budget {}", mib(all.bytes), mib(b.bytes)));
        return Ok(with_steps(p, steps));
    }
    if one.bytes <= b.bytes {
        steps.push(PricedStep::of(StepRole::One, 1, &one, b.bytes));
        // Largest g with price(g) ≤ budget; prices never fall as g grows.
        let (mut lo, mut hi) = (1u64, n - 1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if price(mid, tile)?.bytes <= b.bytes {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let largest = lo;
        // The largest group that fits sets the fewest passes, ceil(n / largest);
        // among groupings of that many passes the lowest peak is the one with
        // groups as even as can be (prices never fall as a group grows).
        let passes = n.div_ceil(largest);
        let g = n.div_ceil(passes);
        let group = price(g, tile)?;
        if g > 1 {
            // A group of one is the one-item pricing already listed.
            steps.push(PricedStep::of(StepRole::Group, g, &group, b.bytes));
        }
        steps.push(PricedStep::of(StepRole::NextGroup, largest + 1, &price(largest + 1, tile)?, b.bytes));
        let mut p = finish("vae", b, n, own.map_or(Verdict::Chunked, |_| Verdict::Tiled), Some(g));
        p.tile = own;
        p.temporal_tile = all.temporal_tile();
        p.peak_bytes = Some(group.bytes);
        p.per_item_bytes = Some(per_item(&one)?);
        p.reasons.push(format!(
            "all {n} reserve {} > budget {}; groups of {g} reserve {}",
            mib(all.bytes),
            mib(b.bytes),
            mib(group.bytes)
        ));
        if g < largest {
            p.reasons.push(format!(
                "groups of up to {largest} fit, in {passes} passes; {passes} groups of at most {g} is the fewest \
                 passes at the lowest peak ({} instead of {})",
                mib(group.bytes),
                mib(price(largest, tile)?.bytes)
            ));
        }
        return Ok(with_steps(p, steps));
    }
    if n > 1 {
        steps.push(PricedStep::of(StepRole::One, 1, &one, b.bytes));
    }
    let reasons = vec![format!("one item reserves {} > budget {}", mib(one.bytes), mib(b.bytes))];
    tiled_or_host(pricer, q, env, b, tiles, tile, reasons, steps)
}

/// One item at a time on the largest tile that fits (smaller than the
/// tile asked for, when one was), or the host: the plan's last resort,
/// with the tiles it priced and why.
#[allow(clippy::too_many_arguments)]
fn tiled_or_host(
    pricer: &dyn Pricer,
    q: &Query,
    env: &EnvSnapshot,
    b: &Budget,
    tiles: &[u32],
    tile: u32,
    mut reasons: Vec<String>,
    mut steps: Vec<PricedStep>,
) -> Result<Plan> {
    // A tile as large as the image would price the untiled work again.
    let one_item = Query { batch: 1, ..q.clone() };
    let probe = pricer.price(&one_item, env)?;
    let search = match &probe.video {
        Some(v) => video::largest_tiles(pricer, &one_item, env, b.bytes, v, tiles)?,
        None => largest_tile(pricer, &one_item, env, b.bytes, (tile != 0).then_some(tile), tiles)?,
    };
    for considered in [&search.next_larger, &search.skipped_legacy].into_iter().flatten() {
        steps.push(PricedStep::of(StepRole::Tile, 1, considered, b.bytes));
    }
    reasons.extend(search.reasons.iter().cloned());
    let p = match &search.chosen {
        Some(chosen) => {
            steps.push(PricedStep::of(StepRole::Tile, 1, chosen, b.bytes));
            let mut p = finish("vae", b, q.batch, Verdict::Tiled, Some(1));
            p.tile = Some(chosen.spatial_tile());
            p.temporal_tile = chosen.temporal_tile();
            p.peak_bytes = Some(chosen.bytes);
            p
        }
        None => {
            reasons.push("nothing fits on the device: run on the host".into());
            finish("vae", b, q.batch, Verdict::Host, None)
        }
    };
    Ok(with_steps(Plan { reasons, ..p }, steps))
}

/// The answer to "what is the largest tile whose price fits?".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TileSearch {
    /// The largest tile that fits, priced (null: none does).
    pub chosen: Option<Price>,
    /// The next larger tile searched, which did not fit (null: none, or the chosen one is the largest).
    pub next_larger: Option<Price>,
    /// A larger tile that fits only by the legacy floor's guess, passed over
    /// for a measured or derived price (null: none).
    pub skipped_legacy: Option<Price>,
    /// Tile edges priced.
    pub searched: usize,
    /// Why, in words.
    pub reasons: Vec<String>,
}

/// Every tile a search tries, largest first: the multiples of 64 pixels
/// (8 latent pixels of an 8x VAE, the step the hosts' tile options take)
/// and the coefficients' own tiles, each smaller than `below` and than the
/// image's longer side (a tile covering the image is the untiled work).
/// Held as that rule, never listed: an image 2^32 px wide has 67 million
/// candidates, and a search bisects them (prices never fall as a tile
/// grows, docs/DESIGN.md, "Monotone composition"), pricing O(log n).
#[derive(Debug, Clone)]
pub struct TileCandidates {
    /// How many multiples of [`TILE_SEARCH_STEP`] (1, 2, … this many).
    steps: u64,
    /// The known tiles below the limit that are not such multiples, sorted.
    known: Vec<u32>,
}

impl TileCandidates {
    pub fn new(width: u64, height: u64, below: Option<u32>, known: &[u32]) -> TileCandidates {
        let longest = width.max(height);
        let limit = below.map_or(longest, |t| u64::from(t).min(longest));
        let step = u64::from(TILE_SEARCH_STEP);
        // Multiples strictly below the limit that a tile (u32) holds.
        let steps = (limit.saturating_sub(1) / step).min(u64::from(u32::MAX) / step);
        let mut known: Vec<u32> =
            known.iter().copied().filter(|t| *t > 0 && u64::from(*t) < limit && t % TILE_SEARCH_STEP != 0).collect();
        known.sort_unstable();
        known.dedup();
        TileCandidates { steps, known }
    }

    /// How many tiles the search covers.
    pub fn len(&self) -> usize {
        usize::try_from(self.steps).unwrap_or(usize::MAX).saturating_add(self.known.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn multiple(i: u64) -> u32 {
        u32::try_from(i * u64::from(TILE_SEARCH_STEP)).unwrap_or(u32::MAX)
    }

    /// The smallest candidate.
    pub fn smallest(&self) -> Option<u32> {
        let m = (self.steps > 0).then(|| Self::multiple(1));
        [m, self.known.first().copied()].into_iter().flatten().min()
    }

    /// The next candidate above `t`.
    pub fn above(&self, t: u32) -> Option<u32> {
        let i = u64::from(t) / u64::from(TILE_SEARCH_STEP) + 1;
        let m = (i <= self.steps).then(|| Self::multiple(i));
        let k = self.known.iter().copied().find(|k| *k > t);
        [m, k].into_iter().flatten().min()
    }

    /// The candidates below `t`, largest first (lazily).
    pub fn below(&self, t: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(self.below_one(t), move |c| self.below_one(*c))
    }

    fn below_one(&self, t: u32) -> Option<u32> {
        let i = (u64::from(t).saturating_sub(1) / u64::from(TILE_SEARCH_STEP)).min(self.steps);
        let m = (i >= 1).then(|| Self::multiple(i));
        let k = self.known.iter().rev().copied().find(|k| *k < t);
        [m, k].into_iter().flatten().max()
    }

    /// The largest candidate for which `fits` holds, where `fits` holds for
    /// every tile below one it holds for: the multiples by bisection, the
    /// few known tiles one by one.
    pub fn largest(&self, mut fits: impl FnMut(u32) -> Result<bool>) -> Result<Option<u32>> {
        let (mut lo, mut hi) = (0u64, self.steps); // fits(multiple(lo)) holds (lo = 0: none)
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fits(Self::multiple(mid))? {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let mut best = (lo > 0).then(|| Self::multiple(lo));
        for k in self.known.iter().rev().copied().filter(|k| best.is_none_or(|b| *k > b)) {
            if fits(k)? {
                best = Some(k);
                break;
            }
        }
        Ok(best)
    }
}

/// The step of [`TileCandidates`].
pub const TILE_SEARCH_STEP: u32 = 64;

/// How many tiles below a legacy-floor answer a search prices to find one
/// priced by a line (a bounded window: the preference must not make a
/// search walk the whole image).
pub const LEGACY_WINDOW: usize = 64;

/// Whether a price rests on the legacy floor's guess rather than on a line
/// (directly, or through the smaller request whose price it took).
pub(crate) fn by_legacy(p: &Price) -> bool {
    let rule = p.lifted.as_ref().map_or(p.rule, |l| l.rule);
    matches!(rule, Rule::LegacyFloor | Rule::Legacy)
}

/// The largest tile (below `below`, when given) whose price fits `budget`:
/// found by bisection over the candidates (prices never fall as a tile
/// grows); when that one fits only by the legacy floor's guess, the
/// largest of the next [`LEGACY_WINDOW`] smaller candidates priced by a
/// measured line, the derived tile rule or the unmeasured rule is taken
/// instead. O(log n) pricings in the image's size.
pub fn largest_tile(
    pricer: &dyn Pricer,
    q: &Query,
    env: &EnvSnapshot,
    budget: u64,
    below: Option<u32>,
    known: &[u32],
) -> Result<TileSearch> {
    let candidates = TileCandidates::new(q.width, q.height, below, known);
    let price = |t: u32| pricer.price(&Query { tile: t, ..q.clone() }, env);
    // A tile whose attention matrix returns wrong output does not "fit".
    let fits = |p: &Price| p.bytes <= budget && !p.attention.as_ref().is_some_and(|a| a.wrong_output);
    let any = candidates.largest(|t| Ok(fits(&price(t)?)))?.map(price).transpose()?;
    let mut skipped_legacy = None;
    let mut chosen = any.clone();
    if let Some(a) = any.as_ref().filter(|a| by_legacy(a)) {
        for t in candidates.below(a.spatial_tile()).take(LEGACY_WINDOW) {
            let p = price(t)?;
            if fits(&p) && !by_legacy(&p) {
                skipped_legacy = any.clone();
                chosen = Some(p);
                break;
            }
        }
    }
    let next_larger = match &chosen {
        Some(c) => candidates.above(c.spatial_tile()).map(price).transpose()?.filter(|p| !fits(p)),
        None => None,
    };
    let mut reasons = Vec::new();
    match &chosen {
        Some(c) => {
            reasons.push(format!(
                "tile {} is the largest of {} tile edges searched (multiples of {TILE_SEARCH_STEP} px and the \
                 measured tiles) whose price fits: {} ≤ budget {}, by the {}",
                c.spatial_tile(),
                candidates.len(),
                mib(c.bytes),
                mib(budget),
                c.rule.as_str()
            ));
            if let Some(n) = &next_larger {
                reasons.push(match n.attention.as_ref().filter(|a| a.wrong_output) {
                    Some(a) => format!(
                        "tile {}: one attention matrix has {}² elements, past the {} limit where SDPA returns wrong output",
                        n.spatial_tile(), a.sequence, n.line.conv_backend
                    ),
                    None => format!("tile {} reserves {} > budget", n.spatial_tile(), mib(n.bytes)),
                });
            }
            if let Some(l) = &skipped_legacy {
                reasons.push(format!(
                    "tile {} fits only by the legacy floor's guess ({}): passed over for a measured or derived price",
                    l.spatial_tile(),
                    mib(l.bytes)
                ));
            }
        }
        None => {
            reasons.push(match candidates.smallest().map(price).transpose()? {
                Some(s) => format!(
                    "no tile fits: even tile {} reserves {} > budget {}",
                    s.spatial_tile(),
                    mib(s.bytes),
                    mib(budget)
                ),
                None => "no tile is smaller than the image".to_string(),
            });
        }
    }
    Ok(TileSearch { chosen, next_larger, skipped_legacy, searched: candidates.len(), reasons })
}

/// `reserve --max-tile-for BUDGET`: the largest tile whose price fits.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct MaxTileReport {
    /// The budget asked about, bytes.
    pub budget_bytes: u64,
    /// The spatial tile chosen, pixels (null: none fits). A video answer's
    /// key holds tile 0 (its tile is in the working set): this is the tile.
    pub tile: Option<u32>,
    /// The search and its answer.
    #[serde(flatten)]
    pub search: TileSearch,
    /// Which coefficients priced it.
    pub coefficients: String,
}

fn with_steps(mut p: Plan, steps: Vec<PricedStep>) -> Plan {
    p.warnings = each_once(steps.iter().flat_map(|s| s.warnings.iter()));
    p.steps = steps;
    p
}

/// A frame canvas: `frames` frames of `width × height × channels × upscale²` uint8 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canvas {
    pub width: u64,
    pub height: u64,
    pub channels: u64,
    pub upscale: u64,
    pub frames: u64,
    /// Peak multiple of a step over its uint8 input (e.g. 9 for a float convert-out).
    pub transient: Option<Ratio>,
}

pub fn canvas(c: &Canvas, b: &Budget) -> Result<Plan> {
    let per_frame = c
        .width
        .checked_mul(c.height)
        .and_then(|v| v.checked_mul(c.channels))
        .and_then(|v| v.checked_mul(c.upscale))
        .and_then(|v| v.checked_mul(c.upscale))
        .filter(|v| *v > 0)
        .ok_or_else(|| crate::error::refused!("the frame canvas is empty or too large"))?;
    let n = c.frames;
    let all = u128::from(per_frame) * u128::from(n);
    let g = b.bytes / per_frame;
    let mut p = if all <= u128::from(b.bytes) {
        let mut p = finish("canvas", b, n, Verdict::Full, Some(n));
        p.peak_bytes = u64::try_from(all).ok();
        p.reasons.push(format!("{n} frames × {per_frame} B = {} ≤ budget {}", mib(all as u64), mib(b.bytes)));
        p
    } else if g >= 1 {
        let mut p = finish("canvas", b, n, Verdict::Chunked, Some(g));
        p.peak_bytes = Some(g * per_frame);
        p.reasons.push(format!(
            "{n} frames × {per_frame} B > budget {}; floor(budget / frame) = {g} frames a group",
            mib(b.bytes)
        ));
        p
    } else {
        let mut p = finish("canvas", b, n, Verdict::Host, None);
        p.reasons.push(format!("one frame ({per_frame} B) > budget ({} B): run on the host", b.bytes));
        p
    };
    p.per_item_bytes = Some(per_frame);
    if let Some(m) = c.transient {
        if m.cmp_exact(&Ratio::zero())? != std::cmp::Ordering::Greater {
            crate::error::refuse!("--transient must be positive");
        }
        let step = m.checked_mul(Ratio::int(i128::from(per_frame))).ok();
        let frames = transient_frames(b.bytes, m, per_frame);
        let label = crate::exact::exact_decimal(&m);
        if frames == 0 {
            p.transient_verdict = Some(Verdict::Host);
            p.reasons.push(format!(
                "transient step ({label}× a frame = {} B) > budget ({} B): that step runs on the host",
                step.map(|s| s.ceil().to_string()).unwrap_or_else(|| "more than 2^127".into()),
                b.bytes
            ));
        } else {
            let sub = u64::try_from(frames.min(u128::from(p.group_size.unwrap_or(n)))).unwrap_or(u64::MAX);
            p.subchunk_frames = Some(sub);
            p.transient_verdict = Some(if sub >= p.group_size.unwrap_or(n) { Verdict::Full } else { Verdict::Chunked });
            p.reasons.push(format!(
                "transient step peaks at {label}× its input: floor(budget / ({label} × {per_frame} B)) = {frames} \
                 frames a sub-chunk"
            ));
        }
    }
    Ok(p)
}

/// `floor(budget / (m × frame))` exactly, for any factor `m = p/q` the
/// decimal parser accepts (q ≤ 10^18, so `budget × q` < 2^124 fits): when
/// `p × frame` overflows, the step is larger than any budget and no frame
/// fits.
fn transient_frames(budget: u64, m: Ratio, per_frame: u64) -> u128 {
    let (p, q) = (m.num().unsigned_abs(), m.den().unsigned_abs());
    let Some(top) = u128::from(budget).checked_mul(q) else { return 0 };
    match p.checked_mul(u128::from(per_frame)) {
        Some(bottom) if bottom > 0 => top / bottom,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_of_n_are_a_prefix_of_groups_of_n_plus_k() {
        for g in 1..7u64 {
            for n in 1..40u64 {
                for k in 0..10u64 {
                    let a = all_groups(n, g);
                    let b = all_groups(n + k, g);
                    let last = a.len() - 1;
                    assert_eq!(a[..last], b[..last], "g={g} n={n} k={k}");
                    assert_eq!(a[last][0], b[last][0]);
                    assert!(a[last][1] <= b[last][1]);
                    assert_eq!(a.iter().map(|r| r[1] - r[0]).sum::<u64>(), n);
                    let ends = groups(n, g);
                    assert_eq!(ends[0], a[0]);
                    assert_eq!(ends[ends.len() - 1], a[last]);
                }
            }
        }
    }

    #[test]
    fn budget_bounds() {
        let half = Ratio::new(1, 2).unwrap();
        let b = budget(Some(1000), half, Some(400)).unwrap();
        assert_eq!((b.bytes, b.from), (400, BudgetFrom::Cap));
        let b = budget(Some(1000), half, Some(600)).unwrap();
        assert_eq!((b.bytes, b.from), (500, BudgetFrom::Share));
        let b = budget(Some(1001), half, None).unwrap();
        assert_eq!((b.bytes, b.from), (500, BudgetFrom::Share), "share × free rounds down");
        let b = budget(None, half, Some(77)).unwrap();
        assert_eq!((b.bytes, b.from), (77, BudgetFrom::CapUnknownFree));
        assert!(budget(None, half, None).is_err());
        assert!(budget(Some(1), Ratio::zero(), None).is_err());
        assert!(budget(Some(1), Ratio::new(3, 2).unwrap(), None).is_err());
        assert!(budget(Some(0), half, None).is_err(), "zero free memory is an error");
        assert!(budget(None, half, Some(0)).is_err(), "a zero cap is an error");
    }

    #[test]
    fn transient_frames_are_exact_for_tiny_and_huge_factors() {
        let frame = 44_236_800u64;
        let budget = 20u64 << 30;
        let tiny = crate::exact::parse_decimal("0.000000000000000001").unwrap();
        // 10^18 × budget / frame frames: far more than any group.
        assert_eq!(transient_frames(budget, tiny, frame), u128::from(budget) * 10u128.pow(18) / u128::from(frame));
        let nine = Ratio::int(9);
        assert_eq!(transient_frames(budget, nine, frame), u128::from(budget / (9 * frame)));
        let huge = crate::exact::parse_decimal("99999999999999999999").unwrap();
        assert_eq!(transient_frames(budget, huge, frame), 0);
        assert_eq!(transient_frames(u64::MAX, Ratio::int(1), 1), u128::from(u64::MAX));
    }
}
