//! Conv2D as an implicit GEMM on the cube: the feature map in NC1HWC0 (channels padded to C0),
//! weights in FRACTAL_Z (output channels padded to 16), M = Ho·Wo per image, K = C1·C0·kh·kw,
//! N = Cout; load3d expands the im2col rows from the feature map rows held in L1.

use super::cube::{ASource, GemmProblem};
use super::soc::SocModel;
use super::{bounded, bounded_align};
use crate::{MeasureError, TuningTask};
use tunebank_key::{DType, Format};

/// A convolution as the cube runs it: its (implicit) GEMM, and the FLOPs of the op before
/// padding (for the roofline). The op model (`ops.rs`) takes it as a cube op with no layout
/// conversions around it.
#[derive(Clone, Debug)]
pub(crate) struct ConvGemm {
    /// The GEMM.
    pub(crate) problem: GemmProblem,
    /// FLOPs of the op before padding.
    pub(crate) useful_flops: f64,
}

/// Geometry of a 2-D convolution in NCHW terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvGeometry {
    /// Batch.
    pub n: u64,
    /// Input channels.
    pub cin: u64,
    /// Input height.
    pub h: u64,
    /// Input width.
    pub w: u64,
    /// Output channels.
    pub cout: u64,
    /// Kernel height.
    pub kh: u64,
    /// Kernel width.
    pub kw: u64,
    /// Strides (H, W).
    pub stride: (u64, u64),
    /// Padding (top, bottom, left, right).
    pub pads: (u64, u64, u64, u64),
    /// Dilations (H, W).
    pub dilation: (u64, u64),
    /// Channel groups (1 for a plain convolution, `cin` for a depthwise one): `cin` and
    /// `cout` are totals, each group convolving `cin / groups` channels into
    /// `cout / groups`.
    pub groups: u64,
}

impl ConvGeometry {
    /// Output height.
    pub fn ho(&self) -> u64 {
        (self.h + self.pads.0 + self.pads.1 - (self.kh - 1) * self.dilation.0 - 1) / self.stride.0
            + 1
    }

    /// Output width.
    pub fn wo(&self) -> u64 {
        (self.w + self.pads.2 + self.pads.3 - (self.kw - 1) * self.dilation.1 - 1) / self.stride.1
            + 1
    }

