//! The CPU runner (`cpu`): real kernels on the host whose tiling comes from the strategy.
//!
//! Ops: MatMul/BatchMatMul/Gemm (packed GEMM: cache blocks `mc`/`kc`/`nc`, micro-tile, loop
//! order, threads), Conv2D (`im2col` + that GEMM, or `direct`), Softmax and LayerNorm over the
//! last axis (row block, vector lanes, threads), and elementwise Add/Sub/Mul/Relu/Sigmoid/Tanh/
//! Gelu (tile length, threads). Everything computes in f32 whatever the task's dtypes; inputs
//! are seeded uniform values in [−1, 1].
//!
//! Each candidate's output is checked against a plain f64 reference before its time counts
//! (`precision_fail` otherwise). Then warm-up runs, timed repeats, samples in µs. Only one
//! measurement runs at a time in a process (a global lock), so candidates do not compete.
//!
//! Host memory is capped (`CpuRunner::with_max_bytes`, `DEFAULT_MAX_BYTES`): the bytes a
//! task's buffers and a candidate's own buffers need are counted with checked arithmetic
//! before anything is allocated (`memory.rs`), and a candidate over the cap is a `build_oom`
//! failure naming both numbers, never an aborted process.

mod candidate;
pub mod gemm;
pub use self::candidate::check_output;
pub use self::candidate::OutputMismatch;
pub(crate) mod kernels;
mod memory;

use std::collections::HashMap;
use std::sync::Mutex;

use search_strategies::{Parameter, Value};

use self::gemm::{GemmTiling, LoopOrder, MicroTile};
use self::kernels::{Conv, ElemOp, RowOp};
use super::{
    get_int, get_str, CandidateFailure, Measure, MeasureError, Outcome, StrategyMap, TaskSpace,
    TimingSettings, TuningTask,
};

/// Serialises measurements within the process.
static MEASURE_LOCK: Mutex<()> = Mutex::new(());

/// The default cap on the host memory one candidate may use (the task's inputs, reference and
/// output plus the candidate's own buffers): 1 GiB, the memory the command line assumes per
/// `cpu` worker when it caps `TUNING_PARALLEL_NUM` by the memory available.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// The CPU runner. It keeps the inputs and reference output of the last task it saw.
#[derive(Debug)]
pub struct CpuRunner {
    timing: TimingSettings,
    max_threads: usize,
    max_bytes: u64,
    prepared: Option<(TuningTask, Prepared)>,
}

impl Default for CpuRunner {
    fn default() -> Self {
        Self::new()
    }
}

/// A task's kernel inputs and reference output.
#[derive(Debug)]
enum Prepared {
    Gemm {
        batch: usize,
        m: usize,
        k: usize,
        n: usize,
        a: Vec<f32>,
        b: Vec<f32>,
        b_shared: bool,
        reference: Vec<f32>,
    },
    Conv {
        conv: Conv,
        x: Vec<f32>,
        w: Vec<f32>,
        reference: Vec<f32>,
    },
    Row {
        op: RowOp,
        len: usize,
        x: Vec<f32>,
        reference: Vec<f32>,
    },
    Elem {
        op: ElemOp,
        a: Vec<f32>,
        b: Vec<f32>,
        reference: Vec<f32>,
    },
}

