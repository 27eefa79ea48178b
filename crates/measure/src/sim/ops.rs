//! From an op descriptor to the simulator's problem: which unit runs it and with what shape.

use super::conv::ConvGemm;
use super::cube::{ASource, GemmProblem};
use super::soc::SocModel;
use super::vector::{ElemProblem, RowProblem};
use super::{bounded, bounded_align};
use crate::{MeasureError, TuningTask};
use tunebank_key::{DType, Format, TensorDesc};

/// What the simulator runs for a task.
#[derive(Clone, Debug, PartialEq)]
pub enum OpModel {
    /// A cube op; `trans` are the TransData passes it needs on a SoC without on-the-fly ND↔NZ.
    Cube {
        /// The GEMM (or implicit GEMM).
        problem: GemmProblem,
        /// Explicit layout conversions around it (310P with ND tensors).
        trans: Vec<ElemProblem>,
        /// FLOPs of the op before padding (for the roofline).
        useful_flops: f64,
    },
    /// An element stream.
    Elem(ElemProblem),
    /// A row stream.
    Row(RowProblem),
}

/// A convolution's GEMM as the op model: a cube op with no TransData around it.
fn conv_gemm(c: ConvGemm) -> OpModel {
    OpModel::Cube {
        problem: c.problem,
        trans: Vec::new(),
        useful_flops: c.useful_flops,
    }
}

/// Bytes of an element of `d`, if the simulated SoC computes in it.
fn elem_bytes(d: DType, soc: &SocModel, cube: bool) -> Option<u64> {
    match d {
        DType::Float16 => Some(2),
        DType::Bfloat16 if soc.bf16 => Some(2),
        DType::Float32 if !cube || soc.cube_fp32 => Some(4),
        DType::Int8 | DType::Uint8 if cube => Some(1),
        DType::Int8 | DType::Uint8 | DType::Bool => Some(1),
        DType::Int32 if !cube => Some(4),
        DType::Int16 if !cube => Some(2),
        _ => None,
    }
}

/// The logical shape: the original shape when given, else the runtime shape.
fn logical(t: &TensorDesc) -> &[i64] {
    if t.ori_shape.is_empty() {
        &t.shape
    } else {
        &t.ori_shape
    }
}

