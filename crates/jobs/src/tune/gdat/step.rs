//! The backward timeline of a training step graph (a TensorFlow step with its backward ops and
//! optimizer updates, `model/tensorflow/training.rs`): the gradients are what the optimizer's
//! updates of the model variables are computed from (`updates.rs`: a fused `ApplyAdam` … or
//! Keras 3's element-wise updates), each produced by a backward op of the graph, and ready
//! when that op ends.
//!
//! The step runs on one stream in the plan's topological order, each unit timed as OPAT tunes
//! it (the op bank's strategy when it holds the unit's key and the simulator accepts it, else
//! the simulator's default): first the forward units, then the backward ones, which are the
//! units reachable over data edges from the loss (`SoftmaxCrossEntropyWithLogits` and its
//! sparse form; without a loss, from the first gradient op: a `…Grad` or `…Backprop…` op type).
//! Optimizer updates and variable assignments, with the arithmetic an element-wise optimizer
//! does on its slots, are not backward work: they wait on the gradient and are what the
//! all-reduce delays. Time 0 is the end of the forward units.

use std::collections::{BTreeMap, BTreeSet};

use tunebank_bank::Bank;
use tunebank_key::SocSpec;
use tunebank_model::{Model, ResolvedUnit};

use super::clock::{dtype_size, Clock};
use super::updates::{is_gradient_op, is_write, step_updates, StepUpdates, LOSSES};
use super::{BackwardOp, GdatError, Gradient, Timeline};

/// The step timeline when `model` is a training step: `None` for an inference graph (no loss
/// and no backward op); [`GdatError::NoGradients`] when backward ops are there but no
/// variable update depends on a gradient (`updates.rs`).
pub(super) fn step_timeline(
    model: &Model,
    units: &[ResolvedUnit],
    soc: &SocSpec,
    op_bank: Option<&Bank>,
) -> Result<Option<Timeline>, GdatError> {
    let step = step_updates(&model.graph);
    if !step.training {
        return Ok(None);
    }
    // Which unit produces each tensor: its outputs, and its members' (a fused unit computes
    // them on the way).
    let node_of: BTreeMap<&str, &tunebank_model::Node> = model
        .graph
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n))
        .collect();
    let mut producer: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, u) in units.iter().enumerate() {
        for t in &u.unit.output_tensors {
            producer.insert(t.as_str(), i);
        }
    }
    for (i, u) in units.iter().enumerate() {
        for n in u
            .unit
            .node_names
            .iter()
            .filter_map(|n| node_of.get(n.as_str()))
        {
            for t in &n.outputs {
                producer.entry(t.as_str()).or_insert(i);
            }
        }
    }
    let backward = backward_units(units, &producer, &step.backward_seeds);
    if step.gradients.is_empty() {
        let named: Vec<String> = units
            .iter()
            .filter(|u| u.unit.op_types.iter().any(|t| is_gradient_op(t)))
            .map(|u| u.unit.name.clone())
            .take(5)
            .collect();
        return Err(GdatError::NoGradients { backward: named });
    }
    let is_update = |u: &ResolvedUnit| {
        let members = u.unit.node_names.iter().zip(&u.unit.op_types);
        members
            .into_iter()
            .all(|(n, t)| is_write(t) || step.update_nodes.contains(n))
    };
    let mut clock = Clock::new(soc, op_bank);
    let (mut forward_us, mut t) = (0.0, 0.0);
    let mut end = vec![None; units.len()];
    let mut ops = Vec::new();
    for (i, u) in units.iter().enumerate() {
        if is_update(u) {
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
    let mut grads = gradients(model, units, &producer, &end, &step);
    // Production order: by ready time, then by the producer's place in the plan.
    grads.sort_by(|a, b| a.1.ready_us.total_cmp(&b.1.ready_us).then(a.0.cmp(&b.0)));
    Ok(Some(Timeline {
        gradients: grads.into_iter().map(|(_, g)| g).collect(),
        backward_end_us: t,
        forward_us,
        ops,
    }))
}

/// Each model variable's gradient (`step.gradients`): its name and element count, the graph
/// op producing it, ready when the unit computing it ends (a tensor no unit outputs is a
/// relabelling of its producer's first input, followed back to a unit), its bytes in the
/// dtype that unit gives it (a fused member's: the unit's first output's); with that unit's
/// index. A gradient no unit computes is left out.
fn gradients(
    model: &Model,
    units: &[ResolvedUnit],
    producer: &BTreeMap<&str, usize>,
    end: &[Option<f64>],
    step: &StepUpdates,
) -> Vec<(usize, Gradient)> {
    let mut made_by: BTreeMap<&str, &tunebank_model::Node> = BTreeMap::new();
    for n in &model.graph.nodes {
        for o in &n.outputs {
            made_by.insert(o.as_str(), n);
        }
    }
    let mut grads = Vec::new();
    for (var, tensors) in &step.gradients {
        let found = tensors
            .iter()
            .filter_map(|t| Some((t, unit_of(t, producer, &made_by)?)));
        let last = found.max_by(|a, b| {
            let at = |k: usize| end[k].unwrap_or(0.0);
            at(a.1 .0).total_cmp(&at(b.1 .0)).then(a.1 .0.cmp(&b.1 .0))
        });
        let Some((tensor, (p, out))) = last else {
            continue;
        };
        let pu = &units[p];
        let dtype = pu
            .unit
            .output_tensors
            .iter()
            .position(|o| o == out)
            .and_then(|k| pu.resolved.descriptor.outputs.get(k))
            .or_else(|| pu.resolved.descriptor.outputs.first())
            .map_or(tunebank_key::DType::Float32, |o| o.dtype);
        let elems: i64 = model
            .graph
            .initializers
            .get(var)
            .map_or(0, |c| c.dims.iter().product());
        let by = made_by
            .get(tensor.as_str())
            .map_or_else(|| pu.unit.name.clone(), |n| n.name.clone());
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
    grads
}

/// The unit computing graph tensor `t` and the tensor it outputs: `t` itself, or what the
/// relabelling ops no unit holds (`made_by`) relabel.
fn unit_of<'a>(
    mut t: &'a str,
    producer: &BTreeMap<&str, usize>,
    made_by: &BTreeMap<&'a str, &'a tunebank_model::Node>,
) -> Option<(usize, &'a str)> {
    for _ in 0..64 {
        if let Some(&p) = producer.get(t) {
            return Some((p, t));
        }
        t = made_by.get(t)?.inputs.first()?;
    }
    None
}

/// The units reachable over data edges from the loss units' outputs (the loss itself is
/// forward work), or, without a loss, from the units holding a backward seed (`updates.rs`:
/// the gradient ops and the backward work before them; themselves included), else from the
/// first gradient op.
fn backward_units(
    units: &[ResolvedUnit],
    producer: &BTreeMap<&str, usize>,
    backward_seeds: &BTreeSet<String>,
) -> BTreeSet<usize> {
    let is_loss = |u: &ResolvedUnit| u.unit.op_types.iter().any(|t| LOSSES.contains(&t.as_str()));
    let mut seeds: BTreeSet<usize> = (0..units.len()).filter(|&i| is_loss(&units[i])).collect();
    let seeds_are_backward = seeds.is_empty();
    if seeds_are_backward {
        seeds.extend((0..units.len()).filter(|&i| {
            units[i]
                .unit
                .node_names
                .iter()
                .any(|n| backward_seeds.contains(n))
        }));
    }
    if seeds.is_empty() {
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
