//! Resolution: an op as a model has it ([`OpTemplate`]) plus resolved options and a SoC give one
//! static [`OpDescriptor`] per dynamic profile, with its key.
//!
//! Semantics (documented in ARCHITECTURE.md, "Resolution"): `input_shape` replaces the shapes of
//! tensors fed by named graph inputs; the dynamic option fills -1 dims per profile; the
//! precision options pick each float tensor's dtype; `op_select_implmode`,
//! `optypelist_for_implmode` and `op_precision_mode` pick the impl mode; `input_format` and the
//! template's formats pick formats.
//!
//! [`resolve_op`] runs the steps in order; the precision and impl-mode ones live in `modes`,
//! input preparation, dim filling and layouts here.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ir;
use crate::options::{Dynamic, OptionError};
use crate::precision::is_cube;
use crate::soc::SocFacts;
use crate::{
    AttrValue, BankKey, CubeMath, DType, Format, KeyError, OpDescriptor, ResolvedOptions, SocSpec,
    TensorDesc,
};

mod modes;

use modes::{choose, impl_mode, is_float, precision, Want};
use tunebank_failure::FailureKind;

/// A tensor of an op as the model has it: shape possibly with -1, the model's dtype.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TemplateTensor {
    /// Shape in the original format; -1 marks a dynamic dim.
    pub shape: Vec<i64>,
    /// The model's dtype (before precision resolution).
    pub dtype: DType,
    /// Original format. For a graph-fed tensor `input_format` decides (when the rank matches
    /// it, else ND) and this is ignored; otherwise `None` defaults the same way.
    #[serde(default)]
    pub ori_format: Option<Format>,
    /// Runtime format the converter chose; `None`: the original format.
    #[serde(default)]
    pub format: Option<Format>,
    /// Name of the graph input this tensor is fed from, if any (inputs only).
    #[serde(default)]
    pub graph_input: Option<String>,
    /// Effective dtype of the producer's output (inputs only), when the converter resolves ops
    /// in topological order; gray-list ops follow it under mixed precision.
    #[serde(default)]
    pub producer_dtype: Option<DType>,
}

/// An op (possibly fused) as a model has it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpTemplate {
    /// Node name (matched by `keep_dtype` and `op_precision_mode`; never part of a key).
    pub node_name: String,
    /// Op type (of the anchor op for a fused op).
    pub op_type: String,
    /// Types of the fused ops in topological order; empty for a single op.
    #[serde(default)]
    pub fused_ops: Vec<String>,
    /// Inputs.
    pub inputs: Vec<TemplateTensor>,
    /// Outputs.
    pub outputs: Vec<TemplateTensor>,
    /// Attributes.
    #[serde(default)]
    pub attrs: BTreeMap<String, AttrValue>,
}

/// One dynamic profile (one gear of the dynamic option in force).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// No dynamic option: the one static shape.
    Static,
    /// A `dynamic_batch_size` value.
    Batch(i64),
    /// A `dynamic_image_size` pair.
    ImageSize {
        /// Height.
        height: i64,
        /// Width.
        width: i64,
    },
    /// A `dynamic_dims` profile.
    Dims(Vec<i64>),
}

/// One resolved profile of an op: what a converter looks up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResolvedOp {
    /// The profile.
    pub profile: Profile,
    /// The static descriptor (the key's preimage).
    pub descriptor: OpDescriptor,
    /// Its key.
    pub key: BankKey,
}

/// Why an op template could not be resolved. Every variant names the node.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The options are unusable.
    #[error(transparent)]
    Options(#[from] OptionError),
    /// The resolved descriptor has no key.
    #[error("node {node:?}: {source}")]
    Key {
        /// Node name.
        node: String,
        /// Cause.
        source: KeyError,
    },
    /// A -1 dim that neither `input_shape` nor the dynamic option fills.
    #[error("node {node:?} {tensor} dim {dim} is -1: expected {expected}")]
    UnresolvedDim {
        /// Node name.
        node: String,
        /// `input 0`, `output 1` ….
        tensor: String,
        /// Dim index.
        dim: usize,
        /// What would have filled it.
        expected: String,
    },
    /// `input_shape` gives a different rank than the model.
    #[error(
        "node {node:?} input {input}: --input_shape gives {given:?} for graph input {graph_input:?}, \
         expected rank {rank} as the model has it ({model:?})"
    )]
    RankMismatch {
        /// Node name.
        node: String,
        /// Input index.
        input: usize,
        /// Graph input name.
        graph_input: String,
        /// Shape from `input_shape`.
        given: Vec<i64>,
        /// The model's rank.
        rank: usize,
        /// The model's shape.
        model: Vec<i64>,
    },
    /// A format conversion the resolver cannot compute the shape of.
    #[error("node {node:?} {tensor}: cannot lay out shape {shape:?} from {from:?} as {to:?}: expected {expected}")]
    Layout {
        /// Node name.
        node: String,
        /// Which tensor.
        tensor: String,
        /// Original shape.
        shape: Vec<i64>,
        /// Original format.
        from: Format,
        /// Runtime format.
        to: Format,
        /// What would work.
        expected: String,
    },
}

