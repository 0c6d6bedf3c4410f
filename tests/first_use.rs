//! Demand in its context (docs/fit.md, "Demand per context"): lines are
//! fitted on the op's own demand (a fresh point's demand less its
//! platform's first use), answers add the first use once unless `--warm`,
//! and `verify` and `crossval` price each point in its own context.

use crate::common::*;
use crate::python_package::python_answers;
use serde_json::{json, Value};
use std::path::Path;
use vramfit::pricing::platform::EnvSnapshot;
use vramfit::pricing::{Coefficients, Price, Pricer, Query};
use vramfit::units::thousands;

const MIB: u64 = 1 << 20;
/// The fixture's first use, MiB: above 5% of every fresh point's own
/// demand, so the margin alone covers none of them.
const TERM: u64 = 500;

/// The op's own demand on the fixture's platform: exactly linear, so a
/// refit from any two sizes predicts it and every figure here is exact.
fn reserved(side: u64) -> u64 {
    4096 * side * side + 100 * MIB
}

/// Fresh points (driver = reserved + the term) at three sizes and warm
/// points (reserved only) at two, one SD fp16 decode line on
/// cudnn/native/linux. `fresh_as_warm`: the fresh rows written as warm
/// rows without their driver delta; `declare`: whether the policy
/// declares the first use.
fn root(fresh_as_warm: bool, declare: bool) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("fits")).unwrap();
    let mut policy = String::from("[vae.sd]\nmodels = [\"sdxl\"]\n");
    if declare {
        policy.push_str(&format!(
            "\n[[first_use]]\nconv_backend = \"cudnn\"\nallocator = \"native\"\nos = \"linux\"\nmib = {TERM}\n\
             source = \"a test: driver − reserved of the fresh rows\"\n"
        ));
    }
    std::fs::write(root.path().join("fits/policy.toml"), policy).unwrap();
    let mut csv = String::from(
        "id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,batch,context,reserved_bytes,\
         allocated_bytes,driver_bytes\n",
    );
    for side in [512u64, 1024, 1536] {
        let r = reserved(side);
        let row = if fresh_as_warm {
            format!("warm,{r},{},", r / 2)
        } else {
            format!("fresh,{r},{},{}", r / 2, r + TERM * MIB)
        };
        csv.push_str(&format!("f{side},t,cudnn,native,linux,sd,decode,0,fp16,{side},{side},1,{row}\n"));
    }
    for side in [768u64, 2048] {
        let r = reserved(side);
        csv.push_str(&format!("w{side},t,cudnn,native,linux,sd,decode,0,fp16,{side},{side},1,warm,{r},{},\n", r / 2));
    }
    std::fs::write(root.path().join("p.csv"), csv).unwrap();
    vramfit().arg("--root").arg(root.path()).arg("ingest").arg(root.path().join("p.csv")).assert().code(0);
    // Fresh points with no first use declared are a finding: written anyway
    // here, to show what the lines then carry.
    let force = !declare && !fresh_as_warm;
    let code = if force { 1 } else { 0 };
    vramfit().arg("--root").arg(root.path()).arg("emit").args(force.then_some("--force")).assert().code(code);
    root
}

fn shipped(root: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(root.join("fits/vae.json")).unwrap()).unwrap()
}

/// The one line's slope and base.
fn line_of(root: &Path) -> (Value, Value) {
    let file = shipped(root);
    let line = &file["lines"][0];
    (line["slope"].clone(), line["base_mib"].clone())
}

fn reserve(root: &Path, args: &[&str]) -> Value {
    let out = vramfit().arg("--root").arg(root).args(["--format", "json", "reserve"]).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr_of(&out));
    json_of(&out)
}

