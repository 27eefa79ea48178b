//! PyTorch in: `torch.export` programs (`.pt2`) written by PyTorch itself
//! (fixtures/models/pytorch, made by make_pt2.py there) with their `torch.onnx.export` twins,
//! and a training step captured by `tunebank.torch` (forward, backward, Adam's update). The
//! small CNN tuned from its `.pt2` is all hits for its ONNX twin; the encoder block keys as its
//! twin but for the one layout op the ONNX exporter writes its own way; the step tunes its
//! backward ops and reruns all hits, and GDAT finds one gradient per parameter; bad `.pt2` input
//! is refused by name with nothing written.

use std::collections::BTreeMap;
use std::io::Write as _;

use crate::cli::{
    assert_refused, convert_report as convert, keys_by_type as keys, model_fixture, text,
    tune_into as tune,
};

fn fixture(name: &str) -> String {
    model_fixture(&format!("pytorch/{name}"))
}

fn results(report: &serde_json::Value) -> Vec<(String, String)> {
    report["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["ir_type"].as_str().unwrap().to_string(),
                o["result"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The small CNN tuned from its `.pt2` (OPAT): its `torch.onnx.export` twin finds every op under
/// the same key, every one a hit; the program imports whole (nothing skipped), batch norms
/// folded into their convolutions as the exporter folds them.
#[test]
fn a_pt2_tunes_and_its_torch_onnx_twin_finds_every_op() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("bank.redb");
    let bank = bank.to_str().unwrap();
    let pt2 = format!("--model={}", fixture("small_cnn.pt2"));
    let o = tune(&pt2, &["--job_type=2"], dir.path());
    assert!(o.status.success(), "{}", text(&o));
    let torch = convert(&pt2, &["--bank", bank], dir.path());
    let twin = convert(
        &format!("--model={}", fixture("small_cnn.onnx")),
        &["--bank", bank],
        dir.path(),
    );
    assert_eq!(torch["skipped"], serde_json::json!([]), "{torch}");
    assert_eq!(keys(&torch), keys(&twin), "one key per op in both files");
    let ir: Vec<String> = results(&twin).into_iter().map(|(t, _)| t).collect();
    for cube in ["Conv2D+Relu", "Conv2D+Clip", "MatMulV2"] {
        assert!(ir.iter().any(|t| t == cube), "{cube} in {ir:?}");
    }
    for (t, r) in results(&twin) {
        assert_eq!(r, "hit", "{t} of the ONNX twin");
    }
}

/// The encoder block (LayerNorm, QKV Linear on 3-D input, split, scaled dot-product attention,
/// GELU MLP) keys as its twin op for op, but for one Transpose: the ONNX exporter transposes kᵀ
/// as a 3-D tensor between two Reshapes, the program as the 4-D tensor it is.
#[test]
fn the_encoder_block_keys_as_its_twin_but_for_the_exporters_own_transpose() {
    let dir = tempfile::tempdir().unwrap();
    let torch = convert(
        &format!("--model={}", fixture("encoder_block.pt2")),
        &[],
        dir.path(),
    );
    let twin = convert(
        &format!("--model={}", fixture("encoder_block.onnx")),
        &[],
        dir.path(),
    );
    assert_eq!(torch["skipped"], serde_json::json!([]), "{torch}");
    let (a, b) = (keys(&torch), keys(&twin));
    for (t, ka) in &a {
        if t != "Transpose" {
            assert_eq!(Some(ka), b.get(t), "{t}");
        }
    }
    assert_eq!(a["BatchMatMulV2"].len(), 5, "{a:?}");
    let (ta, tb) = (&a["Transpose"], &b["Transpose"]);
    assert_eq!(ta.len(), tb.len());
    assert_eq!(
        ta.iter().filter(|k| !tb.contains(k)).count(),
        1,
        "{ta:?} {tb:?}"
    );
}

/// The number of parameters of a program: its `parameter` input specs.
fn parameters(pt2: &str) -> usize {
    let bytes = std::fs::read(pt2).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    text.matches("\"parameter\":").count()
}

/// A training step captured by `tunebank.torch` (forward, cross-entropy, backward, Adam): OPAT
/// tunes its backward ops (filter and input gradients, ReluGrad, the batch-norm gradients) and
/// the optimizer's arithmetic, and a rerun finds every op in the bank; GDAT finds one gradient
/// per parameter.
#[test]
fn a_captured_training_step_tunes_its_backward_and_gdat_finds_every_gradient() {
    let dir = tempfile::tempdir().unwrap();
    let step_file = fixture("small_cnn_step.pt2");
    let step = format!("--model={step_file}");
    let precision = "--precision_mode=allow_fp32_to_fp16";
    let o = tune(&step, &["--job_type=2", precision], dir.path());
    assert!(o.status.success(), "{}", text(&o));
    let bank = dir.path().join("bank.redb");
    let report = convert(
        &step,
        &["--bank", bank.to_str().unwrap(), precision],
        dir.path(),
    );
    assert_eq!(report["skipped"], serde_json::json!([]), "{report}");
    let ir: Vec<(String, String)> = results(&report);
    for op in [
        "Conv2DBackpropFilter",
        "Conv2DBackpropInput",
        "DepthwiseConv2DBackpropFilter",
        "ReluGrad",
        "Relu6Grad",
        "BNTrainingUpdateGrad",
        "BNTrainingReduceGrad",
        "MaxPoolGrad",
        "BiasAddGrad",
        "AssignAdd",
    ] {
        assert!(ir.iter().any(|(t, _)| t == op), "{op} in {ir:?}");
    }
    // Every op is a hit on the second look-up but those the simulator has no model of, which
    // the job named as not tuned (the loss, its gradients, Expand, the int64 step counter).
    let out = text(&o);
    let not_tuned: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("(not tuned: runner sim does not support"))
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    let ops = report["ops"].as_array().unwrap();
    let untuned_keys: Vec<&serde_json::Value> = ops
        .iter()
        .filter(|op| not_tuned.contains(&op["op_name"].as_str().unwrap()))
        .map(|op| &op["key"])
        .collect();
    for op in ops {
        if op["result"] != "hit" {
            let name = &op["op_name"];
            assert!(
                untuned_keys.contains(&&op["key"]),
                "{name} missed but was tuned: {out}"
            );
        }
    }
    for (t, r) in &ir {
        if t.contains("Backprop") || t.ends_with("ReluGrad") || t.starts_with("BNTraining") {
            assert_eq!(r, "hit", "{t} on the rerun");
        }
    }

    let gd = tempfile::tempdir().unwrap();
    let o = tune(
        &step,
        &["--job_type=4", "--rank_size=8", precision],
        gd.path(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    let want = parameters(&step_file);
    assert_eq!(want, 10, "the fixture's SmallCnn has ten parameters");
    assert!(out.contains(&format!("GDAT: {want} gradients")), "{out}");
}

/// A stored ZIP of one `net/models/model.json` entry.
fn archive(json: &str) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    let mut z = zip::ZipWriter::new(&mut buf);
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    z.start_file("net/models/model.json", opts).unwrap();
    z.write_all(json.as_bytes()).unwrap();
    z.finish().unwrap();
    buf.into_inner()
}

/// A `.pt2` of another schema version, a file that is no archive, a program that is not
/// torch.export's: each exit 2 naming the file and what was expected, nothing written.
#[test]
fn bad_pt2_input_is_refused_by_name_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "future.pt2",
            archive(
                r#"{"schema_version": {"major": 99, "minor": 1}, "graph_module": {"graph": {"nodes": []}}}"#,
            ),
            "unsupported program schema version 99.1",
        ),
        (
            "notzip.pt2",
            b"PK\x03\x04 not really".to_vec(),
            "not a ZIP archive",
        ),
        (
            "notprogram.pt2",
            archive(r#"{"nodes": 3}"#),
            "does not decode as torch.export's schema",
        ),
    ];
    let mut refused = Vec::new();
    for (name, bytes, why) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        refused.push((vec![format!("--model={}", path.display())], vec![name, why]));
    }
    assert_refused(dir.path(), refused);
}