    /// Reads the geometry of a Conv2D task: input x and weight in NCHW/OIHW (or NHWC/OHWI by
    /// their original format), attrs `strides`, `pads` (4 values: top, bottom, left, right),
    /// `dilations`, `groups`.
    pub fn from_task(task: &TuningTask) -> Result<ConvGeometry, MeasureError> {
        let bad = |m: String| MeasureError::InvalidTask(format!("Conv2D: {m}"));
        let x = task
            .op
            .inputs
            .first()
            .ok_or_else(|| bad("no input".into()))?;
        let wt = task
            .op
            .inputs
            .get(1)
            .ok_or_else(|| bad("no weight".into()))?;
        let pos = |s: &[i64]| -> Result<Vec<u64>, MeasureError> {
            s.iter()
                .map(|&d| u64::try_from(d).ok().filter(|&d| d > 0))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad(format!("shape {s:?} is not static and positive")))
        };
        let xs = pos(if x.ori_shape.is_empty() {
            &x.shape
        } else {
            &x.ori_shape
        })?;
        let ws = pos(if wt.ori_shape.is_empty() {
            &wt.shape
        } else {
            &wt.ori_shape
        })?;
        if xs.len() != 4 || ws.len() != 4 {
            return Err(bad(format!(
                "expected 4-D input and weight, got {xs:?} and {ws:?}"
            )));
        }
        let (n, cin, h, w) = if x.ori_format == Format::NHWC {
            (xs[0], xs[3], xs[1], xs[2])
        } else {
            (xs[0], xs[1], xs[2], xs[3])
        };
        let (cout, kh, kw) = if wt.ori_format == Format::NHWC {
            (ws[0], ws[1], ws[2])
        } else {
            (ws[0], ws[2], ws[3])
        };
        let nhwc = x.ori_format == Format::NHWC;
        let hw = |name: &str, default: u64| -> (u64, u64) {
            match task.attr_ints(name) {
                Some(v) if v.len() == 4 && nhwc => (v[1].max(1) as u64, v[2].max(1) as u64),
                Some(v) if v.len() == 4 => (v[2].max(1) as u64, v[3].max(1) as u64),
                Some(v) if v.len() == 2 => (v[0].max(1) as u64, v[1].max(1) as u64),
                _ => (default, default),
            }
        };
        let pads = match task.attr_ints("pads") {
            Some(p) if p.len() == 4 => (
                p[0].max(0) as u64,
                p[1].max(0) as u64,
                p[2].max(0) as u64,
                p[3].max(0) as u64,
            ),
            _ => (0, 0, 0, 0),
        };
        let groups = task.attr_int("groups").unwrap_or(1);
        let groups = u64::try_from(groups)
            .ok()
            .filter(|&g| g >= 1)
            .ok_or_else(|| bad(format!("groups {groups}: expected a positive count")))?;
        let cin_w = if wt.ori_format == Format::NHWC {
            ws[3]
        } else {
            ws[1]
        };
        if cin % groups != 0 || cout % groups != 0 || cin / groups != cin_w {
            return Err(bad(format!(
                "groups {groups} does not divide {cin} input and {cout} output channels into the weight's {cin_w} per group"
            )));
        }
        let g = ConvGeometry {
            n,
            cin,
            h,
            w,
            cout,
            kh,
            kw,
            stride: hw("strides", 1),
            pads,
            dilation: hw("dilations", 1),
            groups,
        };
        let (hp, kh_eff) =
            g.padded_and_kernel("H", g.h, (g.pads.0, g.pads.1), g.kh, g.dilation.0)?;
        let (wp, kw_eff) =
            g.padded_and_kernel("W", g.w, (g.pads.2, g.pads.3), g.kw, g.dilation.1)?;
        if hp < kh_eff || wp < kw_eff {
            return Err(bad("kernel larger than the padded input".into()));
        }
        Ok(g)
    }

    /// The geometry, when the convolution is not grouped; [`MeasureError::Unsupported`] for
    /// `runner` otherwise (the host kernels convolve one group).
    pub fn ungrouped(self, runner: &str) -> Result<ConvGeometry, MeasureError> {
        if self.groups == 1 {
            return Ok(self);
        }
        Err(MeasureError::Unsupported {
            runner: runner.into(),
            what: format!("grouped Conv2D (groups = {})", self.groups),
        })
    }

    /// The padded extent and the effective kernel extent ((k − 1)·dilation + 1) along one
    /// axis, or [`MeasureError::TooLarge`] when either overflows u64. A geometry
    /// [`ConvGeometry::from_task`] returns has both in range, so [`ConvGeometry::ho`] and
    /// [`ConvGeometry::wo`] cannot overflow.
    fn padded_and_kernel(
        &self,
        axis: &str,
        extent: u64,
        pads: (u64, u64),
        k: u64,
        dilation: u64,
    ) -> Result<(u64, u64), MeasureError> {
        let padded = extent
            .checked_add(pads.0)
            .and_then(|x| x.checked_add(pads.1));
        let kernel = (k - 1).checked_mul(dilation).and_then(|x| x.checked_add(1));
        padded.zip(kernel).ok_or_else(|| {
            MeasureError::TooLarge(format!(
                "Conv2D: {axis} {extent} with pads {pads:?}, kernel {k} and dilation {dilation} overflows u64"
            ))
        })
    }
}

/// The cube model of a Conv2D task.
pub fn model(task: &TuningTask, soc: &SocModel, runner: &str) -> Result<ConvGemm, MeasureError> {
    let g = ConvGeometry::from_task(task)?;
    let in_bytes = match task.input_dtype(0) {
        DType::Float16 => 2,
        DType::Bfloat16 if soc.bf16 => 2,
        DType::Float32 if soc.cube_fp32 => 4,
        DType::Int8 => 1,
        d => {
            return Err(MeasureError::Unsupported {
                runner: runner.to_string(),
                what: format!("Conv2D in {d:?} on {}", soc.version),
            })
        }
    };
    let out_bytes = match task.output_dtype() {
        DType::Float32 | DType::Int32 => 4,
        DType::Int8 => 1,
        _ => 2,
    };
    let c0 = 32 / in_bytes;
    let too_large = |what: String| {
        MeasureError::TooLarge(format!(
            "Conv2D {:?} · {:?}: {what}",
            task.op.inputs[0].shape, task.op.inputs[1].shape
        ))
    };
    // A grouped convolution is `groups` independent convolutions of `cin / groups` channels,
    // each with its own weights: one cube GEMM per group and image.
    let cin_pad =
        bounded_align("channels aligned to C0", g.cin / g.groups, c0).map_err(too_large)?;
    let (ho, wo) = (g.ho(), g.wo());
    let m = bounded("M (Ho·Wo)", &[ho, wo]).map_err(too_large)?;
    let k = bounded("K (C·kh·kw, padded)", &[cin_pad, g.kh, g.kw]).map_err(too_large)?;
    let problem = GemmProblem {
        batch: bounded("batch (N·groups)", &[g.n, g.groups]).map_err(too_large)?,
        m,
        k,
        n: g.cout / g.groups,
        in_bytes,
        out_bytes,
        bias: task.op.inputs.len() >= 3,
        a: ASource::Fmap {
            h: g.h + g.pads.0 + g.pads.1,
            w: g.w + g.pads.2 + g.pads.3,
            wo,
            ho,
            kh_eff: (g.kh - 1) * g.dilation.0 + 1,
            stride_h: g.stride.0,
            cin_pad,
        },
        b_transposed: false,
        b_nz: true,
        b_shared: g.groups == 1,
    };
    problem.check_size().map_err(|w| too_large(w.what))?;
    // In f64: a count of operations, exact for every real conv (below 2^53) and never wrapping.
    let useful_flops = [g.n, ho, wo, g.cout, g.cin / g.groups, g.kh, g.kw]
        .iter()
        .fold(2.0, |f, &d| f * d as f64);
    Ok(ConvGemm {
        problem,
        useful_flops,
    })
}

