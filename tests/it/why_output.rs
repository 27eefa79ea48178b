//! The text `bank-inspect why` prints for the scenario a new user meets first: ResNet-50 tuned
//! with the default options, then diagnosed under `--precision_mode=must_keep_origin_dtype`.
//! The answer comes first and fits a screen; `--detail` and `--json` keep everything.

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn fixture(name: &str) -> String {
    format!("{}/fixtures/models/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn run(bin: &str, dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(bin)
        .args(args)
        .env("HOME", dir.join("home"))
        .env("ASCEND_WORK_PATH", dir.join("work"))
        .env("TUNING_PARALLEL_NUM", "2")
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env_remove("TUNEBANK_BUILTIN_PATH")
        .env_remove("AOE_MODE")
        .env_remove("REPEAT_TUNE")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{bin} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn why_on_resnet50_says_the_cause_first_and_fits_a_screen() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    let bank = dir.path().join("bank.redb");
    let bank = bank.to_str().unwrap();
    let model = fixture("resnet50.onnx");
    run(
        env!("CARGO_BIN_EXE_tunebank"),
        dir.path(),
        &[
            "tune",
            "--model",
            &model,
            "--job_type=2",
            "--soc_version=Ascend910B2",
            "--budget",
            "4",
            "--strategy",
            "random",
            "--bank",
            bank,
        ],
    );
    let why = |extra: &[&str]| {
        let mut args = vec![
            "why",
            "--model",
            &model,
            "--bank",
            bank,
            "--soc_version=Ascend910B2",
            "--precision_mode=must_keep_origin_dtype",
        ];
        args.extend_from_slice(extra);
        let out = run(env!("CARGO_BIN_EXE_bank-inspect"), dir.path(), &args);
        String::from_utf8(out.stdout).unwrap()
    };
    let text = why(&[]);
    let lines: Vec<&str> = text.lines().collect();
    let ops = 72;
    // The verdict is the first line: counts, the one cause, both values.
    let first = lines[0];
    assert!(
        first.starts_with("72 ops: 0 hits, 72 misses"),
        "first line: {first}\n{text}"
    );
    for word in [
        "all because precision_mode differs",
        "force_fp16 (default)",
        "must_keep_origin_dtype",
    ] {
        assert!(
            first.contains(word),
            "{word:?} not in the first line: {first}"
        );
    }
    // One screen: at most a few lines per op, and the ops sharing the cause under one heading.
    assert!(
        lines.len() <= 3 * ops + 10,
        "{} lines for {ops} ops:\n{text}",
        lines.len()
    );
    let headings = lines.iter().filter(|l| l.starts_with("miss — ")).count();
    assert_eq!(headings, 1, "{text}");
    // One line per op, its tensors' identical dtype change collapsed into one phrase.
    let op_lines: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("tensors: float16 → float32 (precision_mode)"))
        .collect();
    assert_eq!(op_lines.len(), ops, "{text}");
    assert!(!text.contains("nearest:"), "{text}");
    assert!(!text.contains("input 1 dtype"), "{text}");

    // --detail: the nearest entries with every difference, as before.
    let detail = why(&["--detail"]);
    assert!(detail.lines().count() > lines.len());
    assert!(detail.contains("nearest: custom"), "{detail}");
    assert!(
        detail.contains(
            "input 1 dtype: tuned with precision_mode unset (default force_fp16) → float16; \
             this conversion uses precision_mode=must_keep_origin_dtype → float32"
        ),
        "{detail}"
    );
    assert!(detail.starts_with(first), "{detail}");

    // --json keeps everything: the summary, every op with its nearest entries.
    let doc: serde_json::Value = serde_json::from_str(&why(&["--json"])).unwrap();
    assert_eq!(doc["summary"]["misses_by_cause"]["precision_mode"], ops);
    assert_eq!(doc["ops"].as_array().unwrap().len(), ops);
    assert_eq!(doc["ops"][0]["result"], "miss");
    assert!(!doc["ops"][0]["nearest"].as_array().unwrap().is_empty());
}
