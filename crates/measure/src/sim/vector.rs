//! Vector-unit ops: elementwise and activations, pooling, TransData (element streams), and
//! Softmax / LayerNorm / reductions (row streams). Tiles live in the unified buffer (UB) and are
//! double buffered as Ascend C's `tileLength = blockLength / tileNum / BUFFER_NUM` pattern does.

use std::collections::HashMap;
use tunebank_key::StrategyMap;

use search_strategies::{Parameter, Value};

use super::bounded;
use super::soc::SocModel;
use crate::get_int;

/// A stream of independent elements (elementwise, activation, pooling, TransData).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ElemProblem {
    /// Output elements.
    pub n: u64,
    /// Bytes read per output element (all inputs together).
    pub in_bytes_per: f64,
    /// Bytes written per output element.
    pub out_bytes: u64,
    /// Element bytes of the computation's tiles in UB.
    pub elem_bytes: u64,
    /// Vector passes over a tile (1 for add/relu; more for transcendental activations).
    pub passes: u64,
    /// Tiles held per buffer in UB: inputs, outputs and temporaries.
    pub queues: u64,
}

/// A stream of rows reduced or normalised along their length (Softmax, LayerNorm, reductions).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowProblem {
    /// Rows.
    pub rows: u64,
    /// Row length in elements.
    pub len: u64,
    /// Element bytes in global memory.
    pub elem_bytes: u64,
    /// Output elements per row (len for Softmax/LayerNorm, 1 for a reduction).
    pub out_per_row: u64,
    /// Vector passes over a row (computed in fp32).
    pub passes: u64,
}

/// A vector strategy: cores, tiles per core (or rows per tile) and buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VecTiling {
    /// Vector cores used.
    pub block_dim: u64,
    /// Elements: tiles per core per buffer (`tileNum`); rows: rows per tile (`rowsPerTile`).
    pub tile: u64,
    /// 1 (single) or 2 (double buffering).
    pub buffer_num: u64,
}

const ISSUE: f64 = 64.0;
const PASS_OVERHEAD: f64 = 12.0;
const FILL: f64 = 1200.0;
/// Per-core scheduling cost of a launch in µs: fewer cores start sooner.
const PER_CORE_US: f64 = 0.01;

impl VecTiling {
    /// Reads a tiling; `tile_name` is `tileNum` or `rowsPerTile`.
    pub(crate) fn from_strategy(s: &StrategyMap, tile_name: &str) -> Result<VecTiling, String> {
        let g = |n: &str| -> Result<u64, String> {
            let v = get_int(s, n)?;
            u64::try_from(v).map_err(|_| format!("parameter {n} = {v} is negative"))
        };
        Ok(VecTiling {
            block_dim: g("blockDim")?,
            tile: g(tile_name)?,
            buffer_num: g("bufferNum")?,
        })
    }

    /// The strategy map, with the tile parameter named `tile_name`.
    pub fn to_strategy(self, tile_name: &str) -> StrategyMap {
        [
            ("blockDim", self.block_dim),
            (tile_name, self.tile),
            ("bufferNum", self.buffer_num),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_string(), serde_json::Value::from(v)))
        .collect()
    }

    fn check_common(&self, units: u32) -> Result<(), String> {
        if self.block_dim == 0 || self.block_dim > u64::from(units) {
            return Err(format!(
                "blockDim = {} must be between 1 and the {units} vector cores",
                self.block_dim
            ));
        }
        if self.tile == 0 {
            return Err("the tile parameter must be positive".into());
        }
        if self.buffer_num != 1 && self.buffer_num != 2 {
            return Err(format!("bufferNum = {} must be 1 or 2", self.buffer_num));
        }
        Ok(())
    }
}

/// Elements per 32-byte block.
fn per_block(elem_bytes: u64) -> u64 {
    (32 / elem_bytes).max(1)
}

impl ElemProblem {
    /// Checks, with checked arithmetic, that the sizes the model computes are at most
    /// `MAX_SIZE`: the vector work (elements · bytes · passes), the bytes
    /// read and written. The error names the first size over it.
    pub(crate) fn check_size(&self) -> Result<(), String> {
        let eb = self.elem_bytes.max(self.out_bytes);
        bounded(
            "vector work (elements·bytes·passes)",
            &[self.n, eb, self.passes],
        )?;
        let read = self.n as f64 * self.in_bytes_per;
        if read > super::MAX_SIZE as f64 {
            return Err(format!(
                "bytes read = {read}, over the simulator's limit 2^48"
            ));
        }
        Ok(())
    }

