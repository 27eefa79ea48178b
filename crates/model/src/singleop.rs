//! ATC's single-operator description (`--singleop=FILE.json`, CANN's "single-operator
//! description file", which AOE takes too): a JSON array of op descriptions, each
//! `{"op", "name"?, "input_desc": [TensorDesc…], "output_desc": [TensorDesc…],
//! "attr"?: [{"name", "type", "value"}…], "compile_flag"?}`, a TensorDesc `{"format",
//! "shape", "type", "origin_format"?, "origin_shape"?, "name"?, "is_const"?, "const_value"?,
//! "shape_range"?, "dynamic_input"?}`. Attribute types are CANN's: `bool`, `int`, `float`,
//! `string`, `list_bool`, `list_int`, `list_float`, `list_string`, `list_list_int`,
//! `data_type`.
//!
//! Each op becomes one node of a graph IR model, over graph inputs of its own (a constant
//! input, `is_const` with its `const_value`, an initializer), so every op is one tuning unit
//! and keys as the same op of a model does: Ascend IR ops whose model form is another op are
//! written in that form — `Conv2D` as ONNX `Conv` (the window from the filter's dims, strides
//! and dilations from the data format's H and W, `pads` top, bottom, left, right),
//! `MatMul`/`MatMulV2` as `MatMul` or `Gemm` (transposes; a bias input as its `C`),
//! `BatchMatMul`/`BatchMatMulV2` as `MatMul` with the adjoints — and any other op keeps its
//! name and attributes (the names shared by ONNX and Ascend IR, `Relu`, `Add`, `Sigmoid` …,
//! infer as usual; an op inference has no rule for is reported as skipped, named). Tensors
//! are read in their `origin_format`/`origin_shape` when given (the framework's view ATC
//! converts from), else in `format`/`shape`; a 4-D feature map must be NCHW (or ND), as the
//! keys are NCHW. Shape ranges (dynamic single ops) are refused: keys are static shapes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use crate::graph::{read_model_file, ConstTensor, ElemType, Graph, Model, Node, ValueDecl};
use crate::{Attr, ModelError};

/// The ONNX opset whose op semantics the imported graph uses.
const OPSET: i64 = 17;

/// Ops in one file at most.
const MAX_OPS: usize = 1 << 16;

const EXPECTED: &str = "an ATC single-operator description (a JSON array of op descriptions)";

#[derive(Deserialize)]
struct OpDesc {
    op: String,
    #[serde(default)]
    name: Option<String>,
    input_desc: Vec<TensorDesc>,
    output_desc: Vec<TensorDesc>,
    #[serde(default)]
    attr: Vec<AttrDesc>,
}

#[derive(Deserialize)]
struct TensorDesc {
    format: String,
    shape: Vec<i64>,
    #[serde(rename = "type")]
    dtype: String,
    #[serde(default)]
    origin_format: Option<String>,
    #[serde(default)]
    origin_shape: Option<Vec<i64>>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    is_const: bool,
    #[serde(default)]
    const_value: Option<serde_json::Value>,
    #[serde(default)]
    shape_range: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct AttrDesc {
    name: String,
    #[serde(rename = "type")]
    ty: String,
    value: serde_json::Value,
}

/// Reads a single-operator description file. Errors name the file and, for a bad op, its
/// index, type and the field at fault: [`ModelError::Read`], [`ModelError::Malformed`] (not
/// JSON of that shape, with line and column) and [`ModelError::Invalid`].
pub(crate) fn load_singleop(path: &Path) -> Result<Model, ModelError> {
    let source = path.display().to_string();
    let bytes = read_model_file(path)?;
    let malformed = |reason: String| ModelError::Malformed {
        path: source.clone(),
        expected: EXPECTED,
        reason,
    };
    let ops: Vec<OpDesc> = serde_json::from_slice(&bytes).map_err(|e| malformed(e.to_string()))?;
    if ops.is_empty() {
        return Err(malformed("the array holds no op".into()));
    }
    if ops.len() > MAX_OPS {
        return Err(malformed(format!(
            "{} ops: expected at most {MAX_OPS}",
            ops.len()
        )));
    }
    let mut b = Builder {
        source: &source,
        graph: Graph {
            name: "singleop".into(),
            inputs: vec![],
            outputs: vec![],
            value_info: BTreeMap::new(),
            initializers: BTreeMap::new(),
            nodes: vec![],
        },
        names: BTreeSet::new(),
    };
    for (i, op) in ops.iter().enumerate() {
        b.op(i, op)?;
    }
    let graph = b.graph;
    Ok(Model {
        source,
        ir_version: 8,
        opset: OPSET,
        producer: "ATC single-operator description".into(),
        graph,
        ir_format: None,
    })
}

struct Builder<'a> {
    source: &'a str,
    graph: Graph,
    names: BTreeSet<String>,
}

