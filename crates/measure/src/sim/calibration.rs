//! Calibration of the simulated Ascend910B2 against real MatMul times: records of CANN's
//! MatMul tiling repository (shape, measured µs), the simulator's best time per shape, and how
//! well the two track each other (rank correlation, ratio spread).

use std::collections::BTreeMap;
use tunebank_key::StrategyMap;

use super::cube::CubeTiling;
use super::SimRunner;
use crate::{value_to_json, Measure, TuningTask};
use tunebank_key::CUBE_TILING_PARAMS;
use tunebank_key::{CubeMath, DType, Format, ImplMode, OpDescriptor, SocSpec, TensorDesc};

/// One real measurement: a (batched) fp16 MatMul on an Ascend910B2.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationRecord {
    /// Independent products.
    pub batch: u64,
    /// Rows.
    pub m: u64,
    /// Reduction length.
    pub k: u64,
    /// Columns.
    pub n: u64,
    /// The output is float32 (else float16).
    pub out_fp32: bool,
    /// A bias is added.
    pub bias: bool,
    /// Measured kernel time in µs.
    pub real_us: f64,
}

impl CalibrationRecord {
    /// Parses one line of the repository dump (`shape.A_shape` FRACTAL_NZ
    /// `[batch, K1, M1, 16, 16]`, `shape.B_shape` `[K, N1, 1, 1, 16]`, `cost_time` µs).
    /// `None` for a line that is not such a record, or whose time is a failure marker
    /// (≥ 10⁶ µs).
    pub fn from_json_line(line: &str) -> Option<CalibrationRecord> {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let s = v.get("shape")?;
        let a: Vec<u64> = serde_json::from_value(s.get("A_shape")?.clone()).ok()?;
        let b: Vec<u64> = serde_json::from_value(s.get("B_shape")?.clone()).ok()?;
        let real_us = v.get("cost_time")?.as_f64()?;
        if a.len() != 5 || b.len() != 5 || !(real_us > 0.0 && real_us < 1e6) {
            return None;
        }
        let rec = CalibrationRecord {
            batch: a[0].max(1),
            m: a[2].checked_mul(a[3])?,
            k: a[1].checked_mul(a[4])?,
            n: b[1].checked_mul(b[4])?,
            out_fp32: s.get("C_dtype")?.as_str()? == "float32",
            bias: s
                .get("bias_flag")
                .and_then(|b| b.as_bool())
                .unwrap_or(false),
            real_us,
        };
        (rec.m > 0 && rec.k > 0 && rec.n > 0).then_some(rec)
    }

    /// The tuning task of this record on an Ascend910B2 (NZ operands, as the repository's
    /// kernels see them).
    pub fn task(&self) -> TuningTask {
        let t = |shape: Vec<i64>, dtype: DType| TensorDesc {
            shape: shape.clone(),
            ori_shape: shape,
            dtype,
            format: Format::FractalNz,
            ori_format: Format::ND,
        };
        let (b, m, k, n) = (
            self.batch as i64,
            self.m as i64,
            self.k as i64,
            self.n as i64,
        );
        let batched = |s: Vec<i64>| {
            if b > 1 {
                [vec![b], s].concat()
            } else {
                s
            }
        };
        let mut inputs = vec![
            t(batched(vec![m, k]), DType::Float16),
            t(vec![k, n], DType::Float16),
        ];
        if self.bias {
            inputs.push(t(vec![n], DType::Float32));
        }
        let out = if self.out_fp32 {
            DType::Float32
        } else {
            DType::Float16
        };
        TuningTask::new(OpDescriptor {
            op_type: if b > 1 { "BatchMatMul" } else { "MatMul" }.into(),
            fused_ops: vec![],
            inputs,
            outputs: vec![t(batched(vec![m, n]), out)],
            attrs: BTreeMap::new(),
            impl_mode: ImplMode::HighPerformance,
            cube_math: CubeMath::Native,
            soc: SocSpec::from_version("Ascend910B2").expect("known SoC"),
            origin: None,
        })
    }
}

impl CalibrationRecord {
    /// Useful floating-point operations: 2·batch·M·K·N.
    pub fn flops(&self) -> f64 {
        2.0 * self.batch as f64 * self.m as f64 * self.k as f64 * self.n as f64
    }

    /// Bytes of A, B and C as stored: fp16 inputs, an fp16 or fp32 output.
    pub fn bytes(&self) -> f64 {
        let out = if self.out_fp32 { 4.0 } else { 2.0 };
        let (b, m, k, n) = (
            self.batch as f64,
            self.m as f64,
            self.k as f64,
            self.n as f64,
        );
        2.0 * b * m * k + 2.0 * k * n + out * b * m * n
    }
}

/// A roofline's time for each record, up to a constant factor: `max(flops / ridge, bytes)`.
/// With `ridge` = peak FLOP/s ÷ bandwidth (FLOPs per byte) this orders records exactly as
/// `max(flops / peak, bytes / bandwidth)` does, so [`ROOFLINE_RIDGES`] spans every roofline
/// as far as rankings go.
pub fn roofline(records: &[CalibrationRecord], ridge: f64) -> Vec<f64> {
    records
        .iter()
        .map(|r| (r.flops() / ridge).max(r.bytes()))
        .collect()
}

/// Ridge points (FLOPs per byte) to compare against: 10^0.5 to 10^4 in steps of 10^(1/16),
/// from bandwidth-bound everywhere to compute-bound everywhere (Ascend910B2: ≈ 220).
pub const ROOFLINE_RIDGES: std::ops::RangeInclusive<i32> = 8..=64;

/// The ridge point of step `i` of [`ROOFLINE_RIDGES`]: 10^(i/16).
pub fn ridge(i: i32) -> f64 {
    10f64.powf(f64::from(i) / 16.0)
}

