//! Traced rows: `measurements/traced/*.csv`, written by `python3 -m harness
//! trace` (docs/traced.md). Each row is the peak of live bytes over one op
//! of a VAE run on PyTorch's meta device. They are read strictly, like a
//! measurement CSV (a wrong field names its file, line and column), and are
//! never points: they shape a price, they do not measure one.

use super::csv_input::split_fields;
use crate::places::InputError;
use crate::registry::Registry;
use crate::vocab::{Dtype, Op};
use anyhow::{bail, Result};
use std::path::Path;

/// One traced op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedRow {
    /// The config it was traced from (`sd15`, `sdxl`, …).
    pub family: String,
    /// The vramfit family it prices.
    pub vae: String,
    pub op: Op,
    pub dtype: Dtype,
    /// Spatial tile, px (0: untiled).
    pub tile: u32,
    /// Temporal tile, frames (0: the class's own walk; absent column: 0).
    pub temporal_tile: u32,
    pub width: u64,
    pub height: u64,
    /// Frames of the clip (1: an image).
    pub frames: u64,
    pub batch: u64,
    /// Peak live bytes over the op.
    pub bytes: u64,
    /// The allocator models' peaks over the op's traced stream, per
    /// platform (`simulated` column, `backend/allocator=ALLOCATED:RESERVED;…`;
    /// absent column: none): `harness/allocator.py`, docs/traced.md.
    pub simulated: Vec<Simulated>,
    /// The architecture's facts as the tracer read them (`facts` column,
    /// `key=value;…`; absent column: None): what `family add` registers.
    pub facts: Option<String>,
    /// Where it was read: file and line.
    pub file: String,
    pub line: u64,
}

/// One platform's simulated peaks over a traced op.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Simulated {
    /// Whose workspaces the replay declared, and which allocator it replayed.
    pub platform: crate::contract::traced::ReplayPlatform,
    /// `max_memory_allocated()` over the op, as the replay has it.
    pub allocated: u64,
    /// `max_memory_reserved()` over the op, as the replay has it.
    pub reserved: u64,
}

impl TracedRow {
    /// The simulated peaks on one platform (None: not replayed there).
    pub fn simulated_on(&self, platform: crate::contract::traced::ReplayPlatform) -> Option<&Simulated> {
        self.simulated.iter().find(|s| s.platform == platform)
    }

    /// Each platform the row was replayed on with its reserved peak; a row
    /// of a tracer before the replay: its live peak, on no platform.
    pub fn peaks(&self) -> Vec<(Option<crate::contract::traced::ReplayPlatform>, u64)> {
        if self.simulated.is_empty() {
            return vec![(None, self.bytes)];
        }
        self.simulated.iter().map(|s| (Some(s.platform), s.reserved)).collect()
    }
}

/// Parses a `simulated` field: `backend/allocator=ALLOCATED:RESERVED` joined
/// by `;`, each a platform once, allocated no more than reserved.
pub fn parse_simulated(field: &str) -> std::result::Result<Vec<Simulated>, String> {
    let mut out: Vec<Simulated> = Vec::new();
    if field.is_empty() {
        return Ok(out);
    }
    for part in field.split(';') {
        let bad = || format!("expected backend/allocator=ALLOCATED:RESERVED, found '{}'", part.escape_debug());
        let (platform, peaks) = part.split_once('=').ok_or_else(bad)?;
        let (backend, allocator) = platform.split_once('/').ok_or_else(bad)?;
        let (a, r) = peaks.split_once(':').ok_or_else(bad)?;
        let digits =
            |t: &str| (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse::<u64>().ok()).flatten();
        let (Some(allocated), Some(reserved)) = (digits(a), digits(r)) else { return Err(bad()) };
        if allocated > reserved {
            return Err(bad());
        }
        let conv_backend = backend.parse().map_err(|e| format!("{e}"))?;
        let allocator = allocator.parse().map_err(|e| format!("{e}"))?;
        let platform = crate::contract::traced::ReplayPlatform { conv_backend, allocator };
        if out.iter().any(|s| s.platform == platform) {
            return Err(format!("platform {backend}/{allocator} given twice"));
        }
        out.push(Simulated { platform, allocated, reserved });
    }
    out.sort();
    Ok(out)
}

