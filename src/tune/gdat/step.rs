//! The backward timeline of a training step graph (a TensorFlow step with its backward ops and
//! optimizer updates, `model/tensorflow/training.rs`): the gradients are what the optimizer
//! updates read (the `grad` input of `ApplyAdam` …, `APPLY_OPS` of the importer), each produced
//! by a backward op of the graph, and ready when that op ends.
//!
//! The step runs on one stream in the plan's topological order, each unit timed as OPAT tunes
//! it (the op bank's strategy when it holds the unit's key and the simulator accepts it, else
//! the simulator's default): first the forward units, then the backward ones, which are the
//! units reachable over data edges from the loss (`SoftmaxCrossEntropyWithLogits` and its
//! sparse form; without a loss, from the first gradient op: a `…Grad` or `…Backprop…` op type).
//! Optimizer updates and variable assignments are not backward work: they wait on the
//! gradient and are what the all-reduce delays. Time 0 is the end of the forward units.

use std::collections::{BTreeMap, BTreeSet};

use crate::bank::Bank;
use crate::key::SocSpec;
use crate::model::{apply_op, Model, ResolvedUnit};

use super::timeline::{dtype_size, BackwardOp, Clock, Gradient, Timeline};
use super::GdatError;

/// Loss ops: backward starts from their gradient output.
const LOSSES: &[&str] = &[
    "SoftmaxCrossEntropyWithLogits",
    "SparseSoftmaxCrossEntropyWithLogits",
];

/// Whether an IR op type is backward work by its name (an op a gradient adds).
fn is_gradient_op(op: &str) -> bool {
    op.ends_with("Grad") || op.contains("Backprop")
}

/// Whether an IR op type updates a variable (not backward work).
fn is_update(op: &str) -> bool {
    apply_op(op).is_some() || matches!(op, "Assign" | "AssignAdd" | "AssignSub")
}

/// The step timeline when `units` hold training ops: `None` for an inference graph (no
/// backward op and no update); [`GdatError::NoGradients`] when backward ops are there but no
/// optimizer update reads a gradient.
pub(super) fn step_timeline(
    model: &Model,
    units: &[ResolvedUnit],
    soc: &SocSpec,
    op_bank: Option<&Bank>,
) -> Result<Option<Timeline>, GdatError> {
    let types = |u: &ResolvedUnit| u.unit.op_types.clone();
    let has = |f: &dyn Fn(&str) -> bool| units.iter().any(|u| types(u).iter().any(|t| f(t)));
    let updates = has(&|t| apply_op(t).is_some());
    if !updates {
        if has(&is_gradient_op) || has(&|t| LOSSES.contains(&t)) {
            let backward: Vec<String> = units
                .iter()
                .filter(|u| types(u).iter().any(|t| is_gradient_op(t)))
                .map(|u| u.unit.name.clone())
                .take(5)
                .collect();
            return Err(GdatError::NoGradients { backward });
        }
        return Ok(None);
    }
    // Which unit produces each tensor.
    let mut producer: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, u) in units.iter().enumerate() {
        for t in &u.unit.output_tensors {
            producer.insert(t.as_str(), i);
        }
    }
    let backward = backward_units(units, &producer);
    let mut clock = Clock::new(soc, op_bank);
    let (mut forward_us, mut t) = (0.0, 0.0);
    let mut end = vec![None; units.len()];
    let mut ops = Vec::new();
    for (i, u) in units.iter().enumerate() {
        if types(u).iter().any(|t| is_update(t)) {
            continue;
        }
        let us = clock.time(u.resolved.descriptor.clone()).unwrap_or(0.0);
        if backward.contains(&i) {
            ops.push(BackwardOp {
                name: u.unit.name.clone(),
                start_us: t,
                end_us: t + us,
            });
            t += us;
            end[i] = Some(t);
        } else {
            forward_us += us;
            end[i] = Some(0.0);
        }
    }
    let mut grads = gradients(model, units, &producer, &end);
    if grads.is_empty() {
        return Err(GdatError::NoGradients {
            backward: ops.iter().map(|o| o.name.clone()).take(5).collect(),
        });
    }
    // Production order: by ready time, then by the producer's place in the plan; a variable
    // updated twice keeps its last gradient.
    grads.sort_by(|a, b| a.1.ready_us.total_cmp(&b.1.ready_us).then(a.0.cmp(&b.0)));
    let mut seen = BTreeSet::new();
    let mut gradients: Vec<Gradient> = Vec::new();
    for (_, g) in grads.into_iter().rev() {
        if seen.insert(g.name.clone()) {
            gradients.push(g);
        }
    }
    gradients.reverse();
    Ok(Some(Timeline {
        gradients,
        backward_end_us: t,
        forward_us,
        ops,
    }))
}

