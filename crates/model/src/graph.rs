//! The graph IR and its import from ONNX bytes.
//!
//! The IR keeps what shape inference and fusion need: node wiring, attributes, the declared
//! types and shapes of graph inputs, outputs and `value_info`, and initializer shapes. Weight
//! data is never kept (nor read: external-data files are not opened); only small integer
//! constants (shapes, axes, indices) keep their values, since shape inference needs them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use prost::Message;

use crate::proto::{self, attribute_type};
use crate::ModelError;
use tunebank_key::{DType, Format};

/// Lowest default-domain opset the importer accepts (numpy broadcasting everywhere from 7 on).
pub const MIN_OPSET: i64 = 7;
/// Highest default-domain opset the importer accepts.
pub const MAX_OPSET: i64 = 28;

/// Integer constants with more elements than this keep only their shape, not their values.
const MAX_CONST_VALUES: usize = 1 << 16;

/// An ONNX `TensorProto.DataType` code (1 float, 7 int64, 10 float16 …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ElemType(pub i32);

impl ElemType {
    /// float32.
    pub const FLOAT: ElemType = ElemType(1);
    /// int64.
    pub const INT64: ElemType = ElemType(7);
    /// int32.
    pub const INT32: ElemType = ElemType(6);
    /// bool.
    pub const BOOL: ElemType = ElemType(9);

    /// The key's dtype for this element type; `None` for types a key cannot express
    /// (string, uint16/32/64, complex, float8 …).
    pub fn dtype(self) -> Option<DType> {
        Some(match self.0 {
            1 => DType::Float32,
            2 => DType::Uint8,
            3 => DType::Int8,
            5 => DType::Int16,
            6 => DType::Int32,
            7 => DType::Int64,
            9 => DType::Bool,
            10 => DType::Float16,
            11 => DType::Float64,
            16 => DType::Bfloat16,
            _ => return None,
        })
    }

    /// Whether values of this type are integers whose values shape inference may track.
    pub(crate) fn is_integer(self) -> bool {
        matches!(self.0, 2..=7 | 12 | 13)
    }
}

impl std::fmt::Display for ElemType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.0 {
            0 => "undefined",
            1 => "float32",
            2 => "uint8",
            3 => "int8",
            4 => "uint16",
            5 => "int16",
            6 => "int32",
            7 => "int64",
            8 => "string",
            9 => "bool",
            10 => "float16",
            11 => "float64",
            12 => "uint32",
            13 => "uint64",
            14 => "complex64",
            15 => "complex128",
            16 => "bfloat16",
            _ => return write!(f, "data type {}", self.0),
        };
        f.write_str(name)
    }
}

/// A declared value (graph input, output or `value_info` entry).
#[derive(Clone, Debug, PartialEq)]
pub struct ValueDecl {
    /// Tensor name.
    pub name: String,
    /// Element type (0 when the model does not say).
    pub elem_type: ElemType,
    /// Declared shape; -1 marks a dynamic dim (`dim_param`, a negative or missing value).
    /// `None` when the model declares no shape (unknown rank).
    pub shape: Option<Vec<i64>>,
    /// The symbolic name (`dim_param`) of each declared dim, where it has one; empty when
    /// `shape` is `None`. Shared names bind dims of different tensors to one value.
    pub dim_params: Vec<Option<String>>,
}

/// A constant tensor: an initializer or the value of a `Constant` node.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstTensor {
    /// Element type.
    pub elem_type: ElemType,
    /// Shape (all dims ≥ 0).
    pub dims: Vec<i64>,
    /// The values of a small integer tensor, when the model carries them; `None` for float
    /// data, absent data, external data and large tensors.
    pub ints: Option<Vec<i64>>,
    /// Whether the data lives in an external file (never opened by the importer).
    pub external: bool,
}

/// A node attribute. Graph, sparse-tensor and type-proto attributes are kept as [`Attr::Other`].
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    /// `f`.
    Float(f32),
    /// `i`.
    Int(i64),
    /// `s` (lossy UTF-8).
    Str(String),
    /// `t`.
    Tensor(ConstTensor),
    /// `floats`.
    Floats(Vec<f32>),
    /// `ints`.
    Ints(Vec<i64>),
    /// `strings` (lossy UTF-8).
    Strs(Vec<String>),
    /// Any other attribute type (subgraphs …), not interpreted.
    Other,
}

