//! The public FLUX.2 and Qwen-Image measurements, and the rule for points
//! with no OS on a platform whose lines keep their OS.

use crate::common::*;
use std::fs;
use std::path::Path;

fn reserve_in(root: Option<&Path>, args: &[&str]) -> serde_json::Value {
    let mut c = vramfit();
    // Without a root of its own, the tests' root: the figures stay put when the shipped data grows.
    c.arg("--root").arg(root.map_or_else(data_root, Path::to_path_buf));
    let out = c.args(["--format", "json", "reserve"]).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr_of(&out));
    json_of(&out)
}

/// The fixture: a MIOpen line measured on Linux, and one of the same
/// platform whose OS was not published. The OS-less line is higher at small
/// sizes and lower at large ones, so both branches of the rule are seen.
#[test]
fn points_with_no_os_on_an_os_specific_platform_price_every_os_as_a_lower_bound() {
    let root = scratch();
    let r = root.path();
    // The rule under test is the OS-less line's; its fixture points at 2048²
    // lie below MIOpen's attention phase, so the phase is left out of this root.
    let policy = r.join("fits/policy.toml");
    let text = std::fs::read_to_string(&policy).unwrap();
    let (start, end) =
        (text.find("# --- Attention on the math kernel").unwrap(), text.find("# --- Points left out").unwrap());
    std::fs::write(&policy, format!("{}{}", &text[..start], &text[end..])).unwrap();
    // ingest: accepted, and it says what the OS-less rows become.
    let out = vramfit().arg("--root").arg(r).arg("ingest").arg(fixture("unknown_os/miopen.csv")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(
        text.contains("3 row(s) of sd/decode/0/miopen/native/any/fp16 give no OS") && text.contains("lower bound"),
        "{text}"
    );
    // emit: two lines, one per OS situation; no findings.
    let out = vramfit().arg("--root").arg(r).args(["--format", "json", "emit"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout_of(&out));
    let added: Vec<String> = json_of(&out)["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["change"] == "added")
        .map(|c| c["key"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(added, ["sd/decode/0/miopen/native/any/fp16", "sd/decode/0/miopen/native/linux/fp16"]);
    // verify: green, the query path included.
    let out = vramfit().arg("--root").arg(r).arg("verify").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout_of(&out));
    // reserve: Linux takes the higher of its own line and the OS-less one.
    let q = |size: &str, os: &str| {
        reserve_in(
            Some(r),
            &["sdxl", "decode", size, "--dtype", "fp16", "--backend", "miopen", "--allocator", "native", "--os", os],
        )
    };
    let small = q("512x512", "linux");
    assert_eq!(small["rule"], "any-os-line");
    assert_eq!(small["priced_by"]["os"], "any");
    assert!(small["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("without a published OS")));
    assert!(small["bytes"].as_u64().unwrap() >= 2000 << 20, "covers the OS-less 512² point");
    let large = q("2048x2048", "linux");
    assert_eq!(large["rule"], "fitted-line");
    assert_eq!(large["priced_by"]["os"], "linux");
    assert!(large["bytes"].as_u64().unwrap() >= 19000 << 20);
    // Windows has no line of its own: the OS-less line prices it at every size.
    for size in ["512x512", "1024x1024", "2048x2048"] {
        let w = q(size, "windows");
        assert_eq!(w["rule"], "any-os-line", "{size}");
        assert_eq!(w["bytes"], q(size, "any")["bytes"], "{size}: the OS-less line itself");
    }
    // Asked as `any`, the OS-less line is the key's own line.
    assert_eq!(q("1024x1024", "any")["rule"], "fitted-line");
    // A measured line, so --strict accepts it.
    let out = vramfit()
        .arg("--root")
        .arg(r)
        .args(["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--backend", "miopen"])
        .args(["--allocator", "native", "--os", "windows", "--strict"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // The stdlib Python reader prices the same from the file alone.
    let queries: Vec<serde_json::Value> = ["linux", "windows"]
        .iter()
        .flat_map(|os| {
            [512u64, 1024, 2048, 1536].map(|s| {
                serde_json::json!({"vae": "sdxl", "op": "decode", "tile": 0, "width": s, "height": s, "batch": 1,
                    "dtype": "fp16", "loaded_dtype": "fp16", "conv_backend": "miopen", "allocator": "native", "os": os})
            })
        })
        .collect();
    let mut child = crate::common::python()
        .arg(repo().join("tests/python/vramfit_reader.py"))
        .arg(r.join("fits/vae.json"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(serde_json::to_string(&queries).unwrap().as_bytes()).unwrap();
    let py: Vec<serde_json::Value> = serde_json::from_slice(&child.wait_with_output().unwrap().stdout).unwrap();
    assert_eq!(py.len(), queries.len());
    for (qq, p) in queries.iter().zip(&py) {
        let size = format!("{}x{}", qq["width"], qq["height"]);
        let rust = q(&size, qq["os"].as_str().unwrap());
        assert_eq!((&rust["bytes"], &rust["rule"]), (&p["bytes"], &p["rule"]), "{qq}");
    }
}

#[test]
fn the_shipped_flux2_miopen_lines_follow_the_rule() {
    let args = |op: &str, os: &str| -> Vec<String> {
        ["flux2", op, "1024x1024", "--dtype", "bf16", "--backend", "miopen", "--allocator", "native", "--os", os]
            .map(String::from)
            .to_vec()
    };
    let get = |op: &str, os: &str| {
        let a = args(op, os);
        reserve_in(None, &a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    // Decode: the W7900 Linux line is the higher one on Linux.
    assert_eq!(get("decode", "linux")["rule"], "fitted-line");
    assert_eq!(get("decode", "linux")["priced_by"]["os"], "linux");
    // Windows and every encode: only the RX 9070 XT figures, OS unknown.
    assert_eq!(get("decode", "windows")["rule"], "any-os-line");
    assert_eq!(get("encode", "linux")["rule"], "any-os-line");
    // Covered: at least the published 1024² figures (W7900 6863.872, RX 9070 XT 6735.872 MiB).
    assert!(get("decode", "linux")["mib"].as_u64().unwrap() >= 6864);
    assert!(get("decode", "windows")["mib"].as_u64().unwrap() >= 6736);
}

#[test]
fn qwen_image_and_flux2_on_cuda_are_priced_by_fitted_lines() {
    // The published Qwen-Image 1024² decode is 5380.096 MiB; v1 answered 4400.
    let q = reserve_in(None, &["qwen-image", "decode", "1024x1024", "--dtype", "fp16"]);
    assert_eq!(q["rule"], "fitted-line");
    assert!(q["mib"].as_u64().unwrap() >= 5381, "{}", q["mib"]);
    // The fixture root declares no first use: the default answer says a
    // fresh process may need more; a warm host's answer has nothing to add.
    let said: Vec<&str> = q["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    assert!(said.len() == 1 && said[0].starts_with("no first use is declared for cudnn/native/"), "{said:?}");
    let warm = reserve_in(None, &["qwen-image", "decode", "1024x1024", "--dtype", "fp16", "--warm"]);
    assert!(warm["warnings"].as_array().unwrap().is_empty(), "{}", warm["warnings"]);
    assert_eq!(warm["bytes"], q["bytes"], "no term declared: nothing to leave out");
    let f = reserve_in(None, &["flux2-dev", "decode", "1024x1024", "--dtype", "bf16"]);
    assert_eq!(f["rule"], "fitted-line");
    assert!(f["mib"].as_u64().unwrap() >= 4331, "covers both published 1024² figures");
    let e = reserve_in(None, &["flux2", "encode", "1328x1328", "--dtype", "bf16"]);
    assert_eq!(e["rule"], "fitted-line");
    assert!(e["mib"].as_u64().unwrap() >= 3022);
}

#[test]
fn a_family_with_no_line_at_all_says_so_and_strict_refuses_it() {
    for family in ["sd3", "cogview4"] {
        let r = reserve_in(None, &[family, "decode", "1024x1024", "--dtype", "bf16"]);
        assert_eq!(r["rule"], "legacy-floor");
        let w: Vec<&str> = r["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
        assert!(
            w.iter().any(|w| w.contains(&format!("nothing has been measured for the {family} VAE"))
                && w.contains("not a measurement")),
            "{w:?}"
        );
        let text = stdout_of(
            &on_data_root().args(["reserve", family, "decode", "1024x1024", "--dtype", "bf16"]).output().unwrap(),
        );
        assert!(text.contains("warning: nothing has been measured"), "{text}");
        let plan = vramfit()
            .args(["plan", family, "decode", "1024x1024", "--dtype", "bf16", "--free", "24GiB"])
            .output()
            .unwrap();
        assert!(stdout_of(&plan).contains("warning: nothing has been measured"), "{}", stdout_of(&plan));
        for cmd in [
            vec!["reserve", family, "decode", "1024x1024", "--dtype", "bf16", "--strict"],
            vec!["plan", family, "decode", "1024x1024", "--dtype", "bf16", "--free", "24GiB", "--strict"],
        ] {
            assert_eq!(on_data_root().args(&cmd).output().unwrap().status.code(), Some(1), "{cmd:?}");
        }
    }
}

#[test]
fn the_kept_disagreements_name_real_points() {
    let root = scratch();
    let policy = root.path().join("fits/policy.toml");
    let text = fs::read_to_string(&policy).unwrap();
    assert!(text.contains("[[keep]]"));
    fs::write(&policy, text.replace("id = \"flux2test-decode-bf16-512\"", "id = \"flux2test-decode-bf16-511\""))
        .unwrap();
    let out = vramfit().arg("--root").arg(root.path()).args(["--format", "json", "verify"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let j = json_of(&out);
    assert!(
        j["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "unknown-id" && f["message"].as_str().unwrap().contains("[[keep]]")),
        "{}",
        j["findings"]
    );
    // A point both kept and excluded is a contradiction: refused.
    fs::write(
        &policy,
        format!("{text}\n[[exclude]]\nid = \"flux2test-decode-bf16-512\"\nreason = \"contradiction\"\n"),
    )
    .unwrap();
    let out = vramfit().arg("--root").arg(root.path()).arg("fit").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("both kept and excluded"), "{}", stderr_of(&out));
}
