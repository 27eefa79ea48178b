//! TBE's cube schema as AOE's built-in MatMul banks store it: the `info_dict` of a MatMul
//! (`A_shape`, `B_shape`, dtypes, `bias_flag` …) decoded into an Ascend IR descriptor, and the
//! tuned `knowledge` (`AL1_shape`, `BL1_shape`, `AL0_matrix`, `BL0_matrix`, `CL0_matrix`,
//! `block_dim`, `manual_pingpong_buffer`) mapped onto the simulator's TCubeTiling-style
//! parameters; and both the other way, for export. The field meanings, as decoded from the
//! records and CANN's tiling repository (ARCHITECTURE.md, "TBE cube schema"):
//!
//! - `A_shape = [batch, K1, M1, 16, K0]`: A in FRACTAL_NZ fractals (M = 16·M1, K = K0·K1, K0 =
//!   32 bytes of the A dtype); `B_shape = [K, N1, 1, 1, 16]` (N = 16·N1). Sizes are multiples
//!   of the fractal: the real unpadded M, K, N are not recorded, so the descriptor holds the
//!   aligned ones and only shapes that are multiples of 16 (K0) can hit.
//! - `batch_type` 0 (or absent, with batch 1, as in some lines of CANN's repository): a plain
//!   MatMul (batch 1); 2: A batched, B shared (BatchMatMulV2 with a 2-D
//!   x2, as the records with a batch show: their `B_shape` has no batch). Other values, and
//!   fusion fields that are not zero (`fused_double_operand_num`, `scalar_size`,
//!   `reduce_fusion`, a non-zero `C_shape`, alignment flags ≠ 1), are not decoded: such an entry
//!   is reported, never guessed. The info_dict holds no transpose flag: the descriptor says
//!   untransposed, so a transposed op never hits it. Window fields (pads, strides, dilations,
//!   group) mean nothing for MatMul and are ignored; `fixpipe_flag` names the kernel variant.
//! - `AL0_matrix = [ma, ka, 16, K0, …]`, `BL0_matrix = [kb, nb, 16, K0, …]` (`[]`: all of this
//!   core's B in L0B; the output tile's N is then CL0's), `CL0_matrix = [nc, mc, 16, 16, …]`:
//!   L0 tiles in fractals. baseM = 16·mc,
//!   baseN = 16·nc, baseK = K0·min(ka, kb); CL0 must agree with AL0's M and BL0's N.
//! - `AL1_shape = [K elements, M tiles, …]` (`[]`: all of this core's A in L1; `BL1_shape`
//!   likewise for B): stepKa = K elements / baseK. The M (N) multiple counts L0C tiles held
//!   (TBE's schedule sizes AL1 as `k · m · CL0_matrix[1] · 16`); it is not a parameter of the
//!   simulator, and enters only the iteration order below.
//! - `block_dim = [batch, N, M, K, …]` cores: blockDimN, blockDimM; K must be 1 (the simulator
//!   never splits K); the batch split is implied (batches fill the cores left).
//! - `manual_pingpong_buffer`: `AL1_pbuffer`/`BL1_pbuffer` = depthA1/stepKa, depthB1/stepKb;
//!   `AL0_pbuffer`, `BL0_pbuffer`, `CL0_pbuffer` = dbL0A, dbL0B, dbL0C.
//! - iterateOrder is not recorded; it follows from where TBE's GEMM schedule
//!   (`te_schedule/gemm_schedule.py`, `_al1_process`/`_bl1_process`) places each L1 chunk. A
//!   chunk of all of K and more than one L0C tile is attached at the output, outside the other
//!   axis's loop, so it stays while that axis moves; a chunk of all of this core's data (`[]`,
//!   or all of K and every tile) is loaded once; any other chunk is loaded with each output
//!   tile. iterateOrder is 1 (N moves first, A stays) when A's chunk stays and B's does not,
//!   else 0.

use std::collections::BTreeMap;

use crate::interchange::aoe::NotMapped;
use crate::interchange::pyjson::PyJson;
use tunebank_key::{
    ir, AttrValue, CubeMath, DType, Format, ImplMode, OpDescriptor, SocSpec, TensorDesc,
};

