//! Policy problems, file settings, and whether every line reproduces from
//! the points it claims.

use super::{Code, Ctx, Finding, POINTS_FILE, POLICY_FILE, SHIPPED_FILE};
use crate::contract::fields;
use crate::exact::exact_decimal;
use crate::lines::LineKind;
use crate::text::Text;
use crate::workspace::Inputs;
use std::collections::{BTreeMap, BTreeSet};

pub(super) fn policy_problems(inputs: &Inputs) -> Vec<Finding> {
    let finding = |p: &crate::policy::Problem| {
        let hint = match p.code {
            Code::UnknownKey => "fix the key's spelling or remove it",
            _ => "fix the id (see `vramfit points --id …`) or remove the entry",
        };
        Finding::new(p.code, POLICY_FILE, p.message.clone(), hint).points(p.ids.clone())
    };
    inputs.problems.iter().map(finding).collect()
}

pub(super) fn settings(cx: &mut Ctx) {
    let (policy, shipped) = (&cx.inputs.policy, cx.shipped);
    if policy.margin != shipped.margin {
        cx.findings.push(
            Finding::new(
                Code::Margin,
                SHIPPED_FILE,
                format!(
                    "the shipped margin {} differs from the policy's {}",
                    exact_decimal(&shipped.margin),
                    exact_decimal(&policy.margin)
                ),
                "run `vramfit emit` (or `make fit`) so the file is built with the policy's margin",
            )
            .values(exact_decimal(&policy.margin), exact_decimal(&shipped.margin)),
        );
    }
    for (what, p, s) in [
        ("ratio_bound", exact_decimal(&policy.ratio_bound), exact_decimal(&shipped.ratio_bound)),
        ("min_sizes", policy.min_sizes.to_string(), shipped.min_sizes.to_string()),
    ] {
        if p != s {
            cx.findings.push(
                Finding::new(
                    Code::Settings,
                    SHIPPED_FILE,
                    format!("the shipped {what} {s} differs from the policy's {p}"),
                    "run `vramfit emit` so the file matches the policy",
                )
                .values(p, s),
            );
        }
    }
    let fresh_points = cx.inputs.points_digest().to_string();
    let fresh_policy = cx.inputs.policy_digest.clone();
    for (what, file, fresh, shipped_digest) in [
        ("points", POINTS_FILE, fresh_points, &shipped.digests.points),
        ("policy", POLICY_FILE, fresh_policy, &shipped.digests.policy),
    ] {
        if &fresh != shipped_digest {
            cx.findings.push(
                Finding::new(
                    Code::Digest,
                    file,
                    format!("fits/vae.json was emitted from a different {what} file than {file}"),
                    format!("if the change to {file} is intended, run `make fit` and commit fits/vae.json"),
                )
                .values(fresh, shipped_digest),
            );
        }
    }
}

pub(super) fn lines(cx: &mut Ctx) {
    let fresh: BTreeMap<String, &crate::lines::Line> = cx.fresh.iter().map(|l| (l.key.to_string(), l)).collect();
    let mut seen = BTreeSet::new();
    let mut findings = Vec::new();
    for s in &cx.shipped.lines {
        let key = s.key.to_string();
        seen.insert(key.clone());
        let Some(f) = fresh.get(&key) else {
            findings.push(
                Finding::new(
                    Code::Reproduce,
                    SHIPPED_FILE,
                    format!("line {key} is shipped, but no included point or carry produces it now"),
                    "run `vramfit emit`; if points were removed on purpose, commit the new file",
                )
                .at_path(format!("lines[{key}]"))
                .line(&key)
                .points(&s.point_ids),
            );
            continue;
        };
        points_changed(&mut findings, &key, &s.point_ids, s.points, &s.points_digest, f);
        // Slopes, bases and every other field are compared by path in
        // `whole_file`; here only whether the key still makes a line.
        if f.kind == LineKind::Insufficient {
            findings.push(
                Finding::new(
                    Code::Reproduce,
                    SHIPPED_FILE,
                    format!(
                        "line {key} is shipped as {}, but its points no longer make a line ({})",
                        s.kind.as_str(),
                        f.reason.clone().unwrap_or_default()
                    ),
                    "run `vramfit emit`",
                )
                .line(&key)
                .values(f.kind.as_str(), s.kind.as_str()),
            );
        }
    }
    for s in &cx.shipped.insufficient {
        let key = s.key.to_string();
        seen.insert(key.clone());
        match fresh.get(&key) {
            Some(f) => points_changed(&mut findings, &key, &s.point_ids, s.points, &s.points_digest, f),
            None => findings.push(
                Finding::new(
                    Code::PointsChanged,
                    POINTS_FILE,
                    format!("the points of {key} are gone"),
                    "run `vramfit emit`",
                )
                .at_path(format!("insufficient[{key}]"))
                .line(&key)
                .points(&s.point_ids),
            ),
        }
        if let Some(f) = fresh.get(&key).filter(|f| f.kind != LineKind::Insufficient) {
            findings.push(
                Finding::new(
                    Code::Reproduce,
                    SHIPPED_FILE,
                    format!("{key} is shipped as too thin to fit, but its points now make a {} line", f.kind.as_str()),
                    "run `vramfit emit`",
                )
                .line(&key),
            );
        }
    }
    for (key, f) in &fresh {
        if !seen.contains(key) {
            let code = if f.kind == LineKind::Insufficient { Code::PointsChanged } else { Code::Reproduce };
            findings.push(
                Finding::new(
                    code,
                    if code == Code::Reproduce { SHIPPED_FILE } else { POINTS_FILE },
                    format!("{key} ({}) follows from the points but is missing from fits/vae.json", f.kind.as_str()),
                    "new points were added since `emit`: run `vramfit emit` and commit fits/vae.json",
                )
                .at_path(if f.kind == LineKind::Insufficient {
                    format!("insufficient[{key}]")
                } else {
                    format!("lines[{key}]")
                })
                .line(key)
                .points(f.points.iter().map(|p| &p.id)),
            );
        }
    }
    cx.findings.extend(findings);
}

