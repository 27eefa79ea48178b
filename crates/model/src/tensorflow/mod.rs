//! TensorFlow import (`--framework=3`): a frozen `GraphDef` `.pb` into the same graph IR the
//! ONNX importer builds (ONNX op types at opset 17), **in NCHW**, so a Conv2D of an
//! NHWC graph and the same convolution of an NCHW ONNX or Caffe graph become one op with one
//! key.
//!
//! Layout: each TensorFlow tensor is held in the IR either as it is (`Plain`) or, for the 4-D
//! tensors an NHWC op makes, as its NCHW transpose (`Nchw`). An NHWC op (Conv2D, pooling,
//! FusedBatchNorm, BiasAdd …) reads its input through one `Transpose` to NCHW (made once per
//! tensor, as tf2onnx does at a graph input) and yields NCHW. Element-wise ops pass the layout
//! through (a per-channel constant is reshaped to `[C,1,1]`); Concat, Mean/Sum, Squeeze, Pad
//! and Softmax have their axes or paddings remapped; any other op reads its input transposed
//! back to NHWC. Weights are only read for their shapes: HWIO filters become OIHW initializers
//! by their dims alone.
//!
//! | TensorFlow | graph IR |
//! |---|---|
//! | Placeholder (shape from the graph, or `--input_shape`) | graph input |
//! | Const | initializer (dims; integer values when small) |
//! | Conv2D, DepthwiseConv2dNative | `Conv`, `Conv` (group = channels); a BiasAdd right after folds into their bias input |
//! | Conv3D | `Conv` (5-D, NCDHW between two `Transpose`s for an NDHWC graph; a `BiasAdd` after it, its bias only reshaped from a constant, becomes the `Conv`'s bias) |
//! | MatMul, BatchMatMul/V2 | `MatMul` (`Gemm` for transposed 2-D operands; a BatchMatMul's adjoints as `adj_x1`/`adj_x2`) |
//! | BiasAdd | `Add` (or folded) |
//! | FusedBatchNorm/V2/V3 | `BatchNormalization` |
//! | Relu, Relu6, Elu, Selu, Sigmoid, Tanh, Softplus, LeakyRelu | `Relu`, `Clip(0,6)`, `Elu` … (the Swish form `x * Sigmoid(x)` stays two ops) |
//! | AddV2/Add, Mul, Sub, RealDiv, Maximum, Minimum, Pow | `Add`, `Mul`, `Sub`, `Div`, `Max`, `Min`, `Pow` |
//! | DivNoNan, SquaredDifference, Rsqrt, Square | the same names (Ascend IR; ONNX has none) |
//! | Greater, GreaterEqual, Less, LessEqual, Equal | `Greater`, `GreaterOrEqual`, `Less`, `LessOrEqual`, `Equal` |
//! | MaxPool, AvgPool | `MaxPool`, `AveragePool` |
//! | Mean, Sum, Max, Min, Prod | `ReduceMean` … |
//! | Pad, PadV2, MirrorPad | `Pad` |
//! | ConcatV2, Reshape, Squeeze, ExpandDims, Transpose, Softmax, Cast | `Concat`, `Reshape`, `Squeeze`, `Unsqueeze`, `Transpose`, `Softmax`, `Cast` |
//! | Identity, StopGradient, Snapshot; control edges (`^x`) | no op / ignored |
//!
//! Arithmetic on constants alone (Keras 3's inference batch norm: `Reshape`d statistics,
//! `AddV2`, `Rsqrt`, `Mul`, `Sub`) is folded into constants at import, as a converter folds it,
//! never on a variable; a per-channel constant (`[C]` or Keras's `[1, 1, 1, C]`) keeps an
//! NCHW tensor NCHW, so the batch norm then folds into the convolution (`graph_opt`).
//!
//! A training step's ops (variables, shape arithmetic, backward ops, optimizer updates) are
//! mapped by `training.rs`, whose table lists them; the shape plumbing and data movement of
//! training steps, detection and segmentation graphs (StridedSlice, Pack, Split, Gather,
//! ConcatOffset, BroadcastGradientArgs, resizes …, control flow refused by name) by
//! `plumbing.rs`, whose table lists them. A Reshape, ExpandDims or Transpose whose shape, axis
//! or permutation is computed in the graph reads it from the values inference tracks.
//!
//! An op outside the tables becomes a node of domain `tensorflow`, which inference reports as
//! unsupported (named) while the rest of the graph is still imported.

