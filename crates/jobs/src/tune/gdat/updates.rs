//! Which tensors of a training step are its gradients, read from the graph's own optimizer:
//! a fused update (`ApplyAdam` …, whose gradient input is [`ApplyOp`](tunebank_model)`.grad`)
//! or the element-wise form Keras 3 traces (variable reads, `Mul`, `Sub`, `Sqrt`, `Pow`,
//! `AssignAdd`/`AssignSub`/`Assign` of the variable and of the optimizer's slots).
//!
//! The rule, on the graph IR (variables are initializers; a write is an `Assign*` node whose
//! input 0 is the variable, or an update op):
//! - **seeds**: the loss ops (`SoftmaxCrossEntropyWithLogits` and its sparse form), else the
//!   gradient ops (a `…Grad` or `…Backprop…` op type) and, when the graph states its outputs
//!   (the step's loss), the nodes before them that no output depends on: an element-wise
//!   loss's own gradient (MindSpore writes `MSELoss` and its gradient as arithmetic) and
//!   what it feeds before the first gradient op (the last dense layer's input and weight
//!   gradients). No seed: no training step.
//! - **slots** `S`: written initializers that are the optimizer's state (the moments, the
//!   iteration counter; [`slots`]); **model variables** `M`: the other written initializers.
//! - **backward tensors** `D`: what the seeds' outputs reach. **Update work** `T`: what the
//!   slots' reads reach (the optimizer's arithmetic over its state).
//! - A model variable's gradient is found by walking back from each of its writes' value
//!   inputs: a slot continues with its own writes' values, a node of `T` with its inputs, a
//!   learning-rate scaling (`Mul`, `RealDiv`, `Div`, `Neg` whose other inputs are neither
//!   backward nor forward tensors) and a layout `Transpose` with their backward input; the
//!   first backward tensor reached otherwise is a gradient candidate. Of the candidates, those computed from
//!   another (Adam's `Square(g)` beside `g`) are update work too; the rest are the gradient.
//!
//! Moving averages are model variables whose new value no backward tensor reaches, so they
//! get no gradient; counters are slots. Every node walked through is update
//! work, not backward work: the timeline does not count it (it waits on the all-reduce).

use std::collections::{BTreeMap, BTreeSet};

use tunebank_model::{apply_op, Graph, Node};

/// Loss ops: backward starts from their outputs.
pub(super) const LOSSES: &[&str] = &[
    "SoftmaxCrossEntropyWithLogits",
    "SparseSoftmaxCrossEntropyWithLogits",
];

/// Whether an IR op type is backward work by its name (an op a gradient adds).
pub(super) fn is_gradient_op(op: &str) -> bool {
    op.ends_with("Grad") || op.contains("Backprop")
}

/// Whether an IR op type writes a variable (an update op or an assignment).
pub(super) fn is_write(op: &str) -> bool {
    apply_op(op).is_some() || matches!(op, "Assign" | "AssignAdd" | "AssignSub")
}

/// Ops that scale a gradient by the learning rate (or its sign) on its way to the update.
const SCALINGS: &[&str] = &["Mul", "RealDiv", "Div", "Neg"];

/// A step's gradients and its update work, by the rule of the module doc.
#[derive(Debug, Default)]
pub(super) struct StepUpdates {
    /// Whether the graph has a seed (a loss or a gradient op): `false` for inference.
    pub(super) training: bool,
    /// Each model variable with a gradient, in the order of its first write: the variable
    /// and the graph tensors holding its gradient (one, unless the optimizer reads several).
    pub(super) gradients: Vec<(String, Vec<String>)>,
    /// Graph nodes that are update work (writes, the optimizer's arithmetic, scalings).
    pub(super) update_nodes: BTreeSet<String>,
    /// The seeds' names when the graph has no loss op (the backward pass starts at them).
    pub(super) backward_seeds: BTreeSet<String>,
}

/// The graph's tensors, who produces and who consumes each.
struct Index<'g> {
    graph: &'g Graph,
    producer: BTreeMap<&'g str, usize>,
    consumers: BTreeMap<&'g str, Vec<usize>>,
}

