//! The CPU runner's memory cap: the host bytes a task's buffers (inputs, reference, output)
//! and a candidate's own buffers (GEMM packing panels, im2col columns, per-thread work lists)
//! need, counted with checked arithmetic before anything is allocated, and the `build_oom`
//! reasons naming the need and the cap.

use super::gemm::{GemmTiling, LoopOrder};
use super::kernels::Conv;
use super::{gemm_dims, gemm_tiling_of, CpuRunner, OpKind, Prepared};
use crate::{get_int, get_str, MeasureError, TuningTask};
use tunebank_key::StrategyMap;

/// Bytes of one f32.
const F32: u64 = 4;

/// Bytes of one entry of a thread's work list (an index and a slice), and of a list itself.
const ENTRY: u64 = 24;

/// `a · b · …`, or `None` when it overflows u64.
fn product(factors: &[u64]) -> Option<u64> {
    factors.iter().try_fold(1u64, |p, &f| p.checked_mul(f))
}

/// The sum of the products of `terms`, or `None` when any of it overflows u64.
fn sum_of_products(terms: &[&[u64]]) -> Option<u64> {
    terms
        .iter()
        .try_fold(0u64, |s, t| s.checked_add(product(t)?))
}

/// `a · b · …`, saturating at `u64::MAX` (for sizes that only choose candidate lists).
pub(super) fn saturating_product(factors: &[u64]) -> u64 {
    factors.iter().fold(1u64, |p, &f| p.saturating_mul(f))
}

/// Bytes as a reason's text: the number, or "more than 2^64".
fn shown(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "more than 2^64".to_string(), |b| b.to_string())
}

/// Host bytes of a task's buffers: its inputs, the reference output (with the f64 scratch of
/// the GEMM reference) and one output buffer; `None` when the count overflows u64.
fn task_bytes(task: &TuningTask) -> Result<Option<u64>, MeasureError> {
    let floats = match CpuRunner::kind(task)? {
        OpKind::Gemm => {
            let (batch, m, k, n, b_shared) = gemm_dims(task)?;
            let (batch, m, k, n) = (batch as u64, m as u64, k as u64, n as u64);
            let b_batch = if b_shared { 1 } else { batch };
            // A, B, reference and output, the reference's f64 scratch (two f32 each).
            sum_of_products(&[
                &[batch, m, k],
                &[b_batch, k, n],
                &[2, batch, m, n],
                &[2, m, n],
            ])
        }
        OpKind::Conv => {
            let g = crate::sim::conv::ConvGeometry::from_task(task)?.ungrouped("cpu")?;
            sum_of_products(&[
                &[g.n, g.cin, g.h, g.w],
                &[g.cout, g.cin, g.kh, g.kw],
                &[2, g.n, g.cout, g.ho(), g.wo()],
            ])
        }
        OpKind::Row(_) => product(&task.input_shape(0)?).and_then(|n| n.checked_mul(3)),
        OpKind::Elem(op) => {
            product(&task.output_shape(0)?).and_then(|n| n.checked_mul(op.arity() as u64 + 2))
        }
    };
    Ok(floats.and_then(|f| f.checked_mul(F32)))
}

/// Host bytes a GEMM of `m` rows allocates for its packing panels and work lists under `t`
/// (as `gemm::sgemm` sizes them); `None` when the count overflows u64.
fn gemm_bytes(t: &GemmTiling, m: u64) -> Option<u64> {
    let (mr, nr) = t.micro.shape();
    let (mr, nr) = (mr as u64, nr as u64);
    let round_up = |x: u64, a: u64| x.max(a).div_ceil(a).checked_mul(a);
    let mc = round_up(t.mc as u64, mr)?;
    let nc = round_up(t.nc as u64, nr)?;
    let kc = (t.kc as u64).max(1);
    let threads = (t.threads as u64).clamp(1, m.div_ceil(mc).max(1));
    // Panels are whole 64-byte lines of 16 floats.
    let panel = |a: u64, b: u64| a.checked_mul(b)?.div_ceil(16).checked_mul(16);
    let (a_panel, b_panel) = (panel(mc, kc)?, panel(kc, nc)?);
    let floats = match t.order {
        // One B panel shared, an A panel per thread.
        LoopOrder::Nkm => threads.checked_mul(a_panel)?.checked_add(b_panel)?,
        // An A and a B panel per thread.
        LoopOrder::Mkn => threads.checked_mul(a_panel.checked_add(b_panel)?)?,
    };
    let lists = sum_of_products(&[&[threads, ENTRY], &[m.div_ceil(mc), ENTRY]])?;
    floats.checked_mul(F32)?.checked_add(lists)
}

