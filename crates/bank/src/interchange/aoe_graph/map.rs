//! One AOE subgraph (`struct`) ↔ a [`GraphDescriptor`]: node `i` is op `i`; its tensors get a
//! dtype from `dsize` and a device format from the op type and the shape; the edges come from
//! the documented rule below; and [`struct_of`] rebuilds the `struct` from the descriptor alone.
//!
//! - **Dtypes** from `dsize`: 1 → int8, 2 → float16, 4 → float32, 8 → int64; 4 → int32 on the
//!   integer ports ([`INTEGER_PORTS`]: GatherV2 indices and axis, a resize's size, a transpose's
//!   perm …). AOE records no dtype, so a bfloat16 tensor reads as float16. Back: 1, 2, 4, 8 bytes.
//! - **Formats**: Conv2D input 0 NC1HWC0, its weight FRACTAL_Z; MatMulV2/BatchMatMulV2 operands
//!   of rank ≥ 4 ending `[16, C0]` FRACTAL_NZ. Other tensors by the subgraph's family: with a
//!   Conv2D, pooling or BNInferenceD op, a 5-D tensor ending in C0 is NC1HWC0; else, with a
//!   MatMul, a tensor of rank ≥ 4 ending `[16, C0]` is FRACTAL_NZ; the rest ND. C0 is 32 for
//!   1-byte types, else 16. `ori_shape` and `ori_format` equal the runtime ones (AOE gives only
//!   device shapes).
//! - **Absent inputs** (`[-1]`, `dsize` 0) are not inputs of the node; their port indices are
//!   the node attribute `absent_inputs` (ints), so ports keep their positions.
//! - **Edges.** Only consecutive ops are linked: op `i − 1`'s output feeds the first port of op
//!   `i` whose tensor agrees with what op `i − 1` produces: the same shape for shape-keeping ops
//!   (elementwise, Cast, BNInferenceD, LayerNorm, SoftmaxV2, FixPipe; a binary op broadcasts),
//!   `[N, N1·16/C0, *, *, C0]` for a Conv2D, the batch and channels kept with H and W no larger
//!   for pooling, every dim no larger for StridedSliceD, the concatenated axis summed for
//!   ConcatD, `x1` with its N1 from `x2` for a MatMul; an op whose output its inputs do not
//!   determine (TransData, ReduceMeanD, …) feeds port 0. The size per element must agree too
//!   (a Cast's output may have any). Every other input is a graph input of its own, in node and
//!   port order (AOE does not say which inputs are one tensor).
//! - **Outputs.** A node's output is the tensor its consumer reads; an unconsumed node whose
//!   output the rule determines exactly has that output, and it is a graph output; otherwise the
//!   node lists no output (AOE does not record it).

use std::collections::BTreeMap;
use tunebank_key::StrategyMap;

use crate::interchange::aoe_graph::{AoeGraphLine, AoeOp, AoePort};
use crate::interchange::pyjson::PyJson;
use tunebank_key::{
    AttrValue, DType, Format, GraphDescriptor, GraphNode, SocSpec, TensorDesc, TensorSource,
};

/// The node attribute listing a node's absent optional inputs (port indices).
pub const ABSENT_INPUTS: &str = "absent_inputs";

/// `(op type, port)` whose 4- or 8-byte elements are integers, not floats.
pub const INTEGER_PORTS: &[(&str, usize)] = &[
    ("GatherV2", 1),
    ("GatherV2", 2),
    ("Pad", 1),
    ("ReduceMean", 1),
    ("Reshape", 1),
    ("ResizeBilinearV2", 1),
    ("ResizeNearestNeighborV2", 1),
    ("StridedSlice", 1),
    ("StridedSlice", 2),
    ("StridedSlice", 3),
    ("Tile", 1),
    ("Transpose", 1),
];

