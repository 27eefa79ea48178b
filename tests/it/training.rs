//! The training scenario: a TensorFlow training step (forward, backward and Adam; made by
//! fixtures/models/training/make_training.py with tensorflow-cpu) tunes as OPAT with every
//! backward and optimizer op tuned, reruns as all hits and converts as all hits; GDAT takes
//! its gradients from the step's own backward ops (checked against the script's record of
//! which op produces each gradient) and splits them exactly optimally, for TensorFlow 1's
//! fused updates and Keras 3's element-wise optimizers alike; a step without updates is
//! refused for GDAT, naming what is missing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output};

use crate::common::training_ops::TRAINING_OPS;
use tunebank::job::{Environment, JobSpec};

const BIN: &str = env!("CARGO_BIN_EXE_tunebank");
const SOC: &str = "--soc_version=Ascend910B2";

fn fixture(name: &str) -> String {
    format!(
        "{}/fixtures/models/training/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn tunebank(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env_remove("ASCEND_WORK_PATH")
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env_remove("AOE_MODE")
        .env_remove("REPEAT_TUNE")
        .output()
        .unwrap()
}

/// The units of the step (name → op types), through the library's job API.
fn step_units(model: &str) -> (Vec<(String, Vec<String>)>, Vec<String>) {
    let atc = [
        SOC.to_string(),
        "--framework=3".into(),
        format!("--model={model}"),
    ];
    let conversion = JobSpec::new(atc).conversion(&Environment::empty()).unwrap();
    let units = conversion
        .unit_keys()
        .into_iter()
        .map(|u| (u.op_name, vec![u.ir_type]))
        .collect();
    let job = JobSpec::new([
        SOC.to_string(),
        "--framework=3".into(),
        format!("--model={model}"),
    ])
    .resolve(&Environment::empty())
    .unwrap();
    let skipped = job
        .skipped()
        .iter()
        .map(|s| format!("{} ({}): {}", s.node_name, s.op_type, s.reason))
        .collect();
    (units, skipped)
}

/// OPAT on the step: every op of the graph is imported (nothing skipped), every backward and
/// optimizer op is a unit and is tuned (a stored record, `add`), the cube backprops over a
/// searched tiling space (more than one trial); a rerun is all hits, and `convert` of the
/// step hits every op.
#[test]
fn opat_tunes_every_backward_and_optimizer_op_of_a_training_step() {
    let step = fixture("small_cnn_step.pb");
    let (units, skipped) = step_units(&step);
    assert!(skipped.is_empty(), "every op of the step maps: {skipped:?}");
    let types: BTreeSet<&str> = units
        .iter()
        .flat_map(|(_, t)| t.iter().flat_map(|t| t.split('+')))
        .collect();
    for op in TRAINING_OPS {
        assert!(types.contains(op), "{op} is a unit of the step: {types:?}");
    }

    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("bank.redb");
    let model = format!("--model={step}");
    let args = [
        "tune",
        "--framework=3",
        &model,
        "--job_type=2",
        SOC,
        "--budget",
        "16",
        "--bank",
        bank.to_str().unwrap(),
    ];
    let first = tunebank(&args, dir.path());
    assert!(first.status.success(), "{}", text(&first));
    let out = text(&first);
    assert!(!out.contains("not tuned"), "every op is tuned: {out}");
    // The table: op, decision, before, after, gain, trials.
    let rows: BTreeMap<&str, Vec<&str>> = out
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 6 && f[0].starts_with("gradient_tape/")).then(|| (f[0], f))
        })
        .collect();
    for (name, f) in &rows {
        if name.contains("Conv2DBackprop") {
            let trials: u32 = f.last().unwrap().parse().unwrap();
            assert!(
                ["add", "unsatisfied"].contains(&f[1]) && trials > 1,
                "{name}: a cube backprop is searched over its tiling space: {f:?}"
            );
        }
    }
    let backprops = rows.keys().filter(|n| n.contains("Conv2DBackprop")).count();
    assert_eq!(backprops, 4, "two filter and two input gradients: {out}");

    let again = tunebank(&args, dir.path());
    assert!(again.status.success(), "{}", text(&again));
    let summary = text(&again);
    let (total, hit) = (field(&summary, "total"), field(&summary, "hit"));
    assert!(total > 30 && hit == total, "a rerun is all hits: {summary}");
    let o = tunebank(
        &[
            "convert",
            "--framework=3",
            &model,
            SOC,
            "--bank",
            bank.to_str().unwrap(),
            "--json",
        ],
        dir.path(),
    );
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ops = report["ops"].as_array().unwrap();
    assert_eq!(ops.len(), units.len(), "{report}");
    assert!(
        ops.iter().all(|r| r["result"] != "miss"),
        "convert of the step hits every op: {report}"
    );
}