mod backward;
mod einsum;
mod layout_ops;
mod ops;
mod plumbing;
#[cfg(test)]
mod plumbing_tests;
mod proto;
#[cfg(test)]
mod tests;
pub mod training;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use prost::Message as _;

use crate::graph::{read_model_file, ConstTensor, ElemType, Graph, Model, Node, ValueDecl};
use crate::ModelError;
use proto::data_type as dt;

/// The suffix of the name of the 5-D `Conv` an NDHWC Conv3D becomes between its layout
/// transposes (`layout_ops.rs`), by which its `BiasAdd` finds it (`ops.rs`).
const CONV3D_NCDHW: &str = "/ncdhw";

/// The ONNX opset whose op semantics the imported graph uses.
pub(crate) const OPSET: i64 = 17;

/// Integer constants with more elements than this keep only their shape.
const MAX_CONST_VALUES: usize = 1 << 16;

const EXPECTED: &str = "a frozen TensorFlow GraphDef (binary .pb)";

/// Reads a frozen TensorFlow graph. Errors name the file: [`ModelError::Read`],
/// [`ModelError::Malformed`] or [`ModelError::TruncatedFile`] when it does not decode, and
/// [`ModelError::Invalid`] for a graph whose wiring or attributes make no sense.
pub(crate) fn load_tensorflow(path: impl AsRef<Path>) -> Result<Model, ModelError> {
    let path = path.as_ref();
    load_tensorflow_bytes(&read_model_file(path)?, &path.display().to_string())
}

/// `load_tensorflow` on the file's bytes; `source` labels it in errors. Never panics.
pub fn load_tensorflow_bytes(bytes: &[u8], source: &str) -> Result<Model, ModelError> {
    let malformed = |reason: String| ModelError::Malformed {
        path: source.into(),
        expected: EXPECTED,
        reason,
    };
    if bytes.is_empty() {
        return Err(malformed("the file is empty".into()));
    }
    let graph = proto::GraphDef::decode(bytes).map_err(|e| {
        let text = e.to_string();
        // A GraphDef starts with its first node (field 1, length-delimited: 0x0a).
        if bytes[0] == 0x0a && (text.contains("underflow") || text.contains("invalid varint")) {
            ModelError::TruncatedFile {
                path: source.into(),
                expected: EXPECTED,
                len: bytes.len(),
                reason: text,
            }
        } else {
            malformed(format!("not a protobuf GraphDef ({text})"))
        }
    })?;
    if graph.node.is_empty() || graph.node.iter().all(|n| n.op.is_empty()) {
        return Err(malformed("it holds no node".into()));
    }
    let producer = graph.versions.as_ref().map_or(0, |v| v.producer);
    let mut b = Builder::new(source, &graph.node);
    for i in b.order()? {
        b.node(&graph.node[i])?;
    }
    Ok(Model {
        source: source.to_string(),
        ir_version: 8,
        opset: OPSET,
        producer: format!("TensorFlow (GraphDef producer {producer})"),
        graph: b.finish(),
        ir_format: Some(tunebank_key::Format::NCHW),
    })
}

/// How a TensorFlow tensor is held in the IR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Layout {
    /// As TensorFlow has it.
    Plain,
    /// The NCHW transpose of TensorFlow's NHWC 4-D tensor.
    Nchw,
    /// The OIHW form of a filter TensorFlow holds as HWIO (a filter gradient).
    Oihw,
}

