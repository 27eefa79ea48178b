//! TBE MatMul `knowledge` ↔ the simulator's tiling parameters, and a descriptor ↔ TBE
//! `info_dict`, both ways (the field meanings are in the parent module's docs).

use crate::interchange::aoe::NotMapped;
use crate::interchange::pyjson::PyJson;
use crate::interchange::tbe::{gemm, TbeGemm};
use tunebank_key::StrategyMap;
use tunebank_key::CUBE_TILING_PARAMS;
use tunebank_key::{AttrValue, DType, OpDescriptor};

/// The integer list `field` of a TBE dict, or why it is not one.
pub(super) fn list(info: &PyJson, field: &str) -> Result<Vec<i64>, String> {
    match info.get(field) {
        Some(PyJson::List(items)) => items
            .iter()
            .map(|x| match x {
                PyJson::Int(i) => i64::try_from(*i).map_err(|_| format!("{field} too large")),
                _ => Err(format!("{field}: expected integers")),
            })
            .collect(),
        _ => Err(format!("knowledge has no list {field}")),
    }
}

fn pbuffer(k: &PyJson, name: &str) -> Result<i64, String> {
    match k.get("manual_pingpong_buffer").and_then(|p| p.get(name)) {
        Some(PyJson::Int(v @ (1 | 2))) => Ok(*v as i64),
        Some(v) => Err(format!("{name} = {}: expected 1 or 2", v.dumps())),
        None => Err(format!("manual_pingpong_buffer has no {name}")),
    }
}

/// One operand's L1 chunk: (stepK, depth) from its `*L1_shape` (`[]`: all of K held).
fn l1(shape: &[i64], k_elems: i64, base_k: i64, pb: i64, what: &str) -> Result<(i64, i64), String> {
    let k_steps = (k_elems + base_k - 1) / base_k;
    let step = match shape.first() {
        None => k_steps,
        Some(&kl1) if kl1 > 0 && kl1 % base_k == 0 => (kl1 / base_k).min(k_steps),
        Some(&kl1) => {
            return Err(format!(
                "{what}_shape K = {kl1} is not a multiple of baseK = {base_k}"
            ))
        }
    };
    Ok((step, step * pb))
}

/// Whether an operand's L1 chunk (`AL1_shape` / `BL1_shape`) stays in L1 while the other
/// operand's axis moves, as TBE's GEMM schedule places it: a chunk of all of this core's data
/// (`[]`, or all of K and every tile along its own axis: loaded once), or of all of K and at
/// least two output tiles along its axis (larger than one L0C tile, so the schedule attaches it
/// at the output, outside the other axis's loop). A chunk of all of K and one tile is loaded
/// with each output tile, like a chunk of part of K. `tiles` is this core's output tiles along
/// the operand's axis.
fn stays_in_l1(shape: &[i64], k_elems: i64, tiles: i64) -> bool {
    match shape {
        [] => true,
        [k, mult, ..] => *k >= k_elems && (*mult >= 2 || *mult >= tiles),
        [_] => false,
    }
}

/// The simulator's tiling (the parameters of [`CUBE_TILING_PARAMS`]) of a TBE MatMul `knowledge`
/// for the GEMM `g`, or why it does not map.
pub fn tiling_of(knowledge: &PyJson, g: &TbeGemm) -> Result<StrategyMap, NotMapped> {
    tiling(knowledge, g).map_err(|reason| NotMapped { reason })
}

