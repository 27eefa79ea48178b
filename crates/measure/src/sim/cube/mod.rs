//! The cube pipeline model shared by MatMul/BatchMatMul/Gemm and Conv2D (implicit GEMM):
//! TCubeTiling-style parameters, their constraints, Ascend C's default tiling, and the time of
//! one tiling as an MTE2 → MTE1 → cube → FixPipe pipeline per core (`pipeline.rs`).

mod pipeline;

use std::collections::HashMap;
use tunebank_key::StrategyMap;

use search_strategies::{Parameter, Value};

use super::soc::SocModel;
use super::{bounded, bounded_align, MAX_SIZE};
use crate::get_int;
use tunebank_key::CUBE_TILING_PARAMS;

/// Where the A operand of the cube comes from in global memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ASource {
    /// A plain matrix (MatMul): each A tile streams `rows × K` elements.
    Matrix {
        /// A is stored transposed (K × M): bursts run along M.
        transposed: bool,
        /// A is stored in FRACTAL_NZ (512-byte fractals) rather than ND.
        nz: bool,
    },
    /// A feature map in NC1HWC0 read by load3d (implicit im2col for Conv2D).
    Fmap {
        /// Input height.
        h: u64,
        /// Input width.
        w: u64,
        /// Output width.
        wo: u64,
        /// Output height.
        ho: u64,
        /// Effective kernel height ((kh − 1)·dilation + 1).
        kh_eff: u64,
        /// Stride along H.
        stride_h: u64,
        /// Channels padded to C1·C0.
        cin_pad: u64,
    },
}

/// One cube problem: `batch` independent `M×K · K×N` products. The time model assumes a
/// problem that passed [`GemmProblem::check_size`] (the op models check it when they build
/// one); its size methods do not check for overflow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmProblem {
    /// Independent products.
    pub batch: u64,
    /// Rows of A and C.
    pub m: u64,
    /// Reduction length.
    pub k: u64,
    /// Columns of B and C.
    pub n: u64,
    /// Input element bytes (2 fp16/bf16, 4 fp32, 1 int8).
    pub in_bytes: u64,
    /// Output element bytes.
    pub out_bytes: u64,
    /// A bias row is added (loaded once per N tile).
    pub bias: bool,
    /// A's layout in global memory.
    pub a: ASource,
    /// B is stored transposed (N × K).
    pub b_transposed: bool,
    /// B is stored in an NZ/FRACTAL_Z layout.
    pub b_nz: bool,
    /// B is shared by every batch (MatMul weights broadcast over a batch).
    pub b_shared: bool,
}

impl GemmProblem {
    /// K alignment (C0): 32 bytes of input elements.
    pub(crate) fn c0(&self) -> u64 {
        32 / self.in_bytes
    }

    /// M aligned to 16.
    pub(crate) fn ma(&self) -> u64 {
        align(self.m, 16)
    }

    /// N aligned to 16.
    pub(crate) fn na(&self) -> u64 {
        align(self.n, 16)
    }

    /// K aligned to C0.
    pub(crate) fn ka(&self) -> u64 {
        align(self.k, self.c0())
    }

    /// Bytes of A as stored in global memory (the whole batch).
    pub fn a_bytes(&self) -> u64 {
        match self.a {
            ASource::Matrix { .. } => self.batch * self.m * self.k * self.in_bytes,
            ASource::Fmap { h, w, cin_pad, .. } => self.batch * h * w * cin_pad * self.in_bytes,
        }
    }

    /// Bytes of B in global memory.
    pub(crate) fn b_bytes(&self) -> u64 {
        let b = if self.b_shared { 1 } else { self.batch };
        b * self.k * self.n * self.in_bytes
    }

    /// Bytes of C in global memory.
    pub(crate) fn c_bytes(&self) -> u64 {
        self.batch * self.m * self.n * self.out_bytes
    }

    /// Bytes of input the op must read at least once: B, and the part of A that some output
    /// depends on (a strided feature map skips rows).
    pub(crate) fn min_read_bytes(&self) -> u64 {
        let a = match self.a {
            ASource::Matrix { .. } => self.a_bytes(),
            ASource::Fmap {
                h,
                w,
                ho,
                kh_eff,
                stride_h,
                cin_pad,
                ..
            } => {
                let rows = h.min((ho - 1) * stride_h + kh_eff);
                self.batch * rows * w * cin_pad * self.in_bytes
            }
        };
        a + self.b_bytes()
    }

    /// The working set of one run (inputs and output).
    pub(crate) fn working_set(&self) -> u64 {
        self.a_bytes() + self.b_bytes() + self.c_bytes()
    }