/// The columns a traced file must have (others, the provenance, are kept in
/// the file and not needed here).
const NEEDED: [&str; 10] =
    ["family", "vae", "op", "dtype", "tile", "width", "height", "frames", "batch", "traced_bytes"];

/// The rows of one traced file; every `vae` must be registered (None: any
/// name, for `family add`, which registers it).
pub fn parse(text: &str, file: &str, registry: Option<&Registry>) -> Result<Vec<TracedRow>> {
    // One byte-order mark at the start is what a spreadsheet writes: read
    // past it, as a measurement CSV is.
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut lines = text.lines().enumerate().map(|(i, l)| (i as u64 + 1, l)).filter(|(_, l)| !l.trim().is_empty());
    let Some((_, head)) = lines.next() else { bail!(InputError::in_file(file, "empty: expected a header line")) };
    let header: Vec<String> = split_fields(head, file, 1, None)?.iter().map(|h| h.trim().to_string()).collect();
    let mut at = [0usize; NEEDED.len()];
    for (slot, name) in at.iter_mut().zip(NEEDED) {
        *slot = header.iter().position(|h| h == name).ok_or_else(|| {
            InputError::at_line(file, 1, format!("missing column '{name}' (a traced file has {})", NEEDED.join(", ")))
        })?;
    }
    let optional = |name: &str| header.iter().position(|h| h == name);
    let (temporal_at, facts_at, simulated_at) = (optional("temporal_tile"), optional("facts"), optional("simulated"));
    let mut rows = Vec::new();
    for (line, text) in lines {
        let f = split_fields(text, file, line, Some(&header))?;
        if f.len() != header.len() {
            bail!(InputError::at_line(file, line, format!("{} fields, the header has {}", f.len(), header.len())));
        }
        // No control character (a NUL, an escape) in any field: a file that
        // carries one was not written by the tracer, and its words would
        // travel into the shipped file and the policy.
        if let Some((k, _)) = f.iter().enumerate().find(|(_, v)| v.chars().any(|c| c.is_control() && c != '\t')) {
            let name = header.get(k).map_or("?", String::as_str);
            bail!(InputError::at_line(file, line, format!("{name}: a control character in '{}'", f[k].escape_debug()))
                .field(name));
        }
        let field = |k: usize| f[at[k]].trim();
        let wrong = |k: usize, what: &str| {
            anyhow::Error::new(
                InputError::at_line(file, line, format!("{}: {what}, found '{}'", NEEDED[k], f[at[k]].escape_debug()))
                    .field(NEEDED[k]),
            )
        };
        // A count is digits alone: no sign, no space around it (a number a
        // tool wrote with padding is a sign it was edited by hand).
        let count = |k: usize, least: u64| -> Result<u64> {
            let raw = &f[at[k]];
            if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
                return Err(wrong(k, "expected digits alone"));
            }
            match raw.parse::<u64>() {
                Ok(n) if n >= least => Ok(n),
                _ => Err(wrong(k, if least > 0 { "expected a positive integer" } else { "expected an integer" })),
            }
        };
        let vae = field(1).to_string();
        if registry.is_some_and(|r| !r.0.contains_key(&vae)) {
            return Err(wrong(1, "not a registered family (fits/policy.toml [vae.*])"));
        }
        rows.push(TracedRow {
            family: field(0).to_string(),
            vae,
            op: field(2).parse().map_err(|e| wrong(2, &format!("{e}")))?,
            dtype: field(3).parse().map_err(|e| wrong(3, &format!("{e}")))?,
            tile: u32::try_from(count(4, 0)?).map_err(|_| wrong(4, "too large"))?,
            width: count(5, 1)?,
            height: count(6, 1)?,
            frames: count(7, 1)?,
            batch: count(8, 1)?,
            bytes: count(9, 1)?,
            temporal_tile: match temporal_at.map(|k| f[k].as_ref()) {
                None => 0,
                Some(t) => {
                    t.parse::<u32>().ok().filter(|_| t.bytes().all(|b| b.is_ascii_digit())).ok_or_else(|| {
                        anyhow::Error::new(
                            InputError::at_line(
                                file,
                                line,
                                format!("temporal_tile: expected an integer, found '{}'", t.escape_debug()),
                            )
                            .field("temporal_tile"),
                        )
                    })?
                }
            },
            simulated: match simulated_at {
                None => Vec::new(),
                Some(k) => parse_simulated(f[k].trim()).map_err(|e| {
                    anyhow::Error::new(InputError::at_line(file, line, format!("simulated: {e}")).field("simulated"))
                })?,
            },
            facts: facts_at.map(|k| f[k].trim().to_string()),
            file: file.to_string(),
            line,
        });
    }
    Ok(rows)
}

