//! Field-by-field comparison of two JSON documents, by path.
//!
//! `verify` compares the shipped coefficient file with the one `emit` would
//! write now, and the strict loader compares a file with its own canonical
//! form; both report each difference by a path a person can find in the
//! file. Arrays of lines are matched by line key, not by position, so one
//! added line does not make every line after it "differ".

use serde_json::Value;

/// One differing field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// `lines[sd/decode/0/cudnn/native/any/fp16].slope`, `legacy.elem_bytes.fp32`, …
    pub path: String,
    /// The value the reference has (None: the reference has no such field).
    pub expected: Option<Value>,
    /// The value found (None: the field is missing).
    pub found: Option<Value>,
}

impl Difference {
    /// An unknown field: present in the file, absent from the reference.
    pub fn is_unknown(&self) -> bool {
        self.expected.is_none()
    }
}

const KEY_FIELDS: [&str; 7] = ["vae", "op", "tile", "conv_backend", "allocator", "os", "dtype"];

/// The line key an array element stands for, when it has all seven fields,
/// written as [`super::key::LineKey`]'s Display writes it (a video
/// line's `temporal_tile` joins the tile segment: `16f`).
fn line_key(v: &Value) -> Option<String> {
    let o = v.as_object()?;
    let mut parts: Vec<String> = KEY_FIELDS
        .iter()
        .map(|k| match o.get(*k)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .collect::<Option<_>>()?;
    if let Some(t) = o.get("temporal_tile").and_then(Value::as_u64) {
        parts[2] = if parts[2] == "0" { format!("{t}f") } else { format!("{}x{t}f", parts[2]) };
    }
    Some(parts.join("/"))
}

/// Every difference between `expected` and `found`, in path order.
pub fn differences(expected: &Value, found: &Value) -> Vec<Difference> {
    let mut out = Vec::new();
    walk("", expected, found, &mut out);
    out
}

/// The first difference, if any.
pub fn first_difference(expected: &Value, found: &Value) -> Option<Difference> {
    differences(expected, found).into_iter().next()
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(path: &str, e: &Value, f: &Value, out: &mut Vec<Difference>) {
    match (e, f) {
        (Value::Object(eo), Value::Object(fo)) => {
            for (k, ev) in eo {
                match fo.get(k) {
                    Some(fv) => walk(&join(path, k), ev, fv, out),
                    None => out.push(Difference { path: join(path, k), expected: Some(ev.clone()), found: None }),
                }
            }
            for (k, fv) in fo.iter().filter(|(k, _)| !eo.contains_key(*k)) {
                out.push(Difference { path: join(path, k), expected: None, found: Some(fv.clone()) });
            }
        }
        (Value::Array(ea), Value::Array(fa)) if keyed(ea) && keyed(fa) => {
            let ek: Vec<String> = ea.iter().filter_map(line_key).collect();
            let fk: Vec<String> = fa.iter().filter_map(line_key).collect();
            for (k, ev) in ek.iter().zip(ea) {
                let at = format!("{path}[{k}]");
                match fk.iter().position(|x| x == k) {
                    Some(i) => walk(&at, ev, &fa[i], out),
                    None => out.push(Difference { path: at, expected: Some(ev.clone()), found: None }),
                }
            }
            for (k, fv) in fk.iter().zip(fa).filter(|(k, _)| !ek.contains(k)) {
                out.push(Difference { path: format!("{path}[{k}]"), expected: None, found: Some(fv.clone()) });
            }
            let order_differs = ek.iter().filter(|k| fk.contains(k)).ne(fk.iter().filter(|k| ek.contains(k)));
            if order_differs || has_repeats(&fk) {
                out.push(Difference { path: path.to_string(), expected: Some(e.clone()), found: Some(f.clone()) });
            }
        }
        (Value::Array(ea), Value::Array(fa)) if ea.len() == fa.len() && ea.iter().any(Value::is_object) => {
            for (i, (ev, fv)) in ea.iter().zip(fa).enumerate() {
                walk(&format!("{path}[{i}]"), ev, fv, out);
            }
        }
        _ if e != f => {
            out.push(Difference { path: path.to_string(), expected: Some(e.clone()), found: Some(f.clone()) })
        }
        _ => {}
    }
}

/// An array of line objects (matched by key). An empty array counts, so a
/// file whose lines were all deleted still lists each missing line.
fn keyed(a: &[Value]) -> bool {
    a.iter().all(|v| line_key(v).is_some())
}

fn has_repeats(keys: &[String]) -> bool {
    let mut sorted = keys.to_vec();
    sorted.sort();
    sorted.windows(2).any(|w| w[0] == w[1])
}

/// A value as shown in a message: compact JSON, cut after 200 characters
/// (the path says where to look; a whole list of lines helps nobody).
pub fn show(v: &Option<Value>) -> String {
    const LIMIT: usize = 200;
    match v {
        None => "(absent)".to_string(),
        Some(v) => {
            let s = v.to_string();
            match s.char_indices().nth(LIMIT) {
                Some((cut, _)) => format!("{}… ({} characters)", &s[..cut], s.chars().count()),
                None => s,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_fields_and_unknown_keys_by_path() {
        let e = json!({"a": 1, "b": {"c": [1, 2], "d": "x"}});
        let f = json!({"a": 1, "b": {"c": [1, 3], "e": true}});
        let d = differences(&e, &f);
        let paths: Vec<&str> = d.iter().map(|x| x.path.as_str()).collect();
        assert_eq!(paths, ["b.c", "b.d", "b.e"]);
        assert!(d[2].is_unknown());
        assert_eq!(d[1].found, None);
    }

    #[test]
    fn lines_are_matched_by_key_not_position() {
        let line = |dtype: &str, slope: &str| {
            json!({"vae": "sd", "op": "decode", "tile": 0, "conv_backend": "cudnn", "allocator": "native",
                   "os": "any", "dtype": dtype, "slope": slope})
        };
        let e = json!({"lines": [line("fp16", "1.00"), line("fp32", "2.00")]});
        let f = json!({"lines": [line("bf16", "9.00"), line("fp16", "1.00"), line("fp32", "2.50")]});
        let paths: Vec<String> = differences(&e, &f).into_iter().map(|d| d.path).collect();
        assert_eq!(
            paths,
            ["lines[sd/decode/0/cudnn/native/any/fp32].slope", "lines[sd/decode/0/cudnn/native/any/bf16]"]
        );
        // The same lines in another order is a difference too: the file has one order.
        let swapped = json!({"lines": [line("fp32", "2.00"), line("fp16", "1.00")]});
        assert_eq!(differences(&e, &swapped).len(), 1);
        assert!(differences(&e, &e).is_empty());
    }
}
