//! AOE built-in banks on the command line: an ONNX MatMul or Gemm of one of the sample's shapes
//! (`fixtures/ascend/Ascend910B1_matmul_unified_bank.sample.json`, eight real records) hits it
//! through `lookup` and `convert`, import → export gives the file back byte for byte, and
//! `calibrate --aoe` reports every record. The import itself is `src/tests/aoe_bank.rs`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use prost::Message;

use crate::common;
use tunebank::bank::interchange::aoe::{import_aoe, parse_unified_bank};
use tunebank::bank::{Bank, LayerId, Origin};
use tunebank::key::{RecordKind, SocSpec};

pub(super) const SOC: &str = "Ascend910B1";

pub(super) fn sample_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/ascend/Ascend910B1_matmul_unified_bank.sample.json")
}

pub(super) fn tunebank(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tunebank"))
        .args(args)
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .output()
        .unwrap()
}

pub(super) fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `bank-inspect ARGS --bank BANK`, which must succeed: its standard output.
pub(super) fn inspect(bank: &Path, args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_bank-inspect"))
        .args(args)
        .args(["--bank", bank.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// Imports the sample with the command line into `dir/imported.redb` as a built-in bank.
fn import(dir: &Path) -> PathBuf {
    let bank = dir.join("imported.redb");
    let o = tunebank(&[
        "bank",
        "import",
        "--aoe",
        sample_path().to_str().unwrap(),
        "--as-builtin",
        "--bank",
        bank.to_str().unwrap(),
        &format!("--soc_version={SOC}"),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("8 mapped to descriptors, 0 placeholders; 8 tilings mapped, 0 not"),
        "{}",
        text(&o)
    );
    bank
}

/// Op templates as a converter makes them from ONNX: a MatMul of record 141843de's shape
/// (A_shape [1, 1, 3200, 16, 16], B_shape [16, 2, 1, 1, 16]: [51200, 16] · [16, 32], no bias),
/// a Gemm of record 0b66fa57's ([2000, 8560] · [8560, 1024] + bias [1024], fp16), and two that
/// must miss: the MatMul transposed, and with another N.
pub(super) const OPS: &str = r#"[
  {"node_name": "mm", "op_type": "MatMul",
   "inputs": [{"shape": [51200, 16], "dtype": "float16"}, {"shape": [16, 32], "dtype": "float16"}],
   "outputs": [{"shape": [51200, 32], "dtype": "float16"}]},
  {"node_name": "fc", "op_type": "Gemm",
   "inputs": [{"shape": [2000, 8560], "dtype": "float16"}, {"shape": [8560, 1024], "dtype": "float16"},
              {"shape": [1024], "dtype": "float16"}],
   "outputs": [{"shape": [2000, 1024], "dtype": "float16"}],
   "attrs": {"alpha": {"float": 1.0}, "beta": {"float": 1.0}, "transA": {"int": 0}, "transB": {"int": 0}}},
  {"node_name": "mm_t", "op_type": "Gemm",
   "inputs": [{"shape": [51200, 16], "dtype": "float16"}, {"shape": [32, 16], "dtype": "float16"}],
   "outputs": [{"shape": [51200, 32], "dtype": "float16"}],
   "attrs": {"transB": {"int": 1}}},
  {"node_name": "mm_n", "op_type": "MatMul",
   "inputs": [{"shape": [51200, 16], "dtype": "float16"}, {"shape": [16, 48], "dtype": "float16"}],
   "outputs": [{"shape": [51200, 48], "dtype": "float16"}]}
]"#;

#[test]
fn onnx_templates_of_a_record_shape_hit_it_through_lookup() {
    let dir = tempfile::tempdir().unwrap();
    let imported = import(dir.path());
    let ops = dir.path().join("ops.json");
    std::fs::write(&ops, OPS).unwrap();
    let custom = dir.path().join("custom.redb");
    let o = tunebank(&[
        "lookup",
        "--op",
        ops.to_str().unwrap(),
        "--builtin-bank",
        imported.to_str().unwrap(),
        "--bank",
        custom.to_str().unwrap(),
        &format!("--soc_version={SOC}"),
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let result: Vec<(&str, &str)> = report["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["node"].as_str().unwrap(), r["result"].as_str().unwrap()))
        .collect();
    assert_eq!(
        result,
        [
            ("mm", "hit"),
            ("fc", "hit"),
            ("mm_t", "miss"),
            ("mm_n", "miss")
        ]
    );
    // mm_n (N = 48) was not imported. Its nearest imported neighbour is mm's record, but an
    // imported record knows one time and no baseline: its win is unknown, so it never serves
    // another shape (`no_gain`, naming it).
    let why = &report["ops"][3]["not_served"];
    assert_eq!(why["reason"], "no_gain", "{report}");
    assert_eq!(why["source"], report["ops"][0]["key"], "{report}");
    assert_eq!(why["speedup"], 1.0, "{report}");
    let hit = &report["ops"][1];
    assert_eq!(hit["layer"], LayerId::BuiltIn(0).to_string());
    assert!(hit["strategy"]["aoe_md5"]
        .as_str()
        .unwrap()
        .starts_with("0b66fa57"));
}

// A minimal ONNX writer (the fields of onnx.proto the importer reads).
#[derive(Clone, PartialEq, Message)]
struct ModelProto {
    #[prost(int64, tag = "1")]
    ir_version: i64,
    #[prost(message, repeated, tag = "8")]
    opset_import: Vec<OpsetProto>,
    #[prost(message, optional, tag = "7")]
    graph: Option<GraphProto>,
}
#[derive(Clone, PartialEq, Message)]
struct OpsetProto {
    #[prost(string, tag = "1")]
    domain: String,
    #[prost(int64, tag = "2")]
    version: i64,
}
#[derive(Clone, PartialEq, Message)]
struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    node: Vec<NodeProto>,
    #[prost(string, tag = "2")]
    name: String,
    #[prost(message, repeated, tag = "5")]
    initializer: Vec<TensorProto>,
    #[prost(message, repeated, tag = "11")]
    input: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "12")]
    output: Vec<ValueInfoProto>,
}
#[derive(Clone, PartialEq, Message)]
struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    output: Vec<String>,
    #[prost(string, tag = "3")]
    name: String,
    #[prost(string, tag = "4")]
    op_type: String,
}
#[derive(Clone, PartialEq, Message)]
struct ValueInfoProto {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    r#type: Option<TypeProto>,
}
#[derive(Clone, PartialEq, Message)]
struct TypeProto {
    #[prost(message, optional, tag = "1")]
    tensor_type: Option<TensorTypeProto>,
}
#[derive(Clone, PartialEq, Message)]
struct TensorTypeProto {
    #[prost(int32, tag = "1")]
    elem_type: i32,
    #[prost(message, optional, tag = "2")]
    shape: Option<ShapeProto>,
}
#[derive(Clone, PartialEq, Message)]
struct ShapeProto {
    #[prost(message, repeated, tag = "1")]
    dim: Vec<DimProto>,
}
#[derive(Clone, PartialEq, Message)]
struct DimProto {
    #[prost(int64, optional, tag = "1")]
    dim_value: Option<i64>,
}
#[derive(Clone, PartialEq, Message)]
struct TensorProto {
    #[prost(int64, repeated, tag = "1")]
    dims: Vec<i64>,
    #[prost(int32, tag = "2")]
    data_type: i32,
    #[prost(string, tag = "8")]
    name: String,
}

const FLOAT16: i32 = 10;

fn value(name: &str, shape: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: FLOAT16,
                shape: Some(ShapeProto {
                    dim: shape
                        .iter()
                        .map(|&d| DimProto { dim_value: Some(d) })
                        .collect(),
                }),
            }),
        }),
    }
}

