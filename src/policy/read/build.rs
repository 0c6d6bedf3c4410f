//! The read document becomes a [`Policy`]: defaults filled in, and what
//! holds across fields checked (a duplicate, a reference between tables, a
//! bound that depends on a number's form), each refusal on its entry's line.

use super::Place;
use crate::exact::Ratio;
use crate::points::LineKey;
use crate::policy::document::{
    AttentionEntry, CarryEntry, LegacyEntry, ListedEntry, PolicyFile, TilingEntry, VaeFamily,
};
use crate::policy::values::{At, Decimal};
use crate::policy::{
    AllocatorDefault, Attention, AttentionPlatform, Carry, Legacy, LegacyK, Listed, OsSpecific, Policy, Tiling,
    TilingHost, TracedMargin, ATTENTION_FORMULA, DERIVED_TILE_FORMULA, UNMEASURED_RULE,
};
use crate::registry::{MidBlock, Registry, VaeEntry};
use crate::vocab::Allocator;
use anyhow::{bail, Result};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// At most six decimal places and at most `max`: the exact numbers the
/// shipped file carries stay small.
pub(super) fn bounded(r: Ratio, max: i128) -> bool {
    r.den() <= 1_000_000 && r.cmp_exact(&Ratio::int(max)).is_ok_and(|o| o != Ordering::Greater)
}

