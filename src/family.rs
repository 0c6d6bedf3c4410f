//! `vramfit family add`: a VAE nobody registered, registered from its
//! traces (docs/traced.md, "A new VAE on day one"). The traces' `facts`
//! column (written by `python3 -m harness trace`) says what the registry
//! needs: the architecture class, the weight count, the mid-block
//! attention, and for a video VAE its compression and temporal walk. This
//! module reads them, makes the policy's new `[vae.NAME]` table, and
//! writes it beside the traces and emits.
//!
//! Three files change together: the traces land in
//! `measurements/traced/NAME.csv`, the policy gains `[vae.NAME]`, and
//! `emit` rewrites `fits/vae.json`. Each write is atomic; if the emit
//! refuses (a finding, a file that would not load) the first two are put
//! back as they were, so a failed add leaves the root unchanged.

use crate::coefficients::emit::EmitReport;
use crate::places::InputError;
use crate::points::traced::parse;
use crate::policy::Policy;
use crate::registry::{ArchClass, Walk};
use crate::workspace::Workspace;
use anyhow::{anyhow, bail, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// What the traces say of the family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Facts {
    pub class: ArchClass,
    pub params: Option<u64>,
    pub latent_channels: Option<u64>,
    pub spatial: u64,
    /// Mid-block attention: heads and head size.
    pub attention: Option<(u64, u64)>,
    pub video: Option<VideoWalk>,
}

/// A video VAE's walk as traced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VideoWalk {
    pub temporal: u64,
    pub walk: Walk,
    pub frames: u64,
    pub tile: u32,
}

/// A family ready to add: its policy table, the traces, what they say.
#[derive(Debug)]
pub struct Addition {
    pub name: String,
    pub facts: Facts,
    /// The config the traces were made from, as their rows name it.
    pub config_source: Option<String>,
    pub rows: usize,
    /// The `[vae.NAME]` table appended to the policy.
    pub table: String,
}

/// Reads `text` (a traced file shown as `file`) for family `name` under
/// `policy`: every row must price `name`, carry the same facts, and the
/// name must be new. `class` overrides the traced class.
pub fn prepare(
    name: &str,
    text: &str,
    file: &str,
    policy: &Policy,
    class: Option<ArchClass>,
    commands: &[String],
) -> Result<Addition> {
    check_name(name, policy, commands)?;
    let rows = parse(text, file, None)?;
    let Some(first) = rows.first() else { bail!(InputError::in_file(file, "no traced rows")) };
    if let Some(r) = rows.iter().find(|r| r.vae != name) {
        bail!(InputError::at_line(
            file,
            r.line,
            format!("vae: the row prices '{}', not '{name}' (trace with --family {name})", r.vae)
        )
        .field("vae"));
    }
    let facts_text = first.facts.as_deref().ok_or_else(|| {
        InputError::in_file(file, "no 'facts' column: trace it again with `python3 -m harness trace` of this vramfit")
    })?;
    if let Some(r) = rows.iter().find(|r| r.facts.as_deref() != Some(facts_text)) {
        bail!(
            InputError::at_line(file, r.line, "facts: differ from the first row's: one config per file").field("facts")
        );
    }
    let mut facts = read_facts(facts_text)
        .map_err(|e| InputError::at_line(file, first.line, format!("facts: {e}")).field("facts"))?;
    if let Some(c) = class {
        facts.class = c;
    }
    check_rows(&rows, file)?;
    let config_source = config_source(text);
    let table = table(name, &facts, config_source.as_deref())?;
    Ok(Addition { name: name.to_string(), facts, config_source, rows: rows.len(), table })
}

