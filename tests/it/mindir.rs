//! MindSpore models in (`--framework=1`): MindIR files written by `mindspore.export` with
//! MindSpore's own ONNX exports of the same networks as twins (fixtures/models/frameworks,
//! made by make_mindir.py there). The small network tuned from its MindIR is all hits for its
//! ONNX twin; the encoder block imports whole and its MatMuls key as the twin's; bad MindSpore
//! input is refused by name with nothing written.

use std::collections::BTreeMap;

use crate::cli::{
    assert_refused, convert_report as convert, keys_by_type as keys, model_fixture, text, tunebank,
    SOC,
};

fn fixture(name: &str) -> String {
    model_fixture(&format!("frameworks/{name}"))
}

/// AOE's OPAT command on the MindIR (`--framework=1`) tunes the network; MindSpore's ONNX
/// export of the same network then finds every op it has under the same key, and every cube
/// op (five convolutions, the depthwise one included, and the Dense) as a hit.
#[test]
fn framework_1_tunes_the_mindir_and_its_onnx_twin_finds_every_op() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("bank.redb");
    let bank = bank.to_str().unwrap();
    let mindir = format!("--model={}", fixture("small_net.mindir"));
    let o = tunebank(
        &[
            "tune",
            &mindir,
            "--framework=1",
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
    let ms = convert(&mindir, &["--bank", bank], dir.path());
    let twin = convert(
        &format!("--model={}", fixture("small_net_ms.onnx")),
        &["--bank", bank],
        dir.path(),
    );
    assert_eq!(ms["skipped"], serde_json::json!([]), "{ms}");
    assert_eq!(keys(&ms), keys(&twin), "one key per op in both files");
    let results = |r: &serde_json::Value| -> Vec<(String, String, String)> {
        let mut v: Vec<_> = r["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    o["ir_type"].as_str().unwrap().to_string(),
                    o["key"].as_str().unwrap().to_string(),
                    o["result"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(results(&ms), results(&twin), "found alike");
    let cube: Vec<_> = results(&twin)
        .into_iter()
        .filter(|(t, _, _)| t.starts_with("Conv2D") || t == "MatMulV2")
        .collect();
    assert_eq!(cube.len(), 6, "{cube:?}");
    assert!(cube.iter().all(|(_, _, r)| r != "miss"), "{cube:?}");
}

/// A transformer encoder block (LayerNorm, Dense on 3-D input, BatchMatMul, Muls, Softmax,
/// GeLU) imports with nothing skipped. Its six Dense MatMuls and its attention-times-values
/// BatchMatMul key as in MindSpore's ONNX export; what differs is what the exporter rewrites:
/// it writes `transpose_b` of the query-key BatchMatMul as a Transpose before a plain MatMul,
/// and spells LayerNorm and GeLU out in element-wise ops, where ATC keeps the fused Ascend IR
/// ops the MindIR names.
#[test]
fn the_encoder_block_imports_whole_and_its_matmuls_key_as_the_onnx_export() {
    let dir = tempfile::tempdir().unwrap();
    let ms = convert(
        &format!("--model={}", fixture("encoder_block.mindir")),
        &[],
        dir.path(),
    );
    let twin = convert(
        &format!("--model={}", fixture("encoder_block_ms.onnx")),
        &[],
        dir.path(),
    );
    assert_eq!(ms["skipped"], serde_json::json!([]), "{ms}");
    let (k, t) = (keys(&ms), keys(&twin));
    assert_eq!(k["MatMulV2"].len(), 6, "q, k, v, proj, fc1, fc2: {k:?}");
    assert_eq!(k["MatMulV2"], t["MatMulV2"]);
    assert_eq!(k["SoftmaxV2"], t["SoftmaxV2"]);
    let bmm = &k["BatchMatMulV2"];
    assert_eq!(bmm.len(), 2, "{k:?}");
    assert_ne!(bmm[0], bmm[1], "q·kᵀ (adj_x2) and a·v differ");
    let shared = bmm
        .iter()
        .filter(|b| t["BatchMatMulV2"].contains(b))
        .count();
    assert_eq!(
        shared, 1,
        "a·v shared, q·kᵀ not: {:?} vs {:?}",
        bmm, t["BatchMatMulV2"]
    );
    assert_eq!(k["LayerNorm"].len(), 2, "{k:?}");
    assert!(
        !t.contains_key("LayerNorm") && t.contains_key("ReduceMeanD"),
        "{t:?}"
    );
    assert!(
        k.contains_key("Gelu") && !t.contains_key("Gelu"),
        "{k:?} vs {t:?}"
    );
}

/// Bad MindSpore input: exit 2, the file named with what was expected, no bank written.
#[test]
fn bad_mindspore_input_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("small_net.mindir")).unwrap();
    let cut = dir.path().join("cut.mindir");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let junk = dir.path().join("junk.mindir");
    std::fs::write(&junk, b"\x08\x96\x01 this is no model").unwrap();
    let air = dir.path().join("net.air");
    std::fs::write(&air, &bytes).unwrap();
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            vec![format!("--model={}", cut.display())],
            vec!["cut.mindir", "truncated"],
        ),
        (
            vec![format!("--model={}", junk.display())],
            vec!["junk.mindir", "MindIR"],
        ),
        (
            vec![format!("--model={}", air.display())],
            vec!["net.air", "AIR", "MINDIR"],
        ),
        (
            vec![
                format!("--model={}", fixture("small_net.mindir")),
                "--framework=5".into(),
            ],
            vec!["--framework=5 (ONNX)", "MindSpore model (1)"],
        ),
        (
            vec![
                format!("--model={}", fixture("small_net.mindir")),
                format!("--weight={}", fixture("small_net.caffemodel")),
            ],
            vec!["--weight=", "MindSpore (1)"],
        ),
    ];
    assert_refused(dir.path(), cases);
}