/// An op family's model builder.
type FamilyModel = fn(&Ctx<'_>) -> Result<OpModel, MeasureError>;

/// The op families the simulator models: the (lower-case) op types of each and its builder.
const FAMILIES: [(&[&str], FamilyModel); 9] = [
    (
        &[
            "matmul",
            "matmulv2",
            "gemm",
            "batchmatmul",
            "batchmatmulv2",
            "batchmatmulv3",
        ],
        matmul,
    ),
    (&["conv2d", "conv"], conv),
    (
        &[
            "conv2dbackpropinput",
            "depthwiseconv2dbackpropinput",
            "conv2dtranspose",
            "convtranspose",
        ],
        backprop_input,
    ),
    (
        &["conv2dbackpropfilter", "depthwiseconv2dbackpropfilter"],
        backprop_filter,
    ),
    (
        &[
            "add",
            "sub",
            "mul",
            "div",
            "realdiv",
            "maximum",
            "minimum",
            "addn",
            "biasadd",
            "relu",
            "relu6",
            "leakyrelu",
            "abs",
            "neg",
            "cast",
            "sqrt",
            "rsqrt",
            "exp",
            "log",
            "sigmoid",
            "tanh",
            "gelu",
            "fastgelu",
            "swish",
            "silu",
            "erf",
            "muls",
            "adds",
            "transdata",
            "transpose",
            "relugrad",
            "relu6grad",
            "leakyrelugrad",
            "sigmoidgrad",
            "tanhgrad",
            "elugrad",
            "selugrad",
            "softplusgrad",
            "softsigngrad",
            "rsqrtgrad",
            "sqrtgrad",
            "reciprocalgrad",
            "assign",
            "assignadd",
            "assignsub",
            "zeroslike",
            "oneslike",
            "tile",
            "fill",
            "max",
            "min",
            "floordiv",
            "floormod",
            "where",
            "select",
            "greater",
            "greaterorequal",
            "less",
            "lessorequal",
            "equal",
            "statelessrandomuniformv2",
            "statelessrandomnormalv2",
            "square",
            "squareddifference",
            "divnonan",
            "pow",
            "bntrainingupdate",
            "bntrainingreducegrad",
        ],
        elementwise,
    ),
    (&["maxpool", "maxpoolv3", "avgpool", "avgpoolv2"], pool),
    (&["maxpoolgrad", "avgpoolgrad"], pool_grad),
    (
        &[
            "applyadam",
            "applymomentum",
            "applykerasmomentum",
            "applygradientdescent",
            "applyrmsprop",
            "applyadagrad",
        ],
        optimizer,
    ),
    (
        &[
            "softmax",
            "softmaxv2",
            "layernorm",
            "rmsnorm",
            "reducesum",
            "reducemean",
            "reducemax",
            "reducesumd",
            "reducemeand",
            "globalaveragepool",
            "logsoftmax",
            "biasaddgrad",
            "bntrainingreduce",
            "bntrainingupdategrad",
            "softmaxcrossentropywithlogits",
            "sparsesoftmaxcrossentropywithlogits",
        ],
        rows,
    ),
];

/// Builds the model of `task` on `soc`: the builder of the task's op family
/// (`FAMILIES`); an op type of no family is unsupported.
pub fn model(task: &TuningTask, soc: &SocModel, runner: &str) -> Result<OpModel, MeasureError> {
    let cx = Ctx {
        task,
        soc,
        runner,
        op: task.op_type(),
    };
    match FAMILIES
        .iter()
        .find(|(types, _)| types.contains(&cx.op.as_str()))
    {
        Some((_, build)) => build(&cx),
        None => Err(cx.unsupported(format!("op type {}", task.op.op_type))),
    }
}

/// A task being modelled, with accessors whose errors name its op.
struct Ctx<'a> {
    task: &'a TuningTask,
    soc: &'a SocModel,
    runner: &'a str,
    /// The lower-case op type.
    op: String,
}

impl Ctx<'_> {
    fn unsupported(&self, what: String) -> MeasureError {
        MeasureError::Unsupported {
            runner: self.runner.to_string(),
            what,
        }
    }

    /// Element bytes of `d` on the SoC (in the cube or the vector unit).
    fn dtype_of(&self, d: DType, cube: bool) -> Result<u64, MeasureError> {
        elem_bytes(d, self.soc, cube).ok_or_else(|| {
            self.unsupported(format!("{} in {d:?} on {}", self.op, self.soc.version))
        })
    }

    /// The tensor's logical shape; every dimension must be positive.
    fn shape_of(&self, t: &TensorDesc) -> Result<Vec<u64>, MeasureError> {
        logical(t)
            .iter()
            .map(|&d| {
                u64::try_from(d).ok().filter(|&d| d > 0).ok_or_else(|| {
                    MeasureError::InvalidTask(format!(
                        "{}: shape {:?} has a non-positive dimension",
                        self.op,
                        logical(t)
                    ))
                })
            })
            .collect()
    }

    /// [`MeasureError::TooLarge`] for a size of this op, naming the op and its shapes.
    fn too_large(&self, what: String) -> MeasureError {
        let shapes: Vec<&[i64]> = self.task.op.inputs.iter().map(logical).collect();
        MeasureError::TooLarge(format!("{} {shapes:?}: {what}", self.task.op.op_type))
    }

    /// The product of `factors` (named `what`), at most [`super::MAX_SIZE`].
    fn size(&self, what: &str, factors: &[u64]) -> Result<u64, MeasureError> {
        bounded(what, factors).map_err(|w| self.too_large(w))
    }

    /// Elements of a shape (1 for a scalar), at most [`super::MAX_SIZE`].
    fn numel(&self, what: &str, shape: &[u64]) -> Result<u64, MeasureError> {
        Ok(self.size(what, shape)?.max(1))
    }

    fn input(&self, i: usize) -> Result<&TensorDesc, MeasureError> {
        self.task
            .op
            .inputs
            .get(i)
            .ok_or_else(|| MeasureError::InvalidTask(format!("{} has no input {i}", self.op)))
    }

    fn output(&self) -> Result<&TensorDesc, MeasureError> {
        self.task
            .op
            .outputs
            .first()
            .ok_or_else(|| MeasureError::InvalidTask(format!("{} has no output", self.op)))
    }
}