    /// Elements per core and per tile (32-byte aligned) for a tiling.
    fn lengths(&self, t: &VecTiling) -> (u64, u64) {
        let pb = per_block(self.elem_bytes);
        let block_len = align(self.n.div_ceil(t.block_dim), pb);
        // No overflow: tile < 2^63 (read from an i64), buffer_num is 1 or 2 (validated).
        let tile_len = align(block_len.div_ceil(t.tile * t.buffer_num), pb);
        (block_len, tile_len)
    }

    /// Checks the tiling; the error is a `build_fail` reason.
    pub(crate) fn validate(&self, t: &VecTiling, soc: &SocModel, units: u32) -> Result<(), String> {
        t.check_common(units)?;
        let (_, tile_len) = self.lengths(t);
        let ub = [self.queues, t.buffer_num, tile_len, self.elem_bytes]
            .iter()
            .try_fold(1u64, |p, &f| p.checked_mul(f));
        if ub.is_none_or(|ub| ub > soc.ub) {
            return Err(format!(
                "UB overflow: {} queues · bufferNum {} · tileLength {tile_len} · {} B = {} B > {} B",
                self.queues,
                t.buffer_num,
                self.elem_bytes,
                ub.map_or_else(|| "more than 2^64".to_string(), |b| b.to_string()),
                soc.ub
            ));
        }
        Ok(())
    }

    /// Ascend C's default: every vector core with work (at least one 32-byte block each),
    /// `tileNum` 8 and double buffering, fewer tiles when tiles would drop under one block,
    /// more when they overflow UB.
    pub fn default_tiling(&self, soc: &SocModel, units: u32) -> VecTiling {
        let pb = per_block(self.elem_bytes);
        let blocks = self.n.div_ceil(pb);
        let mut t = VecTiling {
            block_dim: u64::from(units).min(blocks).max(1),
            tile: 8,
            buffer_num: 2,
        };
        let per_core_blocks = blocks.div_ceil(t.block_dim);
        while t.tile > 1 && t.tile * t.buffer_num > per_core_blocks {
            t.tile /= 2;
        }
        while self.validate(&t, soc, units).is_err() && t.tile < 1 << 20 {
            t.tile *= 2;
        }
        t
    }

    /// Simulated time in µs without launch overhead.
    pub fn time_us(&self, t: &VecTiling, soc: &SocModel) -> f64 {
        let ws = (self.n as f64 * (self.in_bytes_per + self.out_bytes as f64)) as u64;
        let (rd, wr) = (soc.core_read_bpc(ws), soc.core_write_bpc(ws));
        let (_, tile_len) = self.lengths(t);
        // Each core loops tileNum · bufferNum times over tiles of tileLength (the last ones
        // padded), as Ascend C kernels do.
        let iters = t.tile * t.buffer_num;
        let tile_cycles = |len: u64| -> (f64, f64, f64) {
            let mte2 = ISSUE + len as f64 * self.in_bytes_per / rd;
            let vec = self.passes as f64
                * ((len * self.elem_bytes) as f64 / soc.vector_bpc)
                    .ceil()
                    .max(1.0)
                + self.passes as f64 * PASS_OVERHEAD;
            let mte3 = ISSUE + (len * self.out_bytes) as f64 / wr;
            (mte2, vec, mte3)
        };
        let cycles = stream(&[(tile_len, iters)], t, tile_cycles);
        let core_us = (FILL + cycles) / (soc.vector_clock_ghz * 1e3);
        let chip_read = self.n as f64 * self.in_bytes_per / soc.chip_read_bw(ws) * 1e6;
        let chip_write = (self.n * self.out_bytes) as f64 / soc.chip_write_bw(ws) * 1e6;
        core_us.max(chip_read).max(chip_write) + PER_CORE_US * t.block_dim as f64
    }

    /// Roofline in µs: vector throughput of every unit, and bytes over the chip bandwidths.
    pub fn roofline_us(&self, soc: &SocModel, units: u32) -> f64 {
        let ws = (self.n as f64 * (self.in_bytes_per + self.out_bytes as f64)) as u64;
        let vec = (self.n * self.elem_bytes * self.passes) as f64
            / (soc.vector_bpc * f64::from(units) * soc.vector_clock_ghz * 1e9);
        let read = self.n as f64 * self.in_bytes_per / soc.chip_read_bw(ws);
        let write = (self.n * self.out_bytes) as f64 / soc.chip_write_bw(ws);
        vec.max(read).max(write) * 1e6
    }
}

impl RowProblem {
    fn row_len_aligned(&self) -> u64 {
        align(self.len, per_block(self.elem_bytes))
    }