/// Every traced file of a folder (`*.csv`, by name); a missing folder is none.
/// A row's `file` is `under/NAME.csv` (`under` is the folder as the root
/// names it, `measurements/traced`), never the path as this run spelled
/// it: rows are identified in the shipped file (a shape's support, the
/// traces digest), which must not depend on where the root is or how it was
/// named. Errors name the file as the user reaches it.
pub fn read_dir(dir: &Path, under: &str, registry: &Registry) -> Result<Vec<TracedRow>> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(Vec::new()) };
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    files.sort();
    let mut rows = Vec::new();
    for path in files {
        let text = crate::fsio::read_text(&path)?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let id_file = format!("{under}/{name}");
        rows.extend(parse(&text, &crate::fsio::shown(&path), Some(registry))?.into_iter().map(|mut r| {
            r.file.clone_from(&id_file);
            r
        }));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> Registry {
        let sd = crate::registry::VaeEntry {
            models: vec![],
            params: None,
            attention: None,
            fp32_switch: false,
            video: None,
            ambiguous: Default::default(),
            class: None,
        };
        Registry([("sd".to_string(), sd)].into_iter().collect())
    }

    const HEAD: &str = "family,vae,op,dtype,tile,temporal_tile,width,height,frames,batch,traced_bytes,config_source\n";

    #[test]
    fn rows_are_read_with_their_provenance_quoted() {
        let text = format!("{HEAD}sd15,sd,decode,fp16,0,0,512,512,1,1,402685952,\"a, b\"\n");
        let rows = parse(&text, "t.csv", Some(&registry())).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].op, rows[0].dtype, rows[0].bytes, rows[0].line), (Op::Decode, Dtype::Fp16, 402685952, 2));
    }

    #[test]
    fn a_wrong_field_names_its_line_and_column() {
        for (row, words) in [
            ("sd15,sd,decode,fp16,0,0,512,512,1,1,0,x", "t.csv:2: traced_bytes: expected a positive integer"),
            ("sd15,sdx,decode,fp16,0,0,512,512,1,1,5,x", "t.csv:2: vae: not a registered family"),
            ("sd15,sd,decoder,fp16,0,0,512,512,1,1,5,x", "t.csv:2: op:"),
            ("sd15,sd,decode,fp16,0,0,512,512,1,1,5", "t.csv:2: 11 fields, the header has 12"),
        ] {
            let e = parse(&format!("{HEAD}{row}\n"), "t.csv", Some(&registry())).unwrap_err().to_string();
            assert!(e.contains(words), "{row}: {e}");
        }
        let e = parse("family,vae\n", "t.csv", Some(&registry())).unwrap_err().to_string();
        assert!(e.contains("missing column 'op'"), "{e}");
    }
}