impl Builder<'_> {
    fn invalid(&self, i: usize, op: &OpDesc, reason: impl std::fmt::Display) -> ModelError {
        ModelError::Invalid {
            path: self.source.into(),
            reason: format!("op {i} ({}): {reason}", op.op),
        }
    }

    fn op(&mut self, i: usize, op: &OpDesc) -> Result<(), ModelError> {
        if op.op.trim().is_empty() {
            return Err(self.invalid(i, op, "\"op\" is empty: expected an Ascend IR op type"));
        }
        if op.output_desc.is_empty() {
            return Err(self.invalid(i, op, "no output_desc: expected one per output"));
        }
        // ATC's model-file name for an op without a name: SN_<op type>.
        let base = op.name.clone().unwrap_or_else(|| format!("{i}_{}", op.op));
        let node = if self.names.insert(base.clone()) {
            base
        } else {
            let n = format!("{i}_{base}");
            self.names.insert(n.clone());
            n
        };
        let mut inputs = Vec::new();
        for (k, t) in op.input_desc.iter().enumerate() {
            inputs.push(self.tensor(i, op, &node, k, t)?);
        }
        for (k, t) in op.output_desc.iter().enumerate() {
            let what = format!("output_desc[{k}]");
            self.check(i, op, &what, t)?;
            elem_type(&t.dtype).ok_or_else(|| self.bad_type(i, op, &what, &t.dtype))?;
        }
        let mut attrs = BTreeMap::new();
        for a in &op.attr {
            let v = attr(&a.ty, &a.value).ok_or_else(|| {
                self.invalid(
                    i,
                    op,
                    format!(
                        "attr {:?} of type {:?} has value {}: expected a {} (types: bool, int, float, string, list_bool, list_int, list_float, list_string, list_list_int, data_type)",
                        a.name, a.ty, a.value, a.ty
                    ),
                )
            })?;
            attrs.insert(a.name.clone(), v);
        }
        let outputs: Vec<String> = (0..op.output_desc.len())
            .map(|k| {
                if k == 0 {
                    node.clone()
                } else {
                    format!("{node}:{k}")
                }
            })
            .collect();
        let (op_type, attrs) = match op.op.as_str() {
            "Conv2D" => self.conv(i, op, &inputs, attrs)?,
            "MatMul" | "MatMulV2" => matmul(&inputs, attrs, false),
            "BatchMatMul" | "BatchMatMulV2" => matmul(&inputs, attrs, true),
            other => (other.to_string(), attrs),
        };
        for o in &outputs {
            self.graph.outputs.push(ValueDecl {
                name: o.clone(),
                elem_type: ElemType(0),
                shape: None,
                dim_params: vec![],
            });
        }
        self.graph.nodes.push(Node {
            name: node,
            op_type,
            domain: String::new(),
            inputs,
            outputs,
            attrs,
        });
        Ok(())
    }

    fn bad_type(&self, i: usize, op: &OpDesc, what: &str, t: &str) -> ModelError {
        self.invalid(
            i,
            op,
            format!("{what} type {t:?}: expected float16, float (float32), bfloat16, double, int8, int16, int32, int64, uint8, uint16, uint32, uint64 or bool"),
        )
    }

    /// The shape a tensor is read in (its format checked with it).
    fn check(
        &self,
        i: usize,
        op: &OpDesc,
        what: &str,
        t: &TensorDesc,
    ) -> Result<Vec<i64>, ModelError> {
        if t.shape_range.is_some() {
            return Err(self.invalid(i, op, format!("{what} has a shape_range: dynamic single ops are not keyed (keys are static shapes); expected static dims")));
        }
        let shape = t.origin_shape.clone().unwrap_or_else(|| t.shape.clone());
        let format = t
            .origin_format
            .clone()
            .unwrap_or_else(|| t.format.clone())
            .to_ascii_uppercase();
        if shape.len() > 8 || shape.iter().any(|d| !(1..=(1 << 31)).contains(d)) {
            return Err(self.invalid(i, op, format!("{what} shape {shape:?}: expected at most 8 static dims, each 1 to 2^31 (-1 and -2 are dynamic: keys are static shapes)")));
        }
        if shape.len() == 4 && !matches!(format.as_str(), "NCHW" | "ND") {
            return Err(self.invalid(i, op, format!("{what} format {format} on {shape:?}: expected NCHW or ND (keys are NCHW; write the framework's NHWC op as NCHW)")));
        }
        Ok(shape)
    }

    /// A graph input of the op, or an initializer for a constant one.
    fn tensor(
        &mut self,
        i: usize,
        op: &OpDesc,
        node: &str,
        k: usize,
        t: &TensorDesc,
    ) -> Result<String, ModelError> {
        let what = format!("input_desc[{k}]");
        let shape = self.check(i, op, &what, t)?;
        let elem = elem_type(&t.dtype).ok_or_else(|| self.bad_type(i, op, &what, &t.dtype))?;
        let name = format!(
            "{node}/{}",
            t.name.clone().unwrap_or_else(|| format!("x{k}"))
        );
        if t.is_const {
            let count: i64 = shape.iter().product();
            let ints = match (&t.const_value, elem.0) {
                (Some(v), 2..=7 | 12 | 13) => {
                    let flat = flatten_ints(v).filter(|f| f.len() as i64 == count);
                    Some(flat.ok_or_else(|| {
                        self.invalid(
                            i,
                            op,
                            format!("{what} const_value {v}: expected {count} integers"),
                        )
                    })?)
                }
                _ => None,
            };
            self.graph.initializers.insert(
                name.clone(),
                ConstTensor {
                    elem_type: elem,
                    dims: shape,
                    ints,
                    external: false,
                },
            );
        } else {
            self.graph.inputs.push(ValueDecl {
                name: name.clone(),
                elem_type: elem,
                dim_params: vec![None; shape.len()],
                shape: Some(shape),
            });
        }
        Ok(name)
    }

    /// Conv2D (x NCHW, filter OIHW, bias?): ONNX `Conv` with the window from the filter.
    fn conv(
        &self,
        i: usize,
        op: &OpDesc,
        inputs: &[String],
        mut attrs: BTreeMap<String, Attr>,
    ) -> Result<(String, BTreeMap<String, Attr>), ModelError> {
        let filter = op
            .input_desc
            .get(1)
            .map(|t| t.origin_shape.clone().unwrap_or_else(|| t.shape.clone()));
        let Some([_, _, kh, kw]) = filter.as_deref().and_then(|f| <[i64; 4]>::try_from(f).ok())
        else {
            return Err(self.invalid(i, op, format!("{} input(s), filter {filter:?}: expected x and a 4-D OIHW filter (then an optional bias)", inputs.len())));
        };
        let four = |attrs: &BTreeMap<String, Attr>,
                    name: &str,
                    default: i64|
         -> Result<Vec<i64>, ModelError> {
            match attrs.get(name) {
                None => Ok(vec![default; 2]),
                Some(Attr::Ints(v)) if v.len() == 4 => Ok(v[2..].to_vec()),
                Some(v) => Err(self.invalid(
                    i,
                    op,
                    format!("attr {name:?} {v:?}: expected 4 values in NCHW order"),
                )),
            }
        };
        let strides = four(&attrs, "strides", 1)?;
        let dilations = four(&attrs, "dilations", 1)?;
        let pads = match attrs.get("pads") {
            None => vec![0; 4],
            Some(Attr::Ints(p)) if p.len() == 4 => vec![p[0], p[2], p[1], p[3]],
            Some(v) => {
                return Err(self.invalid(
                    i,
                    op,
                    format!("attr \"pads\" {v:?}: expected top, bottom, left, right"),
                ))
            }
        };
        let group = match attrs.get("groups") {
            Some(Attr::Int(g)) => *g,
            _ => 1,
        };
        for n in [
            "strides",
            "dilations",
            "pads",
            "groups",
            "data_format",
            "offset_x",
        ] {
            attrs.remove(n);
        }
        attrs.insert("kernel_shape".into(), Attr::Ints(vec![kh, kw]));
        attrs.insert("strides".into(), Attr::Ints(strides));
        attrs.insert("dilations".into(), Attr::Ints(dilations));
        attrs.insert("pads".into(), Attr::Ints(pads));
        attrs.insert("group".into(), Attr::Int(group));
        Ok(("Conv".into(), attrs))
    }
}