impl<'g> Index<'g> {
    fn new(graph: &'g Graph) -> Self {
        let (mut producer, mut consumers) = (BTreeMap::new(), BTreeMap::<_, Vec<_>>::new());
        for (i, n) in graph.nodes.iter().enumerate() {
            for o in n.outputs.iter().filter(|o| !o.is_empty()) {
                producer.insert(o.as_str(), i);
            }
            for t in n.inputs.iter().filter(|t| !t.is_empty()) {
                consumers.entry(t.as_str()).or_default().push(i);
            }
        }
        Index {
            graph,
            producer,
            consumers,
        }
    }

    fn node(&self, i: usize) -> &'g Node {
        &self.graph.nodes[i]
    }

    /// The nodes reached over data edges from `tensors`, and their output tensors.
    fn reach(
        &self,
        tensors: impl IntoIterator<Item = &'g str>,
    ) -> (BTreeSet<usize>, BTreeSet<&'g str>) {
        let (mut nodes, mut seen) = (BTreeSet::new(), BTreeSet::new());
        let mut stack: Vec<&str> = tensors.into_iter().collect();
        while let Some(t) = stack.pop() {
            if !seen.insert(t) {
                continue;
            }
            for &c in self.consumers.get(t).into_iter().flatten() {
                if nodes.insert(c) {
                    stack.extend(self.node(c).outputs.iter().map(String::as_str));
                }
            }
        }
        (nodes, seen)
    }

    /// The tensors `tensors` depend on (themselves included).
    fn ancestors(&self, tensors: impl IntoIterator<Item = &'g str>) -> BTreeSet<&'g str> {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&str> = tensors.into_iter().collect();
        while let Some(t) = stack.pop() {
            if seen.insert(t) {
                if let Some(&p) = self.producer.get(t) {
                    stack.extend(self.node(p).inputs.iter().map(String::as_str));
                }
            }
        }
        seen
    }
}

/// A write: the variable (or slot) it writes and the inputs its new value is computed from.
struct Write<'g> {
    node: usize,
    var: &'g str,
    values: Vec<&'g str>,
}

/// The writes of `graph`: an assignment writes input 0 from input 1; an update op writes its
/// variable and slots (its first `state` inputs) from its gradient input (the other inputs
/// are hyperparameters, not what the gradient is).
fn writes(graph: &Graph) -> Vec<Write<'_>> {
    let mut out = Vec::new();
    for (i, n) in graph.nodes.iter().enumerate() {
        let ins: Vec<&str> = n.inputs.iter().map(String::as_str).collect();
        if let Some(apply) = apply_op(&n.op_type) {
            let Some(&grad) = ins.get(apply.grad) else {
                continue;
            };
            for &var in ins.iter().take(apply.state) {
                out.push(Write {
                    node: i,
                    var,
                    values: vec![grad],
                });
            }
        } else if matches!(n.op_type.as_str(), "Assign" | "AssignAdd" | "AssignSub") {
            if let (Some(&var), Some(&value)) = (ins.first(), ins.get(1)) {
                out.push(Write {
                    node: i,
                    var,
                    values: vec![value],
                });
            }
        }
    }
    out
}

/// The written initializers that are an optimizer's state, not a model variable: not read by
/// the forward pass, and either an update op's slot input or read on the way to another
/// variable's new value without passing through a backward tensor (Adam's moments, a
/// momentum, the iteration counter behind a bias correction). A variable the importer reads
/// through a derived initializer (a TensorFlow HWIO filter, which the IR's `Conv` reads as an
/// OIHW copy) is no ancestor of the loss, yet reaches other updates only through backward ops.
fn slots<'g>(
    ix: &Index<'g>,
    writes: &[Write<'g>],
    forward: &BTreeSet<&str>,
    backward: &BTreeSet<&str>,
) -> BTreeSet<&'g str> {
    let graph = ix.graph;
    let mut out = BTreeSet::new();
    for w in writes {
        let v = w.var;
        if !graph.initializers.contains_key(v) || forward.contains(v) || out.contains(v) {
            continue;
        }
        let apply_slot = apply_op(&ix.node(w.node).op_type)
            .is_some_and(|_| ix.node(w.node).inputs.first().is_some_and(|x| x != v));
        let mut seen = BTreeSet::new();
        let mut stack = vec![v];
        while let Some(t) = stack.pop() {
            if backward.contains(t) || !seen.insert(t) {
                continue;
            }
            for &c in ix.consumers.get(t).into_iter().flatten() {
                stack.extend(ix.node(c).outputs.iter().map(String::as_str));
            }
        }
        let feeds_other = writes
            .iter()
            .any(|x| x.var != v && x.values.iter().any(|t| seen.contains(t)));
        if apply_slot || feeds_other {
            out.insert(v);
        }
    }
    out
}

