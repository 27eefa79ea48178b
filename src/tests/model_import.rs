//! ONNX import: real fixtures decode with shapes only; bad files give errors that name the
//! file and say what is wrong; no byte sequence makes the importer panic.

use std::path::PathBuf;

use tunebank::model::{load_onnx, load_onnx_bytes, ElemType, ModelError};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/models")
        .join(name)
}

#[test]
fn resnet50_imports_with_the_torchvision_topology_and_no_weight_data() {
    let model = load_onnx(fixture("resnet50.onnx")).unwrap();
    assert_eq!(model.opset, 17);
    let counts = model.op_type_counts();
    let expected = [
        ("Conv", 53),
        ("BatchNormalization", 53),
        ("Relu", 49),
        ("Add", 16),
        ("MaxPool", 1),
        ("GlobalAveragePool", 1),
        ("Flatten", 1),
        ("Gemm", 1),
    ];
    for (op, n) in expected {
        assert_eq!(counts.get(op), Some(&n), "{op}");
    }
    assert_eq!(counts.values().sum::<usize>(), 175);
    let w = &model.graph.initializers["conv1.weight"];
    assert_eq!(w.dims, [64, 3, 7, 7]);
    assert_eq!(w.elem_type, ElemType::FLOAT);
    assert!(!w.external);
    assert_eq!(model.graph.inputs.len(), 1);
    assert_eq!(
        model.graph.inputs[0].shape.as_deref(),
        Some(&[1, 3, 224, 224][..])
    );
}

#[test]
fn external_data_initializers_import_although_their_file_is_absent() {
    let path = fixture("bert_layer.onnx");
    assert!(!fixture("bert_layer.weights.bin").exists());
    let model = load_onnx(&path).unwrap();
    let w = &model.graph.initializers["intermediate.dense.weight"];
    assert!(w.external);
    assert_eq!(w.dims, [768, 3072]);
    // Small integer constants keep their values: shape inference needs them.
    assert_eq!(
        model.graph.initializers["heads_shape"].ints.as_deref(),
        Some(&[0, 0, 12, 64][..])
    );
    let names: Vec<&str> = model.graph.inputs.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["hidden_states", "attention_mask"]);
}

#[test]
fn a_truncated_file_is_reported_as_truncated_naming_the_file() {
    let path = fixture("truncated.onnx");
    let err = load_onnx(&path).unwrap_err();
    assert!(matches!(err, ModelError::Truncated { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("truncated.onnx") && text.contains("truncated"),
        "{text}"
    );
}

#[test]
fn garbage_bytes_are_not_an_onnx_model() {
    let err = load_onnx(fixture("garbage.onnx")).unwrap_err();
    assert!(matches!(err, ModelError::NotOnnx { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("garbage.onnx is not an ONNX model"),
        "{err}"
    );
    let err = load_onnx_bytes(b"", "empty.onnx").unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
    // A JSON file decodes as nothing sensible either.
    let err = load_onnx_bytes(br#"{"graph": []}"#, "model.json").unwrap_err();
    assert!(matches!(err, ModelError::NotOnnx { .. }), "{err:?}");
}

#[test]
fn an_unsupported_opset_is_named() {
    let err = load_onnx(fixture("old_opset.onnx")).unwrap_err();
    assert!(
        matches!(err, ModelError::UnsupportedOpset { found: Some(5), .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("opset 5"), "{err}");
}

#[test]
fn a_missing_file_is_a_read_error_naming_it() {
    let err = load_onnx(fixture("no_such_model.onnx")).unwrap_err();
    assert!(matches!(err, ModelError::Read { .. }), "{err:?}");
    assert!(err.to_string().contains("no_such_model.onnx"), "{err}");
}

#[test]
fn every_prefix_of_a_model_is_an_error_or_a_model_never_a_panic() {
    let bytes = std::fs::read(fixture("unknown_op.onnx")).unwrap();
    let mut truncated = 0;
    for len in 1..bytes.len() {
        match load_onnx_bytes(&bytes[..len], "prefix") {
            Err(ModelError::Truncated { .. }) => truncated += 1,
            Err(_) => {}
            Ok(model) => {
                // Cut at a field boundary: whatever decoded must still infer without panicking.
                let _ = model.infer(&Default::default());
            }
        }
    }
    assert!(
        truncated > bytes.len() / 2,
        "{truncated} of {}",
        bytes.len()
    );
}

/// Mutants per fixture; raise with `MODEL_MUTANTS=100000` for a longer soak (run it in a debug
/// build too, where arithmetic overflow panics).
fn mutants() -> usize {
    std::env::var("MODEL_MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

#[test]
fn corrupted_models_never_panic_on_import_or_inference() {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let dynamic = tunebank::key::ResolvedOptions::from_args(
        ["--input_shape=x:-1,3,32,32", "--dynamic_batch_size=1,3"],
        &tunebank::key::FsReader,
    )
    .unwrap();
    for name in ["unknown_op.onnx", "bert_layer.onnx", "resnet50.onnx"] {
        let bytes = std::fs::read(fixture(name)).unwrap();
        for _ in 0..mutants() {
            let mut b = bytes.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() % b.len() as u64) as usize;
                b[at] = next() as u8;
            }
            if let Ok(model) = load_onnx_bytes(&b, "mutant") {
                if let Ok(profiles) = model.tuning_units(&Default::default()) {
                    assert_eq!(profiles.len(), 1);
                }
                let _ = model.tuning_units(&dynamic);
            }
        }
    }
}