/// One node of the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// Node name; `<op_type>_<index>` when the model leaves it empty.
    pub name: String,
    /// Op type as the model spells it.
    pub op_type: String,
    /// Op domain; empty for the default ONNX domain.
    pub domain: String,
    /// Input tensor names; an empty name is an absent optional input.
    pub inputs: Vec<String>,
    /// Output tensor names; an empty name is an unused optional output.
    pub outputs: Vec<String>,
    /// Attributes by name.
    pub attrs: BTreeMap<String, Attr>,
}

/// The main graph of a model.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    /// Graph name.
    pub name: String,
    /// Graph inputs that are fed at run time (inputs backed by an initializer are constants
    /// and appear only in `initializers`).
    pub inputs: Vec<ValueDecl>,
    /// Graph outputs.
    pub outputs: Vec<ValueDecl>,
    /// Declared intermediate values, by name (used only when an op cannot be inferred).
    pub value_info: BTreeMap<String, ValueDecl>,
    /// Initializers by name: shapes (and small integer values), never weight data.
    pub initializers: BTreeMap<String, ConstTensor>,
    /// Nodes in file order.
    pub nodes: Vec<Node>,
}

/// An imported ONNX model.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    /// Where the model came from (the path as given, or a caller's label), for messages.
    pub source: String,
    /// `ir_version`.
    pub ir_version: i64,
    /// Default-domain (`ai.onnx`) opset version, within `MIN_OPSET`..=`MAX_OPSET`.
    pub opset: i64,
    /// `producer_name` and `producer_version`.
    pub producer: String,
    /// The main graph.
    pub graph: Graph,
    /// The layout the importer gave every 4-D tensor, whatever `input_format` says of the
    /// graph inputs: NCHW for a TensorFlow graph (its NHWC ops are imported in NCHW);
    /// `None` when the tensors are as the model has them (ONNX, Caffe), so `input_format`
    /// labels them.
    pub ir_format: Option<Format>,
}

/// Reads and imports an ONNX model file. Weight data is neither needed nor read: initializers
/// contribute shapes only, and external-data files need not exist.
///
/// Errors name the file: [`ModelError::Read`] if it cannot be read, [`ModelError::Truncated`]
/// or [`ModelError::NotOnnx`] if it does not decode as an ONNX model, and
/// [`ModelError::UnsupportedOpset`] outside the supported opsets.
pub fn load_onnx(path: impl AsRef<Path>) -> Result<Model, ModelError> {
    let path = path.as_ref();
    load_onnx_bytes(&read_model_file(path)?, &path.display().to_string())
}

/// The bytes of a model file, or [`ModelError::Read`] naming it: how every importer reads.
pub(crate) fn read_model_file(path: &Path) -> Result<Vec<u8>, ModelError> {
    std::fs::read(path).map_err(|e| ModelError::Read {
        path: path.display().to_string(),
        source: e,
    })
}

