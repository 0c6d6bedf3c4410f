//! Trust where hosts and maintainers touch vramfit (issue 51): outputs that
//! never depend on how the root is spelled, nothing a user passes becoming
//! policy, one write rule for every writer, `verify` over every shipped
//! copy, and `plan` for every temporal walk.

use crate::common::{fixture, json_of, scratch_of, snapshot, stderr_of, vramfit};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

/// A root with traces (the docs fixture), in a fresh folder.
fn traced_root() -> tempfile::TempDir {
    scratch_of(&fixture("docs"))
}

/// The fixture's FLUX.1 traces, as the traces of a family called `name`.
fn renamed_traces(name: &str) -> String {
    let text = fs::read_to_string(fixture("docs/measurements/traced/flux1.csv")).unwrap();
    let mut lines = text.lines();
    let mut out = format!("{}\n", lines.next().unwrap());
    for l in lines {
        let rest = l.strip_prefix("flux1,flux1,").expect("a FLUX.1 row");
        out.push_str(&format!("{name},{name},{rest}\n"));
    }
    out
}

/// `vramfit --root ROOT family add NAME --traces FILE`.
fn family_add(root: &Path, name: &str, file: &Path) -> std::process::Output {
    vramfit().arg("--root").arg(root).args(["family", "add", name, "--traces"]).arg(file).output().unwrap()
}

/// The five ways to name one root: the folder as the working directory
/// (`.`), a relative path with a detour, its absolute path, a link to it,
/// and its absolute path from another working directory. Each is
/// (working directory, the `--root` argument).
fn spellings(root: &Path, links: &Path) -> Vec<(PathBuf, PathBuf)> {
    let parent = root.parent().unwrap();
    let name = root.file_name().unwrap();
    let link = links.join("via-link");
    if !link.exists() {
        std::os::unix::fs::symlink(root, &link).unwrap();
    }
    vec![
        (root.to_path_buf(), PathBuf::from(".")),
        (parent.to_path_buf(), Path::new(name).join("..").join(name)),
        (root.to_path_buf(), root.to_path_buf()),
        (links.to_path_buf(), PathBuf::from("via-link")),
        (links.to_path_buf(), root.to_path_buf()),
    ]
}

