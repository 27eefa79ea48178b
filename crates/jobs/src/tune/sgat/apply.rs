//! The post-SGAT units: what a converter compiles once the graph bank has decided each
//! subgraph's fusion (AOE's order: subgraph tuning fixes fusion and formats, hence the final op
//! shapes; operator tuning then tunes those ops; ATC applies the graph bank first and looks the
//! resulting ops up in the op bank).
//!
//! **Rule.** The profile's units are partitioned ([`tunebank_model::partition`]) and every
//! subgraph key is looked up in the graph bank (read only). A subgraph without a hit keeps its
//! units unchanged. For a hit, the stored [`SgatStrategy`] is applied kernel by kernel
//! ([`SgatStrategy::kernels`], in order of their first node):
//!
//! - nodes sharing one non-negative `scopeId` become **one unit**: the first node's op type,
//!   impl mode and cube math; its fused-op list (the op itself when not fused) extended by every
//!   other member's (its fused list, or its op type), in node order; attributes the first
//!   node's plus each later member's renumbered as fused members' are (`k:name` for the k-th
//!   fused member, so an anchor attribute `strides` of a member whose ops start at position 3
//!   becomes `3:strides`); inputs every member's inputs that are not produced inside the scope,
//!   in node and port order (what the merged kernel reads); outputs those of the scope's last
//!   node; name, node names and op types the members' concatenated (AOE names fused ops so).
//!   Outputs of earlier members that are read outside the scope are not outputs of the merged
//!   op (SGAT's space only UB-fuses a producer into its single consumer);
//! - a kernel with `cut = k > 1` (the largest cut of its members) runs on a **batch slice**:
//!   every activation tensor whose first dimension is the subgraph's batch (the first graph
//!   input's first dimension, as the subgraph model reads it) gets ⌈batch / k⌉ there, in its
//!   shape and original shape (outputs and node-to-node edges; graph inputs of rank ≥ 2 that
//!   are not FRACTAL_Z weights); the op key changes and the op runs k times;
//! - an edge in `transDataAvoided` whose producer is the last node of its kernel and whose
//!   consumer is outside it: the producer **writes the consumer's layout** — the output the
//!   consumer reads takes the consumer's view of it (shape and format, dtype unchanged), so no
//!   TransData runs and the producer's key is that of an op writing that layout (applied before a
//!   cut slices the batch);
//! - `fusionType` (outputs kept in L2) changes where a tensor lives, not what an op computes:
//!   it never changes an op's descriptor or key.
//!
//! Every new descriptor's key comes from [`tunebank_key::OpDescriptor::key`], as every op key does. The
//! simulator times a merged unit by its first op (a Conv2D with a FixPipe-fused pool or
//! element op is timed as the Conv2D, with its extra inputs read), so OPAT can tune it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::tune::{plan, unit_selected, TunePlan};
use tunebank_bank::{Bank, BankError, LayerId, Lookup};
use tunebank_key::{
    AttrValue, BankKey, Format, GraphDescriptor, KeyError, OpOrigin, OpTemplate, ResolvedOptions,
    SocSpec, TemplateTensor, TensorDesc, TensorSource,
};
use tunebank_measure::sim::graph::SgatStrategy;
use tunebank_model::partition::Subgraph;
use tunebank_model::{Model, ResolvedUnit};

use super::{partition_plan, SgatError};
use tunebank_failure::FailureKind;

/// Why post-SGAT units could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The graph bank failed.
    #[error(transparent)]
    Bank(#[from] BankError),
    /// A new op descriptor has no key.
    #[error("subgraph {name}: the fused op has no key: {source}")]
    Key {
        /// Subgraph name.
        name: String,
        /// Cause.
        source: KeyError,
    },
    /// The subgraph's units do not match its descriptor.
    #[error("subgraph {name}: {what}")]
    Subgraph {
        /// Subgraph name.
        name: String,
        /// What is wrong.
        what: String,
    },
}

/// What the graph bank made of one subgraph. JSON: its fields, keys in ascending order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AppliedSubgraph {
    /// Its key.
    pub key: BankKey,
    /// The answering layer on a hit.
    #[serde(serialize_with = "ser_layer")]
    pub layer: Option<LayerId>,
    /// The subgraph's name (`<first unit>..<last unit>`).
    pub name: String,
    /// `hit` or `miss` in the graph bank.
    pub result: &'static str,
    /// Kernels that run on a batch slice (`cut` > 1).
    pub sliced: usize,
    /// Units after (what the converter compiles).
    pub units_after: usize,
    /// Units before (the fused units of the plan).
    pub units_before: usize,
    /// A hit whose strategy does not fit the subgraph (its units are then kept), and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unusable: Option<String>,
}