/// Each optimizer update's gradient: the variable it updates (its name and element count),
/// the unit and graph op producing it (through relabelling ops), ready at that unit's `end`;
/// with the index of the producing unit.
fn gradients(
    model: &Model,
    units: &[ResolvedUnit],
    producer: &BTreeMap<&str, usize>,
    end: &[Option<f64>],
) -> Vec<(usize, Gradient)> {
    let nodes: BTreeMap<&str, &crate::model::Node> = model
        .graph
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n))
        .collect();
    let mut grads: Vec<(usize, Gradient)> = Vec::new();
    for u in units {
        for (member, op) in u.unit.node_names.iter().zip(&u.unit.op_types) {
            let (Some(apply), Some(node)) = (apply_op(op), nodes.get(member.as_str())) else {
                continue;
            };
            let (Some(var), Some(grad)) = (node.inputs.first(), node.inputs.get(apply.grad)) else {
                continue;
            };
            let origin = u
                .unit
                .input_tensors
                .iter()
                .position(|x| x == grad)
                .and_then(|k| u.unit.input_origins.get(k))
                .unwrap_or(grad);
            let Some(&p) = producer.get(origin.as_str()) else {
                continue;
            };
            let pu = &units[p];
            let out = pu.unit.output_tensors.iter().position(|o| o == origin);
            let dtype = out
                .and_then(|k| pu.resolved.descriptor.outputs.get(k))
                .map(|o| o.dtype)
                .unwrap_or(crate::key::DType::Float32);
            let elems: i64 = model
                .graph
                .initializers
                .get(var)
                .map_or(0, |c| c.dims.iter().product());
            let by = pu
                .unit
                .node_names
                .iter()
                .find(|n| {
                    nodes
                        .get(n.as_str())
                        .is_some_and(|n| n.outputs.contains(origin))
                })
                .cloned()
                .unwrap_or_else(|| pu.unit.name.clone());
            grads.push((
                p,
                Gradient {
                    name: var.clone(),
                    bytes: u64::try_from(elems).unwrap_or(0) * dtype_size(dtype),
                    ready_us: end[p].unwrap_or(0.0),
                    producer: Some(by),
                },
            ));
        }
    }
    grads
}

/// The units reachable over data edges from the loss units' outputs (the loss itself is
/// forward work), or, without a loss, from the first gradient op (itself included).
fn backward_units(units: &[ResolvedUnit], producer: &BTreeMap<&str, usize>) -> BTreeSet<usize> {
    let is_loss = |u: &ResolvedUnit| u.unit.op_types.iter().any(|t| LOSSES.contains(&t.as_str()));
    let mut seeds: BTreeSet<usize> = (0..units.len()).filter(|&i| is_loss(&units[i])).collect();
    let seeds_are_backward = seeds.is_empty();
    if seeds_are_backward {
        seeds.extend(
            (0..units.len())
                .filter(|&i| units[i].unit.op_types.iter().any(|t| is_gradient_op(t)))
                .take(1),
        );
    }
    let mut reached: BTreeSet<usize> = if seeds_are_backward {
        seeds.clone()
    } else {
        BTreeSet::new()
    };
    // Units are in topological order: one pass propagates reachability.
    for (i, u) in units.iter().enumerate() {
        let fed = u
            .unit
            .input_origins
            .iter()
            .chain(&u.unit.input_tensors)
            .any(|t| {
                producer
                    .get(t.as_str())
                    .is_some_and(|p| *p != i && (seeds.contains(p) || reached.contains(p)))
            });
        if fed {
            reached.insert(i);
        }
    }
    reached
}