/// MatMul, BatchMatMul and Gemm: a cube GEMM, with TransData passes around it on a SoC that
/// cannot convert ND↔NZ on the fly.
fn matmul(cx: &Ctx<'_>) -> Result<OpModel, MeasureError> {
    let (task, soc, op) = (cx.task, cx.soc, &cx.op);
    let a = cx.input(0)?;
    let b = cx.input(1)?;
    let sa = cx.shape_of(a)?;
    let sb = cx.shape_of(b)?;
    if sa.len() < 2 || sb.len() < 2 {
        return Err(MeasureError::InvalidTask(format!(
            "{op}: inputs must have rank ≥ 2, got {sa:?} and {sb:?}"
        )));
    }
    let ta = task.attr_bool("transpose_x1")
        || task.attr_bool("transpose_a")
        || task.attr_bool("adj_x1")
        || task.attr_int("transA") == Some(1);
    let tb = task.attr_bool("transpose_x2")
        || task.attr_bool("transpose_b")
        || task.attr_bool("adj_x2")
        || task.attr_int("transB") == Some(1);
    let (m, k) = if ta {
        (sa[sa.len() - 1], sa[sa.len() - 2])
    } else {
        (sa[sa.len() - 2], sa[sa.len() - 1])
    };
    let (k2, n) = if tb {
        (sb[sb.len() - 1], sb[sb.len() - 2])
    } else {
        (sb[sb.len() - 2], sb[sb.len() - 1])
    };
    if k != k2 {
        return Err(MeasureError::InvalidTask(format!(
            "{op}: reduction lengths differ ({k} vs {k2}) for {sa:?} · {sb:?}"
        )));
    }
    let batch = cx.numel("batch of A", &sa[..sa.len() - 2])?;
    let b_batch = cx.numel("batch of B", &sb[..sb.len() - 2])?;
    let in_bytes = cx.dtype_of(a.dtype, true)?;
    let out_bytes = cx.dtype_of(cx.output()?.dtype, false)?;
    let a_nz = a.format == Format::FractalNz;
    let b_nz = matches!(b.format, Format::FractalNz | Format::FractalZ);
    let problem = GemmProblem {
        batch,
        m,
        k,
        n,
        in_bytes,
        out_bytes,
        bias: task.op.inputs.len() >= 3,
        a: ASource::Matrix {
            transposed: ta,
            nz: a_nz || !soc.nd_nz_on_the_fly,
        },
        b_transposed: tb,
        b_nz: b_nz || !soc.nd_nz_on_the_fly,
        b_shared: b_batch == 1,
    };
    problem.check_size().map_err(|w| cx.too_large(w.what))?;
    let mut trans = Vec::new();
    if !soc.nd_nz_on_the_fly {
        // ND tensors are converted by explicit TransData kernels: A and C always (they are
        // activations); B only when it is not a constant weight (batched).
        let conv = |elems: u64, bytes: u64| ElemProblem {
            n: elems,
            in_bytes_per: bytes as f64,
            out_bytes: bytes,
            elem_bytes: bytes,
            passes: 2,
            queues: 2,
        };
        // Padded to 16 × 16 fractals; checked, as B's batch need not be A's.
        let fractals = |what: &str, b: u64, rows: u64, cols: u64, bytes: u64| {
            let r = bounded_align("rows aligned to 16", rows, 16).map_err(|w| cx.too_large(w))?;
            let c =
                bounded_align("columns aligned to 16", cols, 16).map_err(|w| cx.too_large(w))?;
            cx.size(what, &[b, r, c, bytes])?;
            Ok::<u64, MeasureError>(b * r * c)
        };
        if !a_nz {
            trans.push(conv(
                fractals("A in NZ, bytes", batch, m, k, in_bytes)?,
                in_bytes,
            ));
        }
        if !b_nz && b_batch > 1 {
            trans.push(conv(
                fractals("B in NZ, bytes", b_batch, k, n, in_bytes)?,
                in_bytes,
            ));
        }
        if cx.output()?.format != Format::FractalNz {
            trans.push(conv(
                fractals("C in NZ, bytes", batch, m, n, out_bytes)?,
                out_bytes,
            ));
        }
    }
    for tp in &trans {
        tp.check_size().map_err(|w| cx.too_large(w))?;
    }
    let useful_flops = problem.flops();
    Ok(OpModel::Cube {
        problem,
        trans,
        useful_flops,
    })
}

