//! The time of one cube tiling, stage by stage: the multi-core split ([`CoreShare`]), the K
//! loop of one output tile and its operand streams ([`KLoop`]), the chip-wide read traffic that
//! sets each core's read bandwidth ([`KLoop::chip_reads`], [`read_bpc`]), the MTE2 → MTE1 →
//! cube → FixPipe pipeline of each tile class on the busiest core ([`CorePipeline`]), and the
//! chip's read and write bandwidth bounds. [`CubeTiling::time_us`] composes them.
//!
//! Integer arithmetic here multiplies the problem's sizes (at most
//! [`MAX_SIZE`](crate::sim::MAX_SIZE), checked when the problem was built) by tile
//! extents of a validated tiling (at most 2^12), so it cannot overflow; times are f64.

use super::{align, ASource, CubeTiling, GemmProblem};
use crate::sim::SocModel;

/// Fixed cycles a DMA burst costs, spread over the burst's bytes.
const DMA_BURST_OVERHEAD: f64 = 32.0;
/// Cycles to issue one MTE2 load.
const DMA_ISSUE: f64 = 64.0;
/// Cycles of overhead per K step (MTE1 + cube).
const K_STEP_OVERHEAD: f64 = 24.0;
/// Cycles of overhead per output tile, for its K loop and for its FixPipe each.
const TILE_OVERHEAD: f64 = 48.0;
/// Cycles to fill a core's pipeline.
const FILL: f64 = 1200.0;

/// The output tiles of the busiest core along one axis: `(full tile extent, count)` and
/// `(tail tile extent, 0 or 1)`.
type TileSizes = [(u64, u64); 2];

impl CubeTiling {
    /// Simulated kernel time in µs (without launch overhead) of a valid tiling.
    pub fn time_us(&self, p: &GemmProblem, soc: &SocModel, cores: u32) -> f64 {
        let ws = p.working_set();
        let share = CoreShare::of(self, p, cores);
        let k = KLoop::new(self, p);
        let m_sizes = tile_sizes(share.m, self.base_m);
        let n_sizes = tile_sizes(share.n, self.base_n);
        let reads = k.chip_reads(&share, &m_sizes);
        let unique = p.min_read_bytes() as f64;
        let pipe = CorePipeline {
            rd: read_bpc(soc, ws, reads, unique),
            wr: soc.core_write_bpc(ws),
            soc,
            k,
        };
        let (core, max_fix) = pipe.batch_cycles(&m_sizes, &n_sizes);
        let core_cycles = FILL + share.batches as f64 * core + max_fix;
        let core_us = core_cycles / (soc.clock_ghz * 1e3);
        let chip_write_us = p.c_bytes() as f64 / soc.chip_write_bw(ws) * 1e6;
        core_us
            .max(chip_read_us(soc, ws, reads, unique))
            .max(chip_write_us)
    }
}

/// The busiest core's share of the problem. K is never split across cores.
struct CoreShare {
    /// Rows of C (aligned to 16).
    m: u64,
    /// Columns of C (aligned to 16).
    n: u64,
    /// Batches it runs one after the other.
    batches: u64,
}

impl CoreShare {
    /// The busiest core's share on `cores` cores. More blocks than cores run in waves: each
    /// core takes `⌈blocks · batch / cores⌉` block-batches one after the other.
    fn of(t: &CubeTiling, p: &GemmProblem, cores: u32) -> CoreShare {
        let cores = u64::from(cores.max(1));
        let blocks = t.block_dim_m * t.block_dim_n;
        let batches = if blocks > cores {
            blocks.saturating_mul(p.batch).div_ceil(cores)
        } else {
            p.batch.div_ceil(p.batch.min(cores / blocks).max(1))
        };
        CoreShare {
            m: align(p.ma().div_ceil(t.block_dim_m), 16),
            n: align(p.na().div_ceil(t.block_dim_n), 16),
            batches,
        }
    }
}