/// Host bytes a conv candidate allocates beyond the task's buffers: im2col columns and the
/// GEMM's panels, or the direct kernel's work lists. Like [`candidate_bytes`].
fn conv_bytes(conv: &Conv, s: &StrategyMap) -> Option<u64> {
    let c = |x: usize| x as u64;
    match get_str(s, "algo") {
        Ok("im2col") => {
            let Ok(t) = gemm_tiling_of(s) else {
                return Some(0);
            };
            let cols = [conv.cin, conv.kh, conv.kw, conv.ho, conv.wo].map(c);
            product(&cols)?
                .checked_mul(F32)?
                .checked_add(gemm_bytes(&t, c(conv.cout))?)
        }
        Ok(_) => {
            let Some(threads) = get_int(s, "threads")
                .ok()
                .and_then(|t| u64::try_from(t).ok())
            else {
                return Some(0);
            };
            // Each (image, channel) plane is listed twice; a list per thread.
            sum_of_products(&[&[2, c(conv.n), c(conv.cout), ENTRY], &[threads, ENTRY]])
        }
        Err(_) => Some(0),
    }
}

/// Host bytes a candidate allocates beyond the task's buffers; `None` when the count
/// overflows u64. A strategy that does not parse needs nothing (it fails to build).
fn candidate_bytes(p: &Prepared, s: &StrategyMap) -> Option<u64> {
    let int = |name: &str| get_int(s, name).ok().and_then(|v| u64::try_from(v).ok());
    match p {
        Prepared::Gemm { m, .. } => match gemm_tiling_of(s) {
            Ok(t) => gemm_bytes(&t, *m as u64),
            Err(_) => Some(0),
        },
        Prepared::Conv { conv, .. } => conv_bytes(conv, s),
        Prepared::Row { x, len, .. } => {
            let (Some(rb), Some(threads)) = (int("row_block"), int("threads")) else {
                return Some(0);
            };
            let items = (x.len() as u64).div_ceil(rb.checked_mul(*len as u64)?.max(1));
            sum_of_products(&[&[threads, ENTRY], &[items, ENTRY]])
        }
        Prepared::Elem { a, .. } => {
            let (Some(tile), Some(threads)) = (int("tile"), int("threads")) else {
                return Some(0);
            };
            let items = (a.len() as u64).div_ceil(tile.max(1));
            sum_of_products(&[&[threads, ENTRY], &[items, ENTRY]])
        }
    }
}

impl Prepared {
    /// Host bytes the prepared task holds, with one output buffer.
    fn resident_bytes(&self) -> u64 {
        let floats = match self {
            Prepared::Gemm {
                a, b, reference, ..
            } => a.len() + b.len() + 2 * reference.len(),
            Prepared::Conv {
                x, w, reference, ..
            } => x.len() + w.len() + 2 * reference.len(),
            Prepared::Row { x, reference, .. } => x.len() + 2 * reference.len(),
            Prepared::Elem {
                a, b, reference, ..
            } => a.len() + b.len() + 2 * reference.len(),
        };
        floats as u64 * F32
    }
}

impl CpuRunner {
    /// The `build_oom` reason when `task`'s buffers would exceed the cap (or their size
    /// overflows), `None` when they fit.
    pub(super) fn task_over_cap(&self, task: &TuningTask) -> Result<Option<String>, MeasureError> {
        let need = match task_bytes(task) {
            Ok(need) => need,
            Err(MeasureError::TooLarge(what)) => {
                return Ok(Some(format!(
                    "{what}; its buffers would exceed the cpu runner's {} B cap",
                    self.max_bytes
                )))
            }
            Err(e) => return Err(e),
        };
        Ok(need.filter(|&n| n <= self.max_bytes).is_none().then(|| {
            format!(
                "{} needs {} B of host memory (inputs, reference, output), over the cpu \
                 runner's {} B cap",
                task.op.op_type,
                shown(need),
                self.max_bytes
            )
        }))
    }

    /// The `build_oom` reason when candidate `s` on the prepared task would exceed the cap,
    /// `None` when it fits.
    pub(super) fn candidate_over_cap(&self, p: &Prepared, s: &StrategyMap) -> Option<String> {
        let task = p.resident_bytes();
        let own = candidate_bytes(p, s);
        let need = own.and_then(|o| o.checked_add(task));
        need.filter(|&n| n <= self.max_bytes).is_none().then(|| {
            format!(
                "the candidate needs {} B of host memory ({task} B for the task's buffers, {} B \
                 for its packing panels, im2col columns and thread work lists), over the cpu \
                 runner's {} B cap",
                shown(need),
                shown(own),
                self.max_bytes
            )
        })
    }
}