/// One traced op per (op, dtype, tile, temporal tile, size, frames,
/// batch): a second row of the same op is either a copy or a contradiction,
/// and the envelope would keep the larger silently. Both are refused,
/// naming the second row and the first.
fn check_rows(rows: &[crate::points::traced::TracedRow], file: &str) -> Result<()> {
    let mut seen: BTreeMap<_, (u64, u64)> = BTreeMap::new();
    for r in rows {
        let key = (r.op, r.dtype, r.tile, r.temporal_tile, r.width, r.height, r.frames, r.batch);
        if let Some((line, bytes)) = seen.insert(key, (r.line, r.bytes)) {
            let what = if bytes == r.bytes {
                format!("traced_bytes: the same op as line {line} again (one row per op)")
            } else {
                format!(
                    "traced_bytes: {} here and {bytes} on line {line} for the same op: which one was traced?",
                    r.bytes
                )
            };
            bail!(InputError::at_line(file, r.line, what).field("traced_bytes"));
        }
    }
    Ok(())
}

/// Words a family name must not be: a name is read where these are
/// (`plan canvas WxH`, a subcommand's name, given as `commands`), so a
/// family called one would change what a command line means.
pub fn reserved_names(commands: &[String]) -> Vec<String> {
    let mut words: Vec<String> = ["canvas", "help", "all", "none", "any", "auto"].map(String::from).to_vec();
    words.extend(commands.iter().cloned());
    words.sort();
    words.dedup();
    words
}

fn check_name(name: &str, policy: &Policy, commands: &[String]) -> Result<()> {
    let shown = crate::text::quoted(name);
    let mut chars = name.chars();
    let well_formed = name.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'));
    if !well_formed {
        bail!(
            "family '{shown}': a lowercase letter, then lowercase letters, digits, '_', '-' and '.', at most 64 \
             characters"
        );
    }
    let reserved = reserved_names(commands);
    if reserved.iter().any(|w| w == name) {
        bail!("family '{name}': a word vramfit's command line reads ({}): choose another name", reserved.join(", "));
    }
    if policy.registry.0.contains_key(name) {
        bail!("family '{name}' is registered already (fits/policy.toml [vae.{name}])");
    }
    if let Some((family, _)) =
        policy.registry.0.iter().find(|(_, e)| e.models.iter().any(|m| m.eq_ignore_ascii_case(name)))
    {
        bail!("'{name}' is a model name of family '{family}' already: choose another name");
    }
    Ok(())
}

/// `key=value;…` as the tracer writes it.
fn read_facts(text: &str) -> Result<Facts> {
    let mut map: BTreeMap<&str, &str> = BTreeMap::new();
    for part in text.split(';').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').ok_or_else(|| anyhow!("'{part}' is not key=value"))?;
        if map.insert(k.trim(), v.trim()).is_some() {
            bail!("'{k}' given twice");
        }
    }
    let number = |k: &str| -> Result<Option<u64>> {
        map.get(k).map(|v| v.parse::<u64>().map_err(|_| anyhow!("{k}: expected an integer, found '{v}'"))).transpose()
    };
    let class = match map.get("class") {
        Some(c) => ArchClass::ALL
            .into_iter()
            .find(|a| a.as_str() == *c)
            .ok_or_else(|| anyhow!("class: '{c}' is not one of kl-2d, causal-3d"))?,
        None => bail!("no class"),
    };
    let spatial = number("spatial")?.filter(|s| *s > 0).ok_or_else(|| anyhow!("no positive spatial compression"))?;
    let attention = match map.get("attention") {
        None => None,
        Some(a) => {
            let (h, d) = a.split_once('x').ok_or_else(|| anyhow!("attention: expected HEADSxSIZE, found '{a}'"))?;
            let heads = h.parse::<u64>().ok().filter(|n| *n > 0);
            let size = d.parse::<u64>().ok().filter(|n| *n > 0);
            Some(heads.zip(size).ok_or_else(|| anyhow!("attention: expected HEADSxSIZE, found '{a}'"))?)
        }
    };
    let video = match number("temporal")? {
        None | Some(0 | 1) => None,
        Some(temporal) => {
            let walk = match map.get("walk") {
                Some(w) => Walk::ALL
                    .iter()
                    .copied()
                    .find(|x| x.as_str() == *w)
                    .ok_or_else(|| anyhow!("walk: '{w}' is not one of tiles, causal, all"))?,
                None => bail!("a video VAE without its walk: the tracer does not know this class's temporal walk"),
            };
            let frames = number("walk_frames")?.unwrap_or(0);
            let tile = u32::try_from(number("tile")?.unwrap_or(0)).map_err(|_| anyhow!("tile: too large"))?;
            Some(VideoWalk { temporal, walk, frames, tile })
        }
    };
    Ok(Facts {
        class,
        params: number("params")?,
        latent_channels: number("latent_channels")?,
        spatial,
        attention,
        video,
    })
}