/// The step's gradients and update work (module doc).
pub(super) fn step_updates(graph: &Graph) -> StepUpdates {
    let ix = Index::new(graph);
    let has = |f: &dyn Fn(&str) -> bool| -> Vec<usize> {
        (0..graph.nodes.len())
            .filter(|&i| f(&graph.nodes[i].op_type))
            .collect()
    };
    let mut seeds = has(&|t| LOSSES.contains(&t));
    let mut backward_seeds = BTreeSet::new();
    if seeds.is_empty() {
        seeds = has(&is_gradient_op);
        seeds.extend(before_gradients(&ix, &seeds));
        backward_seeds = seeds.iter().map(|&i| ix.node(i).name.clone()).collect();
    }
    if seeds.is_empty() {
        return StepUpdates::default();
    }
    let seed_inputs = seeds
        .iter()
        .flat_map(|&s| ix.node(s).inputs.iter().map(String::as_str));
    let forward = ix.ancestors(seed_inputs);
    let (_, backward) = ix.reach(
        seeds
            .iter()
            .flat_map(|&s| ix.node(s).outputs.iter().map(String::as_str)),
    );
    let writes = writes(graph);
    let slots = slots(&ix, &writes, &forward, &backward);
    let is_model = |v: &str| graph.initializers.contains_key(v) && !slots.contains(v);
    let (work, _) = ix.reach(slots.iter().copied());
    let mut walk = Walk {
        ix: &ix,
        writes: &writes,
        slots: &slots,
        work: &work,
        forward: &forward,
        backward: &backward,
        update: writes.iter().map(|w| w.node).collect(),
    };
    let mut gradients: Vec<(String, Vec<String>)> = Vec::new();
    for w in &writes {
        if !is_model(w.var) || gradients.iter().any(|(v, _)| v == w.var) {
            continue;
        }
        let values = writes
            .iter()
            .filter(|x| x.var == w.var)
            .flat_map(|x| x.values.iter().copied());
        let found = walk.candidates(values);
        if !found.is_empty() {
            gradients.push((
                w.var.to_string(),
                found.iter().map(|t| t.to_string()).collect(),
            ));
        }
    }
    let update_nodes = walk
        .update
        .iter()
        .map(|&i| ix.node(i).name.clone())
        .collect();
    StepUpdates {
        training: true,
        gradients,
        update_nodes,
        backward_seeds,
    }
}

/// The nodes the gradient ops depend on that none of the graph's outputs (the step's loss)
/// depends on: the backward work before the first gradient op. Nothing when the graph states
/// no outputs (then the forward pass cannot be told apart).
fn before_gradients(ix: &Index<'_>, gradient_ops: &[usize]) -> Vec<usize> {
    let graph = ix.graph;
    if graph.outputs.is_empty() || gradient_ops.is_empty() {
        return Vec::new();
    }
    let forward = ix.ancestors(graph.outputs.iter().map(|o| o.name.as_str()));
    let inputs = gradient_ops
        .iter()
        .flat_map(|&g| ix.node(g).inputs.iter().map(String::as_str));
    let before = ix.ancestors(inputs);
    let mut out: Vec<usize> = before
        .iter()
        .filter(|t| !forward.contains(*t))
        .filter_map(|t| ix.producer.get(t).copied())
        .filter(|p| !gradient_ops.contains(p) && !is_write(&ix.node(*p).op_type))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The walk from a variable's writes back to its gradient (module doc).
struct Walk<'a, 'g> {
    ix: &'a Index<'g>,
    writes: &'a [Write<'g>],
    slots: &'a BTreeSet<&'g str>,
    work: &'a BTreeSet<usize>,
    forward: &'a BTreeSet<&'g str>,
    backward: &'a BTreeSet<&'g str>,
    /// Nodes found to be update work so far.
    update: BTreeSet<usize>,
}

