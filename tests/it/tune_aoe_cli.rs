//! `tunebank tune` with AOE's command line and files: the short flags `-j -f -m -w`,
//! `--framework` checked against the model file (AOE's rules), and `aoe.ini` (`--config` or AOE's locations:
//! WORK_PATH, TUNING_PARALLEL_NUM, RUN_LOOP) with out-of-range values refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_tunebank");

fn bert() -> String {
    format!(
        "{}/fixtures/models/bert_layer.onnx",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A sandbox: `home` as $HOME, the bank file, the working directory.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("cwd")).unwrap();
        Sandbox { dir }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn bank(&self) -> PathBuf {
        self.path("bank/op.redb")
    }

    /// Runs `tunebank tune ARGS --bank … --budget 2 --strategy random` with `env` set.
    fn tune(&self, args: &[&str], env: &[(&str, &Path)]) -> Output {
        let bank = self.bank();
        let mut cmd = Command::new(BIN);
        cmd.arg("tune")
            .args(args)
            .args(["--soc_version=Ascend910B2", "--budget", "2"])
            .args(["--strategy", "random", "--bank"])
            .arg(&bank)
            .current_dir(self.path("cwd"))
            .env("HOME", self.path("home"))
            .env("TUNING_PARALLEL_NUM", "2");
        for v in [
            "ASCEND_WORK_PATH",
            "TUNE_BANK_PATH",
            "ASCEND_CACHE_PATH",
            "TUNEBANK_BUILTIN_PATH",
            "AOE_MODE",
            "REPEAT_TUNE",
            "ASCEND_TOOLKIT_HOME",
            "ASCEND_HOME_PATH",
        ] {
            cmd.env_remove(v);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null()).output().unwrap()
    }

    /// The result files written into `dir`.
    fn results_in(&self, dir: &Path) -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "json"))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every record of the bank as `bank export` writes it.
    fn records(&self) -> Vec<Value> {
        let out = Command::new(BIN)
            .args(["bank", "export", "--bank"])
            .arg(self.bank())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// `-j 2 -f 5 -m MODEL` tune like `--job_type=2 --framework=5 --model=MODEL`; `-j 3` is refused
/// like `--job_type=3`; a short flag and its long form together are refused.
#[test]
fn aoe_short_flags_stand_for_the_long_options() {
    let model = bert();
    let sb = Sandbox::new();
    let short = sb.tune(&["-j", "2", "-f", "5", "-m", &model], &[]);
    assert_eq!(short.status.code(), Some(0), "{}", text(&short.stderr));
    assert_eq!(sb.results_in(&sb.path("cwd")).len(), 1);
    let sb_long = Sandbox::new();
    let long = sb_long.tune(
        &["--job_type=2", "--framework=5", &format!("--model={model}")],
        &[],
    );
    assert_eq!(long.status.code(), Some(0), "{}", text(&long.stderr));
    let keys = |sb: &Sandbox| {
        sb.records()
            .iter()
            .map(|r| r["key"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&sb), keys(&sb_long));

    let sg = Sandbox::new().tune(&["-j", "3", "-m", &model], &[]);
    assert_eq!(sg.status.code(), Some(2));
    assert!(
        text(&sg.stderr).contains("--job_type=3"),
        "{}",
        text(&sg.stderr)
    );
    let twice = Sandbox::new().tune(&["-m", &model, &format!("--model={model}")], &[]);
    assert_eq!(twice.status.code(), Some(2));
    assert!(
        text(&twice.stderr).contains("-m"),
        "{}",
        text(&twice.stderr)
    );
}

/// `--framework` must agree with the model file: a code naming another framework than the
/// file's, MindSpore's AIR (which only ATC reads), a Caffe model without `--weight` and a
/// weight file for an ONNX model are refused with exit 2, naming the flag and the file, before anything is written.
#[test]
fn framework_must_agree_with_the_model_file() {
    let model = bert();
    for (args, flag) in [
        (
            vec!["--framework=0".to_owned(), format!("--model={model}")],
            "--framework=0",
        ),
        (
            vec!["-f".into(), "3".into(), "-m".into(), model.clone()],
            "--framework=3",
        ),
        (
            vec!["--framework=1".to_owned(), format!("--model={model}")],
            "--framework=1",
        ),
        (vec!["--model=resnet.air".to_owned()], "--model=resnet.air"),
        (
            vec![
                "--framework=5".to_owned(),
                "--model=net.prototxt".to_owned(),
            ],
            "--framework=5",
        ),
        (
            vec![
                "-m".into(),
                model.clone(),
                "-w".into(),
                "w.caffemodel".into(),
            ],
            "--weight=w.caffemodel",
        ),
    ] {
        let sb = Sandbox::new();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = sb.tune(&args, &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
        let file = args.iter().find_map(|a| {
            ["bert_layer.onnx", "resnet.air", "net.prototxt"]
                .into_iter()
                .find(|f| a.ends_with(f))
        });
        assert!(err.contains(file.unwrap()), "names the model file: {err}");
        assert!(!sb.bank().exists(), "{args:?}: nothing written");
    }
}

/// aoe.ini given with `--config`: WORK_PATH receives the result file, TUNING_PARALLEL_NUM sets
/// the workers, RUN_LOOP the timed runs of each measurement (the stored samples).
#[test]
fn aoe_ini_sets_work_path_workers_and_run_loop() {
    let sb = Sandbox::new();
    let work = sb.path("aoe_work");
    let ini = sb.path("aoe.ini");
    std::fs::write(
        &ini,
        format!(
            "[COMMON]\nWORK_PATH={}   # tuning workspace\nTUNING_PARALLEL_NUM=1\nRUN_LOOP=3\n",
            work.display()
        ),
    )
    .unwrap();
    let model = format!("--model={}", bert());
    let config = format!("--config={}", ini.display());
    let out = Command::new(BIN)
        .arg("tune")
        .args([model.as_str(), config.as_str(), "--soc_version=Ascend910B2"])
        .args(["--budget", "2", "--strategy", "random", "--bank"])
        .arg(sb.bank())
        .current_dir(sb.path("cwd"))
        .env("HOME", sb.path("home"))
        .env_remove("TUNING_PARALLEL_NUM")
        .env_remove("ASCEND_WORK_PATH")
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env_remove("REPEAT_TUNE")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("1 worker(s)"), "{err}");
    assert_eq!(
        sb.results_in(&work).len(),
        1,
        "the result file is in WORK_PATH"
    );
    assert!(sb.results_in(&sb.path("cwd")).is_empty());
    let records = sb.records();
    assert!(!records.is_empty());
    for r in &records {
        let n = r["record"]["performance"]["samples_us"]
            .as_array()
            .unwrap()
            .len();
        assert!(n > 0 && n % 3 == 0 && n % 10 != 0, "RUN_LOOP=3 runs: {n}");
    }
}

/// aoe.ini is found at AOE's location under $ASCEND_HOME_PATH; an out-of-range value there is
/// refused with exit 2 naming the file, the key and the range, before anything is written.
#[test]
fn aoe_ini_at_aoe_location_and_out_of_range_values() {
    let model = format!("--model={}", bert());
    for (body, key, range) in [
        ("RUN_LOOP=0", "RUN_LOOP=0", "[1, 2048]"),
        (
            "TUNING_PARALLEL_NUM=65",
            "TUNING_PARALLEL_NUM=65",
            "[1, 64]",
        ),
    ] {
        let sb = Sandbox::new();
        let root = sb.path("toolkit");
        let conf = root.join("tools/aoe/conf");
        std::fs::create_dir_all(&conf).unwrap();
        std::fs::write(conf.join("aoe.ini"), format!("[COMMON]\n{body}\n")).unwrap();
        let out = sb.tune(&[&model], &[("ASCEND_HOME_PATH", &root)]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("tools/aoe/conf/aoe.ini"), "{err}");
        assert!(err.contains(key) && err.contains(range), "{err}");
        assert!(!sb.bank().exists());
    }
    // A good file there: its WORK_PATH is used.
    let sb = Sandbox::new();
    let root = sb.path("toolkit");
    let conf = root.join("tools/aoe/conf");
    std::fs::create_dir_all(&conf).unwrap();
    let work = sb.path("from_ini");
    std::fs::write(
        conf.join("aoe.ini"),
        format!("[COMMON]\nWORK_PATH={}\n", work.display()),
    )
    .unwrap();
    let out = sb.tune(&[&model], &[("ASCEND_HOME_PATH", &root)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(sb.results_in(&work).len(), 1);
    // A missing --config file is bad input.
    let out = Sandbox::new().tune(&[&model, "--config=/nonexistent/aoe.ini"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
