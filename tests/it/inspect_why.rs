//! `bank-inspect why` on the command line: a precision-mode miss explained. The scenarios
//! through the library are `src/tests/inspect_why.rs`.

use std::process::Command;

use crate::common::why_model::model;

/// Sends the scenario through the binaries: `tunebank bank add` under one precision mode,
/// `bank-inspect why` under another.
#[test]
fn cli_why_explains_a_precision_mode_miss() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("b.redb");
    let ops = dir.path().join("ops.json");
    std::fs::write(&ops, serde_json::to_string(&model()).unwrap()).unwrap();
    let add = Command::new(env!("CARGO_BIN_EXE_tunebank"))
        .args(["bank", "add", "--op"])
        .arg(&ops)
        .arg("--bank")
        .arg(&bank)
        .args([
            "--strategy",
            r#"{"baseM":128}"#,
            "--time-us",
            "10",
            "--baseline-us",
            "20",
            "--soc_version=Ascend910B2",
            "--input_shape=x:16,64",
            "--precision_mode=allow_fp32_to_fp16",
        ])
        .output()
        .unwrap();
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let why = |json: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_bank-inspect"));
        c.args(["why", "--ops"])
            .arg(&ops)
            .arg("--bank")
            .arg(&bank)
            .args([
                "--soc_version=Ascend910B2",
                "--input_shape=x:16,64",
                "--precision_mode",
                "must_keep_origin_dtype",
            ]);
        if json {
            c.arg("--json");
        }
        c.output().unwrap()
    };
    let out = why(false);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(
            "5 ops: 4 hits, 1 miss — because precision_mode differs: \
             tuned with allow_fp32_to_fp16, this conversion must_keep_origin_dtype\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("float16 → float32 (precision_mode)"),
        "{text}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&why(true).stdout).unwrap();
    assert_eq!(doc["summary"]["misses_by_cause"]["precision_mode"], 1);
    assert_eq!(doc["ops"][0]["result"], "miss");
    assert_eq!(doc["ops"][1]["result"], "hit");

    // Bad input: exit 2, a message naming the file.
    std::fs::write(&ops, "not json").unwrap();
    let out = why(false);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ops.json"));
}
