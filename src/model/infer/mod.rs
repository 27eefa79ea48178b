//! Static shape inference, one pass per dynamic profile.
//!
//! The options decide the graph inputs' shapes: `input_shape` replaces the model's declared
//! shapes (-1 allowed), then each profile of `dynamic_batch_size` / `dynamic_image_size` /
//! `dynamic_dims` fills the -1 dims, and shapes are propagated through the whole graph. So an op
//! deep in a network gets concrete shapes per profile, which the key resolver's own -1 filling
//! (graph-fed tensors only) cannot give. Integer values of small constants (`Constant`,
//! initializers, `Shape` of a static tensor, and arithmetic on them) are tracked so that
//! `Reshape`, `Slice`, `Split`, `Unsqueeze` … see their shape operands.

use std::collections::{BTreeMap, BTreeSet};

use crate::key::options::Dynamic;
use crate::key::{AttrValue, Format, Profile, ResolvedOptions};
use crate::model::graph::{Attr, ConstTensor, ElemType, Model, Node};
use crate::model::ModelError;

/// Largest value a single inferred dim may take; larger ones are reported as an inference
/// failure of the op (hostile models cannot make later stages allocate or overflow).
pub const MAX_DIM: i64 = 1 << 40;

/// A tensor's inferred element type and shape.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    /// Element type.
    pub elem_type: ElemType,
    /// Shape; -1 marks a dim no profile fixes (only under a static profile with dynamic inputs).
    pub shape: Vec<i64>,
    /// The values of a small integer tensor when they are known (shape arithmetic).
    pub value: Option<Vec<i64>>,
}

/// An op the importer could not infer, with the reason. Its outputs have no shape, so ops fed
/// by them are skipped too (each with its own entry), unless the model declares the output's
/// shape in `value_info`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedOp {
    /// Node name.
    pub node_name: String,
    /// Op type.
    pub op_type: String,
    /// Why it was skipped.
    pub reason: String,
}

/// The result of inference under one profile.
#[derive(Clone, Debug, PartialEq)]
pub struct InferredGraph {
    /// The profile these shapes belong to.
    pub profile: Profile,
    /// Each graph input's shape under this profile (`None`: the model declares no shape).
    pub input_shapes: Vec<(String, Option<Vec<i64>>)>,
    /// Every tensor with an inferred shape: graph inputs, initializers and node outputs.
    pub tensors: BTreeMap<String, TensorInfo>,
    /// Indices (into `Model::graph.nodes`) of the inferred nodes, in topological order.
    pub order: Vec<usize>,
    /// Normalised attributes of each inferred node, by node index: defaults filled in,
    /// negative axes made non-negative, `auto_pad` turned into explicit `pads`, so that
    /// "absent" and "explicit default" give one key.
    pub attrs: BTreeMap<usize, BTreeMap<String, AttrValue>>,
    /// Ops that could not be inferred, in topological order.
    pub skipped: Vec<SkippedOp>,
}

impl InferredGraph {
    /// The inferred shape of a tensor.
    pub fn shape(&self, tensor: &str) -> Option<&[i64]> {
        self.tensors.get(tensor).map(|t| t.shape.as_slice())
    }
}

/// The profiles of the dynamic option in force, in option order (one `Static` without one).
pub fn profiles(options: &ResolvedOptions) -> Vec<Profile> {
    match options.dynamic() {
        Dynamic::None => vec![Profile::Static],
        Dynamic::Batch(b) => b.iter().map(|&b| Profile::Batch(b)).collect(),
        Dynamic::ImageSize(p) => p
            .iter()
            .map(|&(height, width)| Profile::ImageSize { height, width })
            .collect(),
        Dynamic::Dims(p) => p.iter().cloned().map(Profile::Dims).collect(),
    }
}

impl Model {
    /// Infers every tensor's shape once per profile of the dynamic option in `options`
    /// (once, as [`Profile::Static`], without one), after applying `input_shape`.
    ///
    /// Errors: `input_shape` names a tensor that is not a graph input or gives another rank
    /// ([`ModelError::InputShape`]); a dynamic option with no -1 dim to fill
    /// ([`ModelError::Dynamic`]). Ops that cannot be inferred are not errors: they are listed
    /// in [`InferredGraph::skipped`].
    pub fn infer(&self, options: &ResolvedOptions) -> Result<Vec<InferredGraph>, ModelError> {
        let base = self.input_shapes(options)?;
        let profiles = profiles(options);
        if !matches!(options.dynamic(), Dynamic::None)
            && !base.iter().any(|(_, s)| s.iter().flatten().any(|&d| d < 0))
        {
            return Err(ModelError::Dynamic {
                path: self.source.clone(),
                reason: "a dynamic option is set but no graph input has a -1 dim to fill: \
                         expected --input_shape with -1 on the dynamic dims"
                    .into(),
            });
        }
        let order = topological_order(self);
        Ok(profiles
            .into_iter()
            .map(|profile| {
                let inputs = fill_profile(&base, options, &profile);
                run(self, &order, profile, inputs)
            })
            .collect())
    }

    /// Graph input shapes after `input_shape`, before any profile fills -1 dims.
    fn input_shapes(&self, options: &ResolvedOptions) -> Result<InputShapes, ModelError> {
        let mut shapes: Vec<(String, Option<Vec<i64>>)> = self
            .graph
            .inputs
            .iter()
            .map(|i| (i.name.clone(), i.shape.clone()))
            .collect();
        for (name, dims) in options.input_shape() {
            let Some(slot) = shapes.iter_mut().find(|(n, _)| n == name) else {
                let names: Vec<&str> = self.graph.inputs.iter().map(|i| i.name.as_str()).collect();
                return Err(ModelError::InputShape {
                    path: self.source.clone(),
                    input: name.clone(),
                    reason: format!("the model has no graph input of that name (it has {names:?})"),
                });
            };
            if let Some(model) = &slot.1 {
                if model.len() != dims.len() {
                    return Err(ModelError::InputShape {
                        path: self.source.clone(),
                        input: name.clone(),
                        reason: format!(
                            "--input_shape gives {dims:?}, expected rank {} as the model has it ({model:?})",
                            model.len()
                        ),
                    });
                }
            }
            slot.1 = Some(dims.clone());
        }
        Ok(shapes)
    }
}

/// Fills the -1 dims of the graph inputs for one profile, as the key resolver does for
/// graph-fed tensors: batch on dim 0; image size on H and W of 4-D inputs (by
/// `input_format`); dims in `input_shape` order.
fn fill_profile(
    base: &[(String, Option<Vec<i64>>)],
    options: &ResolvedOptions,
    profile: &Profile,
) -> Vec<(String, Option<Vec<i64>>)> {
    let mut out = base.to_vec();
    match profile {
        Profile::Static => {}
        Profile::Batch(b) => {
            for s in out.iter_mut().filter_map(|(_, s)| s.as_mut()) {
                if let Some(d) = s.first_mut().filter(|d| **d < 0) {
                    *d = *b;
                }
            }
        }
        Profile::ImageSize { height, width } => {
            let (h, w) = if options.input_format() == Format::NHWC {
                (1, 2)
            } else {
                (2, 3)
            };
            for s in out.iter_mut().filter_map(|(_, s)| s.as_mut()) {
                if s.len() == 4 {
                    if s[h] < 0 {
                        s[h] = *height;
                    }
                    if s[w] < 0 {
                        s[w] = *width;
                    }
                }
            }
        }
        Profile::Dims(values) => {
            let mut next = values.iter();
            for (name, _) in options.input_shape() {
                if let Some(s) = out
                    .iter_mut()
                    .find(|(n, _)| n == name)
                    .and_then(|(_, s)| s.as_mut())
                {
                    for d in s.iter_mut().filter(|d| **d < 0) {
                        if let Some(&v) = next.next() {
                            *d = v;
                        }
                    }
                }
            }
        }
    }
    out
}