/// Conv2D: an implicit GEMM (see `conv.rs`).
fn conv(cx: &Ctx<'_>) -> Result<OpModel, MeasureError> {
    super::conv::model(cx.task, cx.soc, cx.runner).map(conv_gemm)
}

/// Conv2DBackpropInput and the transposed convolutions: an implicit GEMM (see `conv.rs`).
fn backprop_input(cx: &Ctx<'_>) -> Result<OpModel, MeasureError> {
    super::conv::backprop_input_model(cx.task, cx.soc, cx.runner).map(conv_gemm)
}

/// Conv2DBackpropFilter: the weight-gradient GEMM (see `conv.rs`).
fn backprop_filter(cx: &Ctx<'_>) -> Result<OpModel, MeasureError> {
    super::conv::backprop_filter_model(cx.task, cx.soc, cx.runner).map(conv_gemm)
}

/// Vector passes over each element of an elementwise op.
fn elem_passes(op: &str) -> u64 {
    match op {
        "relu" | "relu6" | "abs" | "neg" | "add" | "sub" | "mul" | "maximum" | "minimum"
        | "addn" | "biasadd" | "muls" | "adds" | "cast" | "relugrad" | "assign" | "assignadd"
        | "assignsub" | "zeroslike" | "oneslike" | "tile" | "square" | "fill" | "max" | "min"
        | "where" | "greater" | "greaterorequal" | "less" | "lessorequal" | "equal" => 1,
        "leakyrelu" | "div" | "realdiv" | "sqrt" | "rsqrt" | "transdata" | "transpose"
        | "relu6grad" | "leakyrelugrad" | "sqrtgrad" | "reciprocalgrad" | "squareddifference"
        | "floordiv" | "floormod" => 2,
        "exp" | "log" | "sigmoidgrad" | "tanhgrad" | "elugrad" | "selugrad" | "rsqrtgrad"
        | "divnonan" => 3,
        "pow" => 7,
        "softsigngrad" | "bntrainingupdate" | "statelessrandomuniformv2" => 4,
        "statelessrandomnormalv2" => 6,
        "softplusgrad" => 5,
        "bntrainingreducegrad" => 6,
        "sigmoid" | "swish" | "silu" => 5,
        "tanh" | "erf" | "fastgelu" => 6,
        _ => 9, // gelu
    }
}

