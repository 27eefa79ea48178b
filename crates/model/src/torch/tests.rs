//! The `.pt2` reader on programs written here in the schema's JSON (the committed fixtures,
//! made by PyTorch itself, are read in `tests/it/pytorch.rs`).

use std::io::Write;

use super::*;
use tunebank_key::{FsReader, ResolvedOptions};

fn infer(m: &Model) -> crate::InferredGraph {
    let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap();
    m.infer(&options).unwrap().remove(0)
}

/// A `.pt2` archive holding `program` as `net/models/model.json`, entries stored.
fn archive(program: &serde_json::Value) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    let mut z = zip::ZipWriter::new(&mut buf);
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    z.start_file("net/archive_format", opts).unwrap();
    z.write_all(b"pt2").unwrap();
    z.start_file("net/models/model.json", opts).unwrap();
    z.write_all(program.to_string().as_bytes()).unwrap();
    z.finish().unwrap();
    buf.into_inner()
}

fn meta(dims: &[i64]) -> serde_json::Value {
    let sizes: Vec<_> = dims
        .iter()
        .map(|d| serde_json::json!({"as_int": d}))
        .collect();
    serde_json::json!({"dtype": 7, "sizes": sizes})
}

fn tensor(name: &str) -> serde_json::Value {
    serde_json::json!({"as_tensor": {"name": name}})
}

/// A program: `nodes` over the parameter `w` [8, 3, 3, 3] and the input `x` [2, 3, 8, 8].
fn program(nodes: serde_json::Value, tensors: &[(&str, &[i64])], major: i64) -> serde_json::Value {
    let mut values = serde_json::Map::new();
    for (n, d) in tensors {
        values.insert(n.to_string(), meta(d));
    }
    serde_json::json!({
        "schema_version": {"major": major, "minor": 3},
        "graph_module": {
            "graph": {"nodes": nodes, "tensor_values": values, "outputs": [tensor("out")]},
            "signature": {"input_specs": [
                {"parameter": {"arg": {"name": "p_w"}, "parameter_name": "conv.weight"}},
                {"user_input": {"arg": tensor("x")}}
            ]}
        }
    })
}

fn node(target: &str, inputs: serde_json::Value, outputs: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"target": target, "inputs": inputs, "outputs": outputs})
}

fn arg(name: &str, a: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"name": name, "arg": a})
}

const TENSORS: &[(&str, &[i64])] = &[
    ("p_w", &[8, 3, 3, 3]),
    ("x", &[2, 3, 8, 8]),
    ("conv", &[2, 8, 4, 4]),
    ("out", &[2, 8, 4, 4]),
];

fn conv_then(second: serde_json::Value) -> serde_json::Value {
    let conv = node(
        "torch.ops.aten.convolution.default",
        serde_json::json!([
            arg("input", tensor("x")),
            arg("weight", tensor("p_w")),
            arg("bias", serde_json::json!({"as_none": true})),
            arg("stride", serde_json::json!({"as_ints": [2, 2]})),
            arg("padding", serde_json::json!({"as_ints": [1, 1]})),
            arg("dilation", serde_json::json!({"as_ints": [1, 1]})),
            arg("transposed", serde_json::json!({"as_bool": false})),
            arg("output_padding", serde_json::json!({"as_ints": [0, 0]})),
            arg("groups", serde_json::json!({"as_int": 1})),
        ]),
        serde_json::json!([tensor("conv")]),
    );
    serde_json::json!([conv, second])
}

#[test]
fn a_convolution_keeps_its_window_and_parameters_are_named_by_module_path() {
    let relu = node(
        "torch.ops.aten.relu.default",
        serde_json::json!([arg("self", tensor("conv"))]),
        serde_json::json!([tensor("out")]),
    );
    let bytes = archive(&program(conv_then(relu), TENSORS, 8));
    let m = load_pt2_bytes(&bytes, "net.pt2").unwrap();
    let conv = &m.graph.nodes[0];
    assert_eq!(conv.op_type, "Conv");
    assert_eq!(conv.inputs, ["x", "conv.weight"]);
    assert_eq!(conv.attrs["pads"], Attr::Ints(vec![1, 1, 1, 1]));
    assert_eq!(conv.attrs["strides"], Attr::Ints(vec![2, 2]));
    assert!(m.graph.initializers.contains_key("conv.weight"));
    let inferred = infer(&m);
    assert!(inferred.skipped.is_empty(), "{:?}", inferred.skipped);
    assert_eq!(inferred.tensors["out"].shape, vec![2, 8, 4, 4]);
}

