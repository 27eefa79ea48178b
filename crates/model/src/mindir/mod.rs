//! MindSpore import (`--framework=1`): a `.mindir` file (`mind_ir.ModelProto`, as
//! `mindspore.export(..., file_format="MINDIR")` writes it) into the same graph IR the ONNX
//! importer builds (ONNX op types at opset 17). MindSpore is NCHW like ONNX and its primitives
//! mostly carry the Ascend IR names already, so the mapping is direct; weights are read only
//! for their dims (a `raw_data` slice of the file, never copied).
//!
//! A MindIR graph is a functional graph: a node's inputs name graph inputs, parameters (the
//! weights), `Constant` value nodes (scalars, tuples, small tensors) or other nodes' outputs,
//! and a node's value may be a tensor, a tuple or a scalar. The importer evaluates that value
//! graph: `Load` (a parameter read) is its parameter, `MakeTuple`/`TupleGetItem` build and
//! take tuples, `Depend`/`UpdateState` (side-effect ordering) pass their first input or a
//! monad, and the main graph's outputs are its `output` values. A node names its primitive as
//! `REF::<name>` (MindIR 2.x: `ModelProto.primitives`; a *primitive function*'s arguments
//! are node inputs, a plain primitive's are attributes) or carries it inline (MindIR 1.x); a
//! node that calls another graph of `functions` is inlined (at most `MAX_CALL_DEPTH`
//! deep, `MAX_NODES` nodes in all). The primitives and the IR ops they become are listed in `ops.rs`; a primitive
//! outside that table becomes a node of domain `mindspore` reading its tensor inputs, which
//! inference reports as unsupported (named) while the rest of the graph is still imported.

mod args;
mod grad;
#[cfg(test)]
mod grad_tests;
mod ops;
pub(crate) mod proto;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use prost::bytes::Bytes;
use prost::Message as _;

use crate::graph::{read_model_file, ConstTensor, ElemType, Graph, Model, Node, ValueDecl};
use crate::{Attr, ModelError};
use proto::{attr_type as at, AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto};

/// The ONNX opset whose op semantics the imported graph uses.
pub(crate) const OPSET: i64 = 17;

/// How deep calls of `functions` graphs are inlined.
pub(crate) const MAX_CALL_DEPTH: usize = 16;

/// How many nodes an import evaluates at most, inlined calls counted each time (a graph that
/// calls another many times at each of many levels would otherwise grow exponentially).
pub(crate) const MAX_NODES: usize = 1 << 20;

/// Integer constants with more elements than this keep only their shape.
const MAX_CONST_VALUES: usize = 1 << 16;

const EXPECTED: &str = "a MindSpore MindIR model (binary mind_ir.ModelProto)";

/// Reads a MindIR model. Errors name the file: [`ModelError::Read`], [`ModelError::Malformed`]
/// or [`ModelError::TruncatedFile`] when it does not decode, and [`ModelError::Invalid`] for a
/// graph whose wiring or arguments make no sense (naming the node, its primitive and the
/// argument).
pub(crate) fn load_mindir(path: impl AsRef<Path>) -> Result<Model, ModelError> {
    let path = path.as_ref();
    // The file's buffer itself backs the decoded tensors' raw data: no second copy.
    let bytes = Bytes::from(read_model_file(path)?);
    load(bytes, &path.display().to_string())
}

/// `load_mindir` on the file's bytes; `source` labels it in errors. Never panics, whatever
/// the bytes.
pub fn load_mindir_bytes(bytes: &[u8], source: &str) -> Result<Model, ModelError> {
    load(Bytes::copy_from_slice(bytes), source)
}

fn load(bytes: Bytes, source: &str) -> Result<Model, ModelError> {
    let malformed = |reason: String| ModelError::Malformed {
        path: source.into(),
        expected: EXPECTED,
        reason,
    };
    if bytes.is_empty() {
        return Err(malformed("the file is empty".into()));
    }
    let model = ModelProto::decode(bytes.clone()).map_err(|e| {
        let text = e.to_string();
        // A ModelProto starts with its ir_version (field 1, length-delimited: 0x0a).
        if bytes[0] == 0x0a && (text.contains("underflow") || text.contains("invalid varint")) {
            ModelError::TruncatedFile {
                path: source.into(),
                expected: EXPECTED,
                len: bytes.len(),
                reason: text,
            }
        } else {
            malformed(format!("not a protobuf mind_ir.ModelProto ({text})"))
        }
    })?;
    let Some(graph) = model.graph.as_ref().filter(|g| !g.node.is_empty()) else {
        return Err(malformed(
            "it holds no graph with nodes (ModelProto.graph)".into(),
        ));
    };
    let mut b = Builder::new(source, &model);
    let outputs = b.graph(graph, None, "", 0)?;
    let producer = format!(
        "MindSpore {} (MindIR {})",
        model.producer_version.as_deref().unwrap_or("?"),
        model.ir_version.as_deref().unwrap_or("?")
    );
    Ok(Model {
        source: source.to_string(),
        ir_version: 8,
        opset: OPSET,
        producer,
        graph: b.finish(graph, outputs),
        ir_format: None,
    })
}

