//! Shell completions and the man page are generated from the same command
//! definition the binary parses with, so they name every subcommand and flag.

use crate::common::*;

const SUBCOMMANDS: &[&str] =
    &["ingest", "fit", "emit", "verify", "reserve", "plan", "diff", "crossval", "plot", "report", "points", "schema"];

fn stdout(args: &[&str]) -> String {
    let out = vramfit().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn completions_name_every_subcommand_in_every_shell() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let script = stdout(&["completions", shell]);
        for sub in SUBCOMMANDS {
            assert!(script.contains(sub), "{shell}: {sub} missing");
        }
        assert!(script.contains("coefficients"), "{shell}: flags");
        if shell != "powershell" {
            assert!(script.contains("markdown"), "{shell}: the values of --format");
        }
    }
    // The bash script is valid bash.
    let script = stdout(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vramfit.bash");
    std::fs::write(&path, script).unwrap();
    let check = std::process::Command::new("bash").arg("-n").arg(&path).status().unwrap();
    assert!(check.success());
    vramfit().args(["completions", "tcsh"]).assert().code(2);
}

#[test]
fn the_man_page_documents_every_subcommand() {
    let page = stdout(&["man"]);
    assert!(page.contains(".TH vramfit 1"), "a section-1 page");
    assert!(page.contains(&format!("vramfit {}", env!("CARGO_PKG_VERSION"))));
    for sub in SUBCOMMANDS {
        assert!(page.contains(&format!("vramfit\\-{sub}")) || page.contains(sub), "{sub} missing");
    }
    assert!(page.contains("\\-\\-root"), "global flags are listed");
}

#[test]
fn every_subcommand_prints_exactly_the_formats_the_help_lists() {
    // Help may wrap a long entry onto indented lines: join them back.
    let mut help = String::new();
    for line in stdout(&["--help"]).lines() {
        if line.starts_with("        ") {
            help.push(' ');
            help.push_str(line.trim_start());
        } else {
            help.push('\n');
            help.push_str(line);
        }
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().display().to_string();
    let csvs: Vec<String> = std::fs::read_dir(data_root().join("measurements/raw"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .map(|p| p.display().to_string())
        .collect();
    let mut ingest = vec!["ingest", "--check"];
    ingest.extend(csvs.iter().map(String::as_str));
    let lines: Vec<(&str, Vec<&str>)> = vec![
        ("ingest", ingest),
        ("fit", vec!["fit"]),
        ("emit", vec!["emit", "--check"]),
        ("verify", vec!["verify"]),
        ("reserve", vec!["reserve", "sdxl", "decode", "512x512", "--dtype", "fp16"]),
        ("plan", vec!["plan", "sdxl", "decode", "512x512", "--dtype", "fp16", "--free", "8GiB"]),
        ("diff", vec!["diff", "legacy", "embedded"]),
        ("crossval", vec!["crossval"]),
        ("plot", vec!["plot", "--out", &out]),
        ("report", vec!["report", "--out", &out, "--before", "embedded"]),
        ("points", vec!["points", "--vae", "sdxl"]),
    ];
    let all = ["table", "json", "github", "markdown"];
    for (name, args) in lines {
        let listed = help
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .and_then(|l| l.rsplit_once("[--format ").map(|(_, f)| f.trim_end_matches(']').to_string()))
            .unwrap_or_else(|| panic!("{name}: no formats in the help"));
        let listed: Vec<&str> = listed.split('|').collect();
        for format in all {
            let o = vramfit().current_dir(data_root()).args(["--format", format]).args(&args).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            if listed.contains(&format) {
                assert!(matches!(o.status.code(), Some(0 | 1)), "{name} --format {format}: {err}");
                assert!(!o.stdout.is_empty(), "{name} --format {format} printed nothing");
            } else {
                assert_eq!(o.status.code(), Some(2), "{name} --format {format} should be refused");
                assert!(err.contains(&format!("`{name}` has no {format} output")), "{err}");
            }
        }
    }
}

/// The man page refers to no page that is not installed, and documents
/// each subcommand's own options in a section of its own.
#[test]
fn the_man_page_is_one_page_with_every_subcommands_options() {
    let page = stdout(&["man"]);
    assert!(!page.contains("vramfit\\-ingest(1)") && !page.contains("(1)\n.br"), "no page is referred to");
    for (sub, option) in [
        ("RESERVE", "\\-\\-temporal\\-tile"),
        ("PLAN", "\\-\\-free"),
        ("POINTS", "\\-\\-line"),
        ("INGEST", "\\-\\-from"),
    ] {
        let section =
            page.split(&format!(".SH \"VRAMFIT {sub}\"")).nth(1).unwrap_or_else(|| panic!("{sub}: no section"));
        let section = section.split("\n.SH ").next().unwrap();
        assert!(section.contains(option), "{sub} lacks {option}");
        assert!(section.contains(".SS Options"), "{sub}");
    }
}

/// Completions offer the values an option takes: the vocabularies and the
/// registered model names; `--help` lists a command's own options before
/// the global ones, and only the formats it prints.
#[test]
fn completions_and_help_offer_the_values_each_option_takes() {
    let bash = stdout(&["completions", "bash"]);
    for value in [
        "fp16 bf16 fp32",
        "cudnn miopen mps xpu cpu",
        "auto native cudaMallocAsync expandable_segments",
        "sdxl",
        "ltx-2",
    ] {
        assert!(bash.contains(value), "bash completion lacks `{value}`");
    }
    let help = stdout(&["reserve", "--help"]);
    let at = |s: &str| help.find(s).unwrap_or_else(|| panic!("{s} not in reserve --help"));
    assert!(
        at("--batch <") < at("--tile <") && at("--tile <") < at("--root <") && at("--strict") < at("--format <"),
        "{help}"
    );
    assert!(help.contains("Output format: table|json") && !help.contains("markdown"), "{help}");
    let plan = stdout(&["plan", "--help"]);
    assert!(plan.contains("Items to run"), "{plan}");
    assert!(!stdout(&["reserve", "--help"]).contains("for `plan`"));
    // Every option of every subcommand has a description.
    for sub in SUBCOMMANDS {
        let help = stdout(&[sub, "--help"]);
        let options = help.split("\nExamples:").next().unwrap();
        let lines: Vec<&str> = options.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if l.trim_start().starts_with("--") && l.starts_with("      --") {
                let next = lines.get(i + 1).map_or("", |n| n.trim());
                assert!(!next.is_empty() && !next.starts_with("--"), "{sub}: `{}` has no description", l.trim());
            }
        }
    }
}
