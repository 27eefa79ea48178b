//! MindSpore training steps in (`--framework=1`): `TrainOneStepCell`s exported by
//! `mindspore.export` (fixtures/models/training, made by make_mindspore.py there), as
//! `tunebank.mindspore` captures them. Each imports whole; the backward ops key as the
//! TensorFlow step's of the same network; OPAT tunes them; GDAT finds one gradient per
//! trainable parameter in backward order; and a step tuned under MindSpore's training default
//! is hit by the same step converted under that default, where ATC's inference default keys
//! its vector ops apart.

use std::collections::BTreeSet;
use std::path::Path;

use tunebank::key::platform::{training_precision_mode, TrainingRun};

use crate::cli::{convert_report, keys_by_type, model_fixture, text, tune_into};

fn step(name: &str) -> String {
    format!("--model={}", model_fixture(&format!("training/{name}")))
}

const MS: &str = "--framework=1";

/// The keys of IR type `t` in a report, as a set.
fn key_set(report: &serde_json::Value, t: &str) -> BTreeSet<String> {
    keys_by_type(report)
        .remove(t)
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// `tunebank tune` of a MindSpore step with a bank in `dir`.
fn tune(model: &str, extra: &[&str], dir: &Path) -> std::process::Output {
    let mut args = vec![MS];
    args.extend_from_slice(extra);
    tune_into(model, &args, dir)
}

/// The TensorFlow step's twin (small_cnn_step.pb's network, batch, loss and Adam) from
/// MindSpore: nothing skipped; the backward ops ATC compiles alike key alike — both filter
/// gradients, the ReLU, max- and average-pool gradients, the batch-norm statistics and
/// gradients, the loss — and MindSpore's input gradient is among TensorFlow's (which also
/// computes the first convolution's, unused); of the two bias gradients the convolution's
/// keys alike, the dense layer's not (TensorFlow writes it `data_format` NHWC, MindSpore NCHW:
/// on a 2-D gradient the same reduction, but another attribute). Adam's updates of
/// the 1-D variables (batch-norm scale and offset, the two biases: three shapes) key alike;
/// the weights' differ by layout (TensorFlow's HWIO filters and [in, out] dense weight against
/// MindSpore's OIHW and [out, in]), as does `BNTrainingUpdate` (MindSpore's `factor` is its
/// momentum, TensorFlow's fused op leaves the averages to assignments, `factor` 1).
#[test]
fn a_mindspore_steps_backward_keys_as_the_tensorflow_steps() {
    let dir = tempfile::tempdir().unwrap();
    let precision = "--precision_mode=allow_fp32_to_fp16";
    let ms = convert_report(&step("ms_twin_step.mindir"), &[MS, precision], dir.path());
    assert_eq!(ms["skipped"], serde_json::json!([]), "{ms}");
    let tf = convert_report(
        &step("small_cnn_step.pb"),
        &["--framework=3", precision],
        dir.path(),
    );
    for t in [
        "Conv2DBackpropFilter",
        "ReluGrad",
        "MaxPoolGrad",
        "AvgPoolGrad",
        "BNTrainingReduce",
        "BNTrainingReduceGrad",
        "BNTrainingUpdateGrad",
        "SoftmaxCrossEntropyWithLogits",
    ] {
        assert!(!key_set(&ms, t).is_empty(), "{t} in the MindSpore step");
        assert_eq!(key_set(&ms, t), key_set(&tf, t), "{t}");
    }
    let input = |r| key_set(r, "Conv2DBackpropInput");
    assert!(!input(&ms).is_empty() && input(&ms).is_subset(&input(&tf)));
    let bias = |r| key_set(r, "BiasAddGrad");
    assert_eq!((bias(&ms).len(), bias(&tf).len()), (2, 2));
    assert_eq!(
        bias(&ms).intersection(&bias(&tf)).count(),
        1,
        "the convolution's"
    );
    let adam = |r| key_set(r, "ApplyAdam");
    assert_eq!(adam(&ms).intersection(&adam(&tf)).count(), 3);
    assert!(key_set(&ms, "BNTrainingUpdate").is_disjoint(&key_set(&tf, "BNTrainingUpdate")));
}

/// One step fixture: backward op types it must hold, gradient pairs in backward order, its
/// trainable parameters and their elements.
struct Case {
    file: &'static str,
    backward: &'static [&'static str],
    before: &'static [(&'static str, &'static str)],
    gradients: usize,
    elements: u64,
}

