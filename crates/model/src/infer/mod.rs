//! Static shape inference, one pass per dynamic profile.
//!
//! The options decide the graph inputs' shapes: `input_shape` replaces the model's declared
//! shapes (-1 allowed), then each profile of `dynamic_batch_size` / `dynamic_image_size` /
//! `dynamic_dims` fills the -1 dims, and shapes are propagated through the whole graph. So an op
//! deep in a network gets concrete shapes per profile, which the key resolver's own -1 filling
//! (graph-fed tensors only) cannot give. Integer values of small constants (`Constant`,
//! initializers, `Shape` of a static tensor, and arithmetic on them) are tracked so that
//! `Reshape`, `Slice`, `Split`, `Unsqueeze` … see their shape operands.
//!
//! This module owns the entry point ([`Model::infer`]) and the pass over each profile; the
//! per-op rules live in `ops` (one table from op type to inference function), attribute
//! normalisation in `attrs`, shape and value-tracking helpers in `shape`, and the typed error
//! whose text becomes a skipped op's reason in `error`.

use std::collections::{BTreeMap, BTreeSet};

use crate::graph::{topological_order, ElemType, Model, Node, TopoOrder};
use crate::ModelError;
use tunebank_key::Dynamic;
use tunebank_key::{AttrValue, Format, Profile, ResolvedOptions};

mod attrs;
mod error;
mod ops;

pub(crate) use ops::REFUSED_DOMAIN;
mod shape;

use error::InferError;
use ops::infer_node;
use shape::{const_info, Inputs};

/// Largest value a single inferred dim may take; larger ones are reported as an inference
/// failure of the op (hostile models cannot make later stages allocate or overflow).
pub(crate) const MAX_DIM: i64 = 1 << 40;

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
    /// The op skipped for its own reason that this one was skipped behind (following skipped
    /// producers back); `None` when this op is such a root.
    pub cause: Option<String>,
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
        let order = topological_order(&self.graph.nodes, TopoOrder::File);
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
                let ranged = options.input_ranges().iter().filter(|r| &r.input == name);
                for r in ranged {
                    if let Some(&fixed) = model.get(r.dim).filter(|&&d| d >= 0) {
                        return Err(ModelError::InputShape {
                            path: self.source.clone(),
                            input: name.clone(),
                            reason: format!(
                                "--input_shape ranges dim {} over {}~{}, but the model fixes it at {fixed}: expected a dim the model leaves dynamic (-1 or a named dim)",
                                r.dim, r.min, r.max
                            ),
                        });
                    }
                }
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

/// One profile's pass: seeds the tensors from the initializers and the profile's input shapes,
/// infers every node in `order`, and records each node it cannot infer (or that is on a cycle)
/// as skipped, giving its outputs their declared shapes where the model has static ones.
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
    // Skipped node → the root it was skipped behind (itself for a root).
    let mut root_of: BTreeMap<&str, String> = BTreeMap::new();
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
                let cause = match &reason {
                    InferError::ProducerSkipped { producer, .. } => Some(
                        root_of
                            .get(producer.as_str())
                            .cloned()
                            .unwrap_or_else(|| producer.clone()),
                    ),
                    _ => None,
                };
                root_of.insert(
                    node.name.as_str(),
                    cause.clone().unwrap_or_else(|| node.name.clone()),
                );
                result.skipped.push(SkippedOp {
                    node_name: node.name.clone(),
                    op_type: node.op_type.clone(),
                    reason: reason.to_string(),
                    cause,
                });
            }
        }
    }
    for (i, node) in g.nodes.iter().enumerate() {
        if !in_order.contains(&i) {
            result.skipped.push(SkippedOp {
                node_name: node.name.clone(),
                op_type: node.op_type.clone(),
                reason: InferError::Cycle.to_string(),
                cause: None,
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

/// Graph input shapes by input name (`None`: no declared shape).
type InputShapes = Vec<(String, Option<Vec<i64>>)>;

/// The node's inputs with their inferred tensors (`None` for an absent optional input).
/// Errors: an input with no inferred tensor, naming its skipped producer if it has one.
fn node_inputs(
    node: &Node,
    tensors: &BTreeMap<String, TensorInfo>,
    skipped: &BTreeMap<&str, &str>,
) -> Result<Inputs, InferError> {
    node.inputs
        .iter()
        .map(|name| {
            if name.is_empty() {
                return Ok(None);
            }
            match tensors.get(name) {
                Some(t) => Ok(Some(t.clone())),
                None => Err(match skipped.get(name.as_str()) {
                    Some(p) => InferError::ProducerSkipped {
                        input: name.clone(),
                        producer: p.to_string(),
                    },
                    None => InferError::UnknownInput {
                        input: name.clone(),
                    },
                }),
            }
        })
        .collect()
}
