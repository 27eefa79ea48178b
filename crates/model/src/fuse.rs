//! Fusion of an inferred graph into tuning units, their resolution into keys, and the
//! grouping of identical keys so each is tuned once.
//!
//! Rules, applied in topological order:
//! 1. `Conv` (or `ConvTranspose`) absorbs a following `BatchNormalization`, then an activation.
//! 2. `MatMul` / `Gemm` absorbs a following bias `Add` (the other operand a constant that
//!    does not widen the output), then an activation.
//! 3. Remaining elementwise ops form chains along single-consumer edges (`Div`→`Erf`→`Add`→
//!    `Mul`→`Mul` of an Erf GELU; residual `Add`→`Relu`).
//! 4. Every other computing op is a unit of its own. Ops that only relabel data (`Reshape`,
//!    `Flatten`, `Squeeze`, `Unsqueeze`, `Identity`, `Dropout`, `Constant`, `Shape` and shape
//!    arithmetic on constants) are not units.
//!
//! Each rule is one of ATC's fusion passes (the `*_PASS` constants); a pass that
//! `fusion_switch_file` or `oo_level=O1` switches off does not fuse ([`fuse_with`]), so the
//! units are those ATC compiles. `out_nodes` prunes the graph to what the named outputs need
//! before inference ([`Model::tuning_units`]).
//!
//! A fused op is absorbed only over an edge whose tensor has exactly that one consumer and is
//! not a graph output, so a unit never hides a tensor someone else reads and units never form
//! a cycle. A unit is named as AOE names fused ops in its result files: the node names
//! concatenated in order, without separator.

use std::collections::{BTreeMap, BTreeSet};

use crate::graph::Model;
use crate::infer::{InferredGraph, SkippedOp};
use crate::ModelError;
use tunebank_key::{
    resolve_op, BankKey, DType, OpTemplate, Profile, ResolveError, ResolvedOp, ResolvedOptions,
    SocSpec, TemplateTensor,
};
use tunebank_key::{FusionKind, FusionSwitches};

/// ATC's graph fusion pass that folds a following `BatchNormalization` into a `Conv`
/// (CANN 8.0 "Graph Fusion and UB Fusion Patterns": ConvBatchnormFusionPass).
pub(crate) const CONV_BN_PASS: (FusionKind, &str) = (FusionKind::Graph, "ConvBatchnormFusionPass");
/// ATC's graph fusion pass that folds a bias `Add` into a `MatMul` (MatMulBiasAddFusionPass).
pub(crate) const MATMUL_BIAS_PASS: (FusionKind, &str) =
    (FusionKind::Graph, "MatMulBiasAddFusionPass");
/// The UB fusion pass that fuses an activation into a convolution on the 910B (the `ubPass`
/// of AOE's Ascend910B2 fusion bank).
pub(crate) const CONV_ACTIVATION_PASS: (FusionKind, &str) =
    (FusionKind::Ub, "TbeConvFixPipeFusionPass");
/// The UB fusion pass that fuses an activation into a matrix multiplication on the 910B.
pub(crate) const MATMUL_ACTIVATION_PASS: (FusionKind, &str) =
    (FusionKind::Ub, "TbeMatmulFixPipeFusionPass");
/// The UB fusion pass that chains elementwise ops (AOE's `AutomaticUbFusion`).
pub(crate) const ELEMENTWISE_PASS: (FusionKind, &str) = (FusionKind::Ub, "AutomaticUbFusion");
/// Ops that relabel or reinterpret data without computing: never tuning units.
pub(crate) const NO_COMPUTE: &[&str] = &[
    "Constant",
    "Identity",
    "Reshape",
    "Flatten",
    "FlattenV2",
    "Squeeze",
    "Unsqueeze",
    "Dropout",
    "Shape",
];

/// Activations that fuse into a preceding `Conv`, `MatMul` or `Gemm` unit.
pub(crate) const ACTIVATIONS: &[&str] = &[
    "Relu",
    "Sigmoid",
    "Tanh",
    "Gelu",
    "LeakyRelu",
    "Elu",
    "Selu",
    "Softplus",
    "HardSigmoid",
    "HardSwish",
    "Clip",
    "PRelu",
    "Mish",
];