/// The value of a MindIR node: what its readers see.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Value {
    /// An IR tensor.
    Tensor(String),
    /// A tuple or list.
    Tuple(Vec<Value>),
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    /// A side-effect token (`UMONAD`, `IOMONAD`, `UpdateState`).
    Monad,
    /// `None`, or an output nobody may read.
    None,
}

impl Value {
    /// The integers of a scalar, a tuple of scalars or a constant integer tensor.
    pub(super) fn ints(&self, b: &Builder<'_>) -> Option<Vec<i64>> {
        match self {
            Value::Int(i) => Some(vec![*i]),
            Value::Bool(v) => Some(vec![i64::from(*v)]),
            Value::Tuple(items) => items
                .iter()
                .map(|v| match v {
                    Value::Int(i) => Some(*i),
                    _ => None,
                })
                .collect(),
            Value::Tensor(t) => b.initializers.get(t).and_then(|c| c.ints.clone()),
            _ => None,
        }
    }

    /// What the value is, for errors.
    pub(super) fn describe(&self) -> String {
        match self {
            Value::Tensor(t) => format!("tensor {t:?}"),
            Value::Tuple(v) => format!("a tuple of {}", v.len()),
            Value::Int(i) => format!("the integer {i}"),
            Value::Float(f) => format!("the number {f}"),
            Value::Bool(v) => format!("the bool {v}"),
            Value::Str(s) => format!("the string {s:?}"),
            Value::Monad => "a side-effect monad".into(),
            Value::None => "None".into(),
        }
    }
}

/// One primitive application: the node, its primitive and its evaluated inputs.
pub(super) struct Call<'a> {
    /// The IR name of the node (its output).
    pub name: String,
    /// The primitive's op type (`Conv2D`).
    pub op: &'a str,
    /// The node's evaluated inputs.
    pub args: Vec<Value>,
    /// The MindIR names of the inputs (for the single-reader test of a bias fold).
    pub arg_names: Vec<String>,
    /// The primitive's attributes (a plain primitive's arguments).
    pub attrs: &'a [AttributeProto],
    /// The node's abstract output (`shape` attribute): tensors' dims and dtypes.
    pub abstract_out: Option<&'a AttributeProto>,
}

/// Evaluates the value graph into IR nodes.
pub(super) struct Builder<'a> {
    pub(super) source: &'a str,
    prims: HashMap<&'a str, &'a proto::PrimitiveProto>,
    functions: HashMap<&'a str, &'a GraphProto>,
    inputs: Vec<ValueDecl>,
    pub(super) nodes: Vec<Node>,
    pub(super) initializers: BTreeMap<String, ConstTensor>,
    /// MindIR name (in its call scope) → value.
    values: HashMap<String, Value>,
    /// How many node inputs read each MindIR name (in its call scope).
    pub(super) readers: HashMap<String, usize>,
    /// IR names given out, to keep them unique.
    used: HashSet<String>,
    /// Nodes evaluated so far (bounded by [`MAX_NODES`]).
    evaluated: usize,
}

