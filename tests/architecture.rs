//! The house stays one-way: every `crate::…` reference in `src/` points to a
//! lower floor (docs/DESIGN.md, "The house"), so no import runs back up and
//! no two modules form a circle. Modules on one floor do not use each other.

use crate::common::*;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// Each top-level module of `src/` and its floor, as the table of
/// docs/DESIGN.md, "The house", gives them: the table a newcomer reads is
/// the one the check holds the code to.
fn floors() -> BTreeMap<String, u32> {
    let design = fs::read_to_string(repo().join("docs/DESIGN.md")).unwrap();
    let house = design.split("## The house").nth(1).expect("DESIGN has a house").split("\n## ").next().unwrap();
    let mut out = BTreeMap::new();
    for row in house.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let Ok(floor) = cells[1].parse::<u32>() else { continue };
        for name in cells[2].split(',').map(|n| n.trim().trim_matches('`')) {
            assert!(out.insert(name.to_string(), floor).is_none(), "DESIGN lists `{name}` twice");
        }
    }
    out
}

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

/// Every `crate::NAME` a file names outside comments, its unit tests
/// included: a test module that reached up a floor would tie the floors
/// together as surely as the code above it.
fn uses(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
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
    let floors = floors();
    let mut files = Vec::new();
    for src in [repo().join("src"), runtime_src()] {
        let mut found = Vec::new();
        rust_files(&src, &mut found);
        files.extend(found.into_iter().map(|f| (src.clone(), f)));
    }
    let mut bad = Vec::new();
    for (src, f) in files {
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

/// The table lists every top-level module of `src/` (and `main`), and
/// nothing that is not there.
#[test]
fn the_design_table_names_every_module_and_no_other() {
    let mut found = std::collections::BTreeSet::new();
    let entries = fs::read_dir(repo().join("src")).unwrap().chain(fs::read_dir(runtime_src()).unwrap());
    for e in entries {
        let name = e.unwrap().file_name().to_string_lossy().to_string();
        let module = name.strip_suffix(".rs").unwrap_or(&name).to_string();
        if module != "lib" {
            found.insert(module);
        }
    }
    let listed: std::collections::BTreeSet<String> = floors().into_keys().collect();
    let missing: Vec<&String> = found.difference(&listed).collect();
    let extra: Vec<&String> = listed.difference(&found).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/DESIGN.md's house table: missing {missing:?}, extra {extra:?}"
    );
}

/// The runtime crate: what a host links to price a query.
fn runtime_src() -> std::path::PathBuf {
    repo().join("crates/vramfit-runtime/src")
}

/// The runtime crate is a crate of its own, so the compiler keeps it from
/// naming a maintainer-side module; what remains to check is what it
/// links. `cargo tree` (read from Cargo.lock, offline) of the crate's
/// normal dependencies names none of the command line's.
#[test]
fn the_runtime_crate_links_nothing_of_the_command_line() {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["tree", "-p", "vramfit-runtime", "-e", "normal", "--prefix", "none", "--offline", "--locked"])
        .current_dir(repo())
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8(out.stdout).unwrap();
    let names: std::collections::BTreeSet<&str> = tree.lines().filter_map(|l| l.split(' ').next()).collect();
    assert!(names.contains("serde") && names.contains("vramfit-runtime"), "{names:?}");
    let cli_side = [
        "vramfit",
        "clap",
        "clap_complete",
        "clap_mangen",
        "plotters",
        "resvg",
        "tabled",
        "indicatif",
        "toml",
        "sha2",
        "terminal_size",
        "dejavu",
    ];
    let found: Vec<&&str> = cli_side.iter().filter(|n| names.contains(**n)).collect();
    assert!(found.is_empty(), "the runtime crate links {found:?}:\n{tree}");
}

/// The names of a folder's modules (its `.rs` files and subfolders, less
/// `mod.rs`).
fn modules_in(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".rs").to_string())
        .filter(|m| m != "mod")
        .collect();
    out.sort();
    out
}

