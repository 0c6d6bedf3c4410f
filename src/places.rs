//! Where in a file a finding or an input error is: the line a CI
//! annotation (`::error file=…,line=…`) points at, so a reviewer lands on
//! the row, the line of `fits/vae.json` or the policy entry at fault.
//!
//! Pure functions over a file's text; the callers read the files. A place
//! that cannot be found falls back to the file's first line, so every
//! annotation carries a line.

/// The 1-based line where the shipped line `key` (`vae/op/tile/backend/allocator/os/dtype`)
/// is written in a pretty-printed coefficients file, and, when `field` is
/// given, the line of that field inside it.
pub use vramfit_runtime::io::InputError;

/// The input error an error is or wraps, if any: an [`InputError`] itself,
/// or a runtime refusal about a file.
pub fn input_of(e: &anyhow::Error) -> Option<&InputError> {
    e.chain().find_map(|c| {
        c.downcast_ref::<InputError>().or_else(|| c.downcast_ref::<vramfit_runtime::error::Error>()?.input())
    })
}

pub fn coefficients_line(text: &str, key: &str, field: Option<&str>) -> Option<u64> {
    let parts: Vec<&str> = key.split('/').collect();
    let [vae, op, tiles, backend, allocator, os, dtype] = parts[..] else { return None };
    let (tile, temporal_tile) = crate::vocab::parse_tiles(tiles)?;
    let (tile, temporal_tile) = (tile.to_string(), temporal_tile.map(|t| t.to_string()));
    let mut want: Vec<(&str, &str)> = vec![("vae", vae), ("op", op), ("tile", &tile)];
    if let Some(t) = &temporal_tile {
        want.push(("temporal_tile", t));
    }
    want.extend([("conv_backend", backend), ("allocator", allocator), ("os", os), ("dtype", dtype)]);
    let lines: Vec<&str> = text.lines().collect();
    let value_of = |line: &str, name: &str| -> Option<String> {
        let rest = line.trim().strip_prefix(&format!("\"{name}\":"))?;
        Some(rest.trim().trim_end_matches(',').trim_matches('"').to_string())
    };
    for (i, line) in lines.iter().enumerate() {
        if value_of(line, "vae").as_deref() != Some(vae) {
            continue;
        }
        // The key's fields follow `vae` in order, one a line.
        let window = &lines[i..lines.len().min(i + want.len())];
        let matches = want.len() == window.len()
            && want.iter().zip(window).all(|((f, v), l)| value_of(l, f).as_deref() == Some(*v));
        if !matches {
            continue;
        }
        let Some(field) = field else { return Some(i as u64 + 1) };
        // The field inside this object: before the object closes.
        let found = lines[i..]
            .iter()
            .take_while(|l| !l.trim_start().starts_with('}'))
            .position(|l| l.trim_start().starts_with(&format!("\"{field}\"")));
        return Some(found.map_or(i, |j| i + j) as u64 + 1);
    }
    None
}

/// The line of a top-level field of a pretty-printed JSON file (`"margin":`).
pub fn json_field_line(text: &str, field: &str) -> Option<u64> {
    let wanted = format!("\"{field}\":");
    text.lines().position(|l| l.trim_start().starts_with(&wanted)).map(|i| i as u64 + 1)
}

/// The line of the store (one point a line) that holds point `id`.
pub fn store_line(text: &str, id: &str) -> Option<u64> {
    let wanted = format!("{{\"id\":{}", serde_json::to_string(id).ok()?);
    text.lines().position(|l| l.starts_with(&wanted)).map(|i| i as u64 + 1)
}

/// The line of the policy that names `id` (`id = "…"` in an `[[exclude]]`,
/// `[[keep]]` or `[[exception]]` table).
pub fn policy_id_line(text: &str, id: &str) -> Option<u64> {
    text.lines().position(|l| listed_id(l) == Some(id)).map(|i| i as u64 + 1)
}

/// The id a policy line names (`id = "…"`), if it names one.
fn listed_id(line: &str) -> Option<&str> {
    let rest = line.trim().strip_prefix("id")?.trim_start().strip_prefix('=')?;
    Some(rest.trim().trim_matches('"'))
}

/// Every id the policy names, to the first line that names it: what
/// [`policy_id_line`] answers, read once (`verify` and `fit` place up to
/// 10^5 ratio-bound findings, and a walk of the policy for each was a fifth
/// of `fit` at 10^6 points).
fn policy_id_index(text: &str) -> std::collections::HashMap<&str, u64> {
    let mut index = std::collections::HashMap::new();
    for (i, l) in text.lines().enumerate() {
        if let Some(id) = listed_id(l) {
            index.entry(id).or_insert(i as u64 + 1);
        }
    }
    index
}

/// The line of a top-level policy setting (`ratio_bound = …`).
pub fn policy_key_line(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .position(|l| l.trim_start().strip_prefix(key).is_some_and(|r| r.trim_start().starts_with('=')))
        .map(|i| i as u64 + 1)
}

