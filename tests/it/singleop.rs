//! ATC's single-operator descriptions (`--singleop=FILE.json`; fixtures/models/singleop, made
//! by make_singleop.py there): each op described keys as the same op of a model, so ops tuned
//! one by one serve the network and the network's tuning serves the single ops; bad
//! descriptions are refused naming the file, the op and the field, with nothing written.

use std::collections::BTreeMap;
use std::path::Path;

use crate::cli::{assert_refused, model_fixture, text, tunebank, SOC};

/// `convert --json` of a model or single-op file: op name → (IR type, key, result).
fn convert(input: &str, bank: &str, cwd: &Path) -> BTreeMap<String, (String, String, String)> {
    let o = tunebank(&["convert", input, SOC, "--bank", bank, "--json"], cwd);
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["skipped"], serde_json::json!([]), "{report}");
    report["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            (s("op_name"), (s("ir_type"), s("key"), s("result")))
        })
        .collect()
}

/// The small network's ops written as single ops (two convolutions, the depthwise one, a
/// ReLU, the dense layer's MatMulV2 with its bias) key as the network's own ops: tuning the
/// network makes each a hit, and tuning the single ops makes the network's convolutions and
/// MatMul hits.
#[test]
fn single_ops_and_the_network_share_keys_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let ops = format!(
        "--singleop={}",
        model_fixture("singleop/small_net_ops.json")
    );
    let net = format!("--model={}", model_fixture("frameworks/small_net.onnx"));

    let bank = dir.path().join("net.redb");
    let bank = bank.to_str().unwrap();
    let o = tunebank(
        &[
            "tune",
            &net,
            "--job_type=2",
            SOC,
            "--budget",
            "4",
            "--bank",
            bank,
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let single = convert(&ops, bank, dir.path());
    let names: Vec<&str> = single.keys().map(String::as_str).collect();
    assert_eq!(names, ["conv1", "conv3", "dw", "fc", "relu1"]);
    let network = convert(&net, bank, dir.path());
    let net_keys: Vec<&String> = network.values().map(|(_, k, _)| k).collect();
    for (name, (ir, key, result)) in &single {
        assert!(
            net_keys.contains(&key),
            "{name} ({ir}) keys as an op of the network"
        );
        assert_ne!(result, "miss", "{name} ({ir}) hits what the network tuned");
    }

    let bank2 = dir.path().join("single.redb");
    let bank2 = bank2.to_str().unwrap();
    let o = tunebank(
        &[
            "tune",
            &ops,
            "--job_type=2",
            SOC,
            "--budget",
            "4",
            "--bank",
            bank2,
            "--output-dir",
            "single",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let result = std::fs::read_dir(dir.path().join("single"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().contains("aoe_result_opat"))
        .expect("a result file");
    let body = std::fs::read_to_string(&result).unwrap();
    assert!(
        body.contains("small_net_ops"),
        "the result file names the input: {body}"
    );
    let network = convert(&net, bank2, dir.path());
    for (name, (ir, _, result)) in &network {
        let tuned = [
            "conv1_bias",
            "Conv__33",
            "conv3_bias",
            "fc_Gemm__6",
            "relu1",
        ];
        if tuned.contains(&name.as_str()) {
            assert_ne!(
                result, "miss",
                "{name} ({ir}) hits what the single op tuned"
            );
        }
    }
}

/// The attention MatMuls as single ops: q·kᵀ (adj_x2) and a·v are two BatchMatMulV2 keys,
/// the transposed MatMulV2 a third; all distinct.
#[test]
fn batch_matmul_adjoints_key_apart() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("b.redb");
    let ops = convert(
        &format!("--singleop={}", model_fixture("singleop/matmuls.json")),
        bank.to_str().unwrap(),
        dir.path(),
    );
    let types: Vec<&str> = ops.values().map(|(t, _, _)| t.as_str()).collect();
    assert_eq!(types, ["BatchMatMulV2", "MatMulV2", "BatchMatMulV2"]);
    let keys: std::collections::BTreeSet<&String> = ops.values().map(|(_, k, _)| k).collect();
    assert_eq!(keys.len(), 3, "{ops:?}");
}

/// Bad descriptions: exit 2 naming the file, the op (index and type) and the field; no bank
/// written.
#[test]
fn bad_single_op_descriptions_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let good: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(model_fixture("singleop/small_net_ops.json")).unwrap(),
    )
    .unwrap();
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = good.clone();
        f(&mut v);
        v.to_string()
    };
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "not_json.json",
            "[{\"op\": ".into(),
            vec!["not_json.json", "single-operator description", "EOF"],
        ),
        ("empty.json", "[]".into(), vec!["empty.json", "holds no op"]),
        (
            "no_op.json",
            edit(&|v| {
                v[1].as_object_mut().unwrap().remove("op");
            }),
            vec!["no_op.json", "missing field `op`"],
        ),
        (
            "bad_attr.json",
            edit(&|v| v[0]["attr"][0]["value"] = serde_json::json!("wide")),
            vec![
                "bad_attr.json",
                "op 0 (Conv2D)",
                "attr \"strides\"",
                "list_int",
            ],
        ),
        (
            "bad_type.json",
            edit(&|v| v[1]["input_desc"][0]["type"] = serde_json::json!("float8")),
            vec!["op 1 (Relu)", "input_desc[0] type \"float8\""],
        ),
        (
            "dynamic.json",
            edit(&|v| v[3]["input_desc"][0]["shape"] = serde_json::json!([-1, 64, 16, 16])),
            vec![
                "op 3 (Conv2D)",
                "input_desc[0] shape [-1, 64, 16, 16]",
                "static",
            ],
        ),
        (
            "range.json",
            edit(&|v| v[1]["input_desc"][0]["shape_range"] = serde_json::json!([[1, 8]])),
            vec!["op 1 (Relu)", "shape_range"],
        ),
        (
            "nhwc.json",
            edit(&|v| v[0]["input_desc"][0]["format"] = serde_json::json!("NHWC")),
            vec!["op 0 (Conv2D)", "format NHWC", "expected NCHW or ND"],
        ),
        (
            "no_filter.json",
            edit(&|v| {
                v[0]["input_desc"].as_array_mut().unwrap().truncate(1);
            }),
            vec!["op 0 (Conv2D)", "4-D OIHW filter"],
        ),
    ];
    let cases = cases
        .into_iter()
        .map(|(name, body, wants)| {
            let path = dir.path().join(name);
            std::fs::write(&path, body).unwrap();
            (vec![format!("--singleop={}", path.display())], wants)
        })
        .collect();
    assert_refused(dir.path(), cases);
    let both = tunebank(
        &[
            "tune",
            &format!(
                "--singleop={}",
                model_fixture("singleop/small_net_ops.json")
            ),
            &format!("--model={}", model_fixture("frameworks/small_net.onnx")),
            SOC,
        ],
        dir.path(),
    );
    assert_eq!(both.status.code(), Some(2), "{}", text(&both));
    assert!(
        text(&both).contains("expected --singleop or --model, not both"),
        "{}",
        text(&both)
    );
}