/// Where a command file of `src/commands/` reaches into a sibling command
/// (`super::emit::…`, `crate::commands::reserve::…`).
fn sibling_calls(file: &str, text: &str, siblings: &[String]) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap();
    let mut bad = Vec::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for s in siblings.iter().filter(|s| s.as_str() != file) {
            for call in [format!("super::{s}::"), format!("crate::commands::{s}::"), format!("super::{{{s}")] {
                if line.contains(&call) {
                    bad.push(format!("commands/{file}.rs: {}", line.trim()));
                }
            }
        }
    }
    bad
}

/// What two commands share lives in the domain (the fresh build, loading
/// coefficients, a diff's sides) or in `commands` itself, never in a
/// sibling command: no command calls another.
#[test]
fn no_command_calls_another() {
    let dir = repo().join("src/commands");
    let siblings = modules_in(&dir);
    assert!(siblings.len() >= 10, "{siblings:?}");
    let mut bad = Vec::new();
    for s in &siblings {
        let text = fs::read_to_string(dir.join(format!("{s}.rs"))).unwrap();
        bad.extend(sibling_calls(s, &text, &siblings));
    }
    assert!(bad.is_empty(), "a command calls another:\n{}", bad.join("\n"));
    // The scanner sees the call this check exists for.
    let fit = "use super::{Found, Outcome};\nfn run() { super::emit::fresh(root) }";
    assert_eq!(sibling_calls("fit", fit, &siblings).len(), 1);
}

/// Renderers return text or bytes (`report::OutFile`); the command writes
/// them. No file of `src/report/` touches the file system.
#[test]
fn renderers_write_nothing() {
    let mut files = Vec::new();
    rust_files(&repo().join("src/report"), &mut files);
    assert!(files.len() >= 10);
    let mut bad = Vec::new();
    for f in files {
        for w in file_writes(&fs::read_to_string(&f).unwrap()) {
            bad.push(format!("{}: {w}", f.display()));
        }
    }
    assert!(bad.is_empty(), "a renderer writes files:\n{}", bad.join("\n"));
    // The scanner sees the write the old bundle renderer made.
    assert_eq!(
        file_writes("let file = dir.join(\"report.md\");\ncrate::fsio::write_atomic(&file, md.as_bytes())?;"),
        ["write_atomic"]
    );
}

/// The file-system writes a source text names, outside its unit tests.
fn file_writes(text: &str) -> Vec<&'static str> {
    let code = text.split("#[cfg(test)]").next().unwrap();
    ["write_atomic", "std::fs", "fs::write", "File::create", "create_dir"]
        .into_iter()
        .filter(|w| code.contains(w))
        .collect()
}

/// A backquoted token of the design that names a path of the repository.
fn names_a_path(token: &str) -> bool {
    let exts = [".rs", ".md", ".toml", ".json", ".py", ".csv", ".sh"];
    !token.contains([' ', '*', '{', '<']) && (token.ends_with('/') || exts.iter().any(|e| token.ends_with(e)))
}

/// A backquoted `module::symbol` of the design (the module one of the house).
fn names_a_symbol<'a>(token: &'a str, floors: &BTreeMap<String, u32>) -> Option<(&'a str, &'a str)> {
    let (module, rest) = token.split_once("::")?;
    let symbol = rest.rsplit("::").next()?;
    let plain = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (floors.contains_key(module) && plain(symbol) && rest.split("::").all(plain)).then_some((module, symbol))
}

/// Whether a module of either crate defines `symbol` (a function, type,
/// trait, constant, module or re-export of that name, or a file).
fn defines(module: &str, symbol: &str) -> bool {
    let mut files = Vec::new();
    for src in [repo().join("src"), runtime_src()] {
        let (file, dir) = (src.join(format!("{module}.rs")), src.join(module));
        if file.exists() {
            files.push(file);
        }
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
    }
    let kinds = ["fn", "struct", "enum", "trait", "const", "static", "type", "mod"];
    files.iter().any(|f| {
        let text = fs::read_to_string(f).unwrap();
        f.file_stem().is_some_and(|s| s == symbol)
            || kinds.iter().any(|k| text.contains(&format!("{k} {symbol}")))
            || text.lines().any(|l| l.trim_start().starts_with("pub use") && l.contains(symbol))
    })
}