/// Sets `at` on every finding: the line of its file to look at, read from
/// the files under `root` (each read once, and the store only when a
/// finding points into it); the first line where nothing closer is found.
pub fn locate(findings: &mut [crate::findings::Finding], root: &std::path::Path) {
    use crate::findings::{Code, POINTS_FILE, POLICY_FILE, SHIPPED_FILE};
    if findings.is_empty() {
        return;
    }
    // Each file read only when a finding points into it.
    let read = |rel: &str| {
        if findings.iter().any(|f| f.file == rel) {
            crate::fsio::read_text(&root.join(rel)).unwrap_or_default()
        } else {
            String::new()
        }
    };
    let (shipped, policy, store) = (read(SHIPPED_FILE), read(POLICY_FILE), read(POINTS_FILE));
    let store_index: std::collections::HashMap<&str, u64> = store
        .lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let rest = l.strip_prefix("{\"id\":\"")?;
            Some((&rest[..rest.find('"')?], i as u64 + 1))
        })
        .collect();
    let policy_ids = policy_id_index(&policy);
    for f in findings.iter_mut() {
        let found = match f.file {
            SHIPPED_FILE => {
                let field = f.path.as_deref().and_then(|p| p.rsplit_once("].")).map(|(_, field)| field);
                let field = field.map(|x| x.split(['.', '[']).next().unwrap_or(x));
                match (&f.line, &f.path) {
                    (Some(key), _) => coefficients_line(&shipped, key, field),
                    (None, Some(path)) => {
                        let top = path.split(['.', '[']).next().unwrap_or(path);
                        let key = path.strip_prefix("lines[").and_then(|r| r.split(']').next());
                        key.and_then(|k| coefficients_line(&shipped, k, field))
                            .or_else(|| json_field_line(&shipped, top))
                    }
                    (None, None) => None,
                }
            }
            POLICY_FILE => {
                f.points.iter().find_map(|id| policy_ids.get(id.as_str()).copied()).or_else(|| match f.code {
                    Code::RatioBound | Code::Settings => policy_key_line(&policy, "ratio_bound"),
                    Code::Margin => policy_key_line(&policy, "margin"),
                    _ => None,
                })
            }
            POINTS_FILE => f.points.iter().find_map(|id| store_index.get(id.as_str()).copied()),
            _ => None,
        };
        f.at = Some(found.unwrap_or(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "{\n  \"margin\": \"0.05\",\n  \"lines\": [\n    {\n      \"vae\": \"sd\",\n      \"op\": \"decode\",\n      \"tile\": 0,\n      \"conv_backend\": \"cudnn\",\n      \"allocator\": \"native\",\n      \"os\": \"any\",\n      \"dtype\": \"fp16\",\n      \"kind\": \"fitted\",\n      \"slope\": \"4452.00\"\n    },\n    {\n      \"vae\": \"sd\",\n      \"op\": \"decode\",\n      \"tile\": 0,\n      \"conv_backend\": \"cudnn\",\n      \"allocator\": \"native\",\n      \"os\": \"any\",\n      \"dtype\": \"fp32\",\n      \"slope\": \"5435.48\"\n    }\n  ]\n}\n";

    #[test]
    fn a_line_and_its_field_are_found_by_the_whole_key() {
        assert_eq!(coefficients_line(FILE, "sd/decode/0/cudnn/native/any/fp16", None), Some(5));
        assert_eq!(coefficients_line(FILE, "sd/decode/0/cudnn/native/any/fp32", Some("slope")), Some(23));
        assert_eq!(coefficients_line(FILE, "sd/decode/0/cudnn/native/any/bf16", None), None);
        assert_eq!(json_field_line(FILE, "margin"), Some(2));
    }

    #[test]
    fn store_policy_and_input_error_places() {
        let store =
            "{\"format\":\"vramfit-points\",\"version\":1,\"points\":[\n{\"id\":\"a\",\"x\":1},\n{\"id\":\"b\"}\n]}\n";
        assert_eq!(store_line(store, "b"), Some(3));
        assert_eq!(store_line(store, "c"), None);
        let policy = "margin = 0.05\nratio_bound = 1.3\n\n[[exclude]]\nid = \"p1\"\nreason = \"x\"\n";
        assert_eq!(policy_id_line(policy, "p1"), Some(5));
        // The index answers what the walk answers, the first line of an id
        // listed twice included, and nothing for an id never listed.
        let twice = format!("{policy}\n[[keep]]\nid = \"p1\"\n[[exception]]\nid = \"p2\"\n");
        let index = policy_id_index(&twice);
        for id in ["p1", "p2", "p3"] {
            assert_eq!(index.get(id).copied(), policy_id_line(&twice, id), "{id}");
        }
        assert_eq!(policy_key_line(policy, "ratio_bound"), Some(2));
        // An input error's place is data, whatever its words say.
        let e = InputError::at_line("new.csv", 8u64, "model: unknown model 'hunyuan'").field("model");
        assert_eq!((e.file.as_str(), e.line, e.field.as_deref()), ("new.csv", Some(8), Some("model")));
        assert_eq!(e.to_string(), "new.csv:8: model: unknown model 'hunyuan'");
        let wrapped = anyhow::Error::new(e.clone()).context("while ingesting");
        assert_eq!(input_of(&wrapped), Some(&e));
        assert_eq!(input_of(&anyhow::anyhow!("new.csv:8: words alone place nothing")), None);
    }
}