    /// Useful floating-point operations: 2·batch·M·N·K.
    pub fn flops(&self) -> f64 {
        2.0 * (self.batch * self.m) as f64 * self.n as f64 * self.k as f64
    }

    /// Checks, with checked arithmetic, that every size the model computes from this problem
    /// is at most `MAX_SIZE`: A, B and C in bytes as stored and padded to
    /// the fractal (A as im2col rows for a feature map), the feature map, the working set. The
    /// error names the first size over it.
    pub fn check_size(&self) -> Result<(), TooLarge> {
        self.size_check().map_err(|what| TooLarge { what })
    }

    /// [`GemmProblem::check_size`] with the size as text.
    fn size_check(&self) -> Result<(), String> {
        let s = self.in_bytes;
        let ma = bounded_align("M aligned to 16", self.m, 16)?;
        let na = bounded_align("N aligned to 16", self.n, 16)?;
        let ka = bounded_align("K aligned to C0", self.k, 32 / s)?;
        let b_batch = if self.b_shared { 1 } else { self.batch };
        let a = match self.a {
            ASource::Matrix { .. } => bounded(
                "A bytes (batch·M·K·bytes)",
                &[self.batch, self.m, self.k, s],
            )?,
            ASource::Fmap { h, w, cin_pad, .. } => bounded(
                "feature map bytes (batch·H·W·C·bytes, padded)",
                &[self.batch, h, w, cin_pad, s],
            )?,
        };
        bounded(
            "A bytes, padded (batch·M·K·bytes)",
            &[self.batch, ma, ka, s],
        )?;
        let b = bounded("B bytes (batch·K·N·bytes)", &[b_batch, self.k, self.n, s])?;
        bounded("B bytes, padded (batch·K·N·bytes)", &[b_batch, ka, na, s])?;
        let c = bounded(
            "C bytes (batch·M·N·bytes)",
            &[self.batch, self.m, self.n, self.out_bytes],
        )?;
        bounded(
            "C bytes, padded (batch·M·N·bytes)",
            &[self.batch, ma, na, self.out_bytes],
        )?;
        // Each of the three is at most 2^48, so the sum cannot overflow.
        bounded("working set (A + B + C bytes)", &[a + b + c])?;
        Ok(())
    }
}

/// `a · b · …`, or `None` when the product overflows u64.
fn product(factors: &[u64]) -> Option<u64> {
    factors.iter().try_fold(1u64, |p, &f| p.checked_mul(f))
}

/// A checked product for a reason text: its value, or that it overflows.
fn shown(v: Option<u64>) -> String {
    v.map_or_else(|| "more than 2^64".to_string(), |v| v.to_string())
}

/// A TCubeTiling-style strategy for one cube op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CubeTiling {
    /// Cores along M.
    pub block_dim_m: u64,
    /// Cores along N.
    pub block_dim_n: u64,
    /// L0 tile rows.
    pub base_m: u64,
    /// L0 tile columns.
    pub base_n: u64,
    /// L0 tile reduction length.
    pub base_k: u64,
    /// A tiles resident in L1.
    pub depth_a1: u64,
    /// B tiles resident in L1.
    pub depth_b1: u64,
    /// K tiles of A per L1 load.
    pub step_ka: u64,
    /// K tiles of B per L1 load.
    pub step_kb: u64,
    /// 0: M moves first (B is reused), 1: N moves first (A is reused).
    pub iterate_order: u64,
    /// L0A double buffering (1 or 2).
    pub db_l0a: u64,
    /// L0B double buffering.
    pub db_l0b: u64,
    /// L0C double buffering.
    pub db_l0c: u64,
}

impl CubeTiling {
    /// Reads a tiling from a strategy map; the reason names a missing or non-integer parameter.
    pub fn from_strategy(s: &StrategyMap) -> Result<CubeTiling, String> {
        let g = |n: &str| -> Result<u64, String> {
            let v = get_int(s, n)?;
            u64::try_from(v).map_err(|_| format!("parameter {n} = {v} is negative"))
        };
        Ok(CubeTiling {
            block_dim_m: g("blockDimM")?,
            block_dim_n: g("blockDimN")?,
            base_m: g("baseM")?,
            base_n: g("baseN")?,
            base_k: g("baseK")?,
            depth_a1: g("depthA1")?,
            depth_b1: g("depthB1")?,
            step_ka: g("stepKa")?,
            step_kb: g("stepKb")?,
            iterate_order: g("iterateOrder")?,
            db_l0a: g("dbL0A")?,
            db_l0b: g("dbL0B")?,
            db_l0c: g("dbL0C")?,
        })
    }

