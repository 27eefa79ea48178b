//! The backward timeline of one training step of an ONNX model: its trainable parameters, the
//! order in which backward produces their gradients, each gradient's bytes and the time it is
//! ready, from the model import and fusion (`tune::plan`) and the op simulator (`measure::sim`).
//!
//! Parameters are the initializers that feed Conv/MatMul/Gemm weights and biases (a constant
//! bias `Add` fused behind a MatMul included) and normalisation scales and shifts
//! (BatchNormalization, LayerNormalization inputs 1 and 2). Backward walks the fused units in
//! reverse topological order; per unit it spends, in this order: the vector members' backward
//! (passes of a two-input element stream over the unit's output: 3 for a normalisation, 2 for a
//! softmax, 1 otherwise), after which normalisation gradients are ready; the weight-gradient
//! GEMM of the cube anchor, after which its weight and bias gradients are ready; the
//! data-gradient GEMM (skipped when the anchor's data input is a graph input). Convolutions are
//! their implicit GEMMs: dW = `[Cout, N·Ho·Wo] × [N·Ho·Wo, Cin·R·S]`, dX = `[N·Ho·Wo, Cout·R·S] ×
//! [Cout·R·S, Cin]` (per group). Each problem runs at the op bank's strategy when the bank holds
//! its key and the simulator accepts it, else at the simulator's default.

use std::collections::BTreeMap;

use serde::Serialize;

use tunebank_bank::{Bank, Lookup};
use tunebank_key::{
    AttrValue, CubeMath, DType, Format, GraphDescriptor, GraphNode, ImplMode, OpDescriptor,
    ResolvedOptions, SocSpec, TensorDesc, TensorSource,
};
use tunebank_measure::sim::SimRunner;
use tunebank_measure::{Measure, TuningTask};
use tunebank_model::{Model, Node, ResolvedUnit};

use super::GdatError;

/// One gradient, as backward produces it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Gradient {
    /// The parameter's initializer name.
    pub name: String,
    /// Its size in bytes (elements × the resolved dtype's size).
    pub bytes: u64,
    /// When backward has finished it, µs after backward starts.
    pub ready_us: f64,
    /// The graph op that produces it, for a training step graph (its backward op); `None`
    /// when the backward pass is estimated from the forward one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer: Option<String>,
}

/// One fused unit's backward span, for the Gantt picture.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BackwardOp {
    /// The unit's name (AOE's op name).
    pub name: String,
    /// Start, µs after backward starts.
    pub start_us: f64,
    /// End, µs after backward starts.
    pub end_us: f64,
}

/// A model's training-step timeline: forward time, backward spans and gradients.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timeline {
    /// Gradients in production order; `ready_us` is non-decreasing.
    pub gradients: Vec<Gradient>,
    /// When the last backward op ends, µs after backward starts.
    pub backward_end_us: f64,
    /// The forward pass (sum of the units' simulated times), µs.
    pub forward_us: f64,
    /// Backward spans, in backward order.
    pub ops: Vec<BackwardOp>,
}

impl Timeline {
    /// The gradients' sizes in production order.
    pub fn bytes(&self) -> Vec<u64> {
        self.gradients.iter().map(|g| g.bytes).collect()
    }

    /// Total gradient bytes.
    pub fn total_bytes(&self) -> u64 {
        self.gradients.iter().map(|g| g.bytes).sum()
    }
}

/// Which unit inputs of a member node are trainable parameters, by the node's op type.
fn is_param(node: &Node, port: usize, anchor_is_cube: bool) -> bool {
    match node.op_type.as_str() {
        "Conv" | "ConvTranspose" => port >= 1,
        "MatMul" | "Gemm" => true,
        "BatchNormalization" | "LayerNormalization" => port == 1 || port == 2,
        "Add" => anchor_is_cube,
        _ => false,
    }
}

/// Backward passes of a vector member over the unit's output.
fn passes(op_type: &str) -> u32 {
    match op_type {
        "BatchNormalization" | "LayerNormalization" => 3,
        "Softmax" => 2,
        "Reshape" | "Flatten" | "Squeeze" | "Unsqueeze" | "Identity" | "Dropout" => 0,
        _ => 1,
    }
}

fn is_cube(op_type: &str) -> bool {
    matches!(op_type, "Conv2D" | "MatMulV2" | "BatchMatMulV2")
}