/// Elementwise ops (and TransData/Transpose): an element stream over the output, reading
/// every input.
fn elementwise(cx: &Ctx<'_>) -> Result<OpModel, MeasureError> {
    let task = cx.task;
    let out = cx.output()?;
    let so = cx.shape_of(out)?;
    let n = cx.numel("output elements", &so)?;
    let eb = cx.dtype_of(out.dtype, false)?;
    let mut in_bytes = 0.0;
    // Tile's second input is its repeat counts, not streamed data; Fill streams nothing in.
    let streamed = match cx.op.as_str() {
        "tile" => 1,
        "fill" | "statelessrandomuniformv2" | "statelessrandomnormalv2" => 0,
        _ => task.op.inputs.len(),
    };
    for t in &task.op.inputs[..streamed] {
        let s = cx.shape_of(t)?;
        let elems = cx.numel("input elements", &s)?;
        in_bytes += cx.size("input bytes", &[elems, cx.dtype_of(t.dtype, false)?])? as f64;
    }
    let passes = elem_passes(&cx.op);
    let n_in = task.op.inputs.len().max(1) as u64;
    let tmp = u64::from(passes >= 5);
    checked_elem(
        cx,
        ElemProblem {
            n,
            in_bytes_per: in_bytes / n as f64,
            out_bytes: eb,
            elem_bytes: eb,
            passes,
            queues: n_in + 1 + tmp,
        },
    )
}

/// `p` as the model when its sizes are in range ([`ElemProblem::check_size`]).
fn checked_elem(cx: &Ctx<'_>, p: ElemProblem) -> Result<OpModel, MeasureError> {
    p.check_size().map_err(|w| cx.too_large(w))?;
    Ok(OpModel::Elem(p))
}

/// Max and average pooling: an element stream over the output, one pass per window element.
fn pool(cx: &Ctx<'_>) -> Result<OpModel, MeasureError> {
    let task = cx.task;
    let x = cx.input(0)?;
    let out = cx.output()?;
    let sx = cx.shape_of(x)?;
    let so = cx.shape_of(out)?;
    let n = cx.numel("output elements", &so)?;
    let eb = cx.dtype_of(out.dtype, false)?;
    let ksize = task
        .attr_ints("ksize")
        .or_else(|| task.attr_ints("kernel_shape"))
        .unwrap_or_else(|| vec![3, 3]);
    let window = ksize
        .iter()
        .rev()
        .take(2)
        .try_fold(1i64, |p, &k| p.checked_mul(k))
        .ok_or_else(|| cx.too_large(format!("pooling window {ksize:?} overflows i64")))?
        .max(1) as u64;
    let in_bytes = cx.size("input bytes", &[cx.numel("input elements", &sx)?, eb])?;
    checked_elem(
        cx,
        ElemProblem {
            n,
            in_bytes_per: in_bytes as f64 / n as f64,
            out_bytes: eb,
            elem_bytes: eb,
            passes: window,
            queues: 2 + window / 4,
        },
    )
}

/// Softmax, normalisations and reductions: a row stream (softmax and norms over the last
/// axis; reductions over what the output drops).
fn rows(cx: &Ctx<'_>) -> Result<OpModel, MeasureError> {
    let x = cx.input(0)?;
    let sx = cx.shape_of(x)?;
    let eb = cx.dtype_of(x.dtype, false)?;
    let elems = cx.numel("input elements", &sx)?;
    // Ops reading two full tensors per row (the gradient and the input, logits and labels)
    // stream twice the bytes: counted as elements twice as wide.
    let eb = match cx.op.as_str() {
        "bntrainingupdategrad" | "softmaxcrossentropywithlogits" => 2 * eb,
        _ => eb,
    };
    let (rows, len, out_per_row, passes) = match cx.op.as_str() {
        "softmax" | "softmaxv2" | "logsoftmax" => {
            let len = *sx.last().unwrap_or(&1);
            (elems / len, len, len, 8)
        }
        "softmaxcrossentropywithlogits" | "sparsesoftmaxcrossentropywithlogits" => {
            let len = *sx.last().unwrap_or(&1);
            (elems / len, len, len + 1, 10)
        }
        // Per channel over N·H·W: sum and square sum; the two parameter gradients.
        "bntrainingreduce" | "bntrainingupdategrad" => {
            let c = *cx.shape_of(cx.output()?)?.first().unwrap_or(&1);
            let c = c.clamp(1, elems);
            (
                c,
                elems / c,
                2,
                if cx.op == "bntrainingreduce" { 2 } else { 3 },
            )
        }
        "layernorm" | "rmsnorm" => {
            let len = *sx.last().unwrap_or(&1);
            (elems / len, len, len, 9)
        }
        _ => {
            let so = cx.shape_of(cx.output()?)?;
            let rows = cx.numel("output elements", &so)?.min(elems);
            (rows, elems / rows, 1, 1)
        }
    };
    let p = RowProblem {
        rows,
        len,
        elem_bytes: eb,
        out_per_row,
        passes,
    };
    p.check_size().map_err(|w| cx.too_large(w))?;
    Ok(OpModel::Row(p))
}

