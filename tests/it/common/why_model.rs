//! The op templates the `why` scenarios (`tests/it/inspect_why.rs`, `src/tests/inspect_why.rs`)
//! convert.

use tunebank::key::OpTemplate;

/// A small model: a MatMul fed by graph input `x`, a Conv2D fed by graph input `img`, a Gelu
/// (has a high-precision impl), an fp32 Relu (not a cube op) and an int32 Add.
pub fn model() -> Vec<OpTemplate> {
    serde_json::from_value(serde_json::json!([
        {"node_name": "fc", "op_type": "MatMul",
         "inputs": [{"shape": [-1, 64], "dtype": "float32", "graph_input": "x"},
                    {"shape": [64, 32], "dtype": "float32"}],
         "outputs": [{"shape": [-1, 32], "dtype": "float32"}],
         "attrs": {"transpose_x1": {"bool": false}, "transpose_x2": {"bool": false}}},
        {"node_name": "conv", "op_type": "Conv2D",
         "inputs": [{"shape": [1, 3, 224, 224], "dtype": "float16", "graph_input": "img"},
                    {"shape": [64, 3, 7, 7], "dtype": "float16", "ori_format": "NCHW"}],
         "outputs": [{"shape": [1, 64, 112, 112], "dtype": "float16", "ori_format": "NCHW"}],
         "attrs": {"strides": {"ints": [1, 1, 2, 2]}}},
        {"node_name": "act", "op_type": "Gelu",
         "inputs": [{"shape": [16, 32], "dtype": "float16"}],
         "outputs": [{"shape": [16, 32], "dtype": "float16"}]},
        {"node_name": "relu", "op_type": "Relu",
         "inputs": [{"shape": [16, 32], "dtype": "float32"}],
         "outputs": [{"shape": [16, 32], "dtype": "float32"}]},
        {"node_name": "idx", "op_type": "Add",
         "inputs": [{"shape": [16], "dtype": "int32"}, {"shape": [16], "dtype": "int32"}],
         "outputs": [{"shape": [16], "dtype": "int32"}]}
    ]))
    .unwrap()
}