/// Times backward problems on the simulator, at the op bank's strategy when it has one.
pub(super) struct Clock<'a> {
    sim: SimRunner,
    soc: SocSpec,
    op_bank: Option<&'a Bank>,
    cache: BTreeMap<String, f64>,
}

impl<'a> Clock<'a> {
    /// A clock for `soc`, reading tuned strategies from `op_bank`.
    pub(super) fn new(soc: &SocSpec, op_bank: Option<&'a Bank>) -> Clock<'a> {
        Clock {
            sim: SimRunner::new(),
            soc: soc.clone(),
            op_bank,
            cache: BTreeMap::new(),
        }
    }

    fn tensor(shape: &[i64], dtype: DType) -> TensorDesc {
        TensorDesc {
            shape: shape.to_vec(),
            ori_shape: shape.to_vec(),
            dtype,
            format: Format::ND,
            ori_format: Format::ND,
        }
    }

    fn op(&self, op_type: &str, inputs: &[&[i64]], output: &[i64], dtype: DType) -> OpDescriptor {
        OpDescriptor {
            op_type: op_type.into(),
            fused_ops: vec![],
            inputs: inputs.iter().map(|s| Self::tensor(s, dtype)).collect(),
            outputs: vec![Self::tensor(output, dtype)],
            attrs: BTreeMap::new(),
            impl_mode: ImplMode::HighPerformance,
            cube_math: CubeMath::Native,
            soc: self.soc.clone(),
            origin: None,
        }
    }

    /// The time of `op`: the bank's strategy if it holds one the simulator runs, else the
    /// default's.
    pub(super) fn time(&mut self, op: OpDescriptor) -> Result<f64, GdatError> {
        let memo = serde_json::to_string(&op).unwrap_or_default();
        if let Some(&t) = self.cache.get(&memo) {
            return Ok(t);
        }
        let task = TuningTask::new(op);
        let mut strategy = None;
        if let (Some(bank), Ok(key)) = (self.op_bank, task.op.key()) {
            if let Ok(Lookup::Hit(hit)) = bank.lookup(&key) {
                strategy = Some(hit.answer.strategy.clone());
            }
        }
        let banked = match strategy {
            Some(s) => SimRunner::simulate(&task, &s)?.ok(),
            None => None,
        };
        let us = match banked {
            Some(us) => us,
            None => {
                let d = self.sim.default_strategy(&task)?;
                SimRunner::simulate(&task, &d)?.map_err(|reason| {
                    GdatError::Simulator(format!("{}: {reason}", task.op.op_type))
                })?
            }
        };
        self.cache.insert(memo, us);
        Ok(us)
    }

    /// A GEMM `[b, m, k] × [b, k, n]`.
    fn gemm(&mut self, b: i64, m: i64, k: i64, n: i64, dtype: DType) -> Result<f64, GdatError> {
        let op = if b > 1 {
            self.op(
                "BatchMatMulV2",
                &[&[b, m, k], &[b, k, n]],
                &[b, m, n],
                dtype,
            )
        } else {
            self.op("MatMulV2", &[&[m, k], &[k, n]], &[m, n], dtype)
        };
        self.time(op)
    }

    /// `passes` two-input element streams over `shape`.
    fn vector(&mut self, shape: &[i64], passes: u32, dtype: DType) -> Result<f64, GdatError> {
        if passes == 0 || shape.is_empty() {
            return Ok(0.0);
        }
        let op = self.op("Mul", &[shape, shape], shape, dtype);
        Ok(f64::from(passes) * self.time(op)?)
    }

    /// (dW, dX) of a cube anchor.
    fn cube_backward(&mut self, d: &OpDescriptor) -> Result<(f64, f64), GdatError> {
        let shape = |t: Option<&TensorDesc>| t.map(|t| t.ori_shape.clone()).unwrap_or_default();
        let dtype = d.inputs.first().map(|t| t.dtype).unwrap_or(DType::Float16);
        let (x, w, y) = (
            shape(d.inputs.first()),
            shape(d.inputs.get(1)),
            shape(d.outputs.first()),
        );
        if d.op_type == "Conv2D" {
            let [n, cin, _, _] = x[..] else { return bad(d) };
            let [cout, _, r, s] = w[..] else {
                return bad(d);
            };
            let [_, _, ho, wo] = y[..] else { return bad(d) };
            let g = match d.attrs.get("groups") {
                Some(AttrValue::Int(g)) if *g > 0 => *g,
                _ => 1,
            };
            let (cin_g, cout_g, pos) = (cin / g, cout / g, n * ho * wo);
            let dw = self.gemm(g, cout_g, pos, cin_g * r * s, dtype)?;
            let dx = self.gemm(g, pos, cout_g * r * s, cin_g, dtype)?;
            return Ok((dw, dx));
        }
        // MatMul: logical [.., m, k] × [.., k, n]; both operand gradients are GEMMs of the
        // forward's size: dA = dY·Bᵀ ([m, n] × [n, k]), dB = Aᵀ·dY ([k, m] × [m, n]).
        let (Some(&n), Some(&m)) = (y.last(), y.len().checked_sub(2).and_then(|i| y.get(i))) else {
            return bad(d);
        };
        let b: i64 = y[..y.len() - 2].iter().product::<i64>().max(1);
        let xs = &x[x.len().saturating_sub(2)..];
        let k = if xs.len() == 2 {
            if xs[0] == m {
                xs[1]
            } else {
                xs[0]
            }
        } else {
            return bad(d);
        };
        let dw = self.gemm(b, k, m, n, dtype)?;
        let dx = self.gemm(b, m, n, k, dtype)?;
        Ok((dw, dx))
    }
}

fn bad<T>(d: &OpDescriptor) -> Result<T, GdatError> {
    Err(GdatError::Simulator(format!(
        "{}: unexpected operand shapes {:?}",
        d.op_type,
        d.inputs.iter().map(|t| &t.ori_shape).collect::<Vec<_>>()
    )))
}

/// The units of the model's first profile, resolved under `options` on `soc`.
pub fn resolved_units(
    model: &Model,
    options: &ResolvedOptions,
    soc: &SocSpec,
) -> Result<Vec<ResolvedUnit>, GdatError> {
    let plan = crate::tune::plan(model, options, soc, None)?;
    let first = plan.units.first().map(|u| u.resolved.profile.clone());
    Ok(plan
        .units
        .into_iter()
        .filter(|u| Some(&u.resolved.profile) == first.as_ref())
        .collect())
}

/// The backward timeline of `units` (of `model`), timed on the simulator for `soc`; `op_bank`
/// supplies tuned strategies for the backward problems where it holds them. A model without
/// trainable parameters is [`GdatError::NoParameters`].
pub fn timeline(
    model: &Model,
    units: &[ResolvedUnit],
    soc: &SocSpec,
    op_bank: Option<&Bank>,
) -> Result<Timeline, GdatError> {
    let nodes: BTreeMap<&str, &Node> = model
        .graph
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n))
        .collect();
    if let Some(step) = super::step::step_timeline(model, units, soc, op_bank)? {
        return Ok(step);
    }
    let graph_inputs: Vec<&str> = model.graph.inputs.iter().map(|i| i.name.as_str()).collect();
    let mut clock = Clock::new(soc, op_bank);
    let mut forward_us = 0.0;
    for u in units {
        let op = u.resolved.descriptor.clone();
        forward_us += clock.time(op).unwrap_or(0.0);
    }
    let (mut t, mut grads, mut ops) = (0.0f64, Vec::<Gradient>::new(), Vec::new());
    for u in units.iter().rev() {
        let d = &u.resolved.descriptor;
        let cube = is_cube(&d.op_type);
        let dtype_of = |i: usize| {
            let t = if d.inputs.len() == u.unit.input_tensors.len() {
                d.inputs.get(i)
            } else {
                None
            };
            t.or(d.inputs.first())
                .map(|t| t.dtype)
                .unwrap_or(DType::Float16)
        };
        let (mut norm, mut weights) = (Vec::new(), Vec::new());
        let mut vector_passes = 0;
        for (m, name) in u.unit.node_names.iter().enumerate().rev() {
            let Some(node) = nodes.get(name.as_str()) else {
                continue;
            };
            if !(cube && m == 0) {
                vector_passes += passes(&node.op_type);
            }
            for (port, input) in node.inputs.iter().enumerate() {
                let Some(init) = model.graph.initializers.get(input) else {
                    continue;
                };
                if !is_param(node, port, cube) {
                    continue;
                }
                let elems: i64 = init.dims.iter().product();
                let Some(i) = u.unit.input_tensors.iter().position(|x| x == input) else {
                    continue;
                };
                let bytes = u64::try_from(elems).unwrap_or(0) * dtype_size(dtype_of(i));
                let is_norm = matches!(
                    node.op_type.as_str(),
                    "BatchNormalization" | "LayerNormalization"
                );
                let list = if is_norm { &mut norm } else { &mut weights };
                list.push((input.clone(), bytes));
            }
        }
        let start = t;
        let out_shape = d
            .outputs
            .first()
            .map(|o| o.ori_shape.clone())
            .unwrap_or_default();
        let out_dtype = d.outputs.first().map(|o| o.dtype).unwrap_or(DType::Float16);
        t += clock.vector(&out_shape, vector_passes, out_dtype)?;
        push(&mut grads, norm, t);
        if cube {
            let (dw, dx) = clock.cube_backward(d)?;
            t += dw;
            push(&mut grads, weights, t);
            let data_from_input = u
                .unit
                .input_tensors
                .first()
                .is_some_and(|x| graph_inputs.contains(&x.as_str()));
            if !data_from_input {
                t += dx;
            }
        } else {
            push(&mut grads, weights, t);
        }
        ops.push(BackwardOp {
            name: u.unit.name.clone(),
            start_us: start,
            end_us: t,
        });
    }
    if grads.is_empty() {
        return Err(GdatError::NoParameters);
    }
    Ok(Timeline {
        gradients: grads,
        backward_end_us: t,
        forward_us,
        ops,
    })
}