/// The training step of fixtures/models/training's small CNN captured from PyTorch
/// (tf_twin_step.pt2) and traced from TensorFlow (small_cnn_step.pb): the backward ops ATC
/// compiles alike key alike — both filter gradients, the ReLU, pooling and batch-norm
/// gradients, the batch-norm statistics — and PyTorch's input and bias gradients are among
/// TensorFlow's (TensorFlow adds a BiasAddGrad for the dense bias, which PyTorch sums with a
/// ReduceSum). Where ATC compiles other ops they differ: the loss (NLLLoss against
/// SoftmaxCrossEntropyWithLogits), BNTrainingUpdate (PyTorch's updates the running statistics
/// itself, `factor` = momentum; TensorFlow's leaves them to assignments, `factor` 1), the
/// average pool (`count_include_pad` 1 against 0) and the dense layer's MatMuls (NCHW against
/// NHWC flattening order).
#[test]
fn the_backward_ops_of_a_pytorch_step_key_as_the_tensorflow_steps() {
    let dir = tempfile::tempdir().unwrap();
    let precision = "--precision_mode=allow_fp32_to_fp16";
    let torch = convert(
        &format!("--model={}", fixture("tf_twin_step.pt2")),
        &[precision],
        dir.path(),
    );
    let tf_step = model_fixture("training/small_cnn_step.pb");
    let tf = convert(
        &format!("--model={tf_step}"),
        &["--framework=3", precision],
        dir.path(),
    );
    let (a, b) = (keys(&torch), keys(&tf));
    let set = |m: &BTreeMap<String, Vec<String>>, t: &str| -> std::collections::BTreeSet<String> {
        m.get(t).into_iter().flatten().cloned().collect()
    };
    for t in [
        "Conv2DBackpropFilter",
        "ReluGrad",
        "MaxPoolGrad",
        "AvgPoolGrad",
        "BNTrainingReduce",
        "BNTrainingReduceGrad",
        "BNTrainingUpdateGrad",
    ] {
        assert!(!set(&a, t).is_empty(), "{t} in the PyTorch step");
        assert_eq!(set(&a, t), set(&b, t), "{t}");
    }
    for t in ["Conv2DBackpropInput", "BiasAddGrad"] {
        assert!(!set(&a, t).is_empty(), "{t} in the PyTorch step");
        assert!(
            set(&a, t).is_subset(&set(&b, t)),
            "{t}: {:?} {:?}",
            a.get(t),
            b.get(t)
        );
    }
}

