//! PyTorch in: a `torch.export` program (`.pt2`, from `torch.export.save`) or the capture
//! `tunebank.torch` writes of a `torch.compile`d step (the same archive layout and schema, a
//! forward and backward graph of aten ops and the optimizer's updates), imported as graph IR.
//!
//! - `program.rs` reads the archive and the program's JSON (schema major version checked);
//!   weights are never opened: every tensor's dtype and sizes are in the program.
//! - `aten.rs` maps forward aten ops (both the training IR `torch.export` writes — `conv2d`,
//!   `linear`, `batch_norm` — and the core aten ops after decomposition — `convolution`,
//!   `addmm`, `_native_batch_norm_legit_no_training`); `grad.rs` the backward ops AOTAutograd
//!   traces (`convolution_backward`, `native_batch_norm_backward`, `threshold_backward` …) onto
//!   the Ascend IR ops the TensorFlow importer gives a training step, and in-place updates of
//!   parameters and buffers (the optimizer's, `_foreach_*` expanded per tensor) onto
//!   `Assign`/`AssignAdd`/`AssignSub`, where GDAT finds a step's gradients.
//! - `plumbing.rs` the shape plumbing (transposes, reshapes, slices, splits).
//! - Parameters, buffers and constants are initializers named by their module path
//!   (`layer1.0.conv1.weight`); user inputs are graph inputs.
//! - An aten op not mapped becomes an `aten`-domain node of its name (or of the Ascend IR op
//!   torchair makes of it, `grad.rs`'s `ASCEND_NAMES`: `nll_loss_backward` is `NLLLossGrad`), which inference
//!   names when it skips it; its outputs keep the shapes the program states (declared as
//!   `value_info`), so the ops after it are still tuned.

mod aten;
mod grad;
mod plumbing;
pub(crate) mod program;

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufReader, Cursor};
use std::path::Path;

use crate::graph::{ConstTensor, ElemType, Graph, Model, Node, ValueDecl};
use crate::{Attr, ModelError};
use program::{Arg, Program, TensorMeta, TorchGraph, TorchNode};

/// The default-domain opset the importer's nodes follow.
pub(crate) const OPSET: i64 = 17;

/// Reads and imports a `.pt2` file; only the program entry of the archive is read.
pub(crate) fn load_pt2(path: impl AsRef<Path>) -> Result<Model, ModelError> {
    let path = path.as_ref();
    let source = path.display().to_string();
    let file = File::open(path).map_err(|e| ModelError::Read {
        path: source.clone(),
        source: e,
    })?;
    let program = program::read_program(BufReader::new(file), &source)?;
    build(&program, &source)
}

/// `load_pt2` on the archive's bytes; `source` labels it in errors. Never panics, whatever
/// the bytes.
pub fn load_pt2_bytes(bytes: &[u8], source: &str) -> Result<Model, ModelError> {
    let program = program::read_program(Cursor::new(bytes), source)?;
    build(&program, source)
}

fn build(p: &Program, source: &str) -> Result<Model, ModelError> {
    let g = &p.graph_module.graph;
    if g.nodes.is_empty() {
        return Err(program::malformed(
            source,
            "the program's graph has no nodes".into(),
        ));
    }
    let mut b = Builder::new(source, g);
    b.signature(p)?;
    for (i, n) in g.nodes.iter().enumerate() {
        b.node(i, n)?;
    }
    b.fold_batch_norm();
    let outputs = g
        .outputs
        .iter()
        .flat_map(Arg::output_names)
        .flatten()
        .map(|t| b.out_decl(&t))
        .collect();
    let version = p
        .schema_version
        .as_ref()
        .map_or(String::new(), |v| format!("{}.{}", v.major, v.minor));
    Ok(Model {
        source: source.to_string(),
        ir_version: 8,
        opset: OPSET,
        producer: format!("PyTorch torch.export (schema {version})"),
        graph: Graph {
            name: "torch".into(),
            inputs: b.inputs,
            outputs,
            value_info: b.value_info,
            initializers: b.initializers,
            nodes: b.nodes,
        },
        ir_format: None,
    })
}

/// The IR element type of a `ScalarType` code of the schema.
pub(crate) fn elem_type(scalar: i64) -> ElemType {
    ElemType(match scalar {
        1 => 2,   // uint8
        2 => 3,   // int8
        3 => 5,   // int16
        4 => 6,   // int32
        5 => 7,   // int64
        6 => 10,  // float16
        7 => 1,   // float32
        8 => 11,  // float64
        12 => 9,  // bool
        13 => 16, // bfloat16
        28 => 4,  // uint16
        _ => 0,
    })
}