/// The GEMM a TBE MatMul `info_dict` describes (sizes aligned to fractals).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TbeGemm {
    /// Batches of A (1 for a plain MatMul).
    pub batch: i64,
    /// Fractal counts of M, K (in K0) and N.
    pub m1: i64,
    /// K fractals.
    pub k1: i64,
    /// N fractals.
    pub n1: i64,
    /// K0: 32 bytes of the input dtype.
    pub k0: i64,
}

fn int(v: Option<&PyJson>, what: &str) -> Result<i64, String> {
    match v {
        Some(PyJson::Int(i)) => i64::try_from(*i).map_err(|_| format!("{what} is too large")),
        Some(PyJson::Bool(b)) => Ok(i64::from(*b)),
        _ => Err(format!("expected an integer {what}")),
    }
}

fn ints(v: Option<&PyJson>, what: &str) -> Result<Vec<i64>, String> {
    match v {
        Some(PyJson::List(items)) => items.iter().map(|x| int(Some(x), what)).collect(),
        _ => Err(format!("expected a list {what}")),
    }
}

pub(super) fn dtype(info: &PyJson, field: &str) -> Result<DType, String> {
    let name = info
        .get(field)
        .and_then(PyJson::as_str)
        .ok_or_else(|| format!("expected a dtype string {field}"))?;
    serde_json::from_value(serde_json::Value::String(name.to_lowercase()))
        .map_err(|_| format!("{field} {name:?} is not a dtype"))
}

pub(super) fn elem_bytes(d: DType) -> i64 {
    match d {
        DType::Int8 | DType::Uint8 | DType::Bool => 1,
        DType::Float32 | DType::Int32 => 4,
        DType::Float64 | DType::Int64 => 8,
        _ => 2,
    }
}

/// Whether an `info_dict` is TBE's cube schema (it has `A_shape`).
pub fn is_tbe_cube(info: &PyJson) -> bool {
    info.get("A_shape").is_some()
}

/// The GEMM of a TBE MatMul `info_dict`, or why it is not one this decoder reads.
pub fn gemm_of(info: &PyJson) -> Result<TbeGemm, NotMapped> {
    gemm(info).map_err(|reason| NotMapped { reason })
}

/// [`gemm_of`] with the reason as text.
pub(super) fn gemm(info: &PyJson) -> Result<TbeGemm, String> {
    let op = info.get("op_type").and_then(PyJson::as_str).unwrap_or("");
    if !op.eq_ignore_ascii_case("matmul") && !op.eq_ignore_ascii_case("batchmatmul") {
        return Err(format!(
            "TBE cube op_type {op:?}: only matmul info_dicts are decoded (no conv2d sample to \
             check the schema against)"
        ));
    }
    let a = ints(info.get("A_shape"), "A_shape")?;
    let b = ints(info.get("B_shape"), "B_shape")?;
    let a_dtype = dtype(info, "A_dtype")?;
    let k0 = 32 / elem_bytes(a_dtype);
    if a.len() != 5 || a[3] != 16 || a[4] != k0 || a.iter().any(|&d| d <= 0) {
        return Err(format!(
            "A_shape {a:?}: expected [batch, K1, M1, 16, {k0}] (FRACTAL_NZ, K0 = 32 bytes)"
        ));
    }
    if b.len() != 5 || b[0] != a[1] * k0 || b[2] != 1 || b[3] != 1 || b[4] != 16 || b[1] <= 0 {
        return Err(format!(
            "B_shape {b:?}: expected [K = {}, N1, 1, 1, 16]",
            a[1] * k0
        ));
    }
    for (field, want) in [
        ("fused_double_operand_num", 0),
        ("scalar_size", 0),
        ("reduce_fusion", 0),
        ("shape_a_align", 1),
        ("shape_b_align", 1),
    ] {
        if let Some(v) = info.get(field) {
            let got = int(Some(v), field)?;
            if got != want {
                return Err(format!(
                    "{field} = {got}: only {want} is decoded (a fused or aligned variant)"
                ));
            }
        }
    }
    if let Some(c) = info.get("C_shape").filter(|c| **c != PyJson::Null) {
        if ints(Some(c), "C_shape")?.iter().any(|&d| d != 0) {
            return Err("C_shape is set: an output fusion that is not decoded".into());
        }
    }
    // CANN's repository leaves `batch_type` out of some plain MatMuls: absent with a batch of
    // one is a plain MatMul.
    let batch_type = match info.get("batch_type") {
        None if a[0] == 1 => 0,
        v => int(v, "batch_type")?,
    };
    match (batch_type, a[0]) {
        (0, 1) | (2, _) => {}
        (t, n) => {
            return Err(format!(
                "batch_type {t} with batch {n}: only 0 (no batch) and 2 (A batched, B shared) are decoded"
            ))
        }
    }
    Ok(TbeGemm {
        batch: a[0],
        m1: a[2],
        k1: a[1],
        n1: b[1],
        k0,
    })
}