impl<'a> Builder<'a> {
    fn new(source: &'a str, model: &'a ModelProto) -> Builder<'a> {
        Builder {
            source,
            prims: model
                .primitives
                .iter()
                .filter_map(|p| Some((p.name.as_deref()?, p)))
                .collect(),
            functions: model
                .functions
                .iter()
                .filter_map(|g| Some((g.name.as_deref()?, g)))
                .collect(),
            inputs: Vec::new(),
            nodes: Vec::new(),
            initializers: BTreeMap::new(),
            values: HashMap::new(),
            readers: HashMap::new(),
            used: HashSet::new(),
            evaluated: 0,
        }
    }

    /// An error about node `node` (its name and op type).
    pub(super) fn invalid(
        &self,
        node: &str,
        op: &str,
        reason: impl std::fmt::Display,
    ) -> ModelError {
        ModelError::Invalid {
            path: self.source.into(),
            reason: format!("node {node:?} ({op}): {reason}"),
        }
    }

    /// A unique IR name from a MindIR one: the graph-name prefix (`<graph>:`) dropped, the
    /// call scope prepended.
    fn ir_name(&mut self, scope: &str, graph: &str, name: &str) -> String {
        let short = name
            .strip_prefix(graph)
            .and_then(|s| s.strip_prefix(':'))
            .unwrap_or(name);
        let base = format!("{scope}{short}");
        let mut out = base.clone();
        let mut k = 1;
        while !self.used.insert(out.clone()) {
            out = format!("{base}_{k}");
            k += 1;
        }
        out
    }

    /// Imports graph `g`: the main graph (`args` = `None`: its inputs become the model's) or a
    /// called one bound to `args`. Returns the values of its outputs.
    fn graph(
        &mut self,
        g: &'a GraphProto,
        args: Option<Vec<Value>>,
        scope: &str,
        depth: usize,
    ) -> Result<Vec<Value>, ModelError> {
        let gname = g.name.as_deref().unwrap_or("");
        let key = |n: &str| format!("{scope}{n}");
        match args {
            None => {
                for i in &g.input {
                    let name = i.name.as_deref().unwrap_or("");
                    let ir = self.ir_name(scope, gname, name);
                    let t = i.tensor.first();
                    self.inputs.push(ValueDecl {
                        name: ir.clone(),
                        elem_type: elem_type(t.and_then(|t| t.data_type).unwrap_or(0)),
                        shape: t.map(|t| t.dims.clone()),
                        dim_params: t.map_or(vec![], |t| vec![None; t.dims.len()]),
                    });
                    self.values.insert(key(name), Value::Tensor(ir));
                }
            }
            Some(args) => {
                if args.len() != g.input.len() {
                    return Err(self.invalid(
                        gname,
                        "graph call",
                        format!(
                            "{} argument(s) for {} parameter(s)",
                            args.len(),
                            g.input.len()
                        ),
                    ));
                }
                for (i, v) in g.input.iter().zip(args) {
                    self.values.insert(key(i.name.as_deref().unwrap_or("")), v);
                }
            }
        }
        for p in &g.parameter {
            let name = p.name.as_deref().unwrap_or("");
            let ir = self.ir_name(scope, gname, name);
            let c = const_tensor(p);
            self.initializers.insert(ir.clone(), c);
            self.values.insert(key(name), Value::Tensor(ir));
        }
        for n in &g.node {
            for i in &n.input {
                *self.readers.entry(key(i)).or_insert(0) += 1;
            }
        }
        for &i in &order(g, self.source)? {
            let n = &g.node[i];
            self.evaluated += 1;
            if self.evaluated > MAX_NODES {
                return Err(self.invalid(
                    gname,
                    "graph",
                    format!("more than {MAX_NODES} nodes once its graph calls are inlined"),
                ));
            }
            let value = self.node(n, g, scope, depth)?;
            let out = n
                .output
                .first()
                .or(n.name.as_ref())
                .cloned()
                .unwrap_or_default();
            self.values.insert(key(&out), value);
        }
        let mut outs = Vec::new();
        for o in &g.output {
            let name = o.name.as_deref().unwrap_or("");
            outs.push(self.values.get(&key(name)).cloned().ok_or_else(|| {
                self.invalid(
                    gname,
                    "graph output",
                    format!("output {name:?} names no value of the graph"),
                )
            })?);
        }
        if outs.is_empty() {
            // MindIR 1.x ends a graph with a `Return` node, whose input is the output.
            if let Some(ret) = g.node.iter().rev().find(|n| is_return(n)) {
                let out = ret
                    .output
                    .first()
                    .or(ret.name.as_ref())
                    .cloned()
                    .unwrap_or_default();
                outs.extend(self.values.get(&key(&out)).cloned());
            }
        }
        Ok(outs)
    }

    /// The value of one node.
    fn node(
        &mut self,
        n: &'a NodeProto,
        g: &'a GraphProto,
        scope: &str,
        depth: usize,
    ) -> Result<Value, ModelError> {
        let gname = g.name.as_deref().unwrap_or("");
        let node_name = n
            .output
            .first()
            .or(n.name.as_ref())
            .cloned()
            .unwrap_or_default();
        let op_type = n.op_type.as_deref().unwrap_or("");
        if op_type == "Constant" {
            let a = n
                .attribute
                .iter()
                .find(|a| a.name.as_deref() == Some("value"));
            let Some(a) = a.or(n.attribute.first()) else {
                return Err(self.invalid(&node_name, op_type, "a Constant without a value"));
            };
            let ir = self.ir_name(scope, gname, &node_name);
            return Ok(self.attr_value(a, &ir));
        }
        let mut args = Vec::with_capacity(n.input.len());
        for i in &n.input {
            let v = self
                .values
                .get(&format!("{scope}{i}"))
                .cloned()
                .ok_or_else(|| {
                    self.invalid(
                        &node_name,
                        op_type,
                        format!("input {i:?} names no value of the graph"),
                    )
                })?;
            args.push(v);
        }
        let target = op_type.strip_prefix("REF::").unwrap_or(op_type);
        if let Some(callee) = self.functions.get(target).copied() {
            if depth >= MAX_CALL_DEPTH {
                return Err(self.invalid(
                    &node_name,
                    op_type,
                    format!("graph calls nest deeper than {MAX_CALL_DEPTH}"),
                ));
            }
            let inner = format!("{}/", self.ir_name(scope, gname, &node_name));
            let mut outs = self.graph(callee, Some(args), &inner, depth + 1)?;
            return Ok(if outs.len() == 1 {
                outs.remove(0)
            } else {
                Value::Tuple(outs)
            });
        }
        let (op, attrs) = match self.prims.get(target) {
            Some(p) => (p.op_type.as_deref().unwrap_or(target), &p.attribute[..]),
            None if op_type.starts_with("REF::") => {
                return Err(self.invalid(
                    &node_name,
                    op_type,
                    format!("{target:?} names no primitive and no graph of the model"),
                ))
            }
            // MindIR 1.x: the primitive's name and attributes on the node itself.
            None => (
                op_type.split(':').next().unwrap_or(op_type),
                &n.attribute[..],
            ),
        };
        let call = Call {
            name: self.ir_name(scope, gname, &node_name),
            op,
            arg_names: n.input.iter().map(|i| format!("{scope}{i}")).collect(),
            args,
            attrs,
            abstract_out: n
                .attribute
                .iter()
                .find(|a| a.name.as_deref() == Some("shape")),
        };
        self.primitive(&call)
    }

    /// The value of a `Constant` node's attribute; a tensor becomes an initializer `ir`.
    pub(super) fn attr_value(&mut self, a: &AttributeProto, ir: &str) -> Value {
        match a.r#type.unwrap_or(0) {
            at::TUPLE | at::LIST => Value::Tuple(
                a.values
                    .iter()
                    .enumerate()
                    .map(|(k, v)| self.attr_value(v, &format!("{ir}/{k}")))
                    .collect(),
            ),
            at::TENSOR | at::TENSORS => match a.t.as_ref().or(a.tensors.first()) {
                Some(t) => {
                    self.initializers.insert(ir.to_string(), const_tensor(t));
                    Value::Tensor(ir.to_string())
                }
                None => Value::None,
            },
            _ => plain_value(a),
        }
    }

    /// Adds an IR node; returns its first output.
    pub(super) fn push(
        &mut self,
        name: &str,
        op: &str,
        domain: &str,
        inputs: Vec<String>,
        outputs: Vec<String>,
        attrs: BTreeMap<String, Attr>,
    ) -> String {
        let first = outputs.first().cloned().unwrap_or_default();
        self.nodes.push(Node {
            name: name.to_string(),
            op_type: op.into(),
            domain: domain.into(),
            inputs,
            outputs,
            attrs,
        });
        first
    }

    /// A float or int64 initializer named after the node: a scalar operand, an axes or shape
    /// input.
    pub(super) fn constant(
        &mut self,
        name: String,
        elem_type: ElemType,
        dims: Vec<i64>,
        ints: Option<Vec<i64>>,
    ) -> String {
        self.used.insert(name.clone());
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

    fn finish(mut self, g: &GraphProto, outputs: Vec<Value>) -> Graph {
        grad::step_order(&mut self.nodes);
        let mut names = Vec::new();
        flatten_tensors(&outputs, &mut names);
        Graph {
            name: g.name.clone().unwrap_or_else(|| "mindir".into()),
            inputs: self.inputs,
            outputs: names
                .into_iter()
                .filter(|n| !self.initializers.contains_key(n))
                .map(|name| ValueDecl {
                    name,
                    elem_type: ElemType(0),
                    shape: None,
                    dim_params: vec![],
                })
                .collect(),
            value_info: BTreeMap::new(),
            initializers: self.initializers,
            nodes: self.nodes,
        }
    }
}