/// Resolves one op template for every profile of the dynamic option in force and derives each
/// profile's key. The result has one entry for static options, one per profile otherwise, in
/// profile order.
pub fn derive_op_keys(
    template: &OpTemplate,
    options: &ResolvedOptions,
    soc: &SocSpec,
) -> Result<Vec<ResolvedOp>, ResolveError> {
    let profiles: Vec<Profile> = match options.dynamic() {
        Dynamic::None => vec![Profile::Static],
        Dynamic::Batch(b) => b.iter().map(|&b| Profile::Batch(b)).collect(),
        Dynamic::ImageSize(p) => p
            .iter()
            .map(|&(height, width)| Profile::ImageSize { height, width })
            .collect(),
        Dynamic::Dims(p) => p.iter().cloned().map(Profile::Dims).collect(),
    };
    profiles
        .into_iter()
        .map(|profile| {
            let descriptor = resolve_op(template, options, soc, &profile)?;
            let key = descriptor.key().map_err(|source| ResolveError::Key {
                node: template.node_name.clone(),
                source,
            })?;
            Ok(ResolvedOp {
                profile,
                descriptor,
                key,
            })
        })
        .collect()
}

fn rank_format(rank: usize, input_format: Format) -> Format {
    match (input_format, rank) {
        (Format::NCHW | Format::NHWC, 4) | (Format::NCDHW | Format::NDHWC, 5) => input_format,
        _ => Format::ND,
    }
}

/// Resolves one profile of an op template into a static descriptor (without deriving its key).
///
/// Steps: the precision options give what each float tensor asks for and the cube math mode
/// (`precision`); the impl-mode options give the impl mode (`impl_mode`); graph-fed inputs
/// take their shapes from `input_shape` (`prepare_inputs`), which under a static profile also
/// implies the values of the op's other -1 dims (`implied_profile`); then every input and
/// output gets its dtype, filled dims and layout (`tensor`); last, the descriptor takes its
/// Ascend IR form (`crate::ir::to_ir`: IR op type, attributes, device formats), the
/// framework names kept in `origin`.
pub fn resolve_op(
    template: &OpTemplate,
    options: &ResolvedOptions,
    soc: &SocSpec,
    profile: &Profile,
) -> Result<OpDescriptor, ResolveError> {
    let node = template.node_name.as_str();
    let t = template.op_type.to_lowercase();
    let cube = is_cube(&t);
    let facts = soc.facts();
    let op_precision = options.op_precision.get(node, &t);
    let precision = precision(template, options, &t, cube, facts, op_precision);
    let impl_mode = impl_mode(options, &t, op_precision);
    let (prepared, replaced) = prepare_inputs(template, options)?;
    let implied = implied_profile(profile, &replaced);

    let mut inputs: Vec<TensorDesc> = Vec::with_capacity(prepared.len());
    for (i, (p, tt)) in prepared.into_iter().zip(&template.inputs).enumerate() {
        let dtype = match facts {
            Some(f) if is_bias(template, &t, i) => {
                bias_dtype(p.dtype, precision.want_in, &inputs, f)
            }
            _ => choose(p.dtype, precision.want_in, &t, cube, facts),
        };
        let fill = if p.fed { profile } else { &implied };
        inputs.push(tensor(
            node,
            &format!("input {i}"),
            &p.shape,
            dtype,
            p.ori_format,
            tt.format,
            options,
            fill,
            p.offset,
        )?);
    }
    let mut outputs = Vec::with_capacity(template.outputs.len());
    for (i, tt) in template.outputs.iter().enumerate() {
        let dtype = choose(tt.dtype, precision.want_out, &t, precision.out_cube, facts);
        outputs.push(tensor(
            node,
            &format!("output {i}"),
            &tt.shape,
            dtype,
            tt.ori_format,
            tt.format,
            options,
            &implied,
            0,
        )?);
    }
    let mut cube_math = precision.cube_math;
    if cube_math == CubeMath::Hf32
        && !inputs
            .iter()
            .any(|i: &TensorDesc| i.dtype == DType::Float32)
    {
        cube_math = CubeMath::Native;
    }

    Ok(ir::to_ir(OpDescriptor {
        op_type: template.op_type.clone(),
        fused_ops: template.fused_ops.clone(),
        inputs,
        outputs,
        attrs: template.attrs.clone(),
        impl_mode,
        cube_math,
        soc: soc.clone(),
        origin: None,
    }))
}

