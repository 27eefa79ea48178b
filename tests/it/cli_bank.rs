//! The `tunebank` binary end to end: keys across processes, bad input (exit 2, named input,
//! nothing created), add → lookup → verify, and damage detection through the CLI.

use std::path::Path;
use std::process::{Command, Output};

const OPS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/ops/one_matmul.json");

fn tunebank(args: &[&str], tune_bank_path: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tunebank"));
    c.args(args)
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env("HOME", "/nonexistent-home-for-tests");
    if let Some(p) = tune_bank_path {
        c.env("TUNE_BANK_PATH", p);
    }
    c.output().expect("run tunebank")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        out.push(e.file_name().to_string_lossy().into_owned());
        if e.file_type().unwrap().is_dir() {
            out.extend(files_under(&e.path()));
        }
    }
    out
}

#[test]
fn keys_are_identical_across_processes_and_match_the_library() {
    let args = [
        "key",
        "--op",
        OPS,
        "--soc_version=Ascend910B2",
        "--precision_mode=allow_fp32_to_fp16",
    ];
    let a = tunebank(&args, None);
    let b = tunebank(&args, None);
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(stdout(&a), stdout(&b));
    let text = std::fs::read_to_string(OPS).unwrap();
    let templates: Vec<tunebank::key::OpTemplate> = serde_json::from_str(&text).unwrap();
    let options = tunebank::key::ResolvedOptions::from_pairs(
        [
            ("soc_version", "Ascend910B2"),
            ("precision_mode", "allow_fp32_to_fp16"),
        ],
        &tunebank::key::FsReader,
    )
    .unwrap();
    let soc = options.soc().unwrap();
    let expected = tunebank::key::derive_op_keys(&templates[0], &options, &soc).unwrap()[0].key;
    assert!(
        stdout(&a).starts_with(&expected.to_string()),
        "{}",
        stdout(&a)
    );
}

#[test]
fn bad_input_exits_2_names_the_input_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--precision_mode=fp8"], "--precision_mode=fp8"),
        (&["--input_shape=x:1,abc"], "--input_shape"),
        (
            &[
                "--input_shape=x:-1,768",
                "--dynamic_batch_size=1,2",
                "--dynamic_dims=1;2",
            ],
            "dynamic",
        ),
        (&["--no_such_option=1"], "no_such_option"),
    ];
    for (extra, named) in cases {
        let mut args = vec![
            "bank",
            "add",
            "--op",
            OPS,
            "--soc_version=Ascend910B2",
            "--strategy",
            "{\"baseM\":128}",
            "--time-us",
            "10",
            "--baseline-us",
            "20",
        ];
        args.extend_from_slice(extra);
        let o = tunebank(&args, Some(dir.path()));
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(named), "{extra:?}: {}", stderr(&o));
        assert!(
            files_under(dir.path()).is_empty(),
            "{extra:?} created files"
        );
    }
    let missing = dir.path().join("missing");
    let o = tunebank(
        &["lookup", "--op", OPS, "--soc_version=Ascend910B2"],
        Some(&missing),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("TUNE_BANK_PATH="), "{}", stderr(&o));
    assert!(!missing.exists());
    let o = tunebank(
        &[
            "lookup",
            "--op",
            "/nonexistent/ops.json",
            "--soc_version=Ascend910B2",
        ],
        Some(dir.path()),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/ops.json"));
}

#[test]
fn add_then_lookup_hits_and_verify_finds_flipped_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let soc = "--soc_version=Ascend910B2";
    let o = tunebank(
        &["lookup", "--op", OPS, soc, "--error-on-miss"],
        Some(dir.path()),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).contains("0/2 hits"));
    let o = tunebank(
        &[
            "bank",
            "add",
            "--op",
            OPS,
            soc,
            "--strategy",
            "{\"marker\":\"ZZZZZZZZZZZZZZZZ\"}",
            "--time-us",
            "26.876",
            "--baseline-us",
            "58.781",
        ],
        Some(dir.path()),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = tunebank(
        &["lookup", "--op", OPS, soc, "--json", "--error-on-miss"],
        Some(dir.path()),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["hits"], 2);
    assert_eq!(doc["ops"][0]["layer"], "custom");
    assert_eq!(doc["ops"][0]["strategy"]["marker"], "ZZZZZZZZZZZZZZZZ");
    let o = tunebank(&["bank", "verify", soc], Some(dir.path()));
    assert!(o.status.success(), "{}", stdout(&o));

    // Flip one byte of each stored marker inside the redb file.
    let file = dir.path().join("Ascend910B2/tunebank_op.redb");
    let mut bytes = std::fs::read(&file).unwrap();
    let marker = b"ZZZZZZZZZZZZZZZZ";
    let mut flipped = 0;
    for i in 0..bytes.len() - marker.len() {
        if &bytes[i..i + marker.len()] == marker {
            bytes[i + 3] ^= 0x01;
            flipped += 1;
        }
    }
    assert_eq!(flipped, 2, "both records' markers found once");
    std::fs::write(&file, &bytes).unwrap();
    let o = tunebank(&["bank", "verify", soc], Some(dir.path()));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let keys = tunebank(&["key", "--op", OPS, soc], None);
    for line in stdout(&keys).lines() {
        let key = line.split('\t').next().unwrap();
        assert!(
            stdout(&o).contains(key),
            "verify names {key}: {}",
            stdout(&o)
        );
    }
    let o = tunebank(&["lookup", "--op", OPS, soc], Some(dir.path()));
    assert_eq!(o.status.code(), Some(5), "a damaged bank is exit 5");
    assert!(stderr(&o).contains("damaged"), "{}", stderr(&o));
}