#[test]
fn lines_fit_the_ops_own_demand_and_the_answer_adds_the_first_use_once() {
    let root = root(false, true);
    vramfit().arg("--root").arg(root.path()).arg("verify").assert().code(0);
    // The fresh rows fit exactly as their reserved deltas taken warm would:
    // the term is out of the line.
    let as_warm = self::root(true, false);
    assert_eq!(line_of(root.path()), line_of(as_warm.path()));
    assert_eq!(line_of(root.path()), (json!("4300.80"), json!(105)), "4096 B/px and 100 MiB, with the 5% margin");
    // Undeclared, the term rides in the line: every warm host pays it, and
    // verify says which platform's fresh points prove what to declare.
    let undeclared = self::root(false, false);
    let base = line_of(undeclared.path()).1.as_u64().unwrap();
    assert!(base >= 105 + TERM, "the line without the term declared: base {base} MiB");
    let out = vramfit().arg("--root").arg(undeclared.path()).args(["--format", "json", "verify"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let findings = json_of(&out)["findings"].as_array().unwrap().clone();
    let said: Vec<&Value> = findings.iter().filter(|f| f["code"] == "first-use").collect();
    assert_eq!(said.len(), 1, "{findings:?}");
    assert!(
        said[0]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("3 fresh point(s) on cudnn native linux prove a first use of {TERM} MiB")),
        "{}",
        said[0]
    );
    assert_eq!(said[0]["points"], json!(["f1024", "f1536", "f512"]));

    for (size, extra) in
        [("1024x1024", &[][..]), ("2048x2048", &["--batch", "2"][..]), ("768x768", &["--batch", "3"][..])]
    {
        let mut args = vec!["sdxl", "decode", size, "--dtype", "fp16", "--os", "linux", "--allocator", "native"];
        args.extend(extra);
        let fresh = reserve(root.path(), &args);
        let warm = reserve(root.path(), &[args.as_slice(), &["--warm"]].concat());
        // Exactly the declared term, once (a batch of two pays it once).
        assert_eq!(fresh["bytes"].as_u64().unwrap() - warm["bytes"].as_u64().unwrap(), TERM * MIB, "{args:?}");
        assert_eq!(fresh["op_bytes"], warm["bytes"], "{args:?}");
        assert_eq!(warm["op_bytes"], warm["bytes"]);
        assert_eq!(fresh["first_use"]["mib"], TERM);
        assert_eq!(fresh["first_use"]["included"], true);
        assert_eq!(warm["first_use"]["included"], false);
        assert_eq!(fresh["first_use"]["matched"], "own");
        assert_eq!(fresh["first_use"]["declared_for"], "cudnn/native/linux");
    }
    // Another OS borrows the term, and says so; another backend has none.
    let windows = reserve(root.path(), &["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "windows"]);
    assert_eq!(windows["first_use"]["matched"], "other-os");
    assert!(windows["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("measured on cudnn/native/linux is added")));
    let rocm =
        reserve(root.path(), &["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "linux", "--backend", "rocm"]);
    assert!(rocm["first_use"].is_null());
    assert_eq!(rocm["bytes"], rocm["op_bytes"]);
    // The table shows both parts.
    let out = vramfit()
        .arg("--root")
        .arg(root.path())
        .args(["reserve", "sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "linux"])
        .output()
        .unwrap();
    let table = stdout_of(&out);
    assert!(table.contains(&format!("first use     + {TERM} MiB (cudnn/native/linux")), "{table}");
    assert!(
        table.contains(&format!(
            "op price      {}",
            thousands(
                reserve(root.path(), &["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "linux", "--warm"])
                    ["bytes"]
                    .as_u64()
                    .unwrap()
            )
        )),
        "{table}"
    );

    // Each point is covered in its own context, and the warm answer alone
    // would not cover a fresh point (the term is what covers it).
    for side in [512u64, 1024, 1536] {
        let s = format!("{side}x{side}");
        let args = ["sdxl", "decode", s.as_str(), "--dtype", "fp16", "--os", "linux", "--allocator", "native"];
        let driver = reserved(side) + TERM * MIB;
        assert!(reserve(root.path(), &args)["bytes"].as_u64().unwrap() >= driver);
        assert!(reserve(root.path(), &[&args[..], &["--warm"]].concat())["bytes"].as_u64().unwrap() < driver);
    }

    // Python answers alike, both ways, and the plan's peak moves by the term.
    let path = root.path().join("fits/vae.json").display().to_string();
    let queries: Vec<Value> = [false, true]
        .iter()
        .map(|warm| {
            json!({"model": "sdxl", "op": "decode", "width": 1024, "height": 1024, "coefficients": path, "env": {},
                   "kw": {"dtype": "fp16", "os": "windows", "allocator": "native", "warm": warm}})
        })
        .collect();
    let answers = python_answers(&Value::Array(queries));
    for (warm, a) in [false, true].iter().zip(&answers) {
        let mut args =
            vec!["sdxl", "decode", "1024x1024", "--dtype", "fp16", "--os", "windows", "--allocator", "native"];
        args.extend(["--coefficients", path.as_str()]);
        if *warm {
            args.push("--warm");
        }
        assert_eq!(&a["ok"], &reserve(root.path(), &args), "warm={warm}");
    }
    let peak = |warm: bool| {
        let mut c = vramfit();
        c.arg("--root").arg(root.path()).args(["--format", "json", "plan", "sdxl", "decode", "1024x1024"]);
        c.args(["--dtype", "fp16", "--os", "linux", "--free", "24GiB"]);
        if warm {
            c.arg("--warm");
        }
        json_of(&c.output().unwrap())["peak_bytes"].as_u64().unwrap()
    };
    assert_eq!(peak(false) - peak(true), TERM * MIB);
}

/// A pricer that answers every query as a warm host: it forgets the
/// context of the points it prices.
struct AlwaysWarm(Coefficients);
impl Pricer for AlwaysWarm {
    fn price(&self, q: &Query, env: &EnvSnapshot) -> vramfit::error::Result<Price> {
        self.0.price(&Query { warm: true, ..q.clone() }, env)
    }
}

#[test]
fn verify_and_crossval_price_each_point_in_its_own_context() {
    let root = root(false, true);
    let real = vramfit::verify::audit(root.path()).unwrap();
    assert!(real.ok, "{:?}", real.findings);
    // A pricer that leaves the first use out of a fresh point's answer
    // leaves the fresh points uncovered, and verify names them all.
    let broken = vramfit::verify::audit_with(root.path(), &|c| Box::new(AlwaysWarm(c))).unwrap();
    let mut uncovered: Vec<String> = broken
        .findings
        .iter()
        .filter(|f| f.code == vramfit::findings::Code::Coverage)
        .flat_map(|f| f.points.clone())
        .collect();
    uncovered.sort();
    assert_eq!(uncovered, ["f1024", "f1536", "f512"], "{:?}", broken.findings);
    assert!(broken
        .findings
        .iter()
        .all(|f| f.code != vramfit::findings::Code::Coverage || !f.message.contains("point w")));

    // Leave one size out: each refit is the own-demand line itself, so a
    // held-out fresh point is covered only with its first use added.
    let out = vramfit().arg("--root").arg(root.path()).args(["--format", "json", "crossval"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout_of(&out));
    let report = json_of(&out);
    let held: Vec<&Value> =
        report["lines"].as_array().unwrap().iter().flat_map(|l| l["points"].as_array().unwrap()).collect();
    assert_eq!(held.len(), 5);
    for p in held {
        let id = p["id"].as_str().unwrap();
        assert_eq!(p["covered"], true, "{p}");
        let side: u64 = id[1..].parse().unwrap();
        if id.starts_with('f') {
            // The refit's own price is below the fresh point's whole demand:
            // the first use added is what covers it.
            let own = p["reserve_bytes"].as_u64().unwrap() - TERM * MIB;
            assert!(own < reserved(side) + TERM * MIB && own >= reserved(side), "{p}");
        }
    }
}