/// Node indices in a topological order that keeps file order where the file is already
/// sorted. Nodes on a cycle are left out (and reported by `run`).
fn topological_order(model: &Model) -> Vec<usize> {
    let nodes = &model.graph.nodes;
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
    let mut ready: BTreeSet<usize> = (0..nodes.len()).filter(|&i| pending[i] == 0).collect();
    let mut order = Vec::with_capacity(nodes.len());
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &d in &dependents[i] {
            pending[d] -= 1;
            if pending[d] == 0 {
                ready.insert(d);
            }
        }
    }
    order
}

fn run(
    model: &Model,
    order: &[usize],
    profile: Profile,
    input_shapes: Vec<(String, Option<Vec<i64>>)>,
) -> InferredGraph {
    let g = &model.graph;
    let mut tensors: BTreeMap<String, TensorInfo> = BTreeMap::new();
    for (name, c) in &g.initializers {
        tensors.insert(name.clone(), const_info(c));
    }
    for ((name, shape), decl) in input_shapes.iter().zip(&g.inputs) {
        if let Some(shape) = shape {
            tensors.insert(
                name.clone(),
                TensorInfo {
                    elem_type: decl.elem_type,
                    shape: shape.clone(),
                    value: None,
                },
            );
        }
    }
    let mut result = InferredGraph {
        profile,
        input_shapes,
        tensors,
        order: Vec::new(),
        attrs: BTreeMap::new(),
        skipped: Vec::new(),
    };
    // Values of symbolic dims (dim_param) under this profile, from the graph inputs.
    let mut symbols: BTreeMap<&str, i64> = BTreeMap::new();
    for ((_, shape), decl) in result.input_shapes.iter().zip(&g.inputs) {
        for (p, &v) in decl.dim_params.iter().zip(shape.iter().flatten()) {
            if let (Some(p), true) = (p, v >= 0) {
                symbols.entry(p.as_str()).or_insert(v);
            }
        }
    }
    let mut skipped_outputs: BTreeMap<&str, &str> = BTreeMap::new();
    let in_order: BTreeSet<usize> = order.iter().copied().collect();
    for &i in order {
        let node = &g.nodes[i];
        let outcome = node_inputs(node, &result.tensors, &skipped_outputs)
            .and_then(|ins| infer_node(node, &ins, model.opset));
        match outcome {
            Ok((outs, attrs)) => {
                for (name, info) in node.outputs.iter().zip(outs) {
                    if !name.is_empty() {
                        result.tensors.insert(name.clone(), info);
                    }
                }
                result.attrs.insert(i, attrs);
                result.order.push(i);
            }
            Err(reason) => {
                for o in node.outputs.iter().filter(|o| !o.is_empty()) {
                    match declared(model, o, &result.profile, &symbols) {
                        Some(info) => {
                            result.tensors.insert(o.clone(), info);
                        }
                        None => {
                            skipped_outputs.insert(o.as_str(), node.name.as_str());
                        }
                    }
                }
                result.skipped.push(SkippedOp {
                    node_name: node.name.clone(),
                    op_type: node.op_type.clone(),
                    reason,
                });
            }
        }
    }
    for (i, node) in g.nodes.iter().enumerate() {
        if !in_order.contains(&i) {
            result.skipped.push(SkippedOp {
                node_name: node.name.clone(),
                op_type: node.op_type.clone(),
                reason: "the node is on a cycle of the graph".into(),
            });
        }
    }
    result
}

/// A skipped op's output as the model declares it (`value_info` or graph outputs), when the
/// declaration is static once its symbolic dims take the values the graph inputs give them
/// (and, under a batch profile, a remaining dynamic dim 0 takes the batch).
fn declared(
    model: &Model,
    name: &str,
    profile: &Profile,
    symbols: &BTreeMap<&str, i64>,
) -> Option<TensorInfo> {
    let decl = model
        .graph
        .value_info
        .get(name)
        .or_else(|| model.graph.outputs.iter().find(|o| o.name == name))?;
    let mut shape = decl.shape.clone()?;
    for (d, p) in shape.iter_mut().zip(&decl.dim_params) {
        if let Some(v) = p.as_deref().and_then(|p| symbols.get(p)) {
            *d = *v;
        }
    }
    if let (Profile::Batch(b), Some(d)) = (profile, shape.first_mut()) {
        if *d < 0 {
            *d = *b;
        }
    }
    if shape.iter().any(|&d| d < 0) || decl.elem_type.0 == 0 {
        return None;
    }
    Some(TensorInfo {
        elem_type: decl.elem_type,
        shape,
        value: None,
    })
}

fn const_info(c: &ConstTensor) -> TensorInfo {
    TensorInfo {
        elem_type: c.elem_type,
        shape: c.dims.clone(),
        value: c.ints.clone(),
    }
}

type Inputs = Vec<Option<TensorInfo>>;

/// Graph input shapes by input name (`None`: no declared shape).
type InputShapes = Vec<(String, Option<Vec<i64>>)>;