/// The dims of a 4-D NCHW (or OIHW) tensor of `task`, positive.
fn dims4(
    task: &TuningTask,
    t: Option<&tunebank_key::TensorDesc>,
    what: &str,
) -> Result<[u64; 4], MeasureError> {
    let op = &task.op.op_type;
    let t = t.ok_or_else(|| MeasureError::InvalidTask(format!("{op}: no {what}")))?;
    let s = if t.ori_shape.is_empty() {
        &t.shape
    } else {
        &t.ori_shape
    };
    let d: Vec<u64> = s
        .iter()
        .map(|&d| u64::try_from(d).ok().filter(|&d| d > 0))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            MeasureError::InvalidTask(format!("{op}: {what} {s:?} is not static and positive"))
        })?;
    <[u64; 4]>::try_from(d)
        .map_err(|d| MeasureError::InvalidTask(format!("{op}: {what} {d:?}: expected 4 dims")))
}

/// Cube input bytes of `d` on `soc` (as a Conv2D's).
fn cube_bytes(d: DType, soc: &SocModel, runner: &str, op: &str) -> Result<u64, MeasureError> {
    match d {
        DType::Float16 => Ok(2),
        DType::Bfloat16 if soc.bf16 => Ok(2),
        DType::Float32 if soc.cube_fp32 => Ok(4),
        DType::Int8 => Ok(1),
        d => Err(MeasureError::Unsupported {
            runner: runner.to_string(),
            what: format!("{op} in {d:?} on {}", soc.version),
        }),
    }
}

/// The groups of a backward convolution (`groups`, else ONNX's `group`, else 1).
fn groups_of(task: &TuningTask) -> Result<u64, MeasureError> {
    let g = task
        .attr_int("groups")
        .or_else(|| task.attr_int("group"))
        .unwrap_or(1);
    u64::try_from(g).ok().filter(|&g| g >= 1).ok_or_else(|| {
        MeasureError::InvalidTask(format!(
            "{}: groups {g}: expected a positive count",
            task.op.op_type
        ))
    })
}