/// Ops whose output has the shape of input 0 (a binary op broadcasts its inputs).
const SHAPE_KEEPING: &[&str] = &[
    "Add",
    "BNInferenceD",
    "Cast",
    "Div",
    "Elu",
    "Exp",
    "FastGelu",
    "FixPipe",
    "Gelu",
    "LayerNorm",
    "LeakyRelu",
    "Maximum",
    "Minimum",
    "Mish",
    "Mul",
    "RealDiv",
    "Relu",
    "Rsqrt",
    "Sigmoid",
    "Silu",
    "SoftmaxV2",
    "Sqrt",
    "Sub",
    "Swish",
    "Tanh",
];

/// Why a subgraph did not map: the op (position in `struct`) and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubgraphUnmapped {
    /// Position of the op in the subgraph's `struct`.
    pub op: usize,
    /// Its type.
    pub op_type: String,
    /// Why.
    pub reason: String,
}

impl std::fmt::Display for SubgraphUnmapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "op {} ({}): {}", self.op, self.op_type, self.reason)
    }
}

/// One subgraph of a mapped graph line.
#[derive(Clone, Debug, PartialEq)]
pub struct MappedSubgraph {
    /// Position in `feature.feature`.
    pub index: usize,
    /// The descriptor and the strategy (the `group` entry), or why the ops did not map.
    pub mapped: Result<(GraphDescriptor, StrategyMap), SubgraphUnmapped>,
}

/// A graph line mapped for one SoC: what a caller (import, calibration) needs of it.
#[derive(Clone, Debug, PartialEq)]
pub struct MappedGraph {
    /// 1-based line number in the file.
    pub line: usize,
    /// `graphID` as text.
    pub graph_id: String,
    /// `strategy.modelName` as text.
    pub model_name: String,
    /// `strategy.end2EndTime`, ns.
    pub end2end_time_ns: f64,
    /// Every subgraph, in order.
    pub subgraphs: Vec<MappedSubgraph>,
}

impl AoeGraphLine {
    /// Maps every subgraph for `soc` (`map_subgraph`); the strategy is the subgraph's `group`
    /// entry as a JSON map (keys `cut`, `fusionType`, `scopeId`, `ubPass`, values as they are).
    pub fn map(&self, soc: &SocSpec) -> MappedGraph {
        let subgraphs = (self.subgraphs.iter().enumerate())
            .map(|(index, sub)| MappedSubgraph {
                index,
                mapped: map_subgraph(&sub.ops, soc).map(|d| (d, strategy_of(&sub.group))),
            })
            .collect();
        MappedGraph {
            line: self.line,
            graph_id: self.graph_id_text(),
            model_name: super::id_text(&self.model_name),
            end2end_time_ns: self.end2end_time_ns(),
            subgraphs,
        }
    }
}