/// Elementwise ops that chain into one unit.
pub(crate) const ELEMENTWISE: &[&str] = &[
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Sqrt",
    "Erf",
    "Exp",
    "Log",
    "Neg",
    "Abs",
    "Reciprocal",
    "Relu",
    "Sigmoid",
    "Tanh",
    "Gelu",
    "LeakyRelu",
    "Elu",
    "Selu",
    "Softplus",
    "HardSigmoid",
    "HardSwish",
    "Clip",
    "PRelu",
    "Mish",
    "Cast",
    "Max",
    "Min",
    "Where",
    "Equal",
    "Less",
    "Greater",
    "Not",
    "Floor",
    "Ceil",
    "Round",
    "Sign",
    "Sin",
    "Cos",
];

/// One tuning unit: a single op or a fused group, as the tuner sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct TuningUnit {
    /// AOE's `op_name`: the member node names concatenated in order.
    pub name: String,
    /// Member node names in topological order.
    pub node_names: Vec<String>,
    /// Member op types in topological order (AOE's `op_type`, a list for a fused op).
    pub op_types: Vec<String>,
    /// The op as the key resolver consumes it: static shapes of this profile, `graph_input`
    /// set on inputs fed directly by a graph input, `fused_ops` = `op_types` when fused.
    /// Attributes are the anchor's, plus `"<i>:<name>"` for member `i` ≥ 1.
    pub template: OpTemplate,
    /// Graph tensor names of `template.inputs`, in order.
    pub input_tensors: Vec<String>,
    /// Graph tensor names of `template.outputs`, in order.
    pub output_tensors: Vec<String>,
    /// For each input, the tensor whose producing unit decides its dtype (the input itself,
    /// or what a chain of `NO_COMPUTE` ops relabels).
    pub input_origins: Vec<String>,
}

/// The tuning units of one profile.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileUnits {
    /// Shapes and skipped ops of this profile.
    pub graph: InferredGraph,
    /// Units in topological order.
    pub units: Vec<TuningUnit>,
    /// Ops inferred but left out of every unit because a tensor's dtype has no key dtype.
    pub unkeyable: Vec<SkippedOp>,
}

/// A resolved unit: its key under one profile.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedUnit {
    /// The unit.
    pub unit: TuningUnit,
    /// Its profile, descriptor and key.
    pub resolved: ResolvedOp,
}

/// Units that share one key: tuned once, reported under every name.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyGroup {
    /// The shared key.
    pub key: BankKey,
    /// Index (into the resolved list) of the first unit with this key: its descriptor is the
    /// one to tune.
    pub first: usize,
    /// Every unit name with this key, in input order (repeats kept once).
    pub op_names: Vec<String>,
    /// Indices (into the resolved list) of every unit with this key, in input order: where
    /// the tuned result is reported.
    pub units: Vec<usize>,
}

impl Model {
    /// Prunes the graph to `out_nodes` when set (`Model::pruned_to`), infers shapes per
    /// profile ([`Model::infer`]) and fuses each profile's graph into tuning units with the
    /// fusion passes the options leave on (`fuse_with`).
    pub fn tuning_units(&self, options: &ResolvedOptions) -> Result<Vec<ProfileUnits>, ModelError> {
        if !options.out_nodes().is_empty() {
            let pruned = self.pruned_to(options.out_nodes())?;
            return pruned.tuning_units(&options.without_out_nodes());
        }
        let switches = options.fusion_switches();
        Ok(self
            .infer(options)?
            .into_iter()
            .map(|graph| {
                let (units, unkeyable) = fuse_with(self, &graph, switches);
                ProfileUnits {
                    graph,
                    units,
                    unkeyable,
                }
            })
            .collect())
    }

    /// One template per inferred computing node (no fusion), in topological order: every
    /// inferred node but those in `NO_COMPUTE` and folded shape arithmetic on constants.
    /// Nodes with a dtype that has no key dtype are left out.
    pub fn op_templates(&self, graph: &InferredGraph) -> Vec<OpTemplate> {
        let ctx = Ctx::new(self, graph);
        graph
            .order
            .iter()
            .filter(|&&i| ctx.computes(i))
            .filter_map(|&i| ctx.unit(&[i]).ok())
            .map(|u| u.template)
            .collect()
    }
}

struct Ctx<'a> {
    model: &'a Model,
    graph: &'a InferredGraph,
    consumers: BTreeMap<&'a str, Vec<usize>>,
    outputs: BTreeSet<&'a str>,
    inputs: BTreeSet<&'a str>,
    /// For outputs of NO_COMPUTE nodes: the input they relabel.
    relabels: BTreeMap<&'a str, &'a str>,
    constants: BTreeSet<&'a str>,
}