/// [`tiling_of`] with the reason as text.
fn tiling(knowledge: &PyJson, g: &TbeGemm) -> Result<StrategyMap, String> {
    let bd = list(knowledge, "block_dim")?;
    if bd.len() < 4 || bd.iter().take(4).any(|&d| d <= 0) {
        return Err(format!(
            "block_dim {bd:?}: expected [batch, N, M, K, …] core counts"
        ));
    }
    if bd[3] != 1 {
        return Err(format!(
            "block_dim splits K over {} cores; the simulator never splits K",
            bd[3]
        ));
    }
    let (bn, bm) = (bd[1], bd[2]);
    let al0 = list(knowledge, "AL0_matrix")?;
    if al0.len() < 2 || al0[0] <= 0 || al0[1] <= 0 {
        return Err(format!(
            "AL0_matrix {al0:?}: expected [m, k, 16, K0, …] fractals"
        ));
    }
    let (ma, ka) = (al0[0], al0[1]);
    let bl0 = list(knowledge, "BL0_matrix")?;
    let cl0 = list(knowledge, "CL0_matrix")?;
    let (kb, nb) = match bl0.as_slice() {
        // All of this core's B in L0B: the output tile's N is CL0's, which may walk the core's
        // N in smaller tiles (CANN's repository does on 290 of its 3,200 records).
        [] => (
            g.k1,
            cl0.first()
                .copied()
                .filter(|&n| n > 0)
                .unwrap_or((g.n1 + bn - 1) / bn),
        ),
        [kb, nb, ..] if *kb > 0 && *nb > 0 => (*kb, *nb),
        _ => {
            return Err(format!(
                "BL0_matrix {bl0:?}: expected [k, n, 16, K0, …] fractals"
            ))
        }
    };
    if cl0.len() < 2 || cl0[0] != nb || cl0[1] != ma {
        return Err(format!(
            "CL0_matrix {cl0:?}: expected [{nb}, {ma}, …], the N of BL0 and the M of AL0"
        ));
    }
    let (base_m, base_n, base_k) = (16 * ma, 16 * nb, g.k0 * ka.min(kb));
    let k_elems = g.k0 * g.k1;
    let a_l1 = list(knowledge, "AL1_shape")?;
    let b_l1 = list(knowledge, "BL1_shape")?;
    let (step_ka, depth_a1) = l1(
        &a_l1,
        k_elems,
        base_k,
        pbuffer(knowledge, "AL1_pbuffer")?,
        "AL1",
    )?;
    let (step_kb, depth_b1) = l1(
        &b_l1,
        k_elems,
        base_k,
        pbuffer(knowledge, "BL1_pbuffer")?,
        "BL1",
    )?;
    // How many output tiles of this core lie along M (along N): the L1 chunk of an operand
    // that holds several of them, or all, stays while the other axis moves.
    let m_tiles = ((g.m1 + bm - 1) / bm + ma - 1) / ma;
    let n_tiles = ((g.n1 + bn - 1) / bn + nb - 1) / nb;
    let a_stays = stays_in_l1(&a_l1, k_elems, m_tiles);
    let iterate_order = i64::from(a_stays && !stays_in_l1(&b_l1, k_elems, n_tiles));
    let values = [
        bm,
        bn,
        base_m,
        base_n,
        pbuffer(knowledge, "CL0_pbuffer")?,
        base_k,
        pbuffer(knowledge, "AL0_pbuffer")?,
        pbuffer(knowledge, "BL0_pbuffer")?,
        step_ka,
        depth_a1,
        step_kb,
        depth_b1,
        iterate_order,
    ];
    Ok(CUBE_TILING_PARAMS
        .iter()
        .zip(values)
        .map(|(n, v)| (n.to_string(), serde_json::Value::from(v)))
        .collect())
}

fn get(s: &StrategyMap, name: &str) -> Result<i64, String> {
    s.get(name)
        .and_then(serde_json::Value::as_i64)
        .ok_or_else(|| format!("strategy has no integer {name}"))
}

fn ilist(v: &[i64]) -> PyJson {
    PyJson::List(v.iter().map(|&x| PyJson::Int(i128::from(x))).collect())
}