impl<'g> Walk<'_, 'g> {
    /// The gradient tensors behind `values` (the candidates not computed from another).
    fn candidates(&mut self, values: impl IntoIterator<Item = &'g str>) -> Vec<&'g str> {
        let mut seen = BTreeSet::new();
        let mut found: Vec<&str> = Vec::new();
        let mut stack: Vec<&str> = values.into_iter().collect();
        while let Some(t) = stack.pop() {
            if !seen.insert(t) {
                continue;
            }
            if self.slots.contains(t) {
                for w in self.writes.iter().filter(|w| w.var == t) {
                    self.update.insert(w.node);
                    stack.extend(w.values.iter().copied());
                }
                continue;
            }
            let Some(&p) = self.ix.producer.get(t) else {
                continue;
            };
            let node = self.ix.node(p);
            if self.work.contains(&p) {
                self.update.insert(p);
                stack.extend(node.inputs.iter().map(String::as_str));
            } else if !self.backward.contains(t) {
                continue;
            } else if let Some(g) = self.scaled(node).or_else(|| self.transposed(node)) {
                self.update.insert(p);
                stack.push(g);
            } else if !found.contains(&t) {
                found.push(t);
            }
        }
        if found.len() < 2 {
            return found;
        }
        // Candidates computed from another candidate are the optimizer's work on it.
        let derived: BTreeSet<&str> = found
            .iter()
            .filter(|&&t| found.iter().any(|&o| o != t && self.depends(t, o)))
            .copied()
            .collect();
        found.retain(|t| !derived.contains(t));
        for &t in &derived {
            self.mark_exclusive(t, &found);
        }
        found
    }

    /// The backward input of a learning-rate scaling: one backward input, the others neither
    /// backward nor forward tensors (a rate, a constant, the optimizer's state).
    fn scaled(&self, node: &'g Node) -> Option<&'g str> {
        if !SCALINGS.contains(&node.op_type.as_str()) {
            return None;
        }
        let ins: Vec<&str> = node.inputs.iter().map(String::as_str).collect();
        let mut back = ins.iter().filter(|t| self.backward.contains(**t));
        let (g, None) = (back.next()?, back.next()) else {
            return None;
        };
        ins.iter()
            .all(|t| t == g || !self.forward.contains(t))
            .then_some(*g)
    }

    /// The backward input of a `Transpose` (the importer's layout change between a gradient
    /// op and the variable's layout, as an OIHW filter gradient to HWIO).
    fn transposed(&self, node: &'g Node) -> Option<&'g str> {
        match node.inputs.as_slice() {
            [x] if node.op_type == "Transpose" && self.backward.contains(x.as_str()) => Some(x),
            _ => None,
        }
    }

    /// Whether backward tensor `t` is computed from `from`.
    fn depends(&self, t: &str, from: &str) -> bool {
        let mut seen = BTreeSet::new();
        let mut stack = vec![t];
        while let Some(x) = stack.pop() {
            if x == from {
                return true;
            }
            if !seen.insert(x) || !self.backward.contains(x) {
                continue;
            }
            if let Some(&p) = self.ix.producer.get(x) {
                stack.extend(self.ix.node(p).inputs.iter().map(String::as_str));
            }
        }
        false
    }

    /// Marks the producer of `t` as update work, and back from it (up to the `gradients`)
    /// every producer whose outputs only update work reads.
    fn mark_exclusive(&mut self, t: &'g str, gradients: &[&str]) {
        let mut stack = vec![t];
        while let Some(x) = stack.pop() {
            if gradients.contains(&x) {
                continue;
            }
            let Some(&p) = self.ix.producer.get(x) else {
                continue;
            };
            let node = self.ix.node(p);
            let only_update = node.outputs.iter().all(|o| {
                self.ix
                    .consumers
                    .get(o.as_str())
                    .into_iter()
                    .flatten()
                    .all(|c| self.update.contains(c))
            });
            if (x == t || only_update) && self.update.insert(p) {
                stack.extend(
                    node.inputs
                        .iter()
                        .map(String::as_str)
                        .filter(|i| self.backward.contains(i)),
                );
            }
        }
    }
}