fn ser_layer<S: serde::Serializer>(l: &Option<LayerId>, s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&l.map(|l| l.to_string()), s)
}

/// The post-SGAT units of a plan and what happened to each subgraph.
#[derive(Clone, Debug, Default)]
pub struct PostSgat {
    /// The units the converter compiles, in model order.
    pub units: Vec<ResolvedUnit>,
    /// Per subgraph, in model order.
    pub subgraphs: Vec<AppliedSubgraph>,
}

impl PostSgat {
    /// Subgraphs the graph bank answered.
    pub fn hits(&self) -> usize {
        self.subgraphs.iter().filter(|s| s.layer.is_some()).count()
    }
}

/// Applies the graph bank to `units` (every profile's units, in plan order) partitioned into
/// `subgraphs` (whose `units` index `units`, covering each once, as [`super::SgatPlan`] has
/// them): one look-up per subgraph, the rule of the module docs per hit.
pub(crate) fn apply_graph_bank(
    units: &[ResolvedUnit],
    subgraphs: &[Subgraph],
    graph_bank: &Bank,
) -> Result<PostSgat, ApplyError> {
    let mut out = PostSgat::default();
    for sg in subgraphs {
        let mut row = AppliedSubgraph {
            name: sg.name.clone(),
            key: sg.key,
            result: "miss",
            layer: None,
            units_before: sg.units.len(),
            units_after: sg.units.len(),
            sliced: 0,
            unusable: None,
        };
        let mut new_units = None;
        if let Lookup::Hit(h) = graph_bank.lookup(&sg.key)? {
            row.result = "hit";
            row.layer = Some(h.layer);
            match SgatStrategy::from_strategy(&h.answer.strategy, sg.descriptor.nodes.len()) {
                Ok(s) => {
                    row.sliced = s
                        .kernels()
                        .iter()
                        .filter(|k| k.iter().any(|&i| s.cut[i] > 1))
                        .count();
                    new_units = Some(apply_strategy(units, sg, &s)?);
                }
                Err(e) => row.unusable = Some(e.to_string()),
            }
        }
        let new_units =
            new_units.unwrap_or_else(|| sg.units.iter().map(|&u| units[u].clone()).collect());
        row.units_after = new_units.len();
        out.units.extend(new_units);
        out.subgraphs.push(row);
    }
    Ok(out)
}

/// The units subgraph `sg` of `units` becomes under `strategy` (module docs): one per kernel,
/// in order of the kernels' first nodes. A kernel of one node without a cut is that node's
/// unit unchanged.
pub(crate) fn apply_strategy(
    units: &[ResolvedUnit],
    sg: &Subgraph,
    strategy: &SgatStrategy,
) -> Result<Vec<ResolvedUnit>, ApplyError> {
    let g = &sg.descriptor;
    let bad = |what: String| ApplyError::Subgraph {
        name: sg.name.clone(),
        what,
    };
    let n = g.nodes.len();
    if sg.units.len() != n || strategy.cut.len() != n || strategy.scope_id.len() != n {
        return Err(bad(format!(
            "{} units, {} nodes, a strategy for {}",
            sg.units.len(),
            n,
            strategy.cut.len()
        )));
    }
    let unit = |i: usize| {
        units
            .get(sg.units[i])
            .ok_or_else(|| bad(format!("unit {} out of range", sg.units[i])))
    };
    let batch = g.inputs.first().and_then(|t| t.shape.first()).copied();
    let mut out = Vec::new();
    for members in strategy.kernels() {
        let cut = members.iter().map(|&i| strategy.cut[i]).max().unwrap_or(1);
        let first = unit(members[0])?;
        let last = *members.last().unwrap_or(&members[0]);
        let in_scope: BTreeSet<usize> = members.iter().copied().collect();
        // Edges out of this kernel whose TransData the strategy avoids.
        let direct: Vec<(usize, usize)> = strategy
            .trans_data_avoided
            .iter()
            .copied()
            .filter(|&(p, c)| p == last && !in_scope.contains(&c))
            .collect();
        if members.len() == 1 && cut <= 1 && direct.is_empty() {
            out.push(first.clone());
            continue;
        }
        let mut merged = Merged::start(first);
        for &i in &members {
            let u = unit(i)?;
            let node = &g.nodes[i];
            if node.inputs.len() != u.resolved.descriptor.inputs.len() {
                return Err(bad(format!("node {i}: inputs differ from its unit's")));
            }
            // Per input: kept (not produced inside the scope) and whether it is an activation.
            let keep: Vec<(bool, bool)> = node
                .inputs
                .iter()
                .zip(&u.resolved.descriptor.inputs)
                .map(|(s, t)| match *s {
                    TensorSource::Node { node, .. } => (!in_scope.contains(&(node as usize)), true),
                    TensorSource::GraphInput { .. } => {
                        (true, t.shape.len() >= 2 && t.format != Format::FractalZ)
                    }
                })
                .collect();
            merged.add(u, &keep, i == members[0]);
        }
        let mut done = merged.finish(unit(last)?);
        for (p, c) in direct {
            write_direct(&mut done, g, (p, c), unit(c)?).map_err(bad)?;
        }
        if cut > 1 {
            if let Some(b) = batch.filter(|&b| b > 0) {
                slice(&mut done, &merged.activation, b, i64::from(cut));
            }
        }
        done.resolved.key = done
            .resolved
            .descriptor
            .key()
            .map_err(|source| ApplyError::Key {
                name: sg.name.clone(),
                source,
            })?;
        out.push(done);
    }
    Ok(out)
}

