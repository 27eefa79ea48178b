//! One candidate on the CPU: its kernel built from the strategy (a bad strategy is a
//! `build_fail`, one whose buffers exceed the memory cap a `build_oom`), one run checked
//! against the reference (`precision_fail`, or `run_timeout` when that run exceeds the
//! candidate's time), then warm-ups and timed repeats; a panicking kernel is a `run_crash`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};
use tunebank_key::StrategyMap;

use super::kernels::{self, Conv, ElemOp, RowOp};
use super::{gemm, gemm_tiling_of, CpuRunner, Prepared};
use crate::{get_int, get_str, CandidateFailure, Outcome};

/// One kernel invocation writing into the output buffer.
type KernelRun<'a> = Box<dyn FnMut(&mut Vec<f32>) + 'a>;

/// A built kernel and the output buffer it writes.
type Built<'a> = (KernelRun<'a>, Vec<f32>);

impl CpuRunner {
    /// Builds the kernel `s` names for `p`, checks one run's output, then times it.
    pub(super) fn run_candidate(&self, p: &Prepared, s: &StrategyMap) -> Outcome {
        let (mut runner, mut out) = match build(p, s) {
            Ok(built) => built,
            Err(r) => return Outcome::fail(CandidateFailure::BuildFail, r),
        };
        if let Some(reason) = self.candidate_over_cap(p, s) {
            return Outcome::fail(CandidateFailure::BuildOom, reason);
        }
        let (reference, atol, rtol) = tolerance(p);
        self.time_kernel(&mut runner, &mut out, reference, atol, rtol)
    }

    /// Runs the kernel once and checks its output against `reference` within
    /// `atol + rtol·|reference|`, then warm-ups and the timed repeats (µs samples).
    fn time_kernel(
        &self,
        runner: &mut KernelRun<'_>,
        out: &mut Vec<f32>,
        reference: &[f32],
        atol: f32,
        rtol: f32,
    ) -> Outcome {
        let timeout = Duration::from_millis(self.timing.timeout_ms.max(1));
        let result = catch_unwind(AssertUnwindSafe(|| -> Result<Vec<f64>, Outcome> {
            let t0 = Instant::now();
            runner(out);
            let first = t0.elapsed();
            if let Err(m) = check_output(out, reference, atol, rtol) {
                return Err(Outcome::fail(CandidateFailure::PrecisionFail, m.reason));
            }
            if first > timeout {
                return Err(Outcome::fail(
                    CandidateFailure::RunTimeout,
                    format!("one run took {first:?}, over the {timeout:?} limit"),
                ));
            }
            for _ in 1..self.timing.warmup {
                runner(out);
            }
            let mut samples = Vec::with_capacity(self.timing.repeats as usize);
            for _ in 0..self.timing.repeats.max(1) {
                let t0 = Instant::now();
                runner(out);
                samples.push((t0.elapsed().as_secs_f64() * 1e6).max(1e-3));
            }
            Ok(samples)
        }));
        match result {
            Ok(Ok(samples_us)) => Outcome::Measurement { samples_us },
            Ok(Err(o)) => o,
            Err(panic) => {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "kernel panicked".into());
                Outcome::fail(CandidateFailure::RunCrash, why)
            }
        }
    }
}

/// Validates `s` for the prepared task and returns the kernel it names with its output buffer,
/// or the `build_fail` reason.
fn build<'a>(p: &'a Prepared, s: &StrategyMap) -> Result<Built<'a>, String> {
    match p {
        Prepared::Gemm {
            batch,
            m,
            k,
            n,
            a,
            b,
            b_shared,
            ..
        } => gemm_kernel(s, (*batch, *m, *k, *n, *b_shared), a, b),
        Prepared::Conv { conv, x, w, .. } => conv_kernel(s, conv, x, w),
        Prepared::Row { op, len, x, .. } => row_kernel(s, *op, *len, x),
        Prepared::Elem { op, a, b, .. } => elem_kernel(s, *op, a, b),
    }
}

/// The packed GEMM over each batch; `dims` is (batch, M, K, N, B shared by the batches).
fn gemm_kernel<'a>(
    s: &StrategyMap,
    dims: (usize, usize, usize, usize, bool),
    a: &'a [f32],
    b: &'a [f32],
) -> Result<Built<'a>, String> {
    let t = gemm_tiling_of(s)?;
    let (batch, m, k, n, b_shared) = dims;
    let out = vec![0f32; batch * m * n];
    let run = Box::new(move |o: &mut Vec<f32>| {
        for i in 0..batch {
            let bb = if b_shared {
                b
            } else {
                &b[i * k * n..(i + 1) * k * n]
            };
            gemm::sgemm(
                &t,
                m,
                k,
                n,
                &a[i * m * k..(i + 1) * m * k],
                k,
                bb,
                n,
                &mut o[i * m * n..(i + 1) * m * n],
                n,
            );
        }
    });
    Ok((run, out))
}

