//! The clock of the backward timelines (`timeline.rs` for an inference graph, `step.rs` for a
//! training step): backward problems (an op, a GEMM, element streams, a cube anchor's weight
//! and data gradients) timed on the simulator, at the op bank's strategy when the bank holds the
//! problem's key and the simulator accepts it, else at the simulator's default.

use std::collections::BTreeMap;

use tunebank_bank::{Bank, Lookup};
use tunebank_key::{
    AttrValue, CubeMath, DType, Format, ImplMode, OpDescriptor, SocSpec, TensorDesc,
};
use tunebank_measure::sim::SimRunner;
use tunebank_measure::{Measure, TuningTask};

use super::GdatError;

/// Times backward problems on the simulator, at the op bank's strategy when it has one.
pub(super) struct Clock<'a> {
    sim: SimRunner,
    soc: SocSpec,
    op_bank: Option<&'a Bank>,
    cache: BTreeMap<String, f64>,
}

impl<'a> Clock<'a> {
    /// A clock for `soc`, reading tuned strategies from `op_bank`.
    pub(super) fn new(soc: &SocSpec, op_bank: Option<&'a Bank>) -> Clock<'a> {
        Clock {
            sim: SimRunner::new(),
            soc: soc.clone(),
            op_bank,
            cache: BTreeMap::new(),
        }
    }

    pub(super) fn tensor(shape: &[i64], dtype: DType) -> TensorDesc {
        TensorDesc {
            shape: shape.to_vec(),
            ori_shape: shape.to_vec(),
            dtype,
            format: Format::ND,
            ori_format: Format::ND,
        }
    }

    fn op(&self, op_type: &str, inputs: &[&[i64]], output: &[i64], dtype: DType) -> OpDescriptor {
        OpDescriptor {
            op_type: op_type.into(),
            fused_ops: vec![],
            inputs: inputs.iter().map(|s| Self::tensor(s, dtype)).collect(),
            outputs: vec![Self::tensor(output, dtype)],
            attrs: BTreeMap::new(),
            impl_mode: ImplMode::HighPerformance,
            cube_math: CubeMath::Native,
            soc: self.soc.clone(),
            origin: None,
        }
    }

    /// The time of `op`: the bank's strategy if it holds one the simulator runs, else the
    /// default's.
    pub(super) fn time(&mut self, op: OpDescriptor) -> Result<f64, GdatError> {
        let memo = serde_json::to_string(&op).unwrap_or_default();
        if let Some(&t) = self.cache.get(&memo) {
            return Ok(t);
        }
        let task = TuningTask::new(op);
        let mut strategy = None;
        if let (Some(bank), Ok(key)) = (self.op_bank, task.op.key()) {
            if let Ok(Lookup::Hit(hit)) = bank.lookup(&key) {
                strategy = Some(hit.answer.strategy.clone());
            }
        }
        let banked = match strategy {
            Some(s) => SimRunner::simulate(&task, &s)?.ok(),
            None => None,
        };
        let us = match banked {
            Some(us) => us,
            None => {
                let d = self.sim.default_strategy(&task)?;
                SimRunner::simulate(&task, &d)?.map_err(|reason| {
                    GdatError::Simulator(format!("{}: {reason}", task.op.op_type))
                })?
            }
        };
        self.cache.insert(memo, us);
        Ok(us)
    }

    /// A GEMM `[b, m, k] × [b, k, n]`.
    pub(super) fn gemm(
        &mut self,
        b: i64,
        m: i64,
        k: i64,
        n: i64,
        dtype: DType,
    ) -> Result<f64, GdatError> {
        let op = if b > 1 {
            self.op(
                "BatchMatMulV2",
                &[&[b, m, k], &[b, k, n]],
                &[b, m, n],
                dtype,
            )
        } else {
            self.op("MatMulV2", &[&[m, k], &[k, n]], &[m, n], dtype)
        };
        self.time(op)
    }

    /// `passes` two-input element streams over `shape`.
    pub(super) fn vector(
        &mut self,
        shape: &[i64],
        passes: u32,
        dtype: DType,
    ) -> Result<f64, GdatError> {
        if passes == 0 || shape.is_empty() {
            return Ok(0.0);
        }
        let op = self.op("Mul", &[shape, shape], shape, dtype);
        Ok(f64::from(passes) * self.time(op)?)
    }

    /// (dW, dX) of a cube anchor.
    pub(super) fn cube_backward(&mut self, d: &OpDescriptor) -> Result<(f64, f64), GdatError> {
        let shape = |t: Option<&TensorDesc>| t.map(|t| t.ori_shape.clone()).unwrap_or_default();
        let dtype = d.inputs.first().map(|t| t.dtype).unwrap_or(DType::Float16);
        let (x, w, y) = (
            shape(d.inputs.first()),
            shape(d.inputs.get(1)),
            shape(d.outputs.first()),
        );
        if d.op_type == "Conv2D" {
            let [n, cin, _, _] = x[..] else { return bad(d) };
            let [cout, _, r, s] = w[..] else {
                return bad(d);
            };
            let [_, _, ho, wo] = y[..] else { return bad(d) };
            let g = match d.attrs.get("groups") {
                Some(AttrValue::Int(g)) if *g > 0 => *g,
                _ => 1,
            };
            let (cin_g, cout_g, pos) = (cin / g, cout / g, n * ho * wo);
            let dw = self.gemm(g, cout_g, pos, cin_g * r * s, dtype)?;
            let dx = self.gemm(g, pos, cout_g * r * s, cin_g, dtype)?;
            return Ok((dw, dx));
        }
        // MatMul: logical [.., m, k] × [.., k, n]; both operand gradients are GEMMs of the
        // forward's size: dA = dY·Bᵀ ([m, n] × [n, k]), dB = Aᵀ·dY ([k, m] × [m, n]).
        let (Some(&n), Some(&m)) = (y.last(), y.len().checked_sub(2).and_then(|i| y.get(i))) else {
            return bad(d);
        };
        let b: i64 = y[..y.len() - 2].iter().product::<i64>().max(1);
        let xs = &x[x.len().saturating_sub(2)..];
        let k = if xs.len() == 2 {
            if xs[0] == m {
                xs[1]
            } else {
                xs[0]
            }
        } else {
            return bad(d);
        };
        let dw = self.gemm(b, k, m, n, dtype)?;
        let dx = self.gemm(b, m, n, k, dtype)?;
        Ok((dw, dx))
    }
}

fn bad<T>(d: &OpDescriptor) -> Result<T, GdatError> {
    Err(GdatError::Simulator(format!(
        "{}: unexpected operand shapes {:?}",
        d.op_type,
        d.inputs.iter().map(|t| &t.ori_shape).collect::<Vec<_>>()
    )))
}

/// Bytes of one element of `d`.
pub(super) fn dtype_size(d: DType) -> u64 {
    match d {
        DType::Float64 | DType::Int64 => 8,
        DType::Float32 | DType::Int32 => 4,
        DType::Float16 | DType::Bfloat16 | DType::Int16 => 2,
        DType::Int8 | DType::Uint8 | DType::Bool => 1,
    }
}