    /// Checks, with checked arithmetic, that the sizes the model computes are at most
    /// `MAX_SIZE`: the vector work (rows · length · 4 bytes · passes) and the
    /// bytes read and written. The error names the first size over it.
    pub(crate) fn check_size(&self) -> Result<(), String> {
        bounded(
            "vector work (rows·length·4·passes)",
            &[self.rows, self.len, 4, self.passes],
        )?;
        let io = self.len.saturating_add(self.out_per_row);
        bounded(
            "bytes read and written (rows·(length + outputs)·bytes)",
            &[self.rows, io, self.elem_bytes],
        )?;
        Ok(())
    }

    /// Checks the tiling; the error is a `build_fail` reason.
    pub(crate) fn validate(&self, t: &VecTiling, soc: &SocModel, units: u32) -> Result<(), String> {
        t.check_common(units)?;
        let la = self.row_len_aligned();
        // Input and output tiles per buffer, plus an fp32 working row block and 32 B per row
        // for the reduced values.
        let io = (la + align(self.out_per_row, per_block(self.elem_bytes))) * self.elem_bytes;
        let ub = t
            .buffer_num
            .checked_mul(t.tile)
            .and_then(|x| x.checked_mul(io))
            .zip(t.tile.checked_mul(la * 4 + 32))
            .and_then(|(a, b)| a.checked_add(b));
        if ub.is_none_or(|ub| ub > soc.ub) {
            return Err(format!(
                "UB overflow: {} rows per tile of {la} elements need {} B > {} B",
                t.tile,
                ub.map_or_else(|| "more than 2^64".to_string(), |b| b.to_string()),
                soc.ub
            ));
        }
        Ok(())
    }

    /// Default: rows spread over every vector core, the most rows per tile (a power of two)
    /// that keeps at least two tiles per core and fits UB double buffered.
    pub fn default_tiling(&self, soc: &SocModel, units: u32) -> VecTiling {
        let block_dim = u64::from(units).min(self.rows).max(1);
        let per_core = self.rows.div_ceil(block_dim);
        let mut t = VecTiling {
            block_dim,
            tile: 1,
            buffer_num: 2,
        };
        while t.tile * 2 * 2 <= per_core {
            let next = VecTiling {
                tile: t.tile * 2,
                ..t
            };
            if self.validate(&next, soc, units).is_err() {
                break;
            }
            t = next;
        }
        if self.validate(&t, soc, units).is_err() {
            t.buffer_num = 1;
        }
        t
    }

    /// Simulated time in µs without launch overhead.
    pub fn time_us(&self, t: &VecTiling, soc: &SocModel) -> f64 {
        let ws = self.rows * (self.len + self.out_per_row) * self.elem_bytes;
        let (rd, wr) = (soc.core_read_bpc(ws), soc.core_write_bpc(ws));
        let la = self.row_len_aligned();
        let mine = self.rows.div_ceil(t.block_dim);
        let full = mine / t.tile;
        let tail = mine % t.tile;
        let tile_cycles = |rows: u64| -> (f64, f64, f64) {
            let burst = (la * self.elem_bytes) as f64;
            let bytes_in = (rows * la * self.elem_bytes) as f64 * (1.0 + 32.0 / burst);
            let mte2 = ISSUE + bytes_in / rd;
            // Passes run in fp32 over the aligned row block; each row's reduction adds a
            // short dependent chain.
            let vec = self.passes as f64
                * (((rows * la * 4) as f64 / soc.vector_bpc).ceil() + PASS_OVERHEAD)
                + rows as f64 * 16.0;
            let mte3 = ISSUE + (rows * self.out_per_row * self.elem_bytes) as f64 / wr;
            (mte2, vec, mte3)
        };
        let cycles = stream(
            &[(t.tile, full), (tail, u64::from(tail > 0))],
            t,
            tile_cycles,
        );
        let core_us = (FILL + cycles) / (soc.vector_clock_ghz * 1e3);
        let chip_read =
            (self.rows * self.len * self.elem_bytes) as f64 / soc.chip_read_bw(ws) * 1e6;
        let chip_write =
            (self.rows * self.out_per_row * self.elem_bytes) as f64 / soc.chip_write_bw(ws) * 1e6;
        core_us.max(chip_read).max(chip_write) + PER_CORE_US * t.block_dim as f64
    }

    /// Roofline in µs.
    pub fn roofline_us(&self, soc: &SocModel, units: u32) -> f64 {
        let ws = self.rows * (self.len + self.out_per_row) * self.elem_bytes;
        let vec = (self.rows * self.len * 4 * self.passes) as f64
            / (soc.vector_bpc * f64::from(units) * soc.vector_clock_ghz * 1e9);
        let read = (self.rows * self.len * self.elem_bytes) as f64 / soc.chip_read_bw(ws);
        let write = (self.rows * self.out_per_row * self.elem_bytes) as f64 / soc.chip_write_bw(ws);
        vec.max(read).max(write) * 1e6
    }
}

