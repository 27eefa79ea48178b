//! Bad option values and combinations: each error names the option, the value and the
//! expected form.

use super::*;

#[test]
fn argument_list_forms_agree() {
    let files = files();
    let a = ResolvedOptions::from_args(
        [
            "--soc_version=Ascend910B2",
            "--precision_mode",
            "force_fp32",
            "--input_shape=data:8,64",
        ],
        &files,
    )
    .unwrap();
    let b = ResolvedOptions::from_pairs(
        [
            ("input_shape", "data: 8, 64"),
            ("precision-mode", "force_fp32"),
            ("--soc_version", "Ascend910B2"),
        ],
        &files,
    )
    .unwrap();
    assert_eq!(op_keys(&a), op_keys(&b));
    assert_eq!(a.canonical("input_shape"), Some("data:8,64"));
    assert_eq!(
        a.given().get("precision_mode").map(String::as_str),
        Some("force_fp32")
    );
}

fn err(args: &[&str]) -> String {
    match ResolvedOptions::from_args(args, &files()) {
        Ok(_) => panic!("{args:?} should be rejected"),
        Err(e) => e.to_string(),
    }
}

fn assert_mentions(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "error {msg:?} does not mention {p:?}");
    }
}

#[test]
fn unknown_precision_mode_names_value_and_choices() {
    let m = err(&["--precision_mode=fp8"]);
    assert_mentions(
        &m,
        &[
            "--precision_mode=fp8",
            "expected one of",
            "force_fp16",
            "allow_fp32_to_bf16",
        ],
    );
}

#[test]
fn malformed_input_shape_names_expected_form() {
    let m = err(&["--input_shape=data:1,x"]);
    assert_mentions(&m, &["--input_shape=\"data:1,x\"", "name:d1,d2", "-1"]);
    assert_mentions(
        &err(&["--input_shape=data:0,3"]),
        &["--input_shape", "≥ 1, -1 or a range lo~hi"],
    );
    assert_mentions(
        &err(&["--input_shape=data"]),
        &["--input_shape=data", "name:d1,d2"],
    );
}

#[test]
fn two_dynamic_options_name_both() {
    let m = err(&[
        "--input_shape=data:-1,3",
        "--dynamic_batch_size=1,2",
        "--dynamic_dims=1;2",
    ]);
    assert_mentions(
        &m,
        &[
            "--dynamic_batch_size",
            "--dynamic_dims",
            "mutually exclusive",
        ],
    );
}

#[test]
fn dynamic_dims_needs_nd() {
    let m = err(&["--input_shape=data:-1,3", "--dynamic_dims=1;2"]);
    assert_mentions(&m, &["--dynamic_dims=\"1;2\"", "--input_format=ND", "NCHW"]);
    assert!(ResolvedOptions::from_args(
        [
            "--input_shape=data:-1,3",
            "--dynamic_dims=1;2",
            "--input_format=ND"
        ],
        &files()
    )
    .is_ok());
}

#[test]
fn dynamic_options_need_minus_one_dims() {
    assert_mentions(
        &err(&["--dynamic_batch_size=1,2"]),
        &["--dynamic_batch_size=1,2", "-1"],
    );
    assert_mentions(
        &err(&["--input_shape=data:2,-1", "--dynamic_batch_size=1,2"]),
        &["--input_shape", "batch dim"],
    );
    assert_mentions(
        &err(&[
            "--input_shape=data:-1,-1",
            "--input_format=ND",
            "--dynamic_dims=1;2",
        ]),
        &["--dynamic_dims", "one value per -1", "2 of them"],
    );
    assert_mentions(
        &err(&["--input_shape=img:1,-1,4,4", "--dynamic_image_size=2,2;4,4"]),
        &["--input_shape", "H and W"],
    );
}

#[test]
fn dynamic_batch_size_value_set() {
    for bad in [
        "1",
        "0,2",
        "1,4096",
        "1,1",
        "1,a",
        &(1..=101)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(","),
    ] {
        let m = err(&[
            "--input_shape=data:-1,3",
            &format!("--dynamic_batch_size={bad}"),
        ]);
        assert_mentions(&m, &["--dynamic_batch_size", "2 to 100", "1 to 2048"]);
    }
    let ok = (1..=100)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    assert!(ResolvedOptions::from_args(
        [
            "--input_shape=data:-1,3".to_string(),
            format!("--dynamic_batch_size={ok}")
        ],
        &files()
    )
    .is_ok());
}

#[test]
fn unknown_option_is_named() {
    let m = err(&["--precison_mode=force_fp16"]);
    assert_mentions(&m, &["unknown option `--precison_mode`", "precision_mode"]);
}

#[test]
fn argument_shape_errors() {
    assert_mentions(&err(&["--log"]), &["--log has no value"]);
    assert_mentions(
        &err(&["force_fp16"]),
        &["argument force_fp16", "--name=value"],
    );
    assert_mentions(
        &err(&["--log=info", "--log=debug"]),
        &["--log given twice", "info", "debug"],
    );
}