fn nd(shape: Vec<i64>, dtype: DType) -> TensorDesc {
    TensorDesc {
        shape: shape.clone(),
        ori_shape: shape,
        dtype,
        format: Format::ND,
        ori_format: Format::ND,
    }
}

/// The Ascend IR descriptor of a TBE MatMul `info_dict` on `soc`: `MatMulV2` `[M, K]·[K, N]`
/// (`BatchMatMulV2` `[batch, M, K]·[K, N]` for batch_type 2), a `[N]` bias when `bias_flag`,
/// formats as ATC selects them for the SoC; or why the `info_dict` does not map.
pub fn matmul_descriptor(info: &PyJson, soc: &SocSpec) -> Result<OpDescriptor, NotMapped> {
    descriptor(info, soc).map_err(|reason| NotMapped { reason })
}

/// [`matmul_descriptor`] with the reason as text.
fn descriptor(info: &PyJson, soc: &SocSpec) -> Result<OpDescriptor, String> {
    let g = gemm(info)?;
    let (a, b) = (dtype(info, "A_dtype")?, dtype(info, "B_dtype")?);
    if a != b {
        return Err(format!("A_dtype {a:?} and B_dtype {b:?} differ"));
    }
    let c = dtype(info, "C_dtype")?;
    let mad = dtype(info, "mad_dtype")?;
    let want_mad = if matches!(a, DType::Int8 | DType::Uint8) {
        DType::Int32
    } else {
        DType::Float32
    };
    if mad != want_mad {
        return Err(format!(
            "mad_dtype {mad:?}: expected {want_mad:?} for {a:?} inputs"
        ));
    }
    let (m, k, n) = (16 * g.m1, g.k0 * g.k1, 16 * g.n1);
    let batched =
        info.get("batch_type").is_some() && int(info.get("batch_type"), "batch_type")? == 2;
    let x1 = if batched {
        vec![g.batch, m, k]
    } else {
        vec![m, k]
    };
    let y = if batched {
        vec![g.batch, m, n]
    } else {
        vec![m, n]
    };
    let mut inputs = vec![nd(x1, a), nd(vec![k, n], a)];
    let bias = matches!(info.get("bias_flag"), Some(PyJson::Bool(true)));
    if bias {
        let bd = match info.get("bias_dtype") {
            Some(_) => dtype(info, "bias_dtype")?,
            None => c,
        };
        inputs.push(nd(vec![n], bd));
    }
    let (op, t1, t2) = if batched {
        ("BatchMatMulV2", "adj_x1", "adj_x2")
    } else {
        ("MatMulV2", "transpose_x1", "transpose_x2")
    };
    let attrs = BTreeMap::from([
        (t1.to_owned(), AttrValue::Bool(false)),
        (t2.to_owned(), AttrValue::Bool(false)),
    ]);
    let d = ir::to_ir(OpDescriptor {
        op_type: op.into(),
        fused_ops: Vec::new(),
        inputs,
        outputs: vec![nd(y, c)],
        attrs,
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: soc.clone(),
        origin: None,
    });
    d.key().map_err(|e| e.to_string())?;
    Ok(d)
}

mod knowledge;
pub mod repository;
pub mod space;

pub use knowledge::tiling_of;
pub(crate) use knowledge::{info_dict_of, knowledge_of};

/// The simulator's tiling of an AOE entry's `knowledge`, when its `info_dict` is a decoded TBE
/// MatMul: `None` for another schema, else the tiling or why the entry does not map.
pub fn entry_tiling(
    info: &PyJson,
    knowledge: &PyJson,
) -> Option<Result<tunebank_key::StrategyMap, NotMapped>> {
    if !is_tbe_cube(info) {
        return None;
    }
    Some(gemm_of(info).and_then(|g| tiling_of(knowledge, &g)))
}

#[cfg(test)]
#[path = "tbe/tests.rs"]
mod tests;