/// Cycles of a stream of tiles `(size, count)` through MTE2 → vector → MTE3: overlapped when
/// double buffered (plus the first load and the last store), serial otherwise.
fn stream(tiles: &[(u64, u64)], t: &VecTiling, cycles: impl Fn(u64) -> (f64, f64, f64)) -> f64 {
    let mut total = 0.0;
    let mut first: Option<(f64, f64, f64)> = None;
    for &(len, count) in tiles {
        if count == 0 || len == 0 {
            continue;
        }
        let (a, b, c) = cycles(len);
        first.get_or_insert((a, b, c));
        total += count as f64
            * if t.buffer_num == 2 {
                a.max(b).max(c)
            } else {
                a + b + c
            };
    }
    if t.buffer_num == 2 {
        if let Some((a, _, c)) = first {
            total += a + c;
        }
    }
    total
}

/// Space of an element stream: cores, tiles per core, buffers; UB restriction as a constant.
pub fn elem_space(
    p: &ElemProblem,
    soc: &SocModel,
    units: u32,
) -> (Vec<Parameter>, Vec<String>, HashMap<String, Value>) {
    let d = p.default_tiling(soc, units);
    let blocks = p.n.div_ceil(per_block(p.elem_bytes));
    let cores = cores_list(units, blocks, d.block_dim);
    let tiles = with_value(
        (0..14)
            .map(|i| 1u64 << i)
            .filter(|&v| v <= blocks.max(1))
            .collect(),
        d.tile,
    );
    let params = vec![
        ints("blockDim", &cores),
        ints("tileNum", &tiles),
        ints("bufferNum", &[1, 2]),
    ];
    // UB: queues · bufferNum · tileLength · bytes ≤ UB, with tileLength as the runner computes
    // it (32-byte aligned); expressed over element counts.
    let pb = per_block(p.elem_bytes) as i64;
    let block_len = format!("((N + blockDim - 1) // blockDim + {pb} - 1) // {pb} * {pb}");
    let tile_len = format!(
        "((({block_len}) + tileNum * bufferNum - 1) // (tileNum * bufferNum) + {pb} - 1) // {pb} * {pb}"
    );
    let restrictions = vec![
        format!("QUEUES * bufferNum * ({tile_len}) * EB <= UB"),
        "tileNum <= max(1, (N + blockDim - 1) // blockDim)".to_string(),
    ];
    let mut c = HashMap::new();
    for (k, v) in [
        ("QUEUES", p.queues),
        ("N", p.n),
        ("EB", p.elem_bytes),
        ("UB", soc.ub),
    ] {
        c.insert(k.to_string(), Value::Int(v as i64));
    }
    (params, restrictions, c)
}

/// Space of a row stream: cores, rows per tile, buffers.
pub fn row_space(
    p: &RowProblem,
    soc: &SocModel,
    units: u32,
) -> (Vec<Parameter>, Vec<String>, HashMap<String, Value>) {
    let d = p.default_tiling(soc, units);
    let cores = cores_list(units, p.rows, d.block_dim);
    let rows = with_value(
        (0..12)
            .map(|i| 1u64 << i)
            .filter(|&v| v <= p.rows)
            .collect(),
        d.tile,
    );
    let params = vec![
        ints("blockDim", &cores),
        ints("rowsPerTile", &rows),
        ints("bufferNum", &[1, 2]),
    ];
    let la = p.row_len_aligned();
    let io = (la + align(p.out_per_row, per_block(p.elem_bytes))) * p.elem_bytes;
    let restrictions = vec![
        format!(
            "bufferNum * rowsPerTile * {io} + rowsPerTile * {} <= UB",
            la * 4 + 32
        ),
        "rowsPerTile <= (ROWS + blockDim - 1) // blockDim".to_string(),
    ];
    let mut c = HashMap::new();
    c.insert("UB".to_string(), Value::Int(soc.ub as i64));
    c.insert("ROWS".to_string(), Value::Int(p.rows as i64));
    (params, restrictions, c)
}

fn cores_list(units: u32, work: u64, default: u64) -> Vec<u64> {
    let mut v: Vec<u64> = [1, 2, 4, 6, 8, 12, 15, 16, 24, 32, 40, 48]
        .into_iter()
        .filter(|&c| c <= u64::from(units) && c <= work.max(1))
        .collect();
    v.push(u64::from(units).min(work.max(1)));
    with_value(v, default)
}

fn with_value(mut v: Vec<u64>, x: u64) -> Vec<u64> {
    v.push(x);
    v.sort_unstable();
    v.dedup();
    v
}

fn ints(name: &str, v: &[u64]) -> Parameter {
    Parameter::new(name, v.iter().map(|&x| Value::Int(x as i64)).collect())
}

fn align(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}