/// The config source the rows name (their `config_source`), when they have one.
fn config_source(text: &str) -> Option<String> {
    let mut lines = text.lines();
    let header: Vec<String> = crate::points::csv_input::split_fields(lines.next()?, "", 1, None)
        .ok()?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    let at = header.iter().position(|h| h == "config_source")?;
    let row = crate::points::csv_input::split_fields(lines.next()?, "", 2, Some(&header)).ok()?;
    row.get(at).map(|s| s.trim().to_string())
}

/// The `[vae.NAME]` table as TOML, made by the serializer from typed
/// values: nothing read from the traces or the command line is pasted into
/// the policy as syntax (a config source with a newline and a `[[exclude]]`
/// in it stays words inside one string). The comment above it carries no
/// input at all.
fn table(name: &str, f: &Facts, source: Option<&str>) -> Result<String> {
    let from = source.unwrap_or("an unnamed config");
    let mut entry = toml::Table::new();
    entry.insert("class".into(), toml::Value::String(f.class.as_str().into()));
    entry.insert("models".into(), toml::Value::Array(vec![]));
    if let Some(p) = f.params {
        let p = i64::try_from(p).map_err(|_| anyhow!("params: {p} is too large for the policy"))?;
        entry.insert("params".into(), toml::Value::Integer(p));
    }
    entry.insert("note".into(), toml::Value::String(format!("registered from its traces ({from})")));
    let int = |what: &str, v: u64| -> Result<toml::Value> {
        i64::try_from(v).map(toml::Value::Integer).map_err(|_| anyhow!("{what}: {v} is too large for the policy"))
    };
    if let Some((heads, head_dim)) = f.attention {
        let mut a = toml::Table::new();
        a.insert("heads".into(), int("attention heads", heads)?);
        a.insert("head_dim".into(), int("attention head size", head_dim)?);
        a.insert("latent_factor".into(), int("spatial", f.spatial)?);
        entry.insert("attention".into(), toml::Value::Table(a));
    }
    if let Some(v) = &f.video {
        let mut t = toml::Table::new();
        t.insert("spatial".into(), int("spatial", f.spatial)?);
        t.insert("temporal".into(), int("temporal", v.temporal)?);
        t.insert("walk".into(), toml::Value::String(v.walk.as_str().into()));
        t.insert("frames".into(), int("walk_frames", v.frames)?);
        t.insert("overlap".into(), toml::Value::Integer(0));
        t.insert("tile".into(), int("tile", u64::from(v.tile))?);
        t.insert("source".into(), toml::Value::String(format!("traced from {from} (harness trace facts)")));
        entry.insert("video".into(), toml::Value::Table(t));
    }
    let mut families = toml::Table::new();
    families.insert(name.to_string(), toml::Value::Table(entry));
    let mut doc = toml::Table::new();
    doc.insert("vae".into(), toml::Value::Table(families));
    let body = toml::to_string(&doc).map_err(|e| anyhow!("the [vae.{name}] table: {e}"))?;
    Ok(format!(
        "\n# Registered by `vramfit family add` from its traces (its note names the config): priced by the\n\
         # traced rule until its points are measured.\n{body}"
    ))
}

