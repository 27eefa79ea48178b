//! Shape ranges end to end (`--input_shape=x:1~4,8~64,64`): OPAT tunes the encoder block
//! exported with a dynamic batch and sequence (fixtures/models/pytorch/encoder_block_dyn.onnx)
//! at the range's representative shapes, the result file lists them, and a conversion at one of
//! them hits every op the job stored; a range on a dim the model fixes, or a range with its
//! ends reversed, is refused by name with nothing written.

use std::path::Path;

use crate::cli::{assert_refused, model_fixture, text, tunebank, SOC};

fn result_file(dir: &Path) -> serde_json::Value {
    let path = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().contains("aoe_result_opat"))
        .expect("a result file");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_range_is_tuned_at_its_shapes_and_served_at_each() {
    let dir = tempfile::tempdir().unwrap();
    let model = format!(
        "--model={}",
        model_fixture("pytorch/encoder_block_dyn.onnx")
    );
    let bank = dir.path().join("bank.redb");
    let bank = bank.to_str().unwrap();
    let o = tunebank(
        &[
            "tune",
            &model,
            SOC,
            "--input_shape=x:1~4,8~64,64",
            "--budget",
            "4",
            "--bank",
            bank,
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let doc = result_file(dir.path());
    let (entries,) = (doc.as_object().unwrap().values().next().unwrap(),);
    let opat = &entries[1]["OPAT"];
    let shapes: Vec<Vec<i64>> = opat["tunebank_tuned_shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| serde_json::from_value(s["x"].clone()).unwrap())
        .collect();
    let mut want = Vec::new();
    for b in [1, 2, 4] {
        for s in [8, 16, 32, 64] {
            want.push(vec![b, s, 64]);
        }
    }
    assert_eq!(shapes, want);

    // A conversion at one of the tuned shapes: every cube op hits.
    let o = tunebank(
        &[
            "convert",
            &model,
            SOC,
            "--input_shape=x:2,32,64",
            "--bank",
            bank,
            "--json",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cube: Vec<&serde_json::Value> = report["ops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["ir_type"].as_str().unwrap().contains("MatMul"))
        .collect();
    assert!(cube.len() >= 6, "{report}");
    for r in cube {
        assert_eq!(r["result"], "hit", "{r}");
    }
}

#[test]
fn a_range_on_a_fixed_dim_or_reversed_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let fixed = format!("--model={}", model_fixture("pytorch/encoder_block.onnx"));
    let dynamic = format!(
        "--model={}",
        model_fixture("pytorch/encoder_block_dyn.onnx")
    );
    assert_refused(
        dir.path(),
        vec![
            (
                vec![fixed, "--input_shape=x:1~4,16,64".into()],
                vec!["ranges dim 0 over 1~4", "the model fixes it at 2"],
            ),
            (
                vec![dynamic, "--input_shape=x:4~1,16,64".into()],
                vec!["--input_shape=\"x:4~1,16,64\"", "1 ≤ lo ≤ hi"],
            ),
        ],
    );
}