/// The encoder block's training step (mean-squared error, AdamW) imports whole: flash
/// attention and its gradient as torchair compiles them (`FlashAttentionScore`,
/// `FlashAttentionScoreGrad`), the layer-norm and GELU gradients, the loss and its gradient;
/// GDAT finds one gradient per parameter (twelve).
#[test]
fn the_encoder_blocks_step_imports_whole_and_gdat_finds_every_gradient() {
    let dir = tempfile::tempdir().unwrap();
    let step_file = fixture("encoder_block_step.pt2");
    let step = format!("--model={step_file}");
    let precision = "--precision_mode=allow_fp32_to_fp16";
    let report = convert(&step, &[precision], dir.path());
    assert_eq!(report["skipped"], serde_json::json!([]), "{report}");
    let types = keys(&report);
    for op in [
        "FlashAttentionScore",
        "FlashAttentionScoreGrad",
        "LayerNormGrad",
        "GeluGrad",
        "MseLossGrad",
        "MatMulV2",
    ] {
        assert!(types.contains_key(op), "{op} in {:?}", types.keys());
    }
    let o = tune(
        &step,
        &["--job_type=4", "--rank_size=8", precision],
        dir.path(),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(parameters(&step_file), 12);
    assert!(text(&o).contains("GDAT: 12 gradients"), "{}", text(&o));
}