/// The count after `name` on the summary line (`tuning successful: total 41  add 35  hit 0 …`).
fn field(out: &str, name: &str) -> usize {
    let line = out
        .lines()
        .find(|l| l.starts_with("tuning successful:"))
        .unwrap_or_else(|| panic!("no summary line: {out}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == name).unwrap();
    words[at + 1].parse().unwrap()
}

/// GDAT of `model` at 8 ranks in a fresh directory: the `--timeline-out` JSON and the
/// directory (holding the result file).
fn gdat_timeline(model: &str) -> (serde_json::Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let model = format!("--model={}", fixture(model));
    let bank = dir.path().join("g.redb");
    let out = tunebank(
        &[
            "tune",
            "--framework=3",
            &model,
            "--job_type=4",
            SOC,
            "--rank_size",
            "8",
            "--bank",
            bank.to_str().unwrap(),
            "--timeline-out",
            "t.json",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out));
    let t = serde_json::from_slice(&std::fs::read(dir.path().join("t.json")).unwrap()).unwrap();
    (t, dir)
}

/// Checks the timeline's gradients against a fixture script's record (one entry per
/// trainable variable: the variable and the op TensorFlow's gradient comes from): one
/// gradient per variable and none else, each produced by the recorded op, ready times in
/// production order within the backward pass.
fn check_gradients(t: &serde_json::Value, record: &[serde_json::Value]) {
    let grads = t["gradients"].as_array().unwrap();
    assert_eq!(grads.len(), record.len(), "one gradient per variable: {t}");
    for r in record {
        let var = r["variable"].as_str().unwrap();
        let op = r["op"].as_str().unwrap();
        let g = grads
            .iter()
            .find(|g| g["name"] == var)
            .unwrap_or_else(|| panic!("{var} has a gradient: {t}"));
        let producer = g["producer"].as_str().unwrap();
        assert!(
            producer == op || producer.starts_with(&format!("{op}/")),
            "{var}: produced by {producer}, TensorFlow's gradient comes from {op}"
        );
    }
    let ready: Vec<f64> = grads
        .iter()
        .map(|g| g["ready_us"].as_f64().unwrap())
        .collect();
    assert!(
        ready[0] > 0.0 && ready.windows(2).all(|w| w[0] <= w[1]),
        "{ready:?}"
    );
    let end = t["backward_end_us"].as_f64().unwrap();
    assert!(*ready.last().unwrap() <= end, "{ready:?} {end}");
}

/// The gradient order of a timeline: each variable's position.
fn position(t: &serde_json::Value, var: &str) -> usize {
    let grads = t["gradients"].as_array().unwrap();
    grads
        .iter()
        .position(|g| g["name"] == var)
        .unwrap_or_else(|| panic!("{var} has a gradient: {t}"))
}

/// GDAT on the step: one gradient per trainable variable, each produced by the op the
/// fixture script recorded (TensorFlow's own gradient tensors), in backward order (the dense
/// layer's first, the first convolution's last), ready when its producer ends; the split is
/// the exact optimum of the all-reduce model, checked here by enumerating every split.
#[test]
fn gdat_takes_the_gradients_from_the_steps_backward_ops() {
    let (t, dir) = gdat_timeline("small_cnn_step.pb");
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("small_cnn_step.gradients.json")).unwrap(),
    )
    .unwrap();
    check_gradients(&t, record.as_array().unwrap());
    let at = |v: &str| position(&t, v);
    assert!(at("fc/kernel").max(at("fc/bias")) < at("conv2/kernel").min(at("conv2/bias")));
    assert!(at("conv2/kernel").max(at("conv2/bias")) < at("bn1/gamma").min(at("bn1/beta")));
    assert!(at("bn1/gamma").max(at("bn1/beta")) < at("conv1/kernel"));
    let grads = t["gradients"].as_array().unwrap();
    let ready: Vec<f64> = grads
        .iter()
        .map(|g| g["ready_us"].as_f64().unwrap())
        .collect();
    let end = t["backward_end_us"].as_f64().unwrap();

    // Every split into at most max_segments contiguous segments, by the timeline's formula.
    let (a, b) = (
        t["allreduce"]["per_segment_us"].as_f64().unwrap(),
        t["allreduce"]["us_per_byte"].as_f64().unwrap(),
    );
    let bytes: Vec<f64> = grads.iter().map(|g| g["bytes"].as_f64().unwrap()).collect();
    let max = t["max_segments"].as_u64().unwrap() as u32;
    let n = grads.len();
    let mut best = f64::INFINITY;
    for mask in 0u32..(1 << (n - 1)) {
        if mask.count_ones() + 1 > max {
            continue;
        }
        let (mut free, mut first) = (0.0f64, 0usize);
        for e in (1..=n).filter(|&e| e == n || mask & (1 << (e - 1)) != 0) {
            let seg: f64 = bytes[first..e].iter().sum();
            free = ready[e - 1].max(free) + a + b * seg;
            first = e;
        }
        best = best.min(free - end);
    }
    let result = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("aoe_result_gdat_"))
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(result).unwrap()).unwrap();
    let gdat = &r.as_object().unwrap().values().next().unwrap()[1]["GDAT"];
    let optimum = gdat["optimum"]["tail(us)"].as_f64().unwrap();
    assert!(
        (optimum - best).abs() < 1e-3,
        "the model optimum {optimum} is the exact optimum {best} (to the report's 3 decimals)"
    );
    let tuned = t["tail_us"].as_f64().unwrap();
    assert!(tuned >= best - 1e-9 && tuned <= t["default_tail_us"].as_f64().unwrap() + 1e-9);
}

