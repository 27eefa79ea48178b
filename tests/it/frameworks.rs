//! Caffe, TensorFlow and MindSpore models in: one network written in five files (TensorFlow
//! NHWC and NCHW `.pb`, its tf2onnx export, the Caffe prototxt + caffemodel, MindSpore's
//! MindIR; fixtures/models/frameworks, made by make_frameworks.py and make_mindir.py there)
//! gives one key per op; AOE's Caffe ResNet-50 command tunes
//! and reruns as all hits; a TensorFlow graph hits what its ONNX twin tuned; bad files are
//! named errors with nothing written.

use std::collections::BTreeMap;

use crate::cli::{assert_refused, model_fixture, text, tunebank, SOC};

use tunebank::job::{Environment, JobSpec};

fn fixture(name: &str) -> String {
    model_fixture(&format!("frameworks/{name}"))
}

/// The model flags of each file of the small network.
fn small_net() -> Vec<(&'static str, Vec<String>)> {
    vec![
        (
            "tensorflow",
            vec![format!("--model={}", fixture("small_net.pb"))],
        ),
        // ATC's rule: a TensorFlow graph is NHWC unless --input_format says otherwise.
        (
            "tensorflow-nchw",
            vec![
                format!("--model={}", fixture("small_net_nchw.pb")),
                "--framework=3".into(),
                "--input_format=NCHW".into(),
            ],
        ),
        (
            "onnx",
            vec![format!("--model={}", fixture("small_net.onnx"))],
        ),
        (
            "caffe",
            vec![
                format!("--model={}", fixture("small_net.prototxt")),
                format!("--weight={}", fixture("small_net.caffemodel")),
                "--framework=0".into(),
            ],
        ),
        (
            "mindspore",
            vec![
                format!("--model={}", fixture("small_net.mindir")),
                "--framework=1".into(),
            ],
        ),
    ]
}

/// (IR type → keys, in model order) of a conversion.
fn keys(model: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut atc = vec![SOC.to_string()];
    atc.extend(model.iter().cloned());
    let conversion = JobSpec::new(atc).conversion(&Environment::empty()).unwrap();
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for u in conversion.unit_keys() {
        out.entry(u.ir_type).or_default().push(u.key);
    }
    out.values_mut().for_each(|v| v.sort());
    out
}

/// Whether a unit's anchor runs on the cube (convolutions, matmuls).
fn is_cube(ir_type: &str) -> bool {
    let anchor = ir_type.split('+').next().unwrap_or("");
    ["Conv2D", "MatMulV2", "BatchMatMulV2", "Conv2DTranspose"].contains(&anchor)
}

/// The keys of `a` and `b` agree for every IR type but `except`, and differ for those.
fn agree_but(
    a: &BTreeMap<String, Vec<String>>,
    b: &BTreeMap<String, Vec<String>>,
    except: &[&str],
    what: &str,
) {
    let types: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for t in types {
        let (x, y) = (a.get(t), b.get(t));
        if except.contains(&t.as_str()) {
            assert_ne!(x, y, "{what}: {t} was expected to differ");
        } else {
            assert_eq!(x, y, "{what}: {t}");
        }
    }
}