/// The TBE `knowledge` of one of the simulator's tilings for the GEMM `g` (the inverse of
/// [`tiling_of`] on the parameters it maps; L1 holds one M (N) tile, batch split 1; iterateOrder
/// 1 is written as A held whole in L1, which it can be only when one L1 load of A spans K).
/// Keys in the order AOE writes them.
pub(crate) fn knowledge_of(s: &StrategyMap, g: &TbeGemm) -> Result<PyJson, String> {
    let p = |n| get(s, n);
    let (base_m, base_n, base_k) = (p("baseM")?, p("baseN")?, p("baseK")?);
    if base_m % 16 != 0 || base_n % 16 != 0 || base_k % g.k0 != 0 {
        return Err("tiling is not aligned to fractals".into());
    }
    let (m, n, k) = (base_m / 16, base_n / 16, base_k / g.k0);
    let (sa, sb) = (p("stepKa")?, p("stepKb")?);
    let pb = |v: i64| PyJson::Int(i128::from(v));
    let mut pp = vec![
        ("AUB_pbuffer", pb(1)),
        ("BUB_pbuffer", pb(1)),
        ("AL1_pbuffer", pb(p("depthA1")? / sa)),
        ("BL1_pbuffer", pb(p("depthB1")? / sb)),
        ("AL0_pbuffer", pb(p("dbL0A")?)),
        ("BL0_pbuffer", pb(p("dbL0B")?)),
        ("CL0_pbuffer", pb(p("dbL0C")?)),
    ];
    for name in [
        "L0C_OUTPUT_pbuffer",
        "UBG_pbuffer",
        "INPUT_L1_FB_pbuffer",
        "INPUT_L1_eltwise_pbuffer",
        "INPUT_L1_BT_pbuffer",
    ] {
        pp.push((name, pb(1)));
    }
    // A held whole in L1 while N moves (iterateOrder 1) is how TBE states that order.
    let a_whole = p("iterateOrder")? == 1 && sa * base_k >= g.k0 * g.k1;
    let a_l1 = if a_whole {
        PyJson::List(Vec::new())
    } else {
        ilist(&[sa * base_k, 1, 1, 1, 0])
    };
    let e = |(k, v): (&str, PyJson)| (k.to_owned(), v);
    let dict = |v: Vec<(&str, PyJson)>| PyJson::Dict(v.into_iter().map(e).collect());
    Ok(dict(vec![
        ("AUB_shape", PyJson::Null),
        ("BUB_shape", PyJson::Null),
        ("AL1_shape", a_l1),
        ("BL1_shape", ilist(&[sb * base_k, 1, 1, 1, 0])),
        ("AL0_matrix", ilist(&[m, k, 16, g.k0, 1, 1, 0])),
        ("BL0_matrix", ilist(&[k, n, 16, g.k0, 1, 1, 0])),
        ("CL0_matrix", ilist(&[n, m, 16, 16, 1, 1, 0])),
        (
            "block_dim",
            ilist(&[1, p("blockDimN")?, p("blockDimM")?, 1, 0]),
        ),
        ("control_reorder_flag", pb(0)),
        ("special_optimize_flag", pb(0)),
        (
            "UB_channel_wise_input",
            PyJson::List(vec![PyJson::Null, PyJson::Null, PyJson::Bool(false)]),
        ),
        ("manual_pingpong_buffer", dict(pp)),
        ("INPUT_L1_BT_param", PyJson::Null),
        ("INPUT_L1_FB_param", PyJson::Null),
        ("INPUT_L1_eltwise_param", PyJson::Null),
        ("L0C_OUTPUT_matrix", ilist(&[1, 1, 16, 16, 1, 1])),
        ("vector_block_num", pb(0)),
    ]))
}