/// A TensorFlow tensor's IR tensor and layout.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Val {
    pub(super) ir: String,
    pub(super) layout: Layout,
}

/// The IR element type of a TensorFlow `DataType`.
pub(super) fn elem_type(t: i32) -> ElemType {
    ElemType(match t {
        dt::DT_FLOAT => 1,
        dt::DT_UINT8 => 2,
        dt::DT_INT8 => 3,
        dt::DT_INT16 => 5,
        dt::DT_INT32 => 6,
        dt::DT_INT64 => 7,
        dt::DT_BOOL => 9,
        dt::DT_HALF => 10,
        dt::DT_DOUBLE => 11,
        dt::DT_BFLOAT16 => 16,
        _ => 0,
    })
}

/// `name`, `name:0` → (`name`, 0); `name:2` → (`name`, 2); `^name` (a control edge) → `None`.
pub(super) fn edge(input: &str) -> Option<(&str, usize)> {
    if input.starts_with('^') {
        return None;
    }
    match input.rsplit_once(':') {
        Some((n, k)) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => {
            Some((n, k.parse().unwrap_or(usize::MAX)))
        }
        _ => Some((input, 0)),
    }
}

/// Builds the IR node by node.
pub(super) struct Builder<'a> {
    pub source: &'a str,
    defs: HashMap<&'a str, usize>,
    all: &'a [proto::NodeDef],
    inputs: Vec<ValueDecl>,
    pub(super) nodes: Vec<Node>,
    pub(super) initializers: BTreeMap<String, ConstTensor>,
    /// TensorFlow tensor (`node:k`) → its IR tensor and layout.
    vals: HashMap<(String, usize), Val>,
    /// IR tensor → its NCHW (or NHWC) transpose, made once.
    transposed: HashMap<(String, Layout), String>,
    /// How many data edges read each TensorFlow node's outputs.
    pub(super) readers: HashMap<&'a str, usize>,
    /// How many outputs of each node the graph reads (one more than the highest index read,
    /// at most 64).
    pub(super) outputs: HashMap<&'a str, usize>,
    /// The IR `Shape` outputs, with the layout of the tensor each measures (the order of its
    /// values).
    pub(super) shape_orders: HashMap<String, Layout>,
    /// The IR tensors that stand for variables (initializers of their dims whose values change
    /// as training runs, so arithmetic on them is never folded).
    pub(super) variables: std::collections::HashSet<String>,
}

