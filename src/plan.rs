//! "Does it fit, and how should it run?" (SPEC §9). Given a budget, a
//! workload runs `full`, `chunked` in groups, `tiled`, or on the `host`;
//! the verdict always carries the numbers that forced it.
//!
//! VAE work is priced only through the [`Pricer`], by search over batch
//! sizes, never by re-deriving a line's formula: whatever rule prices the
//! query (fitted line, unmeasured rule, legacy floor), the plan agrees with
//! `reserve`.

use crate::exact::Ratio;
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::{Pricer, Query};
use crate::units::mib_text as mib;
use anyhow::{anyhow, bail, Result};
use serde::Serialize;

/// How the budget was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetFrom {
    /// `share × free` was the smaller bound.
    Share,
    /// The cap was the smaller bound.
    Cap,
    /// Free memory unknown: the cap alone.
    CapUnknownFree,
}

/// The memory a workload may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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

/// `budget = min(cap, share × free)`; with unknown free memory, the cap.
pub fn budget(free: Option<u64>, share: Ratio, cap: Option<u64>) -> Result<Budget> {
    if share.cmp_exact(&Ratio::zero())? != std::cmp::Ordering::Greater
        || share.cmp_exact(&Ratio::int(1))? == std::cmp::Ordering::Greater
    {
        bail!("--share must be greater than 0 and at most 1 (got {})", crate::exact::exact_decimal(&share));
    }
    let share_text = crate::exact::exact_decimal(&share);
    let (bytes, from) = match (free, cap) {
        (None, None) => bail!("free memory is unknown and there is no --cap: give --free SIZE or --cap SIZE"),
        (None, Some(c)) => (c, BudgetFrom::CapUnknownFree),
        (Some(f), cap) => {
            let shared = u64::try_from(share.checked_mul(Ratio::int(i128::from(f)))?.floor())
                .map_err(|_| anyhow!("budget too large"))?;
            match cap {
                Some(c) if c < shared => (c, BudgetFrom::Cap),
                _ => (shared, BudgetFrom::Share),
            }
        }
    };
    Ok(Budget { bytes, from, free, share: share_text, cap })
}

/// The verdicts, in order of how much they cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
    /// Bytes per item: a frame's canvas, or what one more batch element adds.
    pub per_item_bytes: Option<u64>,
    /// Frames per sub-chunk of the transient step (canvas with `--transient`; null otherwise or host).
    pub subchunk_frames: Option<u64>,
    /// The transient step's own verdict (`full`, `chunked` or `host`).
    pub transient_verdict: Option<Verdict>,
    /// Why this verdict, with the numbers.
    pub reasons: Vec<String>,
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
}

/// Every group of `g` over `n` items: `[i·g, min((i+1)·g, n))`. The same
/// grouping whatever `n`, so the groups of N items are a prefix of those of
/// N + k (the last one possibly cut short).
pub fn all_groups(n: u64, g: u64) -> Vec<[u64; 2]> {
    let g = g.max(1);
    (0..n.div_ceil(g)).map(|i| [i * g, ((i + 1) * g).min(n)]).collect()
}

/// The first and the last group (one pair when there is one group).
pub fn groups(n: u64, g: u64) -> Vec<[u64; 2]> {
    let all = all_groups(n, g);
    match all.len() {
        0 | 1 => all,
        c => vec![all[0], all[c - 1]],
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
        per_item_bytes: None,
        subchunk_frames: None,
        transient_verdict: None,
        reasons: vec![],
    }
}

/// Plans a VAE query whose `batch` is the number of items.
pub fn vae(pricer: &dyn Pricer, q: &Query, env: &EnvSnapshot, b: &Budget, tiles: &[u32]) -> Result<Plan> {
    let n = q.batch;
    let price =
        |batch: u64, tile: u32| -> Result<u64> { Ok(pricer.price(&Query { batch, tile, ..q.clone() }, env)?.bytes) };
    let all = price(n, q.tile)?;
    let one = price(1, q.tile)?;
    if all <= b.bytes {
        let mut p = finish("vae", b, n, Verdict::Full, Some(n));
        p.peak_bytes = Some(all);
        p.per_item_bytes = Some(if n > 1 { price(2, q.tile)?.saturating_sub(one) } else { one });
        p.reasons.push(format!("all {n} item(s) reserve {} ≤ budget {}", mib(all), mib(b.bytes)));
        return Ok(p);
    }
    if one <= b.bytes {
        // Largest g with price(g) ≤ budget; prices never fall as g grows.
        let (mut lo, mut hi) = (1u64, n - 1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if price(mid, q.tile)? <= b.bytes {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let g = lo;
        let mut p = finish("vae", b, n, Verdict::Chunked, Some(g));
        p.peak_bytes = Some(price(g, q.tile)?);
        p.per_item_bytes = Some(price(2, q.tile)?.saturating_sub(one));
        p.reasons.push(format!(
            "all {n} reserve {} > budget {}; groups of {g} reserve {}",
            mib(all),
            mib(b.bytes),
            mib(price(g, q.tile)?)
        ));
        return Ok(p);
    }
    let mut reasons = vec![format!("one item reserves {} > budget {}", mib(one), mib(b.bytes))];
    for &t in tiles.iter().filter(|t| q.tile == 0 || **t < q.tile) {
        let tiled = price(1, t)?;
        if tiled <= b.bytes {
            let mut p = finish("vae", b, n, Verdict::Tiled, Some(1));
            p.tile = Some(t);
            p.peak_bytes = Some(tiled);
            reasons.push(format!("tile {t} reserves {} ≤ budget: one item at a time, tiled", mib(tiled)));
            p.reasons = reasons;
            return Ok(p);
        }
        reasons.push(format!("tile {t} reserves {} > budget", mib(tiled)));
    }
    let mut p = finish("vae", b, n, Verdict::Host, None);
    reasons.push("nothing fits on the device: run on the host".into());
    p.reasons = reasons;
    Ok(p)
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
        .ok_or_else(|| anyhow!("the frame canvas is empty or too large"))?;
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
            bail!("--transient must be positive");
        }
        let step = m.checked_mul(Ratio::int(i128::from(per_frame)))?;
        let frames = Ratio::int(i128::from(b.bytes)).checked_div(step)?.floor();
        let frames = u64::try_from(frames).unwrap_or(0);
        let label = crate::exact::exact_decimal(&m);
        if frames == 0 {
            p.transient_verdict = Some(Verdict::Host);
            p.reasons.push(format!(
                "transient step ({label}× a frame = {} B) > budget ({} B): that step runs on the host",
                step.ceil(),
                b.bytes
            ));
        } else {
            let sub = frames.min(p.group_size.unwrap_or(n));
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
    }
}