impl Place<'_> {
    pub(super) fn policy(&self, d: PolicyFile) -> Result<Policy> {
        let margin = d.margin.map_or(Ratio::new(5, 100)?, |m| m.0);
        let ratio_bound = d.ratio_bound.map_or(Ratio::new(13, 10)?, |r| r.0);
        if ratio_bound.cmp_exact(&Ratio::int(1))? == Ordering::Less {
            bail!(
                self.err_file("ratio_bound", "must be at least 1 (a reservation cannot be below the demand it covers)")
            );
        }
        if margin.den() > 1_000_000 || ratio_bound.den() > 1_000_000 {
            bail!(self.err_file("margin / ratio_bound", "at most 6 decimal places"));
        }
        let unmeasured = match d.unmeasured {
            None => UNMEASURED_RULE.to_string(),
            Some(s) if s.0 == UNMEASURED_RULE => s.0,
            Some(s) => {
                bail!(self.err_file("unmeasured", format!("unknown rule '{}' (accepted: {UNMEASURED_RULE})", s.0)))
            }
        };
        let excludes = self.listed(d.exclude, "exclude")?;
        let keeps = self.listed(d.keep, "keep")?;
        if let Some(k) = keeps.iter().find(|k| excludes.iter().any(|e| e.id == k.id)) {
            bail!(self.err_file("keep", format!("id '{}' is both kept and excluded: decide one", k.id)));
        }
        let exceptions = self.listed(d.exception, "exception")?;
        let families = d.vae.unwrap_or_default();
        let registry = self.registry(families)?;
        let carries = self.carries(d.carry.unwrap_or_default(), &registry)?;
        let os_specific = d
            .os_specific
            .unwrap_or_default()
            .into_iter()
            .map(|e| OsSpecific { conv_backend: e.value.conv_backend, allocator: e.value.allocator.and_then(|a| a.0) })
            .collect();
        let allocator_defaults = d
            .allocator_default
            .unwrap_or_default()
            .into_iter()
            .map(|e| AllocatorDefault {
                conv_backend: e.value.conv_backend,
                os: e.value.os,
                allocator: e.value.allocator,
            })
            .collect();
        let legacy = d.legacy.map(|l| self.legacy(l)).transpose()?;
        let grid = match d.grid {
            None => [512u64, 768, 1024, 1280, 1536, 2048].iter().map(|s| (*s, *s)).collect(),
            Some(sizes) => sizes.into_iter().map(|s| (s.0, s.1)).collect(),
        };
        let mut tiles: Vec<u32> = match d.tiles {
            None => vec![1024, 768, 512, 256],
            Some(t) => t.into_iter().map(|e| e.0 as u32).collect(),
        };
        tiles.sort_unstable_by(|a, b| b.cmp(a));
        tiles.dedup();
        let attention = d.attention.map(|a| self.attention(a)).transpose()?;
        let tiling = d.tiling.map(|t| self.tiling(t)).transpose()?;
        let video = d.video.map(|v| self.video(v, &registry)).transpose()?;
        let traced = match d.traced {
            None => None,
            Some(At { span, value: t }) => {
                if !bounded(t.margin.0, 10) {
                    bail!(self.err(&span, "traced", "margin: at most 6 decimal places and at most 10"));
                }
                Some(TracedMargin {
                    margin: t.margin.0,
                    reason: t.reason.0,
                    lift_legacy_floor: t.lift_legacy_floor.map(|s| s.0),
                })
            }
        };
        let host_estimators = self.host_estimators(d.host_estimator, &registry)?;
        let first_use = self.first_use(d.first_use)?;
        Ok(Policy {
            host_estimators,
            first_use,
            margin,
            ratio_bound,
            min_sizes: d.min_sizes.map_or(3, |m| m.0 as usize),
            unmeasured,
            excluded_ids: Policy::ids_of(&excludes),
            excepted_ids: Policy::ids_of(&exceptions),
            excludes,
            keeps,
            exceptions,
            carries,
            os_specific,
            allocator_defaults,
            default_allocator: d.default_allocator.unwrap_or(Allocator::Native),
            legacy,
            registry,
            grid,
            tiles,
            tiling,
            attention,
            video,
            traced,
        })
    }

    fn listed(&self, entries: Option<Vec<At<ListedEntry>>>, table: &str) -> Result<Vec<Listed>> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for (i, e) in entries.unwrap_or_default().into_iter().enumerate() {
            let (id, reason) = (e.value.id.0, e.value.reason.0);
            if !seen.insert(id.clone()) {
                bail!(self.err(&e.span, &format!("{table}[{}]", i + 1), format!("id '{id}' is listed twice")));
            }
            out.push(Listed { id, reason });
        }
        Ok(out)
    }

    fn carries(&self, entries: Vec<At<CarryEntry>>, registry: &Registry) -> Result<Vec<Carry>> {
        let mut out: Vec<Carry> = Vec::new();
        for (i, At { span, value: c }) in entries.into_iter().enumerate() {
            let field = format!("carry[{}]", i + 1);
            let mut key = LineKey {
                vae: c.vae.0.as_str().into(),
                op: c.op,
                tile: c.tile.map_or(0, |t| t.0 as u32),
                temporal_tile: c.temporal_tile.map(|t| t.0 as u32),
                conv_backend: c.conv_backend,
                allocator: c.allocator,
                os: c.os,
                dtype: c.dtype,
            };
            let at = format!("{field} {key}");
            match registry.video(&c.vae.0) {
                None if !registry.0.contains_key(&c.vae.0) => {
                    bail!(self.err(&span, &at, format!("unknown vae family '{}'", c.vae.0)))
                }
                None if key.temporal_tile.is_some() => {
                    bail!(self.err(&span, &at, "temporal_tile: only a video family has one"))
                }
                None => {}
                // A video line's key: the spatial tile folds into the working set.
                Some(_) if key.tile != 0 => bail!(self.err(
                    &span,
                    &at,
                    "tile: a video line is keyed by its temporal tile only (its spatial tile is in the working set); \
                     leave tile out"
                )),
                Some(facts) => key.temporal_tile = Some(facts.temporal_tile(key.temporal_tile)),
            }
            let centi = c.slope.0.checked_mul(Ratio::int(100))?;
            if centi.den() != 1 || u64::try_from(centi.num()).is_err() {
                bail!(self.err(&span, &at, "slope: at most two decimal places (the resolution of shipped slopes)"));
            }
            if out.iter().any(|o| o.key == key) {
                bail!(self.err(&span, &at, format!("line {key} is carried twice")));
            }
            out.push(Carry { key, slope_centi: centi.num() as u64, base_mib: c.base_mib.0, reason: c.reason.0 });
        }
        Ok(out)
    }

    fn legacy(&self, At { span, value: l }: At<LegacyEntry>) -> Result<Legacy> {
        let k: BTreeMap<_, _> =
            l.k.unwrap_or_default()
                .into_iter()
                .map(|(b, k)| (b, LegacyK { decode: k.decode.0, encode: k.encode.0 }))
                .collect();
        if !k.contains_key(&l.fallback_backend) {
            bail!(self.err(
                &span,
                "legacy",
                format!("fallback_backend '{}' has no [legacy.k] entry", l.fallback_backend)
            ));
        }
        Ok(Legacy {
            k,
            fallback_backend: l.fallback_backend,
            elem_bytes: l.elem_bytes.unwrap_or_default().into_iter().map(|(d, n)| (d, n.0)).collect(),
            tile_factor: l.tile_factor.0,
            fp32_extra_mib: l.fp32_extra_mib.unwrap_or_default().into_iter().map(|(f, n)| (f, n.0)).collect(),
        })
    }

    fn registry(&self, families: BTreeMap<String, At<VaeFamily>>) -> Result<Registry> {
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        let mut out = BTreeMap::new();
        for (family, At { span, value: e }) in families {
            let field = format!("vae.{family}");
            let models: Vec<String> = e.models.unwrap_or_default().into_iter().map(|m| m.0).collect();
            for name in std::iter::once(&family).chain(models.iter()) {
                if let Some(other) = seen.insert(name.to_ascii_lowercase(), family.clone()) {
                    if other != family || *name != family {
                        bail!(self.err(&span, &field, format!("name '{name}' already names family '{other}'")));
                    }
                }
            }
            let mut ambiguous = BTreeMap::new();
            for (name, words) in e.ambiguous.unwrap_or_default() {
                if !models.contains(&name) {
                    bail!(self.err(&span, &field, format!("ambiguous.{name}: not one of {family}'s models")));
                }
                ambiguous.insert(name, words.0);
            }
            let attention = e.attention.map(|a| MidBlock {
                heads: a.heads.0,
                head_dim: a.head_dim.0,
                latent_factor: a.latent_factor.0,
            });
            let video = e.video.map(|v| self.video_facts(v, &span, &field)).transpose()?;
            let entry = VaeEntry {
                models,
                params: e.params.map(|p| p.0),
                attention,
                video,
                fp32_switch: e.fp32_switch.unwrap_or(false),
                ambiguous,
                class: e.class,
            };
            out.insert(family, entry);
        }
        Ok(Registry(out))
    }

    fn attention(&self, At { value: a, .. }: At<AttentionEntry>) -> Result<Attention> {
        let mut platforms: Vec<AttentionPlatform> = Vec::new();
        for At { span: at, value: p } in a.platform {
            let field = format!("attention.platform {}", p.conv_backend);
            if platforms.iter().any(|q| q.conv_backend == p.conv_backend) {
                bail!(self.err(&at, &field, "declared twice"));
            }
            let bytes_per_score = p.bytes_per_score.0;
            if !bytes_per_score.is_positive() {
                bail!(self.err(
                    &at,
                    &field,
                    "bytes_per_score: more than 0 (a math kernel holds its scores; 0 would silently remove the phase)"
                ));
            }
            if !bounded(bytes_per_score, 1000) {
                bail!(self.err(&at, &field, "bytes_per_score: at most 6 decimal places and at most 1000"));
            }
            platforms.push(AttentionPlatform {
                conv_backend: p.conv_backend,
                bytes_per_score,
                wrong_output_at: p.wrong_output_at.map(|w| w.0),
                source: p.source.0,
            });
        }
        platforms.sort_by_key(|p| p.conv_backend);
        Ok(Attention { held_tensors: a.held_tensors.0, platforms, formula: ATTENTION_FORMULA.to_string() })
    }

    fn tiling(&self, At { span, value: t }: At<TilingEntry>) -> Result<Tiling> {
        let mut hosts = BTreeMap::new();
        for (name, At { span: at, value: h }) in t.host {
            let field = format!("tiling.host.{name}");
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
                bail!(self.err(&at, &field, "a host name is lower-case letters, digits and '-'"));
            }
            let Decimal(copies) = h.copies;
            if !bounded(copies, 1000) {
                bail!(self.err(&at, &field, "copies: at most 6 decimal places and at most 1000"));
            }
            hosts.insert(name, TilingHost { copies, source: h.source.0 });
        }
        let default_host = t.default_host.0;
        if !hosts.contains_key(&default_host) {
            let known: Vec<&str> = hosts.keys().map(String::as_str).collect();
            bail!(self.err(
                &span,
                "tiling",
                format!("default_host '{default_host}' is not a declared host (declared: {})", known.join(", "))
            ));
        }
        Ok(Tiling { default_host, hosts, formula: DERIVED_TILE_FORMULA.to_string() })
    }
}