    /// The strategy map of this tiling.
    pub fn to_strategy(self) -> StrategyMap {
        let v = [
            self.block_dim_m,
            self.block_dim_n,
            self.base_m,
            self.base_n,
            self.db_l0c,
            self.base_k,
            self.db_l0a,
            self.db_l0b,
            self.step_ka,
            self.depth_a1,
            self.step_kb,
            self.depth_b1,
            self.iterate_order,
        ];
        CUBE_TILING_PARAMS
            .iter()
            .zip(v)
            .map(|(n, v)| (n.to_string(), serde_json::Value::from(v)))
            .collect()
    }

    /// Checks the tiling against the SoC's buffers and alignment rules; the error is a
    /// `build_fail` reason naming the broken rule and the numbers.
    pub fn validate(&self, p: &GemmProblem, soc: &SocModel, cores: u32) -> Result<(), String> {
        let t = self;
        let s = p.in_bytes;
        let c0 = p.c0();
        for (n, v) in [
            ("blockDimM", t.block_dim_m),
            ("blockDimN", t.block_dim_n),
            ("baseM", t.base_m),
            ("baseN", t.base_n),
            ("baseK", t.base_k),
            ("depthA1", t.depth_a1),
            ("depthB1", t.depth_b1),
            ("stepKa", t.step_ka),
            ("stepKb", t.step_kb),
        ] {
            if v == 0 {
                return Err(format!("{n} must be positive"));
            }
        }
        // More blocks than cores is valid: they run in waves (`CoreShare`), as on the hardware.
        let used = product(&[t.block_dim_m, t.block_dim_n]);
        if used.is_none_or(|u| u > MAX_SIZE) {
            return Err(format!(
                "blockDimM·blockDimN = {} is past the model's limit of {MAX_SIZE} blocks ({cores} cores)",
                shown(used)
            ));
        }
        if !t.base_m.is_multiple_of(16) || !t.base_n.is_multiple_of(16) {
            return Err(format!(
                "misaligned: baseM {} and baseN {} must be multiples of the 16-row fractal",
                t.base_m, t.base_n
            ));
        }
        if !t.base_k.is_multiple_of(c0) {
            return Err(format!(
                "misaligned: baseK {} must be a multiple of C0 = {c0} for {s}-byte inputs",
                t.base_k
            ));
        }
        for (n, v) in [
            ("dbL0A", t.db_l0a),
            ("dbL0B", t.db_l0b),
            ("dbL0C", t.db_l0c),
        ] {
            if v != 1 && v != 2 {
                return Err(format!("{n} = {v} must be 1 or 2"));
            }
        }
        if t.iterate_order > 1 {
            return Err(format!("iterateOrder = {} must be 0 or 1", t.iterate_order));
        }
        let l0c = product(&[t.base_m, t.base_n, 4, t.db_l0c]);
        if l0c.is_none_or(|b| b > soc.l0c) {
            return Err(format!(
                "L0C overflow: baseM·baseN·4·dbL0C = {} B > {} B",
                shown(l0c),
                soc.l0c
            ));
        }
        let l0a = product(&[t.base_m, t.base_k, s, t.db_l0a]);
        if l0a.is_none_or(|b| b > soc.l0a) {
            return Err(format!(
                "L0A overflow: baseM·baseK·{s}·dbL0A = {} B > {} B",
                shown(l0a),
                soc.l0a
            ));
        }
        let l0b = product(&[t.base_k, t.base_n, s, t.db_l0b]);
        if l0b.is_none_or(|b| b > soc.l0b) {
            return Err(format!(
                "L0B overflow: baseK·baseN·{s}·dbL0B = {} B > {} B",
                shown(l0b),
                soc.l0b
            ));
        }
        for (n, d, st) in [("A", t.depth_a1, t.step_ka), ("B", t.depth_b1, t.step_kb)] {
            if d % st != 0 || d / st > 2 {
                return Err(format!(
                    "depth{n}1 = {d} must be stepK{} = {st} or twice it",
                    n.to_ascii_lowercase()
                ));
            }
        }
        // baseM, baseN and baseK fit L0 here, so only the depths can make this overflow.
        let bias = if p.bias { t.base_n * 4 } else { 0 };
        let l1 = product(&[t.depth_a1, t.base_m, t.base_k, s])
            .zip(product(&[t.depth_b1, t.base_n, t.base_k, s]))
            .and_then(|(a, b)| a.checked_add(b)?.checked_add(bias));
        if l1.is_none_or(|b| b > soc.l1 - 256) {
            return Err(format!(
                "L1 overflow: depthA1·baseM·baseK·s + depthB1·baseN·baseK·s{} = {} B > {} B",
                if p.bias { " + bias" } else { "" },
                shown(l1),
                soc.l1 - 256
            ));
        }
        Ok(())
    }