/// One network, five files in four formats: every convolution has one key in all of them, and
/// every other op too but for the differences each framework really makes (asserted to differ,
/// so a change in either direction is seen).
#[test]
fn one_network_gets_one_key_per_op_from_caffe_tensorflow_onnx_and_mindspore() {
    let all: Vec<(&str, BTreeMap<String, Vec<String>>)> = small_net()
        .into_iter()
        .map(|(n, m)| (n, keys(&m)))
        .collect();
    let [(_, tf), (_, nchw), (_, onnx), (_, caffe), (_, mindspore)] = &all[..] else {
        unreachable!()
    };
    let convs = |k: &BTreeMap<String, Vec<String>>| -> usize {
        k.iter()
            .filter(|(t, _)| t.starts_with("Conv2D"))
            .map(|(_, v)| v.len())
            .sum()
    };
    assert_eq!(
        convs(tf),
        5,
        "conv1, conv2a, conv2b, the depthwise dw, conv3: {tf:?}"
    );
    assert_eq!(tf.get("MatMulV2").map(Vec::len), Some(1), "{tf:?}");
    // The NCHW graph needs no transpose at its input, nor before the Reshape to [1, 64].
    assert_eq!(tf["Transpose"].len(), 2, "{tf:?}");
    agree_but(tf, nchw, &["Transpose"], "NHWC vs NCHW TensorFlow");
    // tf2onnx's optimizer drops the transpose before the Reshape (H = W = 1), and its input
    // transpose is keyed under ONNX's default --input_format (NCHW), not TensorFlow's NHWC.
    assert_eq!(onnx["Transpose"].len(), 1, "{onnx:?}");
    agree_but(tf, onnx, &["Transpose"], "TensorFlow vs its ONNX export");
    // Caffe takes NCHW input (no transpose); its pooling rounds up (ceil_mode 1: the same
    // output shapes here, but another attribute); its InnerProduct weight is [out, in], so the
    // MatMul transposes its second operand, where TensorFlow's weight is [in, out].
    assert!(!caffe.contains_key("Transpose"), "{caffe:?}");
    agree_but(
        tf,
        caffe,
        &["Transpose", "MaxPoolV3", "AvgPoolV2", "MatMulV2"],
        "TensorFlow vs Caffe",
    );
    // MindSpore is NCHW (no transpose) and floors its pooling as TensorFlow does; its Dense
    // weight is [out, in], as Caffe's InnerProduct's: the MatMul is Caffe's, the pooling
    // TensorFlow's.
    assert!(!mindspore.contains_key("Transpose"), "{mindspore:?}");
    agree_but(
        tf,
        mindspore,
        &["Transpose", "MatMulV2"],
        "TensorFlow vs MindSpore",
    );
    agree_but(
        caffe,
        mindspore,
        &["MaxPoolV3", "AvgPoolV2"],
        "Caffe vs MindSpore",
    );
}