/// GDAT on Keras 3 steps, whose optimizers are element-wise (Adam's moments and SGD's
/// momentum read, scaled and assigned; the weights assigned by `AssignSubVariableOp` or
/// `AssignAddVariableOp`): the gradients are TensorFlow's own (the script's record), the
/// batch norm's moving averages and the optimizer's counter get none, and the optimizer's
/// arithmetic is no backward work: the same network's backward pass ends at the same time
/// under Adam (three element-wise updates per variable) and under SGD (two).
#[test]
fn gdat_reads_the_gradients_of_keras3_element_wise_optimizers() {
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("keras3_cnn.gradients.json")).unwrap(),
    )
    .unwrap();
    let mut ends = Vec::new();
    for opt in ["adam", "sgd"] {
        let (t, _dir) = gdat_timeline(&format!("keras3_cnn_{opt}_step.pb"));
        check_gradients(&t, record[opt].as_array().unwrap());
        let at = |v: &str| position(&t, &format!("{opt}_cnn/{v}"));
        assert!(
            at("fc/kernel").max(at("fc/bias")) < at("conv2/kernel"),
            "{t}"
        );
        assert!(
            at("conv2/kernel") < at("bn1/gamma").min(at("bn1/beta")),
            "{t}"
        );
        assert!(
            at("bn1/gamma").max(at("bn1/beta")) < at("conv1/kernel"),
            "{t}"
        );
        ends.push(t["backward_end_us"].as_f64().unwrap());
    }
    let (adam, sgd) = (ends[0], ends[1]);
    assert!(
        (adam - sgd).abs() < 0.01 * sgd,
        "backward ends at {adam} us under Adam and {sgd} us under SGD"
    );
}

/// A step that computes gradients but applies none is refused for GDAT (exit 2, the missing
/// update and some backward ops named, nothing written); the inference graph of the same
/// network still gets the forward-pass estimate.
#[test]
fn gdat_refuses_a_graph_without_optimizer_updates() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("g.redb");
    let model = format!("--model={}", fixture("small_cnn_grads.pb"));
    let args = [
        "tune",
        "--framework=3",
        &model,
        "--job_type=4",
        SOC,
        "--rank_size",
        "8",
        "--bank",
        bank.to_str().unwrap(),
    ];
    let out = tunebank(&args, dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let msg = text(&out);
    assert!(
        msg.contains("no optimizer update") && msg.contains("Conv2DBackprop"),
        "{msg}"
    );
    assert!(!bank.exists(), "nothing written");
    let infer = format!("--model={}", fixture("small_cnn_infer.pb"));
    let mut args = args;
    args[2] = &infer;
    let out = tunebank(&args, dir.path());
    assert!(out.status.success(), "{}", text(&out));
}