    /// Ascend C's GetTiling default (the baseline): base block 128×256×64 for fp16 (baseM 256
    /// when L0C holds 256 KiB; baseK scaled to keep 128 bytes of K), clamped to the shape;
    /// cores split over M and N to balance the number of base blocks per core; L1 holds two
    /// K-tiles of each operand (depth 2, step 1); dbL0A = dbL0B = 2; dbL0C = 2 only if the
    /// block fits half of L0C; M moves first.
    pub fn default_for(p: &GemmProblem, soc: &SocModel, cores: u32) -> CubeTiling {
        let pref_m = if soc.l0c >= 256 * 1024 { 256 } else { 128 };
        let pref_k = 128 / p.in_bytes;
        let (mut base_m, mut base_n, mut base_k) =
            (pref_m.min(p.ma()), 256.min(p.na()), pref_k.min(p.ka()));
        // Small cores (Ascend031: 16 KiB L0C, 8 KiB L0A/L0B): halve the tile until it fits
        // the buffers, N first, never below one fractal (16) or one C0 of K.
        while base_m * base_n * 4 > soc.l0c && base_m.max(base_n) > 16 {
            if base_n >= base_m {
                base_n /= 2;
            } else {
                base_m /= 2;
            }
        }
        let s = p.in_bytes;
        while (base_m * base_k * s > soc.l0a || base_k * base_n * s > soc.l0b) && base_k > p.c0() {
            base_k /= 2;
        }
        let m_blocks = p.ma().div_ceil(base_m);
        let n_blocks = p.na().div_ceil(base_n);
        let cores = u64::from(cores);
        // Cores along M and N: the factorisation with the fewest blocks on the busiest core,
        // preferring more cores along M on ties.
        let mut best = (u64::MAX, 1, 1);
        for bm in 1..=cores.min(m_blocks) {
            for bn in 1..=(cores / bm).min(n_blocks) {
                let per = m_blocks.div_ceil(bm) * n_blocks.div_ceil(bn);
                if per < best.0 {
                    best = (per, bm, bn);
                }
            }
        }
        let db_l0c = if base_m * base_n * 4 * 2 <= soc.l0c {
            2
        } else {
            1
        };
        let db_l0a = if base_m * base_k * s * 2 <= soc.l0a {
            2
        } else {
            1
        };
        let db_l0b = if base_k * base_n * s * 2 <= soc.l0b {
            2
        } else {
            1
        };
        // Two K-tiles of each operand in L1 (double buffering), one each when that overflows.
        let l1_need =
            |depth: u64| depth * (base_m + base_n) * base_k * s + u64::from(p.bias) * base_n * 4;
        let depth = if l1_need(2) + 256 <= soc.l1 { 2 } else { 1 };
        CubeTiling {
            block_dim_m: best.1,
            block_dim_n: best.2,
            base_m,
            base_n,
            base_k,
            depth_a1: depth,
            depth_b1: depth,
            step_ka: 1,
            step_kb: 1,
            iterate_order: 0,
            db_l0a,
            db_l0b,
            db_l0c,
        }
    }
}

/// The roofline of a cube problem in µs on `cores` cores: peak cube compute, the least bytes
/// read at the chip's read bandwidth and the output at its write bandwidth (L2's when the
/// working set fits, main memory's otherwise), whichever is largest.
pub fn roofline_us(p: &GemmProblem, soc: &SocModel, cores: u32) -> f64 {
    let ws = p.working_set();
    let compute = p.flops() / soc.cube_peak_flops(p.in_bytes, cores);
    let read = p.min_read_bytes() as f64 / soc.chip_read_bw(ws);
    let write = p.c_bytes() as f64 / soc.chip_write_bw(ws);
    compute.max(read).max(write) * 1e6
}