/// A segmentation-style head (decoder_head.mindir): MindSpore's Conv2DTranspose in each pad
/// mode and its two resizes import with nothing skipped. The transposed convolutions key as in
/// MindSpore's ONNX export of the same head where the two files say the same padding (valid,
/// explicit pads). For `same` they do not: MindSpore's op puts the odd padding row at the end
/// (its `pad_list`), while its ONNX export says SAME_LOWER, which ONNX defines as the odd row at
/// the beginning — two paddings, two keys. The resizes (MindSpore cannot export them to ONNX)
/// key as ONNX `Resize` ops of the same shapes and modes, given as op templates.
#[test]
fn conv_transposes_and_resizes_key_as_their_onnx_forms() {
    let dir = tempfile::tempdir().unwrap();
    let ms = convert(
        &format!("--model={}", fixture("decoder_head.mindir")),
        &["--framework=1"],
        dir.path(),
    );
    let twin = convert(
        &format!("--model={}", fixture("decoder_head_ms.onnx")),
        &[],
        dir.path(),
    );
    assert_eq!(ms["skipped"], serde_json::json!([]), "{ms}");
    let (ms_keys, twin_keys) = (keys(&ms), keys(&twin));
    let ct = |k: &BTreeMap<String, Vec<String>>| k["Conv2DTranspose"].clone();
    assert_eq!((ct(&ms_keys).len(), ct(&twin_keys).len()), (3, 3));
    // In file order: valid, same, pad.
    let in_order = |r: &serde_json::Value| -> Vec<String> {
        r["ops"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["ir_type"] == "Conv2DTranspose")
            .map(|o| o["key"].as_str().unwrap().to_owned())
            .collect()
    };
    let (a, b) = (in_order(&ms), in_order(&twin));
    assert_eq!(a[0], b[0], "valid");
    assert_ne!(
        a[1], b[1],
        "same: MindSpore pads the end, ONNX's SAME_LOWER the beginning"
    );
    assert_eq!(a[2], b[2], "explicit pads");
    assert_eq!(ms_keys["Conv2D+Relu"], twin_keys["Conv2D+Relu"]);

    let resize = |mode: &str, ctm: &str| {
        serde_json::json!({
            "node_name": mode, "op_type": "Resize",
            "inputs": [
                {"shape": [1, 4, 64, 64], "dtype": "float32"},
                {"shape": [0], "dtype": "float32"},
                {"shape": [4], "dtype": "float32"}
            ],
            "outputs": [{"shape": [1, 4, 128, 128], "dtype": "float32"}],
            "attrs": {"mode": {"str": mode}, "coordinate_transformation_mode": {"str": ctm}}
        })
    };
    let templates = dir.path().join("resize.json");
    let list = serde_json::json!([
        resize("linear", "align_corners"),
        resize("nearest", "asymmetric")
    ]);
    std::fs::write(&templates, list.to_string()).unwrap();
    let o = tunebank(
        &["key", "--op", templates.to_str().unwrap(), SOC, "--json"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", text(&o));
    let onnx: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        ms_keys["ResizeBilinearV2"],
        [onnx[0]["key"].as_str().unwrap()]
    );
    assert_eq!(
        ms_keys["ResizeNearestNeighborV2"],
        [onnx[1]["key"].as_str().unwrap()]
    );
}