/// A producer that writes its consumer's format itself (`transDataAvoided`, edge `(p, c)` of
/// `g`): the output `c` reads takes the shape and format in which `c` reads it (its dtype is
/// unchanged), so the producer's op key is that of an op writing that layout.
fn write_direct(
    producer: &mut ResolvedUnit,
    g: &GraphDescriptor,
    (p, c): (usize, usize),
    consumer: &ResolvedUnit,
) -> Result<(), String> {
    let port = g.nodes[c]
        .inputs
        .iter()
        .enumerate()
        .find_map(|(j, s)| match *s {
            TensorSource::Node { node, output } if node as usize == p => Some((j, output)),
            _ => None,
        });
    let Some((j, output)) = port else {
        return Err(format!(
            "transDataAvoided [{p}, {c}]: node {c} reads nothing of node {p}"
        ));
    };
    let (Some(view), Some(out)) = (
        consumer.resolved.descriptor.inputs.get(j),
        producer
            .resolved
            .descriptor
            .outputs
            .get_mut(output as usize),
    ) else {
        return Err(format!("transDataAvoided [{p}, {c}]: no such port"));
    };
    out.shape = view.shape.clone();
    out.format = view.format;
    Ok(())
}

/// A merged unit being built: descriptor and template side by side.
struct Merged {
    unit: ResolvedUnit,
    /// Per kept input of the descriptor: whether it is an activation (sliced by a cut).
    activation: Vec<bool>,
    /// Fused members so far (descriptor, template).
    members: (Vec<String>, Vec<String>),
    /// Origin members so far (framework names).
    origin: Vec<String>,
    /// Nodes merged so far.
    nodes: usize,
}

/// A descriptor's or template's fused members: its fused list, or the op itself.
fn members_of(op_type: &str, fused: &[String]) -> Vec<String> {
    if fused.is_empty() {
        vec![op_type.to_owned()]
    } else {
        fused.to_vec()
    }
}

/// `attrs` of a member whose fused ops start at position `offset`, renumbered (`k:name` →
/// `offset+k:name`, an anchor's `name` → `offset:name`) into `into`.
fn add_member_attrs(
    into: &mut BTreeMap<String, AttrValue>,
    attrs: &BTreeMap<String, AttrValue>,
    offset: usize,
) {
    for (name, v) in attrs {
        let renamed = match name.split_once(':') {
            Some((k, rest)) if k.parse::<usize>().is_ok() => {
                format!("{}:{rest}", offset + k.parse::<usize>().unwrap_or(0))
            }
            _ => format!("{offset}:{name}"),
        };
        into.insert(renamed, v.clone());
    }
}

impl Merged {
    fn start(first: &ResolvedUnit) -> Merged {
        let mut unit = first.clone();
        let (d, t) = (&mut unit.resolved.descriptor, &mut unit.unit.template);
        d.inputs.clear();
        t.inputs.clear();
        unit.unit.input_tensors.clear();
        unit.unit.input_origins.clear();
        unit.unit.name.clear();
        unit.unit.node_names.clear();
        unit.unit.op_types.clear();
        Merged {
            unit,
            activation: Vec::new(),
            members: (Vec::new(), Vec::new()),
            origin: Vec::new(),
            nodes: 0,
        }
    }