/// Deterministic inputs in [−1, 1].
fn inputs(len: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn to_usize(v: Vec<u64>) -> Vec<usize> {
    v.into_iter().map(|d| d as usize).collect()
}

impl CpuRunner {
    /// A runner with the default timing (2 warm-ups, 10 repeats, 10 s per candidate) and up to
    /// as many threads as the host offers.
    pub fn new() -> Self {
        CpuRunner {
            timing: TimingSettings::default(),
            max_threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            max_bytes: DEFAULT_MAX_BYTES,
            prepared: None,
        }
    }

    /// Caps the host memory one candidate may use, in bytes (default [`DEFAULT_MAX_BYTES`]):
    /// the task's inputs, reference and output, plus the candidate's packing panels, im2col
    /// columns and per-thread work lists. A task or candidate over the cap is a `build_oom`
    /// failure of each candidate concerned, naming the bytes needed and the cap; nothing is
    /// allocated for it.
    pub fn with_max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// The cap [`CpuRunner::with_max_bytes`] set.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// Sets the timing settings.
    pub fn with_timing(mut self, timing: TimingSettings) -> Self {
        self.timing = timing;
        self
    }

    /// Caps the thread counts the space offers.
    pub fn with_max_threads(mut self, n: usize) -> Self {
        self.max_threads = n.max(1);
        self
    }

    fn thread_values(&self) -> Vec<i64> {
        let mut v: Vec<i64> = [1, 2, 4, 8, 16]
            .into_iter()
            .filter(|&t| t as usize <= self.max_threads)
            .collect();
        v.push(self.max_threads as i64);
        v.sort_unstable();
        v.dedup();
        v
    }

    fn kind(task: &TuningTask) -> Result<OpKind, MeasureError> {
        let op = task.op_type();
        Ok(match op.as_str() {
            "matmul" | "matmulv2" | "gemm" | "batchmatmul" | "batchmatmulv2" => OpKind::Gemm,
            "conv2d" => OpKind::Conv,
            "softmax" | "softmaxv2" => OpKind::Row(RowOp::Softmax),
            "layernorm" => OpKind::Row(RowOp::LayerNorm),
            _ => match ElemOp::from_op_type(&op) {
                Some(e) => OpKind::Elem(e),
                None => {
                    return Err(MeasureError::Unsupported {
                        runner: "cpu".into(),
                        what: format!("op type {}", task.op.op_type),
                    })
                }
            },
        })
    }

    fn prepare(task: &TuningTask) -> Result<Prepared, MeasureError> {
        Ok(match Self::kind(task)? {
            OpKind::Gemm => {
                let (batch, m, k, n, b_shared) = gemm_dims(task)?;
                let a = inputs(batch * m * k, 1);
                let b = inputs(if b_shared { k * n } else { batch * k * n }, 2);
                let mut reference = Vec::with_capacity(batch * m * n);
                for i in 0..batch {
                    let bb = if b_shared {
                        &b[..]
                    } else {
                        &b[i * k * n..(i + 1) * k * n]
                    };
                    reference.extend(gemm::reference(m, k, n, &a[i * m * k..(i + 1) * m * k], bb));
                }
                Prepared::Gemm {
                    batch,
                    m,
                    k,
                    n,
                    a,
                    b,
                    b_shared,
                    reference,
                }
            }
            OpKind::Conv => {
                let g = crate::sim::conv::ConvGeometry::from_task(task)?.ungrouped("cpu")?;
                let conv = Conv {
                    n: g.n as usize,
                    cin: g.cin as usize,
                    h: g.h as usize,
                    w: g.w as usize,
                    cout: g.cout as usize,
                    kh: g.kh as usize,
                    kw: g.kw as usize,
                    stride: (g.stride.0 as usize, g.stride.1 as usize),
                    pad: (g.pads.0 as usize, g.pads.2 as usize),
                    ho: g.ho() as usize,
                    wo: g.wo() as usize,
                };
                if g.dilation != (1, 1) {
                    return Err(MeasureError::Unsupported {
                        runner: "cpu".into(),
                        what: "dilated Conv2D".into(),
                    });
                }
                let x = inputs(conv.n * conv.cin * conv.h * conv.w, 3);
                let w = inputs(conv.cout * conv.cin * conv.kh * conv.kw, 4);
                let reference = conv.reference(&x, &w);
                Prepared::Conv {
                    conv,
                    x,
                    w,
                    reference,
                }
            }
            OpKind::Row(op) => {
                let shape = to_usize(task.input_shape(0)?);
                let len = *shape.last().unwrap_or(&1);
                let x: Vec<f32> = inputs(shape.iter().product(), 5)
                    .into_iter()
                    .map(|v| v * 4.0)
                    .collect();
                let reference = kernels::row_reference(op, &x, len);
                Prepared::Row {
                    op,
                    len,
                    x,
                    reference,
                }
            }
            OpKind::Elem(op) => {
                let n: usize = to_usize(task.output_shape(0)?).iter().product();
                let a = inputs(n, 6);
                let b = if op.arity() == 2 {
                    // Broadcast inputs are materialised at the output's size.
                    inputs(n, 7)
                } else {
                    Vec::new()
                };
                let reference = op.reference(&a, &b);
                Prepared::Elem {
                    op,
                    a,
                    b,
                    reference,
                }
            }
        })
    }

    /// The default (baseline) GEMM blocking: 64×128×512 cache blocks, the 4×8 micro-tile, one
    /// thread.
    pub fn default_gemm() -> GemmTiling {
        GemmTiling {
            mc: 64,
            kc: 128,
            nc: 512,
            micro: MicroTile::M4x8,
            order: LoopOrder::Nkm,
            threads: 1,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum OpKind {
    Gemm,
    Conv,
    Row(RowOp),
    Elem(ElemOp),
}

/// (batch, M, K, N, B shared) of a MatMul-like task.
fn gemm_dims(task: &TuningTask) -> Result<(usize, usize, usize, usize, bool), MeasureError> {
    let a = to_usize(task.input_shape(0)?);
    let b = to_usize(task.input_shape(1)?);
    if a.len() < 2 || b.len() < 2 {
        return Err(MeasureError::InvalidTask(format!(
            "{}: inputs must have rank ≥ 2",
            task.op.op_type
        )));
    }
    let ta =
        task.attr_bool("transpose_x1") || task.attr_bool("transpose_a") || task.attr_bool("adj_x1");
    let tb =
        task.attr_bool("transpose_x2") || task.attr_bool("transpose_b") || task.attr_bool("adj_x2");
    if ta || tb || task.attr_int("transA") == Some(1) || task.attr_int("transB") == Some(1) {
        return Err(MeasureError::Unsupported {
            runner: "cpu".into(),
            what: "transposed MatMul operands".into(),
        });
    }
    let (m, k) = (a[a.len() - 2], a[a.len() - 1]);
    let (k2, n) = (b[b.len() - 2], b[b.len() - 1]);
    if k != k2 {
        return Err(MeasureError::InvalidTask(format!(
            "{}: reduction lengths differ ({k} vs {k2})",
            task.op.op_type
        )));
    }
    let product = |dims: &[usize]| dims.iter().try_fold(1usize, |p, &d| p.checked_mul(d));
    match (product(&a[..a.len() - 2]), product(&b[..b.len() - 2])) {
        (Some(batch), Some(b_batch)) => Ok((batch.max(1), m, k, n, b_batch <= 1)),
        _ => Err(MeasureError::TooLarge(format!(
            "{} {a:?} · {b:?}: the batch count overflows",
            task.op.op_type
        ))),
    }
}

/// A strategy that is not a tiling of the runner's kernel: the reason names the parameter and
/// what was expected (a candidate's `build_fail` reason).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct InvalidTiling {
    /// The parameter and what was expected.
    pub reason: String,
}

impl InvalidTiling {
    /// A strategy that is not a tiling is the request's (its strategy).
    pub fn kind(&self) -> tunebank_failure::FailureKind {
        tunebank_failure::FailureKind::Input
    }
}

impl From<InvalidTiling> for String {
    fn from(e: InvalidTiling) -> String {
        e.reason
    }
}

/// The GEMM blocking a strategy names (`mc`, `kc`, `nc`, `micro`, `loop_order`, `threads`),
/// or why it names none.
pub fn gemm_tiling_of(strategy: &StrategyMap) -> Result<GemmTiling, InvalidTiling> {
    gemm_tiling_reason(strategy).map_err(|reason| InvalidTiling { reason })
}

/// [`gemm_tiling_of`] with the reason as text.
fn gemm_tiling_reason(strategy: &StrategyMap) -> Result<GemmTiling, String> {
    let pos = |n: &str| -> Result<usize, String> {
        let v = get_int(strategy, n)?;
        usize::try_from(v)
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| format!("parameter {n} = {v} must be positive"))
    };
    let micro = get_str(strategy, "micro")?;
    let order = get_str(strategy, "loop_order")?;
    Ok(GemmTiling {
        mc: pos("mc")?,
        kc: pos("kc")?,
        nc: pos("nc")?,
        micro: MicroTile::parse(micro).ok_or_else(|| format!("unknown micro tile {micro:?}"))?,
        order: LoopOrder::parse(order).ok_or_else(|| format!("unknown loop order {order:?}"))?,
        threads: pos("threads")?,
    })
}

fn gemm_strategy(t: &GemmTiling) -> StrategyMap {
    let mut s = StrategyMap::new();
    s.insert("mc".into(), t.mc.into());
    s.insert("kc".into(), t.kc.into());
    s.insert("nc".into(), t.nc.into());
    s.insert("micro".into(), t.micro.name().into());
    s.insert("loop_order".into(), t.order.name().into());
    s.insert("threads".into(), t.threads.into());
    s
}

fn ints(name: &str, v: &[i64]) -> Parameter {
    Parameter::ints(name, v)
}

fn strs(name: &str, v: &[&str]) -> Parameter {
    Parameter::new(name, v.iter().map(|s| Value::Str(s.to_string())).collect())
}

/// Values of `cands` below `extent` plus the smallest at or above it.
fn fit(cands: &[i64], extent: usize) -> Vec<i64> {
    let extent = extent as i64;
    let mut out: Vec<i64> = cands.iter().copied().filter(|&v| v < extent).collect();
    if let Some(&v) = cands.iter().find(|&&v| v >= extent) {
        out.push(v);
    }
    out
}

fn with(mut v: Vec<i64>, x: i64) -> Vec<i64> {
    v.push(x);
    v.sort_unstable();
    v.dedup();
    v
}

fn gemm_space_params(m: usize, k: usize, n: usize, threads: Vec<i64>) -> Vec<Parameter> {
    let d = CpuRunner::default_gemm();
    vec![
        ints("mc", &with(fit(&[48, 96, 144, 192, 384], m), d.mc as i64)),
        ints("kc", &with(fit(&[128, 256, 384, 512], k), d.kc as i64)),
        ints("nc", &with(fit(&[512, 1024, 2048, 4096], n), d.nc as i64)),
        Parameter::new(
            "micro",
            MicroTile::available()
                .into_iter()
                .map(|m| Value::Str(m.name().to_string()))
                .collect(),
        ),
        strs("loop_order", &["nkm", "mkn"]),
        ints("threads", &threads),
    ]
}

impl Measure for CpuRunner {
    fn identity(&self) -> String {
        format!("cpu:{}:{}t", std::env::consts::ARCH, self.max_threads)
    }

    fn space(&mut self, task: &TuningTask) -> Result<TaskSpace, MeasureError> {
        let threads = self.thread_values();
        let mut constants = HashMap::new();
        let (params, restrictions) = match Self::kind(task)? {
            OpKind::Gemm => {
                let (_, m, k, n, _) = gemm_dims(task)?;
                (
                    gemm_space_params(m, k, n, threads),
                    vec![
                        "mc * kc * 4 <= 1048576".to_string(),
                        "kc * nc * 4 <= 8388608".to_string(),
                    ],
                )
            }
            OpKind::Conv => {
                let g = crate::sim::conv::ConvGeometry::from_task(task)?.ungrouped("cpu")?;
                // Saturating: these only pick the candidate lists.
                let (m, k, n) = (
                    g.cout as usize,
                    memory::saturating_product(&[g.cin, g.kh, g.kw]) as usize,
                    memory::saturating_product(&[g.ho(), g.wo()]) as usize,
                );
                let mut p = vec![strs("algo", &["im2col", "direct"])];
                p.extend(gemm_space_params(m, k, n, threads));
                p.push(ints("oc_block", &[1, 4, 8, 16]));
                let d = Self::default_gemm();
                constants.insert("MC0".to_string(), Value::Int(d.mc as i64));
                constants.insert("KC0".to_string(), Value::Int(d.kc as i64));
                constants.insert("NC0".to_string(), Value::Int(d.nc as i64));
                (
                    p,
                    vec![
                        "mc * kc * 4 <= 1048576".to_string(),
                        "kc * nc * 4 <= 8388608".to_string(),
                        // Parameters one algorithm ignores are pinned for the other.
                        "algo == 'direct' or oc_block == 1".to_string(),
                        "algo == 'im2col' or (mc == MC0 and kc == KC0 and nc == NC0 and micro == '4x8' and loop_order == 'nkm')".to_string(),
                    ],
                )
            }
            OpKind::Row(_) => {
                let shape = task.input_shape(0)?;
                let rows = (memory::saturating_product(&shape) / shape.last().copied().unwrap_or(1))
                    as usize;
                (
                    vec![
                        ints("row_block", &fit(&[1, 4, 16, 64, 256], rows)),
                        ints("lanes", &[1, 4, 8, 16]),
                        ints("threads", &threads),
                    ],
                    vec![],
                )
            }
            OpKind::Elem(_) => {
                let n = memory::saturating_product(&task.output_shape(0)?) as usize;
                (
                    vec![
                        ints("tile", &fit(&[1024, 4096, 16384, 65536, 262144], n)),
                        ints("threads", &threads),
                    ],
                    vec![],
                )
            }
        };
        Ok(TaskSpace::enumerate(params, &restrictions, &constants)?)
    }

    fn default_strategy(&mut self, task: &TuningTask) -> Result<StrategyMap, MeasureError> {
        let d = Self::default_gemm();
        let mut s = StrategyMap::new();
        match Self::kind(task)? {
            OpKind::Gemm => return Ok(gemm_strategy(&d)),
            OpKind::Conv => {
                s = gemm_strategy(&d);
                s.insert("algo".into(), "im2col".into());
                s.insert("oc_block".into(), 1.into());
            }
            OpKind::Row(_) => {
                let shape = task.input_shape(0)?;
                let rows = (memory::saturating_product(&shape) / shape.last().copied().unwrap_or(1))
                    as usize;
                s.insert(
                    "row_block".into(),
                    fit(&[1, 4, 16, 64, 256], rows)[0].into(),
                );
                s.insert("lanes".into(), 1.into());
                s.insert("threads".into(), 1.into());
            }
            OpKind::Elem(_) => {
                let n = memory::saturating_product(&task.output_shape(0)?) as usize;
                s.insert(
                    "tile".into(),
                    fit(&[1024, 4096, 16384, 65536, 262144], n)[0].into(),
                );
                s.insert("threads".into(), 1.into());
            }
        }
        Ok(s)
    }

    fn measure(
        &mut self,
        task: &TuningTask,
        candidates: &[StrategyMap],
    ) -> Result<Vec<Outcome>, MeasureError> {
        if self.prepared.as_ref().is_none_or(|(t, _)| t != task) {
            self.prepared = None;
            if let Some(reason) = self.task_over_cap(task)? {
                return Ok(vec![
                    Outcome::fail(CandidateFailure::BuildOom, reason);
                    candidates.len()
                ]);
            }
            self.prepared = Some((task.clone(), Self::prepare(task)?));
        }
        let (_, p) = self.prepared.as_ref().expect("prepared above");
        let _guard = MEASURE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        Ok(candidates
            .iter()
            .map(|s| self.run_candidate(p, s))
            .collect())
    }
}