/// Full and tail tiles of `base` covering `extent`.
fn tile_sizes(extent: u64, base: u64) -> TileSizes {
    [
        (base, extent / base),
        (extent % base, u64::from(!extent.is_multiple_of(base))),
    ]
}

/// The K loop of one output tile and the GM streams of its operands.
struct KLoop<'a> {
    t: &'a CubeTiling,
    p: &'a GemmProblem,
    /// Input element bytes.
    s: f64,
    /// K aligned to C0.
    ka: u64,
    /// C0.
    k0: u64,
    /// K steps of `baseK` per tile (the last one `k_tail` long).
    k_steps: u64,
    k_tail: u64,
    /// One L1 load of A (of B) holds all of K.
    a_full_k: bool,
    b_full_k: bool,
    /// MTE2 loads of A (of B) per tile.
    n_a_loads: u64,
    n_b_loads: u64,
}

impl<'a> KLoop<'a> {
    fn new(t: &'a CubeTiling, p: &'a GemmProblem) -> KLoop<'a> {
        let ka = p.ka();
        let k_steps = ka.div_ceil(t.base_k);
        KLoop {
            t,
            p,
            s: p.in_bytes as f64,
            ka,
            k0: p.c0(),
            k_steps,
            k_tail: ka - (k_steps - 1) * t.base_k,
            a_full_k: t.step_ka * t.base_k >= ka,
            b_full_k: t.step_kb * t.base_k >= ka,
            n_a_loads: k_steps.div_ceil(t.step_ka),
            n_b_loads: k_steps.div_ceil(t.step_kb),
        }
    }

    /// DMA burst length (bytes) of A's loads for a tile of `mt` rows.
    fn a_burst(&self, mt: u64) -> f64 {
        let (t, s) = (self.t, self.s);
        match self.p.a {
            ASource::Matrix { nz: true, .. } => 512.0,
            ASource::Matrix {
                transposed: true, ..
            } => mt as f64 * s,
            ASource::Matrix { .. } => ((t.step_ka * t.base_k).min(self.ka)) as f64 * s,
            ASource::Fmap { w, cin_pad, .. } => (w * cin_pad.min(self.k0)) as f64 * s,
        }
    }

    /// DMA burst length (bytes) of B's loads for a tile of `nt` columns.
    fn b_burst(&self, nt: u64) -> f64 {
        let (t, s) = (self.t, self.s);
        if self.p.b_nz {
            512.0
        } else if self.p.b_transposed {
            ((t.step_kb * t.base_k).min(self.ka)) as f64 * s
        } else {
            nt as f64 * s
        }
    }

    /// GM bytes of A for one tile of `mt` rows (all of K).
    fn a_tile_bytes(&self, mt: u64) -> f64 {
        let s = self.s;
        let im2col = (mt * self.ka) as f64 * s;
        match self.p.a {
            ASource::Matrix { .. } => im2col,
            ASource::Fmap {
                h,
                w,
                wo,
                kh_eff,
                stride_h,
                cin_pad,
                ..
            } => {
                let rows_out = mt.div_ceil(wo) + 1;
                // Saturating: a stride larger than the input (any u64) reads at most h rows.
                let rows_in = h.min(
                    (rows_out - 1)
                        .saturating_mul(stride_h)
                        .saturating_add(kh_eff),
                );
                ((rows_in * w * cin_pad) as f64 * s).min(im2col)
            }
        }
    }

    /// Bytes every core reads together: A re-read per N tile unless it stays resident (N
    /// inner), B re-read per M tile unless it stays resident (M inner); never less than the
    /// input bytes some output depends on.
    fn chip_reads(&self, share: &CoreShare, m_sizes: &TileSizes) -> f64 {
        let (t, p) = (self.t, self.p);
        let (ma, na) = (p.ma(), p.na());
        let m_tiles = share.m.div_ceil(t.base_m);
        let n_tiles = share.n.div_ceil(t.base_n);
        let a_rows_reads = p.batch as f64
            * na.div_ceil(share.n) as f64
            * (if t.iterate_order == 1 && self.a_full_k {
                1.0
            } else {
                n_tiles as f64
            })
            * ma.div_ceil(share.m) as f64
            * m_sizes
                .iter()
                .map(|&(mt, c)| c as f64 * self.a_tile_bytes(mt))
                .sum::<f64>();
        let b_reads = p.batch as f64
            * ma.div_ceil(share.m) as f64
            * (if t.iterate_order == 0 && self.b_full_k {
                1.0
            } else {
                m_tiles as f64
            })
            * (na * self.ka) as f64
            * self.s;
        (a_rows_reads + b_reads).max(p.min_read_bytes() as f64)
    }

    /// Cycles of one K step of `kt` on an `mt × nt` tile: MTE1 moves to L0A and L0B and the
    /// cube, overlapped where L0A / L0B are double-buffered.
    fn step_cycles(&self, soc: &SocModel, mt: u64, nt: u64, kt: u64) -> f64 {
        let (t, s) = (self.t, self.s);
        let m1a = (mt * kt) as f64 * s / soc.l1_l0a_bpc;
        let m1b = (kt * nt) as f64 * s / soc.l1_l0b_bpc;
        let cube = (mt.div_ceil(16) * nt.div_ceil(16) * kt.div_ceil(self.k0)) as f64;
        let body = match (t.db_l0a == 2, t.db_l0b == 2) {
            (true, true) => (m1a + m1b).max(cube),
            (true, false) => m1a.max(cube) + m1b,
            (false, true) => m1b.max(cube) + m1a,
            (false, false) => m1a + m1b + cube,
        };
        body + K_STEP_OVERHEAD
    }
}