/// The policy with the table appended must read back as the old policy
/// plus exactly the one new family: every other table, key and value as it
/// was. (A pasted value that broke out of its string would show here as an
/// extra `[[exclude]]`, `[[keep]]` or `[vae.*]`.)
fn check_read_back(old: &str, new: &str, name: &str, shown: &str) -> Result<()> {
    let parse = |t: &str| t.parse::<toml::Table>().map_err(|e| anyhow!("{shown}: {e}"));
    let before = parse(old)?;
    let mut after = parse(new)?;
    let added = after
        .get_mut("vae")
        .and_then(|v| v.as_table_mut())
        .and_then(|v| v.remove(name))
        .ok_or_else(|| anyhow!("{shown}: [vae.{name}] did not register; nothing was written"))?;
    if after.get("vae").and_then(|v| v.as_table()).is_some_and(|v| v.is_empty()) && !before.contains_key("vae") {
        after.remove("vae");
    }
    if after != before || !added.is_table() {
        bail!("{shown}: adding [vae.{name}] would change more than that family; nothing was written");
    }
    Ok(())
}

/// What `family add` did.
#[derive(Debug, Serialize)]
pub struct FamilyAddReport {
    pub family: String,
    pub facts: Facts,
    /// The config the traces were made from.
    pub config_source: Option<String>,
    /// Traced rows read.
    pub rows: usize,
    /// Where the traces now live.
    pub traces: String,
    /// The policy it was registered in, and the table added.
    pub policy: String,
    pub table: String,
    /// The emit that followed.
    pub emit: EmitReport,
}