/// One operator call: the aten op's name (`convolution`) and overload (`default`), its
/// arguments by schema name, its output tensors (`None`: not a tensor or unused).
pub(crate) struct Call {
    pub(crate) name: String,
    pub(crate) op: String,
    pub(crate) args: Vec<(String, Arg)>,
    pub(crate) outs: Vec<Option<String>>,
}

impl Call {
    /// Argument `name`, else the one at position `i`.
    pub(crate) fn arg(&self, i: usize, name: &str) -> Option<&Arg> {
        self.args
            .iter()
            .find(|(n, _)| n == name)
            .or_else(|| self.args.get(i).filter(|(n, _)| n.is_empty()))
            .map(|(_, a)| a)
    }

    pub(crate) fn int(&self, i: usize, name: &str) -> Option<i64> {
        match self.arg(i, name)? {
            Arg::Int(v) => Some(*v),
            Arg::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    pub(crate) fn float(&self, i: usize, name: &str) -> Option<f64> {
        match self.arg(i, name)? {
            Arg::Float(v) => Some(*v),
            Arg::Int(v) => Some(*v as f64),
            _ => None,
        }
    }

    pub(crate) fn ints(&self, i: usize, name: &str) -> Option<Vec<i64>> {
        match self.arg(i, name)? {
            Arg::Ints(v) => Some(v.clone()),
            Arg::Int(v) => Some(vec![*v]),
            _ => None,
        }
    }

    pub(crate) fn bool(&self, i: usize, name: &str) -> Option<bool> {
        match self.arg(i, name)? {
            Arg::Bool(b) => Some(*b),
            Arg::Int(v) => Some(*v != 0),
            _ => None,
        }
    }

    /// The torch name of tensor argument `name`/`i`, if it is one.
    pub(crate) fn tensor_arg(&self, i: usize, name: &str) -> Option<String> {
        match self.arg(i, name)? {
            Arg::Tensor(t) => Some(t.clone()),
            _ => None,
        }
    }

    /// Output `k`'s name, or `""` when absent.
    pub(crate) fn out(&self, k: usize) -> String {
        self.outs.get(k).cloned().flatten().unwrap_or_default()
    }
}

/// Builds the IR graph of one program.
pub(crate) struct Builder<'a> {
    pub(crate) source: &'a str,
    pub(crate) meta: &'a BTreeMap<String, TensorMeta>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) inputs: Vec<ValueDecl>,
    pub(crate) value_info: BTreeMap<String, ValueDecl>,
    pub(crate) initializers: BTreeMap<String, ConstTensor>,
    /// Torch tensor → IR tensor, where they differ (parameters by module path, in-place
    /// results, relabellings).
    rename: HashMap<String, String>,
    /// A 2-D transpose not yet made (`t`, `transpose(0, 1)`, `permute([1, 0])`): its output →
    /// its input. `mm`/`addmm` read it as a transposed operand; anything else makes it.
    pub(crate) transposed: HashMap<String, String>,
    /// A max pool's indices output → its values output (`MaxPoolGrad` reads the values).
    pub(crate) pool_values: HashMap<String, String>,
    fresh: usize,
}

impl<'a> Builder<'a> {
    fn new(source: &'a str, g: &'a TorchGraph) -> Builder<'a> {
        Builder {
            source,
            meta: &g.tensor_values,
            nodes: Vec::new(),
            inputs: Vec::new(),
            value_info: BTreeMap::new(),
            initializers: BTreeMap::new(),
            rename: HashMap::new(),
            transposed: HashMap::new(),
            pool_values: HashMap::new(),
            fresh: 0,
        }
    }