/// One op `op_type` over graph input `x` and fp16 weights (`w`, and `b` when given).
pub(super) fn model(
    path: &Path,
    op_type: &str,
    x: &[i64],
    w: &[i64],
    b: Option<&[i64]>,
    y: &[i64],
) {
    let weight = |name: &str, dims: &[i64]| TensorProto {
        dims: dims.to_vec(),
        data_type: FLOAT16,
        name: name.into(),
    };
    let mut inputs = vec!["x".to_owned(), "w".to_owned()];
    let mut initializer = vec![weight("w", w)];
    if let Some(b) = b {
        inputs.push("b".into());
        initializer.push(weight("b", b));
    }
    let m = ModelProto {
        ir_version: 8,
        opset_import: vec![OpsetProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(GraphProto {
            node: vec![NodeProto {
                input: inputs,
                output: vec!["y".into()],
                name: "op".into(),
                op_type: op_type.into(),
            }],
            name: "g".into(),
            initializer,
            input: vec![value("x", x)],
            output: vec![value("y", y)],
        }),
    };
    std::fs::write(path, m.encode_to_vec()).unwrap();
}

/// Op type, x, w, bias, y, expected result.
type Case<'a> = (
    &'a str,
    &'a [i64],
    &'a [i64],
    Option<&'a [i64]>,
    &'a [i64],
    &'a str,
);