impl<'a> Ctx<'a> {
    fn new(model: &'a Model, graph: &'a InferredGraph) -> Ctx<'a> {
        let g = &model.graph;
        let mut consumers: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, n) in g.nodes.iter().enumerate() {
            let mut seen = BTreeSet::new();
            for t in n.inputs.iter().filter(|t| !t.is_empty()) {
                if seen.insert(t.as_str()) {
                    consumers.entry(t.as_str()).or_default().push(i);
                }
            }
        }
        let mut relabels = BTreeMap::new();
        let mut constants: BTreeSet<&str> = g.initializers.keys().map(String::as_str).collect();
        for &i in &graph.order {
            let n = &g.nodes[i];
            let op = n.op_type.as_str();
            if op == "Constant" {
                constants.extend(n.outputs.iter().map(String::as_str));
            } else if NO_COMPUTE.contains(&op) {
                if let (Some(o), Some(src)) = (n.outputs.first(), n.inputs.first()) {
                    relabels.insert(o.as_str(), src.as_str());
                }
            }
        }
        Ctx {
            model,
            graph,
            consumers,
            outputs: g.outputs.iter().map(|o| o.name.as_str()).collect(),
            inputs: g.inputs.iter().map(|i| i.name.as_str()).collect(),
            relabels,
            constants,
        }
    }

    /// Whether node `i` runs as a kernel: not a [`NO_COMPUTE`] op, and not shape arithmetic
    /// on constants (every output value known), which a converter folds.
    fn computes(&self, i: usize) -> bool {
        let n = &self.model.graph.nodes[i];
        !NO_COMPUTE.contains(&n.op_type.as_str())
            && !n
                .outputs
                .iter()
                .all(|o| self.graph.tensors.get(o).is_some_and(|t| t.value.is_some()))
    }

    /// The one consumer of a tensor, if it has exactly one and is not a graph output.
    fn sole_consumer(&self, t: &str) -> Option<usize> {
        match self.consumers.get(t).map(Vec::as_slice) {
            Some([c]) if !self.outputs.contains(t) => Some(*c),
            _ => None,
        }
    }

    fn op(&self, i: usize) -> &'a str {
        self.model.graph.nodes[i].op_type.as_str()
    }

    fn out0(&self, i: usize) -> Option<&'a str> {
        self.model.graph.nodes[i]
            .outputs
            .first()
            .map(String::as_str)
            .filter(|o| !o.is_empty())
    }

    fn origin(&self, t: &'a str) -> &'a str {
        let mut t = t;
        for _ in 0..self.model.graph.nodes.len() {
            match self.relabels.get(t) {
                Some(src) => t = src,
                None => break,
            }
        }
        t
    }

    fn tensor(&self, name: &str, input: bool) -> Result<TemplateTensor, String> {
        let info = self
            .graph
            .tensors
            .get(name)
            .ok_or_else(|| format!("tensor {name:?} has no inferred shape"))?;
        let dtype: DType = info.elem_type.dtype().ok_or_else(|| {
            format!(
                "tensor {name:?} has dtype {} with no key dtype",
                info.elem_type
            )
        })?;
        Ok(TemplateTensor {
            shape: info.shape.clone(),
            dtype,
            ori_format: self.model.ir_format.filter(|_| info.shape.len() == 4),
            format: None,
            graph_input: (input && self.inputs.contains(name)).then(|| name.to_string()),
            producer_dtype: None,
        })
    }

    /// Builds the unit of a group of member nodes (in topological order).
    fn unit(&self, members: &[usize]) -> Result<TuningUnit, String> {
        let nodes = &self.model.graph.nodes;
        let produced: BTreeSet<&str> = members
            .iter()
            .flat_map(|&i| nodes[i].outputs.iter().map(String::as_str))
            .collect();
        let mut input_tensors: Vec<String> = Vec::new();
        for &i in members {
            for t in nodes[i].inputs.iter().filter(|t| !t.is_empty()) {
                if !produced.contains(t.as_str()) && !input_tensors.contains(t) {
                    input_tensors.push(t.clone());
                }
            }
        }
        let last = *members.last().ok_or("empty unit")?;
        let mut output_tensors: Vec<String> = Vec::new();
        for &i in members {
            for (k, t) in nodes[i].outputs.iter().enumerate() {
                if t.is_empty() || !self.graph.tensors.contains_key(t) {
                    continue;
                }
                let outside = self
                    .consumers
                    .get(t.as_str())
                    .is_some_and(|c| c.iter().any(|c| !members.contains(c)));
                if outside || self.outputs.contains(t.as_str()) || (i == last && k == 0) {
                    output_tensors.push(t.clone());
                }
            }
        }
        let inputs = input_tensors
            .iter()
            .map(|t| self.tensor(t, true))
            .collect::<Result<Vec<_>, _>>()?;
        let outputs = output_tensors
            .iter()
            .map(|t| self.tensor(t, false))
            .collect::<Result<Vec<_>, _>>()?;
        let mut attrs = BTreeMap::new();
        for (k, &i) in members.iter().enumerate() {
            for (name, v) in self.graph.attrs.get(&i).into_iter().flatten() {
                let name = if k == 0 {
                    name.clone()
                } else {
                    format!("{k}:{name}")
                };
                attrs.insert(name, v.clone());
            }
        }
        let node_names: Vec<String> = members.iter().map(|&i| nodes[i].name.clone()).collect();
        let op_types: Vec<String> = members.iter().map(|&i| nodes[i].op_type.clone()).collect();
        let name = node_names.concat();
        Ok(TuningUnit {
            template: OpTemplate {
                node_name: name.clone(),
                op_type: op_types[0].clone(),
                fused_ops: if members.len() > 1 {
                    op_types.clone()
                } else {
                    vec![]
                },
                inputs,
                outputs,
                attrs,
            },
            input_origins: input_tensors
                .iter()
                .map(|t| self.origin(t).to_string())
                .collect(),
            name,
            node_names,
            op_types,
            input_tensors,
            output_tensors,
        })
    }

    /// Follows `t` to its sole consumer if that consumer is inferred, not yet taken, and
    /// satisfies `accept`.
    fn absorb(
        &self,
        t: Option<&str>,
        taken: &[bool],
        inferred: &[bool],
        accept: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let c = self.sole_consumer(t?)?;
        (inferred[c] && !taken[c] && accept(c)).then_some(c)
    }

    /// Whether node `add` adds a constant bias to `t` without widening `t`'s shape.
    fn is_bias_add(&self, add: usize, t: &str) -> bool {
        let n = &self.model.graph.nodes[add];
        if n.op_type != "Add" || n.inputs.len() != 2 {
            return false;
        }
        let Some(other) = n.inputs.iter().find(|x| x.as_str() != t) else {
            return false;
        };
        let (Some(out), Some(y)) = (self.graph.tensors.get(t), n.outputs.first()) else {
            return false;
        };
        self.constants.contains(self.origin(other))
            && self
                .graph
                .tensors
                .get(y)
                .is_some_and(|y| y.shape == out.shape)
    }
}