/// `verify`, `emit` and `family add` give byte-identical results for every
/// spelling of the root: nothing written into a shipped file (a traced
/// row's place, the traces digest) carries the path the run was given.
#[cfg(unix)]
#[test]
fn every_spelling_of_the_root_gives_the_same_bytes() {
    let root = traced_root();
    let links = tempfile::tempdir().unwrap();
    let shipped = fs::read(root.path().join("fits/vae.json")).unwrap();
    let traces = root.path().join("new.csv");
    fs::write(&traces, renamed_traces("myvae")).unwrap();
    let pristine = snapshot(root.path());
    let mut added: Option<(Vec<u8>, Vec<u8>)> = None;
    for (cwd, arg) in spellings(root.path(), links.path()) {
        let what = format!("cd {} && --root {}", cwd.display(), arg.display());
        let out =
            vramfit().current_dir(&cwd).arg("--root").arg(&arg).args(["--format", "json", "verify"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{what}: {}", String::from_utf8_lossy(&out.stdout));
        assert_eq!(json_of(&out)["findings"], serde_json::json!([]), "{what}");
        let check = vramfit().current_dir(&cwd).arg("--root").arg(&arg).args(["emit", "--check"]).output().unwrap();
        assert_eq!(check.status.code(), Some(0), "{what}: {}", stderr_of(&check));
        // A fresh emit reproduces the shipped file byte for byte.
        fs::remove_file(root.path().join("fits/vae.json")).unwrap();
        vramfit().current_dir(&cwd).arg("--root").arg(&arg).arg("emit").assert().code(0);
        assert_eq!(fs::read(root.path().join("fits/vae.json")).unwrap(), shipped, "{what}: emit");
        // family add writes the same policy and coefficients.
        let out = vramfit()
            .current_dir(&cwd)
            .arg("--root")
            .arg(&arg)
            .args(["family", "add", "myvae", "--traces"])
            .arg(&traces)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr_of(&out));
        let now = (
            fs::read(root.path().join("fits/policy.toml")).unwrap(),
            fs::read(root.path().join("fits/vae.json")).unwrap(),
        );
        let text = String::from_utf8_lossy(&now.1).into_owned();
        assert!(
            !text.contains(&root.path().display().to_string()) && !text.contains("via-link"),
            "{what}: a path in the file"
        );
        match &added {
            None => added = Some(now),
            Some(first) => assert!(first == &now, "{what}: family add wrote other bytes"),
        }
        // Back to the pristine root for the next spelling.
        for (p, bytes) in &pristine {
            fs::write(p, bytes).unwrap();
        }
        let _ = fs::remove_file(root.path().join("measurements/traced/myvae.csv"));
        assert_eq!(snapshot(root.path()), pristine);
    }
}

/// `verify` compares every shipped copy of the coefficients with
/// `fits/vae.json`: a tampered, truncated or missing runtime copy
/// is a `copy` finding (exit 1), though every other check passes; `emit
/// --check` says it is out of date, and `emit` writes it back.
#[test]
fn verify_finds_a_shipped_copy_that_differs() {
    for (folder, rel) in [("crates/vramfit-runtime", "crates/vramfit-runtime/vae.json")] {
        let root = traced_root();
        fs::create_dir_all(root.path().join(folder)).unwrap();
        let shipped = fs::read_to_string(root.path().join("fits/vae.json")).unwrap();
        let copy = root.path().join(rel);
        fs::write(&copy, &shipped).unwrap();
        let verify = || vramfit().arg("--root").arg(root.path()).args(["--format", "json", "verify"]).output().unwrap();
        assert_eq!(verify().status.code(), Some(0), "{rel}: the copy is the file");
        // One answer-changing edit: the first line's base.
        let mut tampered: Value = serde_json::from_str(&shipped).unwrap();
        let base = tampered["lines"][0]["base_mib"].as_u64().unwrap();
        tampered["lines"][0]["base_mib"] = Value::from(base + 1);
        for bad in
            [serde_json::to_string_pretty(&tampered).unwrap(), shipped[..shipped.len() / 2].to_string(), String::new()]
        {
            fs::write(&copy, &bad).unwrap();
            let out = verify();
            assert_eq!(out.status.code(), Some(1), "{rel}");
            let findings = json_of(&out)["findings"].as_array().unwrap().clone();
            assert_eq!(findings.len(), 1, "{findings:?}");
            assert_eq!(findings[0]["code"], "copy");
            assert_eq!(findings[0]["file"], rel);
        }
        let check = vramfit().arg("--root").arg(root.path()).args(["emit", "--check"]).output().unwrap();
        assert_eq!(check.status.code(), Some(1), "{rel}: emit --check sees the stale copy");
        assert!(String::from_utf8_lossy(&check.stdout).contains(&format!("{rel}: OUT OF DATE")), "{rel}");
        fs::remove_file(&copy).unwrap();
        let out = verify();
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(json_of(&out)["findings"][0]["found"], "missing");
        vramfit().arg("--root").arg(root.path()).arg("emit").assert().code(0);
        assert_eq!(fs::read_to_string(&copy).unwrap(), shipped, "{rel}: emit writes the copy");
        assert_eq!(verify().status.code(), Some(0));
    }
}

/// The policy as TOML, for comparing what it says rather than its bytes.
fn policy_of(root: &Path) -> toml::Table {
    fs::read_to_string(root.join("fits/policy.toml")).unwrap().parse().unwrap()
}

/// Newlines, quotes, brackets and control characters in the family name,
/// the traces' file name and their config source: each add is refused with
/// nothing written, or leaves a policy that reads as the old one plus
/// exactly the one new `[vae.NAME]` (no `[[exclude]]`, `[[keep]]` or other
/// family smuggled in), and the prices of the other families unchanged.
#[cfg(unix)]
#[test]
fn nothing_passed_to_family_add_becomes_policy() {
    let hostile = [
        "t\n[[exclude]]\nid = \"i7785061-flux1-decode-fp16-2048x2048\"\nreason = \"x\"\n#",
        "t\"\n[vae.evil]\nclass = \"kl-2d\"\nmodels = [\"sdxl-turbo\"]\n#",
        "a]b[c",
        "quote\"quote",
        "back\\slash",
        "tab\there",
        "esc\u{1b}[31m",
        "''' triple",
    ];
    let base = traced_root();
    let before_policy = policy_of(base.path());
    let price = |root: &Path| {
        let out = vramfit()
            .arg("--root")
            .arg(root)
            .args(["--format", "json", "reserve", "flux1", "decode", "1024x1024", "--dtype", "bf16", "--os", "linux"])
            .output()
            .unwrap();
        json_of(&out)["bytes"].clone()
    };
    let flux1 = price(base.path());
    for h in hostile {
        // In the file name and in the config source.
        let root = traced_root();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(format!("{h}.csv").replace('/', "_"));
        let traces = renamed_traces("myvae")
            .replace("black-forest-labs/FLUX.1-dev", &format!("\"\"{}\"\"", h.replace('"', "\"\"")));
        fs::write(&file, traces).unwrap();
        let out = family_add(root.path(), "myvae", &file);
        let after = policy_of(root.path());
        if out.status.code() == Some(0) {
            let mut rest = after.clone();
            let added = rest["vae"].as_table_mut().unwrap().remove("myvae").expect("the family is added");
            assert_eq!(rest, before_policy, "{h:?}: the policy changed beyond [vae.myvae]");
            assert!(added.get("models").and_then(|m| m.as_array()).is_some_and(|m| m.is_empty()), "{h:?}: {added}");
            assert_eq!(price(root.path()), flux1, "{h:?}: another family's price moved");
        } else {
            assert_eq!(out.status.code(), Some(2), "{h:?}: {}", stderr_of(&out));
            assert_eq!(after, before_policy, "{h:?}");
        }
        // As the family's name: always refused, nothing written.
        let root = traced_root();
        let before = snapshot(root.path());
        fs::write(&file, renamed_traces("myvae")).unwrap();
        let out = family_add(root.path(), h, &file);
        assert_eq!(out.status.code(), Some(2), "{h:?}");
        assert_eq!(snapshot(root.path()), before, "{h:?}: written");
    }
}

/// Names a command line reads (`plan canvas`, every subcommand) and names
/// that are not plain lowercase words are refused; nothing is written.
#[test]
fn family_add_refuses_names_that_would_change_a_command_line() {
    let root = traced_root();
    let before = snapshot(root.path());
    let dir = tempfile::tempdir().unwrap();
    for name in
        ["canvas", "plan", "reserve", "verify", "family", "help", "Canvas", "", "..", "-x", "9lives", "a b", "a/b", "é"]
    {
        let file = dir.path().join("t.csv");
        fs::write(&file, renamed_traces(if name.is_empty() { "x" } else { name })).unwrap();
        let out = family_add(root.path(), name, &file);
        assert_eq!(out.status.code(), Some(2), "{name:?}: {}", stderr_of(&out));
        assert_eq!(snapshot(root.path()), before, "{name:?}");
    }
}

/// Rows that contradict or repeat each other, control characters, numbers
/// with signs or spaces, and sizes too large to price are refused naming
/// the input file, its line and the field; a BOM at the start is read past.
#[test]
fn family_add_refuses_bad_rows_at_their_file_line_and_field() {
    let good = renamed_traces("myvae");
    let lines: Vec<&str> = good.lines().collect();
    let (head, r1, r2) = (lines[0], lines[1], lines[2]);
    let field = |row: &str, k: usize, v: &str| {
        let mut f: Vec<String> = row.split(',').map(str::to_string).collect();
        f[k] = v.to_string();
        f.join(",")
    };
    // Columns: family,vae,op,dtype,tile,temporal_tile,width,height,frames,batch,traced_bytes,…
    let cases = [
        (format!("{head}\n{r1}\n{r2}\n{r1}\n"), 4, "traced_bytes", "the same op as line 2"),
        (format!("{head}\n{r1}\n{r2}\n{}\n", field(r1, 10, "999")), 4, "traced_bytes", "line 2"),
        (format!("{head}\n{}\n", field(r1, 1, "my\0vae")), 2, "vae", "control character"),
        (format!("{head}\n{}\n", field(r1, 6, " 512")), 2, "width", "digits alone"),
        (format!("{head}\n{}\n", field(r1, 6, "+512")), 2, "width", "digits alone"),
        (format!("{head}\n{}\n", field(r1, 10, "1e9")), 2, "traced_bytes", "digits alone"),
        (format!("{head}\n{}\n", field(r1, 10, "18446744073709551615")), 2, "traced_bytes", "too large"),
        (format!("{head}\n{}\n", field(&field(r1, 6, "4294967296"), 7, "4294967296")), 2, "width", "too large"),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (text, line, name, words) in cases {
        let root = traced_root();
        let before = snapshot(root.path());
        let file = dir.path().join("rows.csv");
        fs::write(&file, &text).unwrap();
        let out = vramfit()
            .arg("--root")
            .arg(root.path())
            .args(["--format", "json", "family", "add", "myvae", "--traces"])
            .arg(&file)
            .output()
            .unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(&format!("rows.csv:{line}: {name}")) && err.contains(words), "{name}: {err}");
        assert_eq!(snapshot(root.path()), before, "{name}: written");
    }
    let root = traced_root();
    let file = dir.path().join("bom.csv");
    fs::write(&file, format!("\u{feff}{good}")).unwrap();
    let out = family_add(root.path(), "myvae", &file);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

/// Every entry under `dir` without following links: a file with its bytes,
/// a link with its target.
fn tree(dir: &Path) -> Vec<(PathBuf, Result<Vec<u8>, PathBuf>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                out.push((p.clone(), Err(fs::read_link(&p).unwrap())));
            } else if m.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), Ok(fs::read(&p).unwrap())));
            }
        }
    }
    out.sort();
    out
}