/// Per-core read bandwidth (bytes per cycle): the L2's when the working set fits; otherwise
/// first touches (`unique` of `reads`) stream from main memory and re-reads hit the L2.
fn read_bpc(soc: &SocModel, ws: u64, reads: f64, unique: f64) -> f64 {
    if soc.fits_l2(ws) {
        soc.l2_read_bpc
    } else {
        let first = (unique / reads).clamp(0.0, 1.0);
        1.0 / (first / soc.mem_read_bpc + (1.0 - first) / soc.l2_read_bpc)
    }
}

/// The chip-wide read bound in µs. Re-reads hit the L2 even when the whole working set does
/// not fit; first touches stream from main memory then.
fn chip_read_us(soc: &SocModel, ws: u64, reads: f64, unique: f64) -> f64 {
    if soc.fits_l2(ws) {
        reads / soc.chip_read_bw(ws) * 1e6
    } else {
        (reads / soc.chip_read_bw(0)).max(unique / soc.chip_mem_bw) * 1e6
    }
}

/// Effective DMA bytes: `bytes` plus the per-burst overhead for bursts of `burst` bytes.
fn dma_bytes(bytes: f64, burst: f64) -> f64 {
    bytes * (1.0 + DMA_BURST_OVERHEAD / burst.max(1.0))
}

/// The busiest core's tile pipeline at its read (`rd`) and write (`wr`) bandwidth.
struct CorePipeline<'a> {
    k: KLoop<'a>,
    soc: &'a SocModel,
    rd: f64,
    wr: f64,
}