/// Imports an ONNX model from its serialized bytes; `source` labels the model in errors.
/// Never panics, whatever the bytes.
pub fn load_onnx_bytes(bytes: &[u8], source: &str) -> Result<Model, ModelError> {
    let not_onnx = |reason: String| ModelError::NotOnnx {
        path: source.to_string(),
        reason,
    };
    if bytes.is_empty() {
        return Err(not_onnx("the file is empty".into()));
    }
    let model = match proto::ModelProto::decode(bytes) {
        Ok(m) => m,
        Err(e) => {
            let text = e.to_string();
            // A serialized ModelProto starts with ir_version (field 1, varint: byte 0x08).
            // Running out of bytes inside such a file means it was cut short.
            if bytes[0] == 0x08
                && (text.contains("underflow")
                    || text.contains("invalid varint")
                    || text.contains("unexpected end"))
            {
                return Err(ModelError::Truncated {
                    path: source.to_string(),
                    len: bytes.len(),
                    reason: text,
                });
            }
            return Err(not_onnx(format!("not a protobuf ModelProto ({text})")));
        }
    };
    if model.ir_version <= 0 {
        return Err(not_onnx(
            "no ir_version: expected a serialized onnx.ModelProto".into(),
        ));
    }
    let Some(graph) = model.graph else {
        return Err(not_onnx("the model has no graph".into()));
    };
    let opset = model
        .opset_import
        .iter()
        .filter(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map(|o| o.version)
        .max();
    let opset = match opset {
        Some(v) if (MIN_OPSET..=MAX_OPSET).contains(&v) => v,
        found => {
            return Err(ModelError::UnsupportedOpset {
                path: source.to_string(),
                found,
            })
        }
    };
    let producer = [model.producer_name, model.producer_version]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    Ok(Model {
        source: source.to_string(),
        ir_version: model.ir_version,
        opset,
        producer,
        graph: import_graph(graph, source)?,
        ir_format: None,
    })
}

fn import_graph(g: proto::GraphProto, source: &str) -> Result<Graph, ModelError> {
    let scales = small_floats(&g.initializer);
    let mut initializers = BTreeMap::new();
    for t in g.initializer {
        let name = t.name.clone();
        let c = const_tensor(t).map_err(|reason| ModelError::Invalid {
            path: source.to_string(),
            reason: format!("initializer {name:?}: {reason}"),
        })?;
        initializers.insert(name, c);
    }
    let inputs = g
        .input
        .into_iter()
        .filter(|v| !initializers.contains_key(&v.name))
        .map(value_decl)
        .collect();
    let outputs = g.output.into_iter().map(value_decl).collect();
    let value_info = g
        .value_info
        .into_iter()
        .map(|v| (v.name.clone(), value_decl(v)))
        .collect();
    let mut nodes = Vec::with_capacity(g.node.len());
    for (i, n) in g.node.into_iter().enumerate() {
        let mut attrs = BTreeMap::new();
        for a in n.attribute {
            let name = a.name.clone();
            let v = attr(a).map_err(|reason| ModelError::Invalid {
                path: source.to_string(),
                reason: format!("node {:?} attribute {name:?}: {reason}", n.name),
            })?;
            attrs.insert(name, v);
        }
        // A Resize's constant float scales, which integer-only constant tracking would lose,
        // become its `scales` attribute (as the Upsample of opset 7 spelled it).
        let scales_input = match n.op_type.as_str() {
            "Resize" => n.input.get(2),
            _ => None,
        };
        if let Some(v) = scales_input.and_then(|i| scales.get(i)) {
            attrs.insert("scales".into(), Attr::Floats(v.clone()));
        }
        let name = if n.name.is_empty() {
            format!("{}_{i}", n.op_type)
        } else {
            n.name
        };
        nodes.push(Node {
            name,
            op_type: n.op_type,
            domain: n.domain,
            inputs: n.input,
            outputs: n.output,
            attrs,
        });
    }
    Ok(Graph {
        name: g.name,
        inputs,
        outputs,
        value_info,
        initializers,
        nodes,
    })
}

/// The values of the float initializers of at most 8 elements (a Resize's scales).
fn small_floats(initializers: &[proto::TensorProto]) -> BTreeMap<String, Vec<f32>> {
    initializers
        .iter()
        .filter(|t| t.data_type == ElemType::FLOAT.0 && t.data_location != 1)
        .filter_map(|t| {
            let n = usize::try_from(t.dims.iter().product::<i64>()).ok()?;
            let v: Vec<f32> = if !t.float_data.is_empty() {
                t.float_data.clone()
            } else {
                t.raw_data
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect()
            };
            (n <= 8 && v.len() == n).then(|| (t.name.clone(), v))
        })
        .collect()
}

fn value_decl(v: proto::ValueInfoProto) -> ValueDecl {
    let tensor = v.r#type.and_then(|t| t.tensor_type);
    let elem_type = ElemType(tensor.as_ref().map_or(0, |t| t.elem_type));
    let dims = tensor.and_then(|t| t.shape).map(|s| s.dim);
    let shape = dims.as_ref().map(|dims| {
        dims.iter()
            .map(|d| match d.dim_value {
                Some(v) if v >= 0 => v,
                _ => -1,
            })
            .collect()
    });
    let dim_params = dims
        .into_iter()
        .flatten()
        .map(|d| {
            d.dim_param
                .filter(|p| !p.is_empty() && d.dim_value.is_none())
        })
        .collect();
    ValueDecl {
        name: v.name,
        elem_type,
        shape,
        dim_params,
    }
}

/// Converts a tensor proto into shapes and small integer values. Never reads external files.
pub(crate) fn const_tensor(t: proto::TensorProto) -> Result<ConstTensor, String> {
    if let Some(d) = t.dims.iter().find(|&&d| d < 0) {
        return Err(format!("negative dim {d} in {:?}", t.dims));
    }
    let elem_type = ElemType(t.data_type);
    let external = t.data_location == 1;
    let count = t
        .dims
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?));
    let ints = match count {
        Some(n) if elem_type.is_integer() && !external && n <= MAX_CONST_VALUES => {
            int_values(&t, elem_type, n)
        }
        _ => None,
    };
    Ok(ConstTensor {
        elem_type,
        dims: t.dims,
        ints,
        external,
    })
}