/// The IR tensors of a value, tuples flattened, in order.
pub(super) fn flatten_tensors(values: &[Value], out: &mut Vec<String>) {
    for v in values {
        match v {
            Value::Tensor(t) => out.push(t.clone()),
            Value::Tuple(items) => flatten_tensors(items, out),
            _ => {}
        }
    }
}

/// Whether a node is a graph's `Return` (MindIR 1.x).
fn is_return(n: &NodeProto) -> bool {
    let op = n.op_type.as_deref().unwrap_or("");
    let op = op.strip_prefix("REF::").unwrap_or(op);
    op == "Return" || op.starts_with("Return:")
}

/// The nodes of `g` in an order where every input comes first (file order where it already
/// is, as MindSpore writes it). A cycle is an error naming a node on it.
fn order(g: &GraphProto, source: &str) -> Result<Vec<usize>, ModelError> {
    let by_output: HashMap<&str, usize> = g
        .node
        .iter()
        .enumerate()
        .flat_map(|(i, n)| n.output.iter().map(move |o| (o.as_str(), i)))
        .collect();
    let mut state = vec![0u8; g.node.len()];
    let mut out = Vec::with_capacity(g.node.len());
    for root in 0..g.node.len() {
        let mut stack = vec![(root, 0usize)];
        while let Some((i, next)) = stack.pop() {
            if next == 0 {
                match state[i] {
                    0 => state[i] = 1,
                    _ => continue,
                }
            }
            match g.node[i].input.get(next) {
                Some(input) => {
                    stack.push((i, next + 1));
                    if let Some(&j) = by_output.get(input.as_str()) {
                        match state[j] {
                            0 => stack.push((j, 0)),
                            1 => {
                                return Err(ModelError::Invalid {
                                    path: source.into(),
                                    reason: format!(
                                        "node {:?} is on a cycle of the graph's data edges",
                                        g.node[j].name.as_deref().unwrap_or("")
                                    ),
                                })
                            }
                            _ => {}
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

/// The IR element type of a MindIR `DataType` (ONNX's numbering up to 16; 17 is FLOAT64).
pub(super) fn elem_type(t: i32) -> ElemType {
    ElemType(match t {
        1..=16 => t,
        17 => 11,
        _ => 0,
    })
}

/// An initializer for a MindIR tensor: dims and dtype; the values of a small integer tensor
/// (from `int64_data`, `int32_data` or little-endian `raw_data`).
fn const_tensor(t: &TensorProto) -> ConstTensor {
    let elem = elem_type(t.data_type.unwrap_or(0));
    let count = t
        .dims
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?));
    let ints = count.filter(|&n| n <= MAX_CONST_VALUES).and_then(|n| {
        let values: Vec<i64> = match elem.0 {
            6 | 7 if !t.int64_data.is_empty() => t.int64_data.clone(),
            6 | 7 if !t.int32_data.is_empty() => {
                t.int32_data.iter().map(|&v| i64::from(v)).collect()
            }
            6 => t
                .raw_data
                .as_ref()?
                .chunks_exact(4)
                .map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect(),
            7 => t
                .raw_data
                .as_ref()?
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
            _ => return None,
        };
        (values.len() == n).then_some(values)
    });
    ConstTensor {
        elem_type: elem,
        dims: t.dims.clone(),
        ints,
        external: false,
    }
}

/// The value of a scalar, string, tuple or monad attribute (a tensor: `None`).
pub(super) fn plain_value(a: &AttributeProto) -> Value {
    let first_int = || a.i.or(a.ints.first().copied()).unwrap_or(0);
    match a.r#type.unwrap_or(0) {
        at::FLOAT | at::DOUBLE | at::FLOAT16 | at::BFLOAT16 => Value::Float(
            a.d.or(a.f.map(f64::from))
                .or(a.doubles.first().copied())
                .or(a.floats.first().map(|&f| f64::from(f)))
                .unwrap_or(0.0),
        ),
        at::UINT8
        | at::INT8
        | at::UINT16
        | at::INT16
        | at::INT32
        | at::INT64
        | at::UINT32
        | at::UINT64 => Value::Int(first_int()),
        at::BOOL => Value::Bool(first_int() != 0),
        at::STRING => Value::Str(
            String::from_utf8_lossy(
                a.s.as_deref()
                    .or(a.strings.first().map(Vec::as_slice))
                    .unwrap_or(b""),
            )
            .into_owned(),
        ),
        at::UMONAD | at::IOMONAD => Value::Monad,
        at::TUPLE | at::LIST => Value::Tuple(a.values.iter().map(plain_value).collect()),
        _ => Value::None,
    }
}
