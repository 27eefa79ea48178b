use super::*;
use tunebank_bank::descriptor_key;
use tunebank_key::{CubeMath, DType, Format, ImplMode, SocSpec, TensorDesc};

fn tensor(shape: &[i64]) -> TensorDesc {
    TensorDesc {
        shape: shape.to_vec(),
        ori_shape: shape.to_vec(),
        dtype: DType::Float16,
        format: Format::ND,
        ori_format: Format::ND,
    }
}

/// A MatMulV2 of (m × k) · (k × 768).
pub(crate) fn matmul(m: i64, k: i64) -> OpDescriptor {
    OpDescriptor {
        op_type: "MatMulV2".into(),
        fused_ops: Vec::new(),
        inputs: vec![tensor(&[m, k]), tensor(&[k, 768])],
        outputs: vec![tensor(&[m, 768])],
        attrs: [
            ("transpose_x1".to_owned(), AttrValue::Bool(false)),
            ("transpose_x2".to_owned(), AttrValue::Bool(false)),
        ]
        .into(),
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: SocSpec::from_version("Ascend910B2").unwrap(),
        origin: None,
    }
}

pub(crate) fn key(op: &OpDescriptor) -> BankKey {
    descriptor_key(&Descriptor::Op(op.clone())).unwrap()
}

/// The range of M = 8, 16, 64: M's dims are 0 and the attribute says input 0 dim 0 over
/// 8~64 (the output's M varies too and is 0); K and N stay. Another range (8~32) is another
/// key, the same range from the shapes in another order the same key.
#[test]
fn a_range_descriptor_says_which_dims_vary_and_their_bounds() {
    let ops = [matmul(8, 768), matmul(16, 768), matmul(64, 768)];
    let refs: Vec<&OpDescriptor> = ops.iter().collect();
    let r = range_descriptor(&refs).unwrap();
    assert_eq!(r.attrs[RANGE_ATTR], AttrValue::Ints(vec![0, 0, 8, 64]));
    assert_eq!(ranged_dims(&r), Some(vec![(0, 0, 8, 64)]));
    assert_eq!(r.inputs[0].ori_shape, [0, 768]);
    assert_eq!(r.inputs[1].ori_shape, [768, 768]);
    assert_eq!(r.outputs[0].ori_shape, [0, 768]);
    assert!(is_range(&r) && !is_range(&ops[0]));
    let reversed: Vec<&OpDescriptor> = ops.iter().rev().collect();
    assert_eq!(key(&range_descriptor(&reversed).unwrap()), key(&r));
    let shorter = [matmul(8, 768), matmul(32, 768)];
    let other = range_descriptor(&shorter.iter().collect::<Vec<_>>()).unwrap();
    assert_ne!(key(&other), key(&r));
    // One shape: nothing varies.
    assert!(range_descriptor(&[&ops[0], &ops[0]]).is_none());
}

#[test]
fn coverage_is_inside_outside_or_another_op() {
    let ops = [matmul(8, 768), matmul(64, 768)];
    let r = range_descriptor(&ops.iter().collect::<Vec<_>>()).unwrap();
    assert_eq!(coverage(&r, &matmul(40, 768)), Coverage::Inside);
    assert_eq!(coverage(&r, &matmul(8, 768)), Coverage::Inside);
    assert_eq!(
        coverage(&r, &matmul(100, 768)),
        Coverage::Outside(0, 0, 100, 8, 64)
    );
    // Another K: a fixed dim differs, the range says nothing of it.
    assert_eq!(coverage(&r, &matmul(40, 512)), Coverage::Unrelated);
    assert_eq!(
        coverage(&matmul(40, 768), &matmul(40, 768)),
        Coverage::Unrelated
    );
}