impl CorePipeline<'_> {
    /// MTE2 cycles loading A and B (with the bias row) for one `mt × nt` tile, given whether
    /// each must be (re)loaded.
    fn mte2(&self, mt: u64, nt: u64, load_a: bool, load_b: bool) -> (f64, f64) {
        let (k, rd) = (&self.k, self.rd);
        let mte2_a = if load_a {
            k.n_a_loads as f64 * DMA_ISSUE + dma_bytes(k.a_tile_bytes(mt), k.a_burst(mt)) / rd
        } else {
            0.0
        };
        let bias = if k.p.bias && load_b {
            nt as f64 * 4.0 / rd
        } else {
            0.0
        };
        let mte2_b = if load_b {
            k.n_b_loads as f64 * DMA_ISSUE
                + dma_bytes((nt * k.ka) as f64 * k.s, k.b_burst(nt)) / rd
                + bias
        } else {
            0.0
        };
        (mte2_a, mte2_b)
    }

    /// (K-loop cycles, FixPipe cycles) of one `mt × nt` tile: the K loop overlaps MTE2 with
    /// compute where L1 holds two chunks of an operand (only the first chunk is exposed).
    fn tile(&self, mt: u64, nt: u64, load_a: bool, load_b: bool) -> (f64, f64) {
        let (k, t) = (&self.k, self.k.t);
        let compute = (k.k_steps - 1) as f64 * k.step_cycles(self.soc, mt, nt, t.base_k)
            + k.step_cycles(self.soc, mt, nt, k.k_tail);
        let (mte2_a, mte2_b) = self.mte2(mt, nt, load_a, load_b);
        let first_a = mte2_a / k.n_a_loads as f64;
        let first_b = mte2_b / k.n_b_loads as f64;
        let (dba, dbb) = (t.depth_a1 / t.step_ka == 2, t.depth_b1 / t.step_kb == 2);
        let kloop = match (dba, dbb) {
            (true, true) => compute.max(mte2_a + mte2_b) + first_a + first_b,
            (true, false) => compute.max(mte2_a) + first_a + mte2_b,
            (false, true) => compute.max(mte2_b) + first_b + mte2_a,
            (false, false) => compute + mte2_a + mte2_b,
        };
        let fix = (mt * nt * k.p.out_bytes) as f64 / self.wr + TILE_OVERHEAD;
        (kloop + TILE_OVERHEAD, fix)
    }

    /// How many of `mc × nc` tiles reload (A and B, only A, only B, neither). Along the inner
    /// loop the outer operand stays resident when its whole K fits: with M inner (order 0), B
    /// reloads once per N column unless fully resident; A reloads every tile unless resident
    /// and N inner.
    fn reload_classes(&self, mc: u64, nc: u64) -> [(u64, bool, bool); 4] {
        let k = &self.k;
        let count = mc * nc;
        let (a_loads, b_loads) = if k.t.iterate_order == 0 {
            let b = if k.b_full_k { nc.min(count) } else { count };
            (count, b)
        } else {
            let a = if k.a_full_k { mc.min(count) } else { count };
            (a, count)
        };
        let both = a_loads.min(b_loads);
        let only_a = a_loads - both;
        let only_b = b_loads - both;
        let none = count - both - only_a - only_b;
        [
            (both, true, true),
            (only_a, true, false),
            (only_b, false, true),
            (none, false, false),
        ]
    }

    /// (Cycles of one batch's tiles, the longest FixPipe): tiles run back to back, each one's
    /// FixPipe overlapping the next K loop when L0C is double-buffered.
    fn batch_cycles(&self, m_sizes: &TileSizes, n_sizes: &TileSizes) -> (f64, f64) {
        let mut core = 0.0;
        let mut max_fix: f64 = 0.0;
        for &(mt, mc) in m_sizes {
            for &(nt, nc) in n_sizes {
                if mc * nc == 0 {
                    continue;
                }
                for (n, la, lb) in self.reload_classes(mc, nc) {
                    if n == 0 {
                        continue;
                    }
                    let (kloop, fix) = self.tile(mt, nt, la, lb);
                    let per = if self.k.t.db_l0c == 2 {
                        kloop.max(fix)
                    } else {
                        kloop + fix
                    };
                    core += n as f64 * per;
                    max_fix = max_fix.max(fix);
                }
            }
        }
        (core, max_fix)
    }
}