/// Appends gradients ready at `t`; a parameter met again (shared) moves to its last use.
fn push(grads: &mut Vec<Gradient>, new: Vec<(String, u64)>, t: f64) {
    for (name, bytes) in new {
        grads.retain(|g| g.name != name);
        grads.push(Gradient {
            name,
            bytes,
            ready_us: t,
            producer: None,
        });
    }
}

/// Bytes of one element of `d`.
pub fn dtype_size(d: DType) -> u64 {
    match d {
        DType::Float64 | DType::Int64 => 8,
        DType::Float32 | DType::Int32 => 4,
        DType::Float16 | DType::Bfloat16 | DType::Int16 => 2,
        DType::Int8 | DType::Uint8 | DType::Bool => 1,
    }
}

/// The whole model as a [`GraphDescriptor`] (its key is the gradient key's model structure):
/// one node per resolved unit (Ascend IR type, attributes, outputs), inputs wired to the
/// producing unit, else to a graph input; initializers and other unproduced tensors become
/// graph inputs after the model's own, in the order first met; graph options from `options`.
pub fn model_structure(
    model: &Model,
    units: &[ResolvedUnit],
    options: &ResolvedOptions,
    soc: &SocSpec,
) -> GraphDescriptor {
    let mut produced: BTreeMap<&str, TensorSource> = BTreeMap::new();
    let mut input_index: BTreeMap<String, u32> = BTreeMap::new();
    let mut inputs: Vec<TensorDesc> = Vec::new();
    let mut nodes = Vec::with_capacity(units.len());
    for (i, u) in units.iter().enumerate() {
        let d = &u.resolved.descriptor;
        let mut sources = Vec::new();
        for (j, origin) in u.unit.input_origins.iter().enumerate() {
            let source = match produced.get(origin.as_str()) {
                Some(s) => *s,
                None => {
                    let next = input_index.len() as u32;
                    let index = *input_index.entry(origin.clone()).or_insert_with(|| {
                        inputs.push(
                            d.inputs
                                .get(j)
                                .or(d.inputs.first())
                                .cloned()
                                .unwrap_or_else(|| Clock::tensor(&[], DType::Float16)),
                        );
                        next
                    });
                    TensorSource::GraphInput { index }
                }
            };
            sources.push(source);
        }
        for (k, name) in u.unit.output_tensors.iter().enumerate() {
            produced.insert(
                name.as_str(),
                TensorSource::Node {
                    node: i as u32,
                    output: k as u32,
                },
            );
        }
        nodes.push(GraphNode {
            name: u.unit.name.clone(),
            op_type: d.op_type.clone(),
            inputs: sources,
            outputs: d.outputs.clone(),
            attrs: d.attrs.clone(),
        });
    }
    let outputs = model
        .graph
        .outputs
        .iter()
        .filter_map(|o| produced.get(o.name.as_str()).copied())
        .collect();
    GraphDescriptor {
        soc: soc.clone(),
        inputs,
        nodes,
        outputs,
        options: options.graph_options(),
    }
}