impl<'a> Builder<'a> {
    fn new(source: &'a str, all: &'a [proto::NodeDef]) -> Builder<'a> {
        let mut readers = HashMap::new();
        let mut outputs = HashMap::new();
        for n in all {
            for (src, k) in n.input.iter().filter_map(|i| edge(i)) {
                *readers.entry(src).or_insert(0) += 1;
                let count = outputs.entry(src).or_insert(1usize);
                *count = (*count).max(k.saturating_add(1).min(64));
            }
        }
        Builder {
            source,
            defs: all
                .iter()
                .enumerate()
                .map(|(i, n)| (n.name.as_str(), i))
                .collect(),
            all,
            inputs: Vec::new(),
            nodes: Vec::new(),
            initializers: BTreeMap::new(),
            vals: HashMap::new(),
            transposed: HashMap::new(),
            readers,
            outputs,
            shape_orders: HashMap::new(),
            variables: Default::default(),
        }
    }

    pub(super) fn invalid(
        &self,
        node: &proto::NodeDef,
        reason: impl std::fmt::Display,
    ) -> ModelError {
        ModelError::Invalid {
            path: self.source.into(),
            reason: format!("node {:?} ({}): {reason}", node.name, node.op),
        }
    }

    /// The nodes in an order where every data input comes first (file order where it
    /// already is; cycles, which frozen inference graphs do not have, are cut).
    fn order(&self) -> Result<Vec<usize>, ModelError> {
        let mut state = vec![0u8; self.all.len()]; // 0 new, 1 open, 2 done
        let mut out = Vec::with_capacity(self.all.len());
        for root in 0..self.all.len() {
            let mut stack = vec![(root, 0usize)];
            while let Some((i, next)) = stack.pop() {
                if next == 0 {
                    if state[i] != 0 {
                        continue;
                    }
                    state[i] = 1;
                }
                let inputs = &self.all[i].input;
                match inputs.get(next) {
                    Some(input) => {
                        stack.push((i, next + 1));
                        if let Some(&j) = edge(input).and_then(|(n, _)| self.defs.get(n)) {
                            if state[j] == 0 {
                                stack.push((j, 0));
                            }
                        }
                    }
                    None => {
                        state[i] = 2;
                        out.push(i);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The value of data input `i` of `node`.
    pub(super) fn input(&self, node: &proto::NodeDef, i: usize) -> Result<Val, ModelError> {
        let data: Vec<&str> = node
            .input
            .iter()
            .map(String::as_str)
            .filter(|s| !s.starts_with('^'))
            .collect();
        let Some(&name) = data.get(i) else {
            return Err(self.invalid(
                node,
                format!("{} data input(s): expected at least {}", data.len(), i + 1),
            ));
        };
        let (src, k) = edge(name).expect("not a control edge");
        self.vals
            .get(&(src.to_string(), k))
            .cloned()
            .ok_or_else(|| {
                if self.defs.contains_key(src) {
                    self.invalid(
                        node,
                        format!("input {name:?} is not an output the importer made"),
                    )
                } else {
                    self.invalid(node, format!("input {name:?} names no node of the graph"))
                }
            })
    }

    /// The number of data inputs of `node`.
    pub(super) fn arity(node: &proto::NodeDef) -> usize {
        node.input.iter().filter(|s| !s.starts_with('^')).count()
    }

    /// The constant behind a value, when it is one.
    pub(super) fn constant(&self, v: &Val) -> Option<&ConstTensor> {
        self.initializers.get(&v.ir)
    }

    /// Records output `k` of `node` as `val`.
    pub(super) fn set(&mut self, node: &proto::NodeDef, k: usize, val: Val) {
        self.vals.insert((node.name.clone(), k), val);
    }

    /// A graph input.
    pub(super) fn add_input(&mut self, name: &str, elem_type: ElemType, shape: Option<Vec<i64>>) {
        self.inputs.push(ValueDecl {
            name: name.into(),
            elem_type,
            dim_params: shape.as_ref().map_or(vec![], |s| vec![None; s.len()]),
            shape,
        });
    }

    /// An initializer (replacing one of the same name).
    pub(super) fn constant_tensor(
        &mut self,
        name: String,
        elem_type: ElemType,
        dims: Vec<i64>,
        ints: Option<Vec<i64>>,
    ) -> String {
        let ints = ints.filter(|v| v.len() <= MAX_CONST_VALUES);
        self.initializers.insert(
            name.clone(),
            ConstTensor {
                elem_type,
                dims,
                ints,
                external: false,
            },
        );
        name
    }

    /// Adds a node; returns its first output.
    pub(super) fn push(
        &mut self,
        name: String,
        op: &str,
        domain: &str,
        inputs: Vec<String>,
        outputs: Vec<String>,
        attrs: BTreeMap<String, crate::Attr>,
    ) -> String {
        let first = outputs.first().cloned().unwrap_or_default();
        self.nodes.push(Node {
            name,
            op_type: op.into(),
            domain: domain.into(),
            inputs,
            outputs,
            attrs,
        });
        first
    }

    /// `v` in `want` layout: itself, or its transpose (one per tensor; an OIHW filter and
    /// an NCHW tensor convert to each other through TensorFlow's layout).
    pub(super) fn in_layout(&mut self, v: &Val, want: Layout) -> String {
        if v.layout == want {
            return v.ir.clone();
        }
        if v.layout != Layout::Plain && want != Layout::Plain {
            let plain = self.in_layout(v, Layout::Plain);
            let p = Val {
                ir: plain,
                layout: Layout::Plain,
            };
            return self.in_layout(&p, want);
        }
        if let Some(t) = self.transposed.get(&(v.ir.clone(), want)) {
            return t.clone();
        }
        let (suffix, perm) = match (v.layout, want) {
            (_, Layout::Nchw) => ("to_nchw", [0, 3, 1, 2]),
            (_, Layout::Oihw) => ("to_oihw", [3, 2, 0, 1]),
            (Layout::Oihw, _) => ("to_hwio", [2, 3, 1, 0]),
            _ => ("to_nhwc", [0, 2, 3, 1]),
        };
        let name = format!("{}/{suffix}", v.ir);
        let attrs = BTreeMap::from([("perm".to_string(), crate::Attr::Ints(perm.to_vec()))]);
        self.push(
            name.clone(),
            "Transpose",
            "",
            vec![v.ir.clone()],
            vec![name.clone()],
            attrs,
        );
        self.transposed.insert((v.ir.clone(), want), name.clone());
        name
    }

    fn finish(self) -> Graph {
        let read: std::collections::HashSet<&str> = self
            .nodes
            .iter()
            .flat_map(|n| n.inputs.iter().map(String::as_str))
            .collect();
        let outputs = self
            .nodes
            .iter()
            .flat_map(|n| n.outputs.iter())
            .filter(|o| !o.is_empty() && !read.contains(o.as_str()) && !o.contains(":"))
            .map(|o| ValueDecl {
                name: o.clone(),
                elem_type: ElemType(0),
                shape: None,
                dim_params: vec![],
            })
            .collect();
        Graph {
            name: "tensorflow".into(),
            inputs: self.inputs,
            outputs,
            value_info: BTreeMap::new(),
            initializers: self.initializers,
            nodes: self.nodes,
        }
    }
}

/// The integer values of a `TensorProto` (`int_val`, `int64_val` or little-endian
/// `tensor_content`), repeated to fill the shape when one value is given, zeros when none is;
/// `None` for other dtypes or an inconsistent content size.
pub(super) fn tensor_ints(t: &proto::TensorProto, count: usize) -> Option<Vec<i64>> {
    let width = match t.dtype {
        dt::DT_INT32 => 4,
        dt::DT_INT64 => 8,
        _ => return None,
    };
    let values: Vec<i64> = if !t.tensor_content.is_empty() {
        if t.tensor_content.len() != count.checked_mul(width)? {
            return None;
        }
        t.tensor_content
            .chunks_exact(width)
            .map(|c| {
                if width == 4 {
                    i32::from_le_bytes(c.try_into().expect("4 bytes")) as i64
                } else {
                    i64::from_le_bytes(c.try_into().expect("8 bytes"))
                }
            })
            .collect()
    } else if !t.int64_val.is_empty() {
        t.int64_val.clone()
    } else {
        t.int_val.iter().map(|&v| i64::from(v)).collect()
    };
    match values.len() {
        n if n == count => Some(values),
        1 if count <= MAX_CONST_VALUES => Some(vec![values[0]; count]),
        // No value at all is a tensor of zeros (TensorFlow's `Tensor::FromProto` fills it with
        // the type's default), as its graph optimizer writes a folded all-zero constant.
        0 if count <= MAX_CONST_VALUES => Some(vec![0; count]),
        _ => None,
    }
}

/// Dims of a `TensorShapeProto`: -1 for unknown sizes; `None` for an unknown rank.
pub(super) fn shape_dims(s: &proto::TensorShapeProto) -> Option<Vec<i64>> {
    if s.unknown_rank {
        return None;
    }
    Some(
        s.dim
            .iter()
            .map(|d| if d.size < 0 { -1 } else { d.size })
            .collect(),
    )
}
