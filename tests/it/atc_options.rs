//! ATC options on the command line: a fusion turned off in `convert`, refused options exiting 2
//! with the reason, `--help` listing every option by class. The options table and what each
//! option does are `src/tests/atc_options.rs`.

use std::path::PathBuf;
use std::process::{Command, Output};

use tunebank::key::OPTIONS;

fn tunebank(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tunebank"))
        .args(args)
        .env("HOME", std::env::temp_dir())
        .output()
        .unwrap()
}

fn convert_ops(dir: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let model = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/models/resnet50.onnx");
    let bank = dir.join("bank.redb");
    let mut args = vec![
        "convert".to_string(),
        format!("--model={}", model.display()),
        "--soc_version=Ascend910B2".to_string(),
        "--bank".to_string(),
        bank.display().to_string(),
        "--json".to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tunebank(&refs);
    assert!(
        out.status.code() == Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["op_type"].to_string())
        .collect()
}

#[test]
fn convert_with_a_fusion_turned_off_reports_unfused_units() {
    let dir = tempfile::tempdir().unwrap();
    let switch = dir.path().join("switch.json");
    std::fs::write(
        &switch,
        r#"{"Switch": {"GraphFusion": {"ConvBatchnormFusionPass": "off"}}}"#,
    )
    .unwrap();
    let fused = convert_ops(dir.path(), &[]);
    let unfused = convert_ops(
        dir.path(),
        &[&format!("--fusion_switch_file={}", switch.display())],
    );
    let conv_bn = r#"["Conv","BatchNormalization","Relu"]"#;
    assert!(fused.iter().any(|t| t == conv_bn), "{fused:?}");
    assert!(!unfused
        .iter()
        .any(|t| t.starts_with(r#"["Conv","BatchNormalization""#)));
    assert!(unfused.iter().any(|t| t == r#"["BatchNormalization"]"#));
    assert!(unfused.len() > fused.len());
}

#[test]
fn refused_options_exit_2_saying_they_are_not_modelled() {
    let dir = tempfile::tempdir().unwrap();
    let aipp = dir.path().join("aipp.cfg");
    std::fs::write(&aipp, "aipp_op {\n aipp_mode: static\n}\n").unwrap();
    let model = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/models/resnet50.onnx");
    let bank = dir.path().join("bank.redb");
    for opt in [
        format!("--insert_op_conf={}", aipp.display()),
        "--enable_small_channel=1".to_string(),
        "--sparsity=1".to_string(),
        "--precision_mode_v2=mixed_hif8".to_string(),
    ] {
        let out = tunebank(&[
            "convert",
            &format!("--model={}", model.display()),
            "--soc_version=Ascend910B2",
            "--bank",
            bank.to_str().unwrap(),
            &opt,
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{opt}: {err}");
        assert!(err.contains("not modelled"), "{opt}: {err}");
    }
}

#[test]
fn help_lists_every_option_by_class() {
    for sub in ["tune", "convert"] {
        let out = tunebank(&[sub, "--help"]);
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout);
        for spec in OPTIONS {
            assert!(
                text.contains(&format!("--{}", spec.name)),
                "{sub} --help lacks --{}",
                spec.name
            );
        }
        for class in [
            "Key-affecting",
            "Structure",
            "Refused",
            "irrelevant to tuning",
        ] {
            assert!(text.contains(class), "{sub} --help lacks {class}");
        }
    }
}