/// MatMul/MatMulV2 → `MatMul`, or `Gemm` when transposed or biased; the batch forms →
/// `MatMul` with the adjoints as attributes.
fn matmul(
    inputs: &[String],
    mut attrs: BTreeMap<String, Attr>,
    batch: bool,
) -> (String, BTreeMap<String, Attr>) {
    let flag = |attrs: &BTreeMap<String, Attr>, names: &[&str]| {
        names
            .iter()
            .any(|n| matches!(attrs.get(*n), Some(Attr::Int(1))))
    };
    let a = flag(&attrs, &["transpose_x1", "transpose_a", "adj_x1"]);
    let b = flag(&attrs, &["transpose_x2", "transpose_b", "adj_x2"]);
    for n in [
        "transpose_x1",
        "transpose_x2",
        "transpose_a",
        "transpose_b",
        "adj_x1",
        "adj_x2",
        "offset_x",
    ] {
        attrs.remove(n);
    }
    if batch {
        if a || b {
            attrs.insert("adj_x1".into(), Attr::Int(i64::from(a)));
            attrs.insert("adj_x2".into(), Attr::Int(i64::from(b)));
        }
        return ("MatMul".into(), attrs);
    }
    if a || b || inputs.len() > 2 {
        attrs.insert("transA".into(), Attr::Int(i64::from(a)));
        attrs.insert("transB".into(), Attr::Int(i64::from(b)));
        return ("Gemm".into(), attrs);
    }
    ("MatMul".into(), attrs)
}

