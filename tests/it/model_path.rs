//! AOE's `--model_path=DIR`: every model file of a folder tuned in one job with one set of
//! options and one result file; each unit names its file, keys are each model's own, a bad
//! file is reported by name and the rest tuned, and a folder with no model is refused.

use std::path::Path;

use crate::cli::{assert_refused, model_fixture, text, tunebank, SOC};

/// `convert --json` of the model flags: (op name, IR type, result) of every op.
fn convert(model: &str, bank: &str, cwd: &Path) -> Vec<(String, String, String)> {
    let o = tunebank(&["convert", model, SOC, "--bank", bank, "--json"], cwd);
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    report["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            (s("op_name"), s("ir_type"), s("result"))
        })
        .collect()
}

fn is_cube(t: &str) -> bool {
    t.starts_with("Conv2D") || t.starts_with("MatMulV2")
}

/// A folder of three good models (ONNX, Caffe with its caffemodel, a PyTorch `.pt2`), a file that is no model
/// at all under a model's name, an ONNX export of another opset, and a text file: one job
/// tunes both good models into one result file whose units name their files, reports the two
/// bad files by name, and each model converted alone then hits every cube op.
#[test]
fn a_folder_of_models_is_one_job_and_bad_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    std::fs::create_dir(&models).unwrap();
    for (from, to) in [
        ("frameworks/small_net.onnx", "small_net.onnx"),
        ("caffe/se_block.prototxt", "se_block.prototxt"),
        ("caffe/se_block.caffemodel", "se_block.caffemodel"),
        ("garbage.onnx", "garbage.onnx"),
        ("frameworks/small_net_ms.onnx", "small_net_ms.onnx"),
        ("pytorch/small_cnn.pt2", "small_cnn.pt2"),
    ] {
        std::fs::copy(model_fixture(from), models.join(to)).unwrap();
    }
    std::fs::write(models.join("notes.txt"), "not a model").unwrap();
    let folder = format!("--model_path={}", models.display());
    let bank = dir.path().join("bank.redb");
    let bank = bank.to_str().unwrap();
    let o = tunebank(
        &[
            "tune",
            &folder,
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
    let out = text(&o);
    for bad in [
        "skipped garbage.onnx (ModelFile)",
        "skipped small_net_ms.onnx (ModelFile): ModelFile is not imported: opset 11, where",
    ] {
        assert!(out.contains(bad), "expected {bad:?} in: {out}");
    }
    assert!(!out.contains("notes.txt"), "{out}");
    let result = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().contains("aoe_result_opat"))
        .expect("one result file");
    let body = std::fs::read_to_string(result).unwrap();
    for file in ["small_net.onnx/", "se_block.prototxt/", "small_cnn.pt2/"] {
        assert!(body.contains(file), "the result file names {file}: {body}");
    }

    let all = convert(&folder, bank, dir.path());
    let cube: Vec<_> = all.iter().filter(|(_, t, _)| is_cube(t)).collect();
    assert!(cube.len() >= 8, "{all:?}");
    assert!(cube.iter().all(|(_, _, r)| r != "miss"), "{cube:?}");
    for model in [
        vec![format!(
            "--model={}",
            models.join("small_net.onnx").display()
        )],
        vec![
            format!("--model={}", models.join("se_block.prototxt").display()),
            format!("--weight={}", models.join("se_block.caffemodel").display()),
        ],
        vec![format!(
            "--model={}",
            models.join("small_cnn.pt2").display()
        )],
    ] {
        let mut args = vec![
            "convert".to_string(),
            SOC.into(),
            "--bank".into(),
            bank.into(),
            "--json".into(),
        ];
        args.extend(model.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = tunebank(&args, dir.path());
        assert!(o.status.success(), "{}", text(&o));
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        for r in report["ops"].as_array().unwrap() {
            if is_cube(r["ir_type"].as_str().unwrap()) {
                assert_ne!(r["result"], "miss", "{model:?}: {r}");
            }
        }
    }
}

/// A folder with no model file, a folder whose every model is bad, `--model_path` with
/// `--model`, a missing folder, and a `--framework` a file of the folder is not of: exit 2 naming the folder and what was expected; nothing written.
#[test]
fn a_folder_without_a_model_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("readme.txt"), "nothing").unwrap();
    let bad = dir.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    std::fs::copy(model_fixture("garbage.onnx"), bad.join("garbage.onnx")).unwrap();
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            vec![format!("--model_path={}", empty.display())],
            vec!["--model_path=", "holds no model file"],
        ),
        (
            vec![format!("--model_path={}", bad.display())],
            vec![
                "--model_path=",
                "no model file of it imports",
                "garbage.onnx",
            ],
        ),
        (
            vec![
                format!("--model_path={}", empty.display()),
                format!("--model={}", model_fixture("frameworks/small_net.onnx")),
            ],
            vec!["--model_path=", "--model", "not both"],
        ),
        (
            vec![format!(
                "--model_path={}",
                dir.path().join("absent").display()
            )],
            vec!["absent"],
        ),
        (
            vec![
                format!("--model_path={}", bad.display()),
                "--framework=3".into(),
            ],
            vec![
                "--framework=3 (TensorFlow) with --model_path=",
                "garbage.onnx is ONNX: expected every model file of the folder to be TensorFlow",
            ],
        ),
    ];
    assert_refused(dir.path(), cases);
}
