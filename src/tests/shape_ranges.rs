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

/// ATC's deprecated `--input_shape_range="x:[1~4,8~64,64]"` is the same ranges as
/// `--input_shape=x:1~4,8~64,64`: the same profiles, the same canonical `input_shape` (so the
/// same keys, op and graph); ATC's `-1` (no bound), a missing bracket, or both options with
/// different shapes are refused by name.
#[test]
fn the_deprecated_range_option_is_the_same_ranges() {
    let new = opts(&["--input_shape=x:1~4,8~64,64"]).unwrap();
    let old = opts(&["--input_shape_range=x:[1~4,8~64,64]"]).unwrap();
    assert_eq!(old.dynamic(), new.dynamic());
    assert_eq!(old.input_shape(), new.input_shape());
    assert_eq!(old.canonical("input_shape"), Some("x:1~4,8~64,64"));
    assert_eq!(old.canonical("input_shape_range"), Some(""));
    assert_eq!(old.graph_options(), new.graph_options());
    // Both spellings of the same shapes are one request.
    assert!(opts(&[
        "--input_shape=x:1~4,8~64,64",
        "--input_shape_range=x:[1~4,8~64,64]"
    ])
    .is_ok());
    for (args, wants) in [
        (
            vec!["--input_shape_range=x:[-1,64]"],
            vec![
                "--input_shape_range",
                "dim 0 of x is -1",
                "needs bounds lo~hi",
            ],
        ),
        (
            vec!["--input_shape_range=x:[1~-1,64]"],
            vec!["dim 0 of x is -1"],
        ),
        (
            vec!["--input_shape_range=x:1~4,64"],
            vec!["name:[d1,d2,...]"],
        ),
        (
            vec!["--input_shape=x:2,64", "--input_shape_range=x:[1~4,64]"],
            vec!["input_shape", "input_shape_range", "expected one"],
        ),
        (
            vec!["--input_shape_range=x:[4~1,64]"],
            vec!["dim 0 of x is the range 4~1"],
        ),
    ] {
        let e = opts(&args).unwrap_err();
        for w in wants {
            assert!(e.contains(w), "{args:?}: expected {w:?} in {e}");
        }
    }
}