    /// Graph inputs: parameters, buffers and constants become initializers named by their
    /// module path; user inputs become graph inputs with the program's shapes.
    fn signature(&mut self, p: &Program) -> Result<(), ModelError> {
        for spec in &p.graph_module.signature.input_specs {
            let Some((kind, body)) = spec.as_object().and_then(|o| o.iter().next()) else {
                continue;
            };
            let name = body.get("arg").and_then(|a| {
                a.get("name")
                    .or_else(|| a.get("as_tensor").and_then(|t| t.get("name")))
                    .and_then(|n| n.as_str())
            });
            let Some(name) = name else { continue };
            let Some(meta) = self.meta.get(name) else {
                return Err(program::malformed(
                    self.source,
                    format!("graph input {name:?} has no tensor_values entry: expected every tensor's dtype and sizes"),
                ));
            };
            let dims = meta.dims();
            let path = ["parameter_name", "buffer_name", "tensor_constant_name"]
                .iter()
                .find_map(|k| body.get(*k).and_then(|v| v.as_str()));
            match kind.as_str() {
                "user_input" => self.inputs.push(ValueDecl {
                    name: name.to_string(),
                    elem_type: elem_type(meta.dtype),
                    dim_params: meta
                        .sizes
                        .iter()
                        .map(|s| {
                            s.get("as_expr")
                                .and_then(|e| e.get("expr_str"))
                                .and_then(|e| e.as_str())
                                .map(str::to_string)
                        })
                        .collect(),
                    shape: Some(dims),
                }),
                _ => {
                    if dims.iter().any(|&d| d < 0) {
                        return Err(program::malformed(
                            self.source,
                            format!("{kind} {name:?} has symbolic sizes: expected parameters and buffers of fixed sizes"),
                        ));
                    }
                    let ir = path.unwrap_or(name).to_string();
                    self.initializers.insert(
                        ir.clone(),
                        ConstTensor {
                            elem_type: elem_type(meta.dtype),
                            dims,
                            ints: None,
                            external: false,
                        },
                    );
                    self.rename.insert(name.to_string(), ir);
                }
            }
        }
        for (name, meta) in self.meta {
            if self.rename.contains_key(name) || self.inputs.iter().any(|i| &i.name == name) {
                continue;
            }
            self.value_info.insert(
                name.clone(),
                ValueDecl {
                    name: name.clone(),
                    elem_type: elem_type(meta.dtype),
                    shape: Some(meta.dims()),
                    dim_params: vec![],
                },
            );
        }
        Ok(())
    }

    fn node(&mut self, i: usize, n: &TorchNode) -> Result<(), ModelError> {
        let outs: Vec<Option<String>> = n.outputs.iter().flat_map(Arg::output_names).collect();
        let name = outs
            .iter()
            .flatten()
            .next()
            .cloned()
            .unwrap_or_else(|| format!("node_{i}"));
        let op = aten_op(&n.target);
        let call = Call {
            name,
            op: op.unwrap_or(&n.target).to_string(),
            args: n
                .inputs
                .iter()
                .map(|a| (a.name.clone(), Arg::parse(&a.arg)))
                .collect(),
            outs,
        };
        if op.is_none() || !self.aten(&call)? {
            self.unmapped(&call);
        }
        Ok(())
    }

    /// An op the importer does not map: an `aten`-domain node of its name over its tensor
    /// arguments, which inference reports by name; its outputs' shapes are declared.
    pub(crate) fn unmapped(&mut self, c: &Call) {
        let mut ins = Vec::new();
        for (_, a) in &c.args {
            match a {
                Arg::Tensor(t) => ins.push(self.t(t)),
                Arg::Tensors(ts) => {
                    for t in ts.iter().flatten() {
                        ins.push(self.t(t));
                    }
                }
                _ => {}
            }
        }
        let outs = c
            .outs
            .iter()
            .map(|o| o.clone().unwrap_or_default())
            .collect();
        match grad::ASCEND_NAMES.iter().find(|(aten, _)| *aten == c.op) {
            Some((_, ascend)) => {
                // The scalar arguments as attributes (`reduction`, `dim` …).
                let a = c
                    .args
                    .iter()
                    .filter_map(|(n, a)| match a {
                        Arg::Int(v) => Some((n.clone(), Attr::Int(*v))),
                        Arg::Float(v) => Some((n.clone(), Attr::Float(*v as f32))),
                        Arg::Ints(v) => Some((n.clone(), Attr::Ints(v.clone()))),
                        _ => None,
                    })
                    .collect();
                self.push(&c.name, ascend, "", ins, outs, a)
            }
            None => self.push(&c.name, &c.op, "aten", ins, outs, BTreeMap::new()),
        }
    }

    /// The IR tensor of torch tensor `t`; a pending transpose is made here.
    pub(crate) fn t(&mut self, t: &str) -> String {
        if let Some(src) = self.transposed.remove(t) {
            let x = self.t(&src);
            let perm = BTreeMap::from([("perm".to_string(), Attr::Ints(vec![1, 0]))]);
            self.push(t, "Transpose", "", vec![x], vec![t.to_string()], perm);
        }
        self.rename.get(t).cloned().unwrap_or_else(|| t.to_string())
    }

    /// Relabels torch tensor `out` as IR tensor `ir` (an in-place op's result, an identity).
    pub(crate) fn alias(&mut self, out: &str, ir: String) {
        if !out.is_empty() {
            self.rename.insert(out.to_string(), ir);
        }
    }