/// Fuses one profile's inferred graph into tuning units (rules in the module docs), in
/// topological order of their first member, with only the fusion passes `switches` leaves
/// on: a rule whose pass (its `*_PASS` constant) is off fuses nothing, and its ops are units
/// of their own (or join another rule's unit). The second list holds the inferred ops left
/// out because one of their tensors has a dtype a key cannot express.
pub(crate) fn fuse_with(
    model: &Model,
    graph: &InferredGraph,
    switches: &FusionSwitches,
) -> (Vec<TuningUnit>, Vec<SkippedOp>) {
    let on = |(kind, pass): (FusionKind, &str)| switches.is_on(kind, pass);
    let ctx = Ctx::new(model, graph);
    let n = model.graph.nodes.len();
    let mut inferred = vec![false; n];
    for &i in &graph.order {
        inferred[i] = true;
    }
    let mut taken = vec![false; n];
    let mut groups: Vec<Vec<usize>> = Vec::new();
    // Rules 1 and 2: anchors absorb their followers.
    for &i in &graph.order {
        let op = ctx.op(i);
        let mut members = vec![i];
        let mut t = ctx.out0(i);
        let activation = match op {
            "Conv" | "ConvTranspose" => {
                if let Some(bn) = ctx.absorb(t, &taken, &inferred, |c| {
                    on(CONV_BN_PASS) && ctx.op(c) == "BatchNormalization"
                }) {
                    members.push(bn);
                    t = ctx.out0(bn);
                }
                on(CONV_ACTIVATION_PASS)
            }
            "MatMul" | "Gemm" => {
                let cur = t;
                if let Some(add) = ctx.absorb(t, &taken, &inferred, |c| {
                    on(MATMUL_BIAS_PASS) && cur.is_some_and(|cur| ctx.is_bias_add(c, cur))
                }) {
                    members.push(add);
                    t = ctx.out0(add);
                }
                on(MATMUL_ACTIVATION_PASS)
            }
            _ => continue,
        };
        if let Some(act) = ctx.absorb(t, &taken, &inferred, |c| {
            activation && ACTIVATIONS.contains(&ctx.op(c))
        }) {
            members.push(act);
        }
        for &m in &members {
            taken[m] = true;
        }
        groups.push(members);
    }
    // Rule 3: elementwise chains; rule 4: the rest.
    for &i in &graph.order {
        let op = ctx.op(i);
        if taken[i] || !ctx.computes(i) {
            continue;
        }
        let mut members = vec![i];
        taken[i] = true;
        if ELEMENTWISE.contains(&op) && on(ELEMENTWISE_PASS) {
            let mut cur = i;
            while let Some(c) = ctx.absorb(ctx.out0(cur), &taken, &inferred, |c| {
                ELEMENTWISE.contains(&ctx.op(c))
            }) {
                members.push(c);
                taken[c] = true;
                cur = c;
            }
        }
        groups.push(members);
    }
    let position: BTreeMap<usize, usize> = graph
        .order
        .iter()
        .enumerate()
        .map(|(k, &i)| (i, k))
        .collect();
    groups.sort_by_key(|g| position[&g[0]]);
    let mut units = Vec::with_capacity(groups.len());
    let mut left_out = Vec::new();
    for g in groups {
        match ctx.unit(&g) {
            Ok(u) => units.push(u),
            Err(reason) => left_out.extend(g.iter().map(|&i| SkippedOp {
                node_name: model.graph.nodes[i].name.clone(),
                op_type: model.graph.nodes[i].op_type.clone(),
                reason: reason.clone(),
                cause: None,
            })),
        }
    }
    (units, left_out)
}