/// The name of a gradient in a GDAT timeline: the parameter's, after MindSpore's scope.
fn short(name: &str) -> &str {
    name.rsplit(':').next().unwrap()
}

/// OPAT on each step tunes its backward ops and a rerun finds them in the bank; GDAT finds
/// one gradient per trainable parameter — seven of the twin (conv1, bn1's scale and offset,
/// conv2's weight and bias, the dense weight and bias), seven of the mobile net (stem, bn,
/// depthwise, pointwise, dense weight and bias), twelve of the block (two layer norms and four
/// dense layers, each two) — ready in backward order: the last layer's first. Under
/// `must_keep_origin_dtype` every gradient is float32: the timeline's bytes are four per
/// parameter element (the networks' parameter counts, from make_mindspore.py's definitions:
/// twin 3·16·9 + 2·16 + 16·32·9 + 32 + 2048·10 + 10 = 25,594; mobile 16·3·9 + 2·16 + 16·9 +
/// 16·32 + 32·10 + 10 = 1,450; block 4·64 + (64·192 + 192) + (64·64 + 64) + (64·256 + 256) +
/// (256·64 + 64) = 49,984).
#[test]
fn mindspore_steps_tune_their_backward_and_gdat_finds_every_gradient_in_backward_order() {
    let precision = "--precision_mode=must_keep_origin_dtype";
    let cases = [
        Case {
            file: "ms_twin_step.mindir",
            backward: &[
                "Conv2DBackpropFilter",
                "MaxPoolGrad",
                "BNTrainingReduceGrad",
                "ReluGrad",
            ],
            before: &[
                ("fc.weight", "conv2.weight"),
                ("conv2.bias", "bn1.gamma"),
                ("bn1.beta", "conv1.weight"),
            ],
            gradients: 7,
            elements: 25_594,
        },
        Case {
            file: "ms_mobile_step.mindir",
            backward: &[
                "DepthwiseConv2DBackpropFilter",
                "DepthwiseConv2DBackpropInput",
                "Relu6Grad",
            ],
            before: &[
                ("fc.weight", "pw.weight"),
                ("pw.weight", "dw.weight"),
                ("dw.weight", "stem.weight"),
            ],
            gradients: 7,
            elements: 1_450,
        },
        Case {
            file: "ms_block_step.mindir",
            backward: &[
                "LayerNormGrad",
                "SoftmaxGrad",
                "DropOutDoMask",
                "StridedSliceGrad",
            ],
            before: &[
                ("fc2.weight", "fc1.weight"),
                ("fc1.weight", "proj.weight"),
                ("proj.weight", "qkv.weight"),
            ],
            gradients: 12,
            elements: 49_984,
        },
    ];
    for Case {
        file,
        backward,
        before,
        gradients: want,
        elements,
    } in cases
    {
        let dir = tempfile::tempdir().unwrap();
        let model = step(file);
        let o = tune(&model, &["--job_type=2", precision], dir.path());
        assert!(o.status.success(), "{file}: {}", text(&o));
        let bank = dir.path().join("bank.redb");
        let report = convert_report(
            &model,
            &[MS, precision, "--bank", bank.to_str().unwrap()],
            dir.path(),
        );
        assert_eq!(report["skipped"], serde_json::json!([]), "{file}: {report}");
        let ops = report["ops"].as_array().unwrap();
        for t in backward {
            assert!(ops.iter().any(|op| op["ir_type"] == *t), "{file}: {t}");
        }
        // Every op is a hit on the rerun but those the simulator has no model of, which the
        // job named as not tuned.
        let out = text(&o);
        let not_tuned: Vec<&str> = out
            .lines()
            .filter(|l| l.contains("(not tuned: runner sim does not support"))
            .filter_map(|l| l.split_whitespace().nth(2))
            .collect();
        let untuned: Vec<&serde_json::Value> = ops
            .iter()
            .filter(|op| not_tuned.contains(&op["op_name"].as_str().unwrap()))
            .map(|op| &op["key"])
            .collect();
        for op in ops.iter().filter(|op| op["result"] != "hit") {
            assert!(
                untuned.contains(&&op["key"]),
                "{file}: {op} missed but was tuned: {out}"
            );
        }
        for op in ops
            .iter()
            .filter(|op| op["ir_type"].as_str().unwrap().contains("Backprop"))
        {
            assert_eq!(op["result"], "hit", "{file}: {op}");
        }

        let o = tune(
            &model,
            &[
                "--job_type=4",
                "--rank_size=8",
                precision,
                "--timeline-out",
                "t.json",
            ],
            dir.path(),
        );
        assert!(o.status.success(), "{file}: {}", text(&o));
        let t: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("t.json")).unwrap()).unwrap();
        let grads = t["gradients"].as_array().unwrap();
        let names: Vec<&str> = grads
            .iter()
            .map(|g| short(g["name"].as_str().unwrap()))
            .collect();
        assert_eq!(grads.len(), want, "{file}: {names:?}");
        let at = |v: &str| {
            names
                .iter()
                .position(|n| *n == v)
                .unwrap_or_else(|| panic!("{file}: {v} in {names:?}"))
        };
        for (earlier, later) in before {
            assert!(
                at(earlier) < at(later),
                "{file}: {earlier} before {later}: {names:?}"
            );
        }
        let ready: Vec<f64> = grads
            .iter()
            .map(|g| g["ready_us"].as_f64().unwrap())
            .collect();
        assert!(ready.windows(2).all(|w| w[0] <= w[1]), "{file}: {ready:?}");
        let bytes: u64 = grads.iter().map(|g| g["bytes"].as_u64().unwrap()).sum();
        assert_eq!(bytes, 4 * elements, "{file}: float32 gradients");
    }
}