fn dtype_name(d: DType) -> String {
    serde_json::to_value(d)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The TBE `info_dict` of an IR MatMul descriptor (`MatMulV2` `[M, K]·[K, N]` or
/// `BatchMatMulV2` `[batch, M, K]·[K, N]`, untransposed, optional `[N]` bias, sizes multiples of
/// the fractal), keys in the order AOE writes them, or why the op has no TBE form. Decoding it
/// gives the descriptor back ([`crate::interchange::tbe::matmul_descriptor`]).
pub(crate) fn info_dict_of(d: &OpDescriptor) -> Result<(PyJson, TbeGemm), String> {
    let batched = match d.op_type.as_str() {
        "MatMulV2" => false,
        "BatchMatMulV2" => true,
        other => return Err(format!("{other} has no TBE MatMul form")),
    };
    if !d.fused_ops.is_empty()
        || d.attrs.values().any(|v| *v != AttrValue::Bool(false))
        || d.attrs.len() != 2
    {
        return Err("only an unfused, untransposed MatMul has a TBE form".into());
    }
    let (a, b) = match d.inputs.as_slice() {
        [a, b] | [a, b, _] => (a, b),
        _ => return Err("expected two inputs and an optional bias".into()),
    };
    let out = d.outputs.first().ok_or("no output")?;
    let rank = if batched { 3 } else { 2 };
    if a.ori_shape.len() != rank || b.ori_shape.len() != 2 {
        return Err(format!("expected a rank-{rank} x1 and a 2-D x2"));
    }
    let (batch, m, k) = if batched {
        (a.ori_shape[0], a.ori_shape[1], a.ori_shape[2])
    } else {
        (1, a.ori_shape[0], a.ori_shape[1])
    };
    let n = b.ori_shape[1];
    let k0 = 32 / super::elem_bytes(a.dtype);
    if m % 16 != 0 || n % 16 != 0 || k % k0 != 0 || b.ori_shape[0] != k || a.dtype != b.dtype {
        return Err(format!(
            "M {m}, N {n} (multiples of 16) and K {k} (of {k0}) are not fractal-aligned"
        ));
    }
    let g = TbeGemm {
        batch,
        m1: m / 16,
        k1: k / k0,
        n1: n / 16,
        k0,
    };
    let mad = if matches!(a.dtype, DType::Int8 | DType::Uint8) {
        DType::Int32
    } else {
        DType::Float32
    };
    let s = |x: DType| PyJson::Str(dtype_name(x));
    let z = || PyJson::Int(0);
    let one = || PyJson::Int(1);
    let mut v: Vec<(String, PyJson)> = vec![
        ("op_type".into(), PyJson::Str("matmul".into())),
        ("A_shape".into(), ilist(&[batch, g.k1, g.m1, 16, k0])),
        ("B_shape".into(), ilist(&[k, g.n1, 1, 1, 16])),
        ("C_shape".into(), ilist(&[0, 0, 0, 0, 0])),
        ("A_dtype".into(), s(a.dtype)),
        ("B_dtype".into(), s(b.dtype)),
        ("C_dtype".into(), s(out.dtype)),
        ("mad_dtype".into(), s(mad)),
    ];
    for f in ["padl", "padr", "padu", "padd"] {
        v.push((f.into(), z()));
    }
    for f in [
        "strideH",
        "strideW",
        "strideH_expand",
        "strideW_expand",
        "dilationH",
        "dilationW",
        "group",
    ] {
        v.push((f.into(), one()));
    }
    let bias = d.inputs.get(2);
    v.push(("bias_flag".into(), PyJson::Bool(bias.is_some())));
    v.push(("fused_double_operand_num".into(), z()));
    v.push(("shape_a_align".into(), one()));
    v.push(("shape_b_align".into(), one()));
    v.push(("scalar_size".into(), z()));
    v.push((
        "batch_type".into(),
        PyJson::Int(if batched { 2 } else { 0 }),
    ));
    v.push(("reduce_fusion".into(), z()));
    if let Some(bias) = bias {
        v.push(("bias_dtype".into(), s(bias.dtype)));
    }
    let info = PyJson::Dict(v);
    gemm(&info)?;
    Ok((info, g))
}
