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

fn profiles(o: &ResolvedOptions) -> Vec<Vec<i64>> {
    match o.dynamic() {
        Dynamic::Dims(p) => p.clone(),
        other => panic!("{other:?}"),
    }
}

/// `--range-shapes N`: the longest value list keeps its ends and every other value until the
/// product fits: 1~32 (6 values) × 1~2048 (12) = 72; at 24 the sequence goes to powers of four
/// (1, 4, 16, 64, 256, 1024, 2048: 6 × 7 = 42), then of sixteen (1, 16, 256, 2048: 6 × 4 =
/// 24); at 16 the batch follows (1, 4, 16, 32: 4 × 4).
#[test]
fn a_shape_budget_thins_the_longest_range_geometrically() {
    let mut o = opts(&["--input_shape=x:1~32,1~2048,768"]).unwrap();
    assert_eq!(profiles(&o).len(), 72);
    let dims = |o: &ResolvedOptions, i: usize| -> Vec<i64> {
        let set: std::collections::BTreeSet<i64> = profiles(o).iter().map(|v| v[i]).collect();
        set.into_iter().collect()
    };
    o.choose_range_shapes(Some(24), None).unwrap();
    assert_eq!(profiles(&o).len(), 24);
    assert_eq!(dims(&o, 0), [1, 2, 4, 8, 16, 32]);
    assert_eq!(dims(&o, 1), [1, 16, 256, 2048]);
    o.choose_range_shapes(Some(16), None).unwrap();
    assert_eq!(profiles(&o).len(), 16);
    assert_eq!(dims(&o, 0), [1, 4, 16, 32]);
    assert_eq!(dims(&o, 1), [1, 16, 256, 2048]);
    // The ends stay whatever the budget; below the corners it is refused by name.
    o.choose_range_shapes(Some(4), None).unwrap();
    assert_eq!(profiles(&o), [[1, 1], [1, 2048], [32, 1], [32, 2048]]);
    let e = o
        .choose_range_shapes(Some(3), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("range-shapes") && e.contains("at least 4 shapes"),
        "{e}"
    );
    // Without a range there is nothing to choose.
    let mut fixed = opts(&["--input_shape=x:2,16,768"]).unwrap();
    let e = fixed
        .choose_range_shapes(Some(8), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("a range in --input_shape"), "{e}");
}

/// `--shape-samples`: with room for every distinct sample, all of them; with less, greedy
/// weighted k-medoids under Σ |ln a/b|: first the sample nearest all others by weight, then the
/// one that most lowers the weighted distance to the nearest chosen. Worked by hand: samples
/// 8 (×10, and ×3 on another line: 13), 9 (×1), 1000 (×5), 1024 (×1) in 1~2048; the first pick
/// minimises Σ w·d — 8 costs 1·ln(9/8) + 5·ln 125 + 1·ln 128 = 29.1, 1000 costs 13·ln 125 +
/// ln(1000/9) + ln 1.024 = 67.5 — so 8; the second is 1000 (it brings 1000 and 1024 to ≈ 0,
/// 9 would save only 0.12).
#[test]
fn samples_are_reduced_to_the_shapes_that_serve_the_others_best() {
    let mut o = opts(&["--input_shape=x:1~2048,64"]).unwrap();
    let samples = vec![
        (vec![8], 10),
        (vec![9], 1),
        (vec![1000], 5),
        (vec![1024], 1),
        (vec![8], 3),
    ];
    o.choose_range_shapes(Some(2), Some(&samples)).unwrap();
    assert_eq!(profiles(&o), [[8], [1000]]);
    o.choose_range_shapes(None, Some(&samples)).unwrap();
    assert_eq!(profiles(&o).len(), 4, "every distinct sample when they fit");
    // A sample outside the range, or of the wrong length, is refused by line.
    let e = o
        .choose_range_shapes(None, Some(&[(vec![8], 1), (vec![4096], 1)]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 2") && e.contains("outside 1~2048"), "{e}");
    let e = o
        .choose_range_shapes(None, Some(&[(vec![8, 64], 1)]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 1") && e.contains("1 values"), "{e}");
}