/// The strategy space of a cube problem: value lists fitted to the shape (always holding the
/// default's values) and restrictions mirroring `CubeTiling::validate`.
pub fn space(
    p: &GemmProblem,
    soc: &SocModel,
    cores: u32,
) -> (Vec<Parameter>, Vec<String>, HashMap<String, Value>) {
    let d = CubeTiling::default_for(p, soc, cores);
    let c0 = p.c0();
    let splits: Vec<u64> = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
        .into_iter()
        .filter(|&v| v <= u64::from(cores))
        .collect();
    let bdm = with(
        splits
            .iter()
            .copied()
            .filter(|&v| v == 1 || (v - 1) * 16 < p.ma())
            .collect(),
        d.block_dim_m,
    );
    let bdn = with(
        splits
            .iter()
            .copied()
            .filter(|&v| v == 1 || (v - 1) * 16 < p.na())
            .collect(),
        d.block_dim_n,
    );
    let bm = with(fit(&[16, 32, 64, 128, 256], p.ma()), d.base_m);
    let bn = with(fit(&[16, 32, 64, 128, 256], p.na()), d.base_n);
    let bk = with(
        fit(&[c0, 2 * c0, 4 * c0, 8 * c0, 16 * c0], p.ka()),
        d.base_k,
    );
    let ints = |name: &str, v: &[u64]| {
        Parameter::new(name, v.iter().map(|&x| Value::Int(x as i64)).collect())
    };
    let params = vec![
        ints("blockDimM", &bdm),
        ints("blockDimN", &bdn),
        ints("baseM", &bm),
        ints("baseN", &bn),
        ints("dbL0C", &[1, 2]),
        ints("baseK", &bk),
        ints("dbL0A", &[1, 2]),
        ints("dbL0B", &[1, 2]),
        ints("stepKa", &[1, 2, 4]),
        ints("depthA1", &[1, 2, 4, 8]),
        ints("stepKb", &[1, 2, 4]),
        ints("depthB1", &[1, 2, 4, 8]),
        ints("iterateOrder", &[0, 1]),
    ];
    let restrictions = [
        "blockDimM * blockDimN <= CORES",
        // Pruning: keep splits that occupy more than half of the cores the shape can use
        // (batches fill the cores a split leaves free), and always the default's split.
        "blockDimM * blockDimN * min(BATCH, CORES // (blockDimM * blockDimN)) * 2 > min(CORES, BATCH * MB * NB) or (blockDimM == DBM and blockDimN == DBN)",
        "baseM * baseN * 4 * dbL0C <= L0C",
        "baseM * baseK * S * dbL0A <= L0A",
        "baseK * baseN * S * dbL0B <= L0B",
        // L1 chunks never hold K-tiles entirely past the end of K.
        "(stepKa - 1) * baseK < KA",
        "depthA1 % stepKa == 0 and depthA1 // stepKa <= 2",
        "(stepKb - 1) * baseK < KA",
        "depthB1 % stepKb == 0 and depthB1 // stepKb <= 2",
        "depthA1 * baseM * baseK * S + depthB1 * baseN * baseK * S + BIAS * baseN * 4 <= L1 - 256",
    ]
    .map(String::from)
    .to_vec();
    let mut constants = HashMap::new();
    for (n, v) in [
        ("CORES", u64::from(cores)),
        ("L0A", soc.l0a),
        ("L0B", soc.l0b),
        ("L0C", soc.l0c),
        ("L1", soc.l1),
        ("S", p.in_bytes),
        ("KA", p.ka()),
        ("BIAS", u64::from(p.bias)),
        ("BATCH", p.batch),
        ("MB", p.ma() / 16),
        ("NB", p.na() / 16),
        ("DBM", d.block_dim_m),
        ("DBN", d.block_dim_n),
    ] {
        constants.insert(n.to_string(), Value::Int(v as i64));
    }
    (params, restrictions, constants)
}

/// The values of `cands` below `extent`, plus the smallest one at or above it.
pub(crate) fn fit(cands: &[u64], extent: u64) -> Vec<u64> {
    let mut out: Vec<u64> = cands.iter().copied().filter(|&v| v < extent).collect();
    if let Some(&v) = cands.iter().find(|&&v| v >= extent) {
        out.push(v);
    }
    if out.is_empty() {
        out.push(cands[0]);
    }
    out
}

/// `v` with `x` added (sorted, deduplicated).
pub(crate) fn with(mut v: Vec<u64>, x: u64) -> Vec<u64> {
    v.push(x);
    v.sort_unstable();
    v.dedup();
    v
}

/// `x` rounded up to a multiple of `a`.
pub(crate) fn align(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// A problem with a size past the model's limit (`MAX_SIZE`): the first size over it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what}")]
pub struct TooLarge {
    /// The size that is over the limit, and its value.
    pub what: String,
}

impl TooLarge {
    /// A problem past the model's limit is the request's (its model).
    pub fn kind(&self) -> tunebank_failure::FailureKind {
        tunebank_failure::FailureKind::Input
    }
}