fn int_values(t: &proto::TensorProto, elem: ElemType, n: usize) -> Option<Vec<i64>> {
    if t.int64_data.len() == n && n > 0 {
        return Some(t.int64_data.clone());
    }
    if t.int32_data.len() == n && n > 0 {
        return Some(t.int32_data.iter().map(|&v| i64::from(v)).collect());
    }
    if t.uint64_data.len() == n && n > 0 {
        return t
            .uint64_data
            .iter()
            .map(|&v| i64::try_from(v).ok())
            .collect();
    }
    let width = match elem.0 {
        2 | 3 => 1,
        4 | 5 => 2,
        6 | 12 => 4,
        7 | 13 => 8,
        _ => return None,
    };
    if t.raw_data.len() != n.checked_mul(width)? {
        return None;
    }
    t.raw_data
        .chunks_exact(width)
        .map(|c| {
            Some(match (elem.0, c) {
                (2, [a]) => i64::from(*a),
                (3, [a]) => i64::from(*a as i8),
                (4, [a, b]) => i64::from(u16::from_le_bytes([*a, *b])),
                (5, [a, b]) => i64::from(i16::from_le_bytes([*a, *b])),
                (6, _) => i64::from(i32::from_le_bytes(c.try_into().ok()?)),
                (12, _) => i64::from(u32::from_le_bytes(c.try_into().ok()?)),
                (7, _) => i64::from_le_bytes(c.try_into().ok()?),
                (13, _) => i64::try_from(u64::from_le_bytes(c.try_into().ok()?)).ok()?,
                _ => return None,
            })
        })
        .collect()
}

fn attr(a: proto::AttributeProto) -> Result<Attr, String> {
    let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let ty = if a.r#type != 0 {
        a.r#type
    } else if a.t.is_some() {
        attribute_type::TENSOR
    } else if !a.ints.is_empty() {
        attribute_type::INTS
    } else if !a.floats.is_empty() {
        attribute_type::FLOATS
    } else if !a.strings.is_empty() {
        attribute_type::STRINGS
    } else if !a.s.is_empty() {
        attribute_type::STRING
    } else if a.f != 0.0 {
        attribute_type::FLOAT
    } else {
        attribute_type::INT
    };
    Ok(match ty {
        attribute_type::FLOAT => Attr::Float(a.f),
        attribute_type::INT => Attr::Int(a.i),
        attribute_type::STRING => Attr::Str(lossy(&a.s)),
        attribute_type::TENSOR => match a.t {
            Some(t) => Attr::Tensor(const_tensor(t)?),
            None => return Err("tensor attribute without a tensor".into()),
        },
        attribute_type::FLOATS => Attr::Floats(a.floats),
        attribute_type::INTS => Attr::Ints(a.ints),
        attribute_type::STRINGS => Attr::Strs(a.strings.iter().map(|s| lossy(s)).collect()),
        _ => Attr::Other,
    })
}

impl Model {
    /// The graph input named `name`, if the graph has one.
    pub fn input(&self, name: &str) -> Option<&ValueDecl> {
        self.graph.inputs.iter().find(|i| i.name == name)
    }