/// Conv2D by `algo`: `im2col` plus the packed GEMM, or `direct` over output-channel blocks.
fn conv_kernel<'a>(
    s: &StrategyMap,
    conv: &'a Conv,
    x: &'a [f32],
    w: &'a [f32],
) -> Result<Built<'a>, String> {
    let algo = get_str(s, "algo")?.to_string();
    let out = vec![0f32; conv.n * conv.cout * conv.ho * conv.wo];
    let run: KernelRun<'a> = match algo.as_str() {
        "im2col" => {
            let t = gemm_tiling_of(s)?;
            let mut col = Vec::new();
            Box::new(move |o: &mut Vec<f32>| conv.im2col(&t, x, w, o, &mut col))
        }
        "direct" => {
            let (ob, th) = match (get_int(s, "oc_block"), get_int(s, "threads")) {
                (Ok(a), Ok(b)) if a > 0 && b > 0 => (a as usize, b as usize),
                _ => return Err("oc_block and threads must be positive integers".into()),
            };
            Box::new(move |o: &mut Vec<f32>| conv.direct(ob, th, x, w, o))
        }
        other => return Err(format!("unknown algo {other:?} (im2col or direct)")),
    };
    Ok((run, out))
}

/// Softmax or LayerNorm over rows of `len`.
fn row_kernel<'a>(
    s: &StrategyMap,
    op: RowOp,
    len: usize,
    x: &'a [f32],
) -> Result<Built<'a>, String> {
    let (rb, lanes, th) = match (
        get_int(s, "row_block"),
        get_int(s, "lanes"),
        get_int(s, "threads"),
    ) {
        (Ok(a), Ok(l), Ok(t)) if a > 0 && t > 0 && [1, 4, 8, 16].contains(&l) => {
            (a as usize, l as usize, t as usize)
        }
        _ => return Err("row_block and threads must be positive, lanes 1, 4, 8 or 16".into()),
    };
    let out = vec![0f32; x.len()];
    let run = Box::new(move |o: &mut Vec<f32>| kernels::row_op(op, x, o, len, rb, lanes, th));
    Ok((run, out))
}

/// An elementwise op in tiles.
fn elem_kernel<'a>(
    s: &StrategyMap,
    op: ElemOp,
    a: &'a [f32],
    b: &'a [f32],
) -> Result<Built<'a>, String> {
    let (tile, th) = match (get_int(s, "tile"), get_int(s, "threads")) {
        (Ok(t), Ok(h)) if t > 0 && h > 0 => (t as usize, h as usize),
        _ => return Err("tile and threads must be positive integers".into()),
    };
    let out = vec![0f32; a.len()];
    let run = Box::new(move |o: &mut Vec<f32>| op.run(a, b, o, tile, th));
    Ok((run, out))
}

/// The reference output and the tolerance (`atol`, `rtol`) of a prepared task: `atol` grows
/// with the reduction length of GEMM and convolution.
fn tolerance(p: &Prepared) -> (&[f32], f32, f32) {
    match p {
        Prepared::Gemm { reference, k, .. } => (reference, 1e-5 * *k as f32, 1e-4),
        Prepared::Conv {
            reference, conv, ..
        } => (
            reference,
            1e-5 * (conv.cin * conv.kh * conv.kw) as f32,
            1e-4,
        ),
        Prepared::Row { reference, .. } => (reference, 1e-5, 1e-4),
        Prepared::Elem { reference, .. } => (reference, 1e-5, 1e-4),
    }
}

/// Tolerance check: every output within `atol + rtol·|reference|`; the reason names the worst.
pub fn check_output(
    out: &[f32],
    reference: &[f32],
    atol: f32,
    rtol: f32,
) -> Result<(), OutputMismatch> {
    output_check(out, reference, atol, rtol).map_err(|reason| OutputMismatch { reason })
}

/// An output off its reference: the reason names the worst value (or the length mismatch).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct OutputMismatch {
    /// The worst value, or the length mismatch.
    pub reason: String,
}

impl OutputMismatch {
    /// An output off its reference is the candidate's (its strategy): a precision failure.
    pub fn kind(&self) -> tunebank_failure::FailureKind {
        tunebank_failure::FailureKind::Input
    }
}

/// [`check_output`] with the reason as text.
fn output_check(out: &[f32], reference: &[f32], atol: f32, rtol: f32) -> Result<(), String> {
    if out.len() != reference.len() {
        return Err(format!(
            "output has {} values, reference {}",
            out.len(),
            reference.len()
        ));
    }
    let mut worst: Option<(usize, f32)> = None;
    for (i, (&o, &r)) in out.iter().zip(reference).enumerate() {
        let err = (o - r).abs();
        let within = err <= atol + rtol * r.abs();
        if !within && worst.is_none_or(|(_, e)| err > e || e.is_nan()) {
            worst = Some((i, err));
        }
    }
    match worst {
        None => Ok(()),
        Some((i, e)) => Err(format!(
            "output[{i}] = {} differs from the reference {} by {e}",
            out[i], reference[i]
        )),
    }
}
