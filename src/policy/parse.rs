//! Parsing `fits/policy.toml`: structural mistakes are errors; unknown keys
//! are collected as problems so `verify` can report all of them at once.

use super::number::policy_number;
use super::{
    AllocatorDefault, Attention, AttentionPlatform, Carry, Legacy, LegacyK, Listed, OsSpecific, Policy, Problem,
    Tiling, TilingHost, ATTENTION_FORMULA, DERIVED_TILE_FORMULA, UNMEASURED_RULE,
};
use crate::exact::Ratio;
use crate::places::InputError;
use crate::points::LineKey;
use crate::registry::{Registry, VaeEntry};
use crate::vocab::{Allocator, ConvBackend, Dtype, Op};
use anyhow::{bail, Result};
use std::collections::{BTreeMap, BTreeSet};
use toml::{Table, Value};

mod video;

// The keys each table of the policy may hold are the fields of its type
// in `policy::schema` (the document's one description): a key added there
// is known here, and `vramfit schema policy` prints the same tables.
use super::schema::keys as known;
use super::schema::{
    AllocatorDefaultEntry, AttentionEntry, AttentionPlatformEntry, CarryEntry, LegacyEntry, ListedEntry, MidBlockEntry,
    OsSpecificEntry, PolicyFile, TilingEntry, TilingHostEntry, VaeFamily,
};

/// Parses a policy. `file` names the file in messages.
pub fn parse(text: &str, file: &str) -> Result<(Policy, Vec<Problem>)> {
    let table: Table = text.parse().map_err(|e: toml::de::Error| {
        // The line of the syntax error, from where the parser stopped.
        let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() as u64 + 1);
        anyhow::Error::new(InputError::new(file, line, format!("{file}: {}", e.to_string().trim_end())))
    })?;
    no_control_characters(&Value::Table(table.clone()), file, "")?;
    let mut p = Parser { file, problems: Vec::new() };
    let policy = p.policy(&table)?;
    Ok((policy, p.problems))
}

/// Every string of the policy (ids, reasons, sources, names): no control
/// character but tab and line feed, since reasons and sources are shipped in
/// `fits/vae.json` and shown by `reserve`, `fit` and the reports.
fn no_control_characters(v: &Value, file: &str, at: &str) -> Result<()> {
    match v {
        Value::String(s) => {
            match s.chars().find(|c| (c.is_control() && *c != '\t' && *c != '\n') || crate::text::is_format_char(*c)) {
                Some(c) if crate::text::is_format_char(c) => bail!(InputError::in_file(
                    file,
                    format!(
                        "{at}: an invisible format character ({}, e.g. a right-to-left override) in a string: not \
                 accepted",
                        c.escape_unicode()
                    )
                )),
                Some(c) => bail!(InputError::in_file(
                    file,
                    format!("{at}: a control character ({}) in a string: not accepted", c.escape_unicode())
                )),
                None => Ok(()),
            }
        }
        Value::Array(items) => items.iter().try_for_each(|i| no_control_characters(i, file, at)),
        Value::Table(t) => t.iter().try_for_each(|(k, v)| {
            let at = if at.is_empty() { k.clone() } else { format!("{at}.{k}") };
            no_control_characters(v, file, &at)
        }),
        _ => Ok(()),
    }
}

struct Parser<'a> {
    file: &'a str,
    problems: Vec<Problem>,
}