/// Adds family `name` to `root` from the traced file `traces`.
pub fn add(
    root: &Path,
    name: &str,
    traces: &Path,
    class: Option<ArchClass>,
    wait: std::time::Duration,
    commands: &[String],
) -> Result<FamilyAddReport> {
    let ws = Workspace::new(root);
    let policy_path = ws.policy_path();
    let policy_shown = crate::fsio::shown(&policy_path);
    let old_policy = crate::fsio::read_text(&policy_path)?;
    let (policy, _) = crate::policy::parse(&old_policy, &policy_shown)?;
    let traces_shown = crate::fsio::shown(traces);
    let text = crate::fsio::read_text(traces)?;
    let addition = prepare(name, &text, &traces_shown, &policy, class, commands)?;
    let new_policy = format!("{}{}", old_policy.trim_end_matches('\n').to_string() + "\n", addition.table);
    // The new policy must read, with the family in it and nothing else
    // changed, before anything is written.
    check_read_back(&old_policy, &new_policy, name, &policy_shown)?;
    let (read_back, _) = crate::policy::parse(&new_policy, &policy_shown)
        .map_err(|e| anyhow!("{e:#}: the policy with [vae.{name}] added does not read, so nothing was written"))?;
    if !read_back.registry.0.contains_key(name) {
        bail!("{policy_shown}: [vae.{name}] did not register; nothing was written");
    }
    // Every row must place on the family's line under that policy: a size
    // or a byte count too large to price is the input's fault, named at
    // its file, line and field, not found later in the generated policy.
    let rows = parse(&text, &traces_shown, None)?;
    for r in &rows {
        if let Err(e) = crate::traced::Shapes::of(std::slice::from_ref(r), &read_back) {
            let field = if crate::exact::pixels(r.width, r.height, r.batch).is_none() {
                "width"
            } else if r.frames > 1 {
                "frames"
            } else {
                "traced_bytes"
            };
            bail!(
                InputError::at_line(&traces_shown, r.line, format!("{field}: too large to price ({e:#})")).field(field)
            );
        }
    }
    crate::traced::Shapes::of(&rows, &read_back).map_err(|e| InputError::in_file(&traces_shown, format!("{e:#}")))?;
    let dest_rel = Path::new("measurements").join("traced").join(format!("{name}.csv"));
    let policy_rel = Path::new("fits").join("policy.toml");
    let dest = root.join(&dest_rel);
    // The write rule before anything is read as "there" or written: no link
    // at the traces' name, the policy or any folder on the way.
    crate::fsio::check_in_root(root, &dest_rel)?;
    crate::fsio::check_in_root(root, &policy_rel)?;
    let old_dest = crate::fsio::read_if_regular(&dest, crate::fsio::TEXT_LIMIT);
    let same_file = std::fs::canonicalize(&dest).ok().is_some_and(|d| std::fs::canonicalize(traces).ok() == Some(d));
    if let (Some(old), false) = (&old_dest, same_file) {
        if old != text.as_bytes() {
            bail!("{} exists with other rows: remove it, or pass it as --traces", crate::fsio::shown(&dest));
        }
    }
    let write = |rel: &Path, bytes: &[u8]| crate::fsio::write_in_root(root, rel, &mut |w| w.write_all(bytes));
    let restore = || -> Result<()> {
        write(&policy_rel, old_policy.as_bytes())?;
        match &old_dest {
            Some(old) => write(&dest_rel, old),
            None => std::fs::remove_file(&dest).map_err(|e| anyhow!("{}: {e}", crate::fsio::shown(&dest))),
        }
    };
    if !same_file {
        write(&dest_rel, text.as_bytes())?;
    }
    if let Err(e) = write(&policy_rel, new_policy.as_bytes()) {
        restore()?;
        return Err(e);
    }
    let emitted = crate::verify::fresh::emit(root, false, false, wait);
    let emit = match emitted {
        Ok(r) if r.written || !r.changed => r,
        Ok(r) => {
            restore()?;
            let findings: Vec<String> = r.findings.iter().map(|f| f.message.clone()).collect();
            bail!(
                "emit found {} finding(s) with {name} added, so nothing was kept: {}",
                findings.len(),
                findings.join("; ")
            );
        }
        Err(e) => {
            restore()?;
            return Err(e.context(format!("emit failed with {name} added, so nothing was kept")));
        }
    };
    Ok(FamilyAddReport {
        family: name.to_string(),
        facts: addition.facts,
        config_source: addition.config_source,
        rows: addition.rows,
        traces: crate::fsio::shown(&dest),
        policy: policy_shown,
        table: addition.table,
        emit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_read_and_refused_by_name() {
        let f = read_facts("class=kl-2d;latent_channels=16;spatial=8;params=1000;attention=1x512").unwrap();
        assert_eq!((f.class, f.params, f.attention, f.video), (ArchClass::Kl2d, Some(1000), Some((1, 512)), None));
        let v = read_facts("class=causal-3d;spatial=8;temporal=4;walk=causal;walk_frames=4;tile=0").unwrap();
        assert_eq!(v.video, Some(VideoWalk { temporal: 4, walk: Walk::Causal, frames: 4, tile: 0 }));
        for (bad, words) in [
            ("spatial=8", "no class"),
            ("class=kl-3d;spatial=8", "class: 'kl-3d'"),
            ("class=kl-2d", "spatial"),
            ("class=kl-2d;spatial=8;attention=1by512", "attention"),
            ("class=causal-3d;spatial=8;temporal=4", "without its walk"),
            ("class=kl-2d;spatial=8;spatial=8", "twice"),
        ] {
            let e = read_facts(bad).unwrap_err().to_string();
            assert!(e.contains(words), "{bad}: {e}");
        }
    }

    #[test]
    fn the_table_is_valid_toml_with_escaped_words() {
        let f = read_facts("class=kl-2d;spatial=8;params=5;attention=1x128").unwrap();
        let t = table("mine", &f, Some("a \"quoted\" source\\path")).unwrap();
        let v: toml::Value = toml::from_str(&t).unwrap();
        let e = &v["vae"]["mine"];
        assert_eq!(e["class"].as_str(), Some("kl-2d"));
        assert_eq!(e["attention"]["head_dim"].as_integer(), Some(128));
        assert!(e["note"].as_str().unwrap().contains("a \"quoted\" source\\path"));
    }
}