/// DESIGN.md stays short (rust-analyzer's architecture page, not a manual)
/// and true: every path it names exists, and every `module::symbol` it
/// names is defined in that module.
#[test]
fn the_design_is_short_and_names_only_what_exists() {
    let design = fs::read_to_string(repo().join("docs/DESIGN.md")).unwrap();
    let lines = design.lines().count();
    assert!(lines <= 250, "docs/DESIGN.md has {lines} lines; it holds at most 250");
    let floors = floors();
    let (mut paths, mut symbols, mut gone) = (0, 0, Vec::new());
    for token in design.split('`').skip(1).step_by(2) {
        if names_a_path(token) {
            paths += 1;
            if !repo().join(token).exists() {
                gone.push(format!("path {token}"));
            }
        } else if let Some((module, symbol)) = names_a_symbol(token, &floors) {
            symbols += 1;
            if !defines(module, symbol) {
                gone.push(format!("symbol {token}"));
            }
        }
    }
    assert!(paths >= 15 && symbols >= 20, "{paths} paths, {symbols} symbols checked");
    assert!(gone.is_empty(), "docs/DESIGN.md names what is not there:\n{}", gone.join("\n"));
    // The checks see a moved file and a renamed function.
    assert!(names_a_path("src/coefficients/fields.rs") && !repo().join("src/coefficients/fields.rs").exists());
    assert!(!defines("verify", "no_such_check") && defines("verify", "certificate"));
}

/// The numbered pricing order of a document's section: each item's step
/// name (in backticks) and its effect (the first word in parentheses).
fn documented_order(doc: &str, heading: &str) -> Vec<(String, String)> {
    let section = doc.split(heading).nth(1).expect("the section").split("\n## ").next().unwrap();
    section
        .lines()
        .filter_map(|l| {
            let (n, rest) = l.split_once(". `")?;
            n.trim().parse::<u32>().ok()?;
            let (name, rest) = rest.split_once('`')?;
            let effect = rest.trim().strip_prefix('(')?.split([',', ')']).next()?.trim();
            Some((name.to_string(), effect.to_string()))
        })
        .collect()
}

/// The pricing order is stated once, by the runtime's step list
/// (`pricing::steps::STEPS`): docs/DESIGN.md's numbered list must be it,
/// step for step and effect for effect; docs/traced.md's step number for
/// the traced rule and the order of the rules heading docs/reserve.md's
/// list follow it. A step added, moved or given another effect fails here
/// until the documents say so.
#[test]
fn the_documented_pricing_order_is_the_runtimes() {
    let order: Vec<(String, String)> =
        vramfit::pricing::pricing_order().into_iter().map(|(n, e)| (n.to_string(), e.to_string())).collect();
    assert_eq!(order.len(), 8, "{order:?}");
    let design = fs::read_to_string(repo().join("docs/DESIGN.md")).unwrap();
    assert_eq!(documented_order(&design, "## Pricing"), order, "docs/DESIGN.md's pricing order");
    // The check sees a swap.
    let swapped = design.replacen("4. `TracedRule`", "4. `HostEstimate`", 1);
    assert_ne!(documented_order(&swapped, "## Pricing"), order);
    let traced = fs::read_to_string(repo().join("docs/traced.md")).unwrap();
    let at = order.iter().position(|(n, _)| n == "TracedRule").unwrap() + 1;
    assert!(traced.contains(&format!("The rule is step {at} of the pricing order")), "docs/traced.md's step number");
    let reserve = fs::read_to_string(repo().join("docs/reserve.md")).unwrap();
    let heads = [
        ("OwnLine", "**Fitted line**"),
        ("DerivedTile", "**Derived tile**"),
        ("UnmeasuredRule", "**Unmeasured rule**"),
        ("TracedRule", "**Traced rule**"),
        ("AttentionPhase", "**Attention on the math kernel**"),
    ];
    let mut last = 0;
    for (step, words) in heads {
        let pos = order.iter().position(|(n, _)| n == step).unwrap();
        assert!(pos >= last, "{step} out of the runtime's order");
        last = pos;
        assert!(reserve.contains(words), "docs/reserve.md lacks {words}");
    }
    let mut seen: Vec<usize> = heads.iter().map(|(_, w)| reserve.find(w).unwrap()).collect();
    let in_doc = seen.clone();
    seen.sort_unstable();
    assert_eq!(in_doc, seen, "docs/reserve.md lists the rules out of the pricing order");
}