/// Whether input `i` of `template` is a MatMul bias: input 2 of a Gemm, MatMul(V2) or
/// BatchMatMul(V2) (a fused MatMul → Add's addend) holding one value per output column (what
/// `crate::ir::to_ir` folds into MatMulV2's bias input); `t` is the case-folded op type.
fn is_bias(template: &OpTemplate, t: &str, i: usize) -> bool {
    let matmul = matches!(
        t,
        "gemm" | "matmul" | "matmulv2" | "batchmatmul" | "batchmatmulv2"
    );
    let (Some(b), Some(n)) = (
        template.inputs.get(2),
        template.outputs.first().and_then(|o| o.shape.last()),
    ) else {
        return false;
    };
    let elements = b
        .shape
        .iter()
        .try_fold(1i64, |p, &d| if d > 0 { p.checked_mul(d) } else { None });
    i == 2 && matmul && *n > 0 && elements == Some(*n)
}

/// The dtype of a MatMul bias (model dtype `orig`, asking `want`) after operands `resolved`,
/// by CANN's MatMulV2/BatchMatMulV2 format selection (`op_select_format`, CANN 8.1
/// `impl/dynamic/mat_mul.py`, `util/util_gemm.py`): on a SoC with the fixpipe the op offers
/// float16 operands with a float16 and with a float32 bias, so the bias takes what the
/// precision mode asks of it as a vector tensor (float32 is kept where asked, whatever the
/// cube computes); without the fixpipe the bias has the operands' dtype (a float32 bias with
/// float16 operands needs the `keep_bias_fp32` impl mode, which ATC's options do not set).
fn bias_dtype(orig: DType, want: Want, resolved: &[TensorDesc], facts: &SocFacts) -> DType {
    if facts.fixpipe {
        return choose(orig, want, "bias", false, Some(facts));
    }
    match resolved.first().map(|x| x.dtype) {
        Some(d) if is_float(d) && is_float(orig) => d,
        _ => choose(orig, want, "bias", true, Some(facts)),
    }
}

/// An input before its dtype and dims are resolved.
struct Prepared {
    /// Shape: `input_shape`'s for a graph-fed input named there, else the template's.
    shape: Vec<i64>,
    /// The model's dtype, or fp16 under `input_fp16_nodes`.
    dtype: DType,
    /// Original format (decided by `input_format` for a graph-fed input).
    ori_format: Option<Format>,
    /// How many -1 dims of `input_shape` precede this input's (its first `dynamic_dims` value).
    offset: usize,
    /// Whether the input is fed by a graph input.
    fed: bool,
}

/// The (dim, value) pairs where `input_shape` replaced a model -1 dim, in input order.
type Replaced = Vec<(usize, i64)>;

/// The inputs with graph-fed ones set up by `input_shape`, `input_format` and
/// `input_fp16_nodes`, and the (dim, value) pairs where `input_shape` replaced a model -1 dim.
/// Errors: `input_shape` gives a graph-fed input another rank than the model.
fn prepare_inputs(
    template: &OpTemplate,
    options: &ResolvedOptions,
) -> Result<(Vec<Prepared>, Replaced), ResolveError> {
    let mut prepared = Vec::with_capacity(template.inputs.len());
    let mut replaced: Replaced = Vec::new();
    for (i, tt) in template.inputs.iter().enumerate() {
        let mut p = Prepared {
            shape: tt.shape.clone(),
            dtype: tt.dtype,
            ori_format: tt.ori_format,
            offset: 0,
            fed: false,
        };
        if let Some(g) = &tt.graph_input {
            p.fed = true;
            if let Some((pos, (_, dims))) = options
                .input_shape()
                .iter()
                .enumerate()
                .find(|(_, (n, _))| n == g)
            {
                if !tt.shape.is_empty() && tt.shape.len() != dims.len() {
                    return Err(ResolveError::RankMismatch {
                        node: template.node_name.clone(),
                        input: i,
                        graph_input: g.clone(),
                        given: dims.clone(),
                        rank: tt.shape.len(),
                        model: tt.shape.clone(),
                    });
                }
                for (d, (&m, &v)) in tt.shape.iter().zip(dims).enumerate() {
                    if m < 0 && v >= 0 {
                        replaced.push((d, v));
                    }
                }
                p.shape = dims.clone();
                p.offset = options.input_shape()[..pos]
                    .iter()
                    .map(|(_, d)| d.iter().filter(|&&x| x == -1).count())
                    .sum();
            }
            p.ori_format = Some(rank_format(p.shape.len(), options.input_format()));
            if is_float(p.dtype) && options.input_fp16_nodes.contains(g) {
                p.dtype = DType::Float16;
            }
        }
        prepared.push(p);
    }
    Ok((prepared, replaced))
}