    /// Number of nodes of each op type, by op type.
    pub fn op_type_counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for n in &self.graph.nodes {
            *counts.entry(n.op_type.clone()).or_insert(0) += 1;
        }
        counts
    }

    /// The model as `--out_nodes` leaves it (ATC: the named outputs replace the graph's
    /// outputs): the graph outputs are the named nodes' outputs, in the order given, and only
    /// the nodes they need remain (every producer, transitively). A node or output index the
    /// model does not have is [`ModelError::OutNodes`].
    pub(crate) fn pruned_to(&self, out_nodes: &[(String, usize)]) -> Result<Model, ModelError> {
        let g = &self.graph;
        let mut outputs = Vec::with_capacity(out_nodes.len());
        for (node, index) in out_nodes {
            let err = |reason: String| ModelError::OutNodes {
                path: self.source.clone(),
                node: node.clone(),
                index: *index,
                reason,
            };
            let n = g.nodes.iter().find(|n| &n.name == node).ok_or_else(|| {
                err("no node of that name: expected a node name of the model".into())
            })?;
            let t = n
                .outputs
                .get(*index)
                .filter(|t| !t.is_empty())
                .ok_or_else(|| err(format!("the node has {} outputs", n.outputs.len())))?;
            let decl = g
                .outputs
                .iter()
                .chain(g.value_info.values())
                .find(|v| &v.name == t)
                .cloned();
            outputs.push(decl.unwrap_or(ValueDecl {
                name: t.clone(),
                elem_type: ElemType(0),
                shape: None,
                dim_params: Vec::new(),
            }));
        }
        let producer: BTreeMap<&str, usize> = g
            .nodes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| n.outputs.iter().map(move |o| (o.as_str(), i)))
            .collect();
        let mut keep = vec![false; g.nodes.len()];
        let mut stack: Vec<&str> = outputs.iter().map(|o| o.name.as_str()).collect();
        while let Some(t) = stack.pop() {
            if let Some(&i) = producer.get(t) {
                if !keep[i] {
                    keep[i] = true;
                    stack.extend(g.nodes[i].inputs.iter().map(String::as_str));
                }
            }
        }
        let mut pruned = self.clone();
        pruned.graph.nodes = g
            .nodes
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(n, _)| n.clone())
            .collect();
        pruned.graph.outputs = outputs;
        Ok(pruned)
    }
}

/// Which node comes next in [`topological_order`] among those whose inputs are all computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TopoOrder {
    /// The one first in the file: a file already sorted keeps its order.
    File,
    /// The one that became ready first (a FIFO queue, ties in file order): breadth-first,
    /// as GE's BFS topological sort schedules a graph.
    #[cfg_attr(not(feature = "mindspore"), allow(dead_code))]
    Breadth,
}

/// Node indices of `nodes` in a topological order over their data edges (a tensor's producer
/// is the first node writing it), the next node chosen by `rule`. Nodes on a cycle, and what
/// depends on them, are left out.
pub(crate) fn topological_order(nodes: &[Node], rule: TopoOrder) -> Vec<usize> {
    let mut producer: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, n) in nodes.iter().enumerate() {
        for o in n.outputs.iter().filter(|o| !o.is_empty()) {
            producer.entry(o.as_str()).or_insert(i);
        }
    }
    let mut pending = vec![0usize; nodes.len()];
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        let deps: BTreeSet<usize> = n
            .inputs
            .iter()
            .filter_map(|t| producer.get(t.as_str()).copied())
            .filter(|&p| p != i)
            .collect();
        pending[i] = deps.len();
        for p in deps {
            dependents[p].push(i);
        }
    }
    // Ready nodes keyed by (rank, index): the index itself, or when it became ready.
    let mut ready: BTreeSet<(usize, usize)> = (0..nodes.len())
        .filter(|&i| pending[i] == 0)
        .map(|i| (i, i))
        .collect();
    let mut clock = nodes.len();
    let mut order = Vec::with_capacity(nodes.len());
    while let Some((_, i)) = ready.pop_first() {
        order.push(i);
        for &d in &dependents[i] {
            pending[d] -= 1;
            if pending[d] == 0 {
                let rank = match rule {
                    TopoOrder::File => d,
                    TopoOrder::Breadth => {
                        clock += 1;
                        clock
                    }
                };
                ready.insert((rank, d));
            }
        }
    }
    order
}