#[test]
fn onnx_models_of_a_record_shape_hit_it_through_convert() {
    let dir = tempfile::tempdir().unwrap();
    let imported = import(dir.path());
    let cases: [Case; 3] = [
        ("MatMul", &[51200, 16], &[16, 32], None, &[51200, 32], "hit"),
        (
            "Gemm",
            &[2000, 8560],
            &[8560, 1024],
            Some(&[1024]),
            &[2000, 1024],
            "hit",
        ),
        // Record 0b66fa57 has a bias: the plain MatMul of its shape is another op.
        (
            "MatMul",
            &[2000, 8560],
            &[8560, 1024],
            None,
            &[2000, 1024],
            "miss",
        ),
    ];
    for (i, (op, x, w, b, y, want)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("m{i}.onnx"));
        model(&path, op, x, w, b, y);
        let o = tunebank(&[
            "convert",
            &format!("--model={}", path.display()),
            &format!("--soc_version={SOC}"),
            "--builtin-bank",
            imported.to_str().unwrap(),
            "--bank",
            dir.path().join("custom.redb").to_str().unwrap(),
            "--json",
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let row = &report["ops"][0];
        assert_eq!(row["result"], want, "case {i} ({op}): {report}");
        assert_eq!(row["ir_type"], "MatMulV2", "{report}");
    }
}

#[test]
fn import_then_export_gives_the_file_back_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let imported = import(dir.path());
    let out = dir.path().join("exported.json");
    let o = tunebank(&[
        "bank",
        "export",
        "--aoe",
        "--bank",
        imported.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("exported 8 AOE entries (8 as imported"),
        "{}",
        text(&o)
    );
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(sample_path()).unwrap(),
        "import → export must give the same bytes"
    );
}