fn node_inputs(
    node: &Node,
    tensors: &BTreeMap<String, TensorInfo>,
    skipped: &BTreeMap<&str, &str>,
) -> Result<Inputs, String> {
    node.inputs
        .iter()
        .map(|name| {
            if name.is_empty() {
                return Ok(None);
            }
            match tensors.get(name) {
                Some(t) => Ok(Some(t.clone())),
                None => Err(match skipped.get(name.as_str()) {
                    Some(p) => {
                        format!("input {name:?} has no shape: its producer {p:?} was skipped")
                    }
                    None => format!(
                        "input {name:?} has no shape: it is not produced by any node, nor an \
                         initializer, nor a graph input with a declared shape"
                    ),
                }),
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Per-op inference.

type Attrs = BTreeMap<String, AttrValue>;
type Outcome = Result<(Vec<TensorInfo>, Attrs), String>;

/// Ops whose output has the shape and type of input 0.
const UNARY: &[&str] = &[
    "Identity",
    "Relu",
    "Sigmoid",
    "Tanh",
    "Gelu",
    "Erf",
    "Sqrt",
    "Exp",
    "Log",
    "Neg",
    "Abs",
    "Reciprocal",
    "LeakyRelu",
    "Elu",
    "Selu",
    "Softplus",
    "Softsign",
    "HardSigmoid",
    "HardSwish",
    "Clip",
    "Floor",
    "Ceil",
    "Round",
    "Sign",
    "Sin",
    "Cos",
    "Mish",
    "Not",
    "Softmax",
    "LogSoftmax",
    "Hardmax",
    "InstanceNormalization",
    "LpNormalization",
    "LRN",
];

/// Broadcasting ops whose output has the type of input 0.
const BROADCAST: &[&str] = &[
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "Sum", "Mean", "PRelu", "And", "Or",
    "Xor", "BitShift",
];

/// Broadcasting comparisons (bool output).
const COMPARE: &[&str] = &["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"];

/// Attribute defaults inserted when absent, per op type.
fn defaults(op: &str, opset: i64) -> Vec<(&'static str, AttrValue)> {
    let f = |v: f32| AttrValue::Float(f64::from(v));
    match op {
        "Conv" | "ConvTranspose" => vec![("group", AttrValue::Int(1))],
        "BatchNormalization" => vec![("epsilon", f(1e-5)), ("momentum", f(0.9))],
        "Gemm" => vec![
            ("alpha", f(1.0)),
            ("beta", f(1.0)),
            ("transA", AttrValue::Int(0)),
            ("transB", AttrValue::Int(0)),
        ],
        "LayerNormalization" => vec![
            ("axis", AttrValue::Int(-1)),
            ("epsilon", f(1e-5)),
            ("stash_type", AttrValue::Int(1)),
        ],
        "Softmax" | "LogSoftmax" | "Hardmax" => {
            vec![("axis", AttrValue::Int(if opset >= 13 { -1 } else { 1 }))]
        }
        "Flatten" => vec![("axis", AttrValue::Int(1))],
        "Split" | "Gather" => vec![("axis", AttrValue::Int(0))],
        "LeakyRelu" => vec![("alpha", f(0.01))],
        "Elu" => vec![("alpha", f(1.0))],
        "HardSigmoid" => vec![("alpha", f(0.2)), ("beta", f(0.5))],
        "Gelu" => vec![("approximate", AttrValue::Str("none".into()))],
        "AveragePool" => vec![
            ("ceil_mode", AttrValue::Int(0)),
            ("count_include_pad", AttrValue::Int(0)),
        ],
        "MaxPool" => vec![
            ("ceil_mode", AttrValue::Int(0)),
            ("storage_order", AttrValue::Int(0)),
        ],
        _ => vec![],
    }
}

fn convert_attrs(node: &Node, opset: i64) -> Attrs {
    let mut out = Attrs::new();
    for (k, v) in &node.attrs {
        let v = match v {
            Attr::Float(f) => AttrValue::Float(f64::from(*f)),
            Attr::Int(i) => AttrValue::Int(*i),
            Attr::Str(s) => AttrValue::Str(s.clone()),
            Attr::Floats(f) => AttrValue::Floats(f.iter().map(|&x| f64::from(x)).collect()),
            Attr::Ints(i) => AttrValue::Ints(i.clone()),
            Attr::Strs(s) => AttrValue::Strs(s.clone()),
            Attr::Tensor(_) | Attr::Other => continue,
        };
        out.insert(k.clone(), v);
    }
    for (k, v) in defaults(&node.op_type, opset) {
        out.entry(k.to_string()).or_insert(v);
    }
    out
}

fn attr_int(node: &Node, name: &str) -> Option<i64> {
    match node.attrs.get(name) {
        Some(Attr::Int(i)) => Some(*i),
        _ => None,
    }
}

fn attr_ints(node: &Node, name: &str) -> Option<Vec<i64>> {
    match node.attrs.get(name) {
        Some(Attr::Ints(i)) => Some(i.clone()),
        _ => None,
    }
}

fn attr_str(node: &Node, name: &str) -> Option<String> {
    match node.attrs.get(name) {
        Some(Attr::Str(s)) => Some(s.clone()),
        _ => None,
    }
}

fn input(ins: &Inputs, i: usize) -> Result<&TensorInfo, String> {
    ins.get(i)
        .and_then(Option::as_ref)
        .ok_or_else(|| format!("expected input {i}"))
}

fn opt_input(ins: &Inputs, i: usize) -> Option<&TensorInfo> {
    ins.get(i).and_then(Option::as_ref)
}

/// The values of a constant integer input (shape, axes …).
fn const_values(ins: &Inputs, i: usize, what: &str) -> Result<Vec<i64>, String> {
    input(ins, i)?
        .value
        .clone()
        .ok_or_else(|| format!("input {i} ({what}) is not a constant the importer can read"))
}

fn info(elem_type: ElemType, shape: Vec<i64>) -> TensorInfo {
    TensorInfo {
        elem_type,
        shape,
        value: None,
    }
}

fn check_dims(shape: &[i64]) -> Result<(), String> {
    match shape.iter().find(|&&d| !(-1..=MAX_DIM).contains(&d)) {
        Some(d) => Err(format!(
            "inferred dim {d} is out of range (shape {shape:?})"
        )),
        None => Ok(()),
    }
}

fn norm_axis(axis: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if (0..r).contains(&a) {
        Ok(a as usize)
    } else {
        Err(format!("axis {axis} is out of range for rank {rank}"))
    }
}

/// Product of dims; -1 if any is -1 (and none is 0).
fn product(dims: &[i64]) -> Result<i64, String> {
    if dims.contains(&0) {
        return Ok(0);
    }
    if dims.iter().any(|&d| d < 0) {
        return Ok(-1);
    }
    dims.iter().try_fold(1i64, |acc, &d| {
        acc.checked_mul(d)
            .filter(|&p| p <= MAX_DIM)
            .ok_or_else(|| format!("element count of {dims:?} overflows"))
    })
}

fn broadcast(shapes: &[&[i64]]) -> Result<Vec<i64>, String> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1i64; rank];
    for s in shapes {
        let off = rank - s.len();
        for (i, &d) in s.iter().enumerate() {
            let o = &mut out[off + i];
            *o = match (*o, d) {
                (a, b) if a == b => a,
                (1, b) => b,
                (a, 1) => a,
                (-1, b) => b,
                (a, -1) => a,
                (a, b) => {
                    return Err(format!(
                        "shapes {:?} do not broadcast (dim {a} against {b})",
                        shapes
                    ))
                }
            };
        }
    }
    Ok(out)
}

fn int_binary(op: &str, a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let n = a.len().max(b.len());
    if !(a.len() == n || a.len() == 1) || !(b.len() == n || b.len() == 1) {
        return None;
    }
    (0..n)
        .map(|i| {
            let x = a[if a.len() == 1 { 0 } else { i }];
            let y = b[if b.len() == 1 { 0 } else { i }];
            match op {
                "Add" => x.checked_add(y),
                "Sub" => x.checked_sub(y),
                "Mul" => x.checked_mul(y),
                "Div" => x.checked_div_euclid(y),
                _ => None,
            }
        })
        .collect()
}

fn infer_node(node: &Node, ins: &Inputs, opset: i64) -> Outcome {
    if !(node.domain.is_empty() || node.domain == "ai.onnx") {
        return Err(format!(
            "op {} of domain {:?} is not supported by the importer",
            node.op_type, node.domain
        ));
    }
    let mut attrs = convert_attrs(node, opset);
    let op = node.op_type.as_str();
    let outs: Vec<TensorInfo> = match op {
        "Constant" => vec![constant(node)?],
        _ if UNARY.contains(&op) => {
            let x = input(ins, 0)?;
            if matches!(op, "Softmax" | "LogSoftmax" | "Hardmax") {
                normalise_axis(&mut attrs, "axis", x.shape.len())?;
            }
            let mut out = x.clone();
            if op != "Identity" {
                out.value = None;
            }
            vec![out]
        }
        "Dropout" => {
            let x = input(ins, 0)?;
            vec![x.clone(), info(ElemType::BOOL, x.shape.clone())]
        }
        "Cast" => {
            let x = input(ins, 0)?;
            let to = ElemType(attr_int(node, "to").ok_or("Cast without a `to` attribute")? as i32);
            let value = if to.is_integer() {
                x.value.clone()
            } else {
                None
            };
            vec![TensorInfo {
                elem_type: to,
                shape: x.shape.clone(),
                value,
            }]
        }
        _ if BROADCAST.contains(&op) || COMPARE.contains(&op) || op == "Where" => {
            let present: Vec<&TensorInfo> = ins.iter().flatten().collect();
            if present.is_empty() {
                return Err("expected at least one input".into());
            }
            let shapes: Vec<&[i64]> = present.iter().map(|t| t.shape.as_slice()).collect();
            let shape = broadcast(&shapes)?;
            let elem = if COMPARE.contains(&op) {
                ElemType::BOOL
            } else if op == "Where" {
                input(ins, 1)?.elem_type
            } else {
                present[0].elem_type
            };
            let value = match (present.as_slice(), op) {
                ([a, b], "Add" | "Sub" | "Mul" | "Div") => a
                    .value
                    .as_ref()
                    .zip(b.value.as_ref())
                    .and_then(|(x, y)| int_binary(op, x, y)),
                _ => None,
            };
            vec![TensorInfo {
                elem_type: elem,
                shape,
                value,
            }]
        }
        "Conv" => conv(node, ins, &mut attrs)?,
        "ConvTranspose" => conv_transpose(node, ins, &mut attrs)?,
        "ArgMax" | "ArgMin" => {
            let x = input(ins, 0)?;
            let axis = norm_axis(attr_int(node, "axis").unwrap_or(0), x.shape.len())?;
            let keep = attr_int(node, "keepdims").unwrap_or(1) != 0;
            attrs.insert("axis".into(), AttrValue::Int(axis as i64));
            attrs.insert("keepdims".into(), AttrValue::Int(i64::from(keep)));
            let mut shape = x.shape.clone();
            if keep {
                shape[axis] = 1;
            } else {
                shape.remove(axis);
            }
            vec![info(ElemType::INT64, shape)]
        }
        "Tile" => {
            let x = input(ins, 0)?;
            let reps = const_values(ins, 1, "repeats")?;
            if reps.len() != x.shape.len() || reps.iter().any(|&r| r < 0) {
                return Err(format!("repeats {reps:?} do not fit shape {:?}", x.shape));
            }
            let shape = x
                .shape
                .iter()
                .zip(&reps)
                .map(|(&d, &r)| product(&[d, r]))
                .collect::<Result<_, _>>()?;
            vec![info(x.elem_type, shape)]
        }
        "MaxPool" | "AveragePool" | "LpPool" => pool(node, ins, &mut attrs)?,
        "GlobalAveragePool" | "GlobalMaxPool" | "GlobalLpPool" => {
            let x = input(ins, 0)?;
            if x.shape.len() < 3 {
                return Err(format!("expected an N,C,spatial input, got {:?}", x.shape));
            }
            let mut s = x.shape[..2].to_vec();
            s.resize(x.shape.len(), 1);
            vec![info(x.elem_type, s)]
        }
        "BatchNormalization" => {
            let x = input(ins, 0)?;
            if x.shape.len() < 2 {
                return Err(format!("expected an N,C,… input, got {:?}", x.shape));
            }
            let c = info(x.elem_type, vec![x.shape[1]]);
            vec![x.clone(), c.clone(), c]
                .into_iter()
                .take(node.outputs.len().max(1))
                .map(|mut t| {
                    t.value = None;
                    t
                })
                .collect()
        }
        "LayerNormalization" => {
            let x = input(ins, 0)?;
            let axis = normalise_axis(&mut attrs, "axis", x.shape.len())?;
            let mut stat = x.shape[..axis].to_vec();
            stat.resize(x.shape.len(), 1);
            vec![
                info(x.elem_type, x.shape.clone()),
                info(ElemType::FLOAT, stat.clone()),
                info(ElemType::FLOAT, stat),
            ]
        }
        "MatMul" => vec![matmul(input(ins, 0)?, input(ins, 1)?)?],
        "Gemm" => {
            let (a, b) = (input(ins, 0)?, input(ins, 1)?);
            if a.shape.len() != 2 || b.shape.len() != 2 {
                return Err(format!(
                    "expected 2-D A and B, got {:?} and {:?}",
                    a.shape, b.shape
                ));
            }
            let ta = attr_int(node, "transA").unwrap_or(0) != 0;
            let tb = attr_int(node, "transB").unwrap_or(0) != 0;
            let (m, ka) = if ta {
                (a.shape[1], a.shape[0])
            } else {
                (a.shape[0], a.shape[1])
            };
            let (kb, n) = if tb {
                (b.shape[1], b.shape[0])
            } else {
                (b.shape[0], b.shape[1])
            };
            if ka >= 0 && kb >= 0 && ka != kb {
                return Err(format!(
                    "inner dims differ: A {:?}, B {:?}",
                    a.shape, b.shape
                ));
            }
            if let Some(c) = opt_input(ins, 2) {
                broadcast(&[&c.shape, &[m, n]])?;
            }
            vec![info(a.elem_type, vec![m, n])]
        }
        "Reshape" => vec![reshape(node, ins, opset)?],
        "Flatten" => {
            let x = input(ins, 0)?;
            let r = x.shape.len();
            let axis = attr_int(node, "axis").unwrap_or(1);
            let a = if axis < 0 { axis + r as i64 } else { axis };
            if !(0..=r as i64).contains(&a) {
                return Err(format!("axis {axis} is out of range for rank {r}"));
            }
            attrs.insert("axis".into(), AttrValue::Int(a));
            let a = a as usize;
            vec![TensorInfo {
                elem_type: x.elem_type,
                shape: vec![product(&x.shape[..a])?, product(&x.shape[a..])?],
                value: x.value.clone(),
            }]
        }
        "Transpose" => {
            let x = input(ins, 0)?;
            let r = x.shape.len();
            let perm = attr_ints(node, "perm").unwrap_or_else(|| (0..r as i64).rev().collect());
            let mut seen = vec![false; r];
            let mut shape = Vec::with_capacity(r);
            for &p in &perm {
                let p = usize::try_from(p).ok().filter(|&p| p < r && !seen[p]);
                let Some(p) = p else {
                    return Err(format!("perm {perm:?} is not a permutation of rank {r}"));
                };
                seen[p] = true;
                shape.push(x.shape[p]);
            }
            if perm.len() != r {
                return Err(format!("perm {perm:?} is not a permutation of rank {r}"));
            }
            attrs.insert("perm".into(), AttrValue::Ints(perm));
            vec![info(x.elem_type, shape)]
        }
        "Concat" => {
            let present: Vec<&TensorInfo> = ins.iter().flatten().collect();
            let first = present.first().ok_or("expected at least one input")?;
            let r = first.shape.len();
            let axis = norm_axis(attr_int(node, "axis").ok_or("Concat without axis")?, r)?;
            attrs.insert("axis".into(), AttrValue::Int(axis as i64));
            let mut shape = first.shape.clone();
            let mut total = 0i64;
            for t in &present {
                if t.shape.len() != r {
                    return Err(format!("inputs of different ranks: {:?}", t.shape));
                }
                total = match (total, t.shape[axis]) {
                    (-1, _) | (_, -1) => -1,
                    (a, b) => a.checked_add(b).ok_or("concat size overflows")?,
                };
                for (d, &v) in shape.iter_mut().zip(&t.shape) {
                    if *d < 0 {
                        *d = v;
                    }
                }
            }
            shape[axis] = total;
            let value = if r == 1 {
                present
                    .iter()
                    .map(|t| t.value.clone())
                    .collect::<Option<Vec<_>>>()
                    .map(|v| v.concat())
            } else {
                None
            };
            vec![TensorInfo {
                elem_type: first.elem_type,
                shape,
                value,
            }]
        }
        "Split" => split(node, ins, opset, &mut attrs)?,
        "Slice" => vec![slice(node, ins, opset)?],
        "ReduceMean" | "ReduceSum" | "ReduceMax" | "ReduceMin" | "ReduceProd" | "ReduceL1"
        | "ReduceL2" | "ReduceSumSquare" | "ReduceLogSumExp" | "ReduceLogSum" => {
            vec![reduce(node, ins, &mut attrs)?]
        }
        "Shape" => {
            let x = input(ins, 0)?;
            let r = x.shape.len() as i64;
            let clamp = |v: i64| if v < 0 { (v + r).max(0) } else { v.min(r) } as usize;
            let start = clamp(attr_int(node, "start").unwrap_or(0));
            let end = clamp(attr_int(node, "end").unwrap_or(r)).max(start);
            let dims = x.shape[start..end].to_vec();
            let value = (!dims.iter().any(|&d| d < 0)).then(|| dims.clone());
            vec![TensorInfo {
                elem_type: ElemType::INT64,
                shape: vec![dims.len() as i64],
                value,
            }]
        }
        "Gather" => {
            let (data, idx) = (input(ins, 0)?, input(ins, 1)?);
            let axis = normalise_axis(&mut attrs, "axis", data.shape.len())?;
            let mut shape = data.shape[..axis].to_vec();
            shape.extend(&idx.shape);
            shape.extend(&data.shape[axis + 1..]);
            let value = match (&data.value, &idx.value) {
                (Some(d), Some(ix)) if data.shape.len() == 1 => ix
                    .iter()
                    .map(|&i| {
                        let i = if i < 0 { i + d.len() as i64 } else { i };
                        usize::try_from(i).ok().and_then(|i| d.get(i).copied())
                    })
                    .collect(),
                _ => None,
            };
            vec![TensorInfo {
                elem_type: data.elem_type,
                shape,
                value,
            }]
        }
        "Unsqueeze" => {
            let x = input(ins, 0)?;
            let axes = if opset >= 13 {
                const_values(ins, 1, "axes")?
            } else {
                attr_ints(node, "axes").ok_or("Unsqueeze without axes")?
            };
            let r = x.shape.len() + axes.len();
            let mut axes = axes
                .iter()
                .map(|&a| norm_axis(a, r))
                .collect::<Result<Vec<_>, _>>()?;
            axes.sort_unstable();
            axes.dedup();
            let mut rest = x.shape.iter();
            let shape: Vec<i64> = (0..r)
                .map(|i| {
                    if axes.binary_search(&i).is_ok() {
                        1
                    } else {
                        rest.next().copied().unwrap_or(1)
                    }
                })
                .collect();
            attrs.insert(
                "axes".into(),
                AttrValue::Ints(axes.iter().map(|&a| a as i64).collect()),
            );
            vec![TensorInfo {
                elem_type: x.elem_type,
                shape,
                value: x.value.clone(),
            }]
        }
        "Squeeze" => {
            let x = input(ins, 0)?;
            let axes = if opset >= 13 {
                match opt_input(ins, 1) {
                    Some(_) => Some(const_values(ins, 1, "axes")?),
                    None => None,
                }
            } else {
                attr_ints(node, "axes")
            };
            let r = x.shape.len();
            let axes: Vec<usize> = match axes {
                Some(a) => a
                    .iter()
                    .map(|&a| norm_axis(a, r))
                    .collect::<Result<_, _>>()?,
                None => {
                    if x.shape.contains(&-1) {
                        return Err("Squeeze without axes on a shape with dynamic dims".into());
                    }
                    (0..r).filter(|&i| x.shape[i] == 1).collect()
                }
            };
            let shape = (0..r)
                .filter(|i| !axes.contains(i))
                .map(|i| x.shape[i])
                .collect();
            vec![TensorInfo {
                elem_type: x.elem_type,
                shape,
                value: x.value.clone(),
            }]
        }
        "Expand" => {
            let x = input(ins, 0)?;
            let s = const_values(ins, 1, "shape")?;
            check_dims(&s)?;
            vec![info(x.elem_type, broadcast(&[&x.shape, &s])?)]
        }
        "ConstantOfShape" => {
            let s = const_values(ins, 0, "shape")?;
            check_dims(&s)?;
            let elem = match node.attrs.get("value") {
                Some(Attr::Tensor(t)) => t.elem_type,
                _ => ElemType::FLOAT,
            };
            vec![info(elem, s)]
        }
        "Pad" => {
            let x = input(ins, 0)?;
            let pads = if opset >= 11 {
                const_values(ins, 1, "pads")?
            } else {
                attr_ints(node, "pads").ok_or("Pad without pads")?
            };
            let r = x.shape.len();
            let axes: Vec<usize> = match opt_input(ins, 3) {
                Some(_) => const_values(ins, 3, "axes")?
                    .iter()
                    .map(|&a| norm_axis(a, r))
                    .collect::<Result<_, _>>()?,
                None => (0..r).collect(),
            };
            if pads.len() != 2 * axes.len() {
                return Err(format!("pads {pads:?} do not match rank {r}"));
            }
            let mut shape = x.shape.clone();
            for (k, &a) in axes.iter().enumerate() {
                if shape[a] >= 0 {
                    shape[a] = shape[a]
                        .checked_add(pads[k])
                        .and_then(|v| v.checked_add(pads[k + axes.len()]))
                        .ok_or("padded dim overflows")?;
                    if shape[a] < 0 {
                        return Err(format!("pads {pads:?} make a negative dim"));
                    }
                }
            }
            vec![info(x.elem_type, shape)]
        }
        _ => {
            return Err(format!(
                "op type {} has no shape inference in the importer",
                node.op_type
            ))
        }
    };
    let mut outs = outs;
    outs.truncate(node.outputs.len().max(1));
    for o in &outs {
        check_dims(&o.shape)?;
    }
    Ok((outs, attrs))
}

fn normalise_axis(attrs: &mut Attrs, name: &str, rank: usize) -> Result<usize, String> {
    let axis = match attrs.get(name) {
        Some(AttrValue::Int(a)) => *a,
        _ => return Err(format!("expected an integer attribute {name}")),
    };
    let a = norm_axis(axis, rank)?;
    attrs.insert(name.into(), AttrValue::Int(a as i64));
    Ok(a)
}

fn constant(node: &Node) -> Result<TensorInfo, String> {
    let (name, attr) = node
        .attrs
        .iter()
        .next()
        .ok_or("Constant without a value attribute")?;
    Ok(match (name.as_str(), attr) {
        ("value", Attr::Tensor(t)) => const_info(t),
        ("value_float", Attr::Float(_)) => info(ElemType::FLOAT, vec![]),
        ("value_floats", Attr::Floats(f)) => info(ElemType::FLOAT, vec![f.len() as i64]),
        ("value_int", Attr::Int(i)) => TensorInfo {
            elem_type: ElemType::INT64,
            shape: vec![],
            value: Some(vec![*i]),
        },
        ("value_ints", Attr::Ints(i)) => TensorInfo {
            elem_type: ElemType::INT64,
            shape: vec![i.len() as i64],
            value: Some(i.clone()),
        },
        ("value_string", _) => info(ElemType(8), vec![]),
        ("value_strings", Attr::Strs(s)) => info(ElemType(8), vec![s.len() as i64]),
        (other, _) => return Err(format!("Constant with unsupported attribute {other:?}")),
    })
}

fn matmul(a: &TensorInfo, b: &TensorInfo) -> Result<TensorInfo, String> {
    let (sa, sb) = (&a.shape, &b.shape);
    if sa.is_empty() || sb.is_empty() {
        return Err(format!("MatMul of a scalar: {sa:?} × {sb:?}"));
    }
    let pa: Vec<i64> = if sa.len() == 1 {
        vec![1, sa[0]]
    } else {
        sa.clone()
    };
    let pb: Vec<i64> = if sb.len() == 1 {
        vec![sb[0], 1]
    } else {
        sb.clone()
    };
    let (ka, kb) = (pa[pa.len() - 1], pb[pb.len() - 2]);
    if ka >= 0 && kb >= 0 && ka != kb {
        return Err(format!("inner dims differ: {sa:?} × {sb:?}"));
    }
    let mut shape = broadcast(&[&pa[..pa.len() - 2], &pb[..pb.len() - 2]])?;
    if sa.len() > 1 {
        shape.push(pa[pa.len() - 2]);
    }
    if sb.len() > 1 {
        shape.push(pb[pb.len() - 1]);
    }
    Ok(info(a.elem_type, shape))
}

/// Output size of one spatial dim of a convolution or pooling window.
fn window(input: i64, k: i64, s: i64, d: i64, pads: (i64, i64), ceil: bool) -> Result<i64, String> {
    if input < 0 {
        return Ok(-1);
    }
    if k <= 0 || s <= 0 || d <= 0 {
        return Err(format!(
            "kernel {k}, stride {s}, dilation {d} must be positive"
        ));
    }
    let overflow = || "window size overflows".to_string();
    let eff = (k - 1)
        .checked_mul(d)
        .and_then(|v| v.checked_add(1))
        .ok_or_else(overflow)?;
    let span = input
        .checked_add(pads.0)
        .and_then(|v| v.checked_add(pads.1))
        .and_then(|v| v.checked_sub(eff))
        .ok_or_else(overflow)?;
    if span < 0 {
        return Err(format!(
            "window {eff} is larger than the padded input {}",
            span + eff
        ));
    }
    let mut out = if ceil {
        span.div_euclid(s) + i64::from(span % s != 0)
    } else {
        span / s
    } + 1;
    // ONNX: the last window must start inside the input or the left padding.
    if ceil && (out - 1) * s >= input + pads.0 {
        out -= 1;
    }
    Ok(out)
}

/// Shared by Conv and pooling: spatial output dims and normalised `pads`.
fn spatial(
    node: &Node,
    x: &[i64],
    kernel: &[i64],
    ceil: bool,
    attrs: &mut Attrs,
) -> Result<Vec<i64>, String> {
    let n = kernel.len();
    if x.len() != n + 2 {
        return Err(format!(
            "input {x:?} has rank {}, expected {} for kernel {kernel:?}",
            x.len(),
            n + 2
        ));
    }
    let strides = attr_ints(node, "strides").unwrap_or_else(|| vec![1; n]);
    let dilations = attr_ints(node, "dilations").unwrap_or_else(|| vec![1; n]);
    if strides.len() != n || dilations.len() != n {
        return Err(format!(
            "strides {strides:?} / dilations {dilations:?} do not match kernel {kernel:?}"
        ));
    }
    if kernel
        .iter()
        .chain(&strides)
        .chain(&dilations)
        .any(|&v| v <= 0)
    {
        return Err(format!(
            "kernel {kernel:?}, strides {strides:?} and dilations {dilations:?} must be positive"
        ));
    }
    let auto_pad = attr_str(node, "auto_pad").unwrap_or_else(|| "NOTSET".into());
    let pads = match auto_pad.as_str() {
        "NOTSET" | "" => attr_ints(node, "pads").unwrap_or_else(|| vec![0; 2 * n]),
        "VALID" => vec![0; 2 * n],
        "SAME_UPPER" | "SAME_LOWER" => {
            let mut p = vec![0; 2 * n];
            for i in 0..n {
                let input = x[i + 2];
                if input < 0 {
                    // Pads depend on a dim no profile fixes: keep auto_pad in the key.
                    return Ok(vec![-1; n]);
                }
                let out = input / strides[i] + i64::from(input % strides[i] != 0);
                let eff = (kernel[i] - 1)
                    .saturating_mul(dilations[i])
                    .saturating_add(1);
                let total = (out - 1)
                    .saturating_mul(strides[i])
                    .saturating_add(eff)
                    .saturating_sub(input)
                    .max(0);
                let small = total / 2;
                let (b, e) = if auto_pad == "SAME_UPPER" {
                    (small, total - small)
                } else {
                    (total - small, small)
                };
                p[i] = b;
                p[i + n] = e;
            }
            p
        }
        other => return Err(format!("unknown auto_pad {other:?}")),
    };
    if pads.len() != 2 * n {
        return Err(format!("pads {pads:?} do not match kernel {kernel:?}"));
    }
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(window(
            x[i + 2],
            kernel[i],
            strides[i],
            dilations[i],
            (pads[i], pads[i + n]),
            ceil,
        )?);
    }
    attrs.remove("auto_pad");
    attrs.insert("pads".into(), AttrValue::Ints(pads));
    attrs.insert("strides".into(), AttrValue::Ints(strides));
    attrs.insert("dilations".into(), AttrValue::Ints(dilations));
    attrs.insert("kernel_shape".into(), AttrValue::Ints(kernel.to_vec()));
    Ok(out)
}

fn conv(node: &Node, ins: &Inputs, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, String> {
    let (x, w) = (input(ins, 0)?, input(ins, 1)?);
    if w.shape.len() < 3 {
        return Err(format!("expected a weight of rank ≥ 3, got {:?}", w.shape));
    }
    let kernel = attr_ints(node, "kernel_shape").unwrap_or_else(|| w.shape[2..].to_vec());
    let group = attr_int(node, "group").unwrap_or(1);
    if x.shape.len() >= 2
        && x.shape[1] >= 0
        && w.shape[1] >= 0
        && (group <= 0 || w.shape[1].checked_mul(group) != Some(x.shape[1]))
    {
        return Err(format!(
            "input channels {} do not match weight {:?} with group {group}",
            x.shape[1], w.shape
        ));
    }
    let sp = spatial(node, &x.shape, &kernel, false, attrs)?;
    let mut shape = vec![x.shape[0], w.shape[0]];
    shape.extend(sp);
    Ok(vec![info(x.elem_type, shape)])
}

fn conv_transpose(node: &Node, ins: &Inputs, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, String> {
    let (x, w) = (input(ins, 0)?, input(ins, 1)?);
    if w.shape.len() < 3 || x.shape.len() != w.shape.len() {
        return Err(format!(
            "expected input and weight of one rank ≥ 3, got {:?} and {:?}",
            x.shape, w.shape
        ));
    }
    let n = w.shape.len() - 2;
    let kernel = attr_ints(node, "kernel_shape").unwrap_or_else(|| w.shape[2..].to_vec());
    let strides = attr_ints(node, "strides").unwrap_or_else(|| vec![1; n]);
    let dilations = attr_ints(node, "dilations").unwrap_or_else(|| vec![1; n]);
    let out_pad = attr_ints(node, "output_padding").unwrap_or_else(|| vec![0; n]);
    let pads = attr_ints(node, "pads").unwrap_or_else(|| vec![0; 2 * n]);
    let group = attr_int(node, "group").unwrap_or(1);
    if [kernel.len(), strides.len(), dilations.len(), out_pad.len()] != [n; 4]
        || pads.len() != 2 * n
    {
        return Err(
            "kernel_shape, strides, dilations, output_padding or pads do not match the rank".into(),
        );
    }
    if kernel
        .iter()
        .chain(&strides)
        .chain(&dilations)
        .any(|&v| v <= 0)
        || group <= 0
    {
        return Err("kernel, strides, dilations and group must be positive".into());
    }
    if !matches!(attr_str(node, "auto_pad").as_deref(), None | Some("NOTSET")) {
        return Err("ConvTranspose with auto_pad is not supported by the importer".into());
    }
    let channels = product(&[w.shape[1], group])?;
    let mut shape = vec![x.shape[0], channels];
    match attr_ints(node, "output_shape") {
        Some(o) if o.len() == n => shape.extend(o),
        Some(o) => return Err(format!("output_shape {o:?} does not match the rank")),
        None => {
            for i in 0..n {
                let input = x.shape[i + 2];
                shape.push(if input < 0 {
                    -1
                } else {
                    let eff = (kernel[i] - 1)
                        .checked_mul(dilations[i])
                        .and_then(|v| v.checked_add(1));
                    strides[i]
                        .checked_mul(input - 1)
                        .and_then(|v| v.checked_add(out_pad[i]))
                        .zip(eff)
                        .and_then(|(v, e)| v.checked_add(e))
                        .and_then(|v| v.checked_sub(pads[i]))
                        .and_then(|v| v.checked_sub(pads[i + n]))
                        .filter(|&v| v >= 0)
                        .ok_or_else(|| format!("output dim {i} is out of range"))?
                });
            }
        }
    }
    attrs.remove("auto_pad");
    attrs.insert("kernel_shape".into(), AttrValue::Ints(kernel));
    attrs.insert("strides".into(), AttrValue::Ints(strides));
    attrs.insert("dilations".into(), AttrValue::Ints(dilations));
    attrs.insert("pads".into(), AttrValue::Ints(pads));
    attrs.insert("output_padding".into(), AttrValue::Ints(out_pad));
    Ok(vec![info(x.elem_type, shape)])
}

fn pool(node: &Node, ins: &Inputs, attrs: &mut Attrs) -> Result<Vec<TensorInfo>, String> {
    let x = input(ins, 0)?;
    let kernel = attr_ints(node, "kernel_shape").ok_or("pooling without kernel_shape")?;
    let ceil = attr_int(node, "ceil_mode").unwrap_or(0) != 0;
    let sp = spatial(node, &x.shape, &kernel, ceil, attrs)?;
    let mut shape = x.shape[..2].to_vec();
    shape.extend(sp);
    let y = info(x.elem_type, shape.clone());
    Ok(vec![y, info(ElemType::INT64, shape)])
}

fn reshape(node: &Node, ins: &Inputs, opset: i64) -> Result<TensorInfo, String> {
    let x = input(ins, 0)?;
    let target = if opset >= 5 {
        const_values(ins, 1, "shape")?
    } else {
        attr_ints(node, "shape").ok_or("Reshape without shape")?
    };
    let allow_zero = attr_int(node, "allowzero").unwrap_or(0) != 0;
    let mut shape = Vec::with_capacity(target.len());
    let mut infer_at = None;
    for (i, &t) in target.iter().enumerate() {
        shape.push(match t {
            0 if !allow_zero => *x
                .shape
                .get(i)
                .ok_or_else(|| format!("shape {target:?} copies dim {i} of {:?}", x.shape))?,
            -1 if infer_at.is_none() => {
                infer_at = Some(i);
                -1
            }
            t if t >= 0 => t,
            _ => return Err(format!("invalid target shape {target:?}")),
        });
    }
    let total = product(&x.shape)?;
    if let Some(i) = infer_at {
        let mut rest = shape.clone();
        rest.remove(i);
        let known = product(&rest)?;
        shape[i] = match (total, known) {
            (-1, _) | (_, -1) => -1,
            (_, 0) => return Err(format!("cannot infer -1 in {target:?} next to a 0 dim")),
            (t, k) if t % k != 0 => {
                return Err(format!("cannot reshape {:?} into {target:?}", x.shape))
            }
            (t, k) => t / k,
        };
    } else {
        let p = product(&shape)?;
        if total >= 0 && p >= 0 && total != p {
            return Err(format!("cannot reshape {:?} into {target:?}", x.shape));
        }
    }
    Ok(TensorInfo {
        elem_type: x.elem_type,
        shape,
        value: x.value.clone(),
    })
}

fn split(
    node: &Node,
    ins: &Inputs,
    opset: i64,
    attrs: &mut Attrs,
) -> Result<Vec<TensorInfo>, String> {
    let x = input(ins, 0)?;
    let axis = normalise_axis(attrs, "axis", x.shape.len())?;
    let n = node.outputs.len();
    let dim = x.shape[axis];
    let sizes: Vec<i64> = if opset >= 13 && opt_input(ins, 1).is_some() {
        const_values(ins, 1, "split")?
    } else if let Some(s) = attr_ints(node, "split") {
        s
    } else {
        let parts = attr_int(node, "num_outputs").unwrap_or(n as i64);
        if parts <= 0 || parts as usize != n {
            return Err(format!("num_outputs {parts} does not match {n} outputs"));
        }
        if dim < 0 {
            vec![-1; n]
        } else {
            let chunk = dim / parts + i64::from(dim % parts != 0);
            (0..parts)
                .map(|i| (dim - i * chunk).clamp(0, chunk))
                .collect()
        }
    };
    if sizes.len() != n {
        return Err(format!("split {sizes:?} does not match {n} outputs"));
    }
    if sizes.iter().any(|&s| !(-1..=MAX_DIM).contains(&s)) {
        return Err(format!("split sizes {sizes:?} out of range"));
    }
    if dim >= 0 && sizes.iter().all(|&s| s >= 0) && sizes.iter().sum::<i64>() != dim {
        return Err(format!("split {sizes:?} does not sum to dim {dim}"));
    }
    attrs.insert("split".into(), AttrValue::Ints(sizes.clone()));
    attrs.remove("num_outputs");
    Ok(sizes
        .iter()
        .map(|&s| {
            let mut shape = x.shape.clone();
            shape[axis] = s;
            info(x.elem_type, shape)
        })
        .collect())
}

fn slice(node: &Node, ins: &Inputs, opset: i64) -> Result<TensorInfo, String> {
    let x = input(ins, 0)?;
    let r = x.shape.len();
    let (starts, ends, axes, steps) = if opset >= 10 {
        let starts = const_values(ins, 1, "starts")?;
        let ends = const_values(ins, 2, "ends")?;
        let axes = match opt_input(ins, 3) {
            Some(_) => Some(const_values(ins, 3, "axes")?),
            None => None,
        };
        let steps = match opt_input(ins, 4) {
            Some(_) => Some(const_values(ins, 4, "steps")?),
            None => None,
        };
        (starts, ends, axes, steps)
    } else {
        (
            attr_ints(node, "starts").ok_or("Slice without starts")?,
            attr_ints(node, "ends").ok_or("Slice without ends")?,
            attr_ints(node, "axes"),
            None,
        )
    };
    let k = starts.len();
    let axes = axes.unwrap_or_else(|| (0..k as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; k]);
    if ends.len() != k || axes.len() != k || steps.len() != k {
        return Err("starts, ends, axes and steps differ in length".into());
    }
    let mut shape = x.shape.clone();
    let mut value = x.value.clone().filter(|_| r == 1);
    for i in 0..k {
        let a = norm_axis(axes[i], r)?;
        let d = x.shape[a];
        let s = steps[i];
        if s == 0 {
            return Err("slice step 0".into());
        }
        if d < 0 {
            shape[a] = -1;
            value = None;
            continue;
        }
        let fix = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
        let (st, en) = (fix(starts[i]), fix(ends[i]));
        let (st, len) = if d == 0 {
            (0, 0)
        } else if s > 0 {
            let (st, en) = (st.clamp(0, d), en.clamp(0, d));
            (st, if en > st { (en - st - 1) / s + 1 } else { 0 })
        } else {
            let (st, en) = (st.clamp(0, d - 1), en.clamp(-1, d - 1));
            let back = s.checked_neg().ok_or("slice step out of range")?;
            (st, if st > en { (st - en - 1) / back + 1 } else { 0 })
        };
        shape[a] = len;
        value = value.map(|v| {
            (0..len.min(v.len() as i64))
                .filter_map(|j| {
                    let at = j.checked_mul(s).and_then(|o| st.checked_add(o))?;
                    v.get(usize::try_from(at).ok()?).copied()
                })
                .collect()
        });
    }
    Ok(TensorInfo {
        elem_type: x.elem_type,
        shape,
        value,
    })
}

fn reduce(node: &Node, ins: &Inputs, attrs: &mut Attrs) -> Result<TensorInfo, String> {
    let x = input(ins, 0)?;
    let r = x.shape.len();
    let axes = match opt_input(ins, 1) {
        Some(_) => Some(const_values(ins, 1, "axes")?),
        None => attr_ints(node, "axes"),
    };
    let keep = attr_int(node, "keepdims").unwrap_or(1) != 0;
    let noop = attr_int(node, "noop_with_empty_axes").unwrap_or(0) != 0;
    let axes: Vec<usize> = match axes {
        Some(a) if !a.is_empty() => {
            let mut a = a
                .iter()
                .map(|&v| norm_axis(v, r))
                .collect::<Result<Vec<_>, _>>()?;
            a.sort_unstable();
            a.dedup();
            a
        }
        _ if noop => vec![],
        _ => (0..r).collect(),
    };
    attrs.insert(
        "axes".into(),
        AttrValue::Ints(axes.iter().map(|&a| a as i64).collect()),
    );
    attrs.insert("keepdims".into(), AttrValue::Int(i64::from(keep)));
    let shape = (0..r)
        .filter_map(|i| match (axes.contains(&i), keep) {
            (true, true) => Some(1),
            (true, false) => None,
            (false, _) => Some(x.shape[i]),
        })
        .collect();
    Ok(info(x.elem_type, shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(shape: &[i64]) -> Option<TensorInfo> {
        Some(info(ElemType::FLOAT, shape.to_vec()))
    }

    fn c(values: &[i64]) -> Option<TensorInfo> {
        Some(TensorInfo {
            elem_type: ElemType::INT64,
            shape: vec![values.len() as i64],
            value: Some(values.to_vec()),
        })
    }

    fn node(op: &str, outputs: usize, attrs: &[(&str, Attr)]) -> Node {
        Node {
            name: op.into(),
            op_type: op.into(),
            domain: String::new(),
            inputs: vec![],
            outputs: (0..outputs).map(|i| format!("y{i}")).collect(),
            attrs: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        }
    }

    fn shapes(op: &str, outputs: usize, attrs: &[(&str, Attr)], ins: Inputs) -> Vec<Vec<i64>> {
        let (outs, _) = infer_node(&node(op, outputs, attrs), &ins, 17).unwrap();
        outs.into_iter().map(|o| o.shape).collect()
    }

    #[test]
    fn slices_clamp_and_step_backwards() {
        let ins = vec![
            t(&[10, 20]),
            c(&[-3, 100]),
            c(&[i64::MAX, -100]),
            c(&[0, 1]),
            c(&[1, -2]),
        ];
        assert_eq!(shapes("Slice", 1, &[], ins), [vec![3, 10]]);
        let ins = vec![t(&[0, 4]), c(&[0]), c(&[-1]), None, c(&[-1])];
        assert_eq!(shapes("Slice", 1, &[], ins), [vec![0, 4]]);
    }

    #[test]
    fn splits_by_sizes_or_evenly() {
        let a = [("axis", Attr::Int(-1))];
        assert_eq!(
            shapes("Split", 2, &a, vec![t(&[2, 10]), c(&[3, 7])]),
            [vec![2, 3], vec![2, 7]]
        );
        assert_eq!(
            shapes("Split", 3, &[], vec![t(&[9, 4])]),
            [vec![3, 4], vec![3, 4], vec![3, 4]]
        );
        let n = [("num_outputs", Attr::Int(3))];
        assert_eq!(
            shapes("Split", 3, &n, vec![t(&[7])]),
            [vec![3], vec![3], vec![1]]
        );
    }

    #[test]
    fn reshape_copies_zeros_and_infers_minus_one() {
        assert_eq!(
            shapes(
                "Reshape",
                1,
                &[],
                vec![t(&[2, 128, 768]), c(&[0, 0, 12, -1])]
            ),
            [vec![2, 128, 12, 64]]
        );
        assert_eq!(
            shapes("Reshape", 1, &[], vec![t(&[-1, 128, 768]), c(&[0, -1])]),
            [vec![-1, -1]]
        );
        let bad = infer_node(&node("Reshape", 1, &[]), &vec![t(&[6]), c(&[4, -1])], 17);
        assert!(bad.is_err());
    }

    #[test]
    fn matmul_promotes_vectors_and_broadcasts_batches() {
        assert_eq!(
            shapes("MatMul", 1, &[], vec![t(&[5]), t(&[5, 3])]),
            [vec![3]]
        );
        assert_eq!(
            shapes("MatMul", 1, &[], vec![t(&[2, 1, 4, 5]), t(&[3, 5, 6])]),
            [vec![2, 3, 4, 6]]
        );
        let bad = infer_node(&node("MatMul", 1, &[]), &vec![t(&[4, 5]), t(&[6, 3])], 17);
        assert!(bad.unwrap_err().contains("inner dims"));
    }

    #[test]
    fn pooling_honours_ceil_mode() {
        let a = [
            ("kernel_shape", Attr::Ints(vec![3, 3])),
            ("strides", Attr::Ints(vec![2, 2])),
            ("ceil_mode", Attr::Int(1)),
        ];
        assert_eq!(
            shapes("MaxPool", 1, &a, vec![t(&[1, 8, 56, 56])]),
            [vec![1, 8, 28, 28]]
        );
        let a = [
            ("kernel_shape", Attr::Ints(vec![3, 3])),
            ("strides", Attr::Ints(vec![2, 2])),
        ];
        assert_eq!(
            shapes("AveragePool", 1, &a, vec![t(&[1, 8, 56, 56])]),
            [vec![1, 8, 27, 27]]
        );
    }

    #[test]
    fn reductions_pads_and_squeezes() {
        let a = [("axes", Attr::Ints(vec![-1])), ("keepdims", Attr::Int(0))];
        assert_eq!(
            shapes("ReduceMean", 1, &a, vec![t(&[2, 3, 4])]),
            [vec![2, 3]]
        );
        assert_eq!(
            shapes("ReduceMean", 1, &[], vec![t(&[2, 3, 4])]),
            [vec![1, 1, 1]]
        );
        assert_eq!(
            shapes(
                "Pad",
                1,
                &[],
                vec![t(&[1, 3, 4, 4]), c(&[0, 0, 1, 1, 0, 0, 1, 1])]
            ),
            [vec![1, 3, 6, 6]]
        );
        assert_eq!(
            shapes("Squeeze", 1, &[], vec![t(&[1, 3, 1, 4])]),
            [vec![3, 4]]
        );
        assert_eq!(
            shapes("Unsqueeze", 1, &[], vec![t(&[3, 4]), c(&[0, -1])]),
            [vec![1, 3, 4, 1]]
        );
    }

    #[test]
    fn gemm_transposes_and_broadcasting_errors() {
        let a = [("transA", Attr::Int(1)), ("transB", Attr::Int(1))];
        assert_eq!(
            shapes("Gemm", 1, &a, vec![t(&[5, 4]), t(&[3, 5])]),
            [vec![4, 3]]
        );
        let bad = infer_node(&node("Add", 1, &[]), &vec![t(&[2, 3]), t(&[4])], 17);
        assert!(bad.unwrap_err().contains("do not broadcast"));
    }

    #[test]
    fn transposed_convolutions_argmax_and_tile() {
        let a = [
            ("strides", Attr::Ints(vec![2, 2])),
            ("pads", Attr::Ints(vec![1, 1, 1, 1])),
            ("output_padding", Attr::Ints(vec![1, 1])),
        ];
        let ins = vec![t(&[1, 16, 14, 14]), t(&[16, 8, 3, 3])];
        assert_eq!(shapes("ConvTranspose", 1, &a, ins), [vec![1, 8, 28, 28]]);
        let a = [("axis", Attr::Int(-1)), ("keepdims", Attr::Int(0))];
        assert_eq!(shapes("ArgMax", 1, &a, vec![t(&[2, 5, 7])]), [vec![2, 5]]);
        assert_eq!(
            shapes("Tile", 1, &[], vec![t(&[2, 3]), c(&[3, 1])]),
            [vec![6, 3]]
        );
    }

    #[test]
    fn hostile_values_are_errors_not_panics() {
        let huge = [
            ("kernel_shape", Attr::Ints(vec![i64::MIN])),
            ("strides", Attr::Ints(vec![0])),
        ];
        assert!(infer_node(&node("MaxPool", 1, &huge), &vec![t(&[1, 1, 8])], 17).is_err());
        assert!(infer_node(&node("Expand", 1, &[]), &vec![t(&[1]), c(&[1 << 50])], 17).is_err());
        let ins = vec![c(&[i64::MIN]), c(&[-1])];
        let (outs, _) = infer_node(&node("Div", 1, &[]), &ins, 17).unwrap();
        assert_eq!(outs[0].value, None);
        let ins = vec![c(&[1, 2, 3]), c(&[0]), c(&[3]), None, c(&[i64::MIN])];
        assert!(infer_node(&node("Slice", 1, &[]), &ins, 17).is_err());
    }
}