/// The element type of a CANN dtype name.
fn elem_type(t: &str) -> Option<ElemType> {
    Some(ElemType(match t.to_ascii_lowercase().as_str() {
        "float" | "float32" => 1,
        "uint8" => 2,
        "int8" => 3,
        "uint16" => 4,
        "int16" => 5,
        "int32" => 6,
        "int64" => 7,
        "bool" => 9,
        "float16" => 10,
        "double" | "float64" => 11,
        "uint32" => 12,
        "uint64" => 13,
        "bfloat16" => 16,
        _ => return None,
    }))
}

/// An attribute value of CANN type `ty`; `None` when the value does not fit the type.
fn attr(ty: &str, v: &serde_json::Value) -> Option<Attr> {
    use serde_json::Value as J;
    let int = |v: &J| v.as_i64().or_else(|| v.as_bool().map(i64::from));
    Some(match ty {
        "bool" => Attr::Int(i64::from(v.as_bool()?)),
        "int" => Attr::Int(v.as_i64()?),
        "float" => Attr::Float(v.as_f64()? as f32),
        "string" => Attr::Str(v.as_str()?.into()),
        "data_type" => Attr::Int(i64::from(elem_type(v.as_str()?)?.0)),
        "list_bool" | "list_int" => {
            Attr::Ints(v.as_array()?.iter().map(int).collect::<Option<_>>()?)
        }
        "list_float" => Attr::Floats(
            v.as_array()?
                .iter()
                .map(|x| x.as_f64().map(|f| f as f32))
                .collect::<Option<_>>()?,
        ),
        "list_string" => Attr::Strs(
            v.as_array()?
                .iter()
                .map(|x| x.as_str().map(str::to_owned))
                .collect::<Option<_>>()?,
        ),
        "list_list_int" => Attr::Ints(flatten_ints(v)?),
        _ => return None,
    })
}

/// The integers of a (nested) JSON array, flattened; a number alone is one.
fn flatten_ints(v: &serde_json::Value) -> Option<Vec<i64>> {
    let mut out = Vec::new();
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::Array(items) => stack.extend(items.iter().rev()),
            n => out.push(n.as_i64()?),
        }
        if out.len() > 1 << 20 {
            return None;
        }
    }
    Some(out)
}