/// A strategy tuned here for a MatMul with a TBE form exports with the info_dict of its
/// descriptor and the knowledge of its tiling; importing that file gives the same key and
/// tiling back. An op without a TBE form is left out, named.
#[test]
fn a_tuned_tiling_exports_as_tbe_knowledge_that_imports_back() {
    let dir = tempfile::tempdir().unwrap();
    let ops = dir.path().join("ops.json");
    let templates: serde_json::Value = serde_json::from_str(OPS).unwrap();
    std::fs::write(&ops, serde_json::to_string(&templates[0]).unwrap()).unwrap();
    let relu = dir.path().join("relu.json");
    std::fs::write(
        &relu,
        r#"{"node_name": "r", "op_type": "Relu", "inputs": [{"shape": [4, 4], "dtype": "float16"}],
            "outputs": [{"shape": [4, 4], "dtype": "float16"}]}"#,
    )
    .unwrap();
    let tiling = r#"{"blockDimM":24,"blockDimN":1,"baseM":128,"baseN":32,"baseK":16,"dbL0A":2,"dbL0B":2,"dbL0C":2,"stepKa":1,"depthA1":2,"stepKb":1,"depthB1":1,"iterateOrder":0}"#;
    let bank = dir.path().join("tuned.redb");
    let soc = format!("--soc_version={SOC}");
    for (op, strategy) in [(&ops, tiling), (&relu, r#"{"tileNum":4}"#)] {
        let o = tunebank(&[
            "bank",
            "add",
            "--op",
            op.to_str().unwrap(),
            "--bank",
            bank.to_str().unwrap(),
            &soc,
            "--strategy",
            strategy,
            "--time-us",
            "7.5",
            "--baseline-us",
            "9",
        ]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let out = dir.path().join("tuned.json");
    let o = tunebank(&[
        "bank",
        "export",
        "--aoe",
        "--bank",
        bank.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("1 from tuned tilings), 1 records left out"),
        "{}",
        text(&o)
    );
    assert!(
        text(&o).contains("Relu has no TBE MatMul form"),
        "{}",
        text(&o)
    );

    let parsed = parse_unified_bank(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        (parsed.accepted.len(), parsed.rejected.len()),
        (1, 0),
        "md5s verify"
    );
    let e = &parsed.accepted[0];
    assert_eq!(e.cost_time, 7.5);
    let back = Bank::builder(RecordKind::Op, SOC)
        .custom_path(dir.path().join("back.redb"))
        .open()
        .unwrap();
    let soc_spec = SocSpec::from_version(SOC).unwrap();
    let report = import_aoe(&back, &parsed, &soc_spec, Origin::Imported, 0).unwrap();
    assert_eq!((report.mapped, report.tilings), (1, 1));
    let tuned = Bank::builder(RecordKind::Op, SOC)
        .custom_path(&bank)
        .read_only(true)
        .open()
        .unwrap();
    let tuned = tuned.custom_layer().unwrap().records().unwrap().records;
    let (_, again) = &back.custom_layer().unwrap().records().unwrap().records[0];
    let original = tuned
        .iter()
        .find(|(_, r)| r.strategy.contains_key("baseM"))
        .unwrap();
    let key = tunebank::bank::descriptor_key;
    assert_eq!(
        key(&again.descriptor).unwrap(),
        key(&original.1.descriptor).unwrap()
    );
    let want: serde_json::Map<String, serde_json::Value> = serde_json::from_str(tiling).unwrap();
    for (k, v) in want {
        assert_eq!(again.strategy[&k], v, "{k}");
    }
}

#[test]
fn calibrate_reports_every_record_with_the_reason_for_a_missing_time() {
    let o = tunebank(&[
        "calibrate",
        "--aoe",
        sample_path().to_str().unwrap(),
        &format!("--soc_version={SOC}"),
        "--samples",
        "20",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = doc["records"].as_array().unwrap();
    assert_eq!(rows.len(), 8);
    for r in rows {
        let real = r["real_us"].as_f64().unwrap();
        assert!(real > 0.0);
        let (default, best) = (
            r["default_us"].as_f64().unwrap(),
            r["best_us"].as_f64().unwrap(),
        );
        assert!(best <= default, "{r}");
        // The cube's peak bounds every simulated time from below (the board may beat the
        // simulator, never its own peak by much: it is the same chip's arithmetic).
        let peak = r["peak_us"].as_f64().unwrap();
        assert!(peak > 0.0 && peak <= best, "{r}");
        assert!(peak <= 1.05 * real, "{r}");
        // The best of TBE's space, the one AOE searched: every stored tiling is a point of it.
        let tbe_best = r["tbe_best_us"].as_f64().unwrap();
        assert!(peak <= tbe_best, "{r}");
        assert!(r.get("stored_outside_tbe_space").is_none(), "{r}");
        // Three sample records split M over 25 blocks on the 24-core file: they run in waves.
        let stored = r["stored_us"].as_f64();
        assert!(
            stored.is_some_and(|s| s > 0.0) && r.get("reason").is_none(),
            "{r}"
        );
    }
    let s = &doc["summary"];
    assert_eq!(s["records"], 8);
    assert_eq!(s["mapped"], 8);
    assert_eq!(s["stored"]["records"], 8);
    assert_eq!(s["best"]["records"], 8);
    assert_eq!(s["tbe_best"]["records"], 8);
    assert_eq!(s["stored_in_tbe_space"], 8);
    // The summary's figures, each recomputed here from the rows: the share of records whose
    // stored tiling simulates within 10 % of the best, and Spearman's correlation of the stored
    // tilings' simulated times with the board's (`common::stats`, not the library's).
    let col = |k: &str| -> Vec<f64> { rows.iter().map(|r| r[k].as_f64().unwrap()).collect() };
    let (stored, real) = (col("stored_us"), col("real_us"));
    for (k, best) in [
        ("stored_within_10pct_of_best", col("best_us")),
        ("stored_within_10pct_of_tbe_best", col("tbe_best_us")),
    ] {
        let within = stored.iter().zip(&best).filter(|(s, b)| **s <= 1.1 * **b);
        let want = within.count() as f64 / rows.len() as f64;
        assert_eq!(s[k].as_f64().unwrap(), want, "{k}");
    }
    for k in ["board_peak_share_p50", "best_peak_share_p50"] {
        let p = s[k].as_f64().unwrap();
        assert!(p > 0.0 && p <= 1.05, "{k} {p}");
    }
    let spearman = s["stored"]["spearman"].as_f64().unwrap();
    let want = common::stats::spearman(&stored, &real).unwrap();
    assert!((spearman - want).abs() < 1e-12, "{spearman} {want}");
    // The simulator ranks the stored tilings nearly as the board does (0.976 on the sample:
    // one neighbouring pair swapped).
    assert!(want > 0.8, "{want}");
}

/// The bank file's core count sets the simulated cores: with `--aoe-core-count 25` the three
/// sample tilings that split M over 25 blocks run in one wave instead of two on the file's 24
/// cores, and no stored tiling gets slower.
#[test]
fn calibrate_simulates_the_bank_files_core_count() {
    let stored = |extra: &[&str]| -> Vec<f64> {
        let sample = sample_path();
        let soc = format!("--soc_version={SOC}");
        let mut args = vec!["calibrate", "--aoe", sample.to_str().unwrap(), soc.as_str()];
        args.extend(["--samples", "5", "--json"]);
        args.extend(extra);
        let o = tunebank(&args);
        assert!(o.status.success(), "{}", text(&o));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        doc["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["stored_us"].as_f64().unwrap())
            .collect()
    };
    let (file, board) = (stored(&[]), stored(&["--aoe-core-count", "25"]));
    assert_eq!(file.len(), board.len());
    // One wave against two: about twice as fast, the launch aside. The others keep their
    // waves; only the vector units' share grows (25/24), so they change by a few per cent.
    let two_waves = file
        .iter()
        .zip(&board)
        .filter(|(f, b)| **f > 1.3 * **b)
        .count();
    assert_eq!(two_waves, 3, "{file:?} {board:?}");
    assert!(
        file.iter()
            .zip(&board)
            .all(|(f, b)| b <= f && *f <= 2.0 * b),
        "{file:?} {board:?}"
    );
}

/// A record tuned from an ONNX Gemm is keyed as the IR MatMulV2; `bank-inspect list` and `show`
/// name both.
#[test]
fn bank_inspect_shows_the_onnx_and_the_ir_names() {
    let dir = tempfile::tempdir().unwrap();
    let ops = dir.path().join("gemm.json");
    let templates: serde_json::Value = serde_json::from_str(OPS).unwrap();
    std::fs::write(&ops, serde_json::to_string(&templates[1]).unwrap()).unwrap();
    let bank = dir.path().join("b.redb");
    let o = tunebank(&[
        "bank",
        "add",
        "--op",
        ops.to_str().unwrap(),
        "--bank",
        bank.to_str().unwrap(),
        &format!("--soc_version={SOC}"),
        "--strategy",
        r#"{"baseM":128}"#,
        "--time-us",
        "5",
        "--baseline-us",
        "6",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let inspect = |args: &[&str]| inspect(&bank, args);
    let list = inspect(&["list"]);
    assert!(list.contains("MatMulV2 (ONNX Gemm)"), "{list}");
    let key = list.split('\t').nth(1).unwrap().to_owned();
    let show = inspect(&["show", &key]);
    assert!(show.contains("op type: MatMulV2 (ONNX Gemm)"), "{show}");
    let json = inspect(&["list", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json[0]["record"]["op_type"], "MatMulV2");
    assert_eq!(json[0]["record"]["onnx_op_type"], "Gemm");
}
