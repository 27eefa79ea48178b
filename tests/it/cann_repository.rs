//! CANN's MatMul tiling repository as knowledge, on the command line: `bank import
//! --cann-repository` of the committed subset (200 real records of the Ascend910B2 file), a
//! look-up of a shape the file does not hold answered by its nearest record with the gain the
//! simulator estimates for it, `why` naming that record, and `calibrate --cann-repository`'s
//! leave-one-out.

use std::path::{Path, PathBuf};

use crate::aoe_bank::{inspect, text, tunebank};

const SOC: &str = "Ascend910B2";

fn subset() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/ascend/repository_Ascend910B2_matmul.every16.jsonl.gz")
}

/// `tunebank bank import --cann-repository FILE --bank BANK SOC_OPTION EXTRA…`.
fn import_cmd(file: &Path, bank: &Path, soc: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "bank",
        "import",
        "--cann-repository",
        file.to_str().unwrap(),
        "--bank",
        bank.to_str().unwrap(),
        soc,
    ];
    args.extend_from_slice(extra);
    tunebank(&args)
}

/// Imports the subset into `dir/repo.redb` and returns the bank and its exported records.
fn import(dir: &Path) -> (PathBuf, Vec<serde_json::Value>) {
    let bank = dir.join("repo.redb");
    let o = import_cmd(
        &subset(),
        &bank,
        &format!("--soc_version={SOC}"),
        &["--json"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["lines"], 200, "{report}");
    assert_eq!(report["import"]["accepted"], 200, "{report}");
    assert_eq!(report["rejected"].as_array().unwrap().len(), 0);
    // batch_type 3 (A and B batched) and fused variants are not decoded: those records keep
    // their tiling verbatim; every other tiling maps to the simulator's parameters.
    let untiled = report["import"]["untiled"].as_array().unwrap();
    for u in untiled {
        let why = u["reason"].as_str().unwrap();
        assert!(
            why.starts_with("batch_type 3") || why.starts_with("fused_double_operand_num"),
            "{u}"
        );
    }
    assert_eq!(
        report["import"]["tilings"].as_u64().unwrap() + untiled.len() as u64,
        200
    );
    assert!(
        report["baselines_estimated"].as_u64().unwrap() >= 50,
        "{report}"
    );
    let export = dir.join("repo.jsonl");
    let o = tunebank(&[
        "bank",
        "export",
        "--out",
        export.to_str().unwrap(),
        "--bank",
        bank.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let records = std::fs::read_to_string(&export)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (bank, records)
}

/// The plain fp16 MatMul (no bias, fp16 out) with the largest estimated gain: its key, M, K,
/// N and gain.
fn best_plain_matmul(records: &[serde_json::Value]) -> (String, i64, i64, i64, f64) {
    records
        .iter()
        .filter_map(|l| {
            let r = &l["record"];
            let op = &r["descriptor"]["op"];
            let inputs = op["inputs"].as_array()?;
            let out = &op["outputs"][0];
            let plain = op["op_type"] == "MatMulV2"
                && inputs.len() == 2
                && out["dtype"] == "float16"
                && r["options"]["baseline"].is_string();
            if !plain {
                return None;
            }
            let dims = |t: &serde_json::Value| -> Vec<i64> {
                t["ori_shape"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_i64().unwrap())
                    .collect()
            };
            let (x1, x2) = (dims(&inputs[0]), dims(&inputs[1]));
            let p = &r["performance"];
            let gain = p["baseline_us"].as_f64()? / p["tuned_us"].as_f64()?;
            Some((
                l["key"].as_str().unwrap().to_owned(),
                x1[0],
                x1[1],
                x2[1],
                gain,
            ))
        })
        .max_by(|a, b| a.4.total_cmp(&b.4))
        .expect("a plain MatMul with an estimated baseline")
}

/// A shape one fractal of M away from a repository record (not in the file) is answered by
/// that record's tiling, fitted to the shape, at the distance of M's ratio; strict mode
/// refuses it; `why` names the same record.
#[test]
fn a_shape_beside_a_repository_record_takes_its_tiling() {
    let dir = tempfile::tempdir().unwrap();
    let (bank, records) = import(dir.path());
    let (source, m, k, n, gain) = best_plain_matmul(&records);
    // The margin needs ln(gain) > 0.1 · d; d = ln((M + 16) / M) is small for any M ≥ 16.
    assert!(gain > 1.05, "{gain}");
    let m2 = m + 16;
    let ops = dir.path().join("ops.json");
    std::fs::write(
        &ops,
        format!(
            r#"[{{"node_name": "mm", "op_type": "MatMul",
                "inputs": [{{"shape": [{m2}, {k}], "dtype": "float16"}},
                           {{"shape": [{k}, {n}], "dtype": "float16"}}],
                "outputs": [{{"shape": [{m2}, {n}], "dtype": "float16"}}]}}]"#
        ),
    )
    .unwrap();
    let lookup = |extra: &[&str]| {
        let mut args = vec![
            "lookup",
            "--op",
            ops.to_str().unwrap(),
            "--bank",
            bank.to_str().unwrap(),
            "--json",
        ];
        let soc = format!("--soc_version={SOC}");
        args.push(&soc);
        args.extend_from_slice(extra);
        tunebank(&args)
    };
    let o = lookup(&[]);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let row = &report["ops"][0];
    // The record nearest to M + 16 may be another one with the same K and N and an M closer
    // still; whichever it is, it is a repository record at a distance no larger than M's step.
    if row["result"] == "nearest" {
        let near = row;
        assert!(
            near["distance"].as_f64().unwrap() <= ((m2 as f64) / (m as f64)).ln() + 1e-9,
            "{row}"
        );
        assert!(near["source_speedup"].as_f64().unwrap() > 1.0, "{row}");
        if near["source"] == source.as_str() {
            let d = ((m2 as f64) / (m as f64)).ln();
            assert!(
                (near["distance"].as_f64().unwrap() - d).abs() < 1e-9,
                "{row}"
            );
        }
        // The answer is a strategy of the simulator's space for M + 16: it names the cube
        // tiling's parameters.
        assert!(near["strategy"]["baseM"].is_number(), "{row}");
    } else {
        panic!("M = {m2} beside record M = {m} (gain {gain:.2}) was not served: {row}");
    }
    let o = lookup(&["--strict"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let soc = format!("--soc_version={SOC}");
    let why = inspect(&bank, &["why", "--ops", ops.to_str().unwrap(), &soc]);
    assert!(why.contains("served by the nearest tuned shape"), "{why}");
}

/// The leave-one-out runs on the subset and reports every mapped record; its served answers
/// are never slower than the default on more than a few shapes, which is what the margin is
/// for.
#[test]
fn calibrate_holds_each_repository_record_back() {
    let o = tunebank(&[
        "calibrate",
        "--cann-repository",
        subset().to_str().unwrap(),
        &format!("--soc_version={SOC}"),
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &report["summary"];
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(s["records"].as_u64().unwrap() as usize, rows.len());
    assert!(rows.len() >= 170, "{s}");
    // Each row's nearest is another line, and a served row runs the nearest tiling.
    for r in rows {
        assert_ne!(r["nearest_line"], r["line"], "{r}");
        if r["served"] == false {
            assert_eq!(r["served_us"], r["default_us"], "{r}");
        }
    }
    assert!(s["served"].as_f64().unwrap() > 0.0, "{s}");
    assert!(
        s["answer_slower_than_default"].as_f64().unwrap() <= 0.05,
        "{s}"
    );
}

/// A repository named for another SoC than `--soc_version` is refused naming both, exit 2,
/// and no bank is created; a line that is not a record is named and the rest imported (exit 1).
#[test]
fn bad_repository_input_is_named_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("b.redb");
    let o = import_cmd(&subset(), &bank, "--soc_version=Ascend910B1", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("the file name says SoC Ascend910B2; expected SoC Ascend910B1"),
        "{}",
        text(&o)
    );
    assert!(!bank.exists());
    // One good line of the subset and one cut short.
    let file = std::fs::File::open(subset()).unwrap();
    let mut lines = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(file), &mut lines).unwrap();
    let first = lines.lines().next().unwrap();
    let repo = dir.path().join("repository_Ascend910B2_matmul.json");
    std::fs::write(&repo, format!("{first}\n{}\n", &first[..first.len() / 2])).unwrap();
    let o = import_cmd(&repo, &bank, &format!("--soc_version={SOC}"), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("rejected line 2: not JSON"),
        "{}",
        text(&o)
    );
    assert!(
        text(&o).contains("target: 0 records before, 1 after"),
        "{}",
        text(&o)
    );
}
