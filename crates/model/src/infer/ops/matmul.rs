//! Matrix products: `MatMul` (numpy semantics: 1-D operands promoted, batch dims broadcast)
//! and `Gemm` (2-D, `transA` / `transB`, C broadcast to the output).

use super::Ctx;
use crate::infer::attrs::{attr_int, Attrs};
use crate::infer::error::InferError;
use crate::infer::shape::{broadcast, info, input, opt_input};
use crate::infer::TensorInfo;

/// `MatMul`: the broadcast batch dims, then M and N (each dropped for a 1-D operand).
pub(super) fn matmul(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let (a, b) = (input(cx.ins, 0)?, input(cx.ins, 1)?);
    let (sa, sb) = (&a.shape, &b.shape);
    if sa.is_empty() || sb.is_empty() {
        return Err(InferError::MatMulScalar {
            a: sa.clone(),
            b: sb.clone(),
        });
    }
    let mut pa: Vec<i64> = if sa.len() == 1 {
        vec![1, sa[0]]
    } else {
        sa.clone()
    };
    let mut pb: Vec<i64> = if sb.len() == 1 {
        vec![sb[0], 1]
    } else {
        sb.clone()
    };
    // TensorFlow's BatchMatMul adjoints (Ascend IR's adj_x1/adj_x2): the operand's last two
    // dims swapped.
    for (name, p, s) in [("adj_x1", &mut pa, sa), ("adj_x2", &mut pb, sb)] {
        if s.len() > 1 && attr_int(cx.node, name).is_some_and(|v| v != 0) {
            let r = p.len();
            p.swap(r - 1, r - 2);
        }
    }
    let (ka, kb) = (pa[pa.len() - 1], pb[pb.len() - 2]);
    if ka >= 0 && kb >= 0 && ka != kb {
        return Err(InferError::MatMulInnerDims {
            a: sa.clone(),
            b: sb.clone(),
        });
    }
    let mut shape = broadcast(&[&pa[..pa.len() - 2], &pb[..pb.len() - 2]])?;
    if sa.len() > 1 {
        shape.push(pa[pa.len() - 2]);
    }
    if sb.len() > 1 {
        shape.push(pb[pb.len() - 1]);
    }
    Ok(vec![info(a.elem_type, shape)])
}

/// `Gemm`: M × N after the transposes; C, when present, must broadcast to it.
pub(super) fn gemm(cx: &Ctx<'_>, _: &mut Attrs) -> Result<Vec<TensorInfo>, InferError> {
    let (a, b) = (input(cx.ins, 0)?, input(cx.ins, 1)?);
    if a.shape.len() != 2 || b.shape.len() != 2 {
        return Err(InferError::Ranks {
            expected: "2-D A and B",
            first: a.shape.clone(),
            second: b.shape.clone(),
        });
    }
    let ta = attr_int(cx.node, "transA").unwrap_or(0) != 0;
    let tb = attr_int(cx.node, "transB").unwrap_or(0) != 0;
    let (m, ka) = if ta {
        (a.shape[1], a.shape[0])
    } else {
        (a.shape[0], a.shape[1])
    };
    let (kb, n) = if tb {
        (b.shape[1], b.shape[0])
    } else {
        (b.shape[0], b.shape[1])
    };
    if ka >= 0 && kb >= 0 && ka != kb {
        return Err(InferError::GemmInnerDims {
            a: a.shape.clone(),
            b: b.shape.clone(),
        });
    }
    if let Some(c) = opt_input(cx.ins, 2) {
        broadcast(&[&c.shape, &[m, n]])?;
    }
    Ok(vec![info(a.elem_type, vec![m, n])])
}