/// The profile that fills the -1 dims of tensors not fed by a graph input: under a static
/// profile, the values `input_shape` put in place of the model's -1 dims (a batch when they
/// all sit on dim 0 with one value); otherwise the profile itself.
fn implied_profile(profile: &Profile, replaced: &[(usize, i64)]) -> Profile {
    match profile {
        Profile::Static if !replaced.is_empty() => {
            if replaced.iter().all(|&(d, v)| d == 0 && v == replaced[0].1) {
                Profile::Batch(replaced[0].1)
            } else {
                Profile::Dims(replaced.iter().map(|&(_, v)| v).collect())
            }
        }
        _ => profile.clone(),
    }
}

#[allow(clippy::too_many_arguments)]
fn tensor(
    node: &str,
    what: &str,
    shape: &[i64],
    dtype: DType,
    ori_format: Option<Format>,
    format: Option<Format>,
    options: &ResolvedOptions,
    profile: &Profile,
    offset: usize,
) -> Result<TensorDesc, ResolveError> {
    let ori_format = ori_format.unwrap_or_else(|| rank_format(shape.len(), options.input_format()));
    let ori_shape = fill_dims(node, what, shape, ori_format, profile, offset)?;
    let format = format.unwrap_or(ori_format);
    let shape = layout(node, what, &ori_shape, ori_format, format, dtype)?;
    Ok(TensorDesc {
        shape,
        ori_shape,
        dtype,
        format,
        ori_format,
    })
}

fn fill_dims(
    node: &str,
    what: &str,
    shape: &[i64],
    format: Format,
    profile: &Profile,
    offset: usize,
) -> Result<Vec<i64>, ResolveError> {
    let rank = shape.len();
    let mut out = shape.to_vec();
    let mut nth = 0;
    for (d, x) in out.iter_mut().enumerate() {
        if *x >= 0 {
            continue;
        }
        let unresolved = |expected: &str| ResolveError::UnresolvedDim {
            node: node.to_string(),
            tensor: what.to_string(),
            dim: d,
            expected: expected.to_string(),
        };
        *x = match profile {
            Profile::Static => {
                return Err(unresolved(
                    "a static dim: set --input_shape, or a dynamic option \
                     (dynamic_batch_size, dynamic_image_size, dynamic_dims)",
                ))
            }
            Profile::Batch(b) if d == 0 => *b,
            Profile::Batch(_) => {
                return Err(unresolved(
                    "-1 only on the batch dim (0) with --dynamic_batch_size",
                ))
            }
            Profile::ImageSize { height, width } => {
                let (h, w) = match format {
                    Format::NHWC => (1, 2),
                    Format::NCHW | Format::NC1HWC0 => (2, 3),
                    _ if rank >= 2 => (rank - 2, rank - 1),
                    _ => (usize::MAX, usize::MAX),
                };
                if d == h {
                    *height
                } else if d == w {
                    *width
                } else {
                    return Err(unresolved(
                        "-1 only on the H and W dims with --dynamic_image_size",
                    ));
                }
            }
            Profile::Dims(values) => {
                let v = values.get(offset + nth).copied();
                nth += 1;
                match v {
                    Some(v) => v,
                    None => {
                        return Err(unresolved(
                            "no more -1 dims than --dynamic_dims gives values for",
                        ))
                    }
                }
            }
        };
    }
    Ok(out)
}

/// The runtime shape of a tensor laid out in `to`, from its shape in `from` (`ir::layout`); a
/// conversion that does not fit the tensor is a [`ResolveError::Layout`] naming it.
fn layout(
    node: &str,
    what: &str,
    ori: &[i64],
    from: Format,
    to: Format,
    dtype: DType,
) -> Result<Vec<i64>, ResolveError> {
    ir::layout(ori, from, to, dtype).map_err(|expected| ResolveError::Layout {
        node: node.to_string(),
        tensor: what.to_string(),
        shape: ori.to_vec(),
        from,
        to,
        expected: expected.to_string(),
    })
}

impl ResolveError {
    /// An op that cannot be resolved into a key is the request's (its model or options).
    pub fn kind(&self) -> FailureKind {
        match self {
            ResolveError::Options(e) => e.kind(),
            ResolveError::Key { source, .. } => source.kind(),
            ResolveError::UnresolvedDim { .. }
            | ResolveError::RankMismatch { .. }
            | ResolveError::Layout { .. } => FailureKind::Input,
        }
    }
}