/// Every writer refuses a symbolic link at its output, at a folder it
/// writes into under the root or the output folder, and at a file name
/// (dangling links included): exit 2, the message names the link, and
/// nothing is written on either side of it.
#[cfg(unix)]
#[test]
fn no_writer_writes_through_a_link() {
    use std::os::unix::fs::symlink;
    let outside = tempfile::tempdir().unwrap();
    let victim_dir = outside.path().join("dir");
    fs::create_dir_all(&victim_dir).unwrap();
    let victim_file = outside.path().join("file.json");
    fs::write(&victim_file, "precious").unwrap();
    let csv = fixture("docs/new-point.csv");
    let traces = outside.path().join("t.csv");
    fs::write(&traces, renamed_traces("myvae")).unwrap();
    // (what, how to plant the link in a root, the command line, the name the refusal gives)
    type Plant = Box<dyn Fn(&Path)>;
    let dir_link = |rel: &'static str| -> Plant {
        let to = victim_dir.clone();
        Box::new(move |r: &Path| {
            let p = r.join(rel);
            if p.exists() {
                if p.is_dir() {
                    fs::remove_dir_all(&p).unwrap()
                } else {
                    fs::remove_file(&p).unwrap()
                }
            }
            symlink(&to, &p).unwrap();
        })
    };
    let file_link = |rel: &'static str, dangling: bool| -> Plant {
        let to = if dangling { outside.path().join("nothing-here.json") } else { victim_file.clone() };
        Box::new(move |r: &Path| {
            let p = r.join(rel);
            let _ = fs::remove_file(&p);
            symlink(&to, &p).unwrap();
        })
    };
    let cases: Vec<(&str, Plant, Vec<String>, &str)> = vec![
        ("plot --out L", dir_link("L"), vec!["plot".into(), "--out".into(), "L".into()], "L"),
        ("plot, default plots/", dir_link("plots"), vec!["plot".into()], "plots"),
        ("report --out L", dir_link("L"), vec!["report".into(), "--out".into(), "L".into()], "L"),
        ("report, default folder", dir_link("vramfit-report"), vec!["report".into()], "vramfit-report"),
        (
            "export --out L",
            file_link("L.json", false),
            vec!["export".into(), "--host".into(), "invokeai".into(), "--out".into(), "L.json".into()],
            "L.json",
        ),
        (
            "export --out dangling",
            file_link("D.json", true),
            vec!["export".into(), "--host".into(), "comfyui".into(), "--out".into(), "D.json".into()],
            "D.json",
        ),
        ("emit, fits/vae.json a link", file_link("fits/vae.json", false), vec!["emit".into()], "fits/vae.json"),
        (
            "ingest, the store a link",
            file_link("measurements/vae.json", false),
            vec!["ingest".into(), csv.display().to_string()],
            "measurements/vae.json",
        ),
        (
            "ingest, measurements/ a link",
            dir_link("measurements"),
            vec!["ingest".into(), csv.display().to_string()],
            "measurements",
        ),
        (
            "family add, measurements/traced/ a link",
            dir_link("measurements/traced"),
            vec!["family".into(), "add".into(), "myvae".into(), "--traces".into(), traces.display().to_string()],
            "measurements/traced",
        ),
        (
            "family add, the policy a link",
            file_link("fits/policy.toml", false),
            vec!["family".into(), "add".into(), "myvae".into(), "--traces".into(), traces.display().to_string()],
            "fits/policy.toml",
        ),
        (
            "family add, the traces' name a dangling link",
            file_link("measurements/traced/myvae.csv", true),
            vec!["family".into(), "add".into(), "myvae".into(), "--traces".into(), traces.display().to_string()],
            "myvae.csv",
        ),
    ];
    for (what, plant, args, named) in cases {
        let root = traced_root();
        // The policy link keeps the policy readable: its target holds the policy.
        if what.contains("policy") {
            fs::copy(root.path().join("fits/policy.toml"), &victim_file).unwrap();
        } else {
            fs::write(&victim_file, "precious").unwrap();
        }
        plant(root.path());
        let outside_before = tree(outside.path());
        let root_before = tree(root.path());
        let out = vramfit().current_dir(root.path()).arg("--root").arg(".").args(&args).output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(err.contains(named) && err.contains("symbolic link"), "{what}: {err}");
        assert_eq!(tree(outside.path()), outside_before, "{what}: written through the link");
        assert_eq!(tree(root.path()), root_before, "{what}: written in the root");
        assert!(!outside.path().join("nothing-here.json").exists(), "{what}");
    }
}