/// MaxPoolGrad (input, output, gradient → input gradient: a compare and a select per window
/// element) and AvgPoolGrad (gradient → input gradient: one add per window element): an
/// element stream over the input gradient.
fn pool_grad(cx: &Ctx<'_>) -> Result<OpModel, MeasureError> {
    let task = cx.task;
    let out = cx.output()?;
    let n = cx.numel("output elements", &cx.shape_of(out)?)?;
    let eb = cx.dtype_of(out.dtype, false)?;
    let ksize = task.attr_ints("ksize").unwrap_or_else(|| vec![1, 1, 2, 2]);
    let window = ksize
        .iter()
        .rev()
        .take(2)
        .try_fold(1i64, |p, &k| p.checked_mul(k))
        .ok_or_else(|| cx.too_large(format!("pooling window {ksize:?} overflows i64")))?
        .max(1) as u64;
    let reads: &[usize] = if cx.op == "maxpoolgrad" {
        &[0, 1, 2]
    } else {
        &[1]
    };
    let mut in_bytes = 0u64;
    for &i in reads {
        let t = cx.input(i)?;
        let elems = cx.numel("input elements", &cx.shape_of(t)?)?;
        in_bytes = in_bytes
            .saturating_add(cx.size("input bytes", &[elems, cx.dtype_of(t.dtype, false)?])?);
    }
    let passes = if cx.op == "maxpoolgrad" {
        2 * window
    } else {
        window
    };
    checked_elem(
        cx,
        ElemProblem {
            n,
            in_bytes_per: in_bytes as f64 / n as f64,
            out_bytes: eb,
            elem_bytes: eb,
            passes,
            queues: reads.len() as u64 + 1 + window / 4,
        },
    )
}

/// An optimizer update (ApplyAdam …): an element stream over the variable reading the
/// variable, its slots and the gradient, writing the variable and slots; scalars
/// (learning rate, betas) are not streamed.
fn optimizer(cx: &Ctx<'_>) -> Result<OpModel, MeasureError> {
    let var = cx.input(0)?;
    let n = cx.numel("variable elements", &cx.shape_of(var)?)?;
    let eb = cx.dtype_of(var.dtype, false)?;
    let mut in_bytes = 0u64;
    let mut streamed = 0u64;
    for t in &cx.task.op.inputs {
        let elems = cx.numel("input elements", &cx.shape_of(t)?)?;
        if elems == n {
            in_bytes = in_bytes
                .saturating_add(cx.size("input bytes", &[elems, cx.dtype_of(t.dtype, false)?])?);
            streamed += 1;
        }
    }
    let state = cx.task.op.outputs.len().max(1) as u64;
    let passes = match cx.op.as_str() {
        "applyadam" => 10,
        "applyrmsprop" => 8,
        "applyadagrad" => 4,
        "applygradientdescent" => 2,
        _ => 3, // momentum
    };
    checked_elem(
        cx,
        ElemProblem {
            n,
            in_bytes_per: in_bytes as f64 / n as f64,
            out_bytes: state * eb,
            elem_bytes: eb,
            passes,
            queues: streamed + state,
        },
    )
}