/// A step tuned under the precision MindSpore compiles it with on the SoC when the script
/// sets none (on the 910B2, Atlas A2: `must_keep_origin_dtype`, MindSpore's documentation)
/// is hit by the same step converted under that mode — the backward and optimizer ops
/// included; converted under ATC's inference default (`force_fp16`) its fp32 vector ops
/// (ReluGrad, the batch-norm ops, ApplyAdam …) key apart, the silent miss a training step
/// tuned under the inference default would meet.
#[test]
fn a_step_tuned_under_mindspores_training_default_is_hit_by_the_training_run() {
    let default = training_precision_mode(TrainingRun::MindSpore, "Ascend910B2").unwrap();
    assert_eq!(default, "must_keep_origin_dtype");
    let dir = tempfile::tempdir().unwrap();
    let model = step("ms_twin_step.mindir");
    let mode = format!("--precision_mode={default}");
    let o = tune(&model, &["--job_type=2", &mode], dir.path());
    assert!(o.status.success(), "{}", text(&o));
    let bank = dir.path().join("bank.redb");
    let run = convert_report(
        &model,
        &[MS, &mode, "--bank", bank.to_str().unwrap()],
        dir.path(),
    );
    let vector = [
        "ReluGrad",
        "BNTrainingUpdateGrad",
        "BNTrainingReduceGrad",
        "ApplyAdam",
    ];
    for op in run["ops"].as_array().unwrap() {
        let t = op["ir_type"].as_str().unwrap();
        if vector.contains(&t) || t.contains("Backprop") {
            assert_eq!(op["result"], "hit", "{t} under the training default: {op}");
        }
    }
    let inference = convert_report(&model, &[MS], dir.path());
    for t in vector {
        assert!(
            key_set(&run, t).is_disjoint(&key_set(&inference, t)),
            "{t} keys apart under force_fp16"
        );
    }
}
