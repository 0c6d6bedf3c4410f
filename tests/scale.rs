//! A 10^5-point data set through ingest → emit → verify, checking results
//! (counts, lines, a green verify), not time: the speed figures live in the
//! README and the benchmarks, measured on a quiet machine.

use crate::common::*;
use std::fmt::Write as _;
use std::fs;

const N: usize = 100_000;

/// 12 line keys; every point lies exactly on its key's line (demand =
/// slope · pixels + base), so the fit is known in advance and no point is
/// over-reserved beyond the bound.
fn synthetic_csv() -> String {
    let mut s =
        String::from("id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,reserved_bytes\n");
    for j in 0..N {
        let k = j % 12;
        let vae = ["sd", "flux1", "flux2"][k % 3];
        let op = ["decode", "encode"][(k / 3) % 2];
        let dtype = ["fp16", "fp32"][k / 6];
        let (w, h) = (64 * (4 + (j * 7) % 61) as u64, 64 * (4 + (j * 13) % 61) as u64);
        let demand = (3000 + 100 * k as u64) * w * h + (100 << 20);
        writeln!(s, "syn-{j:06},synthetic scale test,cudnn,native,linux,{vae},{op},0,{dtype},{w},{h},1,{demand}")
            .unwrap();
    }
    s
}

#[test]
fn a_hundred_thousand_points_through_ingest_emit_and_verify() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    fs::create_dir_all(r.join("fits")).unwrap();
    // The shipped policy without the entries that name shipped points.
    let policy = fs::read_to_string(data_root().join("fits/policy.toml")).unwrap();
    let kept: Vec<&str> =
        policy.split("\n\n").filter(|b| !b.starts_with("[[exclude]]") && !b.starts_with("[[keep]]")).collect();
    fs::write(r.join("fits/policy.toml"), kept.join("\n\n")).unwrap();
    let csv = r.join("synthetic.csv");
    fs::write(&csv, synthetic_csv()).unwrap();

    let out = vramfit().arg("--root").arg(r).args(["--format", "json", "ingest"]).arg(&csv).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let j = json_of(&out);
    assert_eq!((j["points"].as_u64(), j["added"].as_u64()), (Some(N as u64), Some(N as u64)));
    assert_eq!(fs::read_to_string(r.join("measurements/vae.json")).unwrap().lines().count(), N + 2, "one line a point");

    let out = vramfit().arg("--root").arg(r).args(["--format", "json", "emit"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout_of(&out));
    assert_eq!(json_of(&out)["written"], true);

    let fit = json_of(&vramfit().arg("--root").arg(r).args(["--format", "json", "fit"]).output().unwrap());
    let lines = fit["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 12);
    let total: usize = lines.iter().map(|l| l["points"].as_array().unwrap().len()).sum();
    assert_eq!(total, N);
    for l in lines {
        assert_eq!(l["kind"], "fitted");
        let n = l["points"].as_array().unwrap().len();
        assert!(n == N / 12 || n == N / 12 + 1, "{n}");
        // Points on a line: the envelope is that line, and the shipped base is 105 MiB.
        assert_eq!(l["base_mib"], 105, "{}", key_of(l));
    }

    let out = vramfit().arg("--root").arg(r).args(["--format", "json", "verify"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout_of(&out));
    let v = json_of(&out);
    assert_eq!((v["points"].as_u64(), v["lines"].as_u64()), (Some(N as u64), Some(12)));
    // Re-ingesting the same rows adds nothing and writes nothing.
    let before = fs::read(r.join("measurements/vae.json")).unwrap();
    let j = json_of(&vramfit().arg("--root").arg(r).args(["--format", "json", "ingest"]).arg(&csv).output().unwrap());
    assert_eq!((j["added"].as_u64(), j["written"].as_bool()), (Some(0), Some(false)));
    assert_eq!(fs::read(r.join("measurements/vae.json")).unwrap(), before);
}
