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
pub fn prepare(name: &str, text: &str, file: &str, policy: &Policy, class: Option<ArchClass>) -> Result<Addition> {
    check_name(name, policy)?;
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
    let mut facts = read_facts(facts_text).map_err(|e| InputError::at_line(file, first.line, format!("facts: {e}")))?;
    if let Some(c) = class {
        facts.class = c;
    }
    let config_source = config_source(text);
    let table = table(name, &facts, config_source.as_deref(), file);
    Ok(Addition { name: name.to_string(), facts, config_source, rows: rows.len(), table })
}

fn check_name(name: &str, policy: &Policy) -> Result<()> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')) {
        bail!("family '{name}': letters, digits, '_', '-' and '.' only");
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

/// A TOML basic string: quotes, backslashes and control characters escaped.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn table(name: &str, f: &Facts, source: Option<&str>, file: &str) -> String {
    let from = source.unwrap_or("an unnamed config");
    let mut t = format!(
        "\n# Registered by `vramfit family add {name}` from {file} (traced from {}): priced by the traced rule\n\
         # until its points are measured.\n[vae.{name}]\nclass = \"{}\"\nmodels = []\n",
        from.replace('\n', " "),
        f.class,
    );
    if let Some(p) = f.params {
        t.push_str(&format!("params = {p}\n"));
    }
    t.push_str(&format!("note = {}\n", toml_string(&format!("registered from its traces ({from})"))));
    if let Some((heads, head_dim)) = f.attention {
        t.push_str(&format!(
            "attention = {{ heads = {heads}, head_dim = {head_dim}, latent_factor = {} }}\n",
            f.spatial
        ));
    }
    if let Some(v) = &f.video {
        t.push_str(&format!(
            "video = {{ spatial = {}, temporal = {}, walk = \"{}\", frames = {}, overlap = 0, tile = {}, source = {} }}\n",
            f.spatial,
            v.temporal,
            v.walk.as_str(),
            v.frames,
            v.tile,
            toml_string(&format!("traced from {from} (harness trace facts)"))
        ));
    }
    t
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
) -> Result<FamilyAddReport> {
    let ws = Workspace::new(root);
    let policy_path = ws.policy_path();
    let policy_shown = crate::fsio::shown(&policy_path);
    let old_policy = crate::fsio::read_text(&policy_path)?;
    let (policy, _) = crate::policy::parse(&old_policy, &policy_shown)?;
    let traces_shown = crate::fsio::shown(traces);
    let text = crate::fsio::read_text(traces)?;
    let addition = prepare(name, &text, &traces_shown, &policy, class)?;
    let new_policy = format!("{}{}", old_policy.trim_end_matches('\n').to_string() + "\n", addition.table);
    // The new policy must read, with the family in it, before anything is written.
    let (read_back, _) = crate::policy::parse(&new_policy, &policy_shown)
        .map_err(|e| anyhow!("{e:#}: the policy with [vae.{name}] added does not read, so nothing was written"))?;
    if !read_back.registry.0.contains_key(name) {
        bail!("{policy_shown}: [vae.{name}] did not register; nothing was written");
    }
    let dest = root.join("measurements").join("traced").join(format!("{name}.csv"));
    let old_dest = std::fs::read(&dest).ok();
    let same_file = std::fs::canonicalize(&dest).ok().is_some_and(|d| std::fs::canonicalize(traces).ok() == Some(d));
    if let (Some(old), false) = (&old_dest, same_file) {
        if old != text.as_bytes() {
            bail!("{} exists with other rows: remove it, or pass it as --traces", crate::fsio::shown(&dest));
        }
    }
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir).map_err(|e| anyhow!("{}: {e}", crate::fsio::shown(dir)))?;
    }
    let restore = || -> Result<()> {
        crate::fsio::write_atomic(&policy_path, old_policy.as_bytes())?;
        match &old_dest {
            Some(old) => crate::fsio::write_atomic(&dest, old),
            None => std::fs::remove_file(&dest).map_err(|e| anyhow!("{}: {e}", crate::fsio::shown(&dest))),
        }
    };
    if !same_file {
        crate::fsio::write_atomic(&dest, text.as_bytes())?;
    }
    if let Err(e) = crate::fsio::write_atomic(&policy_path, new_policy.as_bytes()) {
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
        let t = table("mine", &f, Some("a \"quoted\" source\\path"), "t.csv");
        let v: toml::Value = toml::from_str(&t).unwrap();
        let e = &v["vae"]["mine"];
        assert_eq!(e["class"].as_str(), Some("kl-2d"));
        assert_eq!(e["attention"]["head_dim"].as_integer(), Some(128));
        assert!(e["note"].as_str().unwrap().contains("a \"quoted\" source\\path"));
    }
}
