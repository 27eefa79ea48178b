//! What `tunebank tune` shows a person: on a terminal a live progress bar with ETA and a table
//! that fits the terminal's width; on a pipe (or with `--quiet`) plain lines without control
//! characters; op names shortened in the middle; `--svg` draws each op's time before and after.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use unicode_width::UnicodeWidthStr;

const BIN: &str = env!("CARGO_BIN_EXE_tunebank");

fn model() -> String {
    format!(
        "{}/fixtures/models/resnet50.onnx",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The tune arguments for a fresh bank and output directory under `dir`.
fn tune_args(dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "tune",
        "--model",
        &model(),
        "--job_type=2",
        "--soc_version=Ascend910B2",
        "--budget",
        "4",
        "--strategy",
        "random",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push("--bank".into());
    args.push(dir.join("bank.redb").display().to_string());
    args.push("--output-dir".into());
    args.push(dir.join("out").display().to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn sandbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    dir
}

fn env(c: &mut Command, dir: &Path) {
    c.env("HOME", dir.join("home"))
        .env("TUNING_PARALLEL_NUM", "2")
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env_remove("TUNEBANK_BUILTIN_PATH")
        .env_remove("AOE_MODE")
        .env_remove("REPEAT_TUNE");
}

/// Runs tune under a pseudo-terminal of `cols` columns (util-linux `script`); returns what the
/// terminal received.
fn on_terminal(dir: &Path, cols: u16, extra: &[&str]) -> String {
    let args: Vec<String> = tune_args(dir, extra)
        .into_iter()
        .map(|a| format!("'{a}'"))
        .collect();
    let cmd = format!("stty cols {cols} rows 50; exec '{BIN}' {}", args.join(" "));
    let mut c = Command::new("script");
    c.args(["-qec", &cmd, "/dev/null"])
        .env("TERM", "xterm-256color")
        .stdin(Stdio::null());
    env(&mut c, dir);
    let out = c.output().expect("util-linux script runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The lines of the summary table: from the `op … decision` header to the blank line after it.
fn table_lines(text: &str) -> Vec<String> {
    let lines: Vec<String> = text
        .lines()
        .map(|l| l.trim_end_matches('\r').to_owned())
        .collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("op ") && l.contains("decision"))
        .unwrap_or_else(|| panic!("no table in {text}"));
    lines[start..]
        .iter()
        .take_while(|l| !l.is_empty())
        .cloned()
        .collect()
}

#[test]
fn piped_output_has_no_control_characters_and_names_shortened_in_the_middle() {
    let dir = sandbox();
    let svg = dir.path().join("times.svg");
    let mut c = Command::new(BIN);
    c.args(tune_args(dir.path(), &["--svg", svg.to_str().unwrap()]))
        .stdin(Stdio::null());
    env(&mut c, dir.path());
    let out: Output = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        assert!(!text.contains('\x1b'), "ESC on {name}: {text:?}");
        assert!(!text.contains('\r'), "CR on {name}: {text:?}");
    }
    // Progress: one plain line per finished op.
    assert!(stderr.lines().any(|l| l.starts_with("[1/")), "{stderr}");
    // Long fused names keep both ends: shortened in the middle, never cut from the left.
    let rows = table_lines(&stdout);
    assert!(rows.len() > 10, "{stdout}");
    assert!(rows.iter().all(|r| !r.starts_with('…')), "{stdout}");
    let shortened: Vec<&String> = rows.iter().filter(|r| r.contains('…')).collect();
    assert!(!shortened.is_empty(), "{stdout}");
    assert!(
        shortened.iter().all(|r| r.starts_with("/layer")),
        "{shortened:?}"
    );
    // --svg: one row per task, a well-formed picture (rendered in src/tests/plots_render.rs).
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.starts_with("<svg"), "{picture}");
    assert!(picture.contains("/fc/Gemm"), "{picture}");
}

#[test]
fn a_terminal_gets_a_live_bar_with_eta_and_a_table_that_fits() {
    let dir = sandbox();
    let screen = on_terminal(dir.path(), 100, &[]);
    assert!(screen.contains("ETA"), "{screen:?}");
    assert!(screen.contains("ops"), "{screen:?}");
    // The bar is redrawn in place: escape sequences and carriage returns not ending a line.
    assert!(screen.contains('\x1b'), "{screen:?}");
    let redraws = screen.matches('\r').count() - screen.matches("\r\n").count();
    let moves = screen.matches("\x1b[").count();
    assert!(redraws + moves >= 2, "{screen:?}");
    for row in table_lines(&screen) {
        assert!(row.width() <= 100, "{} columns: {row}", row.width());
    }
}

#[test]
fn quiet_on_a_terminal_prints_plain_lines() {
    let dir = sandbox();
    let screen = on_terminal(dir.path(), 100, &["--quiet"]);
    assert!(!screen.contains('\x1b'), "{screen:?}");
    let stray = screen.matches('\r').count() - screen.matches("\r\n").count();
    assert_eq!(stray, 0, "{screen:?}");
    assert!(screen.contains("[1/"), "{screen:?}");
}
