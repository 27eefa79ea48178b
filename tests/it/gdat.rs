//! GDAT through `tunebank tune --job_type=4`: the result file, timeline and picture, a rerun's
//! hits, and bad input. The library's side of GDAT is `src/tests/gdat.rs`.

use std::path::Path;
use std::process::Command;

use prost::Message;

const BIN: &str = env!("CARGO_BIN_EXE_tunebank");

fn tune(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .args([
            "tune",
            "--job_type=4",
            "--soc_version=Ascend910B2",
            "--output-dir",
            "out",
            "--bank",
            "b.redb",
        ])
        .args(extra)
        .env_remove("AOE_MODE")
        .env_remove("REPEAT_TUNE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn model_arg(name: &str) -> String {
    format!(
        "--model={}/fixtures/models/{name}.onnx",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn result(dir: &Path) -> serde_json::Value {
    let mut files: Vec<_> = std::fs::read_dir(dir.join("out"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let f = files.last().unwrap();
    assert!(f
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("aoe_result_gdat_"));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
    let (_, body) = v.as_object().unwrap().iter().next().unwrap();
    body[1]["GDAT"].clone()
}

#[test]
fn command_line_writes_result_timeline_and_svg_and_reruns_hit() {
    let dir = tempfile::tempdir().unwrap();
    let m = model_arg("resnet50");
    let out = tune(
        dir.path(),
        &[
            &m,
            "--rank_size",
            "16",
            "--timeline-out",
            "t.json",
            "--svg",
            "g.svg",
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("set_split_strategy_by_idx(") && text.contains("bucket_cap_mb="),
        "{text}"
    );
    let r = result(dir.path());
    assert_eq!(r["repo_summary"]["repo_add_num"], 1);
    let t: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("t.json")).unwrap()).unwrap();
    // The timeline recomputes the tail without tunebank.
    let grads = t["gradients"].as_array().unwrap();
    let (a, b) = (
        t["allreduce"]["per_segment_us"].as_f64().unwrap(),
        t["allreduce"]["us_per_byte"].as_f64().unwrap(),
    );
    let (mut first, mut free) = (0usize, 0.0f64);
    for e in t["split"].as_array().unwrap() {
        let e = e.as_u64().unwrap() as usize;
        let bytes: u64 = grads[first..e]
            .iter()
            .map(|g| g["bytes"].as_u64().unwrap())
            .sum();
        free = grads[e - 1]["ready_us"].as_f64().unwrap().max(free) + a + b * bytes as f64;
        first = e;
    }
    let recomputed = free - t["backward_end_us"].as_f64().unwrap();
    assert!((recomputed - t["tail_us"].as_f64().unwrap()).abs() < 1e-6);
    assert!(t["tail_us"].as_f64().unwrap() <= t["default_tail_us"].as_f64().unwrap());
    assert!(std::fs::read_to_string(dir.path().join("g.svg"))
        .unwrap()
        .starts_with("<svg"));
    let again = tune(dir.path(), &[&m, "--rank_size", "16"], &[]);
    assert!(again.status.success());
    let r = result(dir.path());
    assert_eq!(
        (
            r["repo_summary"]["repo_hit_num"].clone(),
            r["trials"].clone()
        ),
        (1.into(), 0.into())
    );
    let repeat = tune(
        dir.path(),
        &[&m, "--rank_size", "16"],
        &[("REPEAT_TUNE", "True")],
    );
    assert!(repeat.status.success());
    assert!(result(dir.path())["trials"].as_u64().unwrap() > 0);

    // `bank-inspect why --rank_size`: the same job hits; another rank size misses, naming it.
    let why = |rank: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_bank-inspect"))
            .current_dir(dir.path())
            .args(["why", &m, "--rank_size", rank, "--bank", "b.redb"])
            .args(["--soc_version=Ascend910B2", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    assert_eq!(why("16")["hit"], true);
    let miss = why("64");
    assert_eq!(miss["hit"], false);
    assert_eq!(
        miss["nearest"][0]["differences"],
        serde_json::json!(["world_size: stored 16, looked up 64"])
    );
}

/// A model with one Relu and no initializer.
fn write_relu_model(path: &Path) {
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
    let value = |name: &str| ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: 10,
                shape: Some(ShapeProto {
                    dim: [8, 64]
                        .iter()
                        .map(|&d| DimProto { dim_value: Some(d) })
                        .collect(),
                }),
            }),
        }),
    };
    let m = ModelProto {
        ir_version: 8,
        opset_import: vec![OpsetProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(GraphProto {
            node: vec![NodeProto {
                input: vec!["x".into()],
                output: vec!["y".into()],
                name: "relu".into(),
                op_type: "Relu".into(),
            }],
            name: "g".into(),
            input: vec![value("x")],
            output: vec![value("y")],
        }),
    };
    std::fs::write(path, m.encode_to_vec()).unwrap();
}

#[test]
fn bad_input_exits_2_naming_it_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let relu = dir.path().join("relu.onnx");
    write_relu_model(&relu);
    std::fs::write(
        dir.path().join("bad.json"),
        r#"{"intra": {"bandwidth_gbps": "fast"}}"#,
    )
    .unwrap();
    let m = model_arg("resnet50");
    let relu_arg = format!("--model={}", relu.display());
    let cases: [(&[&str], &str); 8] = [
        (&[&relu_arg, "--rank_size", "8"], "no trainable parameters"),
        (&[&m, "--rank_size", "1"], "rank_size 1"),
        (
            &[&m, "--rank_size", "8", "--max_segments", "9"],
            "max segments 9",
        ),
        (
            &[&m, "--rank_size", "8", "--cluster", "missing.json"],
            "--cluster missing.json",
        ),
        (
            &[&m, "--rank_size", "8", "--cluster", "bad.json"],
            "--cluster bad.json",
        ),
        (&[&m], "--rank_size"),
        (
            &[&m, "--rank_size", "8", "--runner", "gpu"],
            "unknown runner \"gpu\"",
        ),
        (&[&m, "--rank_size", "8", "--runner", "cpu"], "--runner cpu"),
    ];
    for (args, named) in cases {
        let out = tune(dir.path(), args, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(named), "{args:?}: {err}");
        assert!(
            !dir.path().join("out").exists() && !dir.path().join("b.redb").exists(),
            "{args:?} wrote"
        );
    }
}