impl Parser<'_> {
    fn unknown_keys(&mut self, t: &Table, known: &[&str], at: &str) {
        for k in t.keys() {
            if !known.contains(&k.as_str()) {
                self.problems.push(Problem {
                    code: crate::findings::Code::UnknownKey,
                    ids: vec![],
                    message: format!(
                        "{}: unknown key '{k}' in {at} (known: {}); a misspelt key would otherwise be ignored",
                        self.file,
                        known.join(", ")
                    ),
                });
            }
        }
    }

    fn err(&self, at: &str, what: impl std::fmt::Display) -> anyhow::Error {
        anyhow::Error::new(InputError::in_file(self.file, format!("{at}: {what}")).field(at))
    }

    fn policy(&mut self, t: &Table) -> Result<Policy> {
        self.unknown_keys(t, known::<PolicyFile>(), "the top level");
        let margin = self.number(t, "margin", "the top level")?.unwrap_or(Ratio::new(5, 100)?);
        let ratio_bound = self.number(t, "ratio_bound", "the top level")?.unwrap_or(Ratio::new(13, 10)?);
        if ratio_bound.cmp_exact(&Ratio::int(1))? == std::cmp::Ordering::Less {
            bail!(self.err("ratio_bound", "must be at least 1 (a reservation cannot be below the demand it covers)"));
        }
        if margin.den() > 1_000_000 || ratio_bound.den() > 1_000_000 {
            bail!(self.err("margin / ratio_bound", "at most 6 decimal places"));
        }
        let min_sizes = match t.get("min_sizes") {
            None => 3,
            Some(Value::Integer(i)) if *i >= 2 => *i as usize,
            Some(v) => {
                bail!(self.err("min_sizes", format!("expected an integer ≥ 2 (a line needs two sizes), found {v}")))
            }
        };
        let unmeasured = match t.get("unmeasured") {
            None => UNMEASURED_RULE.to_string(),
            Some(Value::String(s)) if s == UNMEASURED_RULE => s.clone(),
            Some(v) => bail!(self.err("unmeasured", format!("unknown rule {v} (accepted: {UNMEASURED_RULE})"))),
        };
        let default_allocator = match t.get("default_allocator") {
            None => Allocator::Native,
            Some(Value::String(s)) => s.parse().map_err(|e| self.err("default_allocator", e))?,
            Some(v) => bail!(self.err("default_allocator", format!("expected a string, found {v}"))),
        };
        let excludes = self.listed(t, "exclude")?;
        let keeps = self.listed(t, "keep")?;
        if let Some(k) = keeps.iter().find(|k| excludes.iter().any(|e| e.id == k.id)) {
            bail!(self.err("[[keep]]", format!("id '{}' is both kept and excluded: decide one", k.id)));
        }
        let exceptions = self.listed(t, "exception")?;
        let mut carries = self.carries(t)?;
        let os_specific = self.os_specific(t)?;
        let allocator_defaults = self.allocator_defaults(t)?;
        let legacy = match t.get("legacy") {
            None => None,
            Some(Value::Table(l)) => Some(self.legacy(l)?),
            Some(_) => bail!(self.err("[legacy]", "expected a table")),
        };
        let registry = self.registry(t)?;
        let grid = self.grid(t)?;
        let tiles = self.tiles(t)?;
        let attention = match t.get("attention") {
            None => None,
            Some(Value::Table(a)) => Some(self.attention(a)?),
            Some(_) => bail!(self.err("[attention]", "expected a table")),
        };
        let tiling = match t.get("tiling") {
            None => None,
            Some(Value::Table(l)) => Some(self.tiling(l)?),
            Some(_) => bail!(self.err("[tiling]", "expected a table")),
        };
        let video = match t.get("video") {
            None => None,
            Some(Value::Table(v)) => Some(self.video(v, &registry)?),
            Some(_) => bail!(self.err("[video]", "expected a table")),
        };
        for c in &mut carries {
            let Some(facts) = registry.video(c.key.vae.as_str()) else {
                if !registry.0.contains_key(c.key.vae.as_str()) {
                    bail!(self.err(&format!("[[carry]] {}", c.key), format!("unknown vae family '{}'", c.key.vae)));
                }
                if c.key.temporal_tile.is_some() {
                    bail!(self.err(&format!("[[carry]] {}", c.key), "temporal_tile: only a video family has one"));
                }
                continue;
            };
            // A video line's key: the spatial tile folds into the working set.
            if c.key.tile != 0 {
                bail!(self.err(&format!("[[carry]] {}", c.key), "tile: a video line is keyed by its temporal tile only (its spatial tile is in the working set); leave tile out"));
            }
            c.key.temporal_tile = Some(facts.temporal_tile(c.key.temporal_tile));
        }
        Ok(Policy {
            margin,
            ratio_bound,
            min_sizes,
            unmeasured,
            excluded_ids: Policy::ids_of(&excludes),
            excepted_ids: Policy::ids_of(&exceptions),
            excludes,
            keeps,
            exceptions,
            carries,
            os_specific,
            allocator_defaults,
            default_allocator,
            legacy,
            registry,
            grid,
            tiles,
            tiling,
            attention,
            video,
        })
    }

    fn positive(&self, t: &Table, key: &str, at: &str) -> Result<u64> {
        match t.get(key) {
            Some(Value::Integer(i)) if *i > 0 => Ok(*i as u64),
            Some(v) => bail!(self.err(at, format!("{key}: expected a positive integer, found {v}"))),
            None => bail!(self.err(at, format!("missing {key}"))),
        }
    }

    fn mid_block(&mut self, t: &Table, at: &str) -> Result<crate::registry::MidBlock> {
        let at = format!("{at} attention");
        self.unknown_keys(t, known::<MidBlockEntry>(), &at);
        let block = crate::registry::MidBlock {
            heads: self.positive(t, "heads", &at)?,
            head_dim: self.positive(t, "head_dim", &at)?,
            latent_factor: self.positive(t, "latent_factor", &at)?,
        };
        if block.heads > 1024 || block.head_dim > 1 << 16 || block.latent_factor > 1024 {
            bail!(self.err(&at, "heads ≤ 1024, head_dim ≤ 65536 and latent_factor ≤ 1024"));
        }
        Ok(block)
    }

    fn attention(&mut self, t: &Table) -> Result<Attention> {
        self.unknown_keys(t, known::<AttentionEntry>(), "[attention]");
        self.reason(t, "[attention]")?;
        let held_tensors = self.positive(t, "held_tensors", "[attention]")?;
        if held_tensors > 1000 {
            bail!(self.err("[attention]", "held_tensors: at most 1000"));
        }
        let mut platforms: Vec<AttentionPlatform> = Vec::new();
        for p in self.tables(t, "platform")? {
            let at = "[[attention.platform]]";
            self.unknown_keys(p, known::<AttentionPlatformEntry>(), at);
            let conv_backend: ConvBackend = self.parsed(p, "conv_backend", at)?;
            let at = format!("[[attention.platform]] {conv_backend}");
            if platforms.iter().any(|q| q.conv_backend == conv_backend) {
                bail!(self.err(&at, "declared twice"));
            }
            let bytes_per_score =
                self.number(p, "bytes_per_score", &at)?.ok_or_else(|| self.err(&at, "missing bytes_per_score"))?;
            if !bytes_per_score.is_positive() {
                bail!(self.err(
                    &at,
                    "bytes_per_score: more than 0 (a math kernel holds its scores; 0 would silently remove the phase)"
                ));
            }
            if bytes_per_score.den() > 1_000_000
                || bytes_per_score.cmp_exact(&Ratio::int(1000))? == std::cmp::Ordering::Greater
            {
                bail!(self.err(&at, "bytes_per_score: at most 6 decimal places and at most 1000"));
            }
            let wrong_output_at = match p.get("wrong_output_at") {
                None => None,
                Some(_) => Some(self.positive(p, "wrong_output_at", &at)?),
            };
            let source = self
                .string(p, "source", &at)
                .map_err(|_| self.err(&at, "missing source: say where the figure comes from"))?;
            platforms.push(AttentionPlatform { conv_backend, bytes_per_score, wrong_output_at, source });
        }
        platforms.sort_by_key(|p| p.conv_backend);
        Ok(Attention { held_tensors, platforms, formula: ATTENTION_FORMULA.to_string() })
    }

    fn tiling(&mut self, t: &Table) -> Result<Tiling> {
        self.unknown_keys(t, known::<TilingEntry>(), "[tiling]");
        self.reason(t, "[tiling]")?;
        let default_host = self.string(t, "default_host", "[tiling]")?;
        let mut hosts = BTreeMap::new();
        let listed = match t.get("host") {
            Some(Value::Table(h)) => h,
            _ => bail!(self.err("[tiling]", "missing [tiling.host.NAME] tables: declare each host's copies")),
        };
        for (name, v) in listed {
            let at = format!("[tiling.host.{name}]");
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
                bail!(self.err(&at, "a host name is lower-case letters, digits and '-'"));
            }
            let h = v.as_table().ok_or_else(|| self.err(&at, "expected a table"))?;
            self.unknown_keys(h, known::<TilingHostEntry>(), &at);
            let copies = self.number(h, "copies", &at)?.ok_or_else(|| self.err(&at, "missing copies"))?;
            if copies.den() > 1_000_000 || copies.cmp_exact(&Ratio::int(1000))? == std::cmp::Ordering::Greater {
                bail!(self.err(&at, "copies: at most 6 decimal places and at most 1000"));
            }
            let source = self
                .string(h, "source", &at)
                .map_err(|_| self.err(&at, "missing source: say where the copies figure comes from"))?;
            hosts.insert(name.clone(), TilingHost { copies, source });
        }
        if !hosts.contains_key(&default_host) {
            let known: Vec<&str> = hosts.keys().map(String::as_str).collect();
            bail!(self.err(
                "[tiling]",
                format!("default_host '{default_host}' is not a declared host (declared: {})", known.join(", "))
            ));
        }
        Ok(Tiling { default_host, hosts, formula: DERIVED_TILE_FORMULA.to_string() })
    }

    fn number(&self, t: &Table, key: &str, at: &str) -> Result<Option<Ratio>> {
        match t.get(key) {
            None => Ok(None),
            Some(v) => policy_number(v)
                .map(Some)
                .ok_or_else(|| self.err(&format!("{at}: {key}"), format!("expected a non-negative number, found {v}"))),
        }
    }

    fn tables<'t>(&self, t: &'t Table, key: &str) -> Result<Vec<&'t Table>> {
        match t.get(key) {
            None => Ok(vec![]),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| i.as_table().ok_or_else(|| self.err(&format!("[[{key}]]"), "expected a table")))
                .collect(),
            Some(_) => bail!(self.err(&format!("[[{key}]]"), "expected an array of tables")),
        }
    }

    fn string(&self, t: &Table, key: &str, at: &str) -> Result<String> {
        match t.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(Value::String(_)) | None => bail!(self.err(at, format!("missing {key}"))),
            Some(v) => bail!(self.err(at, format!("{key}: expected a string, found {v}"))),
        }
    }

    fn reason(&self, t: &Table, at: &str) -> Result<String> {
        self.string(t, "reason", at).map_err(|_| self.err(at, "missing reason: every departure from the data says why"))
    }

    fn parsed<T: std::str::FromStr>(&self, t: &Table, key: &str, at: &str) -> Result<T>
    where
        T::Err: std::fmt::Display,
    {
        self.string(t, key, at)?.parse::<T>().map_err(|e| self.err(at, format!("{key}: {e}")))
    }

    fn listed(&mut self, t: &Table, key: &str) -> Result<Vec<Listed>> {
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        for (i, item) in self.tables(t, key)?.into_iter().enumerate() {
            let at = format!("[[{key}]] #{}", i + 1);
            self.unknown_keys(item, known::<ListedEntry>(), &at);
            let id = self.string(item, "id", &at)?;
            let reason = self.reason(item, &format!("{at} (id {id})"))?;
            if !seen.insert(id.clone()) {
                bail!(self.err(&at, format!("id '{id}' is listed twice")));
            }
            out.push(Listed { id, reason });
        }
        Ok(out)
    }

    fn carries(&mut self, t: &Table) -> Result<Vec<Carry>> {
        let mut out: Vec<Carry> = Vec::new();
        for (i, item) in self.tables(t, "carry")?.into_iter().enumerate() {
            let at = format!("[[carry]] #{}", i + 1);
            self.unknown_keys(item, known::<CarryEntry>(), &at);
            let key = LineKey {
                vae: self.string(item, "vae", &at)?.into(),
                op: self.parsed::<Op>(item, "op", &at)?,
                tile: match item.get("tile") {
                    None => 0,
                    Some(Value::Integer(v)) if *v >= 0 && *v <= i64::from(u32::MAX) => *v as u32,
                    Some(v) => bail!(self.err(&at, format!("tile: expected a non-negative integer, found {v}"))),
                },
                temporal_tile: match item.get("temporal_tile") {
                    None => None,
                    Some(Value::Integer(v)) if *v >= 0 && *v <= i64::from(u32::MAX) => Some(*v as u32),
                    Some(v) => {
                        bail!(self.err(&at, format!("temporal_tile: expected a non-negative integer, found {v}")))
                    }
                },
                conv_backend: self.parsed(item, "conv_backend", &at)?,
                allocator: self.parsed(item, "allocator", &at)?,
                os: self.parsed(item, "os", &at)?,
                dtype: self.parsed(item, "dtype", &at)?,
            };
            let slope = match item.get("slope") {
                Some(v) => {
                    policy_number(v).ok_or_else(|| self.err(&at, format!("slope: expected a number, found {v}")))?
                }
                None => bail!(self.err(&at, "missing slope")),
            };
            let centi = slope.checked_mul(Ratio::int(100))?;
            if centi.den() != 1 {
                bail!(self.err(&at, "slope: at most two decimal places (the resolution of shipped slopes)"));
            }
            let base_mib = match item.get("base_mib") {
                Some(Value::Integer(v)) if *v >= 0 => *v as u64,
                v => bail!(self.err(&at, format!("base_mib: expected a non-negative integer, found {v:?}"))),
            };
            let reason = self.reason(item, &at)?;
            if out.iter().any(|c| c.key == key) {
                bail!(self.err(&at, format!("line {key} is carried twice")));
            }
            out.push(Carry { key, slope_centi: centi.num() as u64, base_mib, reason });
        }
        Ok(out)
    }

    fn os_specific(&mut self, t: &Table) -> Result<Vec<OsSpecific>> {
        let mut out = Vec::new();
        for (i, item) in self.tables(t, "os_specific")?.into_iter().enumerate() {
            let at = format!("[[os_specific]] #{}", i + 1);
            self.unknown_keys(item, known::<OsSpecificEntry>(), &at);
            let conv_backend = self.parsed(item, "conv_backend", &at)?;
            let allocator = match item.get("allocator") {
                None => None,
                Some(Value::String(s)) if s == "*" => None,
                Some(_) => Some(self.parsed(item, "allocator", &at)?),
            };
            self.reason(item, &at)?;
            out.push(OsSpecific { conv_backend, allocator });
        }
        Ok(out)
    }

    fn allocator_defaults(&mut self, t: &Table) -> Result<Vec<AllocatorDefault>> {
        let mut out = Vec::new();
        for (i, item) in self.tables(t, "allocator_default")?.into_iter().enumerate() {
            let at = format!("[[allocator_default]] #{}", i + 1);
            self.unknown_keys(item, known::<AllocatorDefaultEntry>(), &at);
            let d = AllocatorDefault {
                conv_backend: self.parsed(item, "conv_backend", &at)?,
                os: self.parsed(item, "os", &at)?,
                allocator: self.parsed(item, "allocator", &at)?,
            };
            self.reason(item, &at)?;
            out.push(d);
        }
        Ok(out)
    }

    fn legacy(&mut self, l: &Table) -> Result<Legacy> {
        self.unknown_keys(l, known::<LegacyEntry>(), "[legacy]");
        self.reason(l, "[legacy]")?;
        let mut k = BTreeMap::new();
        if let Some(v) = l.get("k") {
            let kt = v.as_table().ok_or_else(|| self.err("[legacy.k]", "expected a table"))?;
            for (backend, ops) in kt {
                let at = format!("[legacy.k.{backend}]");
                let b: ConvBackend = backend.parse().map_err(|e| self.err(&at, e))?;
                let ops = ops.as_table().ok_or_else(|| self.err(&at, "expected a table"))?;
                self.unknown_keys(ops, &["decode", "encode"], &at);
                let get = |op: &str| match ops.get(op) {
                    Some(Value::Integer(v)) if *v > 0 => Ok(*v as u64),
                    _ => Err(self.err(&at, format!("{op}: expected a positive integer"))),
                };
                k.insert(b, LegacyK { decode: get("decode")?, encode: get("encode")? });
            }
        }
        let fallback_backend = self.parsed(l, "fallback_backend", "[legacy]")?;
        if !k.contains_key(&fallback_backend) {
            bail!(self.err("[legacy]", format!("fallback_backend '{fallback_backend}' has no [legacy.k] entry")));
        }
        let mut elem_bytes = BTreeMap::new();
        if let Some(v) = l.get("elem_bytes") {
            let et = v.as_table().ok_or_else(|| self.err("[legacy.elem_bytes]", "expected a table"))?;
            for (d, n) in et {
                let dt: Dtype = d.parse().map_err(|e| self.err("[legacy.elem_bytes]", e))?;
                match n {
                    Value::Integer(v) if *v > 0 => elem_bytes.insert(dt, *v as u64),
                    _ => bail!(self.err("[legacy.elem_bytes]", format!("{d}: expected a positive integer"))),
                };
            }
        }
        let tile_factor =
            self.number(l, "tile_factor", "[legacy]")?.ok_or_else(|| self.err("[legacy]", "missing tile_factor"))?;
        let mut fp32_extra_mib = BTreeMap::new();
        if let Some(v) = l.get("fp32_extra_mib") {
            let ft = v.as_table().ok_or_else(|| self.err("[legacy.fp32_extra_mib]", "expected a table"))?;
            for (fam, n) in ft {
                match n {
                    Value::Integer(v) if *v >= 0 => fp32_extra_mib.insert(fam.clone(), *v as u64),
                    _ => bail!(self.err("[legacy.fp32_extra_mib]", format!("{fam}: expected a non-negative integer"))),
                };
            }
        }
        Ok(Legacy { k, fallback_backend, elem_bytes, tile_factor, fp32_extra_mib })
    }

    fn registry(&mut self, t: &Table) -> Result<Registry> {
        let mut reg = BTreeMap::new();
        let Some(v) = t.get("vae") else { return Ok(Registry::default()) };
        let vt = v.as_table().ok_or_else(|| self.err("[vae]", "expected a table of families"))?;
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for (family, entry) in vt {
            let at = format!("[vae.{family}]");
            let et = entry.as_table().ok_or_else(|| self.err(&at, "expected a table"))?;
            self.unknown_keys(et, known::<VaeFamily>(), &at);
            let models: Vec<String> = match et.get("models") {
                None => vec![],
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|m| m.as_str().map(str::to_string).ok_or_else(|| self.err(&at, "models: expected strings")))
                    .collect::<Result<_>>()?,
                Some(_) => bail!(self.err(&at, "models: expected an array of strings")),
            };
            let params = match et.get("params") {
                None => None,
                Some(Value::Integer(p)) if *p > 0 => Some(*p as u64),
                Some(v) => bail!(self.err(&at, format!("params: expected a positive integer, found {v}"))),
            };
            for name in std::iter::once(family).chain(models.iter()) {
                let lower = name.to_ascii_lowercase();
                if let Some(other) = seen.insert(lower, family.clone()) {
                    if other != *family || name != family {
                        bail!(self.err(&at, format!("name '{name}' already names family '{other}'")));
                    }
                }
            }
            let attention = match et.get("attention") {
                None => None,
                Some(Value::Table(a)) => Some(self.mid_block(a, &at)?),
                Some(v) => bail!(self.err(&at, format!("attention: expected a table, found {v}"))),
            };
            let video = match et.get("video") {
                None => None,
                Some(Value::Table(v)) => Some(self.video_facts(v, &at)?),
                Some(v) => bail!(self.err(&at, format!("video: expected a table, found {v}"))),
            };
            let fp32_switch = match et.get("fp32_switch") {
                None => false,
                Some(Value::Boolean(b)) => *b,
                Some(v) => bail!(self.err(&at, format!("fp32_switch: expected true or false, found {v}"))),
            };
            let ambiguous = self.ambiguous(et, &at, family, &models)?;
            reg.insert(family.clone(), VaeEntry { models, params, attention, video, fp32_switch, ambiguous });
        }
        Ok(Registry(reg))
    }

    /// `ambiguous = { "wan2.2" = "…" }`: model names of the family that
    /// people also use for another VAE, each with the words that say which.
    fn ambiguous(&self, et: &Table, at: &str, family: &str, models: &[String]) -> Result<BTreeMap<String, String>> {
        let Some(v) = et.get("ambiguous") else { return Ok(BTreeMap::new()) };
        let t = v.as_table().ok_or_else(|| self.err(at, "ambiguous: expected a table of model name = \"words\""))?;
        t.iter()
            .map(|(name, words)| {
                let words = words.as_str().filter(|w| !w.trim().is_empty()).ok_or_else(|| {
                    self.err(at, format!("ambiguous.{name}: expected the words that say which VAE it names"))
                })?;
                if !models.iter().any(|m| m == name) {
                    bail!(self.err(at, format!("ambiguous.{name}: not one of {family}'s models")));
                }
                Ok((name.clone(), words.to_string()))
            })
            .collect()
    }

    fn grid(&self, t: &Table) -> Result<Vec<(u64, u64)>> {
        let Some(v) = t.get("grid") else {
            return Ok([512u64, 768, 1024, 1280, 1536, 2048].iter().map(|s| (*s, *s)).collect());
        };
        let a = v.as_array().ok_or_else(|| self.err("grid", "expected an array of \"WxH\" strings"))?;
        a.iter()
            .map(|s| {
                s.as_str()
                    .and_then(|s| crate::units::parse_size(s).ok())
                    .ok_or_else(|| self.err("grid", format!("expected \"WxH\" with positive integers, found {s}")))
            })
            .collect()
    }

    fn tiles(&self, t: &Table) -> Result<Vec<u32>> {
        let Some(v) = t.get("tiles") else { return Ok(vec![1024, 768, 512, 256]) };
        let a = v.as_array().ok_or_else(|| self.err("tiles", "expected an array of integers"))?;
        let mut tiles: Vec<u32> = a
            .iter()
            .map(|x| match x {
                Value::Integer(i) if *i > 0 && *i <= i64::from(u32::MAX) => Ok(*i as u32),
                _ => Err(self.err("tiles", format!("expected positive integers, found {x}"))),
            })
            .collect::<Result<_>>()?;
        tiles.sort_unstable_by(|a, b| b.cmp(a));
        tiles.dedup();
        Ok(tiles)
    }
}