/// How well `pred` orders shapes of equal work: over the pairs of records whose FLOPs differ
/// by at most `work_ratio` and whose real times differ by at least `time_ratio`, the share
/// that `pred` orders as the real times are (an exact tie counts half), and the number of
/// such pairs. A roofline sees little but FLOPs here; a model of tiles, tails and pipelines
/// should see more.
pub fn equal_work_order(
    flops: &[f64],
    pred: &[f64],
    real: &[f64],
    work_ratio: f64,
    time_ratio: f64,
) -> (f64, usize) {
    let (mut agree, mut pairs) = (0.0, 0usize);
    for i in 0..real.len() {
        for j in i + 1..real.len() {
            let similar = flops[i].max(flops[j]) <= work_ratio * flops[i].min(flops[j]);
            let distinct = real[i].max(real[j]) >= time_ratio * real[i].min(real[j]);
            if !(similar && distinct) {
                continue;
            }
            pairs += 1;
            if pred[i] == pred[j] {
                agree += 0.5;
            } else if (pred[i] < pred[j]) == (real[i] < real[j]) {
                agree += 1.0;
            }
        }
    }
    (agree / pairs.max(1) as f64, pairs)
}

/// The simulator's default and best-found times for one task: the default tiling and
/// `samples` random valid strategies drawn (seeded) from the task's parameter lists.
pub fn sim_default_and_best(task: &TuningTask, samples: usize, seed: u64) -> Option<(f64, f64)> {
    let mut sim = SimRunner::new();
    let default = sim.default_strategy(task).ok()?;
    let d = SimRunner::simulate(task, &default).ok()?.ok()?;
    let (m, soc, c, _) = SimRunner::model(task).ok()?;
    let super::ops::OpModel::Cube { problem, .. } = m else {
        return None;
    };
    let (params, _, _) = super::cube::space(&problem, soc, c);
    let mut best = d;
    let mut x = seed ^ 0x2545_F491_4F6C_DD1D;
    let mut next = |n: usize| {
        x = super::splitmix(x);
        (x % n as u64) as usize
    };
    let mut tries = 0;
    let mut found = 0;
    while found < samples && tries < samples * 50 {
        tries += 1;
        let s: StrategyMap = params
            .iter()
            .map(|p| {
                let v = &p.values[next(p.values.len())];
                (p.name.clone(), value_to_json(v))
            })
            .collect();
        debug_assert_eq!(s.len(), CUBE_TILING_PARAMS.len());
        if CubeTiling::from_strategy(&s)
            .ok()
            .and_then(|t| t.validate(&problem, soc, c).ok())
            .is_none()
        {
            continue;
        }
        found += 1;
        if let Ok(Ok(us)) = SimRunner::simulate(task, &s) {
            best = best.min(us);
        }
    }
    Some((d, best))
}

/// How well simulated times track real ones.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationReport {
    /// Records compared.
    pub records: usize,
    /// Spearman rank correlation of simulated best vs real time.
    pub spearman: f64,
    /// Quantiles (10 %, 25 %, 50 %, 75 %, 90 %) of simulated best / real.
    pub ratio_quantiles: [f64; 5],
    /// Same quantiles with the simulator's launch overhead removed from its time.
    pub kernel_ratio_quantiles: [f64; 5],
    /// Spearman rank correlation of the simulated default vs real time.
    pub spearman_default: f64,
}

/// Compares `(simulated best µs, simulated default µs, real µs)` triples; `launch_us` is the
/// simulator's launch overhead, removed for the kernel-only ratios.
pub fn report(triples: &[(f64, f64, f64)], launch_us: f64) -> CalibrationReport {
    let best: Vec<f64> = triples.iter().map(|t| t.0).collect();
    let default: Vec<f64> = triples.iter().map(|t| t.1).collect();
    let real: Vec<f64> = triples.iter().map(|t| t.2).collect();
    let ratios: Vec<f64> = triples.iter().map(|t| t.0 / t.2).collect();
    let kratios: Vec<f64> = triples
        .iter()
        .map(|t| (t.0 - launch_us).max(1e-3) / t.2)
        .collect();
    CalibrationReport {
        records: triples.len(),
        spearman: spearman(&best, &real),
        ratio_quantiles: quantiles(&ratios),
        kernel_ratio_quantiles: quantiles(&kratios),
        spearman_default: spearman(&default, &real),
    }
}

fn quantiles(xs: &[f64]) -> [f64; 5] {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let q = |p: f64| {
        if v.is_empty() {
            f64::NAN
        } else {
            v[((v.len() - 1) as f64 * p).round() as usize]
        }
    };
    [q(0.1), q(0.25), q(0.5), q(0.75), q(0.9)]
}

/// Spearman's rank correlation (average ranks for ties); NaN where [`spearman_checked`] has no
/// answer.
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    spearman_checked(a, b).unwrap_or(f64::NAN)
}

/// Spearman's rank correlation (Pearson over average ranks); `None` below 3 pairs, for slices of
/// different lengths, or with no spread on either side.
pub fn spearman_checked(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() < 3 || x.len() != y.len() {
        return None;
    }
    let (rx, ry) = (ranks(x), ranks(y));
    let n = rx.len() as f64;
    let (mx, my) = (rx.iter().sum::<f64>() / n, ry.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in rx.iter().zip(&ry) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

fn ranks(xs: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    idx.sort_by(|&i, &j| xs[i].total_cmp(&xs[j]));
    let mut r = vec![0.0; xs.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && xs[idx[j + 1]] == xs[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0;
        for &k in &idx[i..=j] {
            r[k] = avg;
        }
        i = j + 1;
    }
    r
}