/// `plan` plans every registered video family's clip at two lengths, each
/// walk as it is: a family that decodes every frame at once (Mochi) is
/// planned without a temporal tile, and Python's `plan()` answers the same.
#[test]
fn every_video_family_plans_a_short_and_a_long_clip() {
    let file: Value = serde_json::from_slice(&fs::read(crate::common::repo().join("fits/vae.json")).unwrap()).unwrap();
    let registry = file["registry"].as_object().unwrap();
    let mut asked = Vec::new();
    for (family, entry) in registry {
        let Some(video) = entry.get("video") else { continue };
        let t = video["temporal"].as_u64().unwrap();
        for latent in [3u64, 28] {
            // That many latent frames, or the shortest clip past it the family runs.
            let frames = crate::common::clip_at_least(video, "decode", (latent - 1) * t + 1);
            for free in ["200GiB", "6GiB"] {
                let out = vramfit()
                    .args([
                        "--format",
                        "json",
                        "plan",
                        family,
                        "decode",
                        "832x480",
                        "--frames",
                        &frames.to_string(),
                        "--dtype",
                        "bf16",
                        "--os",
                        "linux",
                        "--free",
                        free,
                    ])
                    .output()
                    .unwrap();
                assert!(
                    matches!(out.status.code(), Some(0 | 1)),
                    "{family} {frames} frames, {free}: {}",
                    stderr_of(&out)
                );
                let plan = json_of(&out);
                if video["walk"] != "tiles" {
                    assert!(plan["temporal_tile"].is_null() || plan["temporal_tile"] == 0, "{family}: {plan}");
                }
                asked.push((family.clone(), frames, free, plan));
            }
        }
    }
    assert!(asked.iter().any(|(f, ..)| f == "mochi"), "mochi is planned");
    let linux = serde_json::json!({"os": "linux", "env": {}});
    let calls: Vec<Value> = asked
        .iter()
        .map(|(family, frames, free, _)| {
            let bytes = free.trim_end_matches("GiB").parse::<u64>().unwrap() << 30;
            let mut kw = linux.clone();
            kw["frames"] = Value::from(*frames);
            kw["dtype"] = Value::from("bf16");
            kw["free"] = Value::from(bytes);
            serde_json::json!({"plan": kw, "args": [family, "decode", 832, 480]})
        })
        .collect();
    let answers = crate::python_package::python_json("hosts.py", &Value::Array(calls));
    for ((family, frames, free, plan), py) in asked.iter().zip(answers) {
        let py = py.get("ok").unwrap_or_else(|| panic!("{family} {frames} {free}: {py}"));
        assert_eq!(py["verdict"], plan["verdict"], "{family} {frames} {free}");
        assert_eq!(py["peak_bytes"], plan["peak_bytes"], "{family} {frames} {free}");
    }
}

/// The runtime crate compiles in its own copy (`crates/vramfit-runtime/vae.json`,
/// inside the crate so it packages alone), and that copy is the shipped
/// file: what `reserve` answers without `--root` is what `fits/vae.json` says.
#[test]
fn the_runtime_crate_compiles_in_the_shipped_file() {
    let shipped = fs::read_to_string(crate::common::repo().join("fits/vae.json")).unwrap();
    assert!(
        vramfit::contract::file::EMBEDDED == shipped,
        "crates/vramfit-runtime/vae.json differs from fits/vae.json: run `vramfit emit`, which writes both"
    );
    let manifest = fs::read_to_string(crate::common::repo().join("crates/vramfit-runtime/Cargo.toml")).unwrap();
    assert!(!manifest.contains("../"), "the runtime crate reaches outside itself");
}