/// The input gradient of a convolution (`Conv2DBackpropInput`, its depthwise form, and ONNX's
/// `ConvTranspose`/`Conv2DTranspose`, the same computation): the convolution of the gradient,
/// dilated by the stride and padded by the kernel, with the flipped filter. One cube GEMM per
/// image and group: M = H·W of the result, K = O/g (padded to C0)·kh·kw, N = C/g; load3d reads
/// the dilated gradient (its zeros are read and multiplied, as the stride-dilating
/// implementation does). Inputs: the gradient is the 4-D input with the filter's O channels,
/// the filter OIHW (ONNX's [C_in, C_out/g, kh, kw] of a ConvTranspose is that filter).
pub fn backprop_input_model(
    task: &TuningTask,
    soc: &SocModel,
    runner: &str,
) -> Result<ConvGemm, MeasureError> {
    let op = task.op.op_type.as_str();
    let transpose = matches!(op, "ConvTranspose" | "Conv2DTranspose");
    let (dy_at, w_at) = if transpose { (0, 1) } else { (2, 1) };
    let dy = dims4(task, task.op.inputs.get(dy_at), "gradient")?;
    let w = dims4(task, task.op.inputs.get(w_at), "filter")?;
    let y = dims4(task, task.op.outputs.first(), "output")?;
    let g = groups_of(task)?;
    let (o, c_g, kh, kw) = (w[0], w[1], w[2], w[3]);
    if dy[1] != o || o % g != 0 || y[1] != c_g * g {
        return Err(MeasureError::InvalidTask(format!(
            "{op}: gradient {dy:?}, filter {w:?} and output {y:?} do not agree (groups {g})"
        )));
    }
    let in_bytes = cube_bytes(task.input_dtype(dy_at), soc, runner, op)?;
    let out_bytes = match task.output_dtype() {
        DType::Float32 | DType::Int32 => 4,
        _ => 2,
    };
    let dil = |i: usize| {
        task.attr_ints("dilations")
            .and_then(|v| v.get(v.len().saturating_sub(2) + i).copied())
            .unwrap_or(1)
            .max(1) as u64
    };
    let too_large = |what: String| MeasureError::TooLarge(format!("{op} {dy:?} · {w:?}: {what}"));
    let (kh_eff, kw_eff) = (
        bounded("kernel height", &[kh.saturating_sub(1), dil(0)]).map_err(too_large)? + 1,
        bounded("kernel width", &[kw.saturating_sub(1), dil(1)]).map_err(too_large)? + 1,
    );
    let c0 = 32 / in_bytes;
    let o_pad = bounded_align("channels aligned to C0", o / g, c0).map_err(too_large)?;
    let (h, wd) = (y[2], y[3]);
    let problem = GemmProblem {
        batch: bounded("batch (N·groups)", &[y[0], g]).map_err(too_large)?,
        m: bounded("M (H·W)", &[h, wd]).map_err(too_large)?,
        k: bounded("K (O·kh·kw, padded)", &[o_pad, kh, kw]).map_err(too_large)?,
        n: c_g,
        in_bytes,
        out_bytes,
        bias: false,
        a: ASource::Fmap {
            h: h.saturating_add(kh_eff - 1),
            w: wd.saturating_add(kw_eff - 1),
            wo: wd,
            ho: h,
            kh_eff,
            stride_h: 1,
            cin_pad: o_pad,
        },
        b_transposed: false,
        b_nz: true,
        b_shared: g == 1,
    };
    problem.check_size().map_err(|w| too_large(w.what))?;
    let useful_flops = [dy[0], dy[2], dy[3], o, c_g, kh, kw]
        .iter()
        .fold(2.0, |f, &d| f * d as f64);
    Ok(ConvGemm {
        problem,
        useful_flops,
    })
}

/// The filter gradient of a convolution (`Conv2DBackpropFilter` and its depthwise form;
/// inputs x NCHW and the gradient dy): per group the GEMM dyᵀ · im2col(x),
/// [O/g, N·Ho·Wo] × [N·Ho·Wo, C/g (padded to C0)·kh·kw], written in float32. The gradient is
/// read as a K-major matrix in fractals; the im2col operand is costed as the explicit matrix
/// it is (load3d's reuse of feature-map rows across kernel positions is not modelled, so its
/// traffic is an upper bound).
pub fn backprop_filter_model(
    task: &TuningTask,
    soc: &SocModel,
    runner: &str,
) -> Result<ConvGemm, MeasureError> {
    let op = task.op.op_type.as_str();
    let x = dims4(task, task.op.inputs.first(), "input")?;
    let dy = dims4(task, task.op.inputs.get(1), "gradient")?;
    let f = dims4(task, task.op.outputs.first(), "filter gradient")?;
    let g = groups_of(task)?;
    let (o, c_g, kh, kw) = (f[0], f[1], f[2], f[3]);
    if dy[1] != o || o % g != 0 || x[1] != c_g * g || x[0] != dy[0] {
        return Err(MeasureError::InvalidTask(format!(
            "{op}: input {x:?}, gradient {dy:?} and filter {f:?} do not agree (groups {g})"
        )));
    }
    let in_bytes = cube_bytes(task.input_dtype(1), soc, runner, op)?;
    let too_large = |what: String| MeasureError::TooLarge(format!("{op} {x:?} · {dy:?}: {what}"));
    let c0 = 32 / in_bytes;
    let c_pad = bounded_align("channels aligned to C0", c_g, c0).map_err(too_large)?;
    let problem = GemmProblem {
        batch: g,
        m: o / g,
        k: bounded("K (N·Ho·Wo)", &[dy[0], dy[2], dy[3]]).map_err(too_large)?,
        n: bounded("N (C·kh·kw, padded)", &[c_pad, kh, kw]).map_err(too_large)?,
        in_bytes,
        out_bytes: 4,
        bias: false,
        a: ASource::Matrix {
            transposed: true,
            nz: true,
        },
        b_transposed: false,
        b_nz: true,
        b_shared: false,
    };
    problem.check_size().map_err(|w| too_large(w.what))?;
    let useful_flops = [dy[0], dy[2], dy[3], o, c_g, kh, kw]
        .iter()
        .fold(2.0, |f, &d| f * d as f64);
    Ok(ConvGemm {
        problem,
        useful_flops,
    })
}