#[test]
fn an_unmapped_op_is_named_and_what_follows_keeps_the_programs_shapes() {
    let odd = node(
        "torch.ops.aten.special_bessel_j0.default",
        serde_json::json!([arg("self", tensor("conv"))]),
        serde_json::json!([tensor("odd")]),
    );
    let relu = node(
        "torch.ops.aten.relu.default",
        serde_json::json!([arg("self", tensor("odd"))]),
        serde_json::json!([tensor("out")]),
    );
    let mut nodes = conv_then(odd);
    nodes.as_array_mut().unwrap().push(relu);
    let mut tensors = TENSORS.to_vec();
    tensors.push(("odd", &[2, 8, 4, 4]));
    let m = load_pt2_bytes(&archive(&program(nodes, &tensors, 8)), "net.pt2").unwrap();
    let inferred = infer(&m);
    assert_eq!(inferred.skipped.len(), 1, "{:?}", inferred.skipped);
    assert_eq!(inferred.skipped[0].op_type, "special_bessel_j0");
    assert_eq!(inferred.tensors["out"].shape, vec![2, 8, 4, 4]);
}

#[test]
fn another_schema_version_and_what_is_no_archive_are_refused_by_name() {
    let relu = node(
        "torch.ops.aten.relu.default",
        serde_json::json!([arg("self", tensor("conv"))]),
        serde_json::json!([tensor("out")]),
    );
    let e = load_pt2_bytes(&archive(&program(conv_then(relu), TENSORS, 9)), "old.pt2")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("old.pt2") && e.contains("schema version 9.3") && e.contains("expected 8.x"),
        "{e}"
    );
    let e = load_pt2_bytes(b"not a zip", "x.pt2")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("x.pt2") && e.contains("not a ZIP archive"),
        "{e}"
    );
    let mut buf = std::io::Cursor::new(Vec::new());
    let mut z = zip::ZipWriter::new(&mut buf);
    z.start_file("a.txt", zip::write::SimpleFileOptions::default())
        .unwrap();
    z.finish().unwrap();
    let e = load_pt2_bytes(buf.get_ref(), "empty.pt2")
        .unwrap_err()
        .to_string();
    assert!(e.contains("has no models/model.json"), "{e}");
}

/// An optimizer's `_foreach_` ops, as a compiled `optimizer.step` writes them: each is the op
/// once per tensor of its lists; an in-place add on parameters becomes one `AssignAdd` per
/// parameter of the scaled operand, a list-returning op one node per output.
#[test]
fn foreach_ops_are_one_op_per_tensor_and_in_place_adds_write_each_parameter() {
    let list = |names: &[&str]| {
        let ts: Vec<_> = names
            .iter()
            .map(|n| serde_json::json!({"name": n}))
            .collect();
        serde_json::json!({"as_tensors": ts})
    };
    let sqrt = node(
        "torch.ops.aten._foreach_sqrt.default",
        serde_json::json!([arg("self", list(&["g_a", "g_b"]))]),
        serde_json::json!([list(&["s_a", "s_b"])]),
    );
    let add = node(
        "torch.ops.aten._foreach_add_.List",
        serde_json::json!([
            arg("self", list(&["p_a", "p_b"])),
            arg("other", list(&["s_a", "s_b"])),
            arg("alpha", serde_json::json!({"as_float": -0.1})),
        ]),
        serde_json::json!([]),
    );
    let mut values = serde_json::Map::new();
    for (n, d) in [
        ("p_a", vec![4]),
        ("p_b", vec![2, 3]),
        ("g_a", vec![4]),
        ("g_b", vec![2, 3]),
        ("s_a", vec![4]),
        ("s_b", vec![2, 3]),
    ] {
        values.insert(n.into(), meta(&d));
    }
    let program = serde_json::json!({
        "schema_version": {"major": 8, "minor": 0},
        "graph_module": {
            "graph": {"nodes": [sqrt, add], "tensor_values": values, "outputs": [tensor("s_a")]},
            "signature": {"input_specs": [
                {"parameter": {"arg": {"name": "p_a"}, "parameter_name": "a"}},
                {"parameter": {"arg": {"name": "p_b"}, "parameter_name": "b"}},
                {"user_input": {"arg": tensor("g_a")}},
                {"user_input": {"arg": tensor("g_b")}}
            ]}
        }
    });
    let m = load_pt2_bytes(&archive(&program), "step.pt2").unwrap();
    let ops: Vec<(&str, Vec<&str>)> = m
        .graph
        .nodes
        .iter()
        .map(|n| {
            let ins = n.inputs.iter().map(String::as_str).collect();
            (n.op_type.as_str(), ins)
        })
        .collect();
    let sqrts: Vec<_> = ops.iter().filter(|(t, _)| *t == "Sqrt").collect();
    assert_eq!(sqrts.len(), 2, "{ops:?}");
    let writes: Vec<&str> = ops
        .iter()
        .filter(|(t, _)| *t == "AssignAdd")
        .map(|(_, ins)| ins[0])
        .collect();
    assert_eq!(writes, ["a", "b"], "{ops:?}");
    // Each write adds its operand scaled by alpha: a Mul of the sqrt's output.
    let scaled = ops
        .iter()
        .filter(|(t, ins)| *t == "Mul" && (ins[0] == "s_a" || ins[0] == "s_b"))
        .count();
    assert_eq!(scaled, 2, "{ops:?}");
    let inferred = infer(&m);
    assert!(inferred.skipped.is_empty(), "{:?}", inferred.skipped);
}