    /// Adds member `u` (its inputs filtered by `keep`: (kept, activation)).
    fn add(&mut self, u: &ResolvedUnit, keep: &[(bool, bool)], first: bool) {
        let d = &u.resolved.descriptor;
        let t = &u.unit.template;
        let m = &mut self.unit;
        if !first {
            add_member_attrs(
                &mut m.resolved.descriptor.attrs,
                &d.attrs,
                self.members.0.len(),
            );
            add_member_attrs(&mut m.unit.template.attrs, &t.attrs, self.members.1.len());
        }
        self.members.0.extend(members_of(&d.op_type, &d.fused_ops));
        self.members.1.extend(members_of(&t.op_type, &t.fused_ops));
        match &d.origin {
            Some(o) => self.origin.extend(members_of(&o.op_type, &o.fused_ops)),
            None => self.origin.extend(members_of(&d.op_type, &d.fused_ops)),
        }
        let same = t.inputs.len() == d.inputs.len();
        for (j, &(kept, act)) in keep.iter().enumerate() {
            if !kept {
                continue;
            }
            m.resolved.descriptor.inputs.push(d.inputs[j].clone());
            self.activation.push(act);
            if same {
                m.unit.template.inputs.push(t.inputs[j].clone());
            }
            if let Some(x) = u.unit.input_tensors.get(j) {
                m.unit.input_tensors.push(x.clone());
            }
            if let Some(x) = u.unit.input_origins.get(j) {
                m.unit.input_origins.push(x.clone());
            }
        }
        self.nodes += 1;
        m.unit.name.push_str(&u.unit.name);
        m.unit.node_names.extend(u.unit.node_names.iter().cloned());
        m.unit.op_types.extend(u.unit.op_types.iter().cloned());
    }

    /// The merged unit, its outputs those of `last`.
    fn finish(&self, last: &ResolvedUnit) -> ResolvedUnit {
        let mut unit = self.unit.clone();
        let one = self.members.0.len() <= 1;
        let d = &mut unit.resolved.descriptor;
        d.outputs = last.resolved.descriptor.outputs.clone();
        d.fused_ops = if one {
            Vec::new()
        } else {
            self.members.0.clone()
        };
        if self.nodes > 1 {
            let origin_type = d
                .origin
                .as_ref()
                .map_or_else(|| d.op_type.clone(), |o| o.op_type.clone());
            d.origin = Some(OpOrigin {
                op_type: origin_type,
                fused_ops: self.origin.clone(),
            });
        }
        let t: &mut OpTemplate = &mut unit.unit.template;
        t.outputs = last.unit.template.outputs.clone();
        t.fused_ops = if self.members.1.len() <= 1 {
            Vec::new()
        } else {
            self.members.1.clone()
        };
        unit.unit.output_tensors = last.unit.output_tensors.clone();
        unit
    }
}

/// ⌈b / k⌉.
fn slice_of(b: i64, k: i64) -> i64 {
    (b + k - 1) / k
}

/// Slices every activation tensor of `u` whose first dimension is `batch` to ⌈batch / k⌉.
fn slice(u: &mut ResolvedUnit, activation: &[bool], batch: i64, k: i64) {
    let s = slice_of(batch, k);
    let cut_desc = |t: &mut TensorDesc| {
        if t.shape.first() == Some(&batch) {
            t.shape[0] = s;
            if t.ori_shape.first() == Some(&batch) {
                t.ori_shape[0] = s;
            }
        }
    };
    let cut_tmpl = |t: &mut TemplateTensor| {
        if t.shape.first() == Some(&batch) {
            t.shape[0] = s;
        }
    };
    let d = &mut u.resolved.descriptor;
    for (t, _) in d.inputs.iter_mut().zip(activation).filter(|(_, &a)| a) {
        cut_desc(t);
    }
    d.outputs.iter_mut().for_each(cut_desc);
    let tp = &mut u.unit.template;
    if tp.inputs.len() == activation.len() {
        for (t, _) in tp.inputs.iter_mut().zip(activation).filter(|(_, &a)| a) {
            cut_tmpl(t);
        }
    }
    tp.outputs.iter_mut().for_each(cut_tmpl);
}

/// The plan a converter compiles after SGAT: [`plan`] of every unit (no filter), partitioned as
/// [`super::sgat_plan`] does, the graph bank applied (`apply_graph_bank`), then the units
/// `only` selects (as [`plan`] selects them) grouped into one task per key. The second value
/// says what happened to each subgraph.
pub fn post_sgat_plan(
    model: &Model,
    options: &ResolvedOptions,
    soc: &SocSpec,
    graph_bank: &Bank,
    only: Option<&BTreeSet<String>>,
) -> Result<(TunePlan, PostSgat), SgatError> {
    let full = plan(model, options, soc, None)?;
    let sp = partition_plan(&full, options, soc)?;
    let applied = apply_graph_bank(&full.units, &sp.subgraphs, graph_bank)?;
    let units: Vec<ResolvedUnit> = applied
        .units
        .iter()
        .filter(|u| only.is_none_or(|set| unit_selected(u, set)))
        .cloned()
        .collect();
    Ok((TunePlan::from_units(units, full.skipped), applied))
}

impl ApplyError {
    /// The kind of the bank or key error it wraps; a subgraph the bank's strategy does not fit
    /// is the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            ApplyError::Bank(e) => e.kind(),
            ApplyError::Key { source, .. } => source.kind(),
            ApplyError::Subgraph { .. } => FailureKind::Input,
        }
    }
}