/// Resolves units of one profile into keys, in order, filling each input's
/// `producer_dtype` from the resolved output dtype of the unit that produced it (so
/// gray-list ops follow their producer under mixed precision).
///
/// `units` must be the units of `profile` (one [`ProfileUnits`] entry): their shapes are that
/// profile's; resolving them under another profile gives wrong keys.
pub fn resolve_units(
    units: &[TuningUnit],
    profile: &Profile,
    options: &ResolvedOptions,
    soc: &SocSpec,
) -> Result<Vec<ResolvedUnit>, ResolveError> {
    let mut produced: BTreeMap<&str, DType> = BTreeMap::new();
    let mut out = Vec::with_capacity(units.len());
    for unit in units {
        let mut template = unit.template.clone();
        for (tt, origin) in template.inputs.iter_mut().zip(&unit.input_origins) {
            tt.producer_dtype = produced.get(origin.as_str()).copied();
        }
        let descriptor = resolve_op(&template, options, soc, profile)?;
        let key = descriptor.key().map_err(|source| ResolveError::Key {
            node: template.node_name.clone(),
            source,
        })?;
        for (name, t) in unit.output_tensors.iter().zip(&descriptor.outputs) {
            produced.insert(name.as_str(), t.dtype);
        }
        out.push(ResolvedUnit {
            unit: TuningUnit {
                template,
                ..unit.clone()
            },
            resolved: ResolvedOp {
                profile: profile.clone(),
                descriptor,
                key,
            },
        });
    }
    Ok(out)
}

/// Groups resolved units by key, in order of first appearance: identical keys are tuned once
/// and reported under all their names.
pub fn group_by_key(resolved: &[ResolvedUnit]) -> Vec<KeyGroup> {
    let mut index: BTreeMap<BankKey, usize> = BTreeMap::new();
    let mut groups: Vec<KeyGroup> = Vec::new();
    for (i, r) in resolved.iter().enumerate() {
        let g = *index.entry(r.resolved.key).or_insert_with(|| {
            groups.push(KeyGroup {
                key: r.resolved.key,
                first: i,
                op_names: Vec::new(),
                units: Vec::new(),
            });
            groups.len() - 1
        });
        groups[g].units.push(i);
        if !groups[g].op_names.contains(&r.unit.name) {
            groups[g].op_names.push(r.unit.name.clone());
        }
    }
    groups
}