    /// The program's dims of torch tensor `t`.
    pub(crate) fn dims(&self, t: &str) -> Option<Vec<i64>> {
        self.meta.get(t).map(TensorMeta::dims)
    }

    /// Whether torch tensor `t` is a parameter, buffer or constant (a variable a write
    /// updates).
    pub(crate) fn is_variable(&self, t: &str) -> bool {
        self.rename
            .get(t)
            .is_some_and(|ir| self.initializers.contains_key(ir))
    }

    /// A fresh IR tensor name derived from `base`.
    pub(crate) fn fresh(&mut self, base: &str) -> String {
        self.fresh += 1;
        format!("{base}/{}", self.fresh)
    }

    /// Adds an IR node.
    pub(crate) fn push(
        &mut self,
        name: &str,
        op: &str,
        domain: &str,
        inputs: Vec<String>,
        outputs: Vec<String>,
        attrs: BTreeMap<String, Attr>,
    ) {
        self.nodes.push(Node {
            name: name.to_string(),
            op_type: op.to_string(),
            domain: domain.to_string(),
            inputs,
            outputs,
            attrs,
        });
    }

    /// A constant of `dims`: float (values not carried) or int64 with its values.
    pub(crate) fn constant(
        &mut self,
        base: &str,
        dims: Vec<i64>,
        ints: Option<Vec<i64>>,
    ) -> String {
        let name = self.fresh(base);
        let elem_type = if ints.is_some() {
            ElemType::INT64
        } else {
            ElemType::FLOAT
        };
        self.initializers.insert(
            name.clone(),
            ConstTensor {
                elem_type,
                dims,
                ints,
                external: false,
            },
        );
        name
    }

    /// An int64 vector constant.
    pub(crate) fn ints_const(&mut self, base: &str, values: Vec<i64>) -> String {
        let n = values.len() as i64;
        self.constant(base, vec![n], Some(values))
    }

    /// Folds each inference `BatchNormalization` into the `Conv` before it when it is the
    /// convolution's only reader: torch.onnx.export writes the network so (its optimizer
    /// folds the statistics into the weights), as GE's conv–batch-norm fusion compiles it; the
    /// convolution gains a bias when it had none.
    fn fold_batch_norm(&mut self) {
        let mut readers: HashMap<&str, usize> = HashMap::new();
        for n in &self.nodes {
            for i in &n.inputs {
                *readers.entry(i.as_str()).or_default() += 1;
            }
        }
        let mut folds = Vec::new();
        for (k, bn) in self.nodes.iter().enumerate() {
            let Some(x) = bn
                .inputs
                .first()
                .filter(|_| bn.op_type == "BatchNormalization")
            else {
                continue;
            };
            let conv = self.nodes[..k]
                .iter()
                .rposition(|n| n.op_type == "Conv" && n.outputs.first() == Some(x));
            if let Some(j) = conv.filter(|_| readers.get(x.as_str()) == Some(&1)) {
                folds.push((j, k));
            }
        }
        for &(j, k) in &folds {
            let out = self.nodes[k].outputs[0].clone();
            let channels = self.nodes[j]
                .inputs
                .get(1)
                .and_then(|w| self.initializers.get(w))
                .and_then(|w| w.dims.first().copied());
            if self.nodes[j].inputs.len() < 3 {
                if let Some(c) = channels {
                    let name = format!("{}/bias", self.nodes[j].name);
                    let bias = self.constant(&name, vec![c], None);
                    self.nodes[j].inputs.push(bias);
                }
            }
            self.nodes[j].outputs[0] = out;
        }
        let gone: std::collections::HashSet<usize> = folds.iter().map(|f| f.1).collect();
        let mut k = 0;
        self.nodes.retain(|_| {
            k += 1;
            !gone.contains(&(k - 1))
        });
    }

    fn out_decl(&mut self, t: &str) -> ValueDecl {
        let name = self.t(t);
        let meta = self.meta.get(t);
        ValueDecl {
            name,
            elem_type: meta.map_or(ElemType(0), |m| elem_type(m.dtype)),
            shape: meta.map(TensorMeta::dims),
            dim_params: vec![],
        }
    }
}

/// The aten op of a node's target: `torch.ops.aten.convolution.default` → `convolution`
/// (the overload dropped); `None` for other targets (higher-order ops, Python operators).
fn aten_op(target: &str) -> Option<&str> {
    let rest = target
        .strip_prefix("torch.ops.aten.")
        .or_else(|| target.strip_prefix("aten."))?;
    Some(rest.split_once('.').map_or(rest, |(op, _)| op))
}

#[cfg(test)]
mod tests;
