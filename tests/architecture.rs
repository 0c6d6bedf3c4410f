//! The house stays one-way: every `crate::…` reference in `src/` points to a
//! lower floor (docs/DESIGN.md, "The house"), so no import runs back up and
//! no two modules form a circle. Modules on one floor do not use each other.

use crate::common::*;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// Each top-level module of `src/` and its floor.
const FLOORS: &[(&str, u32)] = &[
    ("exact", 0),
    ("vocab", 0),
    ("registry", 0),
    ("findings", 0),
    ("fsio", 0),
    ("text", 0),
    ("par", 0),
    ("heap", 0),
    ("progress", 0),
    ("units", 1),
    ("fit", 1),
    ("places", 1),
    ("points", 2),
    ("policy", 3),
    ("workspace", 4),
    ("lines", 4),
    ("crossval", 5),
    ("plot", 7),
    ("coefficients", 5),
    ("pricing", 6),
    ("verify", 7),
    ("plan", 7),
    ("diff", 7),
    ("commands", 8),
    ("report", 8),
    ("cli", 9),
];

/// The top-level module a file of `src/` belongs to.
fn module_of(rel: &str) -> String {
    rel.split(['/', '.']).next().unwrap().to_string()
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every `crate::NAME` a file names, outside comments and its unit tests.
fn uses(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap();
    let mut out = Vec::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push(name);
        }
    }
    out
}

#[test]
fn no_import_runs_back_up_and_no_floor_uses_itself() {
    let floors: BTreeMap<&str, u32> = FLOORS.iter().copied().collect();
    let src = repo().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut bad = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        if rel == "lib.rs" || rel == "main.rs" {
            continue;
        }
        let from = module_of(&rel);
        let Some(&from_floor) = floors.get(from.as_str()) else {
            bad.push(format!("{rel}: module '{from}' has no floor in this test (and in docs/DESIGN.md)"));
            continue;
        };
        for to in uses(&fs::read_to_string(&f).unwrap()) {
            if to == from {
                continue;
            }
            match floors.get(to.as_str()) {
                Some(&t) if t < from_floor => {}
                Some(&t) => bad.push(format!("{rel}: {from} (floor {from_floor}) uses {to} (floor {t})")),
                None => bad.push(format!("{rel}: uses crate::{to}, a module with no floor")),
            }
        }
    }
    assert!(bad.is_empty(), "the house is not one-way:\n{}", bad.join("\n"));
}

#[test]
fn the_check_sees_an_import_that_runs_back_up() {
    // The scanner itself: a file of `points` naming `crate::policy` is seen.
    let found =
        uses("use crate::policy::Registry;\n// crate::cli in a comment\nfn f() { crate::units::mib_up(1, 0); }");
    assert_eq!(found, ["policy", "units"]);
}
