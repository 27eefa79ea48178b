//! SGAT then OPAT then convert on the command line: `tunebank convert` and `tune --job_type=2`
//! applying the graph bank first, and `bank-inspect why --job_type=1` explaining a subgraph
//! miss. The post-SGAT planning under them is `src/tests/sgat_convert.rs`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::sgat_fixture::{graph_bank, graph_record, model_path, plans, SHAPE, SOC};
use serde_json::{json, Value};
use tunebank::bank::Descriptor;
use tunebank::inspect::{why_subgraphs, GraphDiffKind, GraphVerdict, WhyConfig};
use tunebank::key::AttrValue;

const BIN: &str = env!("CARGO_BIN_EXE_tunebank");
const INSPECT: &str = env!("CARGO_BIN_EXE_bank-inspect");

fn cmd(bin: &str, home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.args(args)
        .env("HOME", home)
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env_remove("TUNEBANK_BUILTIN_PATH")
        .env_remove("AOE_MODE")
        .env_remove("REPEAT_TUNE")
        .env("TUNING_PARALLEL_NUM", "2")
        .stdin(Stdio::null());
    c
}

fn run_ok(c: &mut Command) -> Output {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn convert_with_a_graph_bank_reports_graph_hits_and_the_units_they_became() {
    let (plan, sp) = plans();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("g.redb");
    drop(graph_bank(
        &file,
        &[graph_record(&sp, 0, json!({"scopeId": [3, 3]}))],
    ));
    let m = format!("--model={}", model_path());
    let s = format!("--soc_version={SOC}");
    let g = file.to_str().unwrap();
    let base = ["convert", "--json", m.as_str(), s.as_str(), SHAPE];
    let with: Vec<&str> = base.iter().copied().chain(["--graph-bank", g]).collect();
    let v = json_of(&run_ok(&mut cmd(BIN, dir.path(), &with)));
    assert_eq!(v["graph_bank"], g);
    assert_eq!(v["graph_hits"], 1);
    assert_eq!(v["subgraphs"].as_array().unwrap().len(), sp.subgraphs.len());
    let first = &v["subgraphs"][0];
    assert_eq!(
        (
            &first["result"],
            &first["units_before"],
            &first["units_after"]
        ),
        (&json!("hit"), &json!(2), &json!(1))
    );
    assert_eq!(v["subgraphs"][1]["result"], "miss");
    assert_eq!(v["total"], plan.units.len() as u64 - 1);
    assert!(v["ops"][0]["ir_type"]
        .as_str()
        .unwrap()
        .ends_with("+MaxPoolV3"));
    // The text says so too.
    let text_args: Vec<&str> = with.iter().copied().filter(|a| *a != "--json").collect();
    let text = String::from_utf8(run_ok(&mut cmd(BIN, dir.path(), &text_args)).stdout).unwrap();
    assert!(text.contains("graph hit (custom)") && text.contains("2 → 1 units"));
    assert!(text.contains(&format!("1/{} subgraphs hit", sp.subgraphs.len())));
    // No graph bank anywhere: the fused units as before.
    let v = json_of(&run_ok(&mut cmd(BIN, dir.path(), &base)));
    assert_eq!(v["graph_bank"], Value::Null);
    assert_eq!(v["total"], plan.units.len() as u64);
}

/// ResNet-50 at batch 32: SGAT writes the graph bank, OPAT tunes the post-SGAT ops, convert
/// applies the graph bank and finds every op; those ops are not the unfused plan's, whose
/// merged-away ops the op bank does not hold.
#[test]
fn sgat_then_opat_then_convert_hits_every_post_sgat_op() {
    let (plan, _) = plans();
    let tmp = tempfile::tempdir().unwrap();
    let banks = tmp.path().join("banks");
    std::fs::create_dir_all(&banks).unwrap();
    let m = format!("--model={}", model_path());
    let s = format!("--soc_version={SOC}");
    let out = tmp.path().join("out");
    let o = out.to_str().unwrap();
    for job in ["--job_type=1", "--job_type=2"] {
        let args = [
            "tune",
            job,
            "--budget",
            "8",
            "--output-dir",
            o,
            &m,
            &s,
            SHAPE,
        ];
        run_ok(cmd(BIN, tmp.path(), &args).env("TUNE_BANK_PATH", &banks));
    }
    let args = ["convert", "--json", m.as_str(), s.as_str(), SHAPE];
    let v = json_of(&run_ok(
        cmd(BIN, tmp.path(), &args).env("TUNE_BANK_PATH", &banks),
    ));
    assert_eq!(
        v["hits"], v["total"],
        "every post-SGAT op is in the op bank"
    );
    assert_eq!(v["graph_hits"], v["subgraphs"].as_array().unwrap().len());
    let converted: BTreeSet<String> = v["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["key"].as_str().unwrap().to_owned())
        .collect();
    let unfused: BTreeSet<String> = plan
        .units
        .iter()
        .map(|u| u.resolved.key.to_string())
        .collect();
    assert_ne!(converted, unfused, "SGAT changed the ops");
    assert!(converted.difference(&unfused).count() > 0);
    // The same op bank without the graph bank: the unfused ops SGAT merged away miss.
    let op_bank = banks.join(SOC).join("tunebank_op.redb");
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let mut args = args.to_vec();
    args.extend(["--bank", op_bank.to_str().unwrap()]);
    let v = json_of(&run_ok(
        cmd(BIN, tmp.path(), &args).env("TUNE_BANK_PATH", &empty),
    ));
    assert_eq!(v["graph_bank"], Value::Null);
    assert!(v["misses"].as_u64().unwrap() > 0);
}

/// A stored subgraph that differs from the model's in one node's attribute: `why` names that
/// node, its op type and the field; under another precision mode, the option.
#[test]
fn why_names_the_differing_node_or_option_of_a_subgraph_miss() {
    let (_, sp) = plans();
    let dir = tempfile::tempdir().unwrap();
    let mut r = graph_record(&sp, 1, json!({}));
    let Descriptor::Graph(g) = &mut r.descriptor else {
        unreachable!()
    };
    g.nodes[2]
        .attrs
        .insert("dilations".into(), AttrValue::Ints(vec![1, 1, 2, 2]));
    let file = dir.path().join("g.redb");
    let bank = graph_bank(&file, &[r]);
    let report = why_subgraphs(&bank, &sp.subgraphs, &WhyConfig::default()).unwrap();
    let d = report
        .subgraphs
        .iter()
        .find(|d| d.key == sp.subgraphs[1].key)
        .unwrap();
    let GraphVerdict::Miss { cause, nearest, .. } = &d.verdict else {
        panic!("expected a miss")
    };
    assert_eq!(cause, "node 2 (Conv2D) differs");
    let diffs = &nearest[0].differences;
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    assert_eq!(
        (diffs[0].kind, diffs[0].node, diffs[0].field.as_str()),
        (GraphDiffKind::Node, Some(2), "attr dilations")
    );
    drop(bank);
    // On the command line, under another precision mode: the option.
    let m = format!("--model={}", model_path());
    let s = format!("--soc_version={SOC}");
    let args = [
        "why",
        "--bank",
        file.to_str().unwrap(),
        &m,
        &s,
        SHAPE,
        "--precision_mode=force_fp32",
        "--job_type=1",
    ];
    let text = String::from_utf8(run_ok(&mut cmd(INSPECT, dir.path(), &args)).stdout).unwrap();
    assert!(text.contains("miss: precision_mode differs"), "{text}");
    assert!(
        text.contains("option precision_mode: stored force_fp16, this conversion force_fp32"),
        "{text}"
    );
}

/// A graph bank written under key schema 2 (every node attribute hashed, a Conv's defaults
/// absent) misses under schema 3; `tunebank bank migrate` re-keys it, and `convert` hits every
/// subgraph again.
#[test]
fn a_schema_2_graph_bank_misses_until_bank_migrate_rekeys_it() {
    let (_, sp) = plans();
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.redb");
    let n = 4.min(sp.subgraphs.len());
    let records: Vec<_> = (0..n)
        .map(|i| {
            let mut r = graph_record(&sp, i, json!({"scopeId": [i, i]}));
            r.key_schema_version = 2;
            let Descriptor::Graph(g) = &mut r.descriptor else {
                unreachable!()
            };
            for node in g.nodes.iter_mut().filter(|n| n.op_type == "Conv2D") {
                node.attrs.remove("dilations");
                node.attrs.remove("groups");
                node.attrs
                    .insert("data_format".into(), AttrValue::Str("NCHW".into()));
            }
            r
        })
        .collect();
    // A schema-2 export file: each record under its schema-2 key, which hashes the schema
    // number and so is no key of schema 3 (stood in for by other keys: the schema-2 encoder is
    // gone). `bank merge` writes it into a bank as it is.
    let export: String = records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let k = blake3::hash(format!("schema 2 subgraph {i}").as_bytes());
            let line = json!({"key": k.to_hex().as_str(), "record": r});
            format!("{line}\n")
        })
        .collect();
    let file = dir.path().join("old.jsonl");
    std::fs::write(&file, export).unwrap();
    let o = old.to_str().unwrap();
    let merge = ["bank", "merge", file.to_str().unwrap(), "--bank", o];
    run_ok(&mut cmd(BIN, dir.path(), &merge));
    let m = format!("--model={}", model_path());
    let s = format!("--soc_version={SOC}");
    let convert = |bank: &Path| {
        let g = bank.to_str().unwrap();
        let args = ["convert", "--json", &m, &s, SHAPE, "--graph-bank", g];
        json_of(&run_ok(&mut cmd(BIN, dir.path(), &args)))
    };
    assert_eq!(convert(&old)["graph_hits"], 0);

    let new = dir.path().join("new.redb");
    let args = [
        "bank",
        "migrate",
        old.to_str().unwrap(),
        "--bank",
        new.to_str().unwrap(),
        "--json",
    ];
    let report = json_of(&run_ok(&mut cmd(BIN, dir.path(), &args)));
    assert_eq!(report["migrated"], n);
    assert_eq!(report["refused"], json!([]));
    let v = convert(&new);
    assert_eq!(v["graph_hits"], n);
    for i in 0..n {
        assert_eq!(v["subgraphs"][i]["result"], "hit", "subgraph {i}");
    }

    // Op and subgraph records never share a bank: sources of both kinds are refused, and
    // nothing is written.
    let op = crate::common::op_record(SOC, "MatMul", 1, 0, 1);
    let key = tunebank::bank::descriptor_key(&op.descriptor).unwrap();
    let ops = dir.path().join("ops.jsonl");
    let line = json!({"key": key.to_string(), "record": op});
    std::fs::write(&ops, format!("{line}\n")).unwrap();
    let mixed = dir.path().join("mixed.redb");
    let out = cmd(BIN, dir.path(), &["bank", "merge", ops.to_str().unwrap()])
        .arg(&file)
        .arg("--bank")
        .arg(&mixed)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the sources mix record kinds"), "{err}");
    assert!(
        err.contains("old.jsonl") && err.contains("ops.jsonl"),
        "{err}"
    );
    assert!(!mixed.exists());
}