/// A Keras 3 step with the plumbing of the public applications' steps (MobileNetV2's padded
/// depthwise convolution, DenseNet's Concatenate, EfficientNet's Dropout, a Transformer's
/// MultiHeadAttention; `keras3_patterns_step.pb`) imports with no op cut off: the padding's
/// gradient slice, ConcatOffset, the stateless random ops, Einsum and the attention gradient's
/// adjoint BatchMatMuls and reductions over computed axes all have static shapes, and their
/// backward cube ops are units.
#[test]
fn a_keras_step_with_the_applications_plumbing_imports_whole() {
    let (units, skipped) = step_units(&fixture("keras3_patterns_step.pb"));
    assert!(skipped.is_empty(), "{skipped:#?}");
    let types: BTreeSet<&str> = units
        .iter()
        .flat_map(|(_, t)| t.iter().map(String::as_str))
        .collect();
    for want in [
        "DepthwiseConv2DBackpropInput",
        "DepthwiseConv2DBackpropFilter",
        "Conv2DBackpropFilter",
        "BatchMatMulV2",
        "StatelessRandomUniformV2",
    ] {
        assert!(
            types.iter().any(|t| t.starts_with(want)),
            "{want} among the units: {types:?}"
        );
    }
    assert!(units.len() > 250, "{} units", units.len());
}

/// The same patterns written by Keras 2 (`tf_keras`) with its fused Adam
/// (`tf_keras_patterns_step.pb`: `ResourceApplyAdam`, a LayerNormalization whose `Reshape`
/// target is the `Prod` of a sliced shape, all-zero constants written with no value) import
/// whole too; in both forms OPAT finds the backward cube ops as units and GDAT one gradient
/// per trainable variable (18), in backward order: the head's first, then the layer norm's,
/// the attention's, the branch's, the depthwise convolution's, the stem's last.
#[test]
fn keras3_and_tf_keras_steps_with_the_plumbing_give_every_gradient_in_backward_order() {
    let (units, skipped) = step_units(&fixture("tf_keras_patterns_step.pb"));
    assert!(skipped.is_empty(), "{skipped:#?}");
    let types: BTreeSet<&str> = units
        .iter()
        .flat_map(|(_, t)| t.iter().map(String::as_str))
        .collect();
    for want in [
        "DepthwiseConv2DBackpropFilter",
        "Conv2DBackpropFilter",
        "BatchMatMulV2",
        "ApplyAdam",
    ] {
        assert!(
            types.iter().any(|t| t.starts_with(want)),
            "{want} among the units: {types:?}"
        );
    }
    for form in ["keras3", "tf_keras"] {
        let (t, _dir) = gdat_timeline(&format!("{form}_patterns_step.pb"));
        let names: Vec<&str> = t["gradients"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 18, "{form}: {names:?}");
        let distinct: BTreeSet<&&str> = names.iter().collect();
        assert_eq!(distinct.len(), 18, "{form}: {names:?}");
        let layer = |n: &str| n.split('/').next().unwrap().to_string();
        let mut order: Vec<String> = names.iter().map(|n| layer(n)).collect();
        order.dedup();
        assert_eq!(
            order,
            ["head", "ln", "mha", "branch", "dw", "stem"],
            "{form}: {names:?}"
        );
    }
}

/// A batch norm whose channel rows (N·H·W of one channel, 64·64·64 floats: 1 MB) fit no
/// tiling of the simulated core (each row is held in the unified buffer) is not tuned, and the
/// job says why on the op's line instead of leaving it `unsatisfied` without a word; the job
/// still succeeds and the ops that fit are tuned.
#[test]
fn an_op_no_tiling_fits_is_named_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let model = format!("--model={}", fixture("small_cnn_step.pb"));
    let bank = dir.path().join("bank.redb");
    let o = tunebank(
        &[
            "tune",
            &model,
            "--framework=3",
            "--input_shape=input:64,64,64,3;labels:64,10",
            "--soc_version=Ascend910B2",
            "--budget",
            "4",
            "--bank",
            bank.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    let line = out
        .lines()
        .find(|l| l.starts_with('[') && l.contains("bn1/BNTrainingReduce"))
        .unwrap_or_else(|| panic!("no progress line for the batch norm's reduce: {out}"));
    assert!(
        line.contains("(not tuned: no tiling fits Ascend910B2"),
        "{line}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with('[') && l.contains(" add ")),
        "the ops that fit are tuned: {out}"
    );
}