/// Tune the ONNX export, then convert it and the TensorFlow graph against that bank: each
/// TensorFlow op finds what its ONNX twin finds (the two importers meet in one NCHW IR), and
/// every cube op is a hit, the depthwise convolution (group 64, one GEMM per group on the
/// simulated cube) included.
#[test]
fn the_tensorflow_graph_hits_every_cube_op_its_onnx_twin_tuned() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("bank.redb");
    let bank = bank.to_str().unwrap();
    let onnx = format!("--model={}", fixture("small_net.onnx"));
    let o = tunebank(
        &[
            "tune",
            &onnx,
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
    let convert = |model: &str| -> BTreeMap<String, String> {
        let o = tunebank(
            &["convert", model, SOC, "--bank", bank, "--json"],
            dir.path(),
        );
        assert!(o.status.success(), "{}", text(&o));
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        report["ops"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| is_cube(r["ir_type"].as_str().unwrap()))
            .map(|r| {
                (
                    r["key"].as_str().unwrap().to_string(),
                    r["result"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let twin = convert(&onnx);
    let tf = convert(&format!("--model={}", fixture("small_net.pb")));
    assert_eq!(tf, twin, "the same cube ops, found alike");
    let hits = tf.values().filter(|r| *r != "miss").count();
    assert_eq!(
        (hits, tf.len()),
        (6, 6),
        "every cube op hits, the depthwise one too: {tf:?}"
    );
}

/// AOE's introduction: `--framework=0 --model=resnet50.prototxt --weight=resnet50.caffemodel
/// --job_type=2` writes a result file; run again, every op is a hit.
#[test]
fn aoes_caffe_resnet50_command_tunes_and_a_rerun_is_all_hits() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("bank.redb");
    let model = format!("--model={}", fixture("resnet50.prototxt"));
    let weight = format!("--weight={}", fixture("resnet50.caffemodel"));
    let args = [
        "tune",
        "--framework=0",
        &model,
        &weight,
        "--job_type=2",
        SOC,
        "--budget",
        "2",
        "--strategy",
        "random",
        "--bank",
        bank.to_str().unwrap(),
    ];
    let first = tunebank(&args, dir.path());
    assert!(first.status.success(), "{}", text(&first));
    let results: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("aoe_result_opat_")
        })
        .collect();
    assert_eq!(results.len(), 1, "{}", text(&first));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&results[0]).unwrap()).unwrap();
    let (k, list) = v.as_object().unwrap().iter().next().unwrap();
    assert!(k.starts_with("report_"), "{k}");
    let opat = &list[1]["OPAT"];
    assert_eq!(
        opat["repo_summary"]["total_num"], 28,
        "ResNet-50's 28 distinct units (73 ops, keys shared): {opat}"
    );
    let modified = opat["repo_modified_operators"].as_array().unwrap();
    assert!(!modified.is_empty(), "{opat}");
    for op in modified {
        let name = op["op_name"].as_str().unwrap();
        assert!(
            ["conv1", "res", "pool", "fc1000"]
                .iter()
                .any(|p| name.starts_with(p)),
            "units are named by their Caffe layers: {name}"
        );
    }
    let s = String::from_utf8_lossy(&first.stderr).to_string()
        + &String::from_utf8_lossy(&first.stdout);
    assert!(!s.contains("skipped"), "every ResNet-50 layer maps: {s}");

    let again = tunebank(&args, dir.path());
    assert!(again.status.success(), "{}", text(&again));
    let o = tunebank(
        &[
            "convert",
            "--framework=0",
            &model,
            &weight,
            SOC,
            "--bank",
            bank.to_str().unwrap(),
            "--json",
        ],
        dir.path(),
    );
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ops = report["ops"].as_array().unwrap();
    assert!(ops.len() > 50, "{report}");
    assert!(
        ops.iter().all(|r| r["result"] != "miss"),
        "all hits after tuning: {report}"
    );
}

/// Bad files and flags: exit 2, the file (and layer, line, column) named, no bank written.
#[test]
fn bad_caffe_and_tensorflow_input_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cut = |src: &str, name: &str| {
        let bytes = std::fs::read(fixture(src)).unwrap();
        let p = dir.path().join(name);
        std::fs::write(&p, &bytes[..bytes.len() * 2 / 3]).unwrap();
        p.to_str().unwrap().to_string()
    };
    let bad_text = dir.path().join("bad.prototxt");
    let prototxt = std::fs::read_to_string(fixture("small_net.prototxt")).unwrap();
    std::fs::write(
        &bad_text,
        prototxt.replacen("layer {", "layer {\n  name \"oops\"", 2),
    )
    .unwrap();
    let truncated_model = cut("small_net.caffemodel", "cut.caffemodel");
    let truncated_pb = cut("small_net.pb", "cut.pb");
    let proto = fixture("small_net.prototxt");
    let weight = fixture("small_net.caffemodel");
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            vec![format!("--model={proto}"), "--framework=3".into()],
            vec!["--framework=3 (TensorFlow)", "small_net.prototxt", "Caffe"],
        ),
        (
            vec![format!("--model={proto}"), "--framework=0".into()],
            vec!["--weight"],
        ),
        (
            vec![
                format!("--model={}", fixture("small_net.pb")),
                format!("--weight={weight}"),
            ],
            vec!["--weight=", "TensorFlow"],
        ),
        (
            vec![
                format!("--model={proto}"),
                format!("--weight={truncated_model}"),
            ],
            vec!["cut.caffemodel", "truncated"],
        ),
        (
            vec![format!("--model={truncated_pb}")],
            vec!["cut.pb", "truncated"],
        ),
        (
            vec![
                format!("--model={}", bad_text.display()),
                format!("--weight={weight}"),
            ],
            vec!["bad.prototxt:", "syntax error", "expected ':' or '{'"],
        ),
        (
            vec![
                format!("--model={}", fixture("resnet50.prototxt")),
                format!("--weight={weight}"),
            ],
            vec!["--weight=", "layer \"conv1\" (Convolution)"],
        ),
    ];
    assert_refused(dir.path(), cases);
}
