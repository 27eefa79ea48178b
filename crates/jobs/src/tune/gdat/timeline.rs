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

use tunebank_bank::Bank;
use tunebank_key::{
    DType, GraphDescriptor, GraphNode, ResolvedOptions, SocSpec, TensorDesc, TensorSource,
};
use tunebank_model::{Model, Node, ResolvedUnit};

use super::clock::{dtype_size, Clock};
use super::{BackwardOp, GdatError, Gradient, Timeline};

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
