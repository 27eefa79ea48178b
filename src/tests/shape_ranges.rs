//! Shape ranges in `--input_shape` (`x:1~64,128`): the representative shapes a range is tuned
//! at, their profiles and keys, and the ranges refused.

use tunebank::key::{
    derive_op_keys, DType, Dynamic, FsReader, OpTemplate, Profile, ResolvedOptions, SocSpec,
    TemplateTensor,
};

fn opts(args: &[&str]) -> Result<ResolvedOptions, String> {
    let mut all = vec!["--soc_version=Ascend910B2"];
    all.extend_from_slice(args);
    ResolvedOptions::from_args(all, &FsReader).map_err(|e| e.to_string())
}

#[test]
fn a_range_is_tuned_at_its_ends_and_the_powers_of_two_between() {
    let values = |range: &str| -> Vec<i64> {
        let o = opts(&[&format!("--input_shape=x:{range},8")]).unwrap();
        match o.dynamic() {
            Dynamic::Dims(p) => p.iter().map(|v| v[0]).collect(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(values("1~64"), [1, 2, 4, 8, 16, 32, 64]);
    assert_eq!(values("3~20"), [3, 4, 8, 16, 20]);
    assert_eq!(values("5~5"), [5]);
    assert_eq!(values("1~2048").len(), 12);
    let o = opts(&["--input_shape=x:1~4,8~64,64"]).unwrap();
    assert_eq!(o.input_shape(), [("x".to_string(), vec![-1, -1, 64])]);
    assert_eq!(o.input_ranges().len(), 2);
    assert_eq!(o.input_ranges()[1].dim, 1);
    assert_eq!((o.input_ranges()[1].min, o.input_ranges()[1].max), (8, 64));
    assert_eq!(o.canonical("input_shape"), Some("x:1~4,8~64,64"));
    let Dynamic::Dims(p) = o.dynamic() else {
        panic!("{:?}", o.dynamic())
    };
    assert_eq!(p.len(), 3 * 4);
    assert_eq!(p[0], [1, 8]);
    assert_eq!(p[11], [4, 64]);
}

#[test]
fn an_op_fed_by_a_range_is_keyed_at_each_of_its_shapes() {
    let t = OpTemplate {
        node_name: "add".into(),
        op_type: "Add".into(),
        fused_ops: vec![],
        inputs: vec![TemplateTensor {
            shape: vec![-1, 5],
            dtype: DType::Float32,
            ori_format: None,
            format: None,
            graph_input: Some("a".into()),
            producer_dtype: None,
        }],
        outputs: vec![TemplateTensor {
            shape: vec![-1, 5],
            dtype: DType::Float32,
            ori_format: None,
            format: None,
            graph_input: None,
            producer_dtype: None,
        }],
        attrs: Default::default(),
    };
    let soc = SocSpec::from_version("Ascend910B2").unwrap();
    let r = derive_op_keys(&t, &opts(&["--input_shape=a:3~20,5"]).unwrap(), &soc).unwrap();
    let shapes: Vec<Vec<i64>> = r
        .iter()
        .map(|o| o.descriptor.inputs[0].shape.clone())
        .collect();
    assert_eq!(shapes, [[3, 5], [4, 5], [8, 5], [16, 5], [20, 5]]);
    assert_eq!(r[4].profile, Profile::Dims(vec![20]));
    let keys: std::collections::BTreeSet<_> =
        r.iter().map(|o| o.descriptor.key().unwrap()).collect();
    assert_eq!(keys.len(), 5, "one key per shape");
}

#[test]
fn bad_ranges_are_refused_naming_the_range() {
    let e = opts(&["--input_shape=x:64~1,8"]).unwrap_err();
    assert!(
        e.contains("x:64~1,8") && e.contains("range 64~1") && e.contains("1 ≤ lo ≤ hi"),
        "{e}"
    );
    let e = opts(&["--input_shape=x:0~4,8"]).unwrap_err();
    assert!(e.contains("range 0~4"), "{e}");
    let e = opts(&["--input_shape=x:1~a,8"]).unwrap_err();
    assert!(e.contains("lo~hi"), "{e}");
    let e = opts(&["--input_shape=x:1~32,1~2048,1~2048"]).unwrap_err();
    assert!(e.contains("more than 100 shapes"), "{e}");
    let e = opts(&[
        "--input_shape=x:1~32,-1",
        "--input_format=ND",
        "--dynamic_dims=1;2",
    ])
    .unwrap_err();
    assert!(
        e.contains("input_shape") && e.contains("dynamic_dims") && e.contains("not both"),
        "{e}"
    );
}