/// The strategy of a `group` entry: its JSON map.
pub fn strategy_of(group: &PyJson) -> StrategyMap {
    match group.to_value() {
        serde_json::Value::Object(m) => m.into_iter().collect(),
        _ => StrategyMap::new(),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    Conv,
    Nz,
    Other,
}

fn family(ops: &[AoeOp]) -> Family {
    let has = |types: &[&str]| ops.iter().any(|o| types.contains(&o.op.as_str()));
    if has(&[
        "Conv2D",
        "MaxPoolV3",
        "MaxPool",
        "AvgPoolV2",
        "AvgPool",
        "BNInferenceD",
    ]) {
        Family::Conv
    } else if has(&["MatMulV2", "BatchMatMulV2"]) {
        Family::Nz
    } else {
        Family::Other
    }
}

fn c0(dsize: i64) -> i64 {
    if dsize == 1 {
        32
    } else {
        16
    }
}

fn nz_shaped(shape: &[i64], dsize: i64) -> bool {
    let r = shape.len();
    r >= 4 && shape[r - 1] == c0(dsize) && shape[r - 2] == 16
}

fn format_of(op: &str, port: usize, p: &AoePort, fam: Family) -> Format {
    let (shape, r) = (&p.shape[..], p.shape.len());
    let c0_last = r == 5 && shape[4] == c0(p.dsize);
    match (op, port) {
        ("Conv2D", 1) if r == 4 => Format::FractalZ,
        ("Conv2D", 0) if c0_last => Format::NC1HWC0,
        ("MatMulV2" | "BatchMatMulV2", 0 | 1) if nz_shaped(shape, p.dsize) => Format::FractalNz,
        _ if fam == Family::Conv && c0_last => Format::NC1HWC0,
        _ if fam == Family::Nz && nz_shaped(shape, p.dsize) => Format::FractalNz,
        _ => Format::ND,
    }
}

fn dtype_of(op: &str, port: usize, dsize: i64) -> Result<DType, String> {
    let integer = INTEGER_PORTS.contains(&(op, port));
    Ok(match dsize {
        1 => DType::Int8,
        2 => DType::Float16,
        4 if integer => DType::Int32,
        4 => DType::Float32,
        8 => DType::Int64,
        d => return Err(format!("input {port}: dsize {d} is not 1, 2, 4 or 8 bytes")),
    })
}

/// Bytes per element of a dtype: the `dsize` written back.
pub fn dsize_of(d: DType) -> i64 {
    match d {
        DType::Int8 | DType::Uint8 | DType::Bool => 1,
        DType::Float16 | DType::Bfloat16 | DType::Int16 => 2,
        DType::Float32 | DType::Int32 => 4,
        DType::Float64 | DType::Int64 => 8,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dim {
    Eq(i64),
    Le(i64),
    Any,
}

/// What an op is known to produce: every dim, or nothing (`None`); and its `dsize` (`None`:
/// any).
struct Produced {
    dims: Option<Vec<Dim>>,
    dsize: Option<i64>,
}

fn produced(op: &AoeOp) -> Produced {
    let present: Vec<&AoePort> = op.inputs.iter().filter(|p| p.dsize != 0).collect();
    let dsize = match op.op.as_str() {
        "Cast" => None,
        _ => present.first().map(|p| p.dsize),
    };
    let dims = present
        .first()
        .and_then(|x| produced_dims(&op.op, x, &present));
    Produced { dims, dsize }
}

fn produced_dims(op: &str, x: &AoePort, present: &[&AoePort]) -> Option<Vec<Dim>> {
    let s = &x.shape;
    let eq = |v: &[i64]| v.iter().map(|&d| Dim::Eq(d)).collect::<Vec<_>>();
    match op {
        _ if SHAPE_KEEPING.contains(&op) => {
            let mut out = s.clone();
            for p in present.iter().skip(1).filter(|p| p.shape.len() == s.len()) {
                for (o, &d) in out.iter_mut().zip(&p.shape) {
                    if *o == 1 {
                        *o = d;
                    }
                }
            }
            Some(eq(&out))
        }
        "Conv2D" => {
            let w = present
                .get(1)
                .filter(|w| w.shape.len() == 4 && s.len() == 5)?;
            let c = c0(x.dsize);
            Some(vec![
                Dim::Eq(s[0]),
                Dim::Eq(w.shape[1] * 16 / c),
                Dim::Any,
                Dim::Any,
                Dim::Eq(c),
            ])
        }
        "MaxPoolV3" | "MaxPool" | "AvgPoolV2" | "AvgPool" if s.len() == 5 => Some(vec![
            Dim::Eq(s[0]),
            Dim::Eq(s[1]),
            Dim::Le(s[2]),
            Dim::Le(s[3]),
            Dim::Eq(s[4]),
        ]),
        "StridedSliceD" => Some(s.iter().map(|&d| Dim::Le(d)).collect()),
        "ConcatD" => concat_dims(present),
        "MatMulV2" | "BatchMatMulV2" if s.len() >= 4 => {
            let w = present.get(1)?;
            let mut out = eq(s);
            out[s.len() - 4] = match w.shape.len() {
                4 => Dim::Eq(w.shape[0]),
                _ => Dim::Any,
            };
            Some(out)
        }
        _ => None,
    }
}

fn concat_dims(present: &[&AoePort]) -> Option<Vec<Dim>> {
    let first = &present.first()?.shape;
    if present.iter().any(|p| p.shape.len() != first.len()) {
        return None;
    }
    let differing: Vec<usize> = (0..first.len())
        .filter(|&a| present.iter().any(|p| p.shape[a] != first[a]))
        .collect();
    Some(match differing[..] {
        [axis] => (0..first.len())
            .map(|a| match a == axis {
                true => Dim::Eq(present.iter().map(|p| p.shape[a]).sum()),
                false => Dim::Eq(first[a]),
            })
            .collect(),
        _ => vec![Dim::Any; first.len()],
    })
}

fn agrees(made: &Produced, port: &AoePort) -> bool {
    if made.dsize.is_some_and(|d| d != port.dsize) {
        return false;
    }
    match &made.dims {
        None => true,
        Some(dims) => {
            dims.len() == port.shape.len()
                && dims.iter().zip(&port.shape).all(|(d, &v)| match *d {
                    Dim::Eq(e) => e == v,
                    Dim::Le(m) => v <= m,
                    Dim::Any => true,
                })
        }
    }
}

/// The port of `op` fed by its predecessor `prev`, by the edge rule (module docs).
fn fed_port(prev: &AoeOp, op: &AoeOp) -> Option<usize> {
    let made = produced(prev);
    let candidates = op.inputs.iter().enumerate().filter(|(_, p)| p.dsize != 0);
    match made.dims {
        None => candidates
            .take(1)
            .find(|(i, p)| *i == 0 && agrees(&made, p))
            .map(|(i, _)| i),
        Some(_) => candidates
            .into_iter()
            .find(|(_, p)| agrees(&made, p))
            .map(|(i, _)| i),
    }
}

/// The tensor of every port (`None`: absent), or why one does not map.
fn port_tensors(
    ops: &[AoeOp],
    fam: Family,
) -> Result<Vec<Vec<Option<TensorDesc>>>, SubgraphUnmapped> {
    ops.iter()
        .enumerate()
        .map(|(i, op)| {
            let err = |reason: String| SubgraphUnmapped {
                op: i,
                op_type: op.op.clone(),
                reason,
            };
            (op.inputs.iter().enumerate())
                .map(|(port, p)| match (p.shape.as_slice(), p.dsize) {
                    ([-1], 0) => Ok(None),
                    (_, 0) => Err(err(format!("input {port}: dsize 0 on a present input"))),
                    (s, _) if s.iter().any(|&d| d < 0) => Err(err(format!(
                        "input {port}: shape {s:?} has a dynamic dim (a static shape, or [-1] with dsize 0, expected)"
                    ))),
                    _ => Ok(Some(TensorDesc {
                        shape: p.shape.clone(),
                        ori_shape: p.shape.clone(),
                        dtype: dtype_of(&op.op, port, p.dsize).map_err(err)?,
                        format: format_of(&op.op, port, p, fam),
                        ori_format: format_of(&op.op, port, p, fam),
                    })),
                })
                .collect()
        })
        .collect()
}

/// The descriptor of one subgraph's ops for `soc` (module docs: dtypes, formats, edges), with
/// the graph-level options at their defaults; or the first op that does not map, and why.
pub(crate) fn map_subgraph(
    ops: &[AoeOp],
    soc: &SocSpec,
) -> Result<GraphDescriptor, SubgraphUnmapped> {
    let fam = family(ops);
    let tensors = port_tensors(ops, fam)?;
    let fed: Vec<Option<usize>> = (0..ops.len())
        .map(|i| i.checked_sub(1).and_then(|p| fed_port(&ops[p], &ops[i])))
        .collect();
    let mut g = GraphDescriptor {
        soc: soc.clone(),
        inputs: Vec::new(),
        nodes: Vec::new(),
        outputs: Vec::new(),
        options: BTreeMap::new(),
    };
    for (i, op) in ops.iter().enumerate() {
        let mut inputs = Vec::new();
        let mut absent = Vec::new();
        for (port, t) in tensors[i].iter().enumerate() {
            match t {
                None => absent.push(port as i64),
                Some(_) if fed[i] == Some(port) => inputs.push(TensorSource::Node {
                    node: (i - 1) as u32,
                    output: 0,
                }),
                Some(t) => {
                    inputs.push(TensorSource::GraphInput {
                        index: g.inputs.len() as u32,
                    });
                    g.inputs.push(t.clone());
                }
            }
        }
        let consumed = fed.get(i + 1).copied().flatten();
        let outputs: Vec<TensorDesc> = match consumed {
            Some(port) => tensors[i + 1][port].clone().into_iter().collect(),
            None => exact_output(op, &tensors[i]).into_iter().collect(),
        };
        if consumed.is_none() && !outputs.is_empty() {
            g.outputs.push(TensorSource::Node {
                node: i as u32,
                output: 0,
            });
        }
        let mut attrs = BTreeMap::new();
        if !absent.is_empty() {
            attrs.insert(ABSENT_INPUTS.to_owned(), AttrValue::Ints(absent));
        }
        g.nodes.push(GraphNode {
            name: format!("op{i}"),
            op_type: op.op.clone(),
            inputs,
            outputs,
            attrs,
        });
    }
    g.key().map_err(|e| SubgraphUnmapped {
        op: 0,
        op_type: ops.first().map(|o| o.op.clone()).unwrap_or_default(),
        reason: format!("no subgraph key: {e}"),
    })?;
    Ok(g)
}

/// The output of an op nobody in the subgraph consumes, when its inputs determine it exactly.
fn exact_output(op: &AoeOp, tensors: &[Option<TensorDesc>]) -> Option<TensorDesc> {
    let made = produced(op);
    let dims = made.dims?;
    let shape = dims
        .iter()
        .map(|d| match d {
            Dim::Eq(v) => Some(*v),
            _ => None,
        })
        .collect::<Option<Vec<i64>>>()?;
    made.dsize?;
    let x = tensors.iter().flatten().next()?;
    Some(TensorDesc {
        shape: shape.clone(),
        ori_shape: shape,
        ..x.clone()
    })
}

/// The `struct` of a descriptor: per node, in node order, `{"dsize", "in", "op"}` with each
/// port's shape and bytes per element (from its graph input or its producer's output), `[-1]`
/// and 0 at the ports of `absent_inputs`. The inverse of [`map_subgraph`].
pub(crate) fn struct_of(g: &GraphDescriptor) -> Result<PyJson, String> {
    let ops = g.nodes.iter().enumerate().map(|(i, node)| {
        let absent: Vec<i64> = match node.attrs.get(ABSENT_INPUTS) {
            Some(AttrValue::Ints(v)) => v.clone(),
            None => Vec::new(),
            Some(_) => return Err(format!("node {i}: {ABSENT_INPUTS} is not a list of ints")),
        };
        let mut sources = node.inputs.iter();
        let (mut dsize, mut shapes) = (Vec::new(), Vec::new());
        for port in 0..node.inputs.len() + absent.len() {
            if absent.contains(&(port as i64)) {
                shapes.push(PyJson::List(vec![PyJson::Int(-1)]));
                dsize.push(PyJson::Int(0));
                continue;
            }
            let source = sources
                .next()
                .ok_or(format!("node {i}: fewer inputs than ports"))?;
            let t = match *source {
                TensorSource::GraphInput { index } => g.inputs.get(index as usize),
                TensorSource::Node { node, output } => {
                    (g.nodes.get(node as usize)).and_then(|n| n.outputs.get(output as usize))
                }
            }
            .ok_or(format!("node {i} input {port}: dangling source"))?;
            shapes.push(PyJson::List(
                t.shape.iter().map(|&d| PyJson::Int(d.into())).collect(),
            ));
            dsize.push(PyJson::Int(dsize_of(t.dtype).into()));
        }
        Ok(PyJson::Dict(vec![
            ("dsize".into(), PyJson::List(dsize)),
            ("in".into(), PyJson::List(shapes)),
            ("op".into(), PyJson::Str(node.op_type.clone())),
        ]))
    });
    Ok(PyJson::List(ops.collect::<Result<_, String>>()?))
}