#[test]
fn file_errors_name_option_and_path() {
    assert_mentions(
        &err(&["--keep_dtype=missing.cfg"]),
        &["--keep_dtype=missing.cfg", "cannot read"],
    );
    let bad = MemFiles::default().with("p.ini", "[ByOpType]\nGelu=fast\n");
    let m = ResolvedOptions::from_args(["--op_precision_mode=p.ini"], &bad)
        .unwrap_err()
        .to_string();
    assert_mentions(
        &m,
        &[
            "--op_precision_mode=p.ini",
            "line 2",
            "Gelu=fast",
            "high_precision",
        ],
    );
    let bad = MemFiles::default().with("m.json", r#"{"grey-list": {}}"#);
    let m = ResolvedOptions::from_args(
        [
            "--precision_mode=allow_mix_precision",
            "--modify_mixlist=m.json",
        ],
        &bad,
    )
    .unwrap_err()
    .to_string();
    assert_mentions(&m, &["--modify_mixlist=m.json", "grey-list", "white-list"]);
}

#[test]
fn combination_rules() {
    assert_mentions(
        &err(&["--modify_mixlist=mix.json"]),
        &[
            "--modify_mixlist",
            "--precision_mode",
            "allow_mix_precision",
        ],
    );
    assert_mentions(
        &err(&[
            "--op_select_implmode=high_precision_for_all",
            "--optypelist_for_implmode=Gelu",
        ]),
        &["--optypelist_for_implmode", "--op_select_implmode"],
    );
}

#[test]
fn soc_options() {
    let o = options(&[], &[("aicore_num", "25")]).unwrap();
    assert_mentions(
        &o.soc().unwrap_err().to_string(),
        &["--aicore_num=25", "1 to 24"],
    );
    let o = options(
        &[("soc_version", "Ascend910A")],
        &[("core_type", "VectorCore")],
    )
    .unwrap();
    assert_mentions(
        &o.soc().unwrap_err().to_string(),
        &["--core_type", "Ascend910A"],
    );
    let o = ResolvedOptions::default();
    assert_mentions(
        &o.soc().unwrap_err().to_string(),
        &["--soc_version is required", "Ascend910B2"],
    );
    let o = options(&[("soc_version", "ascend310p3")], &[]).unwrap();
    assert_eq!(
        o.soc().unwrap(),
        SocSpec {
            version: "Ascend310P3".into(),
            core_count: 8,
            core_type: "AiCore".into()
        }
    );
    assert_mentions(
        &err(&["--soc_version=Ascend999"]),
        &["--soc_version=Ascend999", "Ascend910B2", "Ascend310P3"],
    );
}

/// The fuzz target's property on a deterministic sample: random option lists built from real
/// names and awkward values never panic the parser, the resolver or key derivation.
#[test]
fn random_option_lists_never_panic() {
    use rand::{rngs::StdRng, Rng, SeedableRng};
    let values = [
        "",
        "-1",
        "0",
        "1",
        "2",
        "1,2",
        "1,2,4",
        "16,16;32,32",
        "4;8",
        "4,5;6,7",
        "data:-1,64",
        "img:1,3,-1,-1",
        "data:-1,64;img:1,3,-1,-1",
        "a:-1,-1",
        "data:9223372036854775807,64",
        "NCHW",
        "NHWC",
        "ND",
        "force_fp32",
        "allow_mix_precision",
        "allow_mix_precision_bf16",
        "high_precision",
        "high_precision_for_all",
        "opp.ini",
        "keep.cfg",
        "mix.json",
        "aipp.cfg",
        "fusion.json",
        "nope.cfg",
        "Ascend910B2",
        "Ascend310P3",
        "VectorCore",
        "x:y:z",
        ";;",
        ",",
        "ü",
        "1,2048",
        "-1,-1",
        "mm:0",
        "FP16",
        "true,false",
    ];
    let mut rng = StdRng::seed_from_u64(7);
    let files = files();
    for _ in 0..3000 {
        let n = rng.gen_range(0..6);
        let mut args = Vec::new();
        for _ in 0..n {
            let name = OPTIONS[rng.gen_range(0..OPTIONS.len())].name;
            let value = values[rng.gen_range(0..values.len())];
            if rng.gen_bool(0.5) {
                args.push(format!("--{name}={value}"));
            } else {
                args.push(format!("--{name}"));
                args.push(value.to_string());
            }
        }
        let Ok(o) = ResolvedOptions::from_args(&args, &files) else {
            continue;
        };
        let soc = o
            .soc()
            .unwrap_or_else(|_| SocSpec::from_version("Ascend910B2").unwrap());
        for t in model() {
            if let Ok(rs) = derive_op_keys(&t, &o, &soc) {
                for r in rs {
                    assert_eq!(r.descriptor.key().unwrap(), r.key);
                }
            }
        }
        let g = GraphDescriptor {
            soc,
            inputs: vec![],
            nodes: vec![],
            outputs: vec![],
            options: o.graph_options(),
        };
        g.key().unwrap();
    }
}