fn points_changed(
    findings: &mut Vec<Finding>,
    key: &str,
    shipped_ids: &[crate::text::Text],
    shipped_count: usize,
    shipped_digest: &str,
    f: &crate::lines::Line,
) {
    if shipped_digest == f.points_digest && shipped_count == f.points.len() {
        return;
    }
    let now: BTreeSet<&str> = f.points.iter().map(|p| p.id.as_str()).collect();
    let then: BTreeSet<&str> = shipped_ids.iter().map(Text::as_str).collect();
    let added: Vec<String> = now.difference(&then).map(|s| s.to_string()).collect();
    let removed: Vec<String> = then.difference(&now).map(|s| s.to_string()).collect();
    let what = match (added.is_empty(), removed.is_empty()) {
        (true, true) => "the same ids, but a point's size or demand was edited".to_string(),
        _ => format!(
            "{}{}",
            if added.is_empty() { String::new() } else { format!("added: {}; ", added.join(", ")) },
            if removed.is_empty() { String::new() } else { format!("removed or excluded: {}", removed.join(", ")) }
        ),
    };
    let mut ids = added.clone();
    ids.extend(removed.clone());
    findings.push(
        Finding::new(
            Code::PointsChanged,
            POINTS_FILE,
            format!("the points behind {key} changed since emit ({})", what.trim_end_matches("; ")),
            "if the change is intended, run `make fit` and commit both files; otherwise restore measurements/vae.json",
        )
        .line(key)
        .points(ids)
        .values(
            format!("{shipped_count} points, {shipped_digest}"),
            format!("{} points, {}", f.points.len(), f.points_digest),
        ),
    );
}

/// Paths that a dedicated check already reports with a better message.
fn covered_elsewhere(path: &str) -> bool {
    const TOP: &[&str] =
        &["format", "version", "margin", "ratio_bound", "min_sizes", "digests.points", "digests.policy"];
    if TOP.contains(&path) {
        return true;
    }
    // A whole line added or removed (`reproduce` above), and a line's point
    // count and digest (`points-changed`, which names the ids).
    let in_line = path.starts_with("lines[") || path.starts_with("insufficient[");
    in_line && (path.ends_with(']') || path.ends_with("].points") || path.ends_with("].points_digest"))
}

/// The whole file, field by field, against what `emit` would write now.
/// This is what makes a green `verify` cover every value `reserve` and
/// `plan` read: the legacy table, the registry, the allocator defaults, the
/// tiles, the size ranges, the texts — not only slopes and bases.
/// The lines with a `points-changed` finding: they differ in every field
/// derived from their points, and that finding already fails verify and
/// says to re-emit, so `whole_file` does not list those fields again.
pub(super) fn moved_lines(findings: &[Finding]) -> BTreeSet<String> {
    findings.iter().filter(|f| f.code == Code::PointsChanged).filter_map(|f| f.line.clone()).collect()
}

/// `skip`: the lines whose fields are not listed, and with it the paths a
/// dedicated check reports; None lists every difference (a file that does
/// not load gets no other check).
pub(super) fn whole_file(
    expected: &serde_json::Value,
    raw: &serde_json::Value,
    skip: Option<&BTreeSet<String>>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in fields::differences(expected, raw) {
        let line = line_of(&d.path);
        let skipped =
            skip.is_some_and(|moved| covered_elsewhere(&d.path) || line.as_ref().is_some_and(|l| moved.contains(l)));
        if skipped {
            continue;
        }
        let (code, message, hint) = if d.is_unknown() {
            (
                Code::UnknownKey,
                format!("fits/vae.json: {}: unknown field (emit never writes it)", d.path),
                "remove the field: a runtime that reads it would price differently from vramfit",
            )
        } else {
            (
                Code::Reproduce,
                format!("fits/vae.json: {} is not what `emit` builds from the points and the policy", d.path),
                "a value was edited by hand, or the inputs changed since `emit`: run `vramfit emit` and review \
                 the diff",
            )
        };
        let mut f = Finding::new(code, SHIPPED_FILE, message, hint)
            .values(fields::show(&d.expected), fields::show(&d.found))
            .at_path(d.path);
        if let Some(l) = line {
            f = f.line(l);
        }
        out.push(f);
    }
    out
}

/// The line key a path inside `lines[…]` or `insufficient[…]` names.
fn line_of(path: &str) -> Option<String> {
    let rest = path.strip_prefix("lines[").or_else(|| path.strip_prefix("insufficient["))?;
    rest.split_once(']').map(|(k, _)| k.to_string())
}
